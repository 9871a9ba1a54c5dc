"""MuJoCo on the tight-tolerance parts: the open-simulator baseline of the data-driven simulation paper (§V-D,
Fig. 12; issue 17 part 4).

The static part and the tool become MuJoCo mesh geoms, one per convex piece: a part that already carries exact
convex pieces (the paper's peg and its 640-gon hole, :mod:`contactkit.geometry.assembly_parts`) keeps them; a part
without (the threaded bolt and nut, :mod:`contactkit.geometry.fasteners`) is decomposed by CoACD
(:func:`contactkit.geometry.decompose.decompose`, cached on disk under ``settings.cache_dir``). The tool is a free
body with the task's mass properties; gravity is off (§V-A). The tool is driven by the same virtual coupling as the
reference data (:mod:`contactkit.assembly.coupling`): its wrench is re-evaluated from the MuJoCo state at every
MuJoCo sub-step and applied at the COM through ``xfrc_applied``.

The contact wrench of a 10 ms step (``SIM_DT``) is the mean over its sub-steps of the sum of the contact forces on
the tool (``efc_force`` of each contact, rotated from the contact frame to the world), with torques about the tool's
COM at the start of the step: the quantity the reference data store as ``wrench[t]``.

Two settings (:data:`DEFAULTS`, :data:`FASTEST`): MuJoCo's default contact parameters at the project's 2 ms step
(the tight-insertion benchmark's ``mujoco-default`` row), and the fastest setting of that benchmark's sweep that met
its 10 µm penetration bound (``docs/results/tight-insertion.json``, ``mujoco_fastest_within_10um``).

Measured (CoACD at the default threshold 0.02, niced on the shared 2-core machine): the M48 nut 227 pieces in
146 s, sticking out of the nut by up to 0.73 mm; the bolt 76 pieces in 1039 s, 0.45 mm (the nut at 0.01: 490 pieces,
748 s, 0.39 mm). Every setting tried sticks out by more than the fit's 0.2 mm radial play, so the pieces overlap at
the nominal screwed pose (3,112 contacts): the paper's point that open simulators cannot represent this fit. At
that pose DEFAULTS takes ~0.4 s per 10 ms step and FASTEST ~40 s (and needs the large arena, :attr:`memory_mb`).
The peg and hole use their exact pieces (641 for the hole), ~0.05 s (DEFAULTS) and ~0.35 s (FASTEST) per step.

A run MuJoCo cannot trust (a reset after a NaN/huge acceleration, dropped contacts) is never reported as a number:
its wrench is NaN and :attr:`MujocoStep.failure` says why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np

from contactkit.assembly.task import SIM_DT, AssemblyTask
from contactkit.errors import InvalidInputError
from contactkit.geometry.decompose import DEFAULT_CACHE_DIR, DecompositionReport, DecompositionSettings, decompose
from contactkit.geometry.part import Part
from contactkit.mujoco.diverged import captured_warnings, clear_warnings, divergence
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

TOOL_BODY = "tool"
"""Name of the tool's free body in the generated model."""
STEP_DT_TOL = 1e-9
"""[s] ``SIM_DT`` must be a whole number of MuJoCo time steps to within this."""


