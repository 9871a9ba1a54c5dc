"""Mapped CSV logs: any column names, units, quaternion order and frames given by a mapping file.

The file is comma-separated UTF-8 with a header row; ``#`` lines and blank lines are skipped; unmapped
columns are ignored. A stream's cells may be left empty on rows where that stream has no sample (all of the
stream's cells, e.g. a 1 kHz F/T sensor and a 100 Hz pose in one file): each stream keeps its own samples and
:func:`~contactkit.data.robot_log_resample.episode_from_streams` synchronises them. Times are read exactly
(decimal text → integer nanoseconds), so a log in ``ns`` loses nothing.
"""

from __future__ import annotations

import csv
import decimal
import os

import numpy as np

from contactkit.data.robot_log import LogLimits, _parse_value, _rows, read_log_text
from contactkit.data.robot_log_mapping import LogMapping, QuatOrder, StreamKind, StreamSpec, euler_to_quat
from contactkit.data.robot_log_resample import Stream, make_stream
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.rotations import rotvec_to_quat

_XYZW_TO_WXYZ = (3, 0, 1, 2)

MAX_LOG_TIME_NS = 4_102_444_800 * 10**9
"""Latest time a log may hold [ns]: 2100-01-01 as a Unix epoch stamp (a log's times are either time since its start
or an epoch stamp, both far below); a later one is a time unit too large (``units.time: ms`` on a log in ns gives
1e24 ns, past the int64 nanoseconds times are kept in)."""


def _scales(spec: StreamSpec, mapping: LogMapping) -> np.ndarray:
    """SI factor of each of the stream's columns, in column order."""
    u = mapping.units
    per_group = {"position": u.position, "quaternion": 1.0, "rotvec": u.angle, "euler": u.angle, "force": u.force,
                 "torque": u.torque, "linear": u.position, "angular": u.angle}
    if spec.kind is StreamKind.JOINTS:
        return np.ones(len(spec.names))
    return np.concatenate([np.full(len(cols), per_group[g]) for g, cols in spec.columns.items()])


def stream_columns(spec: StreamSpec, mapping: LogMapping) -> tuple[str, ...]:
    """The CSV columns of a stream, in value order (quaternions as listed: ``quaternion_order``)."""
    if spec.kind is StreamKind.JOINTS:
        return spec.names
    if spec.columns is None:
        raise InvalidInputError(f"{mapping.source}: mapping key 'streams.{spec.kind.value}.columns': a CSV import "
                                "needs the stream's columns")
    return tuple(c for cols in spec.columns.values() for c in cols)


