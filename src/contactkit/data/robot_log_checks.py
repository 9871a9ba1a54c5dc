"""Consistency checks of an imported robot log: the mistakes a mapping can make that every value check passes.

A reordered quaternion still has unit norm, torques in N·mm declared N·m are still finite, a base frame without the
cell's yaw still gives poses: each is caught here by what the log says about itself or about its scene, and is
either refused (:class:`~contactkit.errors.DatasetError`, one line naming the likely mistake and the mapping key to
fix) or reported as a named warning (:class:`RobotLogWarning`) when a real log could also produce it:

* ``rotation-jump`` (refused): the orientation turns faster between two pose samples than any robot wrist can
  (:data:`MAX_TOOL_ANGULAR_SPEED_RAD_S`) — a wrong orientation group or columns (a reordered quaternion alone keeps
  the angle between samples: ``|<q1, q2>|`` does not depend on the order, so it is caught by the next two);
* ``twist-mismatch`` (refused): the orientation's (or position's) derivative disagrees with the logged twist —
  ``quaternion_order``, ``units.angle``, ``units.position`` or ``streams.twist.frame``;
* ``torque-lever`` (refused, with a scene): a torque larger than any force the sensor reads (plus the tool's weight)
  can make on the tool's size — torques in N·mm declared N·m, or ``frames.sensor.offset``;
* ``torque-scale`` (warning, without a scene): the torques need a lever beyond :data:`MAX_TOOL_LEVER_M` on the read
  forces (the scene's ``torque-lever`` cannot run) — torques in N·mm declared N·m;
* ``force-scale`` (warning, with a scene): every force far below the tool's weight — forces in N declared mN;
* ``tool-tilt`` (warning, with a scene): the tool's axis far from the scene's start orientation — ``frames.tool`` /
  ``frames.base`` rotation or ``quaternion_order``;
* ``gravity`` (warning, with a scene): the orientation turns the tool's weight in the sensor frame by newtons, but the
  force readings do not follow — a reordered quaternion that still looks upright (its angle to the truth is about
  the tool axis, where ``tool-tilt`` is blind), or a wrench already compensated for the tool's load;
* ``penetration`` (warning, with a scene): the imported tool poses inside the scene's geometry deeper than a
  calibrated cell's pose error (:data:`PENETRATION_TOL_M`) — ``frames.base`` (the slot's yaw), ``frames.tool``;
* ``ft-lag`` (warning): the F/T stream agrees best with the motion at a time shift the mapping does not state
  (clocks of two topics or two machines) — ``streams.wrench.offset_s``.
"""

from __future__ import annotations

import warnings

import numpy as np

from contactkit.data.robot_log_mapping import LogMapping, StreamKind
from contactkit.data.robot_log_resample import ImportedLog, Stream, interpolate_linear
from contactkit.errors import DatasetError
from contactkit.rotations import quat_angle_between, quat_conj, quat_mul, quat_rotate, quat_to_rotvec

STANDARD_GRAVITY = 9.80665
"""[m/s²]."""

MAX_TOOL_ANGULAR_SPEED_RAD_S = 4.0 * np.pi
"""Fastest plausible turn of a tool between two pose samples [rad/s] (720°/s): twice the fastest wrist joint of
common arms (UR e-Series wrists 360°/s, Franka 150°/s); a misread quaternion turns 140-180° in one sample."""

MIN_ROTATION_JUMP_RAD = np.deg2rad(10.0)
"""A turn between two samples must also exceed this [rad] to count as a jump (sensor noise at 1 kHz is not one)."""

TWIST_MISMATCH_REL = 0.5
"""Largest RMS disagreement between the pose's derivative and the logged twist, relative to the larger RMS of the
two: finite differences of a noisy pose differ by far less; a wrong unit or frame by 100 % and more."""

TWIST_MISMATCH_FLOOR_ANG_RAD_S = 0.2
"""Angular-velocity disagreement [rad/s] below which the twist check never refuses (noise of slow motion)."""

TWIST_MISMATCH_FLOOR_LIN_M_S = 0.02
"""Linear-velocity disagreement [m/s] below which the twist check never refuses (noise of slow motion)."""

