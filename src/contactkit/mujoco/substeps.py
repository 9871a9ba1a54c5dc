"""Compiled summary of one control step's sub-steps: mean F/T reading and mean applied wrench.

``mujoco.rollout`` returns, for each of the ``n`` physics sub-steps, the state after it and the sensor
values evaluated at that state. This kernel turns them into the two quantities a control step reports.
It replaces some thirty small numpy calls per control step (numba, measured: it was the largest cost
of ``collect`` after the physics itself). Conventions are those of :mod:`contactkit.mujoco.world`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.rotations.numba import product_rotvec


@njit(cache=True)
def _quat_mat(q: np.ndarray) -> np.ndarray:
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    r = np.empty((3, 3))
    r[0, 0] = 1 - 2 * (y * y + z * z)
    r[0, 1] = 2 * (x * y - w * z)
    r[0, 2] = 2 * (x * z + w * y)
    r[1, 0] = 2 * (x * y + w * z)
    r[1, 1] = 1 - 2 * (x * x + z * z)
    r[1, 2] = 2 * (y * z - w * x)
    r[2, 0] = 2 * (x * z - w * y)
    r[2, 1] = 2 * (y * z + w * x)
    r[2, 2] = 1 - 2 * (x * x + y * y)
    return r


@njit(cache=True)
def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def _rotation_error(target: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Rotation vector of ``target⁻¹ ⊗ q`` (canonical sign, angle in [0, π]), as MuJoCo's subQuat."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return product_rotvec(target[0], -target[1], -target[2], -target[3], q[0] / n, q[1] / n, q[2] / n, q[3] / n)


CLIP_FORCE, CLIP_TORQUE = 1, 2
"""Bits of the clip report of :func:`summarise_substeps`: some sub-step's force (torque) actuator hit its range."""
NO_TCP = np.zeros(3)


def summarise_substeps(states, sensors, q0, start, target_pos, target_quat, stiffness, damping, limits,
                       implicit, pose_mode, sensor_pos, sensor_rot, feedforward, rows, site_pose, tcp=NO_TCP):
    """Mean F/T reading and mean applied wrench of one control step, and which actuator limits bound.

    Args:
        states: ``(n, nstate)`` MuJoCo FULLPHYSICS states after each sub-step; qpos starts at ``q0``.
        sensors: ``(n, ≥9)`` net contact sensor rows (force the tool exerts, world; torque about the
            centroid; centroid), evaluated at the states.
        start: ``(13,)`` tool qpos (7) and qvel (6) before the first sub-step (angular velocity in the body frame).
        target_pos, target_quat: impedance targets of the tool centre point (mocap bodies) ``(3,)``, ``(4,)``.
        stiffness, damping, limits: ``(6,)`` per actuator (translation x, y, z, rotation about the target's axes).
        implicit: MuJoCo integrates the actuators' velocity terms implicitly (not ``Euler``).
        pose_mode: whether the impedance actuators act (a pose mode); otherwise only ``feedforward``.
        sensor_pos, sensor_rot: sensor frame in the tool frame (the real, mounted one).
        feedforward: ``(6,)`` constant wrench about the tool origin (gravity compensation [+ command]).
        rows: ``(n, 6)`` output: the reading after each sub-step (sensor frame), for the sensor's filter.
        site_pose: take the sensor frame's world pose from ``sensors[k, 9:12]`` (position) and ``[12:16]``
            (quaternion), the frame sensors of a compliant tool (whose pose is not the driven body's ``qpos``).
        tcp: ``(3,)`` the actuators' site in the driven body's frame [m] (``ImpedanceGains.tcp_offset``).

    Returns:
        ``(reading (6,), applied (6,), clipped)``: the contact wrench on the tool in the sensor frame about the
        sensor origin, and the wrench the controller applied in the world frame about the tool origin,
        both averaged over the sub-steps; ``clipped``: :data:`CLIP_FORCE` | :data:`CLIP_TORQUE` bits.
    """
    tcp = np.asarray(tcp, dtype=np.float64)
    return _summarise(states, sensors, q0, start, target_pos, target_quat, stiffness, damping, limits, implicit,
                      pose_mode, sensor_pos, sensor_rot, feedforward, rows, site_pose, tcp, bool(np.any(tcp != 0.0)))


@njit(cache=True)
def _pose_terms(pos_k, rot_k, bodyw_k, lin_k, lin1, bodyw1, target_pos, r_target, tcp, has_tcp):
    """Actuator lengths (translation only: the caller writes the rotation error), velocities before and after one
    sub-step ``(6,)`` each (implicit damping reads the second at the first's Jacobian), and the site's lever
    ``R tcp`` ``(3,)`` [m, world]."""
    length, vel, vel_next, lever = np.empty(6), np.empty(6), np.empty(6), np.zeros(3)
    w_k, w_1 = rot_k @ bodyw_k, rot_k @ bodyw1
    if has_tcp:
        lever = rot_k @ tcp
        length[0:3] = pos_k + lever - target_pos
        vel[0:3] = lin_k + _cross(w_k, lever)
        vel_next[0:3] = lin1 + _cross(w_1, lever)
    else:
        length[0:3] = pos_k - target_pos
        vel[0:3] = lin_k
        vel_next[0:3] = lin1
    vel[3:6] = r_target.T @ w_k
    vel_next[3:6] = r_target.T @ w_1
    return length, vel, vel_next, lever


