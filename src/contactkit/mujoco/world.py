"""MuJoCo reference world: a Scene simulated with a floating tool under wrench or impedance control.

One control step = ``params.n_substeps`` physics steps, run in C by ``mujoco.rollout``. The impedance
controller lives in the model as six site actuators (it acts at every physics step, like a robot's servo
loop); the step reports the mean applied wrench and the mean F/T reading over the control period (an
anti-aliased sensor sampled at the control rate).

A world may add what a real arm-plus-sensor does and the nominal simulator does not (docs/worlds.md): a rotated or
offset sensor mount and absolute tool mass and inertia (in the model), a command latency of whole sub-steps
(:class:`~contactkit.mujoco.realcell.CommandDelay`), a compliant flange–tool coupling (the controller then drives a
flange body and the tool hangs from it by six spring-dampers; the state is the tool's) and the sensor's first-order
low-pass filter (applied at the physics rate before the period's mean).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from mujoco import rollout

from contactkit.collision.tunnelling import TunnelGuard, find_tunnel
from contactkit.collision.workspace import leaves_workspace
from contactkit.control.impedance import POSE_MODES, command_target, tcp_position
from contactkit.control.stability import check_timestep
from contactkit.errors import InvalidInputError, SimulationDiverged, ToolTunnelled
from contactkit.model import ActionMode, StepResult
from contactkit.mujoco.diverged import captured_warnings, clear_warnings, divergence
from contactkit.mujoco.mjcf import (
    COMPLIANCE_JOINTS,
    FLANGE_BODY,
    GRAVITY_MPS2,
    TARGET_POS_BODY,
    TARGET_ROT_BODY,
    TOOL_BODY,
    scene_to_mjcf,
)
from contactkit.mujoco.realcell import CommandDelay, Issued, check_compliance, filter_gain
from contactkit.mujoco.substeps import CLIP_FORCE, CLIP_TORQUE, low_pass, summarise_substeps
from contactkit.physics import WorldParams
from contactkit.rotations import cross, quat_to_mat
from contactkit.scene import Scene
from contactkit.state import BodyState

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL_SPEC = (
    mujoco.mjtState.mjSTATE_MOCAP_POS
    | mujoco.mjtState.mjSTATE_MOCAP_QUAT
    | mujoco.mjtState.mjSTATE_XFRC_APPLIED
)
BACKUP_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION
"""What a step saves first and restores when it fails: everything MuJoCo integrates from, targets included."""
STEP_FAILURES = (mujoco.FatalError, np.linalg.LinAlgError, ArithmeticError)
"""Exceptions from inside MuJoCo's rollout that mean the step diverged (:class:`SimulationDiverged`, state kept)."""
COMPILE_FIELDS = (("inertia", "tool.inertia (scene), world.tool_inertia or world.mass_scale"),
                  ("mass", "tool.mass (scene), world.tool_mass or world.mass_scale"),
                  ("friction", "the scene's friction or world.friction_scale"),
                  ("solref", "world.solref"), ("solimp", "world.solimp"), ("timestep", "world.timestep"),
                  ("armature", "world.wrist_armature"), ("damping", "world.linear_damping or angular_damping"))
"""``(word in MuJoCo's compile error, the scene or world fields that set it)``, first match named in the error."""


def _compile(xml: str) -> mujoco.MjModel:
    """The MuJoCo model of ``xml``; MuJoCo's compile error becomes a one-line InvalidInputError naming the fields
    that set what it refuses (:data:`COMPILE_FIELDS`)."""
    try:
        return mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        text = " ".join(str(exc).split())
        fields = next((f for word, f in COMPILE_FIELDS if word in text.lower()), "the scene or world parameters")
        raise InvalidInputError(f"MujocoWorld: MuJoCo cannot compile this scene and world ({text[:300]}); "
                                f"check {fields}") from None


@dataclass(frozen=True)
class WorldSnapshot:
    """A :class:`MujocoWorld`'s hidden state between control steps (:meth:`MujocoWorld.snapshot`).

    Attributes:
        physics: MuJoCo's ``mjSTATE_INTEGRATION`` vector (time, qpos, qvel, warm start, mocap targets, applied
            forces).
        issued: the commands of the last control steps, oldest first
            (:class:`~contactkit.mujoco.realcell.CommandDelay`).
        filtered: ``(6,)`` the sensor filter's last output (sensor frame, unbiased) [N, N·m].
        steps: control steps since reset.
    """

    physics: np.ndarray
    issued: tuple[Issued, ...]
    filtered: np.ndarray
    steps: int


