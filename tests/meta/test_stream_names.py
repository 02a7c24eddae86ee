"""Named random streams: every name a run draws from is declared once, in
:data:`sim.core.vocabulary.RANDOM_STREAMS`, and no two purposes share one.

Two checks, each able to fail on its own:

* in the source, no call of :func:`sim.core.rng.stream` spells a word of a name as a string
  literal (neither in its arguments nor in the tuples spliced into them): the words are
  :class:`~sim.core.vocabulary.Rng` members;
* in runs that reach every stream of the model (HTTP sources open and closed loop, a
  replayed trace, websocket clients open and closed loop, publishers), every name drawn
  matches exactly one declared path, word for word *by identity* (``Rng.SOURCE``, not a
  literal ``"source"`` that happens to be equal), and every declared path of the model is
  drawn from.

Why it matters: a stream's seed is its name, so two purposes with one name would draw the
same numbers (correlated inputs), and a renamed word silently reseeds a stream.
"""

from __future__ import annotations

import ast
import numbers
import tomllib
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sim.core.rng import stream as real_stream
from sim.core.vocabulary import RANDOM_STREAMS, Rng

SIM = Path(__file__).resolve().parents[2] / "sim"
WORKLOADS = Path(__file__).resolve().parents[2] / "workloads"


# -- the declaration ------------------------------------------------------------------------

def _compatible(a, b) -> bool:
    """Whether one name part could match both pattern elements ``a`` and ``b``."""
    if isinstance(a, Rng) and isinstance(b, Rng):
        return a is b
    if isinstance(a, Rng) or isinstance(b, Rng):
        return False  # a name or index from data is never a vocabulary member
    return a is b  # str / int placeholders


def matches(pattern: tuple, name: tuple) -> bool:
    """Whether the parts of a drawn name fit a declared path."""
    if len(pattern) != len(name):
        return False
    for want, part in zip(pattern, name, strict=True):
        if isinstance(want, Rng):
            if part is not want:
                return False
        elif want is int:
            if not isinstance(part, numbers.Integral) or isinstance(part, bool | Rng):
                return False
        elif want is str:
            if not isinstance(part, str) or isinstance(part, Rng):
                return False
        else:
            raise AssertionError(f"bad pattern element {want!r}")
    return True


def test_no_two_declared_paths_can_name_the_same_stream():
    for a, b in combinations(RANDOM_STREAMS, 2):
        overlap = len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b, strict=True))
        assert not overlap, (a, b)
    purposes = list(RANDOM_STREAMS.values())
    assert len(set(purposes)) == len(purposes)  # one path per purpose
    assert len({str(w) for w in Rng}) == len(Rng)  # one word per meaning (@unique too)


def test_every_word_is_used_and_is_its_text():
    used = {p for path in RANDOM_STREAMS for p in path if isinstance(p, Rng)}
    assert used == set(Rng)
    # The seed comes from the joined text, which must be the words as first written.
    assert "/".join(str(p) for p in (Rng.SOURCE, "a", Rng.REPLAY_FILL)) == "source/a/replay-fill"


def test_the_matcher_refuses_what_it_should():
    pattern = (Rng.SOURCE, str, Rng.WORKER, int, Rng.THINK)
    assert matches(pattern, (Rng.SOURCE, "a", Rng.WORKER, 3, Rng.THINK))
    assert not matches(pattern, ("source", "a", Rng.WORKER, 3, Rng.THINK))  # a literal
    assert not matches(pattern, (Rng.SOURCE, "a", Rng.WORKER, "3", Rng.THINK))
    assert not matches(pattern, (Rng.SOURCE, "a", Rng.WORKER, 3))


# -- the source: no literal words -----------------------------------------------------------

