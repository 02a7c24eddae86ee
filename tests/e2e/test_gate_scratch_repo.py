"""Issue 32's "done when", in a scratch application repository (a temp dir).

The team's scenario replays a recording of its integration tests (4 svc_call per second
for 60 s, 20 CU each: 6,912,000 CU per day). `capsim ci init` writes the workflow; it
passes a check of GitHub's workflow syntax (actionlint when installed, else the JSON
schema of GitHub workflows vendored by check-jsonschema); its shell steps then run here
as written (the pinned install step excepted: this capsim is installed already), with
GitHub's ``bash -eo pipefail`` and the variables a runner sets:

* unchanged: exit 0, ``moved=false``, no comment;
* a re-recorded trace with 4.25 calls per second (+6.25 %, 17/16): exit 1, the comment's
  first line states the CU change (+6.3 %) and the dollar change (RPC's allowance no
  longer lasts the day, 24 h · 25/26.5625 = 23.5 h, so RPC → RPC + Search: $139 - $49 =
  +$90/month), and the changed trace is reported as an input change;
* the recording restored: exit 0, ``moved=false`` and the stale comment gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from test_workflow import ACTION_INPUTS  # the inputs each action declares (tests/e2e)

from sim.core.version import __version__

REPO = Path(__file__).resolve().parents[2]
KEY = "a81c5e0f9b2d47c6813e7f0a5c9d2b64"

SCENARIO = """\
name = "app"
start = 2024-05-01T12:00:00Z
duration = 60
tiers = ["RPC", "RPC + Search"]

[account]
keys = ["prod"]

[[sources]]
name = "integration-tests"
key = "prod"
trace = "traces/app.parquet"
"""


def recording(path: Path, rate: float) -> Path:
    """An integration-test recording: ``rate`` svc_call per second for 60 s, as CSV."""
    t0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
    lines = ["timestamp,api,method,X-Api-Key,status"]
    for i in range(round(60 * rate)):
        t = (t0 + timedelta(seconds=i / rate)).isoformat().replace("+00:00", "Z")
        lines.append(f"{t},rpc,svc_call,{KEY},200")
    path.write_text("\n".join(lines) + "\n")
    return path


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), out.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    out["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), out["PATH"]])
    return out


def capsim(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    r = subprocess.run(["capsim", *args], cwd=cwd, env=env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def import_recording(repo: Path, rate: float) -> None:
    capsim(repo, "trace", "import", str(recording(repo / "recorded.csv", rate)),
           "--out", "capacity/traces/app.parquet", "--force")


def schema_check(workflow: Path) -> str:
    """Check the workflow's syntax; the name of the checker that did."""
    if shutil.which("actionlint"):
        r = subprocess.run(["actionlint", str(workflow)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        return "actionlint"
    pytest.importorskip("check_jsonschema")
    r = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                        "vendor.github-workflows", str(workflow)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return "check-jsonschema"


def run_steps(repo: Path, workflow: dict) -> tuple[int, dict[str, str], str]:
    """Run the check job's shell steps as GitHub would (bash -eo pipefail, the
    workflow's env, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY); stop at the first failure.
    Returns (exit code, the step outputs, the step summary)."""
    job = workflow["jobs"]["check"]
    output, summary = repo / "github-output.txt", repo / "step-summary.md"
    output.write_text("")
    summary.write_text("")
    base = {**env(), **{k: str(v) for k, v in workflow.get("env", {}).items()},
            "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
    code = 0
    for step in job["steps"]:
        if "run" not in step or step.get("id") == "install":
            continue
        script = repo / "step.sh"
        script.write_text(step["run"])
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           cwd=repo, env={**base, **step.get("env", {})},
                           capture_output=True, text=True, timeout=300)
        code = r.returncode
        assert code in (0, 1), r.stdout + r.stderr  # 2 would be a user error
        if code:
            break
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
    return code, outputs, summary.read_text()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("app-repo")
    (root / "capacity" / "traces").mkdir(parents=True)
    (root / "capacity" / "app.toml").write_text(SCENARIO)
    import_recording(root, 4)
    capsim(root, "baseline", "save", "capacity/app.toml")
    return root


def test_the_generated_workflow_passes_the_check_and_gates_a_six_percent_rise(repo):
    r = capsim(repo, "ci", "init")
    assert "capacity/" in r.stdout
    path = repo / ".github" / "workflows" / "capacity.yml"
    print("checked with", schema_check(path))
    workflow = yaml.safe_load(path.read_text())
    steps = workflow["jobs"]["check"]["steps"]
    for step in steps:
        if "uses" in step:  # only inputs the action declares (check-jsonschema cannot tell)
            action = step["uses"].partition("@")[0]
            assert set(step.get("with", {})) <= ACTION_INPUTS[action], step
    install = next(s for s in steps if s.get("id") == "install")
    assert install["run"] == f"python -m pip install capsim=={__version__}"
    watched = workflow[True]["pull_request"]["paths"]  # YAML 1.1 reads `on:` as True
    assert "capacity/**" in watched and "reports/baselines/**" in watched
    reports = repo / "reports" / "capsim-check"

    code, outputs, summary = run_steps(repo, workflow)
    assert (code, outputs["moved"]) == (0, "false")
    assert not (reports / "pr-comment.md").exists()
    assert summary.startswith("## ✅ +$0/month: recommended tier unchanged (RPC, $49/month); "
                              "CU per day unchanged")

    import_recording(repo, 4.25)  # the team's code now makes 6.25 % more calls
    code, outputs, summary = run_steps(repo, workflow)
    assert (code, outputs["moved"]) == (1, "true")
    body = (reports / "pr-comment.md").read_text()
    first = body.splitlines()[0]
    assert first.startswith("### ❌ +$90/month: recommended tier RPC → RPC + Search; "
                            "+6.3 % CU per day"), first
    assert "(allowance lasts 23.5 h instead of 25.0 h)" in first
    assert "trace `traces/app.parquet` changed" in body
    assert summary.splitlines()[0] == "## " + first.removeprefix("### ")
    assert 'failures="0"' not in (reports / "app.xml").read_text()

    import_recording(repo, 4)  # reverted: nothing moved, the comment goes
    code, outputs, _ = run_steps(repo, workflow)
    assert (code, outputs["moved"]) == (0, "false")
    assert not (reports / "pr-comment.md").exists()


def test_ci_init_does_not_overwrite_a_workflow_it_did_not_write(repo):
    own = repo / ".github" / "workflows" / "mine.yml"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text("name: mine\n")
    r = subprocess.run(["capsim", "ci", "init", "--out", ".github/workflows/mine.yml"],
                       cwd=repo, env=env(), capture_output=True, text=True)
    assert r.returncode == 2 and "--force" in r.stderr
    assert own.read_text() == "name: mine\n"