TORQUE_FLOOR_NM = 1.0
"""Torque [N·m] every log may read beyond the lever bound: an untared sensor's bias and noise (a 6-axis sensor's
torque bias is tenths of a N·m)."""

TORQUE_OUTLIER_FRACTION = 0.01
"""Fraction of steps that may exceed the lever bound (a glitch, an impact) before the log is refused."""

MAX_TOOL_LEVER_M = 1.0
"""Longest lever [m] between an F/T sensor and the contact it reads on a robot tool (end effectors are centimetres to
tens of centimetres long); without a scene the median torque over the median force (at least 1 N) is judged by it."""

FORCE_SCALE_FRACTION = 0.01
"""A log whose largest force stays below this fraction of the tool's weight reads forces too small by a unit."""

MAX_TOOL_TILT_RAD = np.deg2rad(60.0)
"""Median angle [rad] between the imported tool axis and the scene's start axis beyond which the frames or the
quaternion order are suspect (an insertion or a placement keeps its tool axis within tens of degrees)."""

GRAVITY_MIN_SWING_N = 0.5
"""Smallest swing [N] (RMS over the log) of the tool's weight in the sensor frame, as the logged orientation turns it,
for the ``gravity`` check to judge: a smaller one hides under contact forces and sensor noise."""

GRAVITY_MIN_FOLLOWED = 0.3
"""Fraction of that swing the force readings must follow (the RMS of their best linear fit on the weight's direction)
for the orientation to count as consistent: a correct log follows it almost fully (contact forces add, they do not
cancel it), a misread orientation not at all."""

PENETRATION_TOL_M = 2e-4
"""Deepest penetration [m] of an imported tool pose into the scene that a calibrated cell explains: arm
repeatability ±0.03-0.05 mm and the registration of the cell's CAD to the robot (~0.1-0.2 mm); rigid parts under
tens of newtons deform by microns. Deeper is a frame mistake (a missing yaw of the slot, a tool offset)."""

MAX_PENETRATION_POSES = 2000
"""Poses checked against the scene at most (evenly spaced; a collision query costs about a millisecond)."""

MAX_FT_LAG_S = 0.2
"""Largest F/T-to-motion shift [s] searched: clock offsets between topics of one cell are milliseconds to tens of
milliseconds; a stated ``offset_s`` is applied before the search."""

FT_LAG_STEP_S = 0.002
"""Resolution [s] of the F/T lag search."""

FT_LAG_TOL_S = 0.01
"""A best lag within this [s] of the stated alignment is no warning (below a 100 Hz sample interval)."""

FT_LAG_MIN_GAIN = 0.05
"""How much better (in R², out of 1) the best lag must explain the F/T than the stated one to warn."""

MAX_FT_LAG_ROWS = 20000
"""Pose samples used by the lag search at most (evenly spaced)."""


class RobotLogWarning(UserWarning):
    """A named consistency warning of an imported log (the message starts with the check's name)."""


def _tool_extent(scene) -> float:
    """Largest distance [m] of a tool vertex from the sensor origin."""
    from contactkit.collision.contacts import CollisionWorld

    world = CollisionWorld(scene)
    verts = world.tool_verts[world.tool_vmask]
    return float(np.max(np.linalg.norm(verts - np.asarray(scene.tool.sensor_pos), axis=-1)))


def check_rotation_jumps(streams: dict[StreamKind, Stream], mapping: LogMapping) -> None:
    """Refuse a pose stream that turns faster than :data:`MAX_TOOL_ANGULAR_SPEED_RAD_S` between two samples."""
    s = streams.get(StreamKind.POSE)
    if s is None or len(s.times_ns) < 2:
        return
    q = s.values[:, 3:7]
    angle = quat_angle_between(q[1:], q[:-1])
    speed = angle / (np.diff(s.times_ns) * 1e-9)
    bad = (angle > MIN_ROTATION_JUMP_RAD) & (speed > MAX_TOOL_ANGULAR_SPEED_RAD_S)
    if bad.any():
        i = int(np.argmax(bad)) + 1
        raise DatasetError(f"rotation-jump: {s.at(i)}: the orientation turns {np.rad2deg(angle[i - 1]):.0f}° from the "
                           f"sample before ({speed[i - 1]:.3g} rad/s, beyond MAX_TOOL_ANGULAR_SPEED_RAD_S = "
                           f"{MAX_TOOL_ANGULAR_SPEED_RAD_S:.3g}) at {int(bad.sum())} sample(s): the orientation "
                           f"columns are likely misread (mapping quaternion_order: xyzw? wxyz? the orientation group, "
                           f"{mapping.source})")


