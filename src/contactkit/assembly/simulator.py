"""The data-driven simulator step of the tight-tolerance paper (§III–§IV, Fig. 2): detect, cluster, solve, integrate.

One step of ``dt`` (:data:`~contactkit.assembly.task.SIM_DT`, 10 ms) from the tool's state and a commanded setpoint:

1. integration (part 1): the free end-of-step velocity under the implicit virtual coupling
   (:func:`contactkit.assembly.coupling.coupled_free_velocity`, PMI, eq 1) and the coupling wrench it applies;
2. detection: every tool node against the static part's learned depth network (§III-A), in numba
   (:func:`contactkit.assembly.detection.detect_nodes`; the engine's kernel
   :func:`contactkit.engine._kernels_depthnet.evaluate`);
3. clustering: any :class:`Clustering` (the learned one of §III-B, K-means, or :class:`IdentityClustering`);
4. solving: Algorithm 1 (:func:`contactkit.assembly.nc_solver.solve_nc`) with the C-space row (§IV, eq 8) where the
   C-space model says ``h(q) ≤ activation`` (optionally a speculative row near the surface,
   :attr:`SimConfig.cspace_margin`; like the engine's speculative contacts, it bounds ``V⁺``, so under PMI a tool
   already moving in at ``V_k`` may still cross by up to ``dt |N_Cᵀ V_k| / 2``), or the box-PGS baseline;
5. integration (part 2): PMI pose update (:func:`contactkit.engine.reference.advance_pose`).

With ``SimConfig.node_guard = NodeGuard.NODES`` (default; issue 17, not in the paper) detection uses a margin grown
to how far a node can travel in the step, a velocity guard over every detected node follows step 4 and a
position projection follows step 5 (:mod:`contactkit.assembly.node_guard`: the paper's step let the M48 nut sink
3.1 mm into the bolt under random commands; with the guard 30 µm).

A contact impulse ``P`` changes the end-of-step velocity through the coupling's implicit terms as well:
``(m + h c/2) Δv⁺ = P`` with ``c = k h/2 + d`` (:mod:`contactkit.assembly.coupling`), so the contact problem uses
the effective inverse mass :func:`contactkit.assembly.coupling.coupled_inverse_mass`. Each stage is timed with
``time.perf_counter`` (wall, :attr:`SimStep.stage_s`) and ``time.thread_time`` (this thread's CPU,
:attr:`SimStep.stage_cpu_s`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

import numpy as np

from contactkit.assembly.coupling import (
    CouplingGains,
    applied_coupling_wrench,
    coupled_free_velocity,
    coupled_inverse_mass,
)
from contactkit.assembly.cspace_point import cspace_row, model_row
from contactkit.assembly.detection import detect_nodes
from contactkit.assembly.nc_solver import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_RELAXATION,
    DEFAULT_TOL,
    FrictionKind,
    solve_nc,
)
from contactkit.assembly.node_guard import guard_nodes, project_pose, speculative_margin, within
from contactkit.assembly.task import SIM_DT, AssemblyTask
from contactkit.collision import Contacts
from contactkit.depth import NodeContacts
from contactkit.engine.params import Integrator
from contactkit.engine.reference import SolveStatus, advance_pose, com_position
from contactkit.engine.reference.body import wrench_from_generalized
from contactkit.engine.reference.solvers.virtual_constraint import CSpaceConstraint, SurfaceFunction, configuration
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

if TYPE_CHECKING:
    from contactkit.assembly.cspace import CSpaceModel

DEFAULT_MARGIN = 1e-4
"""[m] nodes closer than this to the static part are contacts (speculative: 10 mm/s for 10 ms)."""
STAGES = ("detection", "clustering", "solving", "integration")
"""Keys of :attr:`SimStep.stage_s`."""


class Clustering(Protocol):
    """Turns the original node contacts into ``Mc`` clustered contacts (tight-tolerance paper §III-B)."""

    def cluster(self, task: AssemblyTask, contacts: NodeContacts, state: BodyState,
                applied_wrench: np.ndarray) -> Contacts:
        """Clustered contacts (world frame, normals into the tool) of ``contacts`` at ``state`` under the
        coupling wrench ``applied_wrench (6,)`` (world, about the COM) [N, N·m]."""
        ...


@dataclass(frozen=True)
class IdentityClustering:
    """Every node contact is its own cluster (no reduction): the trivial :class:`Clustering`."""

    def cluster(self, task: AssemblyTask, contacts: NodeContacts, state: BodyState,
                applied_wrench: np.ndarray) -> Contacts:
        """The node contacts as :class:`Contacts` with the task's friction coefficient."""
        m = len(contacts.depth)
        return Contacts(points=contacts.points, normals=contacts.normals, distances=contacts.depth,
                        friction=np.full(m, task.friction))


