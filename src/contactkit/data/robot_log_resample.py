"""Logged streams to an :class:`Episode`: frames, time synchronisation and resampling to the control rate.

Every source (mapped CSV, ROS 2 bag) is first read into :class:`Stream` s — per-field samples on their own
clocks, in SI units, integer-nanosecond times. :func:`episode_from_streams` then does the rest the same way
for all sources (so a bag and the equivalent CSV give the same arrays):

1. pose of the logged body (or forward kinematics of the joints) → tool pose in the world:
   ``p = R_b p_log + t_b + R(q_w) t_tool``, ``q = q_b ⊗ q_log ⊗ q_tool`` (``frames.base``, ``frames.tool``);
2. a control grid ``g_k = g_0 + k Δ`` (``Δ = 1 / control_rate``, rounded to ns) over the span every stream
   covers (Act-FIGNet paper Fig. 6: the robot loop and the logger run at other rates than the control target);
3. states at ``g_k``: positions and logged velocities interpolated linearly, orientations by slerp; without a
   logged twist, velocities are finite differences of the resampled poses;
4. step k's F/T reading ``wrench[k]``: the mean over ``[g_k, g_{k+1}]`` of the linearly interpolated readings
   (``ft_sampling: mean``, a synchronising box filter) or the reading at ``g_{k+1}`` (``end``; ``auto``, the
   default, takes ``mean`` for a sensor logged at least twice per control period, else ``end``), mapped to
   contactkit's sensor frame: ``f = R_s f_log``, ``τ = R_s τ_log + p_s × f``;
5. commands held (zero-order) from the last logged command at or before ``g_k``: a commanded wrench (logged base
   frame, about the logged body's origin) becomes ``action[k]``: rotated into the world and moved to the tool
   origin, ``τ = R_b τ_log − (R t_tool) × f``; a commanded pose ``(p_d, q_d)`` becomes, for the scene
   controller's tool centre point ``o`` (``tcp(p, q) = p + R(q) o``), the pose-delta ``command[k] = (tcp(p_d, q_d) −
   tcp(p_k, q_k), log(q_d ⊗ q_k*))`` (world frame, :class:`ActionMode` ``POSE_DELTA``), or with ``command_mode:
   pose-target`` the absolute target ``(tcp(p_d, q_d), log(q_d))`` as the robot tracked it (``POSE_TARGET``).

Episode time is ``g_k − g_0`` [s].
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.data.robot_log_mapping import (
    FT_MEAN_MIN_SAMPLES,
    FtSampling,
    LogMapping,
    StreamKind,
    Transform,
    TwistFrame,
)
from contactkit.data.schema import Episode
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import cross, quat_conj, quat_mul, quat_rotate, quat_to_rotvec, rotvec_to_quat

MIN_GRID_POINTS = 2
"""States an episode needs (one control step)."""

ForwardKinematics = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""Joint positions ``(N, J)`` [rad or m] → logged-body pose ``(pos (N, 3) [m], quat (N, 4) (w, x, y, z))`` in the
logged base frame."""


@dataclass(frozen=True)
class Stream:
    """The samples of one stream: ``times_ns`` ``(N,)`` int64, strictly increasing; ``values`` ``(N, k)`` float64 SI
    (pose rows: position, unit quaternion w-first); ``ids`` ``(N,)`` int64 naming each sample in messages (a line
    or message number); ``where`` names sample ``{id}`` (``"log.csv: line {id}, columns x, y, z"``)."""

    times_ns: np.ndarray
    values: np.ndarray
    ids: np.ndarray
    where: str

    def at(self, i: int) -> str:
        """Where sample ``i`` is, for messages."""
        return self.where.replace("{id}", str(int(self.ids[i])))


def seconds_text(ns: int) -> str:
    """Exact decimal text of a time in integer nanoseconds, in seconds (``60000000`` → ``"0.06"``)."""
    return format(decimal.Decimal(int(ns)).scaleb(-9).normalize(), "f")