def check_twist(log: ImportedLog, mapping: LogMapping) -> None:
    """Refuse a logged twist that the pose's derivative contradicts (module docstring)."""
    if not log.logged_velocity:
        return
    from contactkit.data.robot_log import finite_difference_velocities

    ep = log.episode
    lin, ang = finite_difference_velocities(ep.time, ep.pos, ep.quat)
    for name, fd, logged, floor, keys in (
            ("angular", ang, ep.ang_vel, TWIST_MISMATCH_FLOOR_ANG_RAD_S,
             "quaternion_order, units.angle, streams.twist.frame"),
            ("linear", lin, ep.lin_vel, TWIST_MISMATCH_FLOOR_LIN_M_S,
             "units.position, streams.twist.frame, frames.tool")):
        rms = lambda a: float(np.sqrt(np.mean(np.sum(a * a, axis=-1))))  # noqa: E731
        err, scale = rms(fd - logged), max(rms(fd), rms(logged))
        if err > max(TWIST_MISMATCH_REL * scale, floor):
            raise DatasetError(f"twist-mismatch: {mapping.source}: the pose's {name} velocity (finite differences, "
                               f"RMS {rms(fd):.3g}) and the logged twist's (RMS {rms(logged):.3g}) differ by RMS "
                               f"{err:.3g} {'rad/s' if name == 'angular' else 'm/s'}: check the mapping's {keys}")


def check_wrench(log: ImportedLog, scene, mapping: LogMapping) -> list[str]:
    """Refuse torques no force on the tool can make; warn about forces far below the tool's weight."""
    ep, m = log.episode, float(scene.tool.mass)
    weight = m * STANDARD_GRAVITY
    r = _tool_extent(scene)
    f = np.linalg.norm(ep.wrench[:, :3], axis=-1)
    tau = np.linalg.norm(ep.wrench[:, 3:], axis=-1)
    bound = (f + 2.0 * weight) * r + TORQUE_FLOOR_NM
    over = tau > bound
    if over.mean() > TORQUE_OUTLIER_FRACTION:
        i = int(np.argmax(tau - bound))
        raise DatasetError(f"torque-lever: {mapping.source}: the torque reads {tau[i]:.3g} N·m at step {i}, but the "
                           f"force there ({f[i]:.3g} N) and the tool's weight ({m:g} kg) can make at most "
                           f"{bound[i]:.3g} N·m on a tool reaching {r * 1e3:.0f} mm from the sensor "
                           f"({int(over.sum())} of {len(over)} steps beyond): the torques look like N·mm (mapping "
                           "units.torque: N*mm) or frames.sensor.offset is wrong")
    out = []
    if 0.0 < f.max() < FORCE_SCALE_FRACTION * weight:
        out.append(f"force-scale: {mapping.source}: the largest force is {f.max():.3g} N, below "
                   f"{FORCE_SCALE_FRACTION:g} of the tool's weight ({weight:.3g} N): are the forces in N declared mN "
                   "(mapping units.force)?")
    return out


def check_torque_scale(log: ImportedLog, mapping: LogMapping) -> list[str]:
    """Warn (no scene: no tool size or weight) when the median torque needs a lever beyond :data:`MAX_TOOL_LEVER_M`
    on the median force (at least 1 N, so a free-space log with tiny forces is judged against a newton)."""
    w = log.episode.wrench
    if not len(w):
        return []
    f = max(float(np.median(np.linalg.norm(w[:, :3], axis=-1))), 1.0)
    tau = float(np.median(np.linalg.norm(w[:, 3:], axis=-1)))
    if tau <= MAX_TOOL_LEVER_M * f + TORQUE_FLOOR_NM:
        return []
    return [f"torque-scale: {mapping.source}: the median torque {tau:.3g} N·m would need a {tau / f:.3g} m lever on "
            f"the median force {f:.3g} N (a robot tool reaches well under MAX_TOOL_LEVER_M = {MAX_TOOL_LEVER_M:g} m): "
            "are the torques in N·mm declared N·m (mapping units.torque)? --scene checks them against the tool"]


