"""``capsim ci init``: write the capacity gate's GitHub Actions workflow for a user's
repository (:mod:`sim.regression.workflow`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ..core.errors import CapsimError
from ..core.version import __version__
from .options import force_option


@click.group()
def ci():
    """Set up the capacity gate in your repository's CI."""


@ci.command("init")
@click.option("--scenarios", default="capacity", show_default=True, metavar="DIR",
              help="The folder of your scenarios (*.toml); each is checked against "
                   "reports/baselines/<name>.json.")
@click.option("--watch", "watch", multiple=True, metavar="GLOB",
              help="More paths whose change runs the check (repeatable), e.g. the client "
                   "code whose traffic the traces record. Traces the scenarios replay are "
                   "watched without it.")
@click.option("--install", default=f"capsim=={__version__}", show_default=True,
              metavar="REQUIREMENT",
              help="The pinned capsim the workflow installs (NAME==VERSION, "
                   "'capsim @ git+https://…@TAG' or a wheel).")
@click.option("--python", "python_version", default="3.11", show_default=True,
              metavar="VERSION", help="Python version of the job.")
@click.option("--branch", default="main", show_default=True,
              help="The branch whose pushes are checked too.")
@click.option("--out", default=".github/workflows/capacity.yml", show_default=True,
              type=click.Path(dir_okay=False), metavar="FILE", help="The workflow file.")
@force_option
def init(scenarios, watch, install, python_version, branch, out, force):
    """Write a workflow that gates every scenario of --scenarios in pull requests.

    Run it at your repository's root. The workflow installs the pinned capsim, runs when
    the scenarios, the traces they replay, the baselines or --watch paths change, runs
    `capsim check` on each scenario, publishes the JUnit files and the reports, and
    keeps one pull-request comment only while something moved. A file that capsim did
    not write is not overwritten without --force.
    """
    from ..core.outputs import check_writable, claim_output
    from ..regression.workflow import MARKER, WorkflowSettings, check_path, render, trace_paths

    folder = check_path(scenarios, "--scenarios")
    if not Path(folder).is_dir():
        raise CapsimError("no such folder; expected the folder of your scenarios, relative to "
                          "the repository's root (run capsim ci init there)", file=folder,
                          field="--scenarios")
    files = sorted(str(p.as_posix()) for p in Path(folder).glob("*.toml"))
    if not files:
        raise CapsimError("holds no scenario (*.toml); write one first (docs/how-to/"
                          "gate-in-ci.md)", file=folder, field="--scenarios")
    extra = [check_path(w, "--watch") for w in watch] + trace_paths(files, folder)
    out_path = check_path(out, "--out")
    target = claim_output(out_path, "workflow", force=force, option="--out",
                          recognise=("a workflow written by capsim ci init",
                                     lambda p: p.read_text("utf-8").startswith(MARKER)))
    check_writable(target, "--out")
    settings = WorkflowSettings(scenarios=folder, watch=tuple(extra), install=install,
                                python=python_version, branch=branch, out=out_path)
    argv = ["capsim", "ci", "init", "--scenarios", folder,
            *(a for w in watch for a in ("--watch", w)), "--install", install]
    text = render(settings, shlex.join(argv))
    from ..core.atomic import write_atomic

    write_atomic(target, text, "--out")
    from ..api import load_scenario

    missing = [f for f in files if not Path(
        "reports/baselines", load_scenario(f).scenario.name + ".json").is_file()]
    click.echo(f"workflow: {target} ({len(files)} scenario(s) in {folder}/, capsim "
               f"installed as {install})")
    for f in missing:
        click.echo(f"  no baseline for {f} yet: capsim baseline save {f}")