@njit(cache=True)
def _summarise(states, sensors, q0, start, target_pos, target_quat, stiffness, damping, limits,
               implicit, pose_mode, sensor_pos, sensor_rot, feedforward, rows, site_pose, tcp, has_tcp):
    """:func:`summarise_substeps` compiled (``has_tcp``: ``tcp`` is not zero)."""
    n = states.shape[0]
    reading = np.zeros(6)
    applied = np.zeros(6)
    clipped = 0
    r_target = _quat_mat(target_quat)
    pos_k, quat_k = start[0:3].copy(), start[3:7].copy()
    lin_k, bodyw_k = start[7:10].copy(), start[10:13].copy()
    rot_k = _quat_mat(quat_k)
    for k in range(n):
        row = states[k]
        pos1, quat1 = row[q0:q0 + 3], row[q0 + 3:q0 + 7]
        lin1, bodyw1 = row[q0 + 7:q0 + 10], row[q0 + 10:q0 + 13]
        rot1 = _quat_mat(quat1)
        force = -sensors[k, 0:3]
        if site_pose:
            origin = sensors[k, 9:12].copy()
            r_s = _quat_mat(sensors[k, 12:16])
        else:
            origin = pos1 + rot1 @ sensor_pos
            r_s = rot1 @ sensor_rot
        torque = -sensors[k, 3:6] + _cross(sensors[k, 6:9] - origin, force)
        rows[k, 0:3] = r_s.T @ force
        rows[k, 3:6] = r_s.T @ torque
        reading += rows[k]
        applied += feedforward
        if pose_mode:
            length, vel, vel_next, lever = _pose_terms(pos_k, rot_k, bodyw_k, lin_k, lin1, bodyw1, target_pos,
                                                       r_target, tcp, has_tcp)
            length[3:6] = _rotation_error(target_quat, quat_k)
            act = np.empty(6)
            for i in range(6):
                raw = -stiffness[i] * length[i] - damping[i] * vel[i]
                act[i] = min(max(raw, -limits[i]), limits[i])
                if abs(raw) > limits[i]:
                    clipped |= CLIP_FORCE if i < 3 else CLIP_TORQUE
                if implicit and abs(raw) <= limits[i]:
                    act[i] -= damping[i] * (vel_next[i] - vel[i])
            applied[0:3] += act[0:3]
            applied[3:6] += r_target @ act[3:6]
            if has_tcp:
                applied[3:6] += _cross(lever, act[0:3])
        pos_k, quat_k, lin_k, bodyw_k, rot_k = pos1, quat1, lin1, bodyw1, rot1
    return reading / n, applied / n, clipped


@njit(cache=True)
def low_pass(rows, state, alpha):
    """First-order low-pass of the sub-step readings, in place, and its mean over the period.

    ``y_k = y_{k-1} + α (x_k − y_{k-1})`` with ``α = 1 − exp(−h / τ)`` (the exact discretisation of ``τ ẏ = x − y``
    for an input held over each sub-step of ``h`` seconds, so a unit step reads ``1 − exp(−k h / τ)`` after ``k``
    sub-steps).

    Args:
        rows: ``(n, 6)`` readings after each sub-step [N, N·m]; replaced by the filtered ones.
        state: ``(6,)`` filter output before the first sub-step; updated to the last output.
        alpha: ``α`` in ``(0, 1]``.

    Returns:
        ``(6,)`` mean of the filtered rows.
    """
    mean = np.zeros(6)
    for k in range(rows.shape[0]):
        for i in range(6):
            state[i] += alpha * (rows[k, i] - state[i])
            rows[k, i] = state[i]
            mean[i] += state[i]
    return mean / rows.shape[0]


@njit(cache=True)
def _batch_readings(states, sensors, q0, sensor_pos, sensor_rot):
    zeros3, zeros6, unit = np.zeros(3), np.zeros(6), np.array([1.0, 0.0, 0.0, 0.0])
    out = np.empty((states.shape[0], 6))
    rows = np.empty((states.shape[1], 6))
    for b in range(states.shape[0]):
        out[b] = _summarise(states[b], sensors[b], q0, states[b, 0, q0:q0 + 13].copy(), zeros3, unit, zeros6,
                            zeros6, zeros6, False, False, sensor_pos, sensor_rot, zeros6, rows, False, zeros3,
                            False)[0]
    return out


def mean_readings(states: np.ndarray, sensors: np.ndarray, q0: int, sensor_pos: np.ndarray,
                  sensor_rot: np.ndarray) -> np.ndarray:
    """Mean noise-free F/T reading of each of ``b`` rollouts, ``(b, 6)`` (sensor frame, about the sensor origin)
    [N, N·m]: :func:`summarise_substeps` without the controller terms, one compiled loop over the batch.

    Args:
        states: ``(b, n, nstate)`` sub-step states; sensors: ``(b, n, ≥9)`` their contact sensor rows.
        q0: index of the tool's qpos in a state row; sensor_pos, sensor_rot: ``(3,)``, ``(3, 3)`` the sensor frame
            in the tool frame.
    """
    return _batch_readings(np.ascontiguousarray(states, dtype=np.float64),
                           np.ascontiguousarray(sensors, dtype=np.float64), int(q0),
                           np.asarray(sensor_pos, dtype=np.float64), np.asarray(sensor_rot, dtype=np.float64))
