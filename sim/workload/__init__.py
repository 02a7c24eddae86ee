"""Synthetic workload generation, starting with open-loop arrival processes."""
