"""Calibration: replay recorded traffic as it happened, compare with what the service
answered, estimate the window phase and fit the prices the spec does not show.

``predict_as_recorded(trace, tier, pricing, limiter_settings)`` is the shared replay
(the live emulator's comparison calls it too); :func:`calibrate` does the rest.
"""

from .calibrate import FITS, Calibration, PriceFit, calibrate
from .predict import predict_as_recorded
from .recorded import CLASSES, outcome_class
from .replay import Prediction

__all__ = ["CLASSES", "FITS", "Calibration", "Prediction", "PriceFit", "calibrate",
           "outcome_class", "predict_as_recorded"]
