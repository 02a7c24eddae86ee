"""Runs a loaded scenario: every tier through the model (in workers with ``--jobs``),
the attempt records streamed to Parquet, the summary assembled.
"""
