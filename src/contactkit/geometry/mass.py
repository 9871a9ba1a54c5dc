"""Mass, centre of mass and inertia of a part of uniform density, from its closed surface mesh.

Each outward triangle ``(a, b, c)`` (relative to a reference point ``r``) spans a signed tetrahedron with
``r``; with ``d = a . (b x c)`` (six times its signed volume) the divergence theorem gives

    V = sum d / 6,     m1 = sum d (a + b + c) / 24,
    C = integral of x x^T dV = sum d (a a^T + b b^T + c c^T + s s^T) / 120,   s = a + b + c,

the standard moments of a tetrahedron with one corner at ``r``. Then ``com = r + m1 / V``,
``C_com = C - V c c^T`` (``c = m1 / V``) and the inertia about the centre of mass is
``I = rho (tr(C_com) 1 - C_com)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry.part import Part
from contactkit.geometry.validate import check_solid

INERTIA_SYMMETRY_RTOL = 1e-9
"""Largest accepted asymmetry of an inertia matrix, relative to its largest entry."""

INERTIA_TRIANGLE_RTOL = 1e-9
"""Slack of the triangle inequality ``I1 + I2 >= I3`` on principal moments, relative to their trace."""


@dataclass(frozen=True)
class MassProperties:
    """Rigid-body mass properties in the part frame.

    Attributes:
        mass: [kg], finite and > 0.
        com: ``(3,)`` centre of mass, part frame [m].
        inertia: ``(3, 3)`` inertia tensor about ``com``, axes of the part frame [kg m^2]; symmetric
            positive definite, principal moments obeying the triangle inequality.
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray

    def __post_init__(self):
        m = float(self.mass)
        com = np.array(self.com, dtype=np.float64)
        inertia = np.array(self.inertia, dtype=np.float64)
        if not math.isfinite(m) or m <= 0.0:
            raise InvalidInputError(f"mass must be finite and > 0 kg, got {self.mass!r}")
        if com.shape != (3,) or not np.isfinite(com).all():
            raise InvalidInputError(f"com must be 3 finite numbers [m], got {self.com!r}")
        if inertia.shape != (3, 3) or not np.isfinite(inertia).all():
            raise InvalidInputError(f"inertia must be a finite (3, 3) matrix [kg m^2], got {inertia.shape}")
        scale = np.abs(inertia).max()
        if np.abs(inertia - inertia.T).max() > INERTIA_SYMMETRY_RTOL * scale:
            raise InvalidInputError("inertia must be symmetric")
        moments = np.linalg.eigvalsh(inertia)
        if moments[0] <= 0.0:
            raise InvalidInputError(f"inertia not positive definite: principal moments {moments.tolist()}")
        if moments[0] + moments[1] < moments[2] - INERTIA_TRIANGLE_RTOL * moments.sum():
            raise InvalidInputError(f"principal moments {moments.tolist()} violate the triangle inequality")
        com.flags.writeable = False
        inertia.flags.writeable = False
        object.__setattr__(self, "mass", m)
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "inertia", inertia)

    @property
    def principal_moments(self) -> np.ndarray:
        """``(3,)`` eigenvalues of ``inertia`` in ascending order [kg m^2]."""
        return np.linalg.eigvalsh(self.inertia)


def _moments(v: np.ndarray, f: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Unit-density volume [m^3], centre of mass (3,) [m] and ``C_com`` (3, 3) [m^5] (module docstring)."""
    ref = v.mean(axis=0)
    a, b, c = (v[f[:, k]] - ref for k in range(3))
    d = np.einsum("ij,ij->i", a, np.cross(b, c))
    s = a + b + c
    vol = d.sum() / 6.0
    m1 = (d[:, None] * s).sum(axis=0) / 24.0
    outer = sum(np.einsum("i,ij,ik->jk", d, x, x) for x in (a, b, c, s))
    cm = m1 / vol
    c_com = outer / 120.0 - vol * np.outer(cm, cm)
    return float(vol), ref + cm, 0.5 * (c_com + c_com.T)


def mass_properties(part: Part, *, density: float | None = None, mass: float | None = None) -> MassProperties:
    """Mass properties of ``part`` as a solid of uniform density bounded by its surface mesh.

    Args:
        part: a part whose surface mesh is closed, outward and of positive volume.
        density: [kg/m^3]; or
        mass: total mass [kg] (density = mass / volume). Give exactly one, finite and > 0.

    Returns:
        :class:`MassProperties` in the part frame (inertia about the centre of mass).

    Raises:
        InvalidInputError: neither or both of density and mass, or a non-finite or non-positive one.
        GeometryError: the surface is not watertight, wound inward, of zero volume, or malformed.
    """
    if (density is None) == (mass is None):
        raise InvalidInputError("give exactly one of density [kg/m^3] and mass [kg]")
    label, value = ("density", density) if density is not None else ("mass", mass)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{label} must be a number, got {value!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise InvalidInputError(f"{label} must be finite and > 0, got {value!r}")
    v, f, _ = check_solid(part.vertices, part.faces, f"part {part.name!r}")
    vol, com, c_com = _moments(v, f)
    rho = value if density is not None else value / vol
    inertia = rho * (np.trace(c_com) * np.eye(3) - c_com)
    try:
        return MassProperties(rho * vol, com, inertia)
    except InvalidInputError as e:
        raise GeometryError(f"part {part.name!r}: degenerate mass distribution: {e}") from None
