"""Tared F/T labels of logged episodes for the graph networks: offsets from geometrically free steps.

A logged reading carries its sensor's bias (the ``target`` world's, a real cell's): a model trained on untared
labels learns that bias as a contact force (a 0.27 N floor in free space). A real sensor is zeroed in free space
(:mod:`contactkit.control.tare`); a log is tared after the fact the same way: each episode's offset is the median
reading over its free-space steps (:func:`~contactkit.control.tare.episode_offsets`, shared with the residual
model's labels), subtracted from every reading of the episode.

Free space is decided without any physics model, by a sufficient geometric condition (world z up, against
gravity): step ``t`` is free when the lowest tool mesh vertex, at the recorded poses ``s_t`` and ``s_{t+1}``, is
more than :data:`FREE_SPACE_MARGIN_M` above the highest vertex of all static geometry. Nothing can touch the tool
there; steps near the geometry but not touching it are merely left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contactkit.control.tare import MIN_FREE_SPACE_STEPS, episode_offsets
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_rotate, quat_to_mat
from contactkit.scene import Scene

__all__ = ["FREE_SPACE_MARGIN_M", "LabelTare", "free_space_steps", "tare_labels"]

FREE_SPACE_MARGIN_M = 2e-3
"""Clearance [m] of the tool's lowest vertex over the highest static vertex for a step to count as free space
(above the 1 mm a compliant contact or a sensor filter's lag could still reach)."""


@dataclass(frozen=True)
class LabelTare:
    """Per-episode offsets subtracted from the F/T labels.

    Attributes:
        offsets: ``(E, 6)`` sensor-frame offsets [N, N·m], one per episode in the data's order.
        own: ``(E,)`` whether the episode had enough free steps for its own offset (else the median of the others).
        free_steps: ``(E,)`` its free-space steps.
    """

    offsets: np.ndarray
    own: np.ndarray
    free_steps: np.ndarray

    def summary(self) -> dict:
        """JSON-compatible record for a checkpoint's training metadata: how the labels were tared and the offsets'
        median, largest force and torque norms and the episodes with an own offset."""
        force = np.linalg.norm(self.offsets[:, :3], axis=-1) if len(self.offsets) else np.zeros(1)
        torque = np.linalg.norm(self.offsets[:, 3:], axis=-1) if len(self.offsets) else np.zeros(1)
        median = np.median(self.offsets, axis=0) if len(self.offsets) else np.zeros(6)
        return {"tared": True, "method": "median reading over geometrically free steps per episode",
                "free_space_margin_m": FREE_SPACE_MARGIN_M, "min_free_steps": MIN_FREE_SPACE_STEPS,
                "episodes": int(len(self.offsets)), "episodes_with_own_offset": int(self.own.sum()),
                "median_offset": [float(v) for v in median], "max_offset_force_N": float(force.max()),
                "max_offset_torque_Nm": float(torque.max())}


def free_space_steps(scene: Scene, states: np.ndarray, margin: float = FREE_SPACE_MARGIN_M) -> np.ndarray:
    """``(T,)`` whether each step of an episode is certainly in free space (module docstring).

    Args:
        scene: the episode's scene (tool mesh in the tool frame, static meshes at their poses).
        states: ``(T+1, 13)`` recorded flat states, world frame [m].
        margin: the clearance [m] required over the highest static vertex.
    """
    states = np.asarray(states, dtype=np.float64)
    if states.ndim != 2 or states.shape[1] != 13 or len(states) < 1:
        raise InvalidInputError(f"free-space states must have shape (T+1, 13), got {states.shape}")
    tops = [np.max(quat_rotate(s.quat, s.part.vertices)[:, 2]) + s.pos[2] for s in scene.statics]
    top = max(tops) if tops else -np.inf
    quat = states[:, 3:7] / np.linalg.norm(states[:, 3:7], axis=-1, keepdims=True)
    lowest = np.min(np.einsum("tij,vj->tvi", quat_to_mat(quat), scene.tool.part.vertices)[..., 2], axis=-1)
    clear = lowest + states[:, 2] > top + margin
    return clear[:-1] & clear[1:]


def tare_labels(scenes: Sequence[Scene], states: Sequence[np.ndarray], readings: Sequence[np.ndarray],
                margin: float = FREE_SPACE_MARGIN_M) -> LabelTare:
    """Offsets of ``E`` episodes: ``scenes[e]``, ``states[e]`` ``(T_e+1, 13)`` and ``readings[e]`` ``(T_e, 6)``
    (sensor frame [N, N·m], untared) — the median reading over each episode's :func:`free_space_steps`, episodes
    with fewer than :data:`~contactkit.control.tare.MIN_FREE_SPACE_STEPS` such steps the median of the others'
    offsets (zeros if none has enough)."""
    if not len(scenes) == len(states) == len(readings):
        raise InvalidInputError(f"tare_labels: {len(scenes)} scenes, {len(states)} state and {len(readings)} "
                                "reading arrays; one of each per episode")
    free = [free_space_steps(sc, st, margin) for sc, st in zip(scenes, states, strict=True)]
    for e, (f, r) in enumerate(zip(free, readings, strict=True)):
        if np.shape(r) != (len(f), 6):
            raise InvalidInputError(f"episode {e}: readings of shape {np.shape(r)} for {len(f)} steps")
    episode = np.concatenate([np.full(len(f), e, dtype=np.int64) for e, f in enumerate(free)]) if free \
        else np.zeros(0, dtype=np.int64)
    flat = np.concatenate([np.asarray(r, dtype=np.float64) for r in readings]) if free else np.zeros((0, 6))
    mask = np.concatenate(free) if free else np.zeros(0, dtype=bool)
    offsets, own = episode_offsets(flat, episode, mask, len(scenes))
    return LabelTare(offsets, own, np.array([int(f.sum()) for f in free], dtype=np.int64))
