"""The engine world: a :class:`~contactkit.scene.Scene` stepped by contactkit's own rigid contact engine.

It mirrors :class:`contactkit.mujoco.world.MujocoWorld` — ``reset``, ``set_state``, ``state``,
``step(command, mode) -> StepResult`` with the same :class:`~contactkit.control.impedance.ActionMode`
actions, the same impedance law (gains, limits, gravity compensation, damping from the nominal mass), the
same F/T convention (contact wrench on the tool, sensor frame, torque about the sensor origin, mean over
the control period, bias and noise of :class:`~contactkit.physics.WorldParams`) — so the dataset writer,
policies and tasks take either. Physics: velocity-level rigid contact with the Signorini condition and
Coulomb friction (tight-tolerance paper eqs 1–3; box friction of the pushing paper, eqs 5–8, on request), node
contacts from the scene's convex pieces (for a static with a ``depth_model``: from its learned depth network
inside the network's domain, :mod:`contactkit.engine.depth_contacts`), warm-started matrix-free solvers, position
projection. A control period is
``ceil(control_dt / EngineParams.max_step)`` engine steps; each reads
collide → build problem → solve → sense → integrate (:func:`contactkit.engine._kernels_step.advance`).
The period runs in numba because measurement demanded it: one COAL contact query
(:func:`contactkit.collision.contacts`) of a 50 mm peg in a 128-sided hole costs 10–100 ms, and a step
written with numpy calls some 100 µs of Python overhead alone; the compiled period costs 0.4–1 ms in all
(``contactkit benchmark tight-insertion``).
"""

from __future__ import annotations

import math

import numpy as np

from contactkit.collision import CollisionWorld, Contacts
from contactkit.collision.tunnelling import TunnelGuard, find_tunnel
from contactkit.collision.workspace import leaves_workspace
from contactkit.control.impedance import GRAVITY, POSE_MODES, damping_gains
from contactkit.control.stability import check_timestep
from contactkit.engine._kernels_check import deepest_contact
from contactkit.engine._kernels_contacts import KEY_SHIFT
from contactkit.engine._kernels_dynamics import BodyModel, Control, body_state, pose_command_target
from contactkit.engine._kernels_geometry import contact_geometry, raw_capacity
from contactkit.engine._kernels_pairs import PairCache, pair_cache
from contactkit.engine._kernels_step import (
    INTEGRATOR_EULER,
    INTEGRATOR_MIDPOINT,
    SOLVER_BOX,
    SOLVER_CONE,
    STAT_FORCE_CLIPPED,
    STAT_NONFINITE,
    STAT_TORQUE_CLIPPED,
    Buffers,
    Settings,
    advance,
)
from contactkit.engine.depth_contacts import depth_set, piece_networks, scene_depth_nets
from contactkit.engine.layout import (
    NORMAL_COLS,
    POINT_COLS,
    ROW_DISTANCE,
    ROW_FRICTION,
    ROW_WIDTH,
    STATE_COM,
    STATE_OMEGA,
    STATE_QUAT,
    STATE_SIZE,
    STATE_VEL,
)
from contactkit.engine.params import EngineParams, Integrator, SolverKind
from contactkit.engine.sensing import add_sensor_errors
from contactkit.errors import InvalidInputError, SimulationDiverged, ToolTunnelled
from contactkit.model import ActionMode, StepResult
from contactkit.physics import WorldParams
from contactkit.rotations import cross, quat_to_mat
from contactkit.rotations.numba import quat_to_mat as quat_to_mat_nb
from contactkit.scene import Scene
from contactkit.state import BodyState

STATS = ("contacts", "raw_contacts", "sweeps", "max_sweeps", "unconverged_steps", "min_distance", "corrected_steps",
         "force_clipped_steps", "torque_clipped_steps")
