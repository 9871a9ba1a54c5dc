"""Physics plus a learned residual as a batched :class:`~contactkit.model.ContactModel`.

``step(history, action)`` steps the backbone (nominal MuJoCo or the contactkit engine) from the history's last
state, then adds the gated ensemble's correction of the next state and the F/T reading
(:mod:`contactkit.models.residual.features`, :mod:`contactkit.models.residual.network`). The residual also reads
the previous command (a command latency makes it observable). The model remembers, per batch position, the state it
returned and the command that produced it: a history that ends at that state bit for bit (an open-loop rollout,
an iCEM population, a particle set) continues with that command as the previous one; any other history uses
:meth:`prime`'s command when given, else the current command (a held command): :mod:`contactkit.models.command_memory`,
shared with the graph networks.

History check (a validated gate). Where a fresh history comes with its previous command (:meth:`prime`), the model
first replays the history's own last transition ``s_{t-1} → s_t`` with and without the correction; if the corrected
prediction misses the recorded ``s_t`` by more than the backbone's own miss plus :data:`HISTORY_CHECK_TOL_M`, the
logs of this cell do not support the correction (another world than the training one: e.g. the backbone's own, where
it is exact) and the element gets the backbone alone, for the rest of its rollout. The check compares the tool
origin's position plus :data:`HISTORY_CHECK_LEVER_M` times the rotation angle.
"""

from __future__ import annotations

from contextlib import nullcontext
from enum import Enum

import numpy as np
import torch

from contactkit.devices import torch_threads
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel
from contactkit.models.command_memory import CommandMemory
from contactkit.models.residual.features import HISTORY, apply_correction, features
from contactkit.models.residual.network import ResidualNet
from contactkit.physics import WorldParams
from contactkit.rotations import quat_angle_between
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = ["BACKBONE_MAX_PENETRATION_M", "HISTORY_CHECK_LEVER_M", "HISTORY_CHECK_TOL_M", "Backbone",
           "ResidualContactModel", "make_backbone"]

HISTORY_CHECK_TOL_M = 2e-5
"""Slack [m] of the history check: the corrected replay of the last recorded transition may miss by this much more
than the backbone's before the correction is turned off (20 µm: far below the 0.3–1 mm one-step corrections a
latency or a compliance calls for, above the solver's warm-start noise of about 1 µm)."""
HISTORY_CHECK_LEVER_M = 0.05
"""Lever [m] turning a rotation error into a displacement in the history check (the peg's length scale)."""

BACKBONE_MAX_PENETRATION_M = 2e-2
"""Deepest start the engine backbone accepts [m] (the engine's default refuses 1 mm): logs of a softer world (a real
cell's compliant contact, MuJoCo's soft contacts) start steps inside the engine's rigid node geometry — a noisy copy
of a ``target`` log reached 5.1 mm — and the engine projects such a state out in its next step; 20 mm is below the
peg's size, so a tool through a wall is still refused."""

INFERENCE_THREADS = 1
"""Torch intra-op threads of a step's correction on CPU. A planning step corrects tens to hundreds of rows
(an iCEM population, a particle set): the ensemble's matrix products are too small to gain from a second thread,
whose hand-off costs more on a shared 2-core machine. ``contactkit benchmark replan`` measures the residual's
replan against its MuJoCo backbone (``cpu_vs_ground_truth``)."""


class Backbone(str, Enum):
    """The physics a residual corrects."""

    MUJOCO = "mujoco"
    ENGINE = "engine"


def make_backbone(kind: Backbone | str, scene: Scene, world: WorldParams, mode: ActionMode,
                  n_threads: int = 0) -> ContactModel:
    """The backbone :class:`ContactModel` of ``kind`` for ``scene`` under ``world`` (noise-free F/T).

    ``n_threads``: the MuJoCo backbone's rollout threads (0: the calling thread), as the planning models' ground truth
    gets them (:class:`~contactkit.eval.planning_models.InsertionBudget`); the engine backbone ignores it.

    Raises:
        InvalidInputError: an unknown kind, or a world the backbone cannot simulate statelessly.
    """
    kind = Backbone(kind)
    if kind is Backbone.MUJOCO:
        from contactkit.mujoco.model import MujocoContactModel

        return MujocoContactModel(scene, world, mode, n_threads=n_threads)
    from contactkit.engine.model import EngineContactModel
    from contactkit.engine.params import EngineParams

    return EngineContactModel(scene, world, mode, EngineParams(max_initial_penetration=BACKBONE_MAX_PENETRATION_M))