_POSE_KINDS = (StreamKind.POSE, StreamKind.COMMAND_POSE)
_WRENCH_KINDS = (StreamKind.WRENCH, StreamKind.COMMAND_WRENCH)
_COMMAND_KINDS = (StreamKind.COMMAND_POSE, StreamKind.COMMAND_WRENCH)


def make_stream(kind: StreamKind, times_ns, values, ids, where: str, limits=None) -> Stream:
    """A checked :class:`Stream`: time strictly increasing, quaternions of pose streams within
    ``limits.quat_renorm_tol`` of unit norm (then normalised), wrench components within the plausibility bounds;
    ``where`` as :attr:`Stream.where`.

    Raises:
        DatasetError: naming ``where``, the sample (``label`` id) and the problem.
    """
    from contactkit.data.robot_log import LogLimits

    limits = limits or LogLimits()
    s = Stream(np.asarray(times_ns, dtype=np.int64), np.asarray(values, dtype=np.float64).reshape(len(ids), -1),
               np.asarray(ids, dtype=np.int64), where)
    dt = np.diff(s.times_ns)
    if np.any(dt <= 0):
        i = int(np.argmax(dt <= 0)) + 1
        what = "repeats" if dt[i - 1] == 0 else "goes backwards from"
        raise DatasetError(f"{s.at(i)}: time {seconds_text(s.times_ns[i])} s {what} "
                           f"{seconds_text(s.times_ns[i - 1])} s of the sample before; time must increase strictly")
    bad = ~np.isfinite(s.values)
    if bad.any():
        i = int(np.argmax(bad.any(axis=1)))
        raise DatasetError(f"{s.at(i)}: value is not finite")
    if kind in _POSE_KINDS:
        norm = np.linalg.norm(s.values[:, 3:], axis=-1)
        dev = np.abs(norm - 1.0)
        if np.any(dev > limits.quat_renorm_tol):
            i = int(np.argmax(dev > limits.quat_renorm_tol))
            raise DatasetError(f"{s.at(i)}: quaternion |q| = {norm[i]:.6g} deviates from 1 by {dev[i]:.3g} > "
                               f"QUAT_RENORM_TOL = {limits.quat_renorm_tol:g}; not a unit quaternion (check "
                               "quaternion_order and the columns)")
        s.values[:, 3:] /= norm[:, None]
    if kind in _WRENCH_KINDS:
        for cols, bound, unit, hint in ((slice(0, 3), limits.max_force, "N", "force: mN"),
                                        (slice(3, 6), limits.max_torque, "N·m", "torque: N*mm")):
            over = np.abs(s.values[:, cols]) > bound
            if over.any():
                i = int(np.argmax(over.any(axis=1)))
                raise DatasetError(f"{s.at(i)}: {kind.value} component {np.abs(s.values[i, cols]).max():g} {unit} "
                                   f"exceeds the plausibility bound {bound:g} {unit}; is the log in other units "
                                   f"(mapping units: {{{hint}}})? Or raise the bound (LogLimits)")
    return s


@dataclass(frozen=True)
class ImportedLog:
    """An imported episode with what the log held: ``has_action`` (a commanded wrench), ``action_mode`` (pose
    targets → the mapping's ``command_mode``, else ``WRENCH``), ``logged_velocity`` (a twist stream) and the grid
    step [s]."""

    episode: Episode
    has_action: bool
    action_mode: ActionMode
    logged_velocity: bool
    control_dt: float
    start_ns: int = 0
    """The first grid time on the log's clock [ns] (an epoch stamp for most robot logs)."""
    ft_sampling: FtSampling = FtSampling.MEAN
    """How the step readings were formed (``auto`` resolved)."""
    warnings: tuple[str, ...] = ()
    """Named warnings of the consistency checks (:mod:`contactkit.data.robot_log_checks`), one line each."""


def _apply_pose_frames(pos: np.ndarray, quat: np.ndarray, base: Transform, tool: Transform):
    """World pose of the tool origin from the logged body's pose in the logged base frame (step 1)."""
    pos_w = quat_rotate(base.rotation, pos) + base.offset
    quat_w = quat_mul(base.rotation, quat)
    return pos_w + quat_rotate(quat_w, tool.offset), quat_mul(quat_w, tool.rotation)