@dataclass(frozen=True)
class MujocoSettings:
    """MuJoCo's physics settings for the baseline.

    Attributes:
        name: label in results. timestep: MuJoCo's step [s]; ``SIM_DT / timestep`` must be a whole number.
        solref: ``(timeconst [s], dampratio)``; solimp: ``(dmin, dmax, width [m], midpoint, power)``.
        cone: ``"elliptic"`` or ``"pyramidal"``; impratio: frictional-to-normal impedance ratio.
        noslip_iterations: MuJoCo's no-slip post-solver iterations (0: off).
        integrator: MuJoCo's integrator name.
        decomposition: CoACD settings for a part without convex pieces.
        cache_dir: where CoACD decompositions are cached (None: not cached).
        memory_mb: MuJoCo's arena [MiB] (``<size memory>``): the nut on its CoACD bolt makes ~3,000 contacts,
            whose dense constraint matrices need hundreds of MiB; too little ends a step with CNSTRFULL (NaN).
    """

    name: str
    timestep: float = 0.002
    solref: tuple[float, float] = (0.02, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.9, 0.95, 0.001, 0.5, 2.0)
    cone: str = "elliptic"
    impratio: float = 1.0
    noslip_iterations: int = 0
    integrator: str = "implicitfast"
    decomposition: DecompositionSettings = field(default_factory=DecompositionSettings)
    cache_dir: Path | None = DEFAULT_CACHE_DIR
    memory_mb: int = 1024

    def __post_init__(self):
        if not (np.isfinite(self.timestep) and 0.0 < self.timestep <= SIM_DT):
            raise InvalidInputError(f"MujocoSettings.timestep must be in (0, {SIM_DT}] s, got {self.timestep!r}")
        n = SIM_DT / self.timestep
        if abs(round(n) * self.timestep - SIM_DT) > STEP_DT_TOL:
            raise InvalidInputError(f"MujocoSettings.timestep {self.timestep!r} s does not divide SIM_DT = {SIM_DT} s")
        if self.cone not in ("elliptic", "pyramidal"):
            raise InvalidInputError(f"MujocoSettings.cone must be 'elliptic' or 'pyramidal', got {self.cone!r}")
        if len(self.solref) != 2 or len(self.solimp) != 5:
            raise InvalidInputError(f"MujocoSettings: solref needs 2 and solimp 5 values, got {self.solref!r}, "
                                    f"{self.solimp!r}")

    @property
    def n_substeps(self) -> int:
        """MuJoCo steps per 10 ms simulation step."""
        return int(round(SIM_DT / self.timestep))

    def to_dict(self) -> dict:
        """JSON-compatible form."""
        return {"name": self.name, "timestep": self.timestep, "n_substeps": self.n_substeps,
                "solref": list(self.solref), "solimp": list(self.solimp), "cone": self.cone,
                "impratio": self.impratio, "noslip_iterations": self.noslip_iterations,
                "integrator": self.integrator, "memory_mb": self.memory_mb,
                "decomposition": self.decomposition.to_dict()}


DEFAULTS = MujocoSettings("mujoco-default")
"""MuJoCo's default contact parameters (solref, solimp, impratio) at a 2 ms step, elliptic cone, implicitfast
(the tight-insertion benchmark's ``mujoco-default`` row)."""
FASTEST = MujocoSettings("mujoco-fastest", timestep=0.0005, solref=(0.001, 1.0),
                         solimp=(0.99, 0.999, 0.001, 0.5, 2.0), noslip_iterations=10)
"""The fastest MuJoCo setting of the tight-insertion benchmark's sweep that met its 10 µm penetration bound
(``docs/results/tight-insertion.json``: ``mujoco_fastest_within_10um``)."""


@dataclass(frozen=True, eq=False)
class MujocoModel:
    """A compiled MuJoCo model of one (task, settings) and its reusable data.

    Attributes:
        model, data: MuJoCo's ``MjModel`` and one ``MjData`` (mutable; not shared between threads).
        tool_body: the tool's body id. tool_geoms: ``(G,)`` bool, which geoms are the tool's.
        reports: ``{"tool": report | None, "static": report | None}`` of the CoACD decompositions run (None: the
            part's own exact pieces were used). build_s: wall time of decomposition and compilation [s].
    """

    model: mujoco.MjModel
    data: mujoco.MjData
    tool_body: int
    tool_geoms: np.ndarray
    reports: dict
    build_s: float


