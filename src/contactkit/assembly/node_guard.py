"""Node guard of the data-driven simulator (issue 17; not in the tight-tolerance paper): every node, not only the
``Mc`` clustered contacts, is kept out of the static part.

The paper's step constrains only the clustered contacts (W-averaged depth and normal; eq 2's bias ``max(d, 0)/dt``
never pushes out) and PMI moves the pose with ``(V_k + V⁺)/2``: nodes between clusters, the half-step of ``V_k`` and
nodes beyond the margin that cross it within one step sink, and nothing removes it. Three parts, used by
:func:`contactkit.assembly.simulator.step` (``SimConfig.node_guard``):

* :func:`speculative_margin`: the detection margin grown to how far a node can travel in the step;
* :func:`guard_nodes`: after the clustered solve, frictionless inelastic eq-2 rows of every detected node, solved
  from ``V⁺`` (it only removes approach velocity); its impulse joins the step's contact wrench;
* :func:`project_pose` / :func:`project_nodes`: the position half of the engine's split impulse: the pose is
  projected out (least mass-weighted move, velocity kept), at most ``margin`` per pass, re-detecting between passes.

Measured (M48 nut, 300 steps = 3 s of the robustness experiment's random commands, seed [0, 3], an unfitted learned
clustering (``init_params(default_rng(7))``), the C-space model of H4; exact signed distance after every step;
thread-CPU on the loaded 2-core box): max / mean-over-steps of the max / mean over penetrating nodes [µm]:

=======================  ======================  ====================  =====================================
setup                    paper (``NONE``)         ``NODES``             max step energy gain, growth over 3 s
=======================  ======================  ====================  =====================================
learned + C-space         3129 / 1635 / 541       30 / 6 / 2.8          0 → 2.3 mJ; −7.77 → −7.15 J
learned, no C-space       3390 / 1783 / 593       17 / 4 / 2.2          4.0 → 0.7 mJ; −7.57 → −7.17 J
K-means (12)               843 /  254 /  96       28 / 5 / 2.6          0.002 → 0.28 mJ; −7.67 → −7.36 J
=======================  ======================  ====================  =====================================

Longer runs (NODES, same commands): 60 s learned + C-space max 36.8 µm, K-means 17.9 µm (every step); 5 simulated
minutes learned + C-space max 24.0 µm (every 10th step), no NaN, −627 J over the run, largest step gain 4.5 mJ.

Peg in hole (200 steps of each trajectory kind, rng 3, same unfitted clustering, H4's peg C-space model): max
penetration NONE 172–1729 µm (insert 306, extract 365, wiggle 1447, tilt 1712 with C-space) → NODES 12–17 µm; mean
over penetrating nodes 48–436 → 2.0–4.1 µm; with and without C-space alike under NODES.

Parts alone: guard without projection 118 µm (learned + C-space); projection without guard 1.7 mm (it cannot keep
up with nodes entering at 50–150 mm/s); guard rows limited to the 0.1 mm margin (no speculative margin) 1.3 mm
(a node 118 µm away entered 931 µm within one step at 210 mm/s). Time per step (``timing.time_steps``, 40 steps,
two interleaved runs): peg learned 2.52/2.75 → 2.79/2.68 ms, nut learned 2.79/2.92 → 4.70/3.70 ms (detection
with the grown margin: 1.1 → 1.8–2.4 ms), nut K-means 2.68/2.90 → 4.16/3.94 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from contactkit.assembly.nc_solver import DEFAULT_TOL, _check, _dot6
from contactkit.assembly.task import AssemblyTask
from contactkit.depth import NodeContacts
from contactkit.engine.reference import RigidBody, com_position, generalized_velocity, inverse_mass_matrix
from contactkit.engine.reference.body import rotation
from contactkit.engine.reference.integrators import displace
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

PROJECTION_SLOP = 1e-5
"""[m] penetration a node may keep after :func:`project_nodes` (the engine's split-impulse slop: a resting node stays
detected, so its clustered contact keeps a zero bias instead of chattering in and out of the margin)."""
PROJECTION_TOL = 1e-7
"""[m] :func:`project_nodes` stops when no row is violated by more than this (1 % of the slop)."""
PROJECTION_MAX_SWEEPS = 100
"""Cap on :func:`project_nodes` sweeps (each ``O(K)``; the rows of one rigid body are 6-dimensional)."""
PROJECTION_PASSES = 3
"""Passes of the position projection per step (:func:`project_pose`): each moves a node by ``margin`` at most."""


@njit(cache=True)
def _project_kernel(jn, m_inv_jn, w, bias, lam, v, max_sweeps, tol):
    """Frictionless projected Gauss-Seidel on normal rows ``0 ≤ λ ⊥ J_n v + b ≥ 0`` in place on ``lam (K,)``,
    ``v (6,)``; returns ``(sweeps, largest violation)``."""
    worst = 0.0
    for sweep in range(max_sweeps):
        worst = 0.0
        for i in range(jn.shape[0]):
            u = _dot6(jn[i], v) + bias[i]
            new = max(lam[i] - u / w[i], 0.0)
            if new != lam[i]:
                for c in range(6):
                    v[c] += m_inv_jn[i, c] * (new - lam[i])
                lam[i] = new
            worst = max(worst, -u)
        if worst <= tol:
            return sweep + 1, worst
    return max_sweeps, worst


@dataclass(frozen=True)
class NodeProjection:
    """Result of :func:`project_nodes`: ``displacement (6,) = [Δx_com (world, m); Δφ (body, rad)]``, the rows
    used, the sweeps and the largest remaining violation [m]."""

    displacement: np.ndarray
    rows: int
    sweeps: int
    violation: float


def _normal_rows(body: RigidBody, state: BodyState, points, normals, m_inv: np.ndarray | None):
    """``(points, J_n (K, 6) = [n, Rᵀ(r × n)], M⁻¹J_nᵀ rows, diagonal of W)`` of checked node rows."""
    pts, nrm = (np.asarray(a, dtype=np.float64).reshape(-1, 3) for a in (points, normals))
    if len(pts) != len(nrm) or not (np.isfinite(pts).all() and np.isfinite(nrm).all()):
        raise InvalidInputError(f"node rows need finite points and normals (K, 3), got {pts.shape}, {nrm.shape}")
    jn = np.concatenate([nrm, np.cross(pts - com_position(body, state), nrm) @ rotation(state)], axis=1)
    m_inv_jn = jn @ (inverse_mass_matrix(body) if m_inv is None else np.asarray(m_inv, np.float64))  # symmetric
    return pts, jn, m_inv_jn, np.maximum(np.einsum("kc,kc->k", jn, m_inv_jn), 1e-300)


def _gaps(gaps, k: int, what: str) -> np.ndarray:
    g = np.asarray(gaps, dtype=np.float64).reshape(-1)
    if g.shape != (k,) or not np.isfinite(g).all():
        raise InvalidInputError(f"{what} needs finite gaps ({k},) matching the rows, got shape {g.shape}")
    return g


def guard_nodes(body: RigidBody, state: BodyState, points: np.ndarray, normals: np.ndarray, depths: np.ndarray,
                velocity: np.ndarray, dt: float, *, m_inv: np.ndarray | None = None,
                max_sweeps: int = PROJECTION_MAX_SWEEPS, tol: float = DEFAULT_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Velocity guard over node contacts after the clustered solve: frictionless rows
    ``0 ≤ λ_i ⊥ n_iᵀJ_i V + max(d_i, 0)/dt ≥ 0`` (eq 2's normal row of every node) solved from ``V = velocity``.

    Not in the paper: its ``Mc`` clustered rows (W-averaged depth and normal) leave nodes between clusters free to
    move in (measured on the M48 nut under random commands: nodes at −150 mm/s into the bolt after the solve).
    Inelastic and frictionless, each update only removes approach velocity, so ``½ VᵀM_eff V`` does not rise
    (``M_eff = m_inv⁻¹``). Under PMI an impulse can still do positive work where a node leaves at ``V_k`` and comes
    back at ``V`` (measured on the nut, 3 s of random commands: single steps gaining up to 2 mJ of kinetic +
    coupling energy, against 7.1 J dissipated). Rows on the PMI displacement ``(V_k + V)/2`` are work-free but were
    measured worse with the projection (5.7 mJ steps; 29 vs 30 µm learned, 36 vs 28 µm K-means) and are not used.

    Args:
        body, state: the tool at the start of the step. points ``(K, 3)`` world [m], normals ``(K, 3)`` world unit
        (into the tool), depths ``(K,)`` [m]. velocity: ``(6,)`` ``V⁺ = [v_com (world); ω (body)]`` of the solve.
        dt: step [s]. m_inv: ``(6, 6)`` (effective, coupled) inverse mass. max_sweeps, tol [m/s]: stopping rule.

    Returns:
        ``(V⁺ (6,) guarded, generalized impulse (6,) J_nᵀλ [N·s, N·m·s])``.
    """
    _check(dt, 1.0, max_sweeps, tol)
    pts, jn, m_inv_jn, w = _normal_rows(body, state, points, normals, m_inv)
    bias = np.maximum(_gaps(depths, len(pts), "guard_nodes"), 0.0) / dt
    v, lam = np.array(velocity, dtype=np.float64).reshape(6), np.zeros(len(pts))
    _project_kernel(jn, m_inv_jn, w, bias, lam, v, int(max_sweeps), float(tol))
    return v, lam @ jn


