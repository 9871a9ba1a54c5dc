"""The contact set the collision layer hands to every solver: ``K`` point contacts, world frame.

:class:`Contacts` is the shared vocabulary between collision detection (:mod:`contactkit.collision`) and the
contact problem (:mod:`contactkit.engine.reference.problem`; the engine kernels hold the same columns in their
contact rows, :mod:`contactkit.engine.layout`): points, normals from the environment into the tool, signed
distances and friction. :func:`contact_frames` builds the right-handed ``[n; t1; t2]`` frames all solvers share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError

NORMAL_UNIT_TOL = 1e-6
"""Largest accepted deviation of ``|n|`` from 1 for a contact normal."""

TANGENT_PARALLEL_TOL = 1e-6
"""Smallest accepted ``|t - (t·n)n|`` for a user-supplied tangent of unit length."""


def finite_array(name: str, value, shape: tuple) -> np.ndarray:
    """``value`` as a read-only float64 array of ``shape``; InvalidInputError on a wrong shape or NaN/Inf."""
    arr = np.array(value, dtype=np.float64)
    if arr.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or Inf")
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class Contacts:
    """A set of ``K`` point contacts between the tool and the environment (world frame).

    Attributes:
        points: ``(K, 3)`` contact points [m], world frame.
        normals: ``(K, 3)`` unit normals, world frame, pointing from the environment into the tool.
        distances: ``(K,)`` signed distances [m]; negative is penetration.
        friction: ``(K,)`` friction coefficients ``μ ≥ 0``.
        tangents: ``(K, 3)`` optional first tangent directions (projected onto the tangent plane and
            normalised); ``None`` picks a deterministic basis from the normal (:func:`contact_frames`).

    Raises:
        InvalidInputError: on wrong shapes, NaN/Inf, non-unit normals, negative friction, or a tangent
            parallel to its normal.
    """

    points: np.ndarray
    normals: np.ndarray
    distances: np.ndarray
    friction: np.ndarray
    tangents: np.ndarray | None = None

    def __post_init__(self) -> None:
        points = np.asarray(self.points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3:
            raise InvalidInputError(f"contacts.points must have shape (K, 3), got {points.shape}")
        k = points.shape[0]
        object.__setattr__(self, "points", finite_array("contacts.points", points, (k, 3)))
        normals = finite_array("contacts.normals", self.normals, (k, 3))
        norms = np.linalg.norm(normals, axis=1)
        if k and np.any(np.abs(norms - 1.0) > NORMAL_UNIT_TOL):
            raise InvalidInputError(
                f"contacts.normals must be unit vectors (|n| in {norms.min():.6g}..{norms.max():.6g})"
            )
        object.__setattr__(self, "normals", normals)
        object.__setattr__(self, "distances", finite_array("contacts.distances", self.distances, (k,)))
        mu = finite_array("contacts.friction", self.friction, (k,))
        if np.any(mu < 0.0):
            raise InvalidInputError("contacts.friction must be >= 0")
        object.__setattr__(self, "friction", mu)
        if self.tangents is not None:
            object.__setattr__(self, "tangents", finite_array("contacts.tangents", self.tangents, (k, 3)))
            contact_frames(normals, self.tangents)  # checks that no tangent is parallel to its normal

    @property
    def count(self) -> int:
        """Number of contacts ``K``."""
        return int(self.points.shape[0])

    def permuted(self, order: np.ndarray) -> Contacts:
        """The same contacts in the order ``order`` ``(K,)`` (a permutation of ``range(K)``)."""
        order = np.asarray(order, dtype=np.int64)
        if sorted(order.tolist()) != list(range(self.count)):
            raise InvalidInputError(f"order must be a permutation of range({self.count})")
        tangents = None if self.tangents is None else self.tangents[order]
        return Contacts(self.points[order], self.normals[order], self.distances[order], self.friction[order], tangents)



def contact_frames(normals: np.ndarray, tangents: np.ndarray | None = None) -> np.ndarray:
    """Right-handed contact frames ``(K, 3, 3)`` with rows ``[n; t1; t2]``, ``t2 = n × t1`` (world).

    Without ``tangents`` the basis of Duff et al. (2017, branchless ONB) is used: deterministic and
    continuous in ``n`` except at ``n_z = -1``. With ``tangents`` ``(K, 3)``, ``t1`` is the normalised
    projection of each onto the tangent plane, so a rotated problem can carry rotated frames.
    """
    n = np.asarray(normals, dtype=np.float64)
    if tangents is None:
        sign = np.where(n[:, 2] >= 0.0, 1.0, -1.0)
        a = -1.0 / (sign + n[:, 2])
        bxy = n[:, 0] * n[:, 1] * a
        t1 = np.stack([1.0 + sign * n[:, 0] ** 2 * a, sign * bxy, -sign * n[:, 0]], axis=1)
    else:
        t = np.asarray(tangents, dtype=np.float64)
        t1 = t - np.sum(t * n, axis=1, keepdims=True) * n
        length = np.linalg.norm(t1, axis=1, keepdims=True)
        if np.any(length < TANGENT_PARALLEL_TOL * np.linalg.norm(t, axis=1, keepdims=True)) or np.any(length == 0):
            raise InvalidInputError("a contact tangent is parallel to its normal")
        t1 = t1 / length
    t2 = np.cross(n, t1)
    return np.stack([n, t1, t2], axis=1)
