"""Typed reading of user-given numbers: a value of the wrong type is refused naming its field, never converted
(JSON ``"0.1"`` is text, not a number; ``true`` is not 1). Shared by the scene and its controller."""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError


def numbers(x, what: str) -> np.ndarray:
    """``x`` as a float64 array, refusing text, booleans and objects by name (``what``)."""
    raw = np.asarray(x)
    if raw.dtype.kind not in "iuf":
        raise InvalidInputError(f"{what} must be numbers, got {str(x)[:200]} ({type(x).__name__})")
    return raw.astype(np.float64)


def real(x, what: str) -> float:
    """``x`` as a float when it is a real number (an int or a float, not a bool or a string); else an
    InvalidInputError naming ``what``."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise InvalidInputError(f"{what} must be a number, got {x!r} ({type(x).__name__})")
    return float(x)


def vector(x, n: int, what: str) -> np.ndarray:
    """``x`` as a finite float64 ``(n,)`` array; else an InvalidInputError naming ``what``."""
    a = numbers(x, what).reshape(-1)
    if a.shape != (n,):
        raise InvalidInputError(f"{what} must have {n} values, got shape {np.shape(x)}")
    if not np.all(np.isfinite(a)):
        raise InvalidInputError(f"{what} contains NaN or Inf: {a.tolist()}")
    return a
