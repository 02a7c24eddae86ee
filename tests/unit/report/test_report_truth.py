"""The report says what the run did, no more and no less (issue 7, "Reports that tell the truth").

The plots are checked on the matplotlib objects the figure functions return (legend
texts, colours per outcome across panels, axes limits, SLO lines), not on pixels; the
Markdown on its text. Expected values come from the run's own tables read independently
(value counts, window arithmetic), never from the plotting code.
"""

from __future__ import annotations

import re
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.model import recorder as rc
from sim.report import markdown, plots
from sim.results.summary import Recommendation
from sim.runner.run import run

DURATION = 130  # not a multiple of 12 s or 60 s: the run ends inside a window and a minute
TIERS = ("Streams", "RPC", "Streams + RPC", "Professional bundle", "Advanced bundle")


@pytest.fixture(scope="module")
def output():
    loaded = load(None, [f"duration={DURATION}"])
    return run(replace(loaded, tiers=tuple(find_tier(n) for n in TIERS)))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _frac(ax, y: float) -> float:
    """A data y as a fraction of the axes' height."""
    lo, hi = ax.get_ylim()
    return (y - lo) / (hi - lo)


# -- outcomes_over_time.png ---------------------------------------------------------------

def test_every_outcome_has_its_own_colour():
    colours = [to_rgba(plots.OUTCOME_COLOURS[o]) for o in rc.OUTCOMES]
    assert len(set(colours)) == len(rc.OUTCOMES)


def test_an_outcome_has_one_colour_in_every_panel_and_the_legend_lists_all(output):
    a = output.attempts
    fig = plots.outcomes_figure(a, list(TIERS), DURATION)
    seen: dict[str, set] = {}
    for ax in fig.axes:
        for bars in ax.containers:
            seen.setdefault(bars.get_label(), set()).add(bars.patches[0].get_facecolor())
    # Independently: the outcomes that occur in any tier.
    counts = a["outcome"].value_counts()
    occurring = {o for o, n in counts.items() if n > 0}
    assert set(seen) == occurring and len(occurring) >= 4  # ok, -32005, 402, 435, ...
    for outcome, faces in seen.items():
        assert faces == {to_rgba(plots.OUTCOME_COLOURS[outcome])}, outcome
    assert sorted(_legend_texts(fig)) == sorted(occurring)
    legend = fig.legends[0]
    for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
        assert to_rgba(handle.get_facecolor()) == to_rgba(plots.OUTCOME_COLOURS[text.get_text()])


def test_the_last_short_minute_is_a_rate_not_a_dip():
    # 2 attempts per second, steady, for 130 s: every bar is 120 attempts/min, also
    # the last one, which covers only 10 s (20 attempts).
    import pandas as pd
    t = np.arange(0, DURATION, 0.5)
    a = pd.DataFrame({"tier": "X", "t_send_s": t,
                      "outcome": pd.Categorical(["ok"] * len(t), categories=list(rc.OUTCOMES))})
    fig, ax = plt.subplots()
    plots.outcomes_over_time(ax, a, "X", DURATION)
    # The bars are drawn as one collection of rectangles (bottom-left, bottom-right,
    # top-right, top-left, closing vertex): heights from what is drawn.
    (bars,) = ax.collections
    heights = [float(v[2, 1] - v[1, 1]) for v in (p.vertices for p in bars.get_paths())]
    assert heights == pytest.approx([120.0, 120.0, 120.0])


# -- report.md: no Python None ------------------------------------------------------------

def test_report_never_prints_python_none(output):
    md = markdown.render(output.summary, [])
    assert "None" not in md
    streams = output.summary.tier("Streams")
    assert streams.latency_ms.p99 is None  # Streams serves no HTTP request here
    assert any("no successful request" in v for v in streams.slo_violations)
    rows = markdown.tier_table(output.summary.tiers)
    row = next(r for r in rows if r.startswith("| Streams |"))
    assert row.split("|")[9].strip() == "–" and row.split("|")[10].strip() == "–"  # p50, p99


