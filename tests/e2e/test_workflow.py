"""The example workflow `.github/workflows/capacity.yml` is valid workflow YAML.

Parsed with PyYAML, then every key it uses is checked against the keys GitHub's
workflow schema allows at that place (written out below from the workflow syntax
reference), and every action's inputs against the inputs that action declares.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "capacity.yml"

TOP = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
EVENTS = {"push", "pull_request", "pull_request_target", "workflow_dispatch", "schedule",
          "workflow_call", "release", "merge_group"}
EVENT_FILTERS = {"branches", "branches-ignore", "tags", "tags-ignore", "paths",
                 "paths-ignore", "types", "inputs"}
PERMISSIONS = {"actions", "attestations", "checks", "contents", "deployments", "discussions",
               "id-token", "issues", "packages", "pages", "pull-requests",
               "repository-projects", "security-events", "statuses"}
PERMISSION_LEVELS = {"read", "write", "none"}
CONCURRENCY = {"group", "cancel-in-progress"}
JOB = {"name", "needs", "runs-on", "permissions", "environment", "concurrency", "outputs",
       "env", "defaults", "if", "steps", "timeout-minutes", "strategy", "continue-on-error",
       "container", "services", "uses", "with", "secrets"}
STEP = {"id", "if", "name", "uses", "run", "shell", "with", "env", "continue-on-error",
        "timeout-minutes", "working-directory"}
# Inputs of the actions used (from each action's action.yml).
ACTION_INPUTS = {
    "actions/checkout": {"repository", "ref", "token", "fetch-depth", "path", "lfs"},
    "actions/setup-python": {"python-version", "python-version-file", "cache",
                             "architecture", "cache-dependency-path"},
    "mikepenz/action-junit-report": {
        "token", "report_paths", "test_files_prefix", "exclude_sources", "suite_regex",
        "annotate_only", "update_check", "check_name", "commit", "fail_on_failure",
        "require_tests", "include_passed", "check_title_template", "summary", "check_retries",
        "transformers", "job_summary", "detailed_summary", "annotate_notice", "follow_symlink",
        "job_name"},
    "marocchino/sticky-pull-request-comment": {
        "header", "append", "recreate", "delete", "only_create", "only_update", "hide_details",
        "hide", "hide_and_recreate", "hide_classify", "message", "path", "ignore_empty",
        "skip_unchanged", "follow_symbolic_links", "number", "owner", "repo", "GITHUB_TOKEN"},
    "actions/upload-artifact": {"name", "path", "if-no-files-found", "retention-days"},
}


@pytest.fixture(scope="module")
def workflow():
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as the boolean True; GitHub reads it as "on".
    if True in data:
        data["on"] = data.pop(True)
    return data


def test_top_level_and_triggers(workflow):
    assert set(workflow) <= TOP and {"on", "jobs"} <= set(workflow)
    assert set(workflow["on"]) <= EVENTS and "pull_request" in workflow["on"]
    for filters in workflow["on"].values():
        assert filters is None or set(filters) <= EVENT_FILTERS
    assert set(workflow["permissions"]) <= PERMISSIONS
    assert set(workflow["permissions"].values()) <= PERMISSION_LEVELS
    assert set(workflow["concurrency"]) <= CONCURRENCY


def test_jobs_and_steps_use_only_allowed_keys(workflow):
    for job in workflow["jobs"].values():
        assert set(job) <= JOB and {"runs-on", "steps"} <= set(job)
        for step in job["steps"]:
            assert set(step) <= STEP, step
            assert ("uses" in step) != ("run" in step), step  # exactly one of them
            if "uses" in step:
                action, _, ref = step["uses"].partition("@")
                assert re.fullmatch(r"[\w.-]+/[\w.-]+", action) and ref, step["uses"]
                assert set(step.get("with", {})) <= ACTION_INPUTS[action], action
            else:
                assert "with" not in step


def test_it_checks_every_scenario_and_publishes_the_reports(workflow):
    steps = workflow["jobs"]["check"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "pip install ." in runs
    assert "for scenario in workloads/*.toml" in runs and "capsim check" in runs
    assert "--junit" in runs and "--comment" in runs
    uses = {s["uses"].split("@")[0] for s in steps if "uses" in s}
    assert {"mikepenz/action-junit-report", "marocchino/sticky-pull-request-comment"} <= uses
    # The reports are published even when the check step failed.
    assert all("always()" in s["if"] for s in steps
               if s.get("uses", "").split("@")[0] in ACTION_INPUTS
               and not s["uses"].startswith(("actions/checkout", "actions/setup-python")))


def test_the_check_step_passes_on_the_repository(workflow, tmp_path):
    """Item 11 (issue 21): the workflow's own check step -- its shell, as written -- run on
    a copy of the repository's workloads/ and reports/baselines/ exits 0: every scenario
    in workloads/ has a baseline (live-agreement.toml had none, so the shipped workflow
    always failed), and each one wrote its JUnit report; nothing moved, so no PR comment
    (issue 32: the comment is deleted, not rewritten, when nothing moved)."""
    import os
    import shutil
    import subprocess
    import sys

    root = WORKFLOW.parents[2]
    step = next(s for s in workflow["jobs"]["check"]["steps"] if s.get("id") == "check")
    shutil.copytree(root / "workloads", tmp_path / "workloads")
    shutil.copytree(root / "reports" / "baselines", tmp_path / "reports" / "baselines")
    summary = tmp_path / "step-summary.md"
    output = tmp_path / "github-output.txt"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(output),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # GitHub runs `shell: bash` steps as `bash --noprofile --norc -eo pipefail {0}`.
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    names = sorted(p.stem for p in (root / "workloads").glob("*.toml"))
    assert sorted(p.stem for p in (tmp_path / "reports" / "check").glob("*.xml")) == names
    assert "no regression" in summary.read_text(encoding="utf-8")
    assert output.read_text() == "moved=false\n"
    assert not (tmp_path / "reports" / "check" / "comment.md").exists()
