"""Import a robot's CSV log of tool pose and F/T readings as an :class:`Episode` and a dataset file.

Format (see ``docs/dataset.md``): a header row naming the columns, then one row per sample; lines
starting with ``#`` and blank lines are skipped; columns may come in any order, unknown columns are
ignored. Required: ``t`` [s], ``x y z`` [m, world], ``qw qx qy qz`` (tool orientation, w first),
``fx fy fz`` [N] and ``tx ty tz`` [N·m] (F/T reading, sensor frame). Optional, all six or none:
``ax ay az atx aty atz``, the wrench commanded at that sample (world frame, tool origin) [N, N·m].

Conversion of ``N`` samples into an episode of ``T = N - 1`` steps: sample ``i`` is state ``s_i``;
``action[t]`` is the commanded wrench of sample ``t`` (zeros when the log has none — the policy
attribute then says ``"has_action": false``) and ``command = action``; ``wrench[t]`` is the F/T
reading of sample ``t + 1``, the one observed at the end of step t (the reading of sample 0 is dropped).
Velocities are not logged and come from finite differences (:func:`finite_difference_velocities`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass

import numpy as np

from contactkit.data.schema import DatasetMeta, Episode
from contactkit.data.writer import DatasetWriter
from contactkit.errors import DatasetError
from contactkit.model import ActionMode
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec

TIME_COLUMN = "t"
POSE_COLUMNS = ("x", "y", "z", "qw", "qx", "qy", "qz")
FT_COLUMNS = ("fx", "fy", "fz", "tx", "ty", "tz")
REQUIRED_COLUMNS = (TIME_COLUMN, *POSE_COLUMNS, *FT_COLUMNS)
"""Columns every log must have."""
ACTION_COLUMNS = ("ax", "ay", "az", "atx", "aty", "atz")
"""Optional commanded-wrench columns (all six or none)."""

QUAT_RENORM_TOL = 1e-3
"""A logged quaternion with ``| |q| - 1 |`` up to this is renormalised; beyond it the log is refused."""

MAX_PLAUSIBLE_FORCE = 1000.0
"""Largest plausible F/T force component [N]; larger values usually mean the log is in millinewtons."""

MAX_PLAUSIBLE_TORQUE = 100.0
"""Largest plausible F/T torque component [N·m]; larger values usually mean newton-millimetres."""

MAX_LOG_BYTES = 1 << 31
"""Largest CSV log read [bytes] (2 GiB: an hour of a 1 kHz F/T and pose log is about 0.4 GB); a log is read whole,
at most this plus one byte, through :func:`contactkit.files.read_bounded_text` (a FIFO or a device is refused)."""

LOG_BACKEND = "robot-log"
"""``backend`` attribute of datasets imported from logs."""


@dataclass(frozen=True)
class LogLimits:
    """Plausibility bounds applied to a log (defaults: the module constants)."""

    max_force: float = MAX_PLAUSIBLE_FORCE
    max_torque: float = MAX_PLAUSIBLE_TORQUE
    quat_renorm_tol: float = QUAT_RENORM_TOL


def _header(path: str, rows) -> tuple[dict[str, int], bool]:
    """Column positions of the needed columns and whether the action columns are present."""
    for line_no, row in rows:
        names = [c.strip() for c in row]
        dupes = sorted({n for n in names if names.count(n) > 1 and n})
        if dupes:
            raise DatasetError(f"{path}: line {line_no}: duplicate column(s) {dupes}")
        missing = [c for c in REQUIRED_COLUMNS if c not in names]
        if missing:
            raise DatasetError(f"{path}: line {line_no}: missing column(s) {missing}; a pose + F/T log needs "
                               f"the columns {list(REQUIRED_COLUMNS)}")
        present = [c for c in ACTION_COLUMNS if c in names]
        if present and len(present) != len(ACTION_COLUMNS):
            absent = [c for c in ACTION_COLUMNS if c not in present]
            raise DatasetError(f"{path}: line {line_no}: action columns must be all of "
                               f"{list(ACTION_COLUMNS)} or none; missing {absent}")
        wanted = REQUIRED_COLUMNS + (ACTION_COLUMNS if present else ())
        return {c: names.index(c) for c in wanted}, bool(present)
    raise DatasetError(f"{path}: no header row (the file is empty)")


def _rows(path: str, f):
    """``(line number, fields)`` of the non-blank, non-comment CSV records."""
    reader = csv.reader(f)
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()) or row[0].lstrip().startswith("#"):
            continue
        yield reader.line_num, row


def _parse_value(path: str, line_no: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DatasetError(f"{path}: line {line_no}, column '{column}': {text.strip()[:40]!r} is not a "
                           "number") from None
    if not math.isfinite(value):
        raise DatasetError(f"{path}: line {line_no}, column '{column}': value {text.strip()!r} is not finite")
    return value


def read_log_text(path: str | os.PathLike) -> io.StringIO:
    """The text of a CSV log as a stream for :mod:`csv` (newlines kept as written): a regular file of at most
    :data:`MAX_LOG_BYTES`, UTF-8 (:func:`contactkit.files.read_bounded`).

    Raises:
        DatasetError: missing, a FIFO, a device, a directory, too large or not UTF-8 — one line naming the file.
    """
    from contactkit.files import read_bounded

    path = os.fspath(path)
    if not os.path.lexists(path):
        raise DatasetError(f"{path}: no such log file")
    data = read_bounded(path, MAX_LOG_BYTES, lambda problem: DatasetError(f"{path}: log file {problem}"))
    try:
        return io.StringIO(data.decode("utf-8"), newline="")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not a readable CSV text file (not UTF-8: byte {data[exc.start]:#04x} at offset "
                           f"{exc.start})") from None


def read_log_table(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Parse a log into float64 columns ``{name: (N,)}`` and the file line number of each sample ``(N,)``.

    Raises:
        DatasetError: the file is missing, not a regular file, not text, lacks columns, or has a malformed or
            non-finite value — naming the file, line and column.
    """
    path = os.fspath(path)
    try:
        with read_log_text(path) as f:
            rows = _rows(path, f)
            cols, _ = _header(path, rows)
            values, lines = [], []
            for line_no, row in rows:
                if len(row) <= max(cols.values()):
                    raise DatasetError(f"{path}: line {line_no}: {len(row)} fields, the header has more")
                values.append([_parse_value(path, line_no, c, row[i]) for c, i in cols.items()])
                lines.append(line_no)
    except csv.Error as exc:
        raise DatasetError(f"{path}: not a readable CSV text file ({exc})") from None
    table = np.asarray(values, dtype=np.float64).reshape(len(values), len(cols))
    return {c: table[:, k] for k, c in enumerate(cols)}, np.asarray(lines, dtype=np.int64)


