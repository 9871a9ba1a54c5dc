"""Free motion of the tool in numba: the impedance law, the free velocity of one step, pose helpers.

Coordinates of tight-tolerance paper eq 1: ``V = [v_com (world); ω (body)]``, ``M = diag(m I, J + a I)`` (``a``: the
wrist armature of ``WorldParams``, as MuJoCo adds it to the free joint's rotational inertia). In one step of
length ``h`` the tool feels

* the impedance law of :func:`contactkit.control.impedance.impedance_wrench` at the tool centre point (``Control.tcp``,
  the tool origin by default) — its stiffness explicitly, its damping implicitly while the force (torque) is below
  its limit, as MuJoCo's ``implicitfast`` treats actuator damping — or the commanded wrench, plus the gravity
  compensation (at the tool origin);
* gravity, and viscous damping on the origin's velocity and on ``ω`` (implicit);
* the gyroscopic term in the passive-midpoint form of tight-tolerance paper eq 1, which conserves the kinetic energy of
  free rotation, so no spin rate destabilises it (an explicit ``ω × Jω`` diverges once ``|ω| h`` nears 1).

Hence ``(M + hD) v_free = M V + h Q``, and the contact problem of the step sees the effective mass ``M + hD``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.engine.layout import STATE_COM, STATE_OMEGA, STATE_QUAT, STATE_VEL
from contactkit.rotations.numba import quat_conj, quat_mul, quat_normalize, quat_to_mat, quat_to_rotvec, rotvec_to_quat


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
    tcp: np.ndarray = np.zeros(3)  # (3,) where the spring acts, tool frame [m] (ImpedanceGains.tcp_offset)
    has_tcp: bool = False  # tcp is not zero (the zero TCP takes the tool-origin arithmetic, bit for bit)


@njit(cache=True)
def rotate_body(q, px, py, pz):
    """``q ⊗ exp(φ)`` (written into ``q (4,)``) for a body-frame rotation vector ``φ`` [rad]; unit, ``w ≥ 0``.

    The pose update of :func:`contactkit.engine.reference.integrators.displace` (tested against it)."""
    q[0], q[1], q[2], q[3] = quat_normalize(quat_mul(q, rotvec_to_quat((px, py, pz))))


@njit(cache=True)
def rotation_error(target, q):
    """Rotation vector ``(3,)`` [rad] of ``target ⊗ q⁻¹`` (world frame, angle in ``[0, π]``), as the impedance
    law's error (:func:`contactkit.rotations.quat_to_rotvec`)."""
    return quat_to_rotvec(quat_mul(target, quat_conj(q)))


@njit(cache=True)
def control_wrench(ctrl, origin, quat, v_origin, omega):
    """Explicit controller wrench and which damping terms are implicit.

    ``origin`` ``(3,)`` and ``v_origin`` ``(3,)`` are the position and velocity of the point the spring acts on
    (the tool centre point, :func:`tcp_map`). Returns ``(force (3,), torque (3,), implicit_force,
    implicit_torque)`` [N, N·m], world frame: the force at that point (the gravity compensation included) and the
    torque. While the impedance force (torque) stays within its limit, its damping ``-D v`` is left to the implicit
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
    with ``ρ = -R com_local`` (the point Jacobian of
    :func:`contactkit.engine.reference.problem.body_point_jacobians`)."""
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
def tcp_map(rot, origin, body, ctrl):
    """``(point (3,), G (3, 6), lever (3,))``: the tool centre point [m, world], its velocity map ``v_t = G V`` (as
    :func:`origin_map`) and ``R tcp`` [m, world]; the tool origin, :func:`origin_map` and zero without a TCP."""
    if not ctrl.has_tcp:
        return origin, origin_map(rot, body.com_local), np.zeros(3)
    lever = rot @ ctrl.tcp
    return origin + lever, origin_map(rot, body.com_local - ctrl.tcp), lever


