"""`capsim tiers` prints the catalog as an aligned table (tabulate)."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli.main import main


def test_the_catalog_table():
    out = CliRunner().invoke(main, ["tiers"]).output.splitlines()
    assert out[0].split() == ["tier", "CU/12s", "ws", "cap", "APIs", "daily", "CU*",
                              "$/month*"]
    assert set(out[1]) <= {"-", " "}
    rows = {line[:19].strip(): line[19:].split() for line in out[2:-1]}
    assert len(rows) == 9  # the spec's nine selections
    # spec 8.1 / 8.3: budget per 12 s and websocket cap
    assert rows["Advanced bundle"][:3] == ["100,000", "10", "rpc+search+streams"]
    assert rows["RPC"][:3] == ["4,000", "0", "rpc"]
    # every line of the table is as wide as the header's underline: aligned columns
    assert {len(line.rstrip()) for line in out[1:-1]} == {len(out[1])}
    assert out[-1].startswith("* assumptions")
