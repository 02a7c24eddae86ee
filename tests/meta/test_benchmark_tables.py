"""docs/reference/benchmarks.md is rendered from the benchmarks' result files.

The page must be what ``python -m benchmarks.tables`` prints from
``benchmarks/results/*.json`` (no figure typed by hand), every benchmark script must
write such a file and have a section on the page.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import tables  # noqa: E402

PAGE = ROOT / "docs" / "reference" / "benchmarks.md"


def test_the_page_is_rendered_from_the_result_files():
    assert PAGE.read_text(encoding="utf-8") == tables.render(), (
        f"docs/reference/benchmarks.md differs from benchmarks/results/: regenerate it with "
        f"`{tables.COMMAND}`")


def test_every_benchmark_script_writes_results_and_has_a_section():
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert sorted({b.script for b in tables.BENCHMARKS}) == scripts
    for b in tables.BENCHMARKS:
        if b.args:  # a second section of a script: its results named by --json
            assert f"--json benchmarks/results/{b.name}.json" in b.args
            continue
        source = (ROOT / "benchmarks" / b.script).read_text(encoding="utf-8")
        assert f'add_json_option(parser, "{b.name}")' in source or \
            f'add_json_option(ap, "{b.name}")' in source, f"{b.script} writes no {b.name}.json"


def test_a_missing_file_reads_not_measured_and_a_present_one_its_figures(tmp_path):
    figures = {"runs_per_min_1_process": 10.0, "runs_per_min_pool_2": 17.5,
               "runs_per_min_dask_local_2": 15.0, "ratio_pool_2": 1.75,
               "ratio_dask_local_2": 1.5, "scenario": "x.toml", "runs": 4, "tiers": 2,
               "duration_s": 60.0}
    (tmp_path / "sweep.json").write_text(json.dumps({
        "benchmark": "sweep", "command": "python3 benchmarks/bench_sweep.py --runs 4",
        "measured_at": "2026-01-01T00:00:00Z", "capsim_version": "9.9", "commit": "abc1234",
        "machine": {"cpu_count": 2, "python": "3.11", "load_average_before": 1.5,
                    "load_average_after": 2.0},
        "figures": figures}))
    page = tables.render(tmp_path)
    sweep = page.split("## Sweep throughput", 1)[1].split("\n## ", 1)[0]
    assert "| 2 processes (local pool) | 17.5 | 1.75 |" in sweep
    assert "| Dask LocalCluster, 2 workers | 15 | 1.5 |" in sweep
    assert "`python3 benchmarks/bench_sweep.py --runs 4`" in sweep and "abc1234" in sweep
    engine = page.split("## Engine speed", 1)[1].split("\n## ", 1)[0]
    assert "*Not measured in this revision.*" in engine
    assert page.count("*Not measured in this revision.*") == len(tables.BENCHMARKS) - 1


def test_the_engine_breakdown_packs_rows_of_todays_layout():
    """bench_engine.py --breakdown packed its rows by position and crashed once the request
    row gained a ``key`` column (issue 31): it now names its values by column, so every
    piece runs on the recorder's current layout (timings are not checked here)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))  # the scripts import their helpers flat
    from benchmarks import bench_engine

    pieces = bench_engine.least_work(50)
    assert {"request object", "limiter reserve + settle", "HTTP/2 stream acquire + release",
            "attempt + request rows"} <= set(pieces)
    assert all(v >= 0 for v in pieces.values())