@dataclass(frozen=True)
class MujocoStep:
    """One 10 ms step of the baseline.

    Attributes:
        state: the tool's state at the end of the step (NaN if ``failure``).
        wrench: ``(6,)`` mean contact wrench over the sub-steps, world, torque about the COM at the start of the
            step [N, N·m] (NaN if ``failure``).
        applied: ``(6,)`` mean coupling wrench, same frame. n_contacts: most contacts in one sub-step.
        seconds: wall time of the step [s]. failure: why MuJoCo's result cannot be trusted, or None.
    """

    state: BodyState
    wrench: np.ndarray
    applied: np.ndarray
    n_contacts: int
    seconds: float
    failure: str | None = None


@dataclass(frozen=True)
class MujocoTrajectory:
    """A complete simulation: ``states`` (T+1 BodyStates), ``wrenches`` ``(T, 6)`` (NaN rows after a failure),
    ``failure`` (the first reason, or None) and ``seconds`` ``(T,)`` per step. Unpacks as ``(states, wrenches)``."""

    states: list[BodyState]
    wrenches: np.ndarray
    failure: str | None
    seconds: np.ndarray

    def __iter__(self):
        return iter((self.states, self.wrenches))


def _pieces(part: Part, settings: MujocoSettings) -> tuple[Part, DecompositionReport | None]:
    if part.pieces:
        return part, None
    return decompose(part, settings.decomposition, cache_dir=settings.cache_dir)


def _nums(a) -> str:
    return " ".join(repr(float(x)) for x in np.asarray(a, dtype=np.float64).reshape(-1))


def _mesh_xml(prefix: str, part: Part) -> tuple[list[str], list[str]]:
    assets, geoms = [], []
    for i, piece in enumerate(part.pieces):
        name = f"{prefix}{i}"
        faces = " ".join(str(int(x)) for x in np.asarray(piece.faces).reshape(-1))
        assets.append(f'<mesh name="{name}" vertex="{_nums(piece.vertices)}" face="{faces}"/>')
        geoms.append(f'<geom name="{name}" type="mesh" mesh="{name}"/>')
    return assets, geoms


def mjcf(task: AssemblyTask, tool: Part, static: Part, settings: MujocoSettings) -> str:
    """MJCF of the task: ``static``'s pieces fixed in the world, ``tool``'s on a free body (no gravity).

    Every geom gets the task's friction (condim 3) and the settings' solref/solimp; the tool's inertial is the
    task's (COM in the body frame, full inertia about it) and its body frame is the task's tool frame.
    """
    s_assets, s_geoms = _mesh_xml("static", static)
    t_assets, t_geoms = _mesh_xml("tool", tool)
    i = task.body.inertia_body
    full = [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]
    default = (f'<default><geom friction="{task.friction!r} 0 0" condim="3" solref="{_nums(settings.solref)}" '
               f'solimp="{_nums(settings.solimp)}"/></default>')
    return (f'<mujoco model="{task.kind.value}-{task.name}"><compiler angle="radian" inertiafromgeom="false"/>'
            f'<option timestep="{settings.timestep!r}" gravity="0 0 0" cone="{settings.cone}" '
            f'impratio="{settings.impratio!r}" integrator="{settings.integrator}" '
            f'noslip_iterations="{int(settings.noslip_iterations)}"/>'
            f'<size memory="{int(settings.memory_mb)}M"/>' + default
            + "<asset>" + "".join(s_assets + t_assets) + "</asset><worldbody>"
            + "".join(s_geoms) + f'<body name="{TOOL_BODY}"><freejoint/>'
            f'<inertial pos="{_nums(task.body.com_body)}" mass="{task.body.mass!r}" fullinertia="{_nums(full)}"/>'
            + "".join(t_geoms) + "</body></worldbody></mujoco>")


@lru_cache(maxsize=8)
def build_model(task: AssemblyTask, settings: MujocoSettings) -> MujocoModel:
    """The compiled model of ``(task, settings)``, built once and cached (CoACD for parts without pieces).

    Raises:
        contactkit.errors.GeometryError: CoACD cannot decompose a part.
    """
    start = time.perf_counter()
    tool, tool_report = _pieces(task.tool, settings)
    static, static_report = _pieces(task.static, settings)
    model = mujoco.MjModel.from_xml_string(mjcf(task, tool, static, settings))
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, TOOL_BODY)
    return MujocoModel(model, mujoco.MjData(model), body, np.asarray(model.geom_bodyid) == body,
                       {"tool": tool_report, "static": static_report}, time.perf_counter() - start)