def test_report_without_a_recommendation_says_no_tier(output):
    summary = output.summary.model_copy(update={"recommended": Recommendation(
        tier=None, reason="no simulated tier meets the SLO")})
    md = markdown.render(summary, [])
    assert "None" not in md and "**No tier** — no simulated tier meets the SLO." in md


# -- latency_cdf.png ----------------------------------------------------------------------

def test_tiers_with_identical_latencies_share_one_legend_entry():
    lat = {"A": np.array([1.0, 2.0, 3.0]), "B": np.array([3.0, 1.0, 2.0]),
           "C": np.array([1.0, 2.0, 4.0]), "D": np.array([])}
    groups = plots.identical_groups(lat)
    assert [g for g, _ in groups] == [["A", "B"], ["C"], ["D"]]


def test_latency_cdf_shows_every_tier_once_and_the_p99_slo(output):
    lat = output.latencies
    slo = output.summary.slo.p99_latency_ms
    fig = plots.latency_figure(lat, slo)
    texts = _legend_texts(fig)
    # Independently: the Professional and Advanced bundles never throttle here, so they
    # see the same demand and the same latencies; Streams serves no HTTP request.
    assert np.array_equal(np.sort(lat["Professional bundle"]), np.sort(lat["Advanced bundle"]))
    assert "Professional bundle, Advanced bundle (identical)" in texts
    assert "Streams: no successful request" in texts
    named = [n for t in texts if not t.startswith("p99 SLO")
             for n in t.removesuffix(" (identical)").split(":")[0].split(", ")]
    assert sorted(named) == sorted(TIERS)  # every tier exactly once
    distinct = len({np.sort(v).tobytes() for v in lat.values() if len(v)})
    for ax in fig.axes:
        curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1
                  and not ln.get_label().startswith("_")]
        assert len(curves) == distinct
        marks = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [slo]
                 and list(ln.get_ydata()) == [0.99]]
        assert len(marks) == 1 and "2,000 ms" in marks[0].get_label()
    assert any(t.startswith("p99 SLO") for t in texts)


# -- tier_comparison.png ------------------------------------------------------------------

def _bar_colours(ax) -> list:
    return [p.get_facecolor() for p in ax.patches if p.get_width() == pytest.approx(0.6)]


def test_comparison_draws_every_slo_and_price_and_the_recommendation(output):
    s = output.summary
    slo, tiers, rec = s.slo, s.tiers, s.recommended.tier
    assert rec == "Professional bundle"
    fig = plots.comparison_figure(tiers, slo, rec)
    axes = fig.axes
    # The fourth panel: the hours the daily allowance lasts, against a day.
    limits = (slo.max_throttle_rate, slo.max_failure_rate, slo.p99_latency_ms, 24.0)
    assert slo.allowance_must_last_day  # so the allowance panel is an SLO criterion too
    for ax, limit in zip(axes, limits, strict=True):
        hlines = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [limit, limit]]
        assert len(hlines) == 1, limit
    labels = [t.get_text() for t in axes[-1].get_xticklabels()]
    by_price = sorted(tiers, key=lambda t: (t.monthly_usd, t.cu_per_window))
    for label, t in zip(labels, by_price, strict=True):
        assert label.replace("\n", " ").startswith(t.tier)
        assert f"${t.monthly_usd:,.0f}/mo" in label
        assert ("recommended" in label) == (t.tier == rec)
    # Read the recommendation off the plot: the leftmost tier whose four bars are green.
    green = to_rgba("tab:green")
    colours = [_bar_colours(ax) for ax in axes]
    all_green = [all(c[i] == green for c in colours) for i in range(len(tiers))]
    assert by_price[all_green.index(True)].tier == rec
    # Each bar's colour agrees with the tier's own SLO verdict, criterion by criterion.
    for i, t in enumerate(by_price):
        assert all_green[i] == t.meets_slo, t.tier


# -- websocket_slots.png ------------------------------------------------------------------