def _stream_aliases(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("rng"):
            names |= {a.asname or a.name for a in node.names if a.name == "stream"}
    return names


def _literals(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def literal_words(path: Path) -> list[str]:
    """String literals that end up in a stream's name in ``path``: in a call's arguments,
    in tuples bound to a name that a call splices (``*base``) or passes, and in
    ``stream_name=`` tuples."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = _stream_aliases(tree)
    found: list[str] = []
    spliced: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in aliases:
                for arg in node.args[1:]:
                    found += [f"line {node.lineno}: {v!r}" for v in _literals(arg)]
                    inner = arg.value if isinstance(arg, ast.Starred) else arg
                    if isinstance(inner, ast.Name):
                        spliced.add(inner.id)
            for kw in node.keywords:
                if kw.arg == "stream_name":
                    found += [f"line {node.lineno}: {v!r}" for v in _literals(kw.value)]
    for node in ast.walk(tree):  # what the spliced names are bound to
        bound = []
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id in spliced for t in node.targets):
                bound.append(node.value)
        elif (isinstance(node, ast.comprehension | ast.For)
              and isinstance(node.target, ast.Name) and node.target.id in spliced):
            bound.append(node.iter)
        for value in bound:
            found += [f"line {value.lineno}: {v!r}" for v in _literals(value)]
    return found


def test_no_stream_name_is_spelled_as_a_literal():
    files = sorted(SIM.rglob("*.py"))
    callers = [p for p in files if _stream_aliases(ast.parse(p.read_text("utf-8")))]
    assert len(callers) >= 8  # engine, websockets, demand, replay, four live modules
    bad = {str(p.relative_to(SIM)): w for p in callers if (w := literal_words(p))}
    assert not bad, bad


def test_the_source_check_finds_a_literal(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from ..rng import stream as s\n"
                   "def f(seed, name, k):\n"
                   "    base = ('ws', name, k)\n"
                   "    for p in (Rng.GAP, 'gap'):\n"
                   "        s(seed, *base, p)\n"
                   "    s(seed, Rng.SOURCE, name, 'retry')\n"
                   "    g(stream_name=('worker', k))\n", encoding="utf-8")
    words = literal_words(src)
    assert sorted(w.split(": ")[1] for w in words) == ["'gap'", "'retry'", "'worker'", "'ws'"]


# -- the runs: every name drawn is declared -------------------------------------------------

def _replay_scenario(tmp_path):
    from sim.traces.importers import import_trace

    rng = np.random.default_rng(1)
    t0 = pd.Timestamp("2026-01-05T00:00:00Z")
    n = 200
    df = pd.DataFrame({"time_ns": t0.value + np.sort(rng.integers(0, 60 * 10**9, n)),
                       "api": "rpc", "method": "svc_call",
                       "key": "0123456789abcdef0123456789abcdef", "cu": 10.0})
    df.to_csv(tmp_path / "trace.csv", index=False)
    import_trace(tmp_path / "trace.csv", tmp_path / "trace.parquet", fmt="csv")
    return {
        "name": "replay", "duration": 60, "tiers": ["RPC"], "account": {"keys": ["x"]},
        "methods": {"svc_call": {"service_time": {"dist": "constant", "value": 0.01}}},
        "sources": [{"name": "rec", "key": "x", "trace": str(tmp_path / "trace.parquet")},
                    # looped, thinned by the hour, copies spread over the period
                    {"name": "looped", "key": "x", "trace": str(tmp_path / "trace.parquet"),
                     "replay": {"repeat": "tile", "period_s": 30, "load_multiplier": 2,
                                "copies_spread": "period", "hourly_weights": [1] * 24}}],
    }


def _websocket_scenario():
    """streams-bot (closed-loop connections held for the run, publishers) with a
    closed-loop client of sessions and gaps and an open-loop client."""
    raw = tomllib.loads((WORKLOADS / "streams-bot.toml").read_text(encoding="utf-8"))
    raw.update(duration=60, tiers=["All 3 APIs"])
    raw["streams"] += [
        {"name": "sessions", "key": "bot", "stream": "pending-txs", "connections": 2,
         "session": {"dist": "exponential", "mean": 10}, "gap": {"dist": "constant", "value": 1}},
        {"name": "visitors", "key": "bot", "stream": "new-blocks",
         "arrival": {"process": "poisson", "rate": 1},
         "session": {"dist": "exponential", "mean": 10}},
    ]
    return raw


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every stream name drawn in short runs of scenarios that reach every model stream."""
    import sys

    import sim.model.engine  # noqa: F401 - every module that draws, loaded before patching
    import sim.model.websockets  # noqa: F401
    import sim.workload.demand  # noqa: F401
    import sim.workload.replay_source  # noqa: F401
    from sim.config.resolved import load, validate
    from sim.runner.run import run

    names: list[tuple] = []
    real = real_stream

    def recording(seed, *name):
        names.append(name)
        return real(seed, *name)

    mp = pytest.MonkeyPatch()
    for mod in list(sys.modules.values()):
        if (getattr(mod, "__name__", "") or "").startswith("sim."):
            for attr, value in list(vars(mod).items()):
                if value is real:
                    mp.setattr(mod, attr, recording)
    try:
        for scenario in (None, WORKLOADS / "indexer.toml"):
            cache = ["sources[0].cache={svc_call=0.2}"] if scenario is None else []
            loaded = load(scenario, ["duration=60", *cache])
            run(replace(loaded, tiers=loaded.tiers[-1:]))
        run(validate(_websocket_scenario(), "websockets"))
        run(validate(_replay_scenario(tmp_path_factory.mktemp("replay")), "replay"))
    finally:
        mp.undo()
    return names


def test_every_name_drawn_is_declared_once(drawn):
    assert len(drawn) > 20
    for name in set(drawn):
        hits = [p for p in RANDOM_STREAMS if matches(p, name)]
        assert len(hits) == 1, (name, hits)


def test_every_declared_model_stream_is_drawn(drawn):
    """The live emulator's own paths (under ``Rng.LIVE``) are drawn only by a live run."""
    seen = {p for name in drawn for p in RANDOM_STREAMS if matches(p, name)}
    model = {p for p in RANDOM_STREAMS if p[0] is not Rng.LIVE}
    assert model - seen == set()