def project_nodes(body: RigidBody, state: BodyState, points: np.ndarray, normals: np.ndarray, gaps: np.ndarray, *,
                  slop: float = PROJECTION_SLOP, max_sweeps: int = PROJECTION_MAX_SWEEPS,
                  tol: float = PROJECTION_TOL) -> NodeProjection:
    """Position-level projection of the tool out of the static part over node contacts (the position half of the
    engine's split impulse, first order): ``δ = argmin ½ δᵀMδ`` s.t. ``g_i + n_iᵀ J_i δ ≥ −slop`` for every row.

    Not in the paper: velocity-level rows (eq 2, Algorithm 1, :func:`guard_nodes`) only stop contacts from moving
    in, so the PMI half-step of ``V_k`` and one-step tunnelling accumulate penetration that nothing removes. The
    pose moves by ``δ``; the velocity is not changed (no kinetic energy is added).

    Args:
        body: the tool. state: its pose (the rows' COM and rotation). points ``(K, 3)`` world [m], normals ``(K, 3)``
            world unit (out of the static part, into the tool), gaps ``(K,)`` [m] (negative: penetration).
        slop [m], max_sweeps, tol [m]: :data:`PROJECTION_SLOP`, :data:`PROJECTION_MAX_SWEEPS`,
            :data:`PROJECTION_TOL`.
    """
    if not (np.isfinite(slop) and slop >= 0):
        raise InvalidInputError(f"projection slop must be finite and >= 0 m, got {slop!r}")
    pts, jn, m_inv_jn, w = _normal_rows(body, state, points, normals, None)
    gaps = _gaps(gaps, len(pts), "project_nodes")
    v, lam = np.zeros(6), np.zeros(len(pts))
    sweeps, worst = _project_kernel(jn, m_inv_jn, w, gaps + slop, lam, v, int(max_sweeps), float(tol))
    return NodeProjection(v, len(pts), int(sweeps), float(worst))


