"""Calibrating a simulator to logs (Act-FIGNet paper App. V-D): ``calibrate(logs, world) -> world``.

* :mod:`~contactkit.calibration.space`: the parameters, their physical bounds, the unit-cube map;
* :mod:`~contactkit.calibration.objective`: replay errors of a world on free-space and contact segments;
* :mod:`~contactkit.calibration.search`: the two stages, each a coarse search then a local optimiser.
"""

from contactkit.calibration.objective import FitError, Segments, fit_error
from contactkit.calibration.search import CalibrationBudget, CalibrationResult, calibrate
from contactkit.calibration.space import PAPER_CONTACT, PAPER_FREE, PARAMS, ParamSet, from_unit, param_names, to_unit

__all__ = [
    "PAPER_CONTACT",
    "PAPER_FREE",
    "PARAMS",
    "CalibrationBudget",
    "CalibrationResult",
    "FitError",
    "ParamSet",
    "Segments",
    "calibrate",
    "fit_error",
    "from_unit",
    "param_names",
    "to_unit",
]