def check_tilt(log: ImportedLog, scene, mapping: LogMapping) -> list[str]:
    """Warn when the imported tool axis is far from the scene's start axis (median over the states)."""
    z = np.array([0.0, 0.0, 1.0])
    axes = quat_rotate(log.episode.quat, z)
    start = quat_rotate(np.asarray(scene.tool.init_quat, dtype=np.float64), z)
    tilt = float(np.median(np.arccos(np.clip(axes @ start, -1.0, 1.0))))
    if tilt > MAX_TOOL_TILT_RAD:
        return [f"tool-tilt: {mapping.source}: the tool's axis is {np.rad2deg(tilt):.0f}° (median) from the scene's "
                f"start orientation: check quaternion_order, the orientation group and the rotations of frames.tool "
                f"and frames.base"]
    return []


def check_gravity(log: ImportedLog, scene, mapping: LogMapping) -> list[str]:
    """Warn when the force readings do not turn with the tool's weight as the logged orientation says (module
    docstring): the weight's direction in the tool frame ``g_k = R_kᵀ ẑ`` swings by ``m g · RMS|g_k − ḡ|``; the
    readings' best affine fit on ``g_k`` (any constant sensor rotation and bias) must follow at least
    :data:`GRAVITY_MIN_FOLLOWED` of that."""
    ep = log.episode
    g = quat_rotate(quat_conj(ep.quat), np.array([0.0, 0.0, 1.0]))
    g = 0.5 * (g[:-1] + g[1:])[:len(ep.wrench)]  # a step's reading is its mean: the direction mid-step
    dg = g - g.mean(axis=0)
    swing = float(scene.tool.mass) * STANDARD_GRAVITY * float(np.sqrt(np.mean(np.sum(dg * dg, axis=-1))))
    if swing < GRAVITY_MIN_SWING_N or len(g) < 8:
        return []
    f = ep.wrench[:, :3] - ep.wrench[:, :3].mean(axis=0)
    coef, *_ = np.linalg.lstsq(dg, f, rcond=None)
    followed = float(np.sqrt(np.mean(np.sum((dg @ coef) ** 2, axis=-1))))
    if followed >= GRAVITY_MIN_FOLLOWED * swing:
        return []
    return [f"gravity: {mapping.source}: the logged orientation swings the tool's weight in the sensor frame by "
            f"{swing:.3g} N (RMS), but the force readings follow {followed:.3g} N of it: the orientation is likely "
            f"misread (mapping quaternion_order: xyzw? wxyz? the orientation group), or the logged wrench is already "
            f"compensated for the tool's load"]


def check_penetration(log: ImportedLog, scene, mapping: LogMapping) -> list[str]:
    """Warn when imported tool poses lie inside the scene deeper than :data:`PENETRATION_TOL_M`."""
    from contactkit.collision.contacts import CollisionWorld, contacts

    ep = log.episode
    world = CollisionWorld(scene)
    n = len(ep.time)
    rows = np.unique(np.linspace(0, n - 1, min(n, MAX_PENETRATION_POSES)).round().astype(int))
    depth = np.zeros(len(rows))
    for k, i in enumerate(rows):
        d = contacts(world, ep.pos[i], ep.quat[i], 0.0).distances
        depth[k] = max(0.0, -float(d.min())) if len(d) else 0.0
    inside = depth > PENETRATION_TOL_M
    if not inside.any():
        return []
    k = int(np.argmax(depth))
    return [f"penetration: {mapping.source}: {int(inside.sum())} of {len(rows)} checked states put the tool inside "
            f"the scene's geometry by more than PENETRATION_TOL_M = {PENETRATION_TOL_M * 1e3:g} mm (deepest "
            f"{depth[k] * 1e3:.2f} mm at step {int(rows[k])}): the log and the scene disagree on a frame — check "
            "frames.base (the slot's yaw and position), frames.tool and units.position, or the scene"]