class SolverKind(str, Enum):
    """Contact solver of the simulator."""

    NC_SOR = "nc-sor"  # Algorithm 1: block SOR with the exact single-contact solve + optional C-space row
    PGS = "pgs"  # box-friction projected Gauss-Seidel (baseline, §V-C)


class NodeGuard(str, Enum):
    """Whether every node, not only the clustered contacts, is kept out (:mod:`contactkit.assembly.node_guard`)."""

    NONE = "none"  # the paper: velocity-level rows only; penetration, once made, is never removed
    NODES = "nodes"  # every detected node: velocity guard after the solve (guard_nodes) + position projection


@dataclass(frozen=True)
class SimConfig:
    """Settings of the simulator step.

    Attributes:
        dt: step [s]; solver: :class:`SolverKind`; relaxation: ``α`` of Algorithm 1;
        max_iterations: cap on solver sweeps; tol: residual bound [m/s]; margin: detection margin [m];
        cspace_activation: the C-space row is added where ``h(q) ≤`` this value (paper eq 8).
        cspace_margin: None (paper), or [m or rad]: a speculative C-space row, added where the first-order
            distance to the learned surface is at most this, with the bias that lets the tool reach the surface
            within the step and no further (``v_C ≥ N_Cᵀ V_C / dt`` while free; ``v_C ≥ 0`` once in collision):
            the C-space analogue of the speculative contacts of eq 2 (see :func:`step`).
        warm_start: False (paper, Algorithm 1 line 1: the solver starts from zero) or True: :func:`simulate` starts
            each solve from the previous step's impulses of the same clustered contact (by index: the learned
            clustering's output ``j`` is the same cluster every step; K-means labels are not) when the counts
            match. Measured on the nut pushed down its thread (learned clustering, 78 steps): median sweeps 48 ->
            18, solve 0.19 -> 0.12 ms thread-CPU, force error against the 1e-11 solution unchanged (p90 0.009 N).
        node_guard: :class:`NodeGuard` (default NODES: the fix of issue 17, :mod:`contactkit.assembly.node_guard`).
    """

    dt: float = SIM_DT
    solver: SolverKind = SolverKind.NC_SOR
    relaxation: float = DEFAULT_RELAXATION
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    tol: float = DEFAULT_TOL
    margin: float = DEFAULT_MARGIN
    cspace_activation: float = 0.0
    cspace_margin: float | None = None
    warm_start: bool = False
    node_guard: NodeGuard = NodeGuard.NODES

    def __post_init__(self) -> None:
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidInputError(f"SimConfig.dt must be finite and > 0 s, got {self.dt!r}")
        if not np.isfinite(self.margin):
            raise InvalidInputError(f"SimConfig.margin must be finite, got {self.margin!r}")
        if self.cspace_margin is not None and not (np.isfinite(self.cspace_margin) and self.cspace_margin >= 0):
            raise InvalidInputError(f"SimConfig.cspace_margin must be None or finite and >= 0, "
                                    f"got {self.cspace_margin!r}")
        if not 0.0 < self.relaxation < 2.0 or int(self.max_iterations) < 1 or not self.tol > 0:
            raise InvalidInputError(f"SimConfig needs 0 < relaxation < 2, max_iterations >= 1, tol > 0; got "
                                    f"{self.relaxation!r}, {self.max_iterations!r}, {self.tol!r}")
        object.__setattr__(self, "solver", SolverKind(self.solver))
        object.__setattr__(self, "node_guard", NodeGuard(self.node_guard))


