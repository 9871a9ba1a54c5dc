"""Rigid-body state of the tool, batch dimensions first.

Frames and units follow docs/architecture.md: world frame with z up, metres, seconds, radians; quaternions are
``(w, x, y, z)`` with unit norm; ``lin_vel`` is the velocity of the body origin in the world frame and
``ang_vel`` the angular velocity expressed in the world frame.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError

QUAT_NORM_TOL = 1e-6
"""Largest accepted deviation of ``|quat|`` from 1 before a state is refused."""

STATE_DIM = 13
"""Length of the flat state vector ``[pos(3), quat(4), lin_vel(3), ang_vel(3)]``."""


@dataclass(frozen=True)
class BodyState:
    """State of one rigid body, or a batch of them.

    Attributes:
        pos: ``(*B, 3)`` position of the body frame origin in the world frame [m].
        quat: ``(*B, 4)`` orientation of the body frame, ``(w, x, y, z)``, unit norm.
        lin_vel: ``(*B, 3)`` linear velocity of the body origin, world frame [m/s].
        ang_vel: ``(*B, 3)`` angular velocity, world frame [rad/s].
    """

    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading batch shape ``B`` shared by all fields."""
        return tuple(np.shape(self.pos)[:-1])

    def as_array(self) -> np.ndarray:
        """Flatten to ``(*B, 13)``: ``[pos, quat, lin_vel, ang_vel]``."""
        return np.concatenate([self.pos, self.quat, self.lin_vel, self.ang_vel], axis=-1)

    @staticmethod
    def from_array(x: np.ndarray) -> BodyState:
        """Inverse of :meth:`as_array`; ``x`` has shape ``(*B, 13)``."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1] != STATE_DIM:
            raise InvalidInputError(f"state array must end in {STATE_DIM} values, got shape {x.shape}")
        return BodyState(x[..., 0:3], x[..., 3:7], x[..., 7:10], x[..., 10:13])

    @staticmethod
    def at_rest(pos, quat=(1.0, 0.0, 0.0, 0.0)) -> BodyState:
        """A single body at ``pos`` (3,) [m] with orientation ``quat`` (4,) and zero velocity."""
        pos = np.asarray(pos, dtype=np.float64)
        quat = np.asarray(quat, dtype=np.float64)
        return BodyState(pos, quat, np.zeros_like(pos), np.zeros_like(pos))

    def index(self, idx) -> BodyState:
        """Select along the leading batch dimensions with numpy indexing ``idx``."""
        return BodyState(self.pos[idx], self.quat[idx], self.lin_vel[idx], self.ang_vel[idx])

    def replace(self, **changes) -> BodyState:
        """A copy with the given fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def validated(self, name: str = "state") -> BodyState:
        """Return ``self`` after checking shapes, finiteness and unit quaternions.

        Raises:
            InvalidInputError: naming the offending field.
        """
        shapes = {"pos": 3, "quat": 4, "lin_vel": 3, "ang_vel": 3}
        batch = None
        for field, width in shapes.items():
            value = np.asarray(getattr(self, field))
            if value.ndim < 1 or value.shape[-1] != width:
                raise InvalidInputError(f"{name}.{field} must have shape (*B, {width}), got {value.shape}")
            if batch is None:
                batch = value.shape[:-1]
            elif value.shape[:-1] != batch:
                raise InvalidInputError(f"{name}.{field} batch shape {value.shape[:-1]} differs from {batch}")
            if not np.all(np.isfinite(value)):
                raise InvalidInputError(f"{name}.{field} contains NaN or Inf")
        norms = np.linalg.norm(self.quat, axis=-1)
        if np.any(np.abs(norms - 1.0) > QUAT_NORM_TOL):
            raise InvalidInputError(
                f"{name}.quat is not unit norm (|q| ranges {norms.min():.6g}..{norms.max():.6g})"
            )
        return self


def stack_states(states: list[BodyState], axis: int = 0) -> BodyState:
    """Stack states with equal batch shapes along a new ``axis`` (e.g. a time axis)."""
    if not states:
        raise InvalidInputError("stack_states needs at least one state")
    return BodyState(
        np.stack([s.pos for s in states], axis),
        np.stack([s.quat for s in states], axis),
        np.stack([s.lin_vel for s in states], axis),
        np.stack([s.ang_vel for s in states], axis),
    )
