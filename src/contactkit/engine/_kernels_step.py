"""One control period of the engine in numba: collide → build problem → solve → integrate → sense, per step.

Coordinates of paper 1 eq 1: ``V = [v_com (world); ω (body)]``, ``M = diag(m I, J + a I)`` (``a``: the
wrist armature of ``WorldParams``, as MuJoCo adds it to the free joint's rotational inertia). One step of
length ``h``:

1. control: the impedance law of :func:`contactkit.control.impedance.impedance_wrench` at the tool origin
   (stiffness explicit; its damping implicit while the force/torque is below its limit, as MuJoCo's
   ``implicitfast`` treats actuator damping), or the commanded wrench; gravity; viscous damping (implicit);
2. free velocity ``(M + hD) v_free = M V + h Q`` with the gyroscopic term in the passive-midpoint form of
   paper 1 eq 1 (it conserves the kinetic energy of free rotation, so no spin rate destabilises it; an
   explicit ``ω × Jω`` diverges once ``|ω| h`` nears 1), so contact sees the effective mass ``M + hD``;
3. collide: node contacts within a speculative margin (:mod:`._kernels_contacts`), canonical and reduced
   (:mod:`._kernels_reduce`);
4. build + solve the contact problem with the velocity-level Signorini condition (paper 1 eqs 2–3, with
   the speculative bias ``max(d, 0)/h``), warm-started by feature key (:mod:`._kernels_solve`);
5. integrate the pose with ``V⁺`` (or the midpoint velocity), then project out the penetration predicted at
   the new pose (split impulse: positions move, velocities do not);
6. sense: the step's contact impulses as an F/T reading (:mod:`contactkit.engine.sensing`) and the wrench
   the controller applied; both are averaged over the control period.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.engine._kernels_contacts import node_contacts
from contactkit.engine._kernels_reduce import reduce_contacts, warm_start
from contactkit.engine._kernels_solve import build_rows, project_positions, solve_box, solve_cone
from contactkit.engine.sensing import contact_ft

SOLVER_BOX, SOLVER_CONE = 0, 1
"""Kernel codes of :class:`contactkit.engine.params.SolverKind`."""
INTEGRATOR_EULER, INTEGRATOR_MIDPOINT = 0, 1
"""Kernel codes of :class:`contactkit.engine.integrators.Integrator`."""
SMALL_ANGLE = 1e-12
"""Below this rotation angle [rad] the quaternion exponential uses its series."""

STAT_CONTACTS, STAT_RAW, STAT_SWEEPS, STAT_MAX_SWEEPS, STAT_UNCONVERGED, STAT_MIN_DISTANCE, STAT_CORRECTED, \
    STAT_NONFINITE = range(8)
"""Indices of the per-control-period statistics written to ``Buffers.stats``."""


class BodyModel(NamedTuple):
    """The tool as the kernels see it (float fields in SI units, arrays float64)."""

    mass: float  # m [kg], mass_scale applied
    inertia: np.ndarray  # (3, 3) J + a I about the COM, body axes [kg m²]
    inertia_inv: np.ndarray  # (3, 3) its inverse
    gyro_inertia: np.ndarray  # (3, 3) J alone (the armature exerts no gyroscopic torque)
    com_local: np.ndarray  # (3,) COM in the tool frame [m]
    sensor_pos: np.ndarray  # (3,) sensor origin in the tool frame [m]
    sensor_rot: np.ndarray  # (3, 3) sensor → tool rotation
    gravity: np.ndarray  # (3,) [m/s²]
    linear_damping: float  # viscous, on the tool origin's velocity [N s/m]
    angular_damping: float  # viscous, on ω [N m s/rad]
    reach: float  # largest distance of a tool vertex from the COM [m]


class Control(NamedTuple):
    """The controller of one control period (world frame, about the tool origin)."""

    pose_mode: bool  # impedance law (True) or commanded wrench (False)
    target_pos: np.ndarray  # (3,) [m]
    target_quat: np.ndarray  # (4,) (w, x, y, z)
    stiffness_pos: np.ndarray  # (3,) [N/m]
    stiffness_rot: np.ndarray  # (3,) [N m/rad]
    damping_pos: np.ndarray  # (3,) [N s/m]
    damping_rot: np.ndarray  # (3,) [N m s/rad]
    max_force: float  # [N]
    max_torque: float  # [N m]
    weight: float  # gravity compensation along +z [N]
    command: np.ndarray  # (6,) commanded wrench (WRENCH mode) [N, N m]


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
    raw: np.ndarray  # (raw capacity, 9) contacts before reduction
    contacts: np.ndarray  # (max_contacts, 9) the last step's contacts (d, n, p, μ, key)
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
    stats: np.ndarray  # (8,) float64, see STAT_*


@njit(cache=True)
def quat_matrix(q, out):
    """Rotation matrix ``out (3, 3)`` (written) of a unit quaternion ``q (4,)`` (w, x, y, z)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0, 0], out[0, 1], out[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    out[1, 0], out[1, 1], out[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    out[2, 0], out[2, 1], out[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)


@njit(cache=True)
def rotate_body(q, px, py, pz):
    """``q ⊗ exp(φ)`` (written into ``q``) for a body-frame rotation vector ``φ`` [rad]; unit, ``w ≥ 0``."""
    angle = math.sqrt(px * px + py * py + pz * pz)
    c = math.cos(0.5 * angle)
    s = math.sin(0.5 * angle) / angle if angle > SMALL_ANGLE else 0.5 - angle * angle / 48.0
    x2, y2, z2 = px * s, py * s, pz * s
    w1, x1, y1, z1 = q[0], q[1], q[2], q[3]
    q[0] = w1 * c - x1 * x2 - y1 * y2 - z1 * z2
    q[1] = w1 * x2 + x1 * c + y1 * z2 - z1 * y2
    q[2] = w1 * y2 - x1 * z2 + y1 * c + z1 * x2
    q[3] = w1 * z2 + x1 * y2 - y1 * x2 + z1 * c
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    sign = -1.0 if q[0] < 0.0 else 1.0
    for a in range(4):
        q[a] *= sign / norm


@njit(cache=True)
def rotation_error(target, q):
    """Rotation vector ``(3,)`` [rad] of ``target ⊗ q⁻¹`` (world frame, angle in ``[0, π]``), as the impedance
    law's error (:func:`contactkit.rotations.quat_to_rotvec`)."""
    w1, x1, y1, z1 = target[0], target[1], target[2], target[3]
    w2, x2, y2, z2 = q[0], -q[1], -q[2], -q[3]
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    v = np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                  w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    if w < 0.0:
        w, v = -w, -v
    s = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if s > SMALL_ANGLE:
        return v * (2.0 * math.atan2(s, w) / s)
    return v * (2.0 / max(w, SMALL_ANGLE))


@njit(cache=True)
def control_wrench(ctrl, origin, quat, v_origin, omega):
    """Explicit controller wrench at the tool origin and which damping terms are implicit.

    Returns ``(force (3,), torque (3,), implicit_force, implicit_torque)`` [N, N·m], world frame. While
    the impedance force (torque) stays within its limit, its damping ``-D v`` is left to the implicit
    step (:func:`free_velocity`) and only the stiffness term is returned; beyond it the clipped law is
    returned as a constant (the norm limits of :func:`contactkit.control.impedance.impedance_wrench`).
    """
    force, torque = np.zeros(3), np.zeros(3)
    force[2] = ctrl.weight
    if not ctrl.pose_mode:
        for a in range(3):
            force[a] += ctrl.command[a]
            torque[a] = ctrl.command[3 + a]
        return force, torque, False, False
    err = rotation_error(ctrl.target_quat, quat)
    spring, raw_f = np.empty(3), np.empty(3)
    turn, raw_t = np.empty(3), np.empty(3)
    for a in range(3):
        spring[a] = ctrl.stiffness_pos[a] * (ctrl.target_pos[a] - origin[a])
        raw_f[a] = spring[a] - ctrl.damping_pos[a] * v_origin[a]
        turn[a] = ctrl.stiffness_rot[a] * err[a]
        raw_t[a] = turn[a] - ctrl.damping_rot[a] * omega[a]
    size_f = math.sqrt(raw_f[0] ** 2 + raw_f[1] ** 2 + raw_f[2] ** 2)
    size_t = math.sqrt(raw_t[0] ** 2 + raw_t[1] ** 2 + raw_t[2] ** 2)
    implicit_f, implicit_t = size_f <= ctrl.max_force, size_t <= ctrl.max_torque
    for a in range(3):
        force[a] += spring[a] if implicit_f else raw_f[a] * ctrl.max_force / size_f
        torque[a] = turn[a] if implicit_t else raw_t[a] * ctrl.max_torque / size_t
    return force, torque, implicit_f, implicit_t


@njit(cache=True)
def origin_map(rot, com_local):
    """``G (3, 6)``: velocity of the tool origin from ``V = [v_com; ω_body]``, ``v_o = v_com - S(ρ) R ω``
    with ``ρ = -R com_local`` (the point Jacobian of :func:`contactkit.engine.problem.body_point_jacobians`)."""
    rho = -(rot @ com_local)
    g = np.zeros((3, 6))
    for a in range(3):
        g[a, a] = 1.0
    for c in range(3):  # column c of -S(ρ) R is R[:, c] × ρ
        col = rot[:, c]
        g[0, 3 + c] = col[1] * rho[2] - col[2] * rho[1]
        g[1, 3 + c] = col[2] * rho[0] - col[0] * rho[2]
        g[2, 3 + c] = col[0] * rho[1] - col[1] * rho[0]
    return g


@njit(cache=True)
def free_velocity(body, ctrl, settings, rot, quat, vel, origin, m_eff_inv):
    """End-of-step velocity without contact ``(6,)`` (module docstring, steps 1–2).

    Writes ``m_eff_inv (6, 6) = (M + hD)⁻¹``; returns ``(v_free, force, torque, imp_f, imp_t, g)`` with the
    controller's explicit wrench and implicit flags (:func:`control_wrench`) and ``g`` of :func:`origin_map`.
    """
    h = settings.h
    g = origin_map(rot, body.com_local)
    omega_w = rot @ vel[3:]
    force, torque, imp_f, imp_t = control_wrench(ctrl, origin, quat, g @ vel, omega_w)
    mass = np.zeros((6, 6))
    for a in range(3):
        mass[a, a] = body.mass
    mass[3:, 3:] = body.inertia
    damp_o = np.zeros((3, 3))
    damp_r = body.angular_damping * np.eye(3)
    for a in range(3):
        damp_o[a, a] = body.linear_damping + (ctrl.damping_pos[a] if imp_f else 0.0)
        if imp_t:
            damp_r += ctrl.damping_rot[a] * np.outer(rot[a], rot[a])  # Rᵀ diag(D) R
    eff = mass + h * (g.T @ damp_o @ g)
    eff[3:, 3:] += h * damp_r
    q = g.T @ force
    q[:3] += body.mass * body.gravity
    q[3:] += rot.T @ torque
    spin = body.gyro_inertia @ vel[3:]
    lhs = eff.copy()
    rhs = mass @ vel + h * q
    # gyroscopic term in passive-midpoint form (paper 1 eq 1): (J - h/2 S(Jω)) ω⁺ = (J + h/2 S(Jω)) ω + h τ,
    # energy-conserving and stable at any spin for both pose updates
    skew = 0.5 * h * np.array([[0.0, -spin[2], spin[1]], [spin[2], 0.0, -spin[0]], [-spin[1], spin[0], 0.0]])
    lhs[3:, 3:] -= skew
    rhs[3:] += skew @ vel[3:]
    m_eff_inv[:, :] = np.linalg.inv(eff)
    return np.linalg.solve(lhs, rhs), force, torque, imp_f, imp_t, g


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
    count = reduce_contacts(buf.raw, raw_count, settings.max_contacts, settings.cos_cluster, settings.per_cluster,
                            buf.contacts)
    return raw_count, count


@njit(cache=True)
def solve_contacts(buf, settings, count, com, rot, m_eff_inv, v_free):
    """Build and solve the contact problem of ``count`` contacts (step 4). Returns ``(V⁺, sweeps, change)``."""
    h = settings.h
    build_rows(buf.contacts, count, com, rot, m_eff_inv, buf.frames, buf.jac, buf.m_inv_jt, buf.blocks)
    for i in range(count):
        buf.bias[i] = max(buf.contacts[i, 0], 0.0) / h
        buf.mu[i] = buf.contacts[i, 7] * settings.friction_scale
    if settings.warm_start:
        warm_start(buf.contacts[:, 8], count, buf.prev_keys, buf.prev_impulses, buf.counts[1], buf.impulses)
    else:
        buf.impulses[:count] = 0.0
    v = v_free.copy()
    lever = 0.0
    for i in range(count):
        lever = max(lever, math.sqrt((buf.contacts[i, 4] - com[0]) ** 2 + (buf.contacts[i, 5] - com[1]) ** 2
                                     + (buf.contacts[i, 6] - com[2]) ** 2))
        for r in range(3):
            for c in range(6):
                v[c] += buf.m_inv_jt[i, r, c] * buf.impulses[i, r]
    args = (count, buf.jac, buf.m_inv_jt, buf.blocks, buf.bias, buf.mu, buf.impulses, v, settings.max_iterations,
            settings.tolerance, settings.relaxation, lever)
    sweeps, change = solve_box(*args) if settings.solver == SOLVER_BOX else solve_cone(*args)
    buf.counts[1] = count
    buf.prev_keys[:count] = buf.contacts[:count, 8]
    buf.prev_impulses[:count] = buf.impulses[:count]
    return v, sweeps, change


@njit(cache=True)
def correct_pose(buf, settings, body, count, com_old, rot_old, com, quat):
    """Project out the penetration predicted at the new pose (step 5, split impulse; velocities kept).

    Each contact's tool point is carried rigidly to the new pose; its gap becomes ``d + n·(p' - p)`` (the
    environment taken as locally planar), as :func:`contactkit.engine.integrators.step_rigid_body` does.
    Returns ``(corrected, smallest predicted gap [m])``.
    """
    h = settings.h
    rot = np.empty((3, 3))
    quat_matrix(quat, rot)
    rows, target = np.empty((count, 6)), np.empty(count)
    smallest, needed = np.inf, False
    for i in range(count):
        p = buf.contacts[i, 4:7]
        n = buf.contacts[i, 1:4]
        moved = com + rot @ (rot_old.T @ (p - com_old))
        gap = buf.contacts[i, 0] + n[0] * (moved[0] - p[0]) + n[1] * (moved[1] - p[1]) + n[2] * (moved[2] - p[2])
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
def _step(geo, body, ctrl, settings, buf, com, quat, vel, reading, applied):
    """One engine step (module docstring); updates ``com, quat, vel`` and accumulates the sensing."""
    h = settings.h
    rot = np.empty((3, 3))
    quat_matrix(quat, rot)
    origin = com - rot @ body.com_local
    m_eff_inv = np.empty((6, 6))
    v_free, force, torque, imp_f, imp_t, g = free_velocity(body, ctrl, settings, rot, quat, vel, origin, m_eff_inv)
    motion = np.empty((2, 6))
    motion[0, :3], motion[0, 3:] = vel[:3], rot @ vel[3:]
    motion[1, :3], motion[1, 3:] = v_free[:3], rot @ v_free[3:]
    lookahead, speed = _lookahead(body, settings, motion)
    raw_count, count = collide(geo, buf, settings, rot, origin, com, motion, lookahead, speed)
    v_plus, sweeps, change = solve_contacts(buf, settings, count, com, rot, m_eff_inv, v_free)
    stats = buf.stats
    stats[STAT_CONTACTS] = count
    stats[STAT_RAW] = max(stats[STAT_RAW], raw_count)
    stats[STAT_SWEEPS] += sweeps
    stats[STAT_MAX_SWEEPS] = max(stats[STAT_MAX_SWEEPS], sweeps)
    stats[STAT_UNCONVERGED] += change > settings.tolerance
    for i in range(count):
        stats[STAT_MIN_DISTANCE] = min(stats[STAT_MIN_DISTANCE], buf.contacts[i, 0])
    contact_ft(count, buf.contacts, buf.frames, buf.impulses, h, origin + rot @ body.sensor_pos,
               rot @ body.sensor_rot, reading)
    v_origin, omega_w = g @ v_plus, rot @ v_plus[3:]
    for a in range(3):
        applied[a] += force[a] - (ctrl.damping_pos[a] * v_origin[a] if imp_f else 0.0)
        applied[3 + a] += torque[a] - (ctrl.damping_rot[a] * omega_w[a] if imp_t else 0.0)
    com_old = com.copy()
    move = v_plus if settings.integrator == INTEGRATOR_EULER else 0.5 * (vel + v_plus)
    for a in range(3):
        com[a] += h * move[a]
    rotate_body(quat, h * move[3], h * move[4], h * move[5])
    vel[:] = v_plus
    if count:
        corrected, _ = correct_pose(buf, settings, body, count, com_old, rot, com, quat)
        stats[STAT_CORRECTED] += corrected


@njit(cache=True)
def advance(geo, body, ctrl, settings, buf, state, reading, applied):
    """One control period: ``settings.n_steps`` engine steps of ``settings.h`` seconds.

    Args:
        geo: :class:`~._kernels_contacts.ContactGeometry`. body: :class:`BodyModel`. ctrl: :class:`Control`.
        settings: :class:`Settings`. buf: :class:`Buffers` (carried warm start, caches, last contacts).
        state: ``(13,)`` ``[com (3) world; quat (4); v_com (3) world; ω (3) body]``, advanced in place.
        reading: ``(6,)`` mean F/T reading over the period, sensor frame (written) [N, N·m].
        applied: ``(6,)`` mean controller wrench at the tool origin, world frame (written) [N, N·m].

    Stops early with ``buf.stats[STAT_NONFINITE] = 1`` if the state stops being finite (the caller keeps the
    previous state).
    """
    reading[:] = 0.0
    applied[:] = 0.0
    buf.stats[:] = 0.0
    buf.stats[STAT_MIN_DISTANCE] = np.inf
    com, quat, vel = state[0:3], state[3:7], state[7:13]
    for _ in range(settings.n_steps):
        _step(geo, body, ctrl, settings, buf, com, quat, vel, reading, applied)
        if not np.all(np.isfinite(state)):
            buf.stats[STAT_NONFINITE] = 1.0
            return
    reading /= settings.n_steps
    applied /= settings.n_steps


@njit(cache=True)
def _clip_norm(x, y, z, limit):
    size = math.sqrt(x * x + y * y + z * z)
    scale = min(1.0, limit / max(size, 1e-300))
    return x * scale, y * scale, z * scale


@njit(cache=True)
def pose_delta_target(state, com_local, delta, max_pos_step, max_rot_step):
    """Impedance target ``(pos (3,), quat (4,))`` of a pose-delta action from the kernel state ``(13,)``.

    The rule of :func:`contactkit.control.impedance.pose_target`: the current tool origin plus the position
    part clipped to ``max_pos_step`` [m], and ``exp(φ) ⊗ q`` with the rotation vector ``φ`` (world) clipped
    to ``max_rot_step`` [rad].
    """
    quat = state[3:7].copy()
    rot = np.empty((3, 3))
    quat_matrix(quat, rot)
    dx, dy, dz = _clip_norm(delta[0], delta[1], delta[2], max_pos_step)
    px, py, pz = _clip_norm(delta[3], delta[4], delta[5], max_rot_step)
    pos = state[0:3] - rot @ com_local + np.array([dx, dy, dz])
    angle = math.sqrt(px * px + py * py + pz * pz)
    half = 0.5 * angle
    sinc = math.sin(half) / angle if angle > SMALL_ANGLE else 0.5 - angle * angle / 48.0
    w1, x1, y1, z1 = math.cos(half), px * sinc, py * sinc, pz * sinc
    w2, x2, y2, z2 = quat[0], quat[1], quat[2], quat[3]
    target = np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])
    return pos, target


@njit(cache=True)
def body_state(state, com_local):
    """``(pos, quat, lin_vel, ang_vel)`` of :class:`~contactkit.state.BodyState` (tool origin, world frame)
    from the kernel state ``(13,)`` ``[com; quat; v_com; ω_body]``."""
    quat = state[3:7].copy()
    rot = np.empty((3, 3))
    quat_matrix(quat, rot)
    offset = rot @ com_local
    omega = rot @ state[10:13]
    lin = state[7:10] - np.array([omega[1] * offset[2] - omega[2] * offset[1],
                                  omega[2] * offset[0] - omega[0] * offset[2],
                                  omega[0] * offset[1] - omega[1] * offset[0]])
    return state[0:3] - offset, quat, lin, omega
