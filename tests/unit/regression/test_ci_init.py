"""``capsim ci init``'s rules (issue 32 item 4): a pinned install only, paths inside the
repository, traces outside the scenarios' folder watched, a file it did not write left
alone. (The workflow running as written: tests/e2e/test_gate_scratch_repo.py.)"""

from __future__ import annotations

import pytest
import yaml
from gate_cli import cli

from sim.core.errors import CapsimError
from sim.regression.workflow import check_path, pinned


@pytest.mark.parametrize("spec", ["capsim==0.1.0", "capsim[live]==0.1.0",
                                  "capsim @ git+https://github.com/org/capsim@v0.1.0",
                                  "dist/capsim-0.1.0-py3-none-any.whl"])
def test_a_pinned_requirement_is_accepted(spec):
    assert pinned(spec)


@pytest.mark.parametrize("spec", ["capsim", "capsim>=0.1", "capsim~=0.1.0",
                                  "capsim @ git+https://github.com/org/capsim"])
def test_an_unpinned_requirement_is_refused(spec):
    assert not pinned(spec)


@pytest.mark.parametrize("path", ["/abs/capacity", "../capacity", "capacity/../..",
                                  "capa city", "cap$(rm -rf x)", ""])
def test_a_path_outside_the_repository_or_unsafe_in_a_shell_is_refused(path):
    with pytest.raises(CapsimError) as err:
        check_path(path, "--scenarios")
    assert err.value.field == "--scenarios"


def test_check_path_normalises_a_relative_path():
    assert check_path("./capacity/", "--scenarios") == "capacity"


def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "capacity").mkdir()
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "app.parquet").write_bytes(b"x")  # hashed, never read here
    (tmp_path / "capacity" / "app.toml").write_text(
        'name = "app"\nduration = 60\n[account]\nkeys = ["k"]\n[[sources]]\nname = "r"\n'
        'key = "k"\ntrace = "../recordings/app.parquet"\n')
    return tmp_path


def test_traces_outside_the_folder_are_watched_and_the_install_is_pinned(tmp_path,
                                                                          monkeypatch):
    root = scratch(tmp_path, monkeypatch)
    r = cli("ci", "init", "--watch", "src/client/**", "--install", "capsim==9.9.9")
    assert r.exit_code == 0, r.output
    assert "no baseline for capacity/app.toml yet" in r.output
    text = (root / ".github" / "workflows" / "capacity.yml").read_text()
    flow = yaml.safe_load(text)
    paths = flow[True]["pull_request"]["paths"]  # YAML 1.1 reads `on:` as True
    assert paths == ["capacity/**", "src/client/**", "recordings/app.parquet",
                     "reports/baselines/**", ".github/workflows/capacity.yml"]
    assert flow[True]["push"]["paths"] == paths
    install = next(s for s in flow["jobs"]["check"]["steps"] if s.get("id") == "install")
    assert install["run"] == "python -m pip install capsim==9.9.9"
    # Its own file is rewritten without --force.
    assert cli("ci", "init").exit_code == 0


def test_an_unpinned_install_or_a_missing_folder_is_a_user_error(tmp_path, monkeypatch):
    scratch(tmp_path, monkeypatch)
    r = cli("ci", "init", "--install", "capsim>=0.1")
    assert r.exit_code == 2 and "--install" in r.output and "pin" in r.output
    r = cli("ci", "init", "--scenarios", "nowhere")
    assert r.exit_code == 2 and "nowhere" in r.output
    assert not (tmp_path / ".github").exists()


def test_a_workflow_it_did_not_write_is_left_alone(tmp_path, monkeypatch):
    root = scratch(tmp_path, monkeypatch)
    mine = root / ".github" / "workflows" / "capacity.yml"
    mine.parent.mkdir(parents=True)
    mine.write_text("name: ours\n")
    r = cli("ci", "init")
    assert r.exit_code == 2 and "--force" in r.output
    assert mine.read_text() == "name: ours\n"
    assert cli("ci", "init", "--force").exit_code == 0
    assert mine.read_text().startswith("# Written by `capsim ci init`")
