"""A key given with ``--set``, ``--vary`` or ``[[variants]]`` is never written or printed
in clear (issue 21, item 6).

Every command that takes overrides runs with a recognisable fake key at each key path
of the scenario format (``account.keys``, ``sources[i].key``; ``accounts[i].keys`` and
``streams[i].key`` are the same rule, :mod:`sim.config.key_paths`), then every file
written (Parquet read as tables: its strings may be compressed) and stdout/stderr are
searched for it. The keys' pseudonyms appear instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sim.config.key_paths import masked_override
from sim.core.pseudonyms import pseudonym
from sim.jobs.sweep_plan import plan_sweep
from sim.regression.baseline import scenario_hash

SET_KEY = "sk_live_SETFAKEKEY0123456789"
VARY_KEY = "sk_live_VARYFAKEKEY0123456789"
VARIANT_KEY = "sk_live_VARIANTFAKEKEY0123456789"
BAD_KEY = "sk_live_MALFORMEDFAKEKEY0123"
SECRETS = (SET_KEY, VARY_KEY, VARIANT_KEY, BAD_KEY)

SCENARIO = f"""name = "keys"
duration = 30
tiers = ["RPC"]
[account]
keys = ["k", "k2"]
[[sources]]
name = "s"
key = "k"
arrival = {{ process = "poisson", rate = 1 }}
[[variants]]
name = "other-key"
set = {{ "sources[0].key" = "{VARIANT_KEY}", "account.keys[1]" = "{VARIANT_KEY}" }}
"""
SETS = ["--set", f"account.keys[0]={SET_KEY}", "--set", f"sources[0].key={SET_KEY}"]


def _capsim(tmp_path, *args, env=None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "capsim"
    return subprocess.run([str(exe), *map(str, args)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def _clear_in_files(folder: Path) -> list[str]:
    """Files under ``folder`` holding a fake key in clear (the scenario file aside)."""
    found = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name == "keys.toml":
            continue
        if p.suffix == ".parquet":
            frame = pd.read_parquet(p)
            text = frame.astype(str).to_csv() + " ".join(map(str, frame.columns))
        else:
            text = p.read_bytes().decode("utf-8", "replace")
        found += [f"{p.relative_to(folder)}: {s}" for s in SECRETS if s in text]
    return found


@pytest.mark.slow
def test_no_command_writes_or_prints_a_key_given_on_the_command_line(tmp_path):
    """Item 6: run, baseline save, check (Markdown, step summary, PR comment, JUnit),
    sweep (manifest, points.parquet, sweep.json, report) and headroom; a malformed
    --vary does not echo its text."""
    (tmp_path / "keys.toml").write_text(SCENARIO, encoding="utf-8")
    step = tmp_path / "step-summary.md"
    runs = [
        _capsim(tmp_path, "validate", "keys.toml", *SETS),
        _capsim(tmp_path, "run", "keys.toml", *SETS, "--out", "run"),
        _capsim(tmp_path, "baseline", "save", "keys.toml", *SETS, "--out", "base.json"),
        _capsim(tmp_path, "check", "keys.toml", "--baseline", "base.json", "--markdown",
                "check.md", "--junit", "check.xml", "--comment", "comment.md",
                env={"GITHUB_STEP_SUMMARY": str(step)}),
        _capsim(tmp_path, "sweep", "keys.toml", *SETS, "--vary",
                f"account.keys[1]={VARY_KEY},k3", "--vary", f"sources[0].key={VARY_KEY},k",
                "--out", "sweep"),
        _capsim(tmp_path, "headroom", "keys.toml", *SETS, "--max-load", "2"),
    ]
    for r in runs:
        assert r.returncode == 0, r.stderr
    bad = _capsim(tmp_path, "sweep", "keys.toml", "--vary", f"account.keys[1]{BAD_KEY}",
                  "--out", "sweep2")
    assert bad.returncode == 2 and "capsim: error:" in bad.stderr
    printed = [s for r in [*runs, bad] for s in SECRETS if s in r.stdout + r.stderr]
    assert printed == []
    assert _clear_in_files(tmp_path) == []
    # The check replayed the baseline's (pseudonymized) overrides: the same run.
    assert "no regression" in runs[3].stdout
    # What was written instead: the pseudonyms.
    assert pseudonym(SET_KEY) in (tmp_path / "base.json").read_text()
    assert pseudonym(VARY_KEY) in (tmp_path / "sweep" / "sweep.json").read_text()
    manifest = (tmp_path / "sweep" / "sweep-manifest.json").read_text()
    assert pseudonym(VARIANT_KEY) in manifest and pseudonym(SET_KEY) in manifest


def test_overrides_at_key_paths_show_pseudonyms_and_nothing_else_changes():
    """Item 6: the rule, path by path (the key paths come from the scenario models)."""
    k = "sk_live_X"
    assert masked_override(f"sources[3].key={k}") == f'sources[3].key="{pseudonym(k)}"'
    assert masked_override(f"streams[0].key={k}") == f'streams[0].key="{pseudonym(k)}"'
    assert masked_override(f"accounts[1].keys[0]={k}") == \
        f'accounts[1].keys[0]="{pseudonym(k)}"'
    assert masked_override(f'account.keys=["{k}", "b"]') == \
        f'account.keys=["{pseudonym(k)}", "{pseudonym("b")}"]'
    assert masked_override(f'account={{keys = ["{k}"]}}') == \
        f'account={{"keys" = ["{pseudonym(k)}"]}}'
    for plain in ("load=2", "sources[0].arrival.rate=3", "sources[0].name=sk_live_X"):
        assert masked_override(plain) == plain
    pseudo = masked_override(f"sources[0].key={k}")
    assert masked_override(pseudo) == pseudo  # idempotent: a replay stays the same


def test_fingerprints_hash_the_real_value(tmp_path):
    """Item 6: two different keys make different fingerprints, though neither is written."""
    path = tmp_path / "keys.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    a, b = f"sources[0].key={SET_KEY}", f"sources[0].key={VARY_KEY}"
    assert scenario_hash(path, [a]) != scenario_hash(path, [b])
    assert scenario_hash(path, [a]) == scenario_hash(path, [masked_override(a)])
    pa = plan_sweep(path, vary=[f"account.keys[1]={SET_KEY},k3"], variants=False)
    pb = plan_sweep(path, vary=[f"account.keys[1]={VARY_KEY},k3"], variants=False)
    assert pa.fingerprint != pb.fingerprint and pa.identity == {
        **pb.identity, "vary": pa.identity["vary"]}
    assert SET_KEY not in str(pa.identity) and SET_KEY in pa.runs[0].overrides[-1]