def _set_state(m: MujocoModel, state: BodyState) -> None:
    d = m.data
    mujoco.mj_resetData(m.model, d)
    d.qpos[0:3], d.qpos[3:7] = state.pos, state.quat / np.linalg.norm(state.quat)
    d.qvel[0:3] = state.lin_vel
    d.qvel[3:6] = quat_to_mat(d.qpos[3:7]).T @ np.asarray(state.ang_vel, dtype=np.float64)  # body-frame ω
    mujoco.mj_forward(m.model, d)


def _get_state(m: MujocoModel) -> BodyState:
    d = m.data
    quat = d.qpos[3:7].copy()
    return BodyState(d.qpos[0:3].copy(), quat, d.qvel[0:3].copy(), quat_to_mat(quat) @ d.qvel[3:6])


def contact_wrench_on_tool(m: MujocoModel, about: np.ndarray) -> tuple[np.ndarray, int]:
    """Sum of the contact forces on the tool in MuJoCo's last step, world frame, torque about ``about`` (3,) [m].

    Each contact's force is ``mj_contactForce`` (contact frame: normal first; the force geom1 exerts on geom2),
    rotated to the world; its sign is flipped where the tool is geom1. Returns ``((6,) wrench, contacts)``.
    """
    d, model = m.data, m.model
    n = d.ncon
    wrench = np.zeros(6)
    if n == 0:
        return wrench, 0
    contacts = d.contact
    geoms = np.asarray(contacts.geom[:n])
    on1, on2 = m.tool_geoms[geoms[:, 0]], m.tool_geoms[geoms[:, 1]]
    f6 = np.zeros(6)
    forces = np.zeros((n, 3))
    for k in np.flatnonzero(on1 ^ on2):
        if contacts.efc_address[k] < 0:
            continue
        mujoco.mj_contactForce(model, d, int(k), f6)
        forces[k] = f6[:3] if on2[k] else -f6[:3]
    frames = np.asarray(contacts.frame[:n]).reshape(n, 3, 3)  # rows: normal, tangent 1, tangent 2 (world)
    world = np.einsum("nij,ni->nj", frames, forces)
    arms = np.asarray(contacts.pos[:n]) - about
    wrench[:3] = world.sum(axis=0)
    wrench[3:] = np.cross(arms, world).sum(axis=0)
    return wrench, int((on1 ^ on2).sum())


def _step(m: MujocoModel, task: AssemblyTask, setpoint_pos, setpoint_quat, gains, n_substeps: int
          ) -> tuple[np.ndarray, np.ndarray, int, str | None]:
    """``n_substeps`` MuJoCo steps from the data's current state under the coupling (re-evaluated every sub-step);
    returns (mean contact wrench, mean coupling wrench, most contacts, failure)."""
    from contactkit.assembly.coupling import coupling_wrench
    from contactkit.engine.reference import com_position

    d = m.data
    about = com_position(task.body, _get_state(m))
    contact, applied, most = np.zeros(6), np.zeros(6), 0
    times = np.empty(n_substeps)
    t0 = float(d.time)
    clear_warnings(d)
    with captured_warnings() as messages:
        for k in range(n_substeps):
            state = _get_state(m)
            w = coupling_wrench(task.body, state, setpoint_pos, setpoint_quat, gains)
            d.xfrc_applied[m.tool_body] = w
            mujoco.mj_step(m.model, d)
            times[k] = d.time
            f, n = contact_wrench_on_tool(m, about)
            c = com_position(task.body, state) - about  # the coupling acts at the sub-step's COM
            contact += f
            applied += np.concatenate([w[:3], w[3:] + np.cross(c, w[:3])])
            most = max(most, n)
    failure = divergence(d, times, t0, m.model.opt.timestep, messages)
    if failure is None and not np.all(np.isfinite(d.qpos)):
        failure = "non-finite state"
    return contact / n_substeps, applied / n_substeps, most, failure