@dataclass(frozen=True)
class SimStep:
    """Result of one simulator step.

    Attributes:
        state: the tool's state at the end of the step.
        wrench: ``(6,)`` mean contact wrench over the step, world, about the COM at the start [N, N·m]
            (the C-space virtual wrench ``N_C λ_C`` included).
        applied: ``(6,)`` mean coupling wrench over the step (with the end-of-step velocity), same frame.
        n_nodes: original node contacts detected; n_clustered: contacts after clustering.
        stage_s: seconds per stage (:data:`STAGES`).
        status: the solver's :class:`SolveStatus`; cspace_active: whether the C-space row was added;
        cspace_h: ``h(q)`` at the start (``nan`` without a C-space model).
        iterations: solver sweeps; residual: its final residual [m/s]; cspace_impulse: ``λ_C`` [N·s].
        cspace_converged: False when the SQP of the C-space normal stopped on its iteration cap (the normal is
        then taken at its last iterate); cspace_sqp_iterations: its iterations. contacts: the clustered contacts.
        impulses: ``(n_clustered, 3)`` the solver's contact impulses [N·s] (contact frames ``[n; t1; t2]``, normals
        from the static part into the tool), the warm start of the next step (:attr:`SimConfig.warm_start`).
        projected: the deepest predicted node penetration [m] the position projection removed (0: none).
        stage_cpu_s: thread-CPU seconds per stage (:data:`STAGES`, ``time.thread_time``: what the step costs one
        core, whatever else runs on the machine).
    """

    state: BodyState
    wrench: np.ndarray
    applied: np.ndarray
    n_nodes: int
    n_clustered: int
    stage_s: dict[str, float]
    status: SolveStatus
    cspace_active: bool
    cspace_h: float
    iterations: int = 0
    residual: float = 0.0
    cspace_impulse: float = 0.0
    cspace_converged: bool = True
    cspace_sqp_iterations: int = 0
    contacts: Contacts | None = field(default=None, repr=False)
    stage_cpu_s: dict[str, float] = field(default_factory=dict)
    impulses: np.ndarray | None = field(default=None, repr=False)
    projected: float = 0.0


def _cspace_row(task: AssemblyTask, state: BodyState, cspace, activation: float,
                margin: float | None = None) -> tuple[CSpaceConstraint | None, float]:
    """``(the C-space row or None, h(q))``: the C-space normal by SQP (§IV-B) where ``h(q) ≤ activation``.

    ``cspace`` is any :class:`SurfaceFunction` (an analytic ``h``) or a
    :class:`~contactkit.assembly.cspace.CSpaceModel` (:func:`contactkit.assembly.cspace_point.model_row`: the same
    damped SQP in numba, on the logit normalised by its gradient norm at ``q``).
    """
    if cspace is None:
        return None, float("nan")
    if not isinstance(cspace, SurfaceFunction):
        return model_row(cspace, task.body, state, activation, distance=margin)
    q = configuration(task.body, state)
    h = float(cspace.value(q))
    if h > (activation if margin is None else margin):  # an analytic h is taken as the distance
        return None, h
    return cspace_row(task.body, state, cspace), h