@njit(cache=True)
def free_velocity(body, ctrl, settings, rot, quat, vel, origin, m_eff_inv):
    """End-of-step velocity without contact ``(6,)`` (module docstring, steps 1–2).

    Writes ``m_eff_inv (6, 6) = (M + hD)⁻¹``; returns ``(v_free, force, torque, imp_f, imp_t, g)`` with the
    controller's explicit wrench at the tool centre point and implicit flags (:func:`control_wrench`) and ``g``
    the TCP's velocity map (:func:`tcp_map`). The force acts at the TCP; the gravity compensation in it at the
    tool origin.
    """
    h = settings.h
    point, g, lever = tcp_map(rot, origin, body, ctrl)
    omega_w = rot @ vel[3:]
    force, torque, imp_f, imp_t = control_wrench(ctrl, point, quat, g @ vel, omega_w)
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
    if ctrl.has_tcp:  # the compensation acts at the tool origin, not the TCP: take its lever back
        q[3:] -= rot.T @ _cross3(lever, np.array([0.0, 0.0, ctrl.weight]))
    q[:3] += body.mass * body.gravity
    q[3:] += rot.T @ torque
    spin = body.gyro_inertia @ vel[3:]
    lhs = eff.copy()
    rhs = mass @ vel + h * q
    # gyroscopic term, passive midpoint (tight-tolerance paper eq 1): (J - h/2 S(Jω)) ω⁺ = (J + h/2 S(Jω)) ω + h τ,
    # energy-conserving and stable at any spin for both pose updates
    skew = 0.5 * h * np.array([[0.0, -spin[2], spin[1]], [spin[2], 0.0, -spin[0]], [-spin[1], spin[0], 0.0]])
    lhs[3:, 3:] -= skew
    rhs[3:] += skew @ vel[3:]
    m_eff_inv[:, :] = np.linalg.inv(eff)
    return np.linalg.solve(lhs, rhs), force, torque, imp_f, imp_t, g


@njit(cache=True)
def _cross3(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def _clip_norm(x, y, z, limit):
    size = math.sqrt(x * x + y * y + z * z)
    scale = min(1.0, limit / max(size, 1e-300))
    return x * scale, y * scale, z * scale


@njit(cache=True)
def pose_command_target(state, com_local, command, absolute, tcp, has_tcp, max_pos_step, max_rot_step):
    """Impedance target of the tool centre point of a pose command from the kernel state ``(13,)``
    (:mod:`contactkit.engine.layout`): ``(pos (3,), quat (4,), pos_clipped, rot_clipped)``.

    The rule of :func:`contactkit.control.impedance.command_target`: the command is a displacement of the TCP
    (``absolute`` False) or its absolute target (position [m, world], rotation vector [rad, world]); the
    displacement from the current TCP pose is clipped to ``max_pos_step`` [m] and ``max_rot_step`` [rad] by norm,
    and the flags say whether it was. ``tcp`` ``(3,)`` [m, tool frame]; ``has_tcp``: it is not zero.
    """
    quat = state[STATE_QUAT].copy()
    rot = quat_to_mat(quat)
    point = state[STATE_COM] - rot @ com_local
    if has_tcp:
        point = point + rot @ tcp
    if absolute:
        goal = rotvec_to_quat((command[3], command[4], command[5]))
        dphi = quat_to_rotvec(quat_mul(goal, quat_conj(quat)))
        delta = (command[0] - point[0], command[1] - point[1], command[2] - point[2], dphi[0], dphi[1], dphi[2])
    else:
        delta = (command[0], command[1], command[2], command[3], command[4], command[5])
    pos_clipped = math.sqrt(delta[0] ** 2 + delta[1] ** 2 + delta[2] ** 2) > max_pos_step
    rot_clipped = math.sqrt(delta[3] ** 2 + delta[4] ** 2 + delta[5] ** 2) > max_rot_step
    dx, dy, dz = _clip_norm(delta[0], delta[1], delta[2], max_pos_step)
    px, py, pz = _clip_norm(delta[3], delta[4], delta[5], max_rot_step)
    pos = point + np.array([dx, dy, dz])
    w, x, y, z = quat_mul(rotvec_to_quat((px, py, pz)), quat)
    if absolute and not pos_clipped:
        pos = np.array([command[0], command[1], command[2]])
    if absolute and not rot_clipped:
        w, x, y, z = goal
    return pos, np.array([w, x, y, z]), pos_clipped, rot_clipped


@njit(cache=True)
def pose_delta_target(state, com_local, delta, max_pos_step, max_rot_step):
    """Impedance target ``(pos (3,), quat (4,))`` of a pose-delta action of the tool origin (no TCP):
    :func:`pose_command_target` without its flags."""
    pos, quat, _, _ = pose_command_target(state, com_local, delta, False, np.zeros(3), False, max_pos_step,
                                          max_rot_step)
    return pos, quat


@njit(cache=True)
def body_state(state, com_local):
    """``(pos, quat, lin_vel, ang_vel)`` of :class:`~contactkit.state.BodyState` (tool origin, world frame)
    from the kernel state ``(13,)`` ``[com; quat; v_com; ω_body]`` (:mod:`contactkit.engine.layout`)."""
    quat = state[STATE_QUAT].copy()
    rot = quat_to_mat(quat)
    offset = rot @ com_local
    omega = rot @ state[STATE_OMEGA]
    lin = state[STATE_VEL] - np.array([omega[1] * offset[2] - omega[2] * offset[1],
                                       omega[2] * offset[0] - omega[0] * offset[2],
                                       omega[0] * offset[1] - omega[1] * offset[0]])
    return state[STATE_COM] - offset, quat, lin, omega
