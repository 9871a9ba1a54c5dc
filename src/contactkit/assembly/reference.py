"""The high-fidelity reference step (issue 17 part 1): the stand-in for the paper's measured wrenches (§V-A).

One step of :data:`~contactkit.assembly.task.REFERENCE_DT` = 1 ms, written as the paper's §II pipeline WITHOUT its
approximations: every tool node against the EXACT signed distance of the static mesh (no learned depth, no
clustering: all nodes with ``d < margin`` are contacts), the exact Coulomb cone (block SOR with the exact
single-contact solve, paper Algorithm 1 / §III-C; the numba kernels of :mod:`contactkit.engine._kernels_solve`,
matrix-free, O(K) per sweep), passive midpoint integration (paper eq 1) with the virtual coupling of
:mod:`contactkit.assembly.coupling` as the input, and an energy-safe split-impulse projection of the predicted
penetration (pose moved, velocity kept: it cannot add kinetic energy).

A step: ``V_free`` (coupling, PMI) → node contacts (``d < margin``) → contact problem ``u = Wλ + b`` with the
speculative normal bias ``max(d, 0)/h`` (eq 2) and ``W = J M_eff⁻¹ Jᵀ`` (the implicit coupling's effective mass,
:func:`~contactkit.assembly.coupling.coupled_inverse_mass`) → cone SOR (warm-started from the previous step's
impulses of the same nodes) → ``V⁺ = V_free + M_eff⁻¹Jᵀλ`` → the coupling wrench that acted (at ``V⁺``) → PMI pose
→ penetration projection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.assembly.coupling import (
    CouplingGains,
    applied_coupling_wrench,
    coupled_free_velocity,
    coupled_inverse_mass,
)
from contactkit.assembly.exact_contacts import exact_node_contacts
from contactkit.assembly.task import REFERENCE_DT, AssemblyKind, AssemblyTask
from contactkit.engine._kernels_solve import build_rows, project_positions, solve_cone
from contactkit.engine.layout import NORMAL_COLS, POINT_COLS, ROW_DISTANCE, ROW_FRICTION, ROW_KEY, ROW_WIDTH
from contactkit.engine.params import Integrator
from contactkit.engine.reference import (
    SolveStatus,
    advance_pose,
    com_position,
    displace,
    inverse_mass_matrix,
)
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

REFERENCE_MARGIN = 5e-5
"""[m] peg: nodes closer than this are contacts (a node closing at up to 50 mm/s is caught within the 1 ms step)."""
NUT_REFERENCE_MARGIN = 5e-5
"""[m] nut. Measured over the 100-episode, 20k-row bolting dataset (seed 0): 1e-4 instead gave max penetration 22.6
instead of 27.8 µm, 23 instead of 24 episodes above 5 µm, at 3.95 instead of 3.24 ms per step: the deeper
penetrations come from nodes passing a convex edge within one step, where the linearised gap of a speculative
contact is wrong (checked on the 21.6 µm one: a nut node at the bolt's chamfered thread start went from 4.9 µm
outside to 21.6 µm inside while its closest-feature normal turned by 25°), not from the margin, so the cheaper
margin is kept."""


def reference_margin(task: AssemblyTask) -> float:
    """Contact margin [m] of the reference for ``task``: :data:`REFERENCE_MARGIN` (peg) or
    :data:`NUT_REFERENCE_MARGIN` (bolting)."""
    return REFERENCE_MARGIN if task.kind is AssemblyKind.PEG_IN_HOLE else NUT_REFERENCE_MARGIN
REFERENCE_TOL = 1e-6
"""[m/s] cone SOR stops when a sweep changes no contact point's velocity by more (1 nm per 1 ms step). Measured on
the nut screwed in (1051 contacts, 300 steps): 46 mean sweeps and 12 ms/step, vs 195 sweeps and 29 ms at 1e-7, the
same mean wrench to 1 mN."""
REFERENCE_MAX_SWEEPS = 2000
"""Sweep cap of the cone SOR; reaching it is reported (``SolveStatus.ITERATION_LIMIT``), never hidden."""
REFERENCE_RELAXATION = 1.0
"""Relaxation ``α`` of the block SOR (paper Algorithm 1)."""
PENETRATION_SLOP = 1e-6
"""[m] predicted penetration left to the next step's contacts (the projection removes only what exceeds it)."""
PROJECTION_SWEEPS = 200
"""Gauss-Seidel sweeps of the penetration projection."""


@dataclass(frozen=True)
class WarmStart:
    """Impulses of the previous step by node: ``nodes (K,)`` int64 node indices, ``impulses (K, 3)`` [N·s]."""

    nodes: np.ndarray
    impulses: np.ndarray


@dataclass(frozen=True)
class ReferenceStep:
    """Outcome of :func:`reference_step`.

    Attributes:
        state: the tool at the end of the step.
        wrench: ``(6,)`` mean contact wrench on the tool over the step, world, about the COM at the start [N, N·m].
        coupling: ``(6,)`` mean coupling wrench applied over the step, same frame [N, N·m].
        n_contacts: node contacts of the step; max_penetration: ``max(-d, 0)`` over them at the start [m].
        status: the cone SOR's :class:`SolveStatus`; sweeps: its sweep count; change: its last sweep's change [m/s].
        warm: the step's impulses by node, to warm-start the next step.
    """

    state: BodyState
    wrench: np.ndarray
    coupling: np.ndarray
    n_contacts: int
    max_penetration: float
    status: SolveStatus
    sweeps: int
    change: float
    warm: WarmStart