def _time_ns(path: str, line: int, column: str, text: str, per_unit: int) -> int:
    try:
        value = decimal.Decimal(text.strip()) * per_unit
    except decimal.InvalidOperation:
        raise DatasetError(f"{path}: line {line}, column '{column}': {text.strip()[:40]!r} is not a number") from None
    if not value.is_finite():
        raise DatasetError(f"{path}: line {line}, column '{column}': value {text.strip()!r} is not finite")
    if abs(value) > MAX_LOG_TIME_NS:
        unit = {10**9: "s", 10**6: "ms", 10**3: "us", 1: "ns"}.get(per_unit, "?")
        raise DatasetError(f"{path}: line {line}, column '{column}': time {text.strip()[:40]} {unit} is "
                           f"{float(value) * 1e-9:.3g} s, past the year 2100 (MAX_LOG_TIME_NS); the time unit is too "
                           f"large for this log: set mapping units.time to the log's unit (ns? us?)")
    return int(value.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def _header_positions(path: str, line: int, row: list[str], wanted: dict[str, tuple[str, ...]]) -> dict:
    names = [c.strip() for c in row]
    dupes = sorted({n for n in names if n and names.count(n) > 1})
    if dupes:
        raise DatasetError(f"{path}: line {line}: duplicate column(s) {dupes}")
    missing = [c for cols in wanted.values() for c in cols if c not in names]
    if missing:
        raise DatasetError(f"{path}: line {line}: missing column(s) {missing} named by the mapping; the header has "
                           f"{names[:20]}")
    return {k: [names.index(c) for c in cols] for k, cols in wanted.items()}


def _read_table(path: str, mapping: LogMapping, wanted: dict) -> dict:
    """``{key: [(line, fields or None)]}`` per stream, plus the time column, from the file."""
    samples: dict = {k: [] for k in wanted}
    try:
        with read_log_text(path) as f:
            rows = _rows(path, f)
            pos = None
            for line, row in rows:
                if pos is None:
                    pos = _header_positions(path, line, row, wanted)
                    width = max(i for idx in pos.values() for i in idx) + 1
                    continue
                if len(row) < width:
                    raise DatasetError(f"{path}: line {line}: {len(row)} fields, the mapped columns need {width}")
                for k, idx in pos.items():
                    samples[k].append((line, [row[i] for i in idx]))
            if pos is None:
                raise DatasetError(f"{path}: no header row (the file is empty)")
    except csv.Error as exc:
        raise DatasetError(f"{path}: not a readable CSV text file ({exc})") from None
    return samples


def _stream(path, spec: StreamSpec, mapping, cols, rows, times, limits) -> Stream | None:
    keep, values, ids = [], [], []
    for (line, cells), t in zip(rows, times, strict=True):
        blank = [not c.strip() for c in cells]
        if all(blank):
            continue
        if any(blank):
            empty = [c for c, b in zip(cols, blank, strict=True) if b]
            raise DatasetError(f"{path}: line {line}: the {spec.kind.value} cells {empty} are empty but others of "
                               "the stream are not (leave all of a stream's cells empty, or none)")
        values.append([_parse_value(path, line, c, x) for c, x in zip(cols, cells, strict=True)])
        keep.append(t)
        ids.append(line)
    if not values:
        raise DatasetError(f"{path}: the {spec.kind.value} columns {list(cols)} hold no sample")
    v = np.asarray(values, dtype=np.float64) * _scales(spec, mapping)
    if spec.kind in (StreamKind.POSE, StreamKind.COMMAND_POSE):
        if "rotvec" in spec.columns:
            v = np.concatenate([v[:, :3], rotvec_to_quat(v[:, 3:])], axis=1)
        elif "euler" in spec.columns:
            v = np.concatenate([v[:, :3], euler_to_quat(v[:, 3:], mapping.euler)], axis=1)
        elif mapping.quaternion_order is QuatOrder.XYZW:
            v[:, 3:] = v[:, 3:][:, _XYZW_TO_WXYZ]
    keep = [t + spec.offset_ns for t in keep]
    return make_stream(spec.kind, keep, v, ids, f"{path}: line {{id}}, columns {', '.join(cols)}", limits)


def read_csv_streams(path: str | os.PathLike, mapping: LogMapping,
                     limits: LogLimits | None = None) -> dict[StreamKind, Stream]:
    """Read a mapped CSV log into its streams (SI units, w-first quaternions, logged frames).

    Raises:
        DatasetError: the file is missing or not text, lacks a mapped column, has a malformed, non-finite or
            implausible value, a stream with partly empty cells, or time that does not increase — naming the
            file, line and columns.
        InvalidInputError: a mapped stream without CSV columns.
    """
    path = os.fspath(path)
    wanted = {"time": (mapping.time_column,)}
    wanted |= {k: stream_columns(s, mapping) for k, s in mapping.streams.items()}
    samples = _read_table(path, mapping, wanted)
    times = []
    for line, (text,) in samples["time"]:
        times.append(_time_ns(path, line, mapping.time_column, text, mapping.units.time_ns) if text.strip() else None)
    out = {}
    for kind, spec in mapping.streams.items():
        rows = samples[kind]
        no_time = next((line for (line, cells), t in zip(rows, times, strict=True)
                        if t is None and any(c.strip() for c in cells)), None)
        if no_time is not None:
            raise DatasetError(f"{path}: line {no_time}, column '{mapping.time_column}': empty time")
        out[kind] = _stream(path, spec, mapping, wanted[kind], rows, times, limits)
    return out