class ResidualContactModel:
    """A backbone :class:`ContactModel` corrected by a :class:`ResidualNet`.

    Args:
        net: the trained ensemble (its device is used); backbone: the physics, for ``scene``;
        scene: the static description (its target frame is the geometry reference of the features).
        gated: apply the uncertainty gate (False: the ensemble mean everywhere, for ablations).
        inference_threads: torch intra-op threads of a step's correction on CPU (default
            :data:`INFERENCE_THREADS`), restored afterwards; None leaves torch's setting alone.

    Attributes:
        history: :data:`~contactkit.models.residual.features.HISTORY` states.
        last_gate: ``(*B,)`` the gate of the last step (1: full correction, 0: the backbone alone).
    """

    history = HISTORY

    def __init__(self, net: ResidualNet, backbone: ContactModel, scene: Scene, gated: bool = True,
                 inference_threads: int | None = INFERENCE_THREADS):
        self.net, self.backbone, self.scene, self.gated = net, backbone, scene, gated
        self.inference_threads = inference_threads
        if ActionMode(backbone.action_mode) is ActionMode.POSE_TARGET:  # its features read commands as deltas
            raise InvalidInputError(f"ResidualContactModel does not take {ActionMode.POSE_TARGET.value!r} actions "
                                    f"(absolute pose targets); give it a {ActionMode.POSE_DELTA.value!r} backbone")
        self.action_mode = backbone.action_mode
        self.control_dt = backbone.control_dt
        self.last_gate = np.ones(0)
        self._memory = CommandMemory()
        self._trust = np.ones(0)
        p = next(net.parameters())
        self._device, self._dtype = p.device, p.dtype

    def prime(self, previous_command: np.ndarray) -> None:
        """The command ``(*B, 6)`` that acted in the step ending at the next call's history (used once)."""
        self._memory.prime(previous_command)

    def _previous(self, hist: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per element: the previous command (the primed one, else the remembered one when the history ends at the
        state returned, else ``action``) and the trust ``(b,)`` in the correction (the history check's verdict for a
        primed fresh history, the remembered one for a continued rollout, else 1)."""
        prev, same, primed = self._memory.recall(hist[:, -1], action)
        trust = np.ones(len(action))
        if same.any():
            trust[same] = self._trust[same]
        fresh = ~same
        if primed and fresh.any() and self.gated:
            trust[fresh] = self._history_check(hist[fresh], prev[fresh])
        return prev, trust

    def _history_check(self, hist: np.ndarray, prev: np.ndarray) -> np.ndarray:
        """``(n,)`` 1 where the corrected replay of ``s_{t-1} → s_t`` (history ``(n, H, 13)``, command ``prev``
        ``(n, 6)``) misses ``s_t`` by at most the backbone's miss plus :data:`HISTORY_CHECK_TOL_M`, else 0."""
        earlier = np.concatenate([hist[:, :1], hist[:, :-1]], axis=1)
        nxt, wrench = self.backbone.step(BodyState.from_array(hist[:, -2][:, None]), prev)
        bb = nxt.as_array().reshape(-1, 13)
        fixed, _, _ = self._correct(earlier, prev, prev, bb, np.asarray(wrench).reshape(-1, 6), np.ones(len(prev)))
        truth = hist[:, -1]
        miss = lambda s: np.linalg.norm(s[:, :3] - truth[:, :3], axis=-1) + HISTORY_CHECK_LEVER_M * \
            quat_angle_between(s[:, 3:7], truth[:, 3:7])  # noqa: E731
        return (miss(fixed) <= miss(bb) + HISTORY_CHECK_TOL_M).astype(np.float64)

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`).

        Args:
            history: ``(*B, H)`` states, H ≥ 1 (fewer than :attr:`history` repeat the oldest), world frame.
            action: ``(*B, 6)`` commands in :attr:`action_mode`.

        Returns:
            ``(next_state (*B,), wrench (*B, 6))``: corrected next state (world frame) and F/T reading (sensor
            frame, tared: no sensor bias) [m, rad, N, N·m].
        """
        flat_hist = np.asarray(history.as_array(), dtype=np.float64)
        batch = flat_hist.shape[:-2]
        flat_hist = flat_hist.reshape(-1, flat_hist.shape[-2], 13)
        if flat_hist.shape[1] < HISTORY:
            pad = np.repeat(flat_hist[:, :1], HISTORY - flat_hist.shape[1], axis=1)
            flat_hist = np.concatenate([pad, flat_hist], axis=1)
        flat_hist = flat_hist[:, -HISTORY:]
        action = np.asarray(action, dtype=np.float64).reshape(-1, 6)
        if action.shape[0] != flat_hist.shape[0] or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"actions must be finite with shape {batch + (6,)}, got {np.shape(action)}")
        prev, trust = self._previous(flat_hist, action)
        nxt, wrench = self.backbone.step(BodyState.from_array(flat_hist[:, -1][:, None]), action)
        state, reading, gate = self._correct(flat_hist, action, prev, nxt.as_array().reshape(-1, 13),
                                             np.asarray(wrench).reshape(-1, 6), trust)
        self._memory.remember(state, action)
        self._trust = trust
        self.last_gate = gate.reshape(batch)
        return BodyState.from_array(state.reshape(*batch, 13)), reading.reshape(*batch, 6)

    def _correct(self, hist: np.ndarray, action: np.ndarray, prev: np.ndarray, bb: np.ndarray,
                 bb_wrench: np.ndarray, trust: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Corrected flat states ``(b, 13)``, readings ``(b, 6)`` and gates ``(b,)`` (the network's gate times
        ``trust``), float64 geometry."""
        t = lambda a: torch.from_numpy(np.array(a, dtype=np.float64))  # noqa: E731  (a copy: inputs may be read-only)
        n = len(action)
        ref_pos = t(np.repeat(np.asarray(self.scene.target_pos, dtype=np.float64)[None], n, axis=0))
        ref_quat = t(np.repeat(np.asarray(self.scene.target_quat, dtype=np.float64)[None], n, axis=0))
        threads = self.inference_threads if self._device.type == "cpu" else None
        with torch.inference_mode(), (nullcontext() if threads is None else torch_threads(threads)):
            x = features(t(hist), t(action), t(prev), t(bb), t(bb_wrench), ref_pos, ref_quat)
            corr, gate = self.net(x.to(self._device, self._dtype), gated=self.gated)
            w = torch.as_tensor(trust, dtype=corr.dtype, device=corr.device)
            corr, gate = corr * w[:, None], gate * w
            state, reading = apply_correction(t(hist[:, -1]), t(bb), t(bb_wrench), corr.double().cpu())
        state, reading, gate = state.numpy(), reading.numpy(), gate.double().cpu().numpy()
        off = gate == 0.0  # the backbone's own arrays, bit for bit (a stateful backbone, e.g. the engine's warm start,
        state[off], reading[off] = bb[off], bb_wrench[off]  # then continues its rollout as if stepped alone)
        return state, reading, gate
