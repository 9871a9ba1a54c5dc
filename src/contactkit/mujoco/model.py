"""MuJoCo as a batched :class:`~contactkit.model.ContactModel` (the ground truth a planner can query).

A batch of ``B`` tool states is stepped with one ``mujoco.rollout`` call over ``B`` initial states
(multi-threaded inside MuJoCo), each with its own impedance target or wrench.
"""

from __future__ import annotations

import mujoco
import numpy as np
from mujoco import rollout

from contactkit.control.impedance import POSE_MODES, command_target
from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.model import ActionMode
from contactkit.mujoco.diverged import TIME_TOL_STEPS, UNTRUSTED_WARNINGS, captured_warnings, clear_warnings
from contactkit.mujoco.substeps import mean_readings
from contactkit.mujoco.world import CONTROL_SPEC, STATE_SPEC, MujocoWorld
from contactkit.physics import WorldParams
from contactkit.rotations import cross, quat_to_mat
from contactkit.scene import Scene
from contactkit.state import BodyState


class MujocoContactModel:
    """MuJoCo stepping a batch of tool states; noise-free F/T (bias and noise of ``params`` are not added).

    The tool's :class:`~contactkit.state.BodyState` is the whole state of this model, so a world whose
    :meth:`~contactkit.physics.WorldParams.unmodelled_effects` are on (command latency, flange–tool compliance, the
    sensor's filter: each has a state of its own) is refused; its sensor mount and mass overrides are modelled.

    Args:
        scene: static description.
        params: physics parameters.
        action_mode: how actions are read (``POSE_DELTA`` or ``POSE_TARGET`` through the impedance controller, or
            ``WRENCH``).
        n_threads: MuJoCo rollout threads (0: run in the calling thread).

    Attributes:
        last_clipped: ``(B,)`` bool, flat over the last step's batch: whether that element's pose target was clipped
            to ``max_pos_step`` / ``max_rot_step`` (:func:`contactkit.control.impedance.command_target`; all False in
            ``WRENCH`` mode), for a caller that reports clipped commands (:mod:`contactkit.control.clipping`).
    """

    history = 1

    def __init__(self, scene: Scene, params: WorldParams | None = None,
                 action_mode: ActionMode = ActionMode.POSE_DELTA, n_threads: int = 0):
        effects = (params or WorldParams()).unmodelled_effects()
        if effects:
            raise InvalidInputError(f"MujocoContactModel does not model {', '.join(effects)} (their state is not "
                                    "part of the tool's BodyState): give it a world without them, e.g. --model-world "
                                    "nominal or target-parametric")
        self.world = MujocoWorld(scene, params)
        self.scene, self.params = scene, self.world.params
        self.action_mode = ActionMode(action_mode)
        self.control_dt = self.params.control_dt
        self._rollout = rollout.Rollout(nthread=n_threads)
        self._datas = [mujoco.MjData(self.world.model) for _ in range(max(1, n_threads))]
        self.last_clipped = np.zeros(0, dtype=bool)

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`).

        Raises:
            SimulationDiverged: some element diverged (naming them); no result is returned for the batch.
            :meth:`step_with_status` steps the others and flags those instead.
        """
        state, wrench, diverged = self.step_with_status(history, action)
        if diverged.any():
            raise SimulationDiverged(f"MujocoContactModel.step: {self.last_divergence}; no result is returned for "
                                     "this batch (step_with_status steps the other elements and flags these)")
        return state, wrench

    def step_with_status(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray, np.ndarray]:
        """One control step for every batch element, with each element's status
        (:func:`contactkit.model.step_with_status`).

        An element is diverged when MuJoCo reset it (its sub-step times jump) or raised a warning of
        :data:`~contactkit.mujoco.diverged.UNTRUSTED_WARNINGS` while stepping it (a batch that warns is stepped
        again one element at a time to find which). A diverged element keeps its input state (the last of its
        history) and its reading is NaN; the others are stepped as in a batch without it. Nothing is printed or
        logged; :attr:`last_divergence` says why, for messages.

        Returns:
            ``(next_state (*B,), wrench (*B, 6), diverged (*B,) bool)``.
        """
        state = BodyState(history.pos[..., -1, :], history.quat[..., -1, :], history.lin_vel[..., -1, :],
                          history.ang_vel[..., -1, :])
        batch = state.batch_shape
        flat = BodyState(*(np.asarray(a, dtype=np.float64).reshape(-1, a.shape[-1]) for a in
                           (state.pos, state.quat, state.lin_vel, state.ang_vel)))
        action = np.asarray(action, dtype=np.float64).reshape(-1, 6)
        if action.shape[0] != flat.pos.shape[0] or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"actions must be finite with shape {batch + (6,)}, got {np.shape(action)}")
        flat.validated("history")
        init, ctrl = self._inputs(flat, action)
        states, sensors, warned, messages = self._run(init, ctrl)
        diverged = self._diverged(init, ctrl, states, warned, messages)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            out, reading = self._outputs(states, sensors, (init.shape[0],))
        if diverged.any():
            keep = lambda new, old: np.where(diverged[:, None], old, new)  # noqa: E731
            out = BodyState(keep(out.pos, flat.pos), keep(out.quat, flat.quat), keep(out.lin_vel, flat.lin_vel),
                            keep(out.ang_vel, flat.ang_vel))
            reading = np.where(diverged[:, None], np.nan, reading)
        shaped = BodyState(*(a.reshape(*batch, a.shape[-1]) for a in (out.pos, out.quat, out.lin_vel, out.ang_vel)))
        return shaped, reading.reshape(*batch, 6), diverged.reshape(batch)

    last_divergence: str = ""
    """Why the last step's flagged elements diverged (empty when none did)."""

    def _run(self, init: np.ndarray, ctrl: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """One ``mujoco.rollout`` of the ``b`` elements: sub-step states ``(b, n, nstate)``, sensors, the names of
        the :data:`UNTRUSTED_WARNINGS` raised and the warning messages."""
        m, n, b = self.world.model, self.params.n_substeps, init.shape[0]
        states = np.empty((b, n, init.shape[1]))
        sensors = np.empty((b, n, m.nsensordata))
        for data in self._datas:
            clear_warnings(data)
        with captured_warnings() as messages:
            self._rollout.rollout([m] * b, self._datas, init, np.repeat(ctrl[:, None], n, axis=1),
                                  control_spec=int(CONTROL_SPEC), nstep=n, skip_checks=True, state=states,
                                  sensordata=sensors)
        warned = sorted({mujoco.mjtWarning(k).name for data in self._datas for k in UNTRUSTED_WARNINGS
                         if data.warning[k].number})
        return states, sensors, warned, messages

    def _diverged(self, init: np.ndarray, ctrl: np.ndarray, states: np.ndarray, warned: list[str],
                  messages: list[str]) -> np.ndarray:
        """``(b,)`` bool: the elements MuJoCo reset (their sub-step times jump) or warned about (found by stepping
        the others one at a time when the batch warned); sets :attr:`last_divergence`."""
        dt = self.world.model.opt.timestep
        expected = init[:, :1] + dt * np.arange(1, states.shape[1] + 1)
        diverged = np.any(np.abs(states[:, :, 0] - expected) > TIME_TOL_STEPS * dt, axis=1)
        reset = np.flatnonzero(diverged)
        if warned:
            if len(diverged) == 1:
                diverged[:] = True
            else:
                for i in np.flatnonzero(~diverged):
                    diverged[i] = bool(self._run(init[i:i + 1], ctrl[i:i + 1])[2])
        self.last_divergence = ""
        if diverged.any():
            bad = np.flatnonzero(diverged)
            text = "; ".join(dict.fromkeys(m.split(" Time =")[0].strip() for m in messages))
            how = "were reset" if len(reset) == len(bad) else "diverged"
            self.last_divergence = (f"batch elements {bad[:8].tolist()}{' …' if len(bad) > 8 else ''} {how} "
                                    f"({', '.join(warned) or 'MuJoCo reset them'}{': ' + text if text else ''})")
        return diverged

    def _inputs(self, flat: BodyState, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Initial physics states ``(b, nstate)`` and per-element controls ``(b, ncontrol)``, vectorised.

        Layouts follow ``mjtState`` bit order: FULLPHYSICS = time, qpos (7), qvel (6) for this one-body
        model; the control is xfrc_applied (nbody·6), mocap_pos (nmocap·3), mocap_quat (nmocap·4).
        """
        w = self.world
        m = w.model
        b = len(action)
        rot = quat_to_mat(flat.quat)
        init = np.zeros((b, mujoco.mj_stateSize(m, STATE_SPEC)))
        init[:, 1:4], init[:, 4:8], init[:, 8:11] = flat.pos, flat.quat, flat.lin_vel
        init[:, 11:14] = np.einsum("bji,bj->bi", rot, flat.ang_vel)
        feedforward = np.zeros((b, 6))
        feedforward[:, 2] = w._weight
        tpos, tquat = flat.pos, flat.quat
        self.last_clipped = np.zeros(b, dtype=bool)
        if self.action_mode in POSE_MODES:
            target = command_target(flat.pos, flat.quat, action, self.scene.controller, self.action_mode)
            tpos, tquat, self.last_clipped = target.pos, target.quat, target.pos_clipped | target.rot_clipped
            m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        else:
            feedforward += action
            m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        ctrl = np.zeros((b, mujoco.mj_stateSize(m, CONTROL_SPEC)))
        body = w._driven * 6
        lever = np.einsum("bij,j->bi", rot, self.scene.tool.com)
        ctrl[:, body:body + 3] = feedforward[:, :3]
        ctrl[:, body + 3:body + 6] = feedforward[:, 3:] - cross(lever, feedforward[:, :3])
        mocap_pos, mocap_quat = m.nbody * 6, m.nbody * 6 + m.nmocap * 3
        for mocap in (w._mocap_pos, w._mocap_rot):
            ctrl[:, mocap_pos + 3 * mocap:mocap_pos + 3 * mocap + 3] = tpos
        ctrl[:, mocap_quat + 4 * w._mocap_pos] = 1.0
        ctrl[:, mocap_quat + 4 * w._mocap_rot:mocap_quat + 4 * w._mocap_rot + 4] = tquat
        return init, ctrl

    def _outputs(self, states: np.ndarray, sensors: np.ndarray, batch: tuple) -> tuple[BodyState, np.ndarray]:
        """Final states and mean noise-free F/T readings of each batch element."""
        q0 = 1
        tool = self.scene.tool
        sensor_pos, sensor_quat = self.params.sensor_frame(tool.sensor_pos, tool.sensor_quat)
        sensor_rot = quat_to_mat(sensor_quat)
        reading = mean_readings(states, sensors, q0, np.asarray(sensor_pos, dtype=np.float64), sensor_rot)
        last = states[:, -1]
        q = last[:, q0 + 3:q0 + 7] / np.linalg.norm(last[:, q0 + 3:q0 + 7], axis=-1, keepdims=True)
        ang = np.einsum("bij,bj->bi", quat_to_mat(q), last[:, q0 + 10:q0 + 13])
        out = BodyState(last[:, q0:q0 + 3].reshape(*batch, 3), q.reshape(*batch, 4),
                        last[:, q0 + 7:q0 + 10].reshape(*batch, 3), ang.reshape(*batch, 3))
        return out, reading.reshape(*batch, 6)
