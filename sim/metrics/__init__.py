"""Figures from a tier's attempt records: throttling, latency, CU, cost (``figures``) and
per-account breakdowns (``accounts``).
"""
