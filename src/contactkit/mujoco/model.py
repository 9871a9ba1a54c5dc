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
from contactkit.mujoco.substeps import summarise_substeps
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
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`)."""
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
        m, n, b = self.world.model, self.params.n_substeps, init.shape[0]
        states = np.empty((b, n, init.shape[1]))
        sensors = np.empty((b, n, m.nsensordata))
        for data in self._datas:
            clear_warnings(data)
        with captured_warnings() as messages:
            self._rollout.rollout([m] * b, self._datas, init, np.repeat(ctrl[:, None], n, axis=1),
                                  control_spec=int(CONTROL_SPEC), nstep=n, skip_checks=True, state=states,
                                  sensordata=sensors)
        self._check(states, init[:, 0], messages)
        return self._outputs(states, sensors, batch)

    def _check(self, states: np.ndarray, t0: np.ndarray, messages: list[str]) -> None:
        """Raise :class:`SimulationDiverged` when a batch element was reset by MuJoCo (its sub-step times jump) or
        a warning of :data:`~contactkit.mujoco.diverged.UNTRUSTED_WARNINGS` was raised; the batch's outputs are
        then not returned. ``states`` ``(b, n, nstate)``, ``t0`` ``(b,)`` [s]; nothing is printed or logged."""
        warned = sorted({mujoco.mjtWarning(k).name for data in self._datas for k in UNTRUSTED_WARNINGS
                         if data.warning[k].number})
        dt = self.world.model.opt.timestep
        expected = t0[:, None] + dt * np.arange(1, states.shape[1] + 1)
        reset = np.flatnonzero(np.any(np.abs(states[:, :, 0] - expected) > TIME_TOL_STEPS * dt, axis=1))
        if len(reset) or warned:
            where = f"batch elements {reset[:8].tolist()}{' …' if len(reset) > 8 else ''} were reset" if len(reset) \
                else "the batch"
            text = "; ".join(dict.fromkeys(m.split(" Time =")[0].strip() for m in messages))
            raise SimulationDiverged(f"MujocoContactModel.step: {where} ({', '.join(warned) or 'MuJoCo reset it'}"
                                     f"{': ' + text if text else ''}); no result is returned for this batch")

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
        tool, zeros6 = self.scene.tool, np.zeros(6)
        sensor_pos, sensor_quat = self.params.sensor_frame(tool.sensor_pos, tool.sensor_quat)
        sensor_rot = quat_to_mat(sensor_quat)
        reading = np.stack([
            summarise_substeps(states[i], sensors[i], q0, states[i, 0, q0:q0 + 13], zeros6[:3], sensor_quat,
                               zeros6, zeros6, zeros6, False, False, sensor_pos, sensor_rot, zeros6,
                               np.empty((states.shape[1], 6)), False)[0]
            for i in range(states.shape[0])])
        last = states[:, -1]
        q = last[:, q0 + 3:q0 + 7] / np.linalg.norm(last[:, q0 + 3:q0 + 7], axis=-1, keepdims=True)
        ang = np.einsum("bij,bj->bi", quat_to_mat(q), last[:, q0 + 10:q0 + 13])
        out = BodyState(last[:, q0:q0 + 3].reshape(*batch, 3), q.reshape(*batch, 4),
                        last[:, q0 + 7:q0 + 10].reshape(*batch, 3), ang.reshape(*batch, 3))
        return out, reading.reshape(*batch, 6)