"""Names of :attr:`EngineWorld.stats` (last control period): contacts of its last step, most contacts found
before reduction, solver sweeps in all, most sweeps of one step, steps whose solve hit the iteration cap,
smallest contact gap seen at the start of a step [m] (inf without contacts), steps that projected positions,
steps whose impedance force (torque) was clipped to ``max_force`` (``max_torque``)."""
DIVERGED_MAGNITUDE = 1e10
"""A state component (position [m], quaternion, velocity [m/s, rad/s]) beyond this is diverged: MuJoCo's ``mjMAXVAL``,
above which MuJoCo flags a bad position or velocity (:mod:`contactkit.mujoco.diverged`)."""
MAX_PENETRATION = 2e-4
"""Deepest penetration [m] of the tool into a static the engine accepts at the end of a control step, measured on the
convex pieces' geometry (every vertex and edge of each piece against the other's pieces, :meth:`EngineWorld.step`).
The contacts keep it near ``EngineParams.correction_slop`` (1 µm); beyond this a contact was missed, and the step is
refused (:class:`~contactkit.errors.ToolTunnelled`)."""
FEATURES = ("tool vertex {f}", "static vertex {f}", "tool node {f}", "static edge {f}", "static edge {f}",
            "tool edge {f}", "tool edge {f}")
"""How a penetration message names a contact's feature, by the key's source (:mod:`._kernels_edges`)."""
STEP_FAILURES = (np.linalg.LinAlgError, ArithmeticError)
"""Exceptions from inside an engine step (a singular effective mass, an overflow, a division by zero) that mean the
step diverged: :meth:`EngineWorld.step` turns them into :class:`~contactkit.errors.SimulationDiverged` and keeps
the state it had before the step."""


def _body_model(scene: Scene, params: WorldParams, reach: float) -> BodyModel:
    """The tool's :class:`BodyModel`: mass properties (scaled or overridden), armature, gravity, damping, and the
    real (mounted) sensor frame."""
    tool = scene.tool
    mass, inertia = params.tool_mass_properties(tool.mass, tool.inertia)
    with_armature = inertia + params.wrist_armature * np.eye(3)
    sensor_pos, sensor_quat = params.sensor_frame(tool.sensor_pos, tool.sensor_quat)
    return BodyModel(
        mass=mass,
        inertia=with_armature,
        inertia_inv=np.linalg.inv(with_armature),
        gyro_inertia=inertia,
        com_local=tool.com.copy(),
        sensor_pos=sensor_pos,
        sensor_rot=quat_to_mat(sensor_quat),
        gravity=np.array([0.0, 0.0, -GRAVITY if params.gravity else 0.0]),
        linear_damping=float(params.linear_damping),
        angular_damping=float(params.angular_damping),
        reach=float(reach),
    )


def _settings(engine: EngineParams, params: WorldParams) -> Settings:
    n, h = engine.steps_per_control(params.control_dt, params.timestep)
    return Settings(
        n_steps=int(n), h=float(h),
        solver=SOLVER_BOX if engine.solver is SolverKind.BOX_PGS else SOLVER_CONE,
        integrator=INTEGRATOR_EULER if engine.integrator is Integrator.SEMI_IMPLICIT_EULER else INTEGRATOR_MIDPOINT,
        max_iterations=int(engine.max_iterations), tolerance=float(engine.tolerance),
        relaxation=float(engine.relaxation), margin=float(engine.contact_margin),
        speculative_factor=float(engine.speculative_factor), max_margin=float(engine.max_margin),
        max_contacts=int(engine.max_contacts), cos_cluster=float(math.cos(engine.cluster_angle)),
        per_cluster=int(engine.points_per_cluster), correction_fraction=float(engine.correction_fraction),
        correction_slop=float(engine.correction_slop), correction_iterations=int(engine.correction_iterations),
        friction_scale=float(params.friction_scale), warm_start=bool(engine.warm_start),
    )