def _bracket(times: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index ``i`` with ``t_i ≤ g < t_{i+1}`` (the last interval for ``g = t_end``) and weight
    ``(g − t_i)/(t_{i+1} − t_i)``."""
    i = np.clip(np.searchsorted(times, grid, side="right") - 1, 0, len(times) - 2)
    w = (grid - times[i]).astype(np.float64) / (times[i + 1] - times[i]).astype(np.float64)
    return i, w[:, None]


def interpolate_linear(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear interpolation of ``values`` ``(N, k)`` at ``times`` ``(N,)`` (int64 ns, N ≥ 2) to ``grid`` ``(K,)``
    inside ``[t_0, t_{N-1}]``; returns ``(K, k)``."""
    i, w = _bracket(times, grid)
    return values[i] + w * (values[i + 1] - values[i])


def interpolate_slerp(times: np.ndarray, quat: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation of unit quaternions ``(N, 4)`` (w, x, y, z) to ``grid`` ``(K,)``: along the
    shorter arc, ``q = q_i ⊗ exp(w log(q_i* ⊗ q_{i+1}))``; returns ``(K, 4)`` with ``w`` ≥ 0."""
    i, w = _bracket(times, grid)
    rel = quat_mul(quat_conj(quat[i]), quat[i + 1])
    rel *= np.where(rel[:, :1] < 0.0, -1.0, 1.0)
    q = quat_mul(quat[i], rotvec_to_quat(w * quat_to_rotvec(rel)))
    return q * np.where(q[:, :1] < 0.0, -1.0, 1.0)


def interval_means(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Mean of the piecewise-linear interpolant of ``values`` ``(N, k)`` over each ``[g_k, g_{k+1}]``: ``(K-1, k)``.

    Exact integral: ``F(g) = C_i + (g − t_i) (y_i + y(g)) / 2`` with ``C`` the trapezoid sums at the samples."""
    t = (times - times[0]).astype(np.float64) * 1e-9
    c = np.concatenate([np.zeros((1, values.shape[1])),
                        np.cumsum(0.5 * np.diff(t)[:, None] * (values[1:] + values[:-1]), axis=0)])
    i, _ = _bracket(times, grid)
    g = (grid - times[0]).astype(np.float64) * 1e-9
    y = interpolate_linear(times, values, grid)
    big_f = c[i] + (g - t[i])[:, None] * 0.5 * (values[i] + y)
    return np.diff(big_f, axis=0) / np.diff(g)[:, None]


def _hold(stream: Stream, grid: np.ndarray) -> np.ndarray:
    """Zero-order hold: the last sample at or before each grid time."""
    return stream.values[np.searchsorted(stream.times_ns, grid, side="right") - 1]


def _grid(streams: dict[StreamKind, Stream], pose_times: np.ndarray, rate: float | None, source: str):
    """The control grid (int64 ns) over the span all streams cover, and its step [ns]."""
    if rate is None:
        step = int(np.median(np.diff(pose_times)))
    else:
        step = int(round(1e9 / rate))
    if step <= 0:
        raise InvalidInputError(f"{source}: control_rate {rate!r} Hz gives a zero control period in nanoseconds")
    starts = {k: int(s.times_ns[0]) for k, s in streams.items()}
    ends = {k: int(s.times_ns[-1]) for k, s in streams.items() if k not in _COMMAND_KINDS}  # commands are held
    start, end = max(starts.values()), min(ends.values())
    n = (end - start) // step + 1 if end >= start else 0
    if n < MIN_GRID_POINTS:
        spans = ", ".join(f"{k.value} {seconds_text(starts[k])}..{seconds_text(ends[k])} s" for k in ends)
        raise DatasetError(f"{source}: the streams overlap for less than one control period "
                           f"({step * 1e-9:g} s): {spans}")
    return start + step * np.arange(n, dtype=np.int64), step


def _sensor_wrench(ft: np.ndarray, sensor: Transform) -> np.ndarray:
    """Logged F/T ``(N, 6)`` in contactkit's sensor frame: ``f = R_s f``, ``τ = R_s τ + p_s × f``."""
    f = quat_rotate(sensor.rotation, ft[:, :3])
    return np.concatenate([f, quat_rotate(sensor.rotation, ft[:, 3:]) + cross(sensor.offset, f)], axis=-1)


def _pose_samples(streams, mapping: LogMapping, fk: ForwardKinematics | None):
    """``(times_ns, pos, quat)`` of the tool in the world from the pose stream or the joints (step 1)."""
    if StreamKind.POSE in streams:
        s = streams[StreamKind.POSE]
        pos, quat = s.values[:, :3], s.values[:, 3:]
    else:
        s = streams[StreamKind.JOINTS]
        if fk is None:
            raise InvalidInputError(f"{mapping.source}: the log's pose comes from joints, which needs a forward "
                                    "kinematics function (forward_kinematics=, or --fk MODULE:FUNCTION)")
        pos, quat = (np.asarray(a, dtype=np.float64) for a in fk(s.values))
        if pos.shape != (len(s.times_ns), 3) or quat.shape != (len(s.times_ns), 4) or not (
                np.isfinite(pos).all() and np.isfinite(quat).all()):
            raise InvalidInputError(f"forward kinematics returned pos {pos.shape}, quat {quat.shape} (or non-finite "
                                    f"values) for {len(s.times_ns)} joint samples; expected (N, 3), (N, 4)")
        quat = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    pos, quat = _apply_pose_frames(pos, quat, mapping.base, mapping.tool)
    return s.times_ns, pos, quat


def _velocities(streams, mapping: LogMapping, grid, pos, quat, times, raw_quat_grid):
    """``(lin_vel, ang_vel)`` ``(K, 3)`` at the grid in the world: the logged twist if any (step 3)."""
    from contactkit.data.robot_log import finite_difference_velocities

    if StreamKind.TWIST not in streams:
        return finite_difference_velocities(times, pos, quat)
    tw = streams[StreamKind.TWIST]
    twist = interpolate_linear(tw.times_ns, tw.values, grid)
    lin, ang = twist[:, :3], twist[:, 3:]
    if mapping.twist_frame is TwistFrame.BODY:  # body frame of the logged body → logged base frame
        lin, ang = quat_rotate(raw_quat_grid, lin), quat_rotate(raw_quat_grid, ang)
    lin, ang = quat_rotate(mapping.base.rotation, lin), quat_rotate(mapping.base.rotation, ang)
    lever = quat_rotate(quat_mul(mapping.base.rotation, raw_quat_grid), mapping.tool.offset)
    return lin + cross(ang, lever), ang


def episode_from_streams(streams: dict[StreamKind, Stream], mapping: LogMapping,
                         forward_kinematics: ForwardKinematics | None = None,
                         tcp_offset=(0.0, 0.0, 0.0)) -> ImportedLog:
    """Synchronise, resample and convert the streams of one log into an episode (steps in the module docstring).

    Args:
        streams: the log's streams (SI units, logged frames), at least pose (or joints) and wrench.
        mapping: units are already applied; its frames, control rate and F/T sampling are used here.
        forward_kinematics: joints → logged-body pose, needed when the pose comes from a joints stream.
        tcp_offset: the scene controller's tool centre point ``(3,)`` [m, tool frame] that pose commands refer to
            (:func:`pose_command`; zero: the tool origin).

    Returns:
        the episode (``K`` grid states, ``K − 1`` steps) and what the log held.

    Raises:
        DatasetError: the streams do not overlap for one control period.
        InvalidInputError: joints without forward kinematics, or a forward kinematics of the wrong shape.
    """
    times, pos_s, quat_s = _pose_samples(streams, mapping, forward_kinematics)
    if len(times) < 2:
        raise DatasetError(f"{mapping.source}: the pose stream has {len(times)} sample(s); at least 2 are needed")
    grid, step = _grid(streams, times, mapping.control_rate, mapping.source)
    pos = interpolate_linear(times, pos_s, grid)
    quat = interpolate_slerp(times, quat_s, grid)
    t = (grid - grid[0]).astype(np.float64) * 1e-9
    raw_quat = quat_mul(quat_conj(mapping.base.rotation), quat_mul(quat, quat_conj(mapping.tool.rotation)))
    lin_vel, ang_vel = _velocities(streams, mapping, grid, pos, quat, t, raw_quat)
    ws = streams[StreamKind.WRENCH]
    ft = _sensor_wrench(ws.values, mapping.sensor)
    sampling = resolve_ft_sampling(mapping.ft_sampling, ws.times_ns, step)
    if sampling is FtSampling.MEAN:
        wrench = interval_means(ws.times_ns, ft, grid)
    else:
        wrench = interpolate_linear(ws.times_ns, ft, grid[1:])
    n = len(grid) - 1
    action = np.zeros((n, 6))
    has_action = StreamKind.COMMAND_WRENCH in streams
    if has_action:
        held = _hold(streams[StreamKind.COMMAND_WRENCH], grid[:-1])
        force = quat_rotate(mapping.base.rotation, held[:, :3])
        lever = quat_rotate(quat_mul(mapping.base.rotation, raw_quat[:-1]), mapping.tool.offset)  # body → tool
        action = np.concatenate([force, quat_rotate(mapping.base.rotation, held[:, 3:]) - cross(lever, force)], -1)
    command, mode = action.copy(), ActionMode.WRENCH
    if StreamKind.COMMAND_POSE in streams:
        held = _hold(streams[StreamKind.COMMAND_POSE], grid[:-1])
        p_d, q_d = _apply_pose_frames(held[:, :3], held[:, 3:], mapping.base, mapping.tool)
        command, mode = pose_command(pos[:-1], quat[:-1], p_d, q_d, tcp_offset, mapping.command_mode), \
            mapping.command_mode
    episode = Episode(t, pos, quat, lin_vel, ang_vel, action, command, wrench).validated(mapping.source)
    return ImportedLog(episode, has_action, mode, StreamKind.TWIST in streams, step * 1e-9, int(grid[0]), sampling)


def pose_command(pos: np.ndarray, quat: np.ndarray, target_pos: np.ndarray, target_quat: np.ndarray,
                 tcp_offset, mode: ActionMode) -> np.ndarray:
    """``(K, 6)`` commands of logged pose targets, world frame, for the scene's impedance controller
    (:func:`contactkit.control.impedance.command_target`): the tool centre point ``p + R(q) o`` of the tool origin
    ``pos (K, 3)``, ``quat (K, 4)`` and of the target ``target_pos``, ``target_quat`` (the target's tool origin), with
    ``o`` = ``tcp_offset`` ``(3,)`` [m, tool frame]. ``POSE_DELTA``: ``(tcp_d − tcp, log(q_d ⊗ q*))``;
    ``POSE_TARGET``: ``(tcp_d, log(q_d))`` [m, rad]."""
    o = np.asarray(tcp_offset, dtype=np.float64)
    tcp_d = target_pos + quat_rotate(target_quat, o)
    if ActionMode(mode) is ActionMode.POSE_TARGET:
        q = target_quat * np.where(target_quat[:, :1] < 0.0, -1.0, 1.0)
        return np.concatenate([tcp_d, quat_to_rotvec(q)], axis=-1)
    rel = quat_mul(target_quat, quat_conj(quat))
    rel *= np.where(rel[:, :1] < 0.0, -1.0, 1.0)
    return np.concatenate([tcp_d - (pos + quat_rotate(quat, o)), quat_to_rotvec(rel)], axis=-1)


def resolve_ft_sampling(sampling: FtSampling, ft_times_ns: np.ndarray, step_ns: int) -> FtSampling:
    """``auto`` → ``mean`` when the F/T stream has at least :data:`FT_MEAN_MIN_SAMPLES` samples per control period
    (median interval), else ``end``; ``mean`` and ``end`` as given."""
    if sampling is not FtSampling.AUTO:
        return sampling
    interval = float(np.median(np.diff(ft_times_ns))) if len(ft_times_ns) > 1 else float("inf")
    return FtSampling.MEAN if step_ns >= FT_MEAN_MIN_SAMPLES * interval else FtSampling.END
