"""The benchmarks page, rendered from the benchmarks' own result files.

    python -m benchmarks.tables > docs/reference/benchmarks.md

Each benchmark script writes ``benchmarks/results/<name>.json`` (``benchmarks/results.py``);
this renders one section per benchmark from that file, or says the benchmark was not
measured in this revision when the file is missing. No figure on the page is typed by
hand. ``tests/meta/test_benchmark_tables.py`` fails when the page differs from what this
prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
COMMAND = "python -m benchmarks.tables > docs/reference/benchmarks.md"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table; numbers right-aligned."""
    aligns = ["---:" if rows and isinstance(rows[0][i], (int, float)) and
              not isinstance(rows[0][i], bool) else "---" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def engine(f: dict) -> list[str]:
    rows = [
        ["bare SimPy loop (a process per request), requests / CPU-s",
         f["bare_requests_per_cpu_s"], 1.0],
        ["SimPy floor (3 events per request), requests / CPU-s",
         f["floor_requests_per_cpu_s"], f["ratio_floor"]],
        ["capsim model, streams on, attempts / CPU-s",
         f["model_streams_on_attempts_per_cpu_s"], f["ratio_streams_on"]],
        ["capsim model, no streams, attempts / CPU-s",
         f["model_no_streams_attempts_per_cpu_s"], f["ratio_no_streams"]],
    ]
    out = [f"Scenario `{f['scenario']}`, {f['duration_s']:g} s simulated, {f['tiers']} "
           f"tier(s), medians of {f['repeat']} repeats. SimPy events per attempt: "
           f"{_cell(f['events_per_attempt_streams_on'])} with streams, "
           f"{_cell(f['events_per_attempt_no_streams'])} without.", ""]
    out += table(["figure", "value", "÷ bare loop (same run)"], rows)
    if "least_work_us" in f:
        out += ["", "Least work per admitted attempt (CPU µs, each piece alone):", ""]
        out += table(["piece", "CPU µs"], [[k, v] for k, v in f["least_work_us"].items()])
        out += ["", f"A model doing only this would reach {_cell(f['best_ratio'])}× the bare "
                f"loop; the model takes {_cell(f['us_per_attempt_no_streams'])} µs per "
                f"attempt without streams, {_cell(f['us_per_attempt_streams_on'])} with."]
    return out


def compiled(f: dict) -> list[str]:
    rows = [
        ["bare SimPy loop (a process per request), requests / CPU-s",
         f["bare_requests_per_cpu_s"], 1.0, None],
        ["SimPy model, attempts / CPU-s", f["model_attempts_per_cpu_s"], f["ratio_model"],
         1.0],
        ["compiled engine, demand handed in, attempts / CPU-s",
         f["compiled_attempts_per_cpu_s"], f["ratio_compiled"], f["compiled_over_model"]],
        ["compiled engine, drawing its demand, attempts / CPU-s",
         f["compiled_with_draw_attempts_per_cpu_s"], f["ratio_compiled_with_draw"], None],
    ]
    if "whole_engine" in f:
        rows += [
            [f"whole default scenario, `--engine auto` (ran: {f['whole_engine']}), "
             "attempts / CPU-s", f["whole_attempts_per_cpu_s"], f["ratio_whole"],
             f["whole_over_model"]],
            ["whole default scenario, SimPy model, attempts / CPU-s",
             f["whole_model_attempts_per_cpu_s"], f["ratio_whole_model"], 1.0],
        ]
    out = [f"Scenario `{f['scenario']}`, {f['duration_s']:g} s simulated, {f['tiers']} "
           f"tier(s), {f['requests']:,} requests, {f['attempts']:,} attempts (the same on "
           f"both engines), medians of {f['repeat']} repeats on a shared machine: read the "
           f"ratios. Drawing the demand alone: {_cell(f['demand_draw_cpu_s'])} CPU-s.", ""]
    out += table(["figure", "value", "÷ bare loop (same run)", "÷ SimPy model"], rows)
    if "compile_cpu_s" in f:
        out += ["", f"Compile (a fresh process, empty numba cache, a 10-second run): "
                f"{_cell(f['compile_cpu_s'])} CPU-s, {_cell(f['compile_wall_s'])} s wall; "
                f"the same from the cache: {_cell(f['cached_cpu_s'])} CPU-s, "
                f"{_cell(f['cached_wall_s'])} s wall (whole processes, imports included)."]
    if "memory" in f:
        out += ["", "Memory against run length (one tier, rows spooled, a fresh process "
                "each):", ""]
        out += table(["duration", "attempt rows", "peak RSS MiB"],
                     [[p["duration"], p["rows"], p["peak_mib"]] for p in f["memory"]])
        out += ["", f"Peak of the longest ÷ peak of the shortest: {_cell(f['memory_ratio'])}."]
    if "whole_engine" in f:
        out += ["", f"The whole default scenario (closed-loop workers and websocket clients "
                f"included, {f['whole_attempts']:,} attempts with the handshakes): "
                f"`--engine auto` chose {f['whole_engine']} ({f['whole_engine_reason']}); "
                "the open-loop demand drawn once per repeat and read back by every tier, as "
                "`capsim run` does (the draw counted in both engines' CPU); its ÷ SimPy "
                "model column is against the SimPy model on the whole scenario."]
    return out


def ws_publish(f: dict) -> list[str]:
    rows = [["streams on", f["events_streams_on"], f["attempts_streams_on"],
             f["cpu_s_streams_on"]],
            ["streams off", f["events_streams_off"], f["attempts_streams_off"],
             f["cpu_s_streams_off"]]]
    out = [f"Scenario `{f['scenario']}`, {f['duration_s']:g} s simulated, every tier; CPU "
           f"medians of {f['repeat']}. The event counts are exact (the same on any "
           "machine); the CPU seconds are not.", ""]
    out += table(["run", "SimPy events", "attempts", "CPU s"], rows)
    out += ["", f"The websocket side: {_cell(f['events_websockets'])} events, "
            f"{f['cpu_share_websockets']:.1%} of the CPU."]
    return out


def startup(f: dict) -> list[str]:
    rows = [[name, c["wall_ms"], c["cpu_ms"], c["ratio_to_python"], c["ratio_to_pydantic"]]
            for name, c in f["commands"].items()]
    return [f"Medians of {f['repeat']} runs after a warm-up, each in a fresh process.", ""] + \
        table(["command", "wall ms", "CPU ms", "÷ `python -c pass`",
               "÷ `import pydantic`"], rows)


def spool(f: dict) -> list[str]:
    rows = [[name, s["write_cpu_s"], s["read_cpu_s"], s["bytes_per_row"], s["spool_options"]]
            for name, s in f["settings"].items()]
    return [f"One tier's attempt rows (`{f['tier']}`, {f['duration_s']:g} s, {f['rows']:,} "
            f"rows), CPU medians of {f['repeat']}.", ""] + \
        table(["writer setting", "write CPU s", "read CPU s", "bytes / row",
               "capsim's setting"], rows)


def sweep(f: dict) -> list[str]:
    rows = [["1 process", f["runs_per_min_1_process"], 1.0],
            ["2 processes (local pool)", f["runs_per_min_pool_2"], f["ratio_pool_2"]],
            ["Dask LocalCluster, 2 workers", f["runs_per_min_dask_local_2"],
             f["ratio_dask_local_2"]]]
    return [f"`{f['scenario']}`, {f['runs']} runs × {f['tiers']} tiers, "
            f"{f['duration_s']:g} s each.", ""] + \
        table(["executor", "runs / min", "÷ 1 process (same run)"], rows)


def memory(f: dict) -> list[str]:
    rows = [[p["tiers"], p["requests"], p["peak_rss_mib"]] for p in f["points"]]
    return table(["tiers", "requests", "peak RSS MiB"], rows) + [
        "", f"Least squares: base {_cell(f['base_mib'])} MiB, "
        f"{_cell(f['bytes_per_request'])} bytes per request (once), "
        f"{_cell(f['bytes_per_attempt_per_tier'])} bytes per attempt per tier."]


def memory_queue(f: dict) -> list[str]:
    rows = [[p["duration_s"], p["connections"], round(p["queued_closed_form"]),
             round(p["peak_rss"] / 2**20, 1), round(p["estimate"] / 2**20, 1),
             round(p["estimate"] / p["peak_rss"], 2)] for p in f["points"]]
    return table(["duration s", "connections", "queue (closed form)", "peak RSS MiB",
                  "estimate MiB", "estimate ÷ measured"], rows) + [
        "", f"Bytes per queued request (extra peak RSS ÷ closed-form queue): "
        f"{', '.join(_cell(b) for b in f['bytes_per_queued'])}; the estimate assumes "
        f"{_cell(f['bytes_per_queued_assumed'])}."]


def memory_runlength(f: dict) -> list[str]:
    rows = [[p["duration"], p["wall_s"], p["peak_rss_parent_mib"],
             p["peak_rss_largest_worker_mib"], p["ratio_to_first"]] for p in f["points"]]
    return table(["duration", "wall s", "peak RSS parent MiB", "largest worker MiB",
                  "÷ first duration"], rows)


def day(f: dict) -> list[str]:
    rows = [["wall s", f["wall_s"]], ["CPU s in all", f["cpu_s"]],
            ["attempts", f["attempts"]], ["peak RSS in all, GiB", f["peak_rss_all_gib"]],
            ["peak RSS parent, MiB", f["peak_rss_parent_mib"]],
            ["peak RSS largest worker, MiB", f["peak_rss_largest_worker_mib"]],
            ["requests.parquet bytes per attempt", f["requests_parquet_bytes_per_attempt"]]]
    return [f"Duration {f['duration']}, {f['tiers']} tiers, `--jobs {f['jobs']}`.", ""] + \
        table(["figure", "value"], rows)


def day_phases(f: dict) -> list[str]:
    rows = []
    for k, v in f["phases_cpu_s"].items():
        rows.append([k, v])
        if k.startswith("simulation"):
            rows.append(["… of which spool writing", f["spool_writing_cpu_s"]])
    rows.append(["total", f["total_cpu_s"]])
    return [f"Duration {f['duration']}, {f['tiers']} tiers, {f['attempts']:,} attempts; CPU "
            "seconds of one process.", ""] + table(["phase", "CPU s"], rows)


def report_cost(f: dict) -> list[str]:
    before = f.get("before", {}).get("figures")
    sides = [("before", before), ("now", f)] if before else [("now", f)]
    header = ["phase"]
    for side, _ in sides:
        header += [f"{side}: CPU s", f"{side}: share of the run", f"{side}: ÷ simulation"]
    rows = []
    for k in f["phases_cpu_s"]:
        row = [k]
        for _, g in sides:
            row += [g["phases_cpu_s"].get(k), g["share_of_run"].get(k),
                    g["ratio_to_simulation"].get(k)]
        rows.append(row)
    out = [f"Default scenario, {f['tiers']} tiers, {f['duration']}, {f['attempts']:,} "
           f"attempts; medians of {f['repeat']} runs, each a fresh process (a share is of "
           "that process's CPU). The simulation is the floor, measured in the same run."]
    sizes = [(side, g.get("report_html_bytes")) for side, g in sides]
    if any(n is not None for _, n in sizes):
        out += ["", "report.html: " + "; ".join(
            f"{side} {'not measured' if n is None else f'{n:,} bytes'}" for side, n in sizes)
            + "."]
    if before:
        b = f["before"]
        out += ["", f"Before: `{b['command']}` from a checkout of commit {b['commit']}, "
                f"{b['measured_at']}, load average {_cell(b['machine']['load_average_before'])} "
                f"before, {_cell(b['machine']['load_average_after'])} after."]
    return out + [""] + table(header, rows)


def trace_import(f: dict) -> list[str]:
    rows = [[k, p["seconds"], p["rows"], p["peak_rss_mib"]] for k, p in f["phases"].items()]
    return [f"{f['rows']:,} rows ({f['input_mib']:,.0f} MiB CSV, {f['time_format']} "
            "timestamps).", ""] + table(["phase", "seconds", "rows", "peak RSS MiB"], rows) + [
        "", f"Import ÷ Arrow's bare CSV read (same run): "
        f"{_cell(f['ratio_import_to_baseline'])}; replay memory about "
        f"{_cell(f['replay_bytes_per_row'])} bytes per kept row."]


def instructions(f: dict) -> list[str]:
    return table(["tiers", "duration s", "streams", "instructions in the runs"],
                 [[f["tiers"], f["duration_s"], f["streams"], f["instructions_runs"]]])


def calibrate(f: dict) -> list[str]:
    rows = [[r["rows"], r["decisions"], r["seconds"], r["replay_floor_s"],
             r["ratio_to_floor"], r["lp_cells_tried"]] for r in f["runs"]]
    return table(["rows", "decisions", "calibrate s", "one replay s (floor)",
                  "÷ floor (same run)", "phase cells tried"], rows) + [
        "", f"Bar: 10,000 rows in under {f['limit_s_at_10000_rows']} s."]


def replay_memory(f: dict) -> list[str]:
    mib = 2**20
    rows = [[p["rows"], p["replayed_requests"], p["duration_s"] / 3600, p["file_bytes"] / mib,
             p["peak_rss_bytes"] / mib, p["floor_peak_rss_bytes"] / mib,
             (p["peak_rss_bytes"] - p["floor_peak_rss_bytes"]) / mib, p["ratio_to_floor"]]
            for p in f["points"]]
    return [f"{f['rate_per_s']:g} requests/s, each trace replayed whole on one tier, "
            "`--records windows`; the floor is a synthetic Poisson source of the same rate "
            "for as long.", ""] + table(
        ["trace rows", "requests replayed", "hours simulated", "file MiB", "peak RSS MiB",
         "floor peak RSS MiB", "trace's own MiB (peak − floor)", "÷ floor (same run)"],
        rows) + [
        "", f"Peak at the longest trace ({f['points'][-1]['rows']:,} rows) ÷ at the "
            f"shortest: {_cell(f['ratio_longest_to_shortest'])} (bar, at 20,000,000 rows: "
            "at most 1.5)."] + _not_reached(f)


def _not_reached(f: dict) -> list[str]:
    done = [p["rows"] for p in f["points"]]
    left = [r for r in f.get("rows_asked", done) if r not in done]
    return ["", "Not measured (the run was stopped first): " +
            ", ".join(f"{r:,} rows" for r in left) + "."] if left else []


def import_speed(f: dict) -> list[str]:
    rows = []
    for fmt, r in f["formats"].items():
        i, fl = r["import"], r["floor"]
        rows.append([fmt, i["rows"], i["rows"] / i["seconds"], fl["rows"] / fl["seconds"],
                     r["ratio_to_floor"], r.get("cpu_ratio_to_floor"), i["peak_mib"]])
    out = table(["format", "rows", "import rows/s", "floor rows/s", "÷ floor (wall)",
                 "÷ floor (CPU time)", "peak RSS MiB"], rows)
    har = [[h["entries"], h["file_bytes"] / 2**20, h["import"]["rows"] / h["import"]["seconds"],
            (h["floor"]["rows"] / h["floor"]["seconds"]) if h.get("floor") else None,
            h["import"]["peak_mib"], h.get("command")] for h in f["har_memory"]]
    if har:
        out += ["", "HAR (floor: Arrow's JSON reader over the same entries, one per line):", ""]
        out += table(["entries", "file MiB", "import entries/s", "floor rows/s",
                      "peak RSS MiB", "measured by"], har)
        out += ["", "Bars: CSV and JSONL at least 0.5 of the floor; HAR at most 1 GiB."]
    return out


def replay_day(f: dict) -> list[str]:
    def row(name: str, r: dict) -> list:
        cpu = r.get("cpu_seconds")
        return [name, r["seconds"] / 60, cpu / 60 if cpu is not None else None,
                r["peak_rss_bytes"] / 2**30, r["worker_peak_rss_bytes"] / 2**30]

    engine = f["replay"].get("engine")
    rows = [row("trace replay" + (f", engine {engine}" if engine else ""), f["replay"])]
    if "floor" in f:
        rows.append(row("synthetic Poisson (floor)", f["floor"]))
    if "simpy" in f:
        rows.append(row(f"trace replay, SimPy model, {f['simpy']['hours']:g} h", f["simpy"]))
    out = [f"{f['hours']:g} h at {f['rate_per_s']:g} requests/s ({f['rows']:,} rows), every "
           f"tier, `--jobs {f['jobs']} --records windows`. CPU minutes are the run's and its "
           "workers' together; the load moves them much less than the wall time.", ""] + table(
        ["run", "wall minutes", "CPU minutes", "peak RSS GiB", "largest worker GiB"], rows)
    if "ratio_to_issue_simpy_cpu" in f:
        out += ["", f"The issue's measured {_cell(f['issue_simpy_cpu_min_per_day'])} CPU-minutes "
                f"a day for the SimPy model ÷ this replay's CPU (scaled to {f['hours']:g} h): "
                f"{_cell(f['ratio_to_issue_simpy_cpu'])}×."]
    if "ratio_simpy_cpu_per_hour" in f:
        out += ["", "The SimPy model's CPU per simulated hour ÷ this replay's, measured in the "
                f"same run: {_cell(f['ratio_simpy_cpu_per_hour'])}×."]
    return out


def emulator_soak(f: dict) -> list[str]:
    good = sum(v for k, v in f["good"].items() if k.isdigit())
    bad = sum(v for k, v in f["bad"].items() if k != "errors")
    rows = [["wall seconds", f["seconds"]],
            ["well-behaved requests (all statuses)", good],
            ["well-behaved requests answered 200", f["good"].get("200", 0)],
            ["misbehaving clients run", bad],
            ["leaked account connections", f["leaked_account_connections"]],
            ["leaked TCP connections", f["leaked_tcp_connections"]],
            ["server RSS MB at 1 min (the floor)", f["rss_floor_mb"]],
            ["server RSS MB per minute", ", ".join(
                f"{m}: {v}" for m, v in f["rss_mb_per_minute"].items())],
            ["RSS slope after the first minute, MB/min", f["rss_slope_mb_per_min"]],
            ["RSS slope over the second half, MB/min",
             f["rss_slope_second_half_mb_per_min"]]]
    return table(["figure", "value"], rows)


def demand_once(f: dict) -> list[str]:
    t = f["tiers"]
    rows = [
        ["bare SimPy loop over the same requests", f["bare_loop_cpu_s"], 1.0],
        ["demand of one tier, before, `--jobs 1` (a pass over the trace)",
         f["per_tier_before_jobs_1_cpu_s"], f["ratio_before_jobs_1"]],
        ["demand of one tier, before, `--jobs N` (the worker's scan and pass)",
         f["per_tier_before_jobs_n_cpu_s"], f["ratio_before_jobs_n"]],
        [f"demand of one tier, after (reading the spool; its draw shared by {t} tiers)",
         f["per_tier_after_cpu_s"], f["ratio_after"]],
        ["one tier's SimPy run (`RPC + Search`)", f["tier_run_cpu_s"], f["ratio_tier_run"]],
        ["its aggregates (`tier_parts`), before (`math.fsum` of every value)",
         f["tier_parts_before_cpu_s"], f["ratio_tier_parts_before"]],
        ["its aggregates, after (zeros dropped first)", f["tier_parts_after_cpu_s"],
         f["ratio_tier_parts_after"]],
    ]
    out = [f"A trace of {_cell(f['requests'])} requests ({f['minutes']:g} min at "
           f"{f['rate_per_s']:g}/s); CPU seconds, medians of {f['repeat']}; the tier's run "
           f"made {_cell(f['attempts_one_tier'])} attempts. Demand per tier-hour: "
           f"{_cell(f['per_tier_hour_before_jobs_n_cpu_s'])} CPU-s before (`--jobs N`), "
           f"{_cell(f['per_tier_hour_after_cpu_s'])} after.", ""]
    out += table(["figure", "CPU s", "÷ bare loop (same run)"], rows)
    out += ["", "`capsim headroom` on a closed-form scenario (tolerance 0.01): the same "
            "path and answer with any number of workers; rounds are batches of runs.", ""]
    out += table(["workers", "loads on the path", "rounds", "model runs", "headroom",
                  "next load"],
                 [[h["workers"], h["path_loads"], h["rounds"], h["model_runs"],
                   h["headroom"], h["next_load"]] for h in f["headroom"]])
    return out


def policy_adapter(f: dict) -> list[str]:
    rows = [["`CULimiter.spend` (Python class)", f["python_us_per_spend"],
             f["python_over_bare"], 1],
            ["`ArrayLimiter.spend` (compiled function, thin adapter)",
             f["adapter_us_per_spend"], f["adapter_over_bare"], f["adapter_over_python"]],
            ["bare SimPy loop, per request", f["bare_us_per_request"], 1, None]]
    return [f"{f['calls']:,} spends, medians of {f['repeat']} repeats.", ""] + table(
        ["", "µs per call", "÷ bare request", "÷ Python class"], rows)


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    script: str
    what: str
    render: Callable[[dict], list[str]]
    #: The script's options for this section, when a script measures two (one of them
    #: ``--json benchmarks/results/<name>.json``).
    args: str = ""


BENCHMARKS = [
    Benchmark("engine", "Engine speed", "bench_engine.py",
              "Simulated attempts per CPU-second of the full model (`TierRun` on the default "
              "scenario), with and without its websocket clients, against a bare SimPy loop "
              "and the SimPy floor run over the same arrival times in the same repeat; "
              "`--breakdown` adds the least work per attempt, piece by piece.", engine),
    Benchmark("compiled", "Compiled engine speed", "bench_compiled.py",
              "Attempts per CPU-second of the compiled engine (`--engine compiled`) and of the "
              "SimPy model on the default scenario's open-loop demand, against a bare SimPy "
              "loop over the same arrival times in the same repeat; the whole default "
              "scenario on the engine `--engine auto` chooses (named); compile and "
              "cache-load times; peak memory at about 0.5 and 20 million attempt rows "
              "(durations in seconds).", compiled),
    Benchmark("policy_adapter", "A policy called from Python: class or compiled adapter",
              "bench_policy_adapter.py",
              "CPU per call of the limiter's `spend` as the SimPy model calls it (the Python "
              "class) and through a thin adapter over the compiled engine's limiter "
              "function (what the SimPy model, the emulator and calibration would pay if "
              "the classes were adapters), with a bare SimPy loop's CPU per request from "
              "the same repeat for scale.", policy_adapter),
    Benchmark("ws_publish", "Websocket publishing", "bench_ws_publish.py",
              "SimPy events and CPU of every tier's run, with the scenario's websocket clients "
              "and without them.", ws_publish),
    Benchmark("startup", "Start-up of the light commands", "bench_startup.py",
              "`capsim --help`, `capsim tiers` and `capsim validate` of each scenario in "
              "fresh processes, against bare Python and bare pydantic in the same run "
              "(`--against DIR` compares with another checkout).", startup),
    Benchmark("spool", "Spool files", "bench_spool.py",
              "CPU to write and read back one tier's attempt rows as Parquet row groups, per "
              "writer setting, and the bytes per row.", spool),
    Benchmark("sweep", "Sweep throughput", "bench_sweep.py",
              "Sweep runs per minute sequentially, on a 2-process pool and on a 2-worker Dask "
              "LocalCluster, as ratios to one process in the same run.", sweep),
    Benchmark("memory", "Memory per request", "bench_memory.py",
              "Peak memory of whole `capsim run`s at two request counts on 1 and 3 tiers, and "
              "the bytes per request and per attempt the run-size guard assumes.", memory),
    Benchmark("memory_queue", "Memory when requests queue for streams",
              "bench_memory_queue.py",
              "Peak memory of whole `capsim run`s whose requests queue for HTTP/2 streams "
              "(one connection of 32 streams, 100 ms round trip and service) and of the same "
              "demand unqueued, against the run-size estimate and its closed-form queue.",
              memory_queue),
    Benchmark("memory_runlength", "Memory against run length", "bench_memory_runlength.py",
              "Peak RSS of one tier's run of the default scenario at several durations "
              "(by default 1 h, 6 h and 24 h): is memory flat in run length?", memory_runlength),
    Benchmark("day", "A day on every tier", "bench_day.py",
              "The default scenario on every tier with `--jobs 2` (by default for 24 h): wall "
              "time, CPU, peak memory of the parent and its workers together.", day),
    Benchmark("day_phases", "Where a run's CPU goes", "bench_day_phases.py",
              "CPU seconds per phase of a run in one process: simulation, per-tier parts, "
              "requests.parquet, plots, report.", day_phases),
    Benchmark("report_cost", "What a run's report costs", "bench_report_cost.py",
              "The share of a default run's CPU (every tier, 1 hour, one process) spent in "
              "the plots, `requests.parquet`, the other tables and the report files, against "
              "the simulation measured in the same run; `--before` keeps the figures of the "
              "code before a change beside them.", report_cost),
    Benchmark("trace_import", "Trace import", "bench_trace_import.py",
              "Importing a generated CSV trace (by default 10 million rows) and loading it "
              "for replay, against Arrow's bare CSV reader.", trace_import),
    Benchmark("import_speed", "Import speed and HAR memory", "bench_import_speed.py",
              "CSV, JSONL and HAR import rows/s against Arrow's readers (and the Parquet "
              "writer) in the same run, by wall and by CPU time; the HAR import's peak "
              "memory.", import_speed),
    Benchmark("replay_memory", "Replay memory against trace length", "bench_replay_memory.py",
              "Peak RSS of `capsim run` replaying traces of 0.5, 4 and 20 million rows whole "
              "(read a row group at a time), against a synthetic source of the same rate "
              "and length.",
              replay_memory),
    Benchmark("replay_day", "A day of recorded traffic on every tier", "bench_replay_day.py",
              "Wall time and memory of replaying a trace of 400 requests/s (by default a "
              "day) against every tier with `--jobs 2 --records windows`, against a "
              "synthetic source of the same rate.", replay_day),
    Benchmark("replay_week", "A week of recorded traffic on every tier", "bench_replay_day.py",
              "The same benchmark for a week (issue 31's aim: a busy account's week on nine "
              "tiers within an hour on this machine). With `--records windows` a tier's "
              "spooled rows go once its summary is read, so the temporary disk holds two "
              "tiers' at a time, not nine.", replay_day,
              args="--hours 168 --jobs 2 --no-floor --engine auto --simpy-hours 0 "
                   "--json benchmarks/results/replay_week.json"),
    Benchmark("replay_hour", "An hour of recorded traffic on every tier, against its floor",
              "bench_replay_day.py",
              "The same benchmark for one hour, with its floor (a synthetic Poisson source "
              "of the same rate) measured in the same run.", replay_day,
              args="--hours 1 --json benchmarks/results/replay_hour.json"),
    Benchmark("calibrate", "Calibration against trace length", "bench_calibrate.py",
              "`capsim calibrate` (joint identification by linear programming, decisions "
              "only) on reference traces of growing length, against one replay of the same "
              "trace in the same run.", calibrate),
    Benchmark("emulator_soak", "Emulator soak", "bench_emulator_soak.py",
              "`capsim serve` in a child process (`--seconds`, ten minutes by default), driven by "
              "well-behaved clients and, about once a second in turn, killed clients, client "
              "timeouts, half-sent bodies, never-reading clients, key-less bursts, HTTP/1.1 "
              "clients, 4 MiB bodies and 33 streams before SETTINGS: connections the account "
              "still holds once every client has left, and the server's RSS over time.",
              emulator_soak),
    Benchmark("instructions", "Machine instructions of the engine", "bench_instructions.py",
              "The model's instruction count under callgrind: a figure independent of the "
              "machine's load (needs valgrind).", instructions),
    Benchmark("demand_once", "Demand drawn once, aggregates, headroom rounds",
              "bench_demand_once.py",
              "Issue 31 step 5, before and after against a bare SimPy loop over the same "
              "requests: a replayed trace's demand per tier (read and drawn by every tier, "
              "against spooled once and read back), one tier's aggregates, and `capsim "
              "headroom`'s rounds and model runs with 1 to 7 workers.", demand_once),
]


def render(results: Path = RESULTS) -> str:
    lines = [
        "# Benchmarks",
        "",
        f"<!-- Generated by `{COMMAND}` from benchmarks/results/*.json;",
        "     do not edit by hand (tests/meta/test_benchmark_tables.py checks it). -->",
        "",
        "Each script in `benchmarks/` measures its figure next to a floor measured in the "
        "same run",
        "(seconds move with the machine's load; ratios to the floor and counts move much "
        "less) and",
        "writes its results to `benchmarks/results/<name>.json`. This page is rendered from "
        "those",
        "files; a benchmark without one was not measured in this revision.",
    ]
    for b in BENCHMARKS:
        lines += ["", f"## {b.title}", "", b.what, ""]
        path = results / f"{b.name}.json"
        if not path.exists():
            run = " ".join([f"python3 benchmarks/{b.script}", *([b.args] if b.args else [])])
            lines += [f"*Not measured in this revision.* Run `{run}` "
                      f"(it writes `benchmarks/results/{b.name}.json`), then `{COMMAND}`."]
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        m = data["machine"]
        load = (f"load average {_cell(m['load_average_before'])} before, "
                if m.get("load_average_before") is not None else "load average ")
        lines += [f"Measured by `{data['command']}` on {data['measured_at']}, capsim "
                  f"{data['capsim_version']} (commit {data['commit'] or 'unknown'}), "
                  f"{m['cpu_count']} CPUs, {load}{_cell(m['load_average_after'])} after.", ""]
        lines += b.render(data["figures"])
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
