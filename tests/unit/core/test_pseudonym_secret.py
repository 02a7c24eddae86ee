"""The pseudonym secret: never a public constant; per user, private and stable."""

from __future__ import annotations

import hashlib
import hmac
import re
import stat
from pathlib import Path

import pytest

from sim.core import pseudonyms as redact
from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym

PACKAGE = Path(redact.__file__).resolve().parent.parent  # sim/


@pytest.fixture
def config_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("CAPSIM_PSEUDONYM_SECRET", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    redact._file_secret.cache_clear()
    yield tmp_path / "cfg"
    redact._file_secret.cache_clear()


def test_pseudonym_is_hmac_sha256_of_the_key_under_the_secret():
    expected = "key-" + hmac.new(b"s3cret", b"frontend-key", hashlib.sha256).hexdigest()[:16]
    assert pseudonym("frontend-key", b"s3cret") == expected


def test_two_secrets_give_different_pseudonyms_and_one_secret_is_stable():
    keys = ["frontend-key", "indexer-key", "a" * 64]
    for key in keys:
        assert pseudonym(key, b"secret-one") != pseudonym(key, b"secret-two")
        assert pseudonym(key, b"secret-one") == pseudonym(key, b"secret-one")


def test_without_the_variable_a_private_per_user_file_is_created_once(config_home):
    first = pseudonym("frontend-key")
    path = config_home / "capsim" / "pseudonym-secret"
    assert redact.secret_file() == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert re.fullmatch(r"[0-9a-f]{64}\n", path.read_text())
    assert redact.secret_kind() == "per-user secret file"
    redact._file_secret.cache_clear()  # a later run of the same user reads the same file
    assert pseudonym("frontend-key") == first
    assert first == pseudonym("frontend-key", path.read_text().strip().encode())
    assert [p.name for p in path.parent.iterdir()] == ["pseudonym-secret"]  # no temp left


def test_two_users_get_different_pseudonyms(tmp_path, monkeypatch, config_home):
    alice = pseudonym("frontend-key")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))
    assert pseudonym("frontend-key") != alice


def test_the_variable_wins_over_the_file(config_home, monkeypatch):
    monkeypatch.setenv("CAPSIM_PSEUDONYM_SECRET", "team-secret")
    assert pseudonym("frontend-key") == pseudonym("frontend-key", b"team-secret")
    assert redact.secret_kind() == "environment variable"
    assert not (config_home / "capsim").exists()


def test_home_config_without_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert redact.secret_file() == tmp_path / ".config" / "capsim" / "pseudonym-secret"


def test_a_secret_readable_by_others_is_refused_without_showing_it(config_home):
    path = config_home / "capsim" / "pseudonym-secret"
    path.parent.mkdir(parents=True)
    path.write_text("ab" * 32 + "\n")
    path.chmod(0o644)
    with pytest.raises(CapsimError, match="readable by other users") as err:
        pseudonym("frontend-key")
    assert "ab" * 32 not in str(err.value)


def test_no_constant_secret_is_left_in_the_package():
    source = "\n".join(p.read_text("utf-8") for p in PACKAGE.rglob("*.py"))
    assert "capsim-pseudonym-v1" not in source
    assert "_DEFAULT_SECRET" not in source
    # No HMAC anywhere keyed with a bytes literal.
    assert not re.search(r"hmac\.new\(\s*b[\"']", source)


def test_the_report_says_which_kind_of_secret_was_used(tmp_path, config_home):
    from click.testing import CliRunner

    from sim.cli.main import main

    out = tmp_path / "r"
    result = CliRunner().invoke(main, ["run", "--set", "duration=60", "--tier", "RPC",
                                       "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    import json
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pseudonym_secret"] == "per-user secret file"
    secret = (config_home / "capsim" / "pseudonym-secret").read_text().strip()
    report = (out / "report.md").read_text()
    assert "per-user secret file" in report
    assert secret not in report and secret not in (out / "summary.json").read_text()
