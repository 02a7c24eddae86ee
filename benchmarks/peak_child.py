"""The child program the memory benchmarks run: ``capsim`` in a fresh process that
prints its own peak RSS and its workers' (bytes), for :func:`parse_peak` to read."""

from __future__ import annotations

CHILD = """
import resource, sys
from sim.cli.main import main
code = 1
try:
    code = main(sys.argv[1:], standalone_mode=False)  # (an exit code it returns, not raises)
finally:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print("PEAK", me * 1024, kids * 1024)
sys.exit(code if isinstance(code, int) else 0)
"""


def parse_peak(stdout: str) -> tuple[int, int]:
    """(the process's peak RSS, its largest worker's) in bytes, from CHILD's output."""
    me, kids = (int(x) for x in stdout.split("PEAK")[-1].split())
    return me, kids
