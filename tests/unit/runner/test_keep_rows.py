"""``keep_rows=False`` (``capsim run --records windows|none``, sweeps, robust reruns): each
tier's spooled rows are removed once its summary and frames are read, so the temporary
disk holds one tier's at a time (one per worker); nothing else of the output changes."""

from __future__ import annotations

import pytest

import sim
from sim.runner import run as runner

TIERS = ["RPC", "Search", "All 3 APIs"]
ARGS = dict(overrides=["duration=60"], tiers=TIERS)


def _spooled(result) -> list[str]:
    from pathlib import Path

    folder = Path(result.records._folder.name)
    return sorted(p.name for p in folder.glob("tier*"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_same_output_without_the_rows(jobs):
    with sim.run(None, jobs=jobs, records="windows", **ARGS) as kept, \
            sim.run(None, jobs=jobs, records="windows", keep_rows=False, **ARGS) as lean:
        assert len(_spooled(kept)) == 2 * len(TIERS)  # attempts and requests, every tier
        assert _spooled(lean) == []
        assert lean.summary == kept.summary
        for frame in ("windows", "streams", "slots", "minutes", "refused_handshakes"):
            assert getattr(lean, frame).equals(getattr(kept, frame)), frame
        assert len(kept.attempts) > 0
        with pytest.raises(RuntimeError, match="kept no attempt rows"):
            lean.attempts  # noqa: B018


def test_one_tier_on_disk_at_a_time(monkeypatch):
    """Each tier's rows are gone before the next tier runs."""
    on_disk = []
    drop = runner.drop_tier_rows

    def spy(result):
        from pathlib import Path

        folder = Path(result.attempt_sink.path).parent
        on_disk.append(sorted(p.name for p in folder.glob("tier*")))
        drop(result)

    monkeypatch.setattr(runner, "drop_tier_rows", spy)
    with sim.run(None, records="none", keep_rows=False, **ARGS):
        pass
    assert on_disk == [[f"tier{i}-attempts.parquet", f"tier{i}-requests.parquet"]
                       for i in range(len(TIERS))]


def test_the_attempt_rows_cannot_be_written_without_being_kept():
    with pytest.raises(ValueError, match="keep_rows=False"):
        sim.run(None, records="attempts", keep_rows=False, **ARGS)
