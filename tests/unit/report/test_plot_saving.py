"""A report's PNG is the figure ``savefig`` draws, with the layout run once.

:func:`sim.report.plots._save` lays a figure out itself at the PNG's dpi and saves it
without its layout engine (``savefig`` would draw it a second time to lay it out). The
bytes must be those of a plain ``fig.savefig(path, dpi=plots.DPI)``; laying out at the
figure's own dpi (100) instead of the PNG's moves the panels and fails this test.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from sim.report import plots


def _figure():
    """A grid figure like the report's: shared x, titles, tick labels, one legend below."""
    fig, axes = plots._grid(5)
    x = np.linspace(0.0, 60.0, 300)
    for i, ax in enumerate(axes):
        ax.plot(x, (i + 1) * 1000.0 * np.sin(x / (i + 3)) ** 2, label=f"series {i % 3}")
        ax.set_title(f"panel {i}: a title long enough to matter", fontsize=9)
        ax.set_ylabel("CU / 12 s", fontsize=8)
    fig.suptitle("A suptitle over every panel", fontsize=10)
    plots.figure_legend(fig, axes)
    return fig


def test_saved_png_is_the_bytes_savefig_draws(tmp_path):
    fig = _figure()
    fig.savefig(tmp_path / "plain.png", dpi=plots.DPI, metadata=plots._PNG_META)
    plt.close(fig)
    plots._save(_figure(), tmp_path / "saved.png")
    assert (tmp_path / "saved.png").read_bytes() == (tmp_path / "plain.png").read_bytes()


def test_a_figure_without_a_layout_engine_is_saved_as_it_is(tmp_path):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [3, 1, 2])
    fig.tight_layout()
    fig.savefig(tmp_path / "plain.png", dpi=plots.DPI, metadata=plots._PNG_META)
    plots._save(fig, tmp_path / "saved.png")
    assert (tmp_path / "saved.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
