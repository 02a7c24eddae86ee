"""Start-up time of the light commands, against bare Python and bare pydantic.

    python3 benchmarks/bench_startup.py [--repeat 5] [--no-heavy] [--keep-env] [--against DIR]

Each command runs in a fresh process, once to warm the caches and then --repeat times;
the figures are medians: wall time, CPU time (user + system of the child) and the ratio
of the wall time to ``python -c pass`` and to ``python -c "import pydantic"`` measured in
the same run. The commands are ``capsim --help``, ``capsim run --help``, ``capsim
tiers`` and ``capsim validate`` of the built-in scenario and of each ``workloads/*.toml``
(the console script beside this interpreter, else ``python -m sim.cli.main``). Then, in fresh
processes, where ``validate``'s imports spend their CPU, stage by stage (click, pydantic
with its first model, the scenario's sub-models, the scenario model, the loader with
pricing and tiers). A last section times, in this process, what ``validate`` does after
its imports: loading the scenario and the run-size guard's estimate.

A fresh install has compiled bytecode; with ``PYTHONDONTWRITEBYTECODE`` set every run
would compile capsim's sources again, so the children run without it (the warm-up run
writes ``__pycache__``) unless --keep-env. On a shared machine compare the ratios and the
CPU times; the load average is printed before and after. ``--against DIR`` (another
checkout, e.g. ``git worktree add /tmp/before main``) runs every command there too, its
runs alternating with this tree's so both see the same load: a before/after table.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results import add_json_option, write

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = sorted((ROOT / "workloads").glob("*.toml"))
DEFAULT = ROOT / "sim" / "data" / "default.toml"


def capsim() -> list[str]:
    """The console script installed with this interpreter, else the module."""
    script = Path(sys.executable).with_name("capsim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sim.cli.main"]


def cases(heavy: bool) -> dict[str, list[str]]:
    cli = capsim()
    out = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import pydantic"': [sys.executable, "-c", "import pydantic"],
    }
    if heavy:
        out["import pandas, pyarrow, matplotlib"] = [
            sys.executable, "-c", "import pandas, pyarrow, matplotlib.pyplot"]
    out["capsim --help"] = [*cli, "--help"]
    out["capsim run --help"] = [*cli, "run", "--help"]
    out["capsim tiers"] = [*cli, "tiers"]
    out["capsim validate (default)"] = [*cli, "validate", str(DEFAULT)]
    for path in WORKLOADS:
        out[f"capsim validate {path.name}"] = [*cli, "validate", str(path)]
    return out


def once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


STAGES = """
import time
clock = time.process_time
marks = [clock()]
import click
marks.append(clock())
from pydantic import BaseModel
class _First(BaseModel):
    x: int
marks.append(clock())
import sim.config.distributions, sim.config.websockets, sim.config.arrivals, sim.config.check
marks.append(clock())
import sim.config.scenario
marks.append(clock())
import sim.config.selection, sim.workload.size_estimate
marks.append(clock())
print(" ".join(repr(b - a) for a, b in zip(marks, marks[1:])))
"""
STAGE_NAMES = ("click", "pydantic and its first model", "config sub-models (~40)",
               "the scenario model", "loader, pricing, tiers, size estimate")


def stages(repeat: int, env: dict[str, str]) -> None:
    """CPU of each import stage of ``validate``, in fresh processes (medians)."""
    runs = [[float(x) for x in subprocess.run(
        [sys.executable, "-c", STAGES], check=True, capture_output=True, text=True,
        cwd=ROOT, env=env).stdout.split()] for _ in range(repeat + 1)][1:]
    print(f"\nvalidate's imports by stage, CPU, median of {repeat} fresh processes:")
    for i, name in enumerate(STAGE_NAMES):
        print(f"{name:<40} {1000 * statistics.median(r[i] for r in runs):6.1f} ms")


def in_process(repeat: int) -> None:
    """What validate does after its imports, timed here (imports already paid)."""
    sys.path.insert(0, str(ROOT))  # this tree's sim, whatever the interpreter has installed
    from sim.config.selection import load_scenario
    from sim.workload.size_estimate import check

    print(f"\nin this process, median of {repeat} (imports excluded):")
    print(f"{'scenario':<28} {'load + validate':>15} {'size estimate':>14}")
    for path in [DEFAULT, *WORKLOADS]:
        load_s, check_s = [], []
        for _ in range(repeat + 1):
            t0 = time.perf_counter()
            loaded = load_scenario(str(path), tiers=(), seed=None, overrides=())
            t1 = time.perf_counter()
            check(loaded)
            t2 = time.perf_counter()
            load_s.append(t1 - t0)
            check_s.append(t2 - t1)
        load_ms = 1000 * statistics.median(load_s[1:])
        check_ms = 1000 * statistics.median(check_s[1:])
        print(f"{path.name:<28} {load_ms:12.1f} ms {check_ms:11.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-heavy", action="store_true",
                        help="Skip the pandas + pyarrow + matplotlib reference line.")
    parser.add_argument("--keep-env", action="store_true",
                        help="Keep PYTHONDONTWRITEBYTECODE for the children.")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="Another checkout to run every command in too (its sim first "
                             "on PYTHONPATH), alternating with this one.")
    add_json_option(parser, "startup")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    commands: dict[str, dict[str, float | None]] = {}
    env = dict(os.environ)
    if not args.keep_env:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    trees = {"this tree": ({**env, "PYTHONPATH": str(ROOT)}, ROOT)}
    if args.against:
        there = args.against.resolve()
        trees = {f"{there}": ({**env, "PYTHONPATH": str(there)}, there), **trees}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of "
          f"{args.repeat} after one warm-up run; {' '.join(capsim())}")
    head = f"{'wall':>8} {'CPU':>8} {'÷ pass':>7} {'÷ pydantic':>10}"
    print(f"{'':<38} " + "   ".join(f"{t[-34:]:^36}" for t in trees))
    print(f"{'command':<38} " + "   ".join(head for _ in trees))
    floor: dict[str, float] = {}
    pydantic: dict[str, float] = {}
    for name, cmd in cases(not args.no_heavy).items():
        runs: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
        for t_env, cwd in trees.values():
            once(cmd, t_env, cwd)
        for _ in range(args.repeat):
            for t, (t_env, cwd) in trees.items():
                runs[t].append(once(cmd, t_env, cwd))
        cells = []
        for t in trees:
            wall = statistics.median(w for w, _ in runs[t])
            cpu = statistics.median(c for _, c in runs[t])
            floor.setdefault(t, wall)
            if name.startswith('python -c "import pydantic'):
                pydantic[t] = wall
            ratio = f"{wall / pydantic[t]:9.1f}x" if t in pydantic else f"{'':>10}"
            if t == "this tree":
                commands[name] = {
                    "wall_ms": round(wall * 1000, 1), "cpu_ms": round(cpu * 1000, 1),
                    "ratio_to_python": round(wall / floor[t], 3),
                    "ratio_to_pydantic": round(wall / pydantic[t], 3) if t in pydantic else None}
            cells.append(f"{wall * 1000:5.0f} ms {cpu * 1000:5.0f} ms "
                         f"{wall / floor[t]:6.1f}x {ratio}")
        print(f"{name:<38} " + "   ".join(cells))
    stages(args.repeat, trees["this tree"][0])
    in_process(args.repeat)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    write(args.json, "startup", {"repeat": args.repeat, "commands": commands},
          load_before=load_before)


if __name__ == "__main__":
    main()
