"""Reports of a run: summary.json, Parquet tables, Markdown, HTML and PNG plots."""