def _rows(points: np.ndarray, normals: np.ndarray, depth: np.ndarray, mu: float, nodes: np.ndarray) -> np.ndarray:
    rows = np.zeros((len(depth), ROW_WIDTH))
    rows[:, ROW_DISTANCE] = depth
    rows[:, NORMAL_COLS] = normals
    rows[:, POINT_COLS] = points
    rows[:, ROW_FRICTION] = mu
    rows[:, ROW_KEY] = nodes
    return rows


def _project(task: AssemblyTask, start: BodyState, end: BodyState, rows: np.ndarray, dt: float) -> BodyState:
    """Split-impulse projection of the penetration predicted at ``end`` (contacts carried rigidly, static surface
    taken as locally planar: gap ``d + n·(p' - p)``), Gauss-Seidel on the normal rows; velocity kept."""
    body = task.body
    com0, rot0 = com_position(body, start), quat_to_mat(start.quat)
    com1, rot1 = com_position(body, end), quat_to_mat(end.quat)
    p, n = rows[:, POINT_COLS], rows[:, NORMAL_COLS]
    moved = com1 + (p - com0) @ rot0 @ rot1.T
    gap = rows[:, ROW_DISTANCE] + np.sum(n * (moved - p), axis=1)
    target = (-gap - PENETRATION_SLOP) / dt
    if not np.any(target > 0.0):
        return end
    normal_rows = np.concatenate([n, np.cross(moved - com1, n) @ rot1], axis=1)
    shift = np.empty(6)
    project_positions(len(gap), np.ascontiguousarray(normal_rows), inverse_mass_matrix(body), target,
                      PROJECTION_SWEEPS, REFERENCE_TOL, shift)
    return displace(body, end, dt * shift)


def _warm_impulses(warm: WarmStart | None, nodes: np.ndarray) -> np.ndarray:
    lam = np.zeros((len(nodes), 3))
    if warm is not None and len(warm.nodes) and len(nodes):
        pos = np.searchsorted(warm.nodes, nodes)
        pos = np.minimum(pos, len(warm.nodes) - 1)
        hit = warm.nodes[pos] == nodes
        lam[hit] = warm.impulses[pos[hit]]
    return lam


def reference_step(task: AssemblyTask, state: BodyState, setpoint_pos, setpoint_quat, gains: CouplingGains,
                   warm: WarmStart | None = None, *, dt: float = REFERENCE_DT,
                   margin: float | None = None) -> ReferenceStep:
    """One high-fidelity step of the tool under the virtual coupling (module docstring).

    Args:
        task: the task; state: the tool at the start of the step (single body, world).
        setpoint_pos ``(3,)`` [m], setpoint_quat ``(4,)`` wxyz: the commanded pose of the tool's body frame.
        gains: the coupling. warm: the previous step's :attr:`ReferenceStep.warm` (None: cold start).
        dt: step [s] (1 ms). margin: contact margin [m] (nodes with ``d < margin``; None:
        :func:`reference_margin`).

    Returns:
        :class:`ReferenceStep` (check ``status``: an unconverged solve is reported, not hidden).
    """
    body = task.body
    v_free, _ = coupled_free_velocity(body, state, setpoint_pos, setpoint_quat, gains, dt)
    contacts = exact_node_contacts(task, state, reference_margin(task) if margin is None else margin)
    k = len(contacts.depth)
    com, rot = com_position(body, state), quat_to_mat(state.quat)
    v = v_free.copy()
    status, sweeps, change, lam = SolveStatus.CONVERGED, 0, 0.0, np.zeros((0, 3))
    wrench = np.zeros(6)
    rows = _rows(contacts.points, contacts.normals, contacts.depth, task.friction, contacts.node_index)
    if k:
        frames, jac = np.empty((k, 3, 3)), np.empty((k, 3, 6))
        m_inv_jt, blocks = np.empty((k, 3, 6)), np.empty((k, 3, 3))
        build_rows(rows, k, com, np.ascontiguousarray(rot), coupled_inverse_mass(body, gains, dt), frames, jac,
                   m_inv_jt, blocks)
        bias = np.maximum(contacts.depth, 0.0) / dt
        mu = np.full(k, task.friction)
        lam = _warm_impulses(warm, contacts.node_index)
        v += np.einsum("krc,kr->c", m_inv_jt, lam)
        lever = float(np.linalg.norm(contacts.points - com, axis=1).max())
        sweeps, change = solve_cone(k, jac, m_inv_jt, blocks, bias, mu, lam, v, REFERENCE_MAX_SWEEPS,
                                    REFERENCE_TOL, REFERENCE_RELAXATION, lever)
        status = SolveStatus.CONVERGED if change <= REFERENCE_TOL else SolveStatus.ITERATION_LIMIT
        forces = np.einsum("kab,ka->kb", frames, lam) / dt
        wrench = np.concatenate([forces.sum(axis=0), np.cross(contacts.points - com, forces).sum(axis=0)])
    coupling = applied_coupling_wrench(body, state, v, setpoint_pos, setpoint_quat, gains, dt)
    new_state = advance_pose(body, state, v, dt, Integrator.PASSIVE_MIDPOINT)
    if k:
        new_state = _project(task, state, new_state, rows, dt)
    penetration = float(max(-contacts.depth.min(), 0.0)) if k else 0.0
    return ReferenceStep(new_state, wrench, coupling, k, penetration, status, int(sweeps), float(change),
                         WarmStart(contacts.node_index.copy(), lam.copy()))
