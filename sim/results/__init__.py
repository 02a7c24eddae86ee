"""What a run produces, as data: the typed summary (``summary.json``) and the catalogue of
headline metrics the CI gate compares. Read by the report, the jobs and the gate alike.
"""