def _check_samples(path: str, table: dict[str, np.ndarray], lines: np.ndarray, limits: LogLimits) -> None:
    """Time strictly increasing, F/T components within the plausibility bounds."""
    if lines.size < 2:
        raise DatasetError(f"{path}: {lines.size} sample(s); a log needs at least 2 to make one step")
    t = table[TIME_COLUMN]
    dt = np.diff(t)
    if np.any(dt <= 0.0):
        i = int(np.argmax(dt <= 0.0)) + 1
        what = "repeats" if dt[i - 1] == 0.0 else "goes backwards from"
        raise DatasetError(f"{path}: line {lines[i]}, column '{TIME_COLUMN}': time {float(t[i])!r} s {what} "
                           f"{float(t[i - 1])!r} s at line {lines[i - 1]}; time must increase strictly")
    bounds = ((FT_COLUMNS[:3], limits.max_force, "N", "millinewtons"),
              (FT_COLUMNS[3:], limits.max_torque, "N·m", "newton-millimetres"))
    for columns, bound, unit, hint in bounds:
        for c in columns:
            over = np.abs(table[c]) > bound
            if over.any():
                i = int(np.argmax(over))
                raise DatasetError(f"{path}: line {lines[i]}, column '{c}': |{c}| = {abs(table[c][i]):g} "
                                   f"{unit} exceeds the plausibility bound {bound:g} {unit}; the log looks "
                                   f"like it is in {hint} (divide by 1000), or raise the bound (LogLimits)")


def _unit_quats(path: str, table: dict[str, np.ndarray], lines: np.ndarray, tol: float) -> np.ndarray:
    """``(N, 4)`` logged quaternions divided by their norms, refused beyond ``tol`` (sign kept)."""
    q = np.stack([table[c] for c in POSE_COLUMNS[3:]], axis=-1)
    norm = np.linalg.norm(q, axis=-1)
    dev = np.abs(norm - 1.0)
    if np.any(dev > tol):
        i = int(np.argmax(dev > tol))
        raise DatasetError(f"{path}: line {lines[i]}, columns qw, qx, qy, qz: |q| = {norm[i]:.6g} deviates "
                           f"from 1 by {dev[i]:.3g} > QUAT_RENORM_TOL = {tol:g}; not a unit quaternion")
    return q / norm[:, None]


