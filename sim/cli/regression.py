"""``capsim baseline save|update``, ``capsim check`` and ``capsim compare``: the CI gate.

Exit codes: 0 nothing regressed, 1 a regression (the reports say which), 2 a user error
(a bad file, a baseline of another scenario, an unknown schema version).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..core.errors import CapsimError
from ..core.limits import MAX_REPLICATIONS
from ..core.outputs import check_writable, claim_output, write_text_output
from ..regression.step_summary import append_step_summary, check_step_summary
from .options import force_option, jobs_option, quiet_option, set_option, tier_option

BASELINE_DIR = Path("reports/baselines")


def _replicate(scenario: str | None, overrides, tiers, replications: int, jobs: int,
               quiet: bool = False):
    """Run the replications (progress on a terminal); return (loaded, summaries, hash)."""
    from ..api import load_scenario
    from ..jobs.replicate import replicate
    from ..regression.baseline import scenario_hash
    from .progress import Progress

    loaded = load_scenario(scenario, tiers=tiers, overrides=overrides)
    with Progress("replications", replications, "done", quiet=quiet) as bar:
        summaries = replicate(loaded, replications=replications, jobs=jobs,
                              on_done=lambda r, summary: bar.step())
    return loaded, summaries, scenario_hash(scenario, overrides, tiers)


def _snapshot(scenario, overrides, tiers, replications, jobs, quiet: bool = False):
    from ..regression.baseline import Baseline
    from ..regression.fingerprint import fingerprint

    loaded, summaries, digest = _replicate(scenario, overrides, tiers, replications, jobs,
                                           quiet)
    return loaded, Baseline.from_summaries(
        summaries, content_hash=digest, scenario_file=scenario or "<built-in default>",
        overrides=overrides, tier_selection=tiers, inputs=fingerprint(loaded, digest))


def _replications(given: int | None, loaded_check, recorded: int | None = None) -> int:
    if given is not None:
        return given
    if recorded is not None:
        return recorded
    return loaded_check.replications or 1


@click.group()
def baseline():
    """Save or update the baseline a scenario is checked against."""


@baseline.command("save")
@click.argument("scenario", type=click.Path(dir_okay=False))
@tier_option("Baseline only this tier")
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=None,
              help="Replications (default: the scenario's [check] replications, else 1).")
@click.option("--out", type=click.Path(dir_okay=False), metavar="FILE",
              help="Baseline file (default: reports/baselines/<scenario name>.json).")
@set_option("Override a scenario value (value parsed as TOML), recorded in the baseline "
            "and replayed by check.")
@jobs_option()
@force_option
@quiet_option
def save(scenario, tiers, replications, out, overrides, jobs, force, quiet):
    """Run SCENARIO and write its baseline (headline figures per tier, provenance)."""
    from ..api import load_scenario
    from ..regression.baseline import save_baseline

    probe = load_scenario(scenario, tiers=tiers, overrides=overrides)
    target = claim_output(out or BASELINE_DIR / f"{probe.scenario.name}.json", "baseline",
                          force=force, option="--out")
    check_writable(target, "--out")
    _check_size(probe, jobs)
    reps = _replications(replications, probe.scenario.check)
    _, snap = _snapshot(scenario, list(overrides), list(tiers), reps, jobs, quiet)
    path = save_baseline(snap, target, option="--out")
    click.echo(f"baseline: {path} ({len(snap.tiers)} tier(s), {reps} replication(s), "
               f"recommended tier: {snap.recommended.tier or 'none'})")


@baseline.command("update")
@click.argument("targets", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=None,
              help="Replications (default: as recorded in each baseline).")
@jobs_option()
@quiet_option
def update(targets, replications, jobs, quiet):
    """Rerun and rewrite baselines after an accepted change, and print what moved.

    TARGETS are baseline files (reports/baselines/*.json: each reruns the scenario file,
    overrides and tiers it records) or scenario files (their default baseline).
    """
    from ..api import load_scenario
    from ..regression.baseline import load_baseline, save_baseline
    from ..regression.compare import compare
    from ..regression.settings import tolerances

    for target in targets:
        if target.endswith(".json"):
            path, old = Path(target), load_baseline(target)
            scenario = old.scenario_file
        else:
            scenario = target
            name = load_scenario(scenario).scenario.name
            path = BASELINE_DIR / f"{name}.json"
            old = load_baseline(path) if path.exists() else None
        overrides = list(old.overrides) if old else []
        tiers = list(old.tier_selection) if old else []
        reps = replications or (old.replications if old else 1)
        _check_size(load_scenario(scenario, tiers=tiers, overrides=overrides), jobs)
        loaded, snap = _snapshot(scenario, overrides, tiers, reps, jobs, quiet)
        if old is not None and old.scenario != snap.scenario:
            raise CapsimError(f"the baseline is of scenario {old.scenario!r} but "
                              f"{scenario} is {snap.scenario!r}", file=str(path))
        save_baseline(snap, path)
        if old is None or not old.tiers:
            click.echo(f"{path}: new baseline")
            continue
        # Everything that moved at all, not only what is past a tolerance.
        moved = compare(old, snap, {k: 0.0 for k in tolerances()}, base_label=str(path))
        lines = [c for c in moved.checks if c.base != c.now]
        notes = [*moved.inputs_changed,
                 *(n for n in moved.notes if not n.startswith("replications"))]
        click.echo(f"{path}: {len(lines)} figure(s) moved"
                   + (f"; {'; '.join(notes)}" if notes else ""))
        for c in lines:
            click.echo(f"  {c.tier or '(run)'}: {c.label}: {c.base} → {c.now}"
                       + (f" ({c.note})" if c.change == "n/a" and c.note
                          else f" ({c.change})" if c.change and c.change != "changed"
                          else ""))


def _claim_outputs(markdown, junit, comment, force) -> None:
    """Refuse, before any work, output files that are not capsim's of their kind, and a
    $GITHUB_STEP_SUMMARY that cannot be appended to."""
    check_step_summary()
    for path, kind, option in ((markdown, "markdown", "--markdown"),
                               (junit, "junit", "--junit"), (comment, "comment", "--comment")):
        if path:
            claim_output(path, kind, force=force, option=option)
            check_writable(path, option)


def _check_size(loaded, jobs: int) -> None:
    """The run-size guard of `capsim run` (memory, the scenario's max_requests), before
    any demand is drawn: exit 2, not a MemoryError (and for check, not exit 1)."""
    from ..workload.size_estimate import check as check_size

    for w in check_size(loaded, max_requests=None, jobs=jobs)[1]:
        click.echo(f"capsim: warning: {w}", err=True)


def _report(cmp, markdown, junit, comment, comment_only_on_change):
    """Write the outputs of a comparison, print the headline, exit with its code."""
    from ..regression import comment as comment_out
    from ..regression import junit as junit_out
    from ..regression import markdown as markdown_out
    from ..regression.headline import bill_headline

    text = markdown_out.render(cmp)
    if markdown:
        _write(markdown, text, "--markdown")
    append_step_summary(text)
    if junit:
        _write(junit, junit_out.render(cmp), "--junit")
    if comment and (cmp.changed or not comment_only_on_change):
        _write(comment, comment_out.render(cmp), "--comment")
    click.echo(markdown_out.headline(cmp))
    click.echo(f"  {bill_headline(cmp)}")
    for line in cmp.inputs_changed + cmp.inputs_unknown:
        click.echo(f"  input: {line}")
    for c in cmp.regressions + cmp.improvements:
        click.echo(f"  {c.verdict}: {c.tier or '(run)'}: {c.label}: {c.base} → {c.now} "
                   f"({c.change}; tolerance {c.tolerance})")
    raise SystemExit(cmp.exit_code)


def _write(path: str, text: str, option: str) -> None:
    write_text_output(Path(path), text, option)


def output_options(f):
    """The outputs shared by check and compare."""
    for opt in reversed([
        click.option("--tolerance", "tolerance_items", multiple=True, metavar="METRIC=VALUE",
                     help="Override a metric's tolerance (absolute for rates, relative "
                          "for latency/CU/cost: 0.1 or 10%)."),
        click.option("--markdown", type=click.Path(dir_okay=False), metavar="FILE",
                     help="Write the Markdown report (also appended to "
                          "$GITHUB_STEP_SUMMARY when set)."),
        click.option("--junit", type=click.Path(dir_okay=False), metavar="FILE",
                     help="Write a JUnit XML report: one test case per tier × check."),
        click.option("--comment", type=click.Path(dir_okay=False), metavar="FILE",
                     help="Write a PR-comment body carrying <!-- capsim-check: NAME -->."),
        click.option("--comment-only-on-change", is_flag=True,
                     help="Write --comment only when something regressed or improved."),
        force_option,
    ]):
        f = opt(f)
    return f


def _cli_tolerances(items) -> dict[str, float]:
    from ..regression.settings import parse_tolerance

    return dict(parse_tolerance(i) for i in items)


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Baseline (default: reports/baselines/<scenario name>.json).")
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=None,
              help="Replications (default: as many as the baseline's).")
@set_option("Override a scenario value (value parsed as TOML) on top of the baseline's "
            "recorded ones (a what-if).")
@jobs_option()
@output_options
@quiet_option
def check(scenario, baseline_file, replications, overrides, jobs, tolerance_items,
          markdown, junit, comment, comment_only_on_change, force, quiet):
    """Run SCENARIO as its baseline was run and compare: exit 1 on a regression.

    Replays the baseline's --set overrides and tier selection; tolerances come from the
    catalogue, then the scenario's [check.tolerance] table, then --tolerance.
    """
    from contextlib import ExitStack

    from ..regression.library import check as check_scenario
    from .progress import Progress

    cli_tols = _cli_tolerances(tolerance_items)
    _claim_outputs(markdown, junit, comment, force)
    with ExitStack() as stack:
        bars: list[Progress] = []

        def start(loaded, reps: int) -> None:
            _check_size(loaded, jobs)
            bars.append(stack.enter_context(Progress("replications", reps, "done",
                                                     quiet=quiet)))

        cmp = check_scenario(scenario, baseline=baseline_file, overrides=overrides,
                             replications=replications, jobs=jobs, tolerances=cli_tols,
                             on_start=start, on_done=lambda r, summary: bars[0].step())
    _report(cmp, markdown, junit, comment, comment_only_on_change)


def load_side(path: str):
    """A report folder, a ``summary.json`` or a baseline file, as a baseline."""
    from ..regression.baseline import Baseline, parse_baseline, summary_hash
    from ..results.summary import load_summary

    p = Path(path)
    if p.is_file():
        try:
            head = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            head = None
        if isinstance(head, dict) and "baseline_schema_version" in head:
            return parse_baseline(p.read_text(encoding="utf-8"), file=str(p))
    summary = load_summary(p)
    return Baseline.from_summaries([summary], content_hash=summary_hash(summary))


@click.command()
@click.argument("a", type=click.Path(exists=False))
@click.argument("b", type=click.Path(exists=False))
@output_options
def compare(a, b, tolerance_items, markdown, junit, comment, comment_only_on_change, force):
    """Compare B with A (report folders, summary.json files or baselines): exit 1 when
    B regressed, with the same reports as check."""
    from ..regression.compare import compare as compare_baselines
    from ..regression.settings import tolerances

    cli_tols = _cli_tolerances(tolerance_items)
    _claim_outputs(markdown, junit, comment, force)
    cmp = compare_baselines(load_side(a), load_side(b), tolerances(None, cli_tols),
                            base_label=a, now_label=b, command="compare")
    _report(cmp, markdown, junit, comment, comment_only_on_change)
