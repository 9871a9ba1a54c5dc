"""One control period of the engine in numba: collide → build problem → solve → integrate → sense, per step.

Coordinates of the tight-tolerance paper's eq 1: ``V = [v_com (world); ω (body)]``. One step of length ``h``:

1. free motion: controller, gravity, damping and the gyroscopic term give the end-of-step velocity without
   contact and the effective mass ``M + hD`` (:mod:`._kernels_dynamics`);
2. collide: node contacts that may close within the step (speculative margins; :mod:`._kernels_contacts`),
   in canonical order and reduced (:mod:`._kernels_reduce`);
3. build + solve the contact problem with the velocity-level Signorini condition (tight-tolerance paper eqs 2–3,
   with the speculative bias ``max(d, 0)/h``), warm-started by feature key (:mod:`._kernels_solve`);
4. sense: the step's contact impulses as an F/T reading (:mod:`contactkit.engine.sensing`) and the wrench
   the controller applied; both are averaged over the control period;
5. integrate the pose with ``V⁺`` (or the midpoint velocity), then project out the penetration predicted at
   the new pose (split impulse: positions move, velocities do not).

Maintenance: numba's on-disk cache (``cache=True``) is keyed on each function's own source file, so a change
in a called ``_kernels_*`` module does not invalidate its cached callers here: after editing one, delete
``src/contactkit/engine/__pycache__/*.nbi`` and ``*.nbc``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.engine._kernels_contacts import node_contacts
from contactkit.engine._kernels_dynamics import free_velocity, rotate_body
from contactkit.engine._kernels_edges import edge_contacts
from contactkit.engine._kernels_pairs import PairCache
from contactkit.engine._kernels_reduce import reduce_contacts, warm_start
from contactkit.engine._kernels_solve import build_rows, project_positions, solve_box, solve_cone
from contactkit.engine.layout import (
    NORMAL_COLS,
    POINT_COLS,
    ROW_DISTANCE,
    ROW_FRICTION,
    ROW_KEY,
    STATE_COM,
    STATE_QUAT,
    STATE_TWIST,
)
from contactkit.engine.sensing import contact_ft
from contactkit.rotations.numba import quat_to_mat

SOLVER_BOX, SOLVER_CONE = 0, 1
"""Kernel codes of :class:`contactkit.engine.params.SolverKind`."""
INTEGRATOR_EULER, INTEGRATOR_MIDPOINT = 0, 1
"""Kernel codes of :class:`contactkit.engine.reference.integrators.Integrator`."""

STAT_CONTACTS, STAT_RAW, STAT_SWEEPS, STAT_MAX_SWEEPS, STAT_UNCONVERGED, STAT_MIN_DISTANCE, STAT_CORRECTED, \
    STAT_FORCE_CLIPPED, STAT_TORQUE_CLIPPED, STAT_NONFINITE = range(10)
"""Indices of the per-control-period statistics written to ``Buffers.stats`` (``*_CLIPPED``: engine steps whose
impedance force, torque, was clipped to its limit)."""


class Settings(NamedTuple):
    """Engine settings of one control period (from :class:`contactkit.engine.params.EngineParams`)."""

    n_steps: int
    h: float
    solver: int
    integrator: int
    max_iterations: int
    tolerance: float
    relaxation: float
    margin: float
    speculative_factor: float
    max_margin: float
    max_contacts: int
    cos_cluster: float
    per_cluster: int
    correction_fraction: float
    correction_slop: float
    correction_iterations: int
    friction_scale: float
    warm_start: bool


class Buffers(NamedTuple):
    """Scratch and carried arrays of one world (mutated in place by :func:`advance`)."""

    cache_tool: np.ndarray  # (Vt, E) int64 separating-plane cache
    cache_env: np.ndarray  # (Ve, T) int64
    raw: np.ndarray  # (raw capacity, ROW_WIDTH) contact rows (engine.layout) before reduction
    contacts: np.ndarray  # (max_contacts, ROW_WIDTH) the last step's contact rows (d, n, p, μ, key)
    impulses: np.ndarray  # (max_contacts, 3) the last step's impulses [N s]
    frames: np.ndarray  # (max_contacts, 3, 3)
    jac: np.ndarray  # (max_contacts, 3, 6)
    m_inv_jt: np.ndarray  # (max_contacts, 3, 6)
    blocks: np.ndarray  # (max_contacts, 3, 3)
    bias: np.ndarray  # (max_contacts,)
    mu: np.ndarray  # (max_contacts,)
    prev_keys: np.ndarray  # (max_contacts,) keys of the previous step's contacts
    prev_impulses: np.ndarray  # (max_contacts, 3)
    counts: np.ndarray  # (2,) int64: contacts of the last step, of the previous step
    stats: np.ndarray  # (10,) float64, see STAT_*
    cache_env_edges: np.ndarray  # (Ee, T) int64 separating-plane cache of environment edges (._kernels_edges)
    cache_tool_edges: np.ndarray  # (Et, E) int64
    cache_pairs: np.ndarray  # (E, T) int64 separating planes of the piece pairs (._kernels_pairs.PairCache)
    pair_gaps: np.ndarray  # (E, T, 3) their gaps and the travel then
    pair_motion: np.ndarray  # (MOTION_WIDTH,) the tool's last queried pose and travel


@njit(cache=True)
def _lookahead(body, settings, motion):
    """Look-ahead time [s] of the speculative contacts, ``speculative_factor · h`` shortened so that no tool
    point reaches beyond ``max_margin`` (the broad phase's reach), and that speed bound ``|v| + |ω|·reach``."""
    speed = 0.0
    for j in range(2):
        lin = math.sqrt(motion[j, 0] ** 2 + motion[j, 1] ** 2 + motion[j, 2] ** 2)
        ang = math.sqrt(motion[j, 3] ** 2 + motion[j, 4] ** 2 + motion[j, 5] ** 2)
        speed = max(speed, lin + ang * body.reach)
    lookahead = settings.speculative_factor * settings.h
    room = settings.max_margin - settings.margin
    return (min(lookahead, room / speed) if speed * lookahead > room else lookahead), speed


@njit(cache=True)
def collide(geo, buf, settings, rot, origin, com, motion, lookahead, speed):
    """Contacts of the tool at one pose that may close during the step (step 3), canonical and reduced into
    ``buf.contacts``; ``motion (2, 6)``: twists ``[v_com, ω]`` (world) at the start and free end of the
    step. Returns ``(raw count, count)``.
    """
    raw_count = node_contacts(geo, rot, origin, motion, com, settings.margin, lookahead, speed, buf.cache_tool,
                              buf.cache_env, buf.raw)
    raw_count = edge_contacts(geo, rot, origin, motion, com, settings.margin, lookahead, speed, False,
                              buf.cache_env_edges, buf.cache_tool_edges, buf.raw, raw_count,
                              PairCache(buf.cache_pairs, buf.pair_gaps, buf.pair_motion))
    count = reduce_contacts(buf.raw, raw_count, settings.max_contacts, settings.cos_cluster, settings.per_cluster,
                            buf.contacts)
    return raw_count, count


@njit(cache=True)
def solve_contacts(buf, settings, count, com, rot, m_eff_inv, v_free):
    """Build and solve the contact problem of ``count`` contacts (step 4). Returns ``(V⁺, sweeps, change)``."""
    h = settings.h
    build_rows(buf.contacts, count, com, rot, m_eff_inv, buf.frames, buf.jac, buf.m_inv_jt, buf.blocks)
    for i in range(count):
        buf.bias[i] = max(buf.contacts[i, ROW_DISTANCE], 0.0) / h
        buf.mu[i] = buf.contacts[i, ROW_FRICTION] * settings.friction_scale
    if settings.warm_start:
        warm_start(buf.contacts[:, ROW_KEY], count, buf.prev_keys, buf.prev_impulses, buf.counts[1], buf.impulses)
    else:
        buf.impulses[:count] = 0.0
    v = v_free.copy()
    lever = 0.0
    for i in range(count):
        p = buf.contacts[i, POINT_COLS]
        lever = max(lever, math.sqrt((p[0] - com[0]) ** 2 + (p[1] - com[1]) ** 2 + (p[2] - com[2]) ** 2))
        for r in range(3):
            for c in range(6):
                v[c] += buf.m_inv_jt[i, r, c] * buf.impulses[i, r]
    args = (count, buf.jac, buf.m_inv_jt, buf.blocks, buf.bias, buf.mu, buf.impulses, v, settings.max_iterations,
            settings.tolerance, settings.relaxation, lever)
    sweeps, change = solve_box(*args) if settings.solver == SOLVER_BOX else solve_cone(*args)
    buf.counts[1] = count
    buf.prev_keys[:count] = buf.contacts[:count, ROW_KEY]
    buf.prev_impulses[:count] = buf.impulses[:count]
    return v, sweeps, change


@njit(cache=True)
def correct_pose(buf, settings, body, count, com_old, rot_old, com, quat):
    """Project out the penetration predicted at the new pose (step 5, split impulse; velocities kept).

    Each contact's tool point is carried rigidly to the new pose; its gap becomes ``d + n·(p' - p)`` (the
    environment taken as locally planar), as :func:`contactkit.engine.reference.integrators.step_rigid_body` does.
    Where the two differ: here the target of a contact shallower than the slop is negative (it may close up to its
    gap), the reference's :func:`~contactkit.engine.reference.integrators.correct_position` clamps it to 0 (no listed
    contact may close); and this is Gauss-Seidel (:func:`._kernels_solve.project_positions`), that is Lemke. With
    every contact deeper than the slop they agree (``tests/engine/test_kernels_vs_reference.py``).
    Returns ``(corrected, smallest predicted gap [m])``.
    """
    h = settings.h
    rot = quat_to_mat(quat)
    rows, target = np.empty((count, 6)), np.empty(count)
    smallest, needed = np.inf, False
    for i in range(count):
        p = buf.contacts[i, POINT_COLS]
        n = buf.contacts[i, NORMAL_COLS]
        moved = com + rot @ (rot_old.T @ (p - com_old))
        gap = (buf.contacts[i, ROW_DISTANCE] + n[0] * (moved[0] - p[0]) + n[1] * (moved[1] - p[1])
               + n[2] * (moved[2] - p[2]))
        smallest = min(smallest, gap)
        target[i] = settings.correction_fraction * (-gap - settings.correction_slop) / h
        needed = needed or target[i] > 0.0
        r = moved - com
        arm = np.array([r[1] * n[2] - r[2] * n[1], r[2] * n[0] - r[0] * n[2], r[0] * n[1] - r[1] * n[0]])
        rows[i, :3] = n
        rows[i, 3:] = rot.T @ arm
    if not needed:
        return False, smallest
    m_inv = np.zeros((6, 6))
    for a in range(3):
        m_inv[a, a] = 1.0 / body.mass
    m_inv[3:, 3:] = body.inertia_inv
    shift = np.empty(6)
    project_positions(count, rows, m_inv, target, settings.correction_iterations, settings.tolerance, shift)
    for a in range(3):
        com[a] += h * shift[a]
    rotate_body(quat, h * shift[3], h * shift[4], h * shift[5])
    return True, smallest


@njit(cache=True)
def _sense(body, ctrl, buf, count, h, rot, origin, force, torque, imp_f, imp_t, g, v_plus, reading, applied):
    """Add the step's F/T reading (contact impulses, sensor frame) and the controller's wrench as it acted
    (its implicit damping at ``V⁺``; world, about the tool origin) to the period's sums (step 4). ``g`` maps ``V``
    to the velocity of the point the force acts on (the tool centre point)."""
    contact_ft(count, buf.contacts, buf.frames, buf.impulses, h, origin + rot @ body.sensor_pos,
               rot @ body.sensor_rot, reading)
    v_origin, omega_w = g @ v_plus, rot @ v_plus[3:]
    spring = np.zeros(3)
    for a in range(3):
        spring[a] = force[a] - (ctrl.damping_pos[a] * v_origin[a] if imp_f else 0.0)
        applied[a] += spring[a]
        applied[3 + a] += torque[a] - (ctrl.damping_rot[a] * omega_w[a] if imp_t else 0.0)
    if ctrl.has_tcp:  # the force at the TCP, less the compensation (at the origin), about the tool origin
        spring[2] -= ctrl.weight
        lever = rot @ ctrl.tcp
        applied[3] += lever[1] * spring[2] - lever[2] * spring[1]
        applied[4] += lever[2] * spring[0] - lever[0] * spring[2]
        applied[5] += lever[0] * spring[1] - lever[1] * spring[0]


@njit(cache=True)
def _integrate(buf, settings, body, count, rot, com, quat, vel, v_plus):
    """Move the pose with ``V⁺`` (semi-implicit Euler) or ``(V + V⁺)/2`` (midpoint), set ``V = V⁺``, and
    project out the penetration predicted at the new pose (step 5). Returns whether it projected."""
    h = settings.h
    com_old = com.copy()
    move = v_plus if settings.integrator == INTEGRATOR_EULER else 0.5 * (vel + v_plus)
    for a in range(3):
        com[a] += h * move[a]
    rotate_body(quat, h * move[3], h * move[4], h * move[5])
    vel[:] = v_plus
    return correct_pose(buf, settings, body, count, com_old, rot, com, quat)[0] if count else False


@njit(cache=True)
def _record(stats, count, raw_count, sweeps, change, contacts, tolerance, corrected):
    """Update the period's statistics (``STAT_*``) with one step's."""
    stats[STAT_CONTACTS] = count
    stats[STAT_RAW] = max(stats[STAT_RAW], raw_count)
    stats[STAT_SWEEPS] += sweeps
    stats[STAT_MAX_SWEEPS] = max(stats[STAT_MAX_SWEEPS], sweeps)
    stats[STAT_UNCONVERGED] += change > tolerance
    stats[STAT_CORRECTED] += corrected
    for i in range(count):
        stats[STAT_MIN_DISTANCE] = min(stats[STAT_MIN_DISTANCE], contacts[i, ROW_DISTANCE])


@njit(cache=True)
def _step(geo, body, ctrl, settings, buf, com, quat, vel, reading, applied):
    """One engine step (module docstring); updates ``com, quat, vel`` and accumulates the sensing."""
    rot = quat_to_mat(quat)
    origin = com - rot @ body.com_local
    m_eff_inv = np.empty((6, 6))
    v_free, force, torque, imp_f, imp_t, g = free_velocity(body, ctrl, settings, rot, quat, vel, origin, m_eff_inv)
    motion = np.empty((2, 6))
    motion[0, :3], motion[0, 3:] = vel[:3], rot @ vel[3:]
    motion[1, :3], motion[1, 3:] = v_free[:3], rot @ v_free[3:]
    lookahead, speed = _lookahead(body, settings, motion)
    raw_count, count = collide(geo, buf, settings, rot, origin, com, motion, lookahead, speed)
    v_plus, sweeps, change = solve_contacts(buf, settings, count, com, rot, m_eff_inv, v_free)
    _sense(body, ctrl, buf, count, settings.h, rot, origin, force, torque, imp_f, imp_t, g, v_plus, reading, applied)
    corrected = _integrate(buf, settings, body, count, rot, com, quat, vel, v_plus)
    _record(buf.stats, count, raw_count, sweeps, change, buf.contacts, settings.tolerance, corrected)
    if ctrl.pose_mode:
        buf.stats[STAT_FORCE_CLIPPED] += 0.0 if imp_f else 1.0
        buf.stats[STAT_TORQUE_CLIPPED] += 0.0 if imp_t else 1.0


@njit(cache=True)
def advance(geo, body, ctrl, settings, buf, state, reading, applied):
    """One control period: ``settings.n_steps`` engine steps of ``settings.h`` seconds.

    Args:
        geo: :class:`~._kernels_geometry.ContactGeometry`. body, ctrl: :class:`~._kernels_dynamics.BodyModel`,
            :class:`~._kernels_dynamics.Control`.
        settings: :class:`Settings`. buf: :class:`Buffers` (carried warm start, caches, last contacts).
        state: ``(13,)`` ``[com (3) world; quat (4); v_com (3) world; ω (3) body]`` (:mod:`contactkit.engine.layout`),
            advanced in place.
        reading: ``(6,)`` mean F/T reading over the period, sensor frame (written) [N, N·m].
        applied: ``(6,)`` mean controller wrench at the tool origin, world frame (written) [N, N·m].

    Stops early with ``buf.stats[STAT_NONFINITE] = 1`` if the state stops being finite (the caller keeps the
    previous state).
    """
    reading[:] = 0.0
    applied[:] = 0.0
    buf.stats[:] = 0.0
    buf.stats[STAT_MIN_DISTANCE] = np.inf
    com, quat, vel = state[STATE_COM], state[STATE_QUAT], state[STATE_TWIST]
    for _ in range(settings.n_steps):
        _step(geo, body, ctrl, settings, buf, com, quat, vel, reading, applied)
        if not np.all(np.isfinite(state)):
            buf.stats[STAT_NONFINITE] = 1.0
            return
    reading /= settings.n_steps
    applied /= settings.n_steps