def test_websocket_plot_skips_tiers_without_slots_and_names_every_mark(output):
    s = output.summary
    fig = plots.websocket_figure(output.slots, output.attempts, s.tiers, DURATION)
    drawn = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    with_ws = [t.tier for t in s.tiers if t.ws_cap]
    assert drawn == with_ws and "RPC" not in drawn
    assert "RPC" in fig._suptitle.get_text()  # named as not drawn
    for ax in fig.axes:
        if ax.get_visible():
            lo, hi = ax.get_ylim()
            assert lo == 0 and hi > 1
    refused = set(output.attempts.loc[output.attempts["outcome"].isin(["435", "ws_cu_rejected"]),
                                      "outcome"].astype(str))
    assert refused == {"435", "ws_cu_rejected"}  # this run has both kinds
    texts = _legend_texts(fig)
    for outcome in refused:
        assert f"handshake refused: {outcome}" in texts


# -- cu_per_window.png --------------------------------------------------------------------

def test_throttle_marks_sit_above_the_data_and_the_partial_window_is_not_drawn(output):
    w = output.windows
    fig, ax = plt.subplots()
    plots.cu_per_window(ax, w, "RPC", DURATION)
    rpc = w[w["tier"] == "RPC"]
    assert (rpc["throttled"] > 0).sum() > 5  # saturated: most windows throttle
    marks = [c for c in ax.collections if c.get_label() == "window with throttles"]
    assert len(marks) == 1
    lowest_mark = min(min(seg[:, 1]) for seg in marks[0].get_segments())  # axes fraction
    steps = [p for p in ax.patches if p.get_label() in ("reserved", "settled")]
    assert len(steps) == 2
    for p in steps:
        values, edges = p.get_data().values, p.get_data().edges
        assert _frac(ax, float(values.max())) < lowest_mark
        # 130 s hold 10 whole 12-s windows (0..120 s); the window from 120 s is cut by
        # the end of the run and the ones after it only drain: none is drawn.
        assert len(values) == DURATION // 12 and edges[-1] == pytest.approx(120 / 60)
    assert _frac(ax, float(rpc["limit_cu"].iloc[0])) < lowest_mark


# -- report.md tables ---------------------------------------------------------------------

def _table(md: str, heading: str) -> list[list[str]]:
    block = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in block.splitlines() if r.startswith("|") and not r.startswith("|---")]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows]


