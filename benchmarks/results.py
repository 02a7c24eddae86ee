"""Where a benchmark's figures go: one JSON file per benchmark under ``benchmarks/results/``.

Each benchmark script calls :func:`add_json_option` on its parser (``--json PATH``,
default ``benchmarks/results/<name>.json``; ``--json -`` writes nothing) and, once
measured, :func:`write` with its figures. The file records how they were measured (the
command line, the machine's CPU count and load average, capsim's version and commit) so
``python -m benchmarks.tables`` can render the documentation's tables from it
(docs/reference/benchmarks.md): no figure is copied by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def add_json_option(parser: argparse.ArgumentParser, name: str) -> None:
    """``--json PATH``: where to write the figures (default ``results/<name>.json``)."""
    parser.add_argument("--json", metavar="PATH", default=str(RESULTS / f"{name}.json"),
                        help="write the figures as JSON here (default: %(default)s; "
                             "'-' for no file)")


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent,
                             capture_output=True, text=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write(path: str, name: str, figures: dict[str, Any], *,
          load_before: float | None = None, hide: tuple[str, ...] = ()) -> None:
    """Write ``figures`` (JSON-able) with how they were measured to ``path``.

    The command recorded leaves out ``--json`` and the options named in ``hide`` (with
    their values): where files were read or written, not how the figures were measured.
    """
    if path == "-":
        return
    from sim.core.version import __version__

    args = _without(sys.argv[1:], ("--json", *hide))
    document = {
        "benchmark": name,
        "command": " ".join(["python3", f"benchmarks/{Path(sys.argv[0]).name}", *args]),
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "capsim_version": __version__,
        "commit": _commit(),
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before,
                    "load_average_after": round(os.getloadavg()[0], 2)},
        "figures": figures,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"figures written to {out}")


def _without(args: list[str], options: tuple[str, ...]) -> list[str]:
    """``args`` without each of ``options`` and its value (``--opt V`` or ``--opt=V``)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in options)):
            out.append(arg)
    return out


def peak_rss_mib() -> float:
    """Peak RSS of this process in MiB.

    VmHWM (Linux) belongs to this process image alone; ru_maxrss would also count the
    parent's memory at fork time, since Linux keeps it across fork and exec.
    """
    import resource

    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
