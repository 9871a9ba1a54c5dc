"""Peg-insertion reward and success metrics (Act-FIGNet paper §IV-A.c, eq 9).

``r_t = 10 · 1[‖Δp_t‖ ≤ ε] + exp(−‖Δp_t‖) + exp(−‖Δθ_t‖)`` with ``Δp_t`` the distance [m] from the tool
tip (the tool origin) to the slot bottom centre (``scene.target_pos``), ``Δθ_t`` the geodesic angle [rad]
between the tool orientation and ``scene.target_quat``, and ``ε = 2 mm``. A trial succeeds when
``‖Δp‖ ≤ ε``; it reached *halfway* when the tip went at least half the hole depth below the slot's top
face while inside the hole's footprint (the shaded bars of Fig. 4a).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_angle_between
from contactkit.scene import Scene

__all__ = [
    "goal_reward",
    "HALFWAY_FRACTION",
    "SUCCESS_BONUS",
    "SUCCESS_RADIUS_M",
    "InsertionGoal",
    "insertion_reward",
    "is_halfway",
    "is_success",
    "position_error",
    "rotation_error",
]

SUCCESS_RADIUS_M = 2e-3
"""ε of eq 9: a trial succeeds when the tool tip is within 2 mm of the slot bottom centre."""
SUCCESS_BONUS = 10.0
"""Reward added while the tip is within ε (eq 9)."""
HALFWAY_FRACTION = 0.5
"""Fraction of the hole depth the tip must pass below the slot top to count as "inserted halfway"."""


@dataclass(frozen=True, eq=False)
class InsertionGoal:
    """Where the peg must go, read from a peg-in-hole scene.

    Attributes:
        target_pos: ``(3,)`` slot bottom centre [m, world], where the tool tip ends when inserted.
        target_quat: ``(4,)`` goal orientation (w, x, y, z).
        slot_top_z: height of the slot's top face [m].
        depth: hole depth [m].
        hole_apothem: inradius of the hole [m] (its footprint for the halfway test).
        success_radius: ε [m].
    """

    target_pos: np.ndarray
    target_quat: np.ndarray
    slot_top_z: float
    depth: float
    hole_apothem: float
    success_radius: float = SUCCESS_RADIUS_M

    @staticmethod
    def from_scene(scene: Scene, success_radius: float = SUCCESS_RADIUS_M) -> InsertionGoal:
        """The goal of a scene built by :func:`contactkit.tasks.scenes.peg_in_hole`.

        Raises:
            InvalidInputError: when ``scene.meta`` lacks the slot facts (not a peg-in-hole scene) or
                ``success_radius`` is not positive.
        """
        missing = [k for k in ("slot_top_z", "depth", "hole_apothem") if k not in scene.meta]
        if missing:
            raise InvalidInputError(f"scene {scene.name!r} is not a peg-in-hole scene: meta lacks {missing}")
        if not (np.isfinite(success_radius) and success_radius > 0.0):
            raise InvalidInputError(f"success_radius must be a positive length [m], got {success_radius}")
        return InsertionGoal(
            np.array(scene.target_pos, dtype=np.float64),
            np.array(scene.target_quat, dtype=np.float64),
            float(scene.meta["slot_top_z"]),
            float(scene.meta["depth"]),
            float(scene.meta["hole_apothem"]),
            float(success_radius),
        )


def position_error(pos: np.ndarray, goal: InsertionGoal) -> np.ndarray:
    """``‖Δp‖`` ``(*B,)`` [m]: distance of tool tips ``pos`` ``(*B, 3)`` [m, world] from the slot bottom centre."""
    pos = np.asarray(pos, dtype=np.float64)
    if pos.shape[-1:] != (3,):
        raise InvalidInputError(f"positions must have shape (*B, 3), got {pos.shape}")
    return np.linalg.norm(pos - goal.target_pos, axis=-1)


def rotation_error(quat: np.ndarray, goal: InsertionGoal) -> np.ndarray:
    """``‖Δθ‖`` ``(*B,)`` [rad]: geodesic angle in ``[0, π]`` between ``quat`` ``(*B, 4)`` and the goal orientation."""
    quat = np.asarray(quat, dtype=np.float64)
    if quat.shape[-1:] != (4,):
        raise InvalidInputError(f"quaternions must have shape (*B, 4), got {quat.shape}")
    return quat_angle_between(quat, goal.target_quat)


def insertion_reward(pos: np.ndarray, quat: np.ndarray, goal: InsertionGoal) -> np.ndarray:
    """Eq 9 of act-fignet: ``10 · 1[‖Δp‖ ≤ ε] + exp(−‖Δp‖) + exp(−‖Δθ‖)``.

    Args:
        pos: ``(*B, 3)`` tool-tip positions [m, world].
        quat: ``(*B, 4)`` tool orientations (w, x, y, z).
        goal: target and ε.

    Returns:
        ``(*B,)`` rewards; in ``(0, 12]``, 12 exactly at the goal pose.
    """
    dp = position_error(pos, goal)
    dtheta = rotation_error(quat, goal)
    return SUCCESS_BONUS * (dp <= goal.success_radius) + np.exp(-dp) + np.exp(-dtheta)


def is_success(pos: np.ndarray, goal: InsertionGoal) -> np.ndarray:
    """``(*B,)`` bool: the tool tip ``pos`` ``(*B, 3)`` [m] lies within ε of the slot bottom centre."""
    return position_error(pos, goal) <= goal.success_radius


def is_halfway(pos: np.ndarray, goal: InsertionGoal) -> np.ndarray:
    """``(*B,)`` bool: the tip is at least half the depth into the hole, inside its footprint.

    The tip ``pos`` ``(*B, 3)`` [m] must lie below ``slot_top_z − HALFWAY_FRACTION · depth`` and within
    ``hole_apothem`` of the hole axis horizontally (a tip beside the slot body, lower than its top, does
    not count).
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.shape[-1:] != (3,):
        raise InvalidInputError(f"positions must have shape (*B, 3), got {pos.shape}")
    below = pos[..., 2] <= goal.slot_top_z - HALFWAY_FRACTION * goal.depth
    inside = np.linalg.norm(pos[..., :2] - goal.target_pos[:2], axis=-1) <= goal.hole_apothem
    return below & inside


def goal_reward(scene: Scene):
    """Per-step reward of eq 9 (Act-FIGNet paper) towards ``scene``'s slot bottom, for the iCEM planner.

    Returns:
        ``reward(states) -> (*B,)``: :func:`insertion_reward` of ``states.pos (*B, 3)`` [m] and
        ``states.quat (*B, 4)`` (world frame) against :meth:`InsertionGoal.from_scene`.
    """
    goal = InsertionGoal.from_scene(scene)
    return lambda states: insertion_reward(states.pos, states.quat, goal)