def _buffers(geometry, max_contacts: int) -> Buffers:
    k = max_contacts
    pairs = pair_cache(len(geometry.env.info), len(geometry.tool.info))
    return Buffers(
        cache_tool=np.full((len(geometry.tool_verts), len(geometry.env.info)), -1, np.int64),
        cache_env=np.full((len(geometry.env_verts), len(geometry.tool.info)), -1, np.int64),
        raw=np.zeros((raw_capacity(geometry), ROW_WIDTH)), contacts=np.zeros((k, ROW_WIDTH)), impulses=np.zeros((k, 3)),
        frames=np.zeros((k, 3, 3)), jac=np.zeros((k, 3, 6)), m_inv_jt=np.zeros((k, 3, 6)),
        blocks=np.zeros((k, 3, 3)), bias=np.zeros(k), mu=np.zeros(k), prev_keys=np.zeros(k),
        prev_impulses=np.zeros((k, 3)), counts=np.zeros(2, np.int64), stats=np.zeros(len(STATS) + 1),
        cache_env_edges=np.full((len(geometry.edges.env), len(geometry.tool.info)), -1, np.int64),
        cache_tool_edges=np.full((len(geometry.edges.tool), len(geometry.env.info)), -1, np.int64),
        cache_pairs=pairs.plane, pair_gaps=pairs.gap, pair_motion=pairs.motion,
    )