def step(task: AssemblyTask, state: BodyState, setpoint_pos, setpoint_quat, gains: CouplingGains,
         clustering: Clustering, config: SimConfig, cspace: CSpaceModel | SurfaceFunction | None = None, *,
         warm: SimStep | None = None) -> SimStep:
    """One data-driven simulator step of ``config.dt`` (module docstring; paper Fig. 2, eqs 1–3, 8, Algorithm 1).

    Args:
        task: the task. state: the tool's state at the start (body frame origin, world).
        setpoint_pos ``(3,)`` [m], setpoint_quat ``(4,)`` wxyz: commanded pose of the tool's body frame, world.
        gains: the virtual coupling. clustering: a :class:`Clustering`. config: :class:`SimConfig`.
        cspace: the C-space model ``h(q)`` (§IV), an analytic :class:`SurfaceFunction`, or None (N-space only).
        warm: the previous step: its impulses start the solver where it had as many clustered contacts (and its
            ``λ_C`` where it had a C-space row); None: zero start (Algorithm 1).
    """
    body, dt = task.body, config.dt
    wall, cpu = [time.perf_counter()], [time.thread_time()]

    def mark() -> None:
        wall.append(time.perf_counter())
        cpu.append(time.thread_time())

    v_free, applied_free = coupled_free_velocity(body, state, setpoint_pos, setpoint_quat, gains, dt)
    mark()
    guarded = config.node_guard is NodeGuard.NODES
    reach = speculative_margin(task, state, v_free, config.margin, dt) if guarded else config.margin
    near = detect_nodes(task, state, reach)  # the margin grown to what a node may travel this step
    nodes = within(near, config.margin)
    mark()
    contacts = clustering.cluster(task, nodes, state, applied_free)
    mark()
    row, h = _cspace_row(task, state, cspace, config.cspace_activation, config.cspace_margin)
    c_bias = 0.0
    if row is not None and config.cspace_margin is not None:
        c_bias = max(-float(row.direction @ row.nearest_velocity), 0.0) / dt  # reach the surface within dt
    friction = FrictionKind.CONE if config.solver is SolverKind.NC_SOR else FrictionKind.BOX
    sol = solve_nc(body, state, contacts, v_free, dt, cspace_direction=None if row is None else row.direction,
                   cspace_bias=c_bias, friction=friction,
                   m_inv=coupled_inverse_mass(body, gains, dt), relaxation=config.relaxation,
                   max_iterations=config.max_iterations, tol=config.tol, **_warm_start(warm, contacts.count))
    velocity, wrench = sol.velocity, sol.wrench
    if guarded and len(near.depth):
        velocity, extra = guard_nodes(body, state, near.points, near.normals, near.depth, velocity, dt,
                                      m_inv=coupled_inverse_mass(body, gains, dt), tol=config.tol)
        wrench = wrench + wrench_from_generalized(body, state, extra / dt, com_position(body, state))
    mark()
    new_state = advance_pose(body, state, velocity, dt, Integrator.PASSIVE_MIDPOINT)
    projected = 0.0
    if guarded:
        new_state, projected = project_pose(task, new_state, near, config.margin, detect_nodes)
    applied = applied_coupling_wrench(body, state, velocity, setpoint_pos, setpoint_quat, gains, dt)
    mark()
    stages, stages_cpu = _stages(wall), _stages(cpu)
    return SimStep(new_state, wrench, applied, len(nodes.depth), contacts.count, stages, sol.status,
                   row is not None, h, sol.iterations, sol.residual, sol.cspace_impulse,
                   row is None or row.converged, 0 if row is None else row.sqp_iterations, contacts, stages_cpu,
                   sol.impulses, projected)


def _warm_start(warm: SimStep | None, count: int) -> dict:
    """``solve_nc``'s keywords ``initial``, ``initial_cspace`` from the previous step (empty: zero start)."""
    if warm is None:
        return {}
    kw = {"initial_cspace": warm.cspace_impulse}
    if warm.impulses is not None and warm.impulses.shape == (count, 3):
        kw["initial"] = warm.impulses
    return kw


def _stages(t: list[float]) -> dict[str, float]:
    """Seconds per stage from the six clock readings of :func:`step` (integration = its two parts)."""
    return {"detection": t[2] - t[1], "clustering": t[3] - t[2], "solving": t[4] - t[3],
            "integration": (t[1] - t[0]) + (t[5] - t[4])}


def simulate(task: AssemblyTask, initial: BodyState, setpoints_pos, setpoints_quat, gains: CouplingGains,
             clustering: Clustering, config: SimConfig, cspace: CSpaceModel | SurfaceFunction | None = None,
             progress: Callable[[int, int], None] | None = None) -> list[SimStep]:
    """``T`` steps from ``initial`` following setpoints ``(T, 3)`` [m] and ``(T, 4)`` wxyz (one per step).

    ``progress(t, T)`` is called after each step when given. Returns the :class:`SimStep` of every step.
    """
    pos = np.asarray(setpoints_pos, dtype=np.float64)
    quat = np.asarray(setpoints_quat, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (len(pos), 4):
        raise InvalidInputError(f"setpoints must be (T, 3) and (T, 4), got {pos.shape} and {quat.shape}")
    out, state = [], initial
    for t in range(len(pos)):
        result = step(task, state, pos[t], quat[t], gains, clustering, config, cspace,
                      warm=out[-1] if config.warm_start and out else None)
        out.append(result)
        state = result.state
        if progress is not None:
            progress(t + 1, len(pos))
    return out
