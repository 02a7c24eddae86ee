"""The accounts mapping file (``capsim calibrate --accounts``): validated, keys turned
into pseudonyms at once and never shown in clear, every key of the trace in one account."""

from __future__ import annotations

import numpy as np
import pytest

from sim.calibration.accounts import DAY_S, account_of_rows, load_accounts, separated_times, subset
from sim.calibration.recorded import load_recorded
from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym

KEY_A = "sk_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
KEY_B = "sk_live_bbbbbbbbbbbbbbbbbbbbbbbbbbbb"


def write(tmp_path, text):
    path = tmp_path / "accounts.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_mapping_gives_each_account_its_tier_and_pseudonyms(tmp_path):
    path = write(tmp_path, f'[[account]]\nname = "a"\ntier = "All 3 APIs"\nkeys = ["{KEY_A}"]\n'
                           f'[[account]]\nname = "b"\ntier = "rpc"\n'
                           f'keys = ["{pseudonym(KEY_B)}"]\n')
    a, b = load_accounts(path)
    assert (a.name, a.tier.cu_per_window, a.keys) == ("a", 8400, (pseudonym(KEY_A),))
    assert (b.tier.name, b.keys) == ("RPC", (pseudonym(KEY_B),))
    acct = account_of_rows(np.array([pseudonym(KEY_B), pseudonym(KEY_A)], object), [a, b],
                           "t.parquet")
    assert acct.tolist() == [1, 0]


@pytest.mark.parametrize("text, field, words", [
    ('[[account]]\nname = "a"\ntier = "Gold"\nkeys = ["x"]\n', "account[0].tier",
     "unknown tier 'Gold'"),
    ('[[account]]\nname = "a"\ntier = "RPC"\nkeys = []\n', "account.0.keys", "at least 1"),
    ('[[account]]\nname = "a"\ntier = "RPC"\nkey = ["x"]\n', "account.0", ""),
    (f'[[account]]\nname = "a"\ntier = "RPC"\nkeys = ["{KEY_A}"]\n'
     f'[[account]]\nname = "b"\ntier = "RPC"\nkeys = ["{KEY_A}"]\n', "account[1].keys",
     "listed under accounts 'a' and 'b'"),
    # a key where a list was expected, or beside a number: the message never shows it
    (f'[[account]]\nname = "a"\ntier = "RPC"\nkeys = "{KEY_A}"\n', "account.0.keys",
     "valid list"),
    (f'[[account]]\nname = "a"\ntier = "RPC"\nkeys = ["{KEY_A}", 5]\n',
     "account.0.keys.1", "valid string"),
    (f'[[account]]\nname = "a"\ntier = "RPC"\nkeys = ["{KEY_A}\n', "", "not valid TOML"),
])
def test_a_malformed_mapping_names_file_and_field(tmp_path, text, field, words):
    path = write(tmp_path, text)
    with pytest.raises(CapsimError) as err:
        load_accounts(path)
    assert err.value.file == str(path)
    assert field in str(err.value) and words in str(err.value)
    assert KEY_A not in str(err.value)


def test_a_key_in_no_account_is_named_by_pseudonym_only(tmp_path):
    path = write(tmp_path, f'[[account]]\nname = "a"\ntier = "RPC"\nkeys = ["{KEY_A}"]\n')
    accounts = load_accounts(path)
    with pytest.raises(CapsimError) as err:
        account_of_rows(np.array([pseudonym(KEY_A), pseudonym(KEY_B)], object), accounts,
                        "t.parquet")
    assert pseudonym(KEY_B) in str(err.value) and KEY_B not in str(err.value)
    assert "1 key(s) of the trace belong to no account" in str(err.value)


def test_separated_accounts_keep_their_phase_and_day(tmp_path):
    import pandas as pd
    from calib_reference import to_canonical

    frame = pd.DataFrame({"timestamp": pd.to_datetime([0, 5_000_000_000, 9_000_000_000],
                                                      utc=True) + pd.Timedelta(days=19000),
                          "api": "rpc", "method": "svc_call", "key": [KEY_A, KEY_B, KEY_A],
                          "status": 200, "latency_ms": 50.0})
    path = tmp_path / "t.parquet"
    to_canonical(frame, path)
    rec = load_recorded(path)
    t = separated_times(rec, np.array([0, 1, 0]))
    assert t[1] - rec.t_s[1] == DAY_S  # a whole day: the window phase and UTC day kept
    assert (t[[0, 2]] == rec.t_s[[0, 2]]).all()
    assert subset(rec, np.array([False, True, False])).t_s.tolist() == [5.0]


def test_no_tier_and_no_accounts_is_a_user_error(tmp_path):
    from click.testing import CliRunner

    from sim.cli.main import main

    result = CliRunner().invoke(main, ["calibrate", str(tmp_path / "t.parquet"), "--out",
                                       str(tmp_path / "cal")])
    assert result.exit_code == 2
    assert "--tier: missing; expected the account's tier (--tier NAME), or --accounts" in \
        result.output
    assert not (tmp_path / "cal").exists()
