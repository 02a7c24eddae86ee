"""The gate's figures print their ± half-widths without exponent notation (a CU per day
half-width of 1.2 million printed ``± 1.2e+06``)."""

from sim.regression.baseline import Figure
from sim.regression.compare import _fmt_figure
from sim.results.catalogue import METRICS

BY_NAME = {m.name: m for m in METRICS}


def _plain_metric():
    return next(m for m in METRICS if m.unit not in ("rate", "s", "h", "USD")
                and m.name != "meets_slo")


def test_a_million_wide_half_width_is_written_out_with_separators():
    text = _fmt_figure(Figure(mean=37_333_700.0, half_width=1_234_567.0, n=3), _plain_metric())
    # two significant figures of 1,234,567 are 1,200,000
    assert text == "37,333,700 ± 1,200,000"
    assert "e+" not in text


def test_a_tiny_half_width_is_written_out_in_decimals():
    text = _fmt_figure(Figure(mean=0.5, half_width=0.0000123, n=3), _plain_metric())
    assert text.endswith("± 0.000012") and "e-" not in text
