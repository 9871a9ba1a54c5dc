"""How well a world replays logs: short open-loop rollouts of MuJoCo from recorded states under recorded commands.

A segment starts at a recorded state ``s_t0`` and replays the recorded commands for ``K`` steps in a
:class:`~contactkit.mujoco.model.MujocoContactModel` of the candidate world (noise-free F/T; :func:`replay_model`:
a world with a real cell's hidden state runs in a :class:`~contactkit.mujoco.oracle.WorldOracle` started at
rest); its errors are the tool origin's position [m] and orientation [rad] at every step, and, for the contact
stage, the F/T reading against the log's *tared* reading (each episode's free-space offset removed, as the
residual's labels are). The loss is the sum of the mean squared errors, each divided by the square of a scale of
the order of the Act-FIGNet paper's Table I errors (:data:`POS_SCALE_M`, :data:`ROT_SCALE_RAD`,
:data:`FORCE_SCALE_N`, :data:`TORQUE_SCALE_NM`): the paper minimises "the MSE between simulated and ground truth
trajectories and F/T readings" (App. V-D).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contactkit.calibration.controller import apply_controller
from contactkit.errors import InvalidInputError, SimulationDiverged, ToolTunnelled
from contactkit.model import ActionMode, ContactModel, rollout
from contactkit.models.residual.transitions import LoggedEpisode
from contactkit.mujoco.model import MujocoContactModel
from contactkit.mujoco.oracle import HiddenStart, WorldOracle
from contactkit.physics import WorldParams
from contactkit.rotations import quat_angle_between
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = ["FORCE_SCALE_N", "POS_SCALE_M", "ROT_SCALE_RAD", "TORQUE_SCALE_NM", "FitError", "Segments", "fit_error",
           "replay_model"]

POS_SCALE_M = 1e-3
ROT_SCALE_RAD = 1e-2
FORCE_SCALE_N = 1.0
TORQUE_SCALE_NM = 0.02
"""Error scales of the loss: a millimetre, a hundredth of a radian, a newton, 0.02 N·m."""


@dataclass(frozen=True)
class Segments:
    """Replay segments over logged episodes.

    Attributes:
        episodes: the logs; offsets: ``(E, 6)`` their sensor offsets (tare) [N, N·m];
        rows: ``(N, 2)`` ``(episode, t0)``; horizon: steps ``K`` per segment; mode: what the commands mean.
    """

    episodes: tuple[LoggedEpisode, ...]
    offsets: np.ndarray
    rows: np.ndarray
    horizon: int
    mode: ActionMode


@dataclass(frozen=True)
class FitError:
    """Errors of a world on segments: RMS position [m] and rotation [rad] over every step, RMS F/T error [N, N·m]
    over every step, and the loss (with or without the F/T terms, as asked)."""

    pos_rmse_m: float
    rot_rmse_rad: float
    force_rmse_N: float
    torque_rmse_Nm: float
    loss: float

    def as_dict(self) -> dict:
        """JSON-ready, SI units."""
        return {"pos_rmse_m": self.pos_rmse_m, "rot_rmse_rad": self.rot_rmse_rad, "force_rmse_N": self.force_rmse_N,
                "torque_rmse_Nm": self.torque_rmse_Nm, "loss": self.loss}


DIVERGED = FitError(np.inf, np.inf, np.inf, np.inf, np.inf)
"""The error of a world whose simulation diverged on a segment."""


def replay_model(scene: Scene, world: WorldParams, mode: ActionMode) -> ContactModel:
    """The model that replays logs in ``world``: batched MuJoCo from recorded states, or for a world with a real
    cell's hidden state (latency, compliance, filter) the :class:`~contactkit.mujoco.oracle.WorldOracle` started
    at rest from each recorded state (:attr:`~contactkit.mujoco.oracle.HiddenStart.AT_REST`: what the cell carried
    over into a segment's first step is not in the log)."""
    if world.unmodelled_effects():
        return WorldOracle(scene, world, mode, unknown=HiddenStart.AT_REST)
    return MujocoContactModel(scene, world, mode)


def _replay(world: WorldParams, seg: Segments, rows: np.ndarray, controller: dict) -> tuple[np.ndarray, ...]:
    """Squared errors of the ``rows`` (one scene, its controller changed by ``controller``,
    :func:`~contactkit.calibration.controller.apply_controller`): position, rotation ``(n, K)`` and force, torque
    ``(n, K)``."""
    eps = seg.episodes
    scene = eps[int(rows[0, 0])].scene
    if controller:
        scene = dataclasses.replace(scene, controller=apply_controller(scene.controller, controller))
    model = replay_model(scene, world, seg.mode)
    k = seg.horizon
    start = BodyState.from_array(np.stack([eps[e].states[t] for e, t in rows])[:, None])
    commands = np.stack([eps[e].commands[t:t + k] for e, t in rows])
    states, readings = rollout(model, start, commands)
    truth = np.stack([eps[e].states[t + 1:t + k + 1] for e, t in rows])
    tared = np.stack([eps[e].readings[t:t + k] - seg.offsets[e] for e, t in rows])
    pos = np.sum((states.pos - truth[..., 0:3]) ** 2, axis=-1)
    rot = quat_angle_between(states.quat, truth[..., 3:7]) ** 2
    force = np.sum((readings[..., :3] - tared[..., :3]) ** 2, axis=-1)
    torque = np.sum((readings[..., 3:] - tared[..., 3:]) ** 2, axis=-1)
    return pos, rot, force, torque


def fit_error(world: WorldParams, seg: Segments, with_ft: bool, controller: dict | None = None) -> FitError:
    """The errors of ``world`` replaying ``seg`` (one MuJoCo model per scene, every segment of a scene batched),
    each scene's controller changed by ``controller`` (calibrated controller values; none: as logged).

    Returns :data:`DIVERGED` when MuJoCo diverges for a segment (a world that cannot replay the log).
    """
    keys = [ep.scene.to_json() for ep in seg.episodes]
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(seg.rows[:, 0]):
        groups.setdefault(keys[int(e)], []).append(i)
    parts = []
    try:
        for idx in groups.values():
            parts.append(_replay(world, seg, seg.rows[idx], controller or {}))
    except (SimulationDiverged, ToolTunnelled, InvalidInputError):  # a world MuJoCo cannot run, or that breaks
        return DIVERGED
    pos, rot, force, torque = (float(np.mean(np.concatenate([p[j] for p in parts]))) for j in range(4))
    loss = pos / POS_SCALE_M**2 + rot / ROT_SCALE_RAD**2
    if with_ft:
        loss += force / FORCE_SCALE_N**2 + torque / TORQUE_SCALE_NM**2
    return FitError(float(np.sqrt(pos)), float(np.sqrt(rot)), float(np.sqrt(force)), float(np.sqrt(torque)),
                    float(loss))


def split_segments(episodes: Sequence[LoggedEpisode], offsets: np.ndarray, contact: Sequence[np.ndarray],
                   horizon: int, limit: int, mode: ActionMode,
                   rng: np.random.Generator) -> tuple[Segments, Segments]:
    """Free-space and contact segments of ``horizon`` steps, at most ``limit`` of each, drawn without replacement.

    Args:
        contact: per episode ``(T,)`` bool, whether the step has contact (the nominal backbone's prediction from
            the recorded state): a segment is free when none of its steps has, contact when any has.
    """
    free, touching = [], []
    for e, flags in enumerate(contact):
        for t in range(0, len(flags) - horizon + 1, horizon):
            (touching if flags[t:t + horizon].any() else free).append((e, t))
    out = []
    for rows in (free, touching):
        rows = np.array(rows, dtype=np.int64).reshape(-1, 2)
        if len(rows) > limit:
            rows = rows[np.sort(rng.choice(len(rows), limit, replace=False))]
        out.append(Segments(tuple(episodes), offsets, rows, horizon, mode))
    return out[0], out[1]
