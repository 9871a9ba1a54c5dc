"""Signed quantities in words, as a person reads them: "sank 0.22 mm into the slot floor", not "−0.22 mm above".

The sign goes into the words (above / sank into, toward +x / toward −x, taller / shorter), the number shown is
always a magnitude. Values within half of the last shown digit of zero read as zero ("on the slot floor").
"""

from __future__ import annotations

import math

from contactkit.errors import InvalidInputError

M_TO_MM = 1e3
"""Metres to millimetres."""
MM_DIGITS = 2
"""Decimals of the millimetres shown by :func:`height_phrase`."""
MM_ZERO = 0.5 * 10.0 ** -MM_DIGITS
"""|height| [mm] below which :func:`height_phrase` says the point rests on the surface (it would print 0.00)."""


def _finite(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    return value


def height_phrase(height_m: float, surface: str) -> str:
    """A point's height over a surface in words.

    Args:
        height_m: signed height of the point over ``surface`` along world z [m]; negative: below it (penetration).
        surface: what the height is measured from, e.g. ``"the slot floor"``.

    Returns:
        ``"3.10 mm above the slot floor"``, ``"sank 0.22 mm into the slot floor"`` or ``"on the slot floor"``
        (millimetres with :data:`MM_DIGITS` decimals).
    """
    mm = _finite(height_m, "height_m") * M_TO_MM
    if abs(mm) < MM_ZERO:
        return f"on {surface}"
    if mm > 0:
        return f"{mm:.{MM_DIGITS}f} mm above {surface}"
    return f"sank {-mm:.{MM_DIGITS}f} mm into {surface}"


def signed_phrase(value: float, unit: str, positive: str, negative: str, digits: int = 1) -> str:
    """A signed amount as its magnitude and the word of its sign.

    Args:
        value: the signed amount, in ``unit``.
        unit: unit written after the number (``"mm"``, ``"deg"``).
        positive, negative: words for a positive and a negative value (e.g. ``"toward +x"``, ``"toward −x"``;
            ``"taller"``, ``"shorter"``).
        digits: decimals shown.

    Returns:
        ``"1.2 mm toward −x"``; a value that rounds to zero reads ``"0.0 mm"`` with no direction.
    """
    value = _finite(value, "value")
    if abs(value) < 0.5 * 10.0 ** -digits:
        return f"{0.0:.{digits}f} {unit}"
    return f"{abs(value):.{digits}f} {unit} {positive if value > 0 else negative}"