def _num(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_cost_table_says_which_cu_each_column_holds_and_adds_up(output):
    md = markdown.render(output.summary, [])
    head, *rows = _table(md, "Cost and allowance")
    col = {name: i for i, name in enumerate(head)}
    assert "CU reserved (requests + handshakes)" in col and "CU publish (stream events)" in col
    assert "CU charged (settled + publish)" in col and "publish" in md.split("## Cost")[1]
    by_tier = {t.tier: t for t in output.summary.tiers}
    published_somewhere = False
    for r in rows:
        t = by_tier[r[0]]
        publish = _num(r[col["CU publish (stream events)"]])
        published_somewhere |= publish > 0
        assert publish == pytest.approx(t.websockets.cu_publish if t.websockets else 0,
                                        abs=0.5)
        charged = _num(r[col["CU charged (settled + publish)"]])
        # The run lies within one UTC day, and the daily allowance counts every CU
        # billed: the busiest day's use is everything charged.
        assert charged == pytest.approx(_num(r[col["used (max day)"]]), abs=1)
    assert published_somewhere


def test_http2_table_is_shown_once_when_every_tier_shows_the_same(output):
    first = output.summary.tiers[0].connections

    def with_connections(second):
        tiers = [t.model_copy(update={"connections": second if i == 1 else first})
                 for i, t in enumerate(output.summary.tiers)]
        return output.summary.model_copy(update={"tiers": tuple(tiers)})

    # A difference below the table's precision (2 decimals) is not a difference.
    wait = first.stream_wait_ms
    nearly = first.model_copy(update={"stream_wait_ms": wait.model_copy(
        update={"mean": wait.mean + 0.001})})
    head, *rows = _table(markdown.render(with_connections(nearly), []), "HTTP/2 connections")
    assert len(rows) == 1 and rows[0][0] == f"all {len(TIERS)} tiers (identical)"
    assert len(rows[0]) == len(head)
    more = first.model_copy(update={"opened": first.opened + 1})
    head, *rows = _table(markdown.render(with_connections(more), []), "HTTP/2 connections")
    assert [r[0] for r in rows] == list(TIERS)


# -- byte-stable files --------------------------------------------------------------------

def test_plots_are_byte_stable(output, tmp_path):
    o = output
    written = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        written[name] = plots.write_all(tmp_path / name, o.summary, o.attempts, o.windows,
                                        o.latencies, o.slots)
    assert written["a"] == written["b"] and len(written["a"]) == 5
    for png in written["a"]:
        data = (tmp_path / "a" / png).read_bytes()
        assert data == (tmp_path / "b" / png).read_bytes(), png
        assert not re.search(rb"[Mm]atplotlib", data)  # no software/version metadata


# -- the reports read the typed summary ----------------------------------------------------

def test_the_report_reads_attributes_not_json_keys(output, tmp_path):
    """The summary models have no key access, and the whole report renders: every reader
    goes through the typed fields, so a renamed field fails at the attribute, not as a
    blank."""
    from sim.report import writer

    with pytest.raises(TypeError, match="not subscriptable"):
        output.summary["tiers"]  # noqa: B018 - no key access to switch on
    with pytest.raises(TypeError, match="not subscriptable"):
        output.summary.tiers[0]["cu"]  # noqa: B018 - nor on a tier
    out = tmp_path / "rep"
    out.mkdir()
    writer._write_into(output, out)
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# capsim report")
    assert markdown.tier_table(output.summary.tiers)


# -- drawing many bars and steps cheaply draws what matplotlib's own calls draw ----------

def _pixels_and_limits(draw) -> tuple[bytes, tuple, tuple]:
    fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
    draw(ax)
    fig.canvas.draw()
    return bytes(fig.canvas.buffer_rgba()), ax.get_xlim(), ax.get_ylim()


def test_bars_as_one_collection_draw_what_ax_bar_draws():
    rng = np.random.default_rng(7)
    left = np.arange(50) * 0.9
    width = np.full(50, 0.9)
    width[-1] = 0.4  # a shorter last bin
    low = rng.integers(0, 5, 50).astype(float)
    high = rng.integers(0, 9, 50).astype(float)
    high[10:20] = 0.0  # empty bins: zero-height bars

    def with_bar(ax):
        ax.bar(left, low, width=width, align="edge", lw=0, color="tab:green", label="ok")
        ax.bar(left, high, width=width, bottom=low, align="edge", lw=0, color="tab:red",
               label="434")
        ax.legend()

    def with_bars(ax):
        plots._bars(ax, left, width, np.zeros(50), low, "ok", "tab:green")
        plots._bars(ax, left, width, low.copy(), high, "434", "tab:red")
        ax.legend()

    assert _pixels_and_limits(with_bars) == _pixels_and_limits(with_bar)


@pytest.mark.parametrize("kind", ["line", "fill", "fill on a baseline"])
def test_stairs_in_one_update_draw_what_ax_stairs_draws(kind):
    rng = np.random.default_rng(11)
    values = rng.uniform(1.0, 9.0, 300)
    edges = np.arange(301) * 0.2
    base = rng.uniform(0.5, 1.5, 300)
    kw = {"line": dict(baseline=None, lw=0.9, color="tab:blue"),
          "fill": dict(fill=True, color="tab:green", alpha=0.6, lw=0),
          "fill on a baseline": dict(baseline=base, fill=True, color="tab:gray", alpha=0.6,
                                     lw=0)}[kind]
    v = values + base if kind == "fill on a baseline" else values
    assert (_pixels_and_limits(lambda ax: plots._stairs(ax, v, edges, **dict(kw)))
            == _pixels_and_limits(lambda ax: ax.stairs(v, edges, **dict(kw))))