def _motion_features(t: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """Pose and acceleration ``(N, 12)`` plus a constant column, standardised (for the lag fit): a contact's spring
    reads the pose, inertia the acceleration. Velocity is left out on purpose: ``f(t + τ) ≈ f(t) + τ ḟ(t)`` would let
    a velocity term absorb any small lag of a spring-like reading."""
    ref = quat[len(quat) // 2]
    rot = quat_to_rotvec(quat_mul(quat, quat_conj(ref)[None]))
    pose = np.concatenate([pos, rot], axis=1)
    acc = np.gradient(np.gradient(pose, t, axis=0), t, axis=0)
    x = np.concatenate([pose, acc], axis=1)
    x = (x - x.mean(axis=0)) / np.maximum(x.std(axis=0), 1e-12)
    return np.concatenate([x, np.ones((len(t), 1))], axis=1)


def ft_lag(pose: Stream, wrench: Stream) -> tuple[float, float, float]:
    """The shift ``lag`` [s] at which the F/T readings are best explained by a linear function of the motion (pose,
    velocity, acceleration): ``ft(t + lag) ≈ A · motion(t)``; returns ``(lag, R² at lag, R² at 0)``."""
    lags = np.arange(-MAX_FT_LAG_S, MAX_FT_LAG_S + FT_LAG_STEP_S / 2, FT_LAG_STEP_S)
    lo = max(pose.times_ns[0], wrench.times_ns[0] + int(MAX_FT_LAG_S * 1e9))
    hi = min(pose.times_ns[-1], wrench.times_ns[-1] - int(MAX_FT_LAG_S * 1e9))
    keep = np.flatnonzero((pose.times_ns >= lo) & (pose.times_ns <= hi))
    if len(keep) < 50:
        return 0.0, 0.0, 0.0
    keep = keep[np.unique(np.linspace(0, len(keep) - 1, min(len(keep), MAX_FT_LAG_ROWS)).round().astype(int))]
    t_ns = pose.times_ns[keep]
    x = _motion_features((t_ns - t_ns[0]) * 1e-9, pose.values[keep, :3], pose.values[keep, 3:7])
    scores = np.empty(len(lags))
    for k, lag in enumerate(lags):
        y = interpolate_linear(wrench.times_ns, wrench.values, t_ns + int(round(lag * 1e9)))
        y = y - y.mean(axis=0)
        total = float(np.sum(y * y))
        if total <= 0.0:
            return 0.0, 0.0, 0.0
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        res = y - x @ coef
        scores[k] = 1.0 - float(np.sum(res * res)) / total
    best = int(np.argmax(scores))
    return float(lags[best]), float(scores[best]), float(scores[int(np.argmin(np.abs(lags)))])


def check_ft_lag(streams: dict[StreamKind, Stream], mapping: LogMapping) -> list[str]:
    """Warn when the F/T agrees best with the motion at a shift the mapping's ``offset_s`` does not state."""
    if StreamKind.POSE not in streams or StreamKind.WRENCH not in streams:
        return []
    lag, best, zero = ft_lag(streams[StreamKind.POSE], streams[StreamKind.WRENCH])
    if abs(lag) <= FT_LAG_TOL_S or best - zero < FT_LAG_MIN_GAIN:
        return []
    stated = mapping.streams[StreamKind.WRENCH].offset_ns * 1e-9
    return [f"ft-lag: {mapping.source}: the F/T readings match the motion best {abs(lag) * 1e3:.0f} ms "
            f"{'later' if lag > 0 else 'earlier'} than stamped (R² {best:.2f} against {zero:.2f} as stamped): the two "
            f"streams' clocks differ; set streams.wrench.offset_s: {stated - lag:.3f} in the mapping"]


def check_imported(log: ImportedLog, streams: dict[StreamKind, Stream], mapping: LogMapping, scene=None) -> list[str]:
    """Run every check (module docstring); raise on the first refusal, return the warnings (each also issued as a
    :class:`RobotLogWarning`)."""
    check_rotation_jumps(streams, mapping)
    check_twist(log, mapping)
    found = []
    if scene is None:
        found += check_torque_scale(log, mapping)
    else:
        found += check_wrench(log, scene, mapping)
        found += check_tilt(log, scene, mapping)
        found += check_gravity(log, scene, mapping)
        found += check_penetration(log, scene, mapping)
    found += check_ft_lag(streams, mapping)
    for text in found:
        warnings.warn(RobotLogWarning(text), stacklevel=3)
    return found