class EngineWorld:
    """The contactkit engine simulating ``scene`` under ``params`` (module docstring).

    Args:
        scene: the static description.
        params: shared physics parameters (control period, friction and mass scale or absolute mass and inertia,
            gravity, damping, armature, F/T noise, bias and sensor mount); MuJoCo-only fields are ignored. The
            engine does not model a real cell's command latency, compliance or sensor filter: a world with any of
            them is refused.
        rng: generator for F/T noise; required when ``params.ft_noise_std`` is non-zero.
        engine: engine-only settings (:class:`~contactkit.engine.params.EngineParams`).

    Attributes:
        limits: the command limits :meth:`step` enforces (:attr:`contactkit.scene.Scene.limits`).
        steps: control steps taken since the last :meth:`reset` (the index an error of :meth:`step` names).

    Raises:
        InvalidInputError: not a Scene, F/T noise without ``rng``, a world with
            :meth:`~contactkit.physics.WorldParams.unmodelled_effects`, or a ``params.timestep`` with which the scene's
            impedance controller cannot be stable (:func:`contactkit.control.stability.check_timestep`: the
            same check as :class:`~contactkit.mujoco.world.MujocoWorld`'s, so both refuse the same pairs, even
            when ``EngineParams.max_step`` makes the engine's own step shorter).
    """

    def __init__(self, scene: Scene, params: WorldParams | None = None, rng: np.random.Generator | None = None,
                 engine: EngineParams | None = None):
        if not isinstance(scene, Scene):
            raise InvalidInputError(f"EngineWorld needs a Scene, got {type(scene).__name__}")
        self.scene = scene
        self.params = params or WorldParams()
        self.engine = engine or EngineParams()
        self.rng = rng
        if any(self.params.ft_noise_std) and rng is None:
            raise InvalidInputError("this world adds F/T noise: pass rng=np.random.default_rng(seed)")
        effects = self.params.unmodelled_effects()
        if effects:
            raise InvalidInputError(f"engine world does not model {', '.join(effects)}: use the MuJoCo world "
                                    "(--backend mujoco) or a world without them (e.g. target-parametric)")
        check_timestep(scene, self.params, "EngineWorld")
        self.limits = scene.limits
        self._guard = TunnelGuard.of(scene)
        nets = scene_depth_nets(scene)
        collision = CollisionWorld(scene)
        self._env_body, self._env_piece = collision.env_body, collision.env_piece
        self.geometry = contact_geometry(collision, self.engine.max_margin,
                                         depth_set(scene, nets, len(collision.env_pieces)),
                                         piece_networks(nets, collision.env_body))
        self.settings = _settings(self.engine, self.params)
        self.n_steps, self.step_dt = self.settings.n_steps, self.settings.h
        tool = scene.tool
        nodes = np.concatenate([self.geometry.tool_verts, self.geometry.depth.nodes])
        reach = float(np.linalg.norm(nodes - tool.com, axis=1).max())
        self.body = _body_model(scene, self.params, reach)
        c = scene.controller
        d_pos, d_rot = damping_gains(c, tool.mass, np.linalg.eigvalsh(tool.inertia))
        self._template = Control(
            pose_mode=False, target_pos=np.zeros(3), target_quat=np.array([1.0, 0.0, 0.0, 0.0]),
            stiffness_pos=np.asarray(c.stiffness_pos, dtype=np.float64),
            stiffness_rot=np.asarray(c.stiffness_rot, dtype=np.float64),
            damping_pos=np.asarray(d_pos, dtype=np.float64), damping_rot=np.asarray(d_rot, dtype=np.float64),
            max_force=float(c.max_force), max_torque=float(c.max_torque),
            weight=float(tool.mass * GRAVITY) if (c.gravity_compensation and self.params.gravity) else 0.0,
            command=np.zeros(6), tcp=np.asarray(c.tcp_offset, dtype=np.float64), has_tcp=c.has_tcp,
        )
        self._buffers = _buffers(self.geometry, self.engine.max_contacts)
        self._state = np.zeros(STATE_SIZE)
        self._reading, self._applied = np.zeros(6), np.zeros(6)
        self.reset()

    # ---- state ------------------------------------------------------------------------------------
    def reset(self, state: BodyState | None = None) -> BodyState:
        """Reset to ``state`` (default: the scene's initial pose at rest) and return it."""
        tool = self.scene.tool
        self.set_state(state if state is not None else BodyState.at_rest(tool.init_pos, tool.init_quat))
        self.steps = 0
        return self.state()

    def set_state(self, state: BodyState) -> None:
        """Place the tool at an unbatched ``state`` (world frame); the solver's warm start is cleared.

        Raises:
            InvalidInputError: NaN/Inf, a non-unit quaternion, a batch, or a pose that penetrates the
                environment deeper than ``EngineParams.max_initial_penetration`` (shallower penetration is
                projected out by the next step, without adding velocity).
        """
        state.validated("EngineWorld.set_state")
        if state.batch_shape != ():
            raise InvalidInputError(f"EngineWorld holds one tool; got batch shape {state.batch_shape}")
        quat = np.asarray(state.quat, dtype=np.float64) / np.linalg.norm(state.quat)
        rot = quat_to_mat(quat)
        depth = -self._min_distance(rot, np.asarray(state.pos, dtype=np.float64))
        if depth > self.engine.max_initial_penetration:
            raise InvalidInputError(
                f"the tool starts {depth:.6g} m deep in the environment (more than "
                f"max_initial_penetration = {self.engine.max_initial_penetration:g} m): move it out first"
            )
        com_offset = rot @ self.scene.tool.com
        omega = np.asarray(state.ang_vel, dtype=np.float64)
        self._state[STATE_COM] = np.asarray(state.pos, dtype=np.float64) + com_offset
        self._state[STATE_QUAT] = quat
        self._state[STATE_VEL] = np.asarray(state.lin_vel, dtype=np.float64) + cross(omega, com_offset)
        self._state[STATE_OMEGA] = rot.T @ omega
        self._buffers.counts[:] = 0

    def _min_distance(self, rot: np.ndarray, pos: np.ndarray) -> float:
        """Smallest gap [m] of the tool at a pose (``inf`` when nothing touches): its vertices and nodes, and every
        edge of the pieces (:mod:`contactkit.engine._kernels_edges`)."""
        return self._deepest(rot, pos)[0]

    def _deepest(self, rot: np.ndarray, pos: np.ndarray) -> tuple[float, float]:
        """The smallest gap [m] of :meth:`_min_distance` and its contact's key (``(inf, -1)`` when none)."""
        b = self._buffers
        d, key = deepest_contact(self.geometry, rot, pos, pos + rot @ self.scene.tool.com, b.cache_tool, b.cache_env,
                                 b.cache_env_edges, b.cache_tool_edges,
                                 PairCache(b.cache_pairs, b.pair_gaps, b.pair_motion), b.raw)
        return float(d), float(key)

    def _penetration(self, pos: np.ndarray, rot: np.ndarray) -> str | None:
        """Why the pose at the end of a step cannot be trusted: the tool deeper than :data:`MAX_PENETRATION` in a
        static (naming the feature and the piece), or None."""
        d, key = self._deepest(rot, pos)
        if -d <= MAX_PENETRATION:
            return None
        source, feature, piece = int(key) // KEY_SHIFT**2, int(key) // KEY_SHIFT % KEY_SHIFT, int(key) % KEY_SHIFT
        what = FEATURES[source].format(f=feature) if source < len(FEATURES) else f"feature {int(key)}"
        if source in (1, 3, 4):  # a static's feature against tool piece `piece`: name the static's piece
            env = self.geometry.edges.env_piece[feature] if source != 1 else None
            where = f"tool piece {piece}" if env is None else f"tool piece {piece} ({self._piece_label(int(env))})"
        else:
            where = self._piece_label(piece) if source != 2 else "a static's depth network"
        return (f"the tool is {-d * 1e3:.3g} mm inside a static ({what} against {where}), deeper than "
                f"MAX_PENETRATION = {MAX_PENETRATION * 1e3:g} mm: a contact was missed")

    def _piece_label(self, e: int) -> str:
        """``static b 'name' piece i`` of environment piece ``e``."""
        b, i = int(self._env_body[e]), int(self._env_piece[e])
        return f"static {b} '{self.scene.statics[b].part.name}' piece {i}"

    def state(self) -> BodyState:
        """Current tool state (world frame; the origin's velocity and the world angular velocity)."""
        return BodyState(*body_state(self._state, self.body.com_local))

    # ---- stepping ---------------------------------------------------------------------------------
    def _control(self, command: np.ndarray, mode: ActionMode) -> tuple[Control, frozenset[str]]:
        """The kernel's :class:`Control` of one period: the TCP's impedance target of a pose command (the rule of
        :func:`contactkit.control.impedance.command_target`), or the commanded wrench; and the step limits that
        bound (``max_pos_step``, ``max_rot_step``)."""
        c = self.scene.controller
        if mode in POSE_MODES:
            target_pos, target_quat, pos_clipped, rot_clipped = pose_command_target(
                self._state, self.body.com_local, command, mode is ActionMode.POSE_TARGET, self._template.tcp,
                self._template.has_tcp, float(c.max_pos_step), float(c.max_rot_step))
            clipped = frozenset(n for n, hit in (("max_pos_step", pos_clipped), ("max_rot_step", rot_clipped)) if hit)
            return self._template._replace(pose_mode=True, target_pos=target_pos, target_quat=target_quat), clipped
        return self._template._replace(pose_mode=False, command=command), frozenset()

    def step(self, command, mode: ActionMode) -> StepResult:
        """Advance one control step (``control_dt = timestep · n_substeps`` of simulated time).

        Args:
            command: ``(6,)`` action: a world wrench about the tool origin (``WRENCH``, added to the gravity
                compensation), a pose-target displacement (``POSE_DELTA``) or an absolute target of the tool centre
                point (``POSE_TARGET``), see :func:`contactkit.control.impedance.command_target`.
            mode: how to read ``command``.

        Returns:
            :class:`~contactkit.mujoco.world.StepResult`: new state, mean F/T reading (sensor frame),
            mean applied wrench (world, about the tool origin), the controller limits that bound (``clipped``).

        Raises:
            InvalidInputError: a command that is not 6 finite numbers or exceeds the scene's command limits
                (:attr:`contactkit.scene.Scene.limits`), or an unknown mode.
            SimulationDiverged: the step produced a non-finite state or one beyond :data:`DIVERGED_MAGNITUDE`, or
                failed inside the engine (:data:`STEP_FAILURES`: a singular matrix, an overflow);
                the tool origin left the scene's workspace by more than
                :data:`~contactkit.collision.workspace.WORKSPACE_MARGIN_M`;
                :class:`~contactkit.errors.ToolTunnelled`: the tool passed through a static body
                (:mod:`contactkit.collision.tunnelling`), or ends the step deeper than :data:`MAX_PENETRATION`
                in one, measured on every vertex and edge of the convex pieces (a missed contact). Either way the
                state is left as it was before the step.
        """
        command = np.asarray(command, dtype=np.float64)
        if command.shape != (6,) or not np.all(np.isfinite(command)):
            raise InvalidInputError(f"action must be 6 finite numbers, got {command!r}")
        try:
            mode = ActionMode(mode)
        except ValueError:
            raise InvalidInputError(f"unknown action mode {mode!r}; valid: {[m.value for m in ActionMode]}") from None
        origin, rot = self._origin_pose(self._state)
        tcp = origin + rot @ self.scene.controller.tcp_offset if self.scene.controller.has_tcp else origin
        self.limits.check(command, mode, "EngineWorld.step", tcp)
        control, clipped = self._control(command, mode)
        before = self._state.copy()
        try:
            advance(self.geometry, self.body, control, self.settings, self._buffers, self._state, self._reading,
                    self._applied)
            problem, error = self._divergence(), SimulationDiverged
        except STEP_FAILURES as exc:  # a singular or overflowing solve: the step's result cannot be trusted
            problem, error = f"the step failed inside the engine ({type(exc).__name__}: {exc})", SimulationDiverged
        if problem is None:
            error = ToolTunnelled
            problem = find_tunnel(self._guard, *self._origin_pose(before), *self._origin_pose(self._state))
            problem = problem or self._penetration(*self._origin_pose(self._state))
        if problem is None:
            error, problem = SimulationDiverged, leaves_workspace(self.scene, self._origin_pose(self._state)[0])
        if problem is not None:
            self._state[:] = before
            self._buffers.counts[:] = 0
            raise error(f"EngineWorld: control step {self.steps} since reset diverged: {problem}; "
                        "the world is left as it was before the step")
        self.steps += 1
        reading = add_sensor_errors(self._reading, self.params.ft_bias, self.params.ft_noise_std, self.rng)
        stats = self._buffers.stats
        clipped |= {n for n, i in (("max_force", STAT_FORCE_CLIPPED), ("max_torque", STAT_TORQUE_CLIPPED)) if stats[i]}
        return StepResult(self.state(), reading, self._applied.copy(), frozenset(clipped))

    def _divergence(self) -> str | None:
        """Why the state after a step cannot be trusted (non-finite, or beyond :data:`DIVERGED_MAGNITUDE`), or None."""
        if self._buffers.stats[STAT_NONFINITE] or not np.all(np.isfinite(self._state)):
            return "the state became non-finite (NaN or Inf)"
        worst = float(np.abs(self._state).max())
        if worst > DIVERGED_MAGNITUDE:
            return f"a state component reached {worst:.3g} (beyond {DIVERGED_MAGNITUDE:g}, MuJoCo's bad-value bound)"
        return None

    def _origin_pose(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tool-frame origin ``(3,)`` [m] and rotation ``(3, 3)`` of a ``(13,)`` engine state (centre of mass first)."""
        quat = state[STATE_QUAT]
        rot = quat_to_mat_nb(quat / np.linalg.norm(quat))  # numba: 0.5 µs, numpy's 20 µs
        return state[STATE_COM] - rot @ self.body.com_local, rot

    # ---- inspection -------------------------------------------------------------------------------
    @property
    def stats(self) -> dict[str, float]:
        """Solver and contact statistics of the last control period (see :data:`STATS`)."""
        return {name: float(self._buffers.stats[i]) for i, name in enumerate(STATS)}

    def contacts(self) -> tuple[Contacts, np.ndarray]:
        """The last engine step's contacts (engine form, at the start of that step) and their impulses
        ``(K, 3)`` [N·s] in the contact frames ``[n; t1; t2]`` of :func:`contactkit.collision.contact_frames`."""
        b = self._buffers
        k = int(b.counts[1])
        rows = b.contacts[:k]
        contacts = Contacts(rows[:, POINT_COLS].copy(), rows[:, NORMAL_COLS].copy(), rows[:, ROW_DISTANCE].copy(),
                            rows[:, ROW_FRICTION] * self.params.friction_scale)
        return contacts, b.impulses[:k].copy()
