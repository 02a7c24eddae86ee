"""The advisor's model runs: (tier, change overrides, replication) simulated once
each on an executor, within a budget, optionally kept in a folder to resume."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from ..core.errors import CapsimError
from ..core.rng import replication_seed
from ..results.summary import RunSummary, TierSummary


class Runner:
    """Runs (tier, overrides, replication) on the executor, once each, within budget."""

    def __init__(self, executor, text: str, label: str, overrides: tuple[str, ...],
                 seed: int, budget: int, store: Path | None,
                 on_run: Callable[[int, int], None] | None = None) -> None:
        self.on_run = on_run  # (runs spent, budget) after each run
        self.executor, self.text, self.label = executor, text, label
        self.overrides, self.seed, self.budget = overrides, seed, budget
        self.store = store
        self.memo: dict[tuple, TierSummary] = {}
        self.runs = 0  # model runs spent (kept runs read back from the store count too)

    def left(self) -> int:
        return self.budget - self.runs

    def run(self, wanted: list[tuple[str, tuple[str, ...], int]]) -> list[TierSummary | None]:
        """The summaries of ``wanted`` (None for a run past the budget)."""
        from ..jobs.run_one import simulate
        from ..jobs.sweep_plan import RunSpec

        todo: dict[tuple, RunSpec] = {}
        for key in wanted:
            if key in self.memo or key in todo:
                continue
            kept = self._read(key)
            if kept is not None:
                self.memo[key] = kept
                self._spent()
                continue
            if self.runs + len(todo) >= self.budget:
                continue
            tier, extra, r = key
            todo[key] = RunSpec(run_id=self._id(key), point=0, variant="advise",
                                replication=r, seed=replication_seed(self.seed, r),
                                overrides=(*self.overrides, *extra), scenario_text=self.text,
                                scenario_label=self.label, tiers=(tier,))
        by_id = {spec.run_id: key for key, spec in todo.items()}
        for spec, out in self.executor.as_completed(simulate, list(todo.values())):
            key = by_id[spec.run_id]
            self.memo[key] = RunSummary.from_json(out).tiers[0]
            self._spent()
            self._write(key, out)
        return [self.memo.get(k) for k in wanted]

    def _spent(self) -> None:
        self.runs += 1
        if self.on_run is not None:
            self.on_run(self.runs, self.budget)

    def _id(self, key) -> str:
        text = json.dumps([key[0], list(self.overrides), list(key[1]), key[2], self.seed,
                           hashlib.sha256(self.text.encode()).hexdigest()])
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def _read(self, key) -> TierSummary | None:
        if self.store is None:
            return None
        path = self.store / "runs" / f"{self._id(key)}.json"
        try:
            return RunSummary.from_json(path.read_text("utf-8")).tiers[0]
        except (OSError, ValueError, CapsimError):
            return None

    def _write(self, key, out: str) -> None:
        if self.store is None:
            return
        from ..jobs.sweep_store import write_atomic

        folder = self.store / "runs"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{self._id(key)}.json", out)