def mujoco_step(task: AssemblyTask, state: BodyState, setpoint_pos, setpoint_quat, gains,
                settings: MujocoSettings = DEFAULTS) -> MujocoStep:
    """One 10 ms step of MuJoCo from ``state`` (its velocity included, warm start cleared) under the coupling.

    Args:
        task: the parts (:class:`AssemblyTask`). state: the tool's state (body frame; world velocities).
        setpoint_pos ``(3,)`` [m], setpoint_quat ``(4,)`` wxyz: the setpoint of the step (world).
        gains: :class:`contactkit.assembly.coupling.CouplingGains`. settings: :class:`MujocoSettings`.

    Returns:
        :class:`MujocoStep`: the end state and the mean contact wrench (world, about the COM at ``state``) —
        the quantity of the reference data's ``wrench[t]`` (issue 17, part 1) — NaN with a reason on failure.
    """
    m = build_model(task, settings)
    start = time.perf_counter()
    _set_state(m, state)
    wrench, applied, most, failure = _step(m, task, setpoint_pos, setpoint_quat, gains, settings.n_substeps)
    end = _get_state(m)
    if failure is not None:  # MuJoCo reset its state: neither the state nor the wrench is a result
        wrench = np.full(6, np.nan)
        end = BodyState.from_array(np.full(13, np.nan))
    return MujocoStep(end, wrench, applied, most, time.perf_counter() - start, failure)


def mujoco_one_step(task: AssemblyTask, state: BodyState, setpoint_pos, setpoint_quat, gains,
                    settings: MujocoSettings = DEFAULTS) -> np.ndarray:
    """``(6,)`` mean contact wrench of one 10 ms MuJoCo step (world, torque about the COM at ``state``)
    [N, N·m]; NaN where MuJoCo's result cannot be trusted (:func:`mujoco_step` gives the reason)."""
    return mujoco_step(task, state, setpoint_pos, setpoint_quat, gains, settings).wrench


def mujoco_simulate(task: AssemblyTask, initial: BodyState, setpoints_pos, setpoints_quat, gains,
                    settings: MujocoSettings = DEFAULTS, progress=None) -> MujocoTrajectory:
    """The complete MuJoCo simulation from ``initial`` under the setpoints, one 10 ms step each.

    Args:
        setpoints_pos: ``(T, 3)`` [m]; setpoints_quat: ``(T, 4)`` wxyz (world). progress: optional callable
            ``(t, T)`` after each step. Others as :func:`mujoco_step`; MuJoCo's state (warm start included) is
            carried from step to step.

    Returns:
        :class:`MujocoTrajectory` (unpacks as ``(states, wrenches)``): ``T + 1`` states and ``(T, 6)`` contact
        wrenches; after the first failure the remaining rows are NaN and the states stop.
    """
    pos = np.asarray(setpoints_pos, dtype=np.float64)
    quat = np.asarray(setpoints_quat, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (len(pos), 4):
        raise InvalidInputError(f"setpoints must be (T, 3) and (T, 4), got {pos.shape} and {quat.shape}")
    m = build_model(task, settings)
    _set_state(m, initial)
    states, wrenches, seconds = [initial], np.full((len(pos), 6), np.nan), np.zeros(len(pos))
    failure = None
    for t in range(len(pos)):
        start = time.perf_counter()
        wrench, _, _, failure = _step(m, task, pos[t], quat[t], gains, settings.n_substeps)
        seconds[t] = time.perf_counter() - start
        if failure is not None:
            failure = f"step {t}: {failure}"
            break
        wrenches[t] = wrench
        states.append(_get_state(m))
        if progress is not None:
            progress(t + 1, len(pos))
    return MujocoTrajectory(states, wrenches, failure, seconds)
