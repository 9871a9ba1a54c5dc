"""The coordinates a depth network sees (tight-tolerance paper §III-A: d_i(x_i) of a node x_i w.r.t. the
reference part; a part with a symmetry is given to the network in its own coordinates).

A :class:`SymmetryFrame` in the PART frame: ``origin (3,)`` [m], unit ``axis (3,)``, unit ``ref (3,)`` ⊥ axis,
``pitch`` [m] (helical only), ``handedness`` (+1 right-hand, −1 left-hand). With ``z = (p−o)·axis``,
``q = (p−o) − z·axis``, ``r = sqrt(|q|² + R_EPS²)``, ``θ = atan2(q·(axis×ref), q·ref)``:

- ``CARTESIAN``   (3 features): ``p − origin`` — any part (no symmetry used).
- ``CYLINDRICAL`` (2 features): ``(r, z)`` — an axisymmetric part: the peg-in-hole HOLE (and a round peg).
  Its signed distance does not depend on θ, so a 2-D function is learned instead of a 3-D one.
- ``HELICAL``     (4 features): ``(r, cos φ, sin φ, z)``, ``φ = 2π z / pitch − handedness·θ`` — a screw
  thread: the M48 BOLT. A right-hand thread is invariant under ``θ → θ+α, z → z + pitch·α/2π``, which keeps
  ``φ`` (and ``r``); only the thread's ends (chamfer, caps) depend on ``z`` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch

from contactkit.errors import InvalidInputError

R_EPS = 1e-6
"""[m] regularises ``r`` on the axis so that its gradient stays finite (changes r by < 1e-9 m at r > 0.5 mm)."""
UNIT_TOL = 1e-9
"""Tolerance on the unit length of ``axis`` and ``ref`` and on their orthogonality."""


class Coordinates(Enum):
    """Which features a depth network sees (module docstring)."""

    CARTESIAN = "cartesian"
    CYLINDRICAL = "cylindrical"
    HELICAL = "helical"


N_FEATURES = {Coordinates.CARTESIAN: 3, Coordinates.CYLINDRICAL: 2, Coordinates.HELICAL: 4}
"""Feature count ``k`` per coordinate system."""


@dataclass(frozen=True)
class SymmetryFrame:
    """Where a part's symmetry lies, in its part frame (module docstring).

    Attributes:
        coordinates: the feature system.
        origin: ``(3,)`` [m] a point of the axis; axis, ref: ``(3,)`` unit vectors, ``ref ⊥ axis``.
        pitch: thread pitch [m] (> 0 for HELICAL; ignored otherwise).
        handedness: +1 right-hand thread, −1 left-hand.
    """

    coordinates: Coordinates
    origin: np.ndarray
    axis: np.ndarray
    ref: np.ndarray
    pitch: float = 0.0
    handedness: int = 1


def make_frame(coordinates: Coordinates | str, origin=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),
               ref=(1.0, 0.0, 0.0), pitch: float = 0.0, handedness: int = 1) -> SymmetryFrame:
    """A checked :class:`SymmetryFrame` (default: the part frame's origin and z axis, x as reference).

    Raises:
        InvalidInputError: unknown coordinates; non-finite origin; axis/ref not unit or not orthogonal; a
            HELICAL frame without a finite pitch > 0; handedness not ±1.
    """
    try:
        coords = Coordinates(coordinates)
    except ValueError:
        raise InvalidInputError(f"coordinates {coordinates!r}: choose one of "
                                f"{[c.value for c in Coordinates]}") from None
    o, a, r = (np.asarray(v, dtype=np.float64).reshape(-1) for v in (origin, axis, ref))
    if any(v.shape != (3,) or not np.isfinite(v).all() for v in (o, a, r)):
        raise InvalidInputError("origin, axis and ref must be finite 3-vectors")
    if abs(np.linalg.norm(a) - 1) > UNIT_TOL or abs(np.linalg.norm(r) - 1) > UNIT_TOL or abs(a @ r) > UNIT_TOL:
        raise InvalidInputError(f"axis {a.tolist()} and ref {r.tolist()} must be orthogonal unit vectors")
    if coords is Coordinates.HELICAL and not (math.isfinite(pitch) and pitch > 0):
        raise InvalidInputError(f"a helical frame needs a finite pitch > 0 m, got {pitch!r}")
    if handedness not in (1, -1):
        raise InvalidInputError(f"handedness must be +1 (right) or -1 (left), got {handedness!r}")
    return SymmetryFrame(coords, o, a, r, float(pitch), int(handedness))


def features_torch(frame: SymmetryFrame, points: torch.Tensor) -> torch.Tensor:
    """``(N, k)`` features of ``(N, 3)`` part-frame points [m] (module docstring), differentiable, in the
    points' dtype and device."""
    t = dict(dtype=points.dtype, device=points.device)
    d = points - torch.as_tensor(frame.origin, **t)
    if frame.coordinates is Coordinates.CARTESIAN:
        return d
    axis = torch.as_tensor(frame.axis, **t)
    z = d @ axis
    q = d - z[:, None] * axis
    r = torch.sqrt((q * q).sum(dim=1) + R_EPS**2)
    if frame.coordinates is Coordinates.CYLINDRICAL:
        return torch.stack([r, z], dim=1)
    ref = torch.as_tensor(frame.ref, **t)
    side = torch.as_tensor(np.cross(frame.axis, frame.ref), **t)
    theta = torch.atan2(q @ side, q @ ref)
    phi = (2 * math.pi / frame.pitch) * z - frame.handedness * theta
    return torch.stack([r, torch.cos(phi), torch.sin(phi), z], dim=1)


def features_numpy(frame: SymmetryFrame, points: np.ndarray) -> np.ndarray:
    """:func:`features_torch` for a ``(N, 3)`` float64 numpy array; returns ``(N, k)`` float64."""
    with torch.no_grad():
        return features_torch(frame, torch.as_tensor(points, dtype=torch.float64)).numpy()


def frame_points(frame: SymmetryFrame, r: np.ndarray, theta: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``(N, 3)`` part-frame points at cylindrical ``(r, θ, z)`` about the frame's axis (for sampling)."""
    side = np.cross(frame.axis, frame.ref)
    radial = np.cos(theta)[:, None] * frame.ref + np.sin(theta)[:, None] * side
    return frame.origin + r[:, None] * radial + z[:, None] * frame.axis