class MujocoWorld:
    """A MuJoCo simulation of ``scene`` under ``params``; holds one ``MjData``.

    Args:
        scene: the static description.
        params: physics parameters (time step, sub-steps, contact softness, noise...).
        rng: generator for F/T noise; required when ``params.ft_noise_std`` is non-zero.

    Attributes:
        limits: the command limits :meth:`step` enforces (:attr:`contactkit.scene.Scene.limits`).
        steps: control steps taken since the last :meth:`reset` (the index an error of :meth:`step` names).

    Raises:
        InvalidInputError: F/T noise without ``rng``, or a ``params.timestep`` with which the scene's impedance
            controller (:func:`contactkit.control.stability.check_timestep`) or the world's flange–tool compliance
            (:func:`contactkit.mujoco.realcell.check_compliance`) cannot be stable.
    """

    def __init__(
        self, scene: Scene, params: WorldParams | None = None, rng: np.random.Generator | None = None
    ):
        self.scene = scene
        self.params = params or WorldParams()
        self.rng = rng
        if any(self.params.ft_noise_std) and rng is None:
            raise InvalidInputError("this world adds F/T noise: pass rng=np.random.default_rng(seed)")
        check_timestep(scene, self.params, "MujocoWorld")
        check_compliance(scene, self.params, "MujocoWorld")
        self.limits = scene.limits
        self._guard = TunnelGuard.of(scene)
        self.xml = scene_to_mjcf(scene, self.params)
        self.model = _compile(self.xml)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, TOOL_BODY)
        self._compliant = self.params.compliant
        self._driven = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, FLANGE_BODY) if self._compliant else self._body
        self._compliance_q = [int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)])
                              for j in COMPLIANCE_JOINTS] if self._compliant else []
        self._mocap_pos = m.body_mocapid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, TARGET_POS_BODY)]
        self._mocap_rot = m.body_mocapid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, TARGET_ROT_BODY)]
        self.tool_geoms = m.geom_bodyid == self._body
        m.dof_damping[0:3] = self.params.linear_damping
        m.dof_damping[3:6] = self.params.angular_damping
        m.dof_armature[3:6] = self.params.wrist_armature
        tool = scene.tool
        comp = scene.controller.gravity_compensation and self.params.gravity
        driven_mass = tool.mass + (self.params.compliance_mass if self._compliant else 0.0)
        self._weight = driven_mass * GRAVITY_MPS2 if comp else 0.0
        self._state_buf = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        self._backup = np.empty(mujoco.mj_stateSize(m, BACKUP_SPEC))
        self._ctrl_buf = np.empty(mujoco.mj_stateSize(m, CONTROL_SPEC))
        self._qpos_at = 1  # FULLPHYSICS starts with time, then qpos (7), qvel (6)
        self._sensor_pos, sensor_quat = self.params.sensor_frame(tool.sensor_pos, tool.sensor_quat)
        self._sensor_rot = quat_to_mat(sensor_quat)
        self._delay = CommandDelay(self.params.command_latency_substeps, self.params.n_substeps)
        self._filter_alpha = filter_gain(self.params)
        self._filtered = np.zeros(6)
        self._act_stiffness = -m.actuator_biasprm[:, 1].copy()
        self._act_damping = -m.actuator_biasprm[:, 2].copy()
        self._act_limits = m.actuator_forcerange[:, 1].copy()
        self.reset()

    # ---- state ------------------------------------------------------------------------------------
    def reset(self, state: BodyState | None = None) -> BodyState:
        """Reset to ``state`` (default: the scene's initial pose at rest) and return it."""
        mujoco.mj_resetData(self.model, self.data)
        self.steps = 0
        self._filtered[:] = 0.0
        tool = self.scene.tool
        self.set_state(state if state is not None else BodyState.at_rest(tool.init_pos, tool.init_quat))
        return self.state()

    def set_state(self, state: BodyState) -> None:
        """Place the tool at an unbatched ``state`` (world frame); targets move to the same pose, a compliant
        coupling is undeflected, and the commands still delayed by the latency are replaced by holding this pose."""
        state.validated("MujocoWorld.set_state")
        if state.batch_shape != ():
            raise InvalidInputError(f"MujocoWorld holds one tool; got batch shape {state.batch_shape}")
        d = self.data
        d.qpos[0:3] = state.pos
        d.qpos[3:7] = state.quat
        d.qvel[0:3] = state.lin_vel
        d.qvel[3:6] = quat_to_mat(state.quat).T @ state.ang_vel
        tcp = tcp_position(np.asarray(state.pos, dtype=np.float64), state.quat, self.scene.controller)
        d.mocap_pos[self._mocap_pos] = tcp
        d.mocap_pos[self._mocap_rot] = tcp
        d.mocap_quat[self._mocap_rot] = state.quat
        d.qpos[self._compliance_q] = 0.0
        d.qvel[6:] = 0.0
        d.qacc_warmstart[:] = 0.0
        mujoco.mj_forward(self.model, d)
        if self.params.command_latency_substeps:  # what the robot was doing before: holding this pose
            self._set_inputs(np.zeros(6), ActionMode.WRENCH)
            self._delay.reset(self._issue())

    def state(self) -> BodyState:
        """Current tool state (world frame; ``ang_vel`` converted from MuJoCo's body frame)."""
        d = self.data
        if self._compliant:  # the tool hangs from the flange: its own pose and origin velocity
            vel = np.empty(6)
            mujoco.mj_objectVelocity(self.model, d, mujoco.mjtObj.mjOBJ_BODY, self._body, vel, 0)
            quat = d.xquat[self._body] / np.linalg.norm(d.xquat[self._body])
            return BodyState(d.xpos[self._body].copy(), quat, vel[3:6].copy(), vel[0:3].copy())
        quat = d.qpos[3:7] / np.linalg.norm(d.qpos[3:7])
        return BodyState(d.qpos[0:3].copy(), quat, d.qvel[0:3].copy(), d.xmat[self._body].reshape(3, 3) @ d.qvel[3:6])

    # ---- stepping ---------------------------------------------------------------------------------
    def _set_inputs(self, command: np.ndarray, mode: ActionMode) -> None:
        """Write the mocap targets and the external force for one control step into ``data``."""
        d, m = self.data, self.model
        pos, quat = d.qpos[0:3].copy(), d.qpos[3:7] / np.linalg.norm(d.qpos[3:7])
        feedforward = np.array([0.0, 0.0, self._weight, 0.0, 0.0, 0.0])
        self._clipped = frozenset()
        if mode in POSE_MODES:
            target = command_target(pos, quat, command, self.scene.controller, mode)
            self._clipped = target.clipped()
            d.mocap_pos[self._mocap_pos] = target.pos
            d.mocap_pos[self._mocap_rot] = target.pos
            d.mocap_quat[self._mocap_rot] = target.quat
            m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        else:
            feedforward = feedforward + command
            m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        # xfrc_applied acts at the centre of mass: move the torque reference from the tool origin.
        lever = d.xmat[self._driven].reshape(3, 3) @ self.scene.tool.com  # the driven body's centre of mass
        d.xfrc_applied[self._driven, :3] = feedforward[:3]
        d.xfrc_applied[self._driven, 3:] = feedforward[3:] - cross(lever, feedforward[:3])
        self._feedforward = feedforward

    def _issue(self) -> Issued:
        """The inputs that :meth:`_set_inputs` wrote, as the robot receives them (control vector and targets)."""
        m, d = self.model, self.data
        mujoco.mj_getState(m, d, self._ctrl_buf, CONTROL_SPEC)
        return Issued(self._ctrl_buf.copy(), d.mocap_pos[self._mocap_pos].copy(), d.mocap_quat[self._mocap_rot].copy(),
                      self._feedforward.copy())

    def step(self, command, mode: ActionMode) -> StepResult:
        """Advance one control step.

        Args:
            command: ``(6,)`` action: a world wrench about the tool origin (``WRENCH``, added to the
                gravity compensation), a pose-target displacement (``POSE_DELTA``) or an absolute target of the tool
                centre point (``POSE_TARGET``), see :func:`contactkit.control.impedance.command_target`.
            mode: how to read ``command``.

        Returns:
            :class:`StepResult`: new state, mean F/T reading (sensor frame), mean applied wrench (world), and the
            controller limits that bound (``clipped``).

        Raises:
            InvalidInputError: a command that is not 6 finite numbers or exceeds the scene's command limits
                (:attr:`contactkit.scene.Scene.limits`), or an unknown mode.
            SimulationDiverged: MuJoCo warned of a bad acceleration, position or velocity (and reset itself) or of
                a contact/constraint overflow (:mod:`contactkit.mujoco.diverged`), or the tool origin left the
                scene's workspace by more than :data:`~contactkit.collision.workspace.WORKSPACE_MARGIN_M`;
                :class:`ToolTunnelled`: the tool passed through a static body (:mod:`contactkit.collision.tunnelling`).
                Either way the world is left as it was before the step, nothing is printed and no file is written.
        """
        command = np.asarray(command, dtype=np.float64)
        if command.shape != (6,) or not np.all(np.isfinite(command)):
            raise InvalidInputError(f"action must be 6 finite numbers, got {command!r}")
        try:
            mode = ActionMode(mode)
        except ValueError:
            raise InvalidInputError(f"unknown action mode {mode!r}; valid: {[m.value for m in ActionMode]}") from None
        m, d = self.model, self.data
        self.limits.check(command, mode, "MujocoWorld.step", self._tcp())
        mujoco.mj_getState(m, d, self._backup, BACKUP_SPEC)
        pos0, rot0 = d.xpos[self._body].copy(), d.xmat[self._body].reshape(3, 3).copy()
        self._set_inputs(command, mode)
        issued = self._issue()
        segments = self._delay.segments(issued)
        try:
            states, sensors, warnings = self._rollout(segments)
        except STEP_FAILURES as exc:
            self._restore()
            raise SimulationDiverged(f"MujocoWorld: control step {self.steps} since reset failed inside MuJoCo "
                                     f"({type(exc).__name__}: {exc}); the world is left as it was before the step"
                                     ) from None
        problem = divergence(d, states[:, 0], self._state_buf[0], m.opt.timestep, warnings)
        error = SimulationDiverged if problem else ToolTunnelled
        if problem is None:
            mujoco.mj_setState(m, d, states[-1], STATE_SPEC)
            mujoco.mj_kinematics(m, d)
            if self._compliant:  # state() reads the tool's velocity from cvel
                mujoco.mj_comPos(m, d)
                mujoco.mj_comVel(m, d)
            problem = find_tunnel(self._guard, pos0, rot0, d.xpos[self._body], d.xmat[self._body].reshape(3, 3))
            if problem is None:
                error, problem = SimulationDiverged, leaves_workspace(self.scene, d.xpos[self._body])
        if problem is not None:
            self._restore()
            raise error(f"MujocoWorld: control step {self.steps} since reset diverged: {problem}; "
                        "the world is left as it was before the step")
        self.steps += 1
        self._delay.commit(issued)
        return self._summarise(states, sensors, segments, mode)

    def _rollout(self, segments: list[tuple[int, Issued]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Run the control period's sub-steps from ``data``, sub-step ``j`` with the inputs of the last segment
        starting at or before ``j`` (``segments``: ``[(first sub-step, inputs)]``, see
        :class:`~contactkit.mujoco.realcell.CommandDelay`): ``(n, nstate)`` states, ``(n, nsensordata)`` sensor
        values and MuJoCo's warning messages (collected, not printed or logged)."""
        m, d = self.model, self.data
        self._start = np.concatenate([d.qpos[0:7], d.qvel[0:6]])
        mujoco.mj_getState(m, d, self._state_buf, STATE_SPEC)
        n = self.params.n_substeps
        control = np.empty((1, n, self._ctrl_buf.size))
        for first, issued in segments:
            control[0, first:] = issued.control
        states = np.empty((1, n, self._state_buf.size))
        sensors = np.empty((1, n, m.nsensordata))
        clear_warnings(d)
        with captured_warnings() as warnings:
            rollout.rollout([m], [d], self._state_buf[None], control, control_spec=int(CONTROL_SPEC), nstep=n,
                            skip_checks=True, state=states, sensordata=sensors)
        return states[0], sensors[0], warnings

    def _restore(self) -> None:
        """Put ``data`` back as it was before the failed step (saved in ``self._backup``)."""
        m, d = self.model, self.data
        mujoco.mj_setState(m, d, self._backup, BACKUP_SPEC)
        clear_warnings(d)
        mujoco.mj_forward(m, d)

    def _summarise(self, states: np.ndarray, sensors: np.ndarray, segments: list[tuple[int, Issued]],
                   mode: ActionMode) -> StepResult:
        """Mean F/T reading (filtered, biased, noisy as the world says) and mean applied wrench over the sub-steps
        (see :mod:`contactkit.mujoco.substeps`), each segment of inputs with its own targets and feedforward."""
        n, nq = states.shape[0], self.model.nq
        if self._compliant:  # the kernel reads time, the driven body's qpos (7) and qvel (6): drop the joints'
            states = np.concatenate([states[:, :1 + 7], states[:, 1 + nq:1 + nq + 6]], axis=1)
        rows = np.empty((n, 6))
        reading, applied = np.zeros(6), np.zeros(6)
        pose_mode, clipped = mode in POSE_MODES, 0
        tcp = self.scene.controller.tcp_offset
        bounds = [first for first, _ in segments] + [n]
        for (first, issued), end in zip(segments, bounds[1:], strict=True):
            start = self._start if first == 0 else states[first - 1, self._qpos_at:self._qpos_at + 13]
            seg_reading, seg_applied, seg_clipped = summarise_substeps(
                states[first:end], sensors[first:end], self._qpos_at, start, issued.target_pos, issued.target_quat,
                self._act_stiffness, self._act_damping, self._act_limits, self.params.integrator != "Euler",
                pose_mode, self._sensor_pos, self._sensor_rot, issued.feedforward, rows[first:end], self._compliant,
                tcp)
            clipped |= seg_clipped
            if len(segments) == 1:
                reading, applied = seg_reading, seg_applied
            else:
                reading += seg_reading * ((end - first) / n)
                applied += seg_applied * ((end - first) / n)
        if self._filter_alpha:
            reading = low_pass(rows, self._filtered, self._filter_alpha)
        reading = reading + np.asarray(self.params.ft_bias)
        if any(self.params.ft_noise_std):
            reading = reading + self.rng.normal(0.0, self.params.ft_noise_std)
        wrench_clipped = {name for bit, name in ((CLIP_FORCE, "max_force"), (CLIP_TORQUE, "max_torque"))
                          if clipped & bit}
        return StepResult(self.state(), reading, applied, self._clipped | wrench_clipped)

    def _tcp(self) -> np.ndarray:
        """World position ``(3,)`` [m] of the driven body's tool centre point (where the controller's spring acts)."""
        d = self.data
        return tcp_position(d.qpos[0:3].copy(), d.qpos[3:7] / np.linalg.norm(d.qpos[3:7]), self.scene.controller)

    # ---- hidden state -----------------------------------------------------------------------------
    def snapshot(self) -> WorldSnapshot:
        """Everything the next :meth:`step` depends on besides its command: MuJoCo's integration state (tool,
        flange and compliance joints, targets, warm start), the commands still delayed by the latency, the
        sensor filter's state and the step count. Restored by :meth:`restore` (here or in a world of the same
        scene and physics)."""
        buf = np.empty(mujoco.mj_stateSize(self.model, BACKUP_SPEC))
        mujoco.mj_getState(self.model, self.data, buf, BACKUP_SPEC)
        return WorldSnapshot(buf, tuple(self._delay._issued), self._filtered.copy(), self.steps)

    def restore(self, snapshot: WorldSnapshot) -> None:
        """Continue from ``snapshot`` (:meth:`snapshot`) of this world or of one with the same MuJoCo model.

        Raises:
            InvalidInputError: a snapshot of a world with another state layout.
        """
        if snapshot.physics.shape != self._backup.shape:
            raise InvalidInputError(f"MujocoWorld.restore: a snapshot of {snapshot.physics.size} state values does "
                                    f"not fit this world's {self._backup.size} (another scene or physics)")
        mujoco.mj_setState(self.model, self.data, snapshot.physics, BACKUP_SPEC)
        clear_warnings(self.data)
        mujoco.mj_forward(self.model, self.data)
        self._delay._issued = list(snapshot.issued)
        self._filtered[:] = snapshot.filtered
        self.steps = snapshot.steps