def finite_difference_velocities(time: np.ndarray, pos: np.ndarray, quat: np.ndarray):
    """Linear and angular velocity of sampled poses by finite differences.

    Central difference over the two neighbours of each sample, one-sided at the two ends:
    ``v_i = (p_{i+1} - p_{i-1}) / (t_{i+1} - t_{i-1})`` and
    ``ω_i = log(q_{i+1} ⊗ q_{i-1}^*) / (t_{i+1} - t_{i-1})`` (``log`` = rotation vector). Both are exact for
    motion at constant linear and angular velocity (any sampling) and second order for uniform sampling.
    The relative rotation between neighbours must stay below π (the sign of ``q`` does not matter).

    Args:
        time: ``(N,)`` strictly increasing sample times [s], ``N ≥ 2``.
        pos: ``(N, 3)`` positions [m, world].
        quat: ``(N, 4)`` unit quaternions (w, x, y, z), body to world.

    Returns:
        ``(lin_vel (N, 3) [m/s, world], ang_vel (N, 3) [rad/s, world])``.
    """
    time = np.asarray(time, dtype=np.float64)
    hi = np.concatenate([np.arange(1, len(time)), [len(time) - 1]])
    lo = np.concatenate([[0], np.arange(0, len(time) - 1)])
    span = (time[hi] - time[lo])[:, None]
    lin_vel = (np.asarray(pos)[hi] - np.asarray(pos)[lo]) / span
    ang_vel = quat_to_rotvec(quat_mul(quat[hi], quat_conj(quat[lo]))) / span
    return lin_vel, ang_vel


def _episode_from_log(path: str, limits: LogLimits) -> tuple[Episode, bool]:
    table, lines = read_log_table(path)
    _check_samples(path, table, lines, limits)
    quat = _unit_quats(path, table, lines, limits.quat_renorm_tol)
    time = table[TIME_COLUMN]
    pos = np.stack([table[c] for c in POSE_COLUMNS[:3]], axis=-1)
    lin_vel, ang_vel = finite_difference_velocities(time, pos, quat)
    ft = np.stack([table[c] for c in FT_COLUMNS], axis=-1)
    has_action = ACTION_COLUMNS[0] in table
    if has_action:
        action = np.stack([table[c] for c in ACTION_COLUMNS], axis=-1)[:-1]
    else:
        action = np.zeros((len(time) - 1, 6))
    episode = Episode(time, pos, quat, lin_vel, ang_vel, action, action.copy(), ft[1:]).validated(path)
    return episode, has_action


def load_log(csv_path: str | os.PathLike, *, limits: LogLimits | None = None) -> Episode:
    """Read and check a CSV log and convert it into an :class:`Episode` (conventions in the module docstring).

    Args:
        csv_path: the log file.
        limits: plausibility bounds; default :class:`LogLimits` ().

    Returns:
        an episode of ``T = N - 1`` steps (``N`` samples) with ``seed = None``.

    Raises:
        DatasetError: naming the file, line and column of the first problem.
    """
    return _episode_from_log(os.fspath(csv_path), limits or LogLimits())[0]


def import_log(csv_path: str | os.PathLike, out_path: str | os.PathLike, *,
               scene_json: str | dict | None = None, world_json: str | dict | None = None, seed: int = 0,
               control_dt: float | None = None, limits: LogLimits | None = None,
               resume: bool = True) -> Episode:
    """Import a CSV log as one episode appended to the dataset ``out_path`` (created if absent).

    Args:
        scene_json / world_json: JSON object (text or dict) of the scene / physics parameters; ``{}`` if
            unknown.
        seed: the file's ``seed`` attribute.
        control_dt: the file's control period [s]; default the median sample interval of the log. Pass it
            explicitly to import several logs into one file (the writer requires equal meta).
        limits: plausibility bounds for the log.
        resume: append to an existing dataset with the same meta (see :class:`DatasetWriter`).

    Returns:
        the episode written.
    """
    episode, has_action = _episode_from_log(os.fspath(csv_path), limits or LogLimits())
    meta = DatasetMeta(
        scene=scene_json if scene_json is not None else "{}",
        world=world_json if world_json is not None else "{}",
        policy=json.dumps({"name": LOG_BACKEND, "has_action": has_action}),
        seed=seed,
        action_mode=ActionMode.WRENCH,
        control_dt=float(np.median(np.diff(episode.time))) if control_dt is None else control_dt,
        backend=LOG_BACKEND,
    )
    with DatasetWriter(out_path, meta=meta, resume=resume) as writer:
        writer.append_episode(episode)
    return episode