def project_pose(task: AssemblyTask, new_state: BodyState, nodes: NodeContacts, margin: float,
                 detect: Callable[[AssemblyTask, BodyState, float], NodeContacts]) -> tuple[BodyState, float]:
    """``(end state, deepest predicted penetration removed [m])``: issue 17's position-level correction.

    The velocity solve constrains only the ``Mc`` clustered contacts (with the W-averaged depth, bias
    ``max(d, 0)/dt``: never pushing out), and PMI moves the pose with ``(V_k + V⁺)/2``: nodes between clusters and
    the half-step of ``V_k`` sink, and nothing removes it (measured: the M48 nut under random commands, learned
    clustering, 3 s: 3.1 mm). Here every node detected at the start is moved rigidly to the end pose and its gap
    predicted to first order, ``g = d + n·(x⁺ − x)`` (start normal, world). Where some ``g < −slop`` the pose is
    projected (:func:`contactkit.assembly.nc_solver.project_nodes`, rows ``g < margin``), then the nodes are
    detected again at the projected pose and the projection repeated, :data:`PROJECTION_PASSES` passes at most.
    The velocity is kept (no kinetic energy is added). Guard: one pass moves no node by more than ``margin``
    (undetected nodes are at least that far from the part, so the move cannot push them in); without it a 1.1 mm
    predicted penetration of the nut was projected, with stale normals, 3.2 mm and 0.05 rad through the next
    thread flank (6.5 mm penetration a step later).
    """
    if len(nodes.depth) == 0:
        return new_state, 0.0
    pts = task.nodes[nodes.node_index] @ quat_to_mat(np.asarray(new_state.quat, np.float64)).T + new_state.pos
    nrm, gaps = nodes.normals, nodes.depth + np.einsum("kc,kc->k", nodes.normals, pts - nodes.points)
    deepest = -float(gaps.min())
    for k in range(PROJECTION_PASSES):
        if k > 0:
            found = detect(task, new_state, margin)
            pts, nrm, gaps = found.points, found.normals, found.depth
        if len(gaps) == 0 or gaps.min() >= -PROJECTION_SLOP:
            break
        keep = gaps < margin
        delta = project_nodes(task.body, new_state, pts[keep], nrm[keep], gaps[keep]).displacement
        reach = float(np.linalg.norm(delta[:3])) + float(np.linalg.norm(delta[3:])) * node_radius(task)
        if reach > margin:
            delta = delta * (margin / reach)
        new_state = displace(task.body, new_state, delta)
    return new_state, max(deepest, 0.0) if deepest > PROJECTION_SLOP else 0.0


@lru_cache(maxsize=16)
def node_radius(task: AssemblyTask) -> float:
    """[m] largest distance of a tool node from the tool's COM (bounds a node's move under a rotation)."""
    return float(np.linalg.norm(task.nodes - np.asarray(task.body.com_body, np.float64), axis=1).max())


def speculative_margin(task: AssemblyTask, state: BodyState, v_free: np.ndarray, margin: float, dt: float) -> float:
    """[m] speculative detection margin of a step: ``margin`` or, if larger, how far a node can travel in ``dt`` at
    the start or the free end velocity (``|v_com| + |ω| r_max``). Measured on the nut (random commands): a node
    118 µm away (beyond the 100 µm margin) went 931 µm in within one step at 210 mm/s, unseen by every row."""
    v0 = generalized_velocity(task.body, state)
    speed = max(float(np.linalg.norm(v[:3])) + float(np.linalg.norm(v[3:])) * node_radius(task) for v in (v0, v_free))
    return max(margin, speed * dt)


def within(nodes: NodeContacts, margin: float) -> NodeContacts:
    """The node contacts with depth below ``margin`` [m] (the clustering's input)."""
    keep = nodes.depth < margin
    if keep.all():
        return nodes
    return NodeContacts(nodes.node_index[keep], nodes.points[keep], nodes.normals[keep], nodes.depth[keep])
