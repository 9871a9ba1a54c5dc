"""The mapping file of a robot log: which CSV columns or ROS 2 topics hold which field, units, quaternion
order, frames and the control rate (``docs/robot-logs.md``).

A mapping is a YAML or JSON object (YAML is read with a safe loader: no tags, no code)::

    control_rate: 10            # Hz: the episode's control period is 1 / control_rate
    units: {time: ms, position: mm, force: N, torque: N*mm, angle: deg}
    quaternion_order: xyzw      # CSV only; a ROS message names its fields
    euler: xyz                  # CSV only, for an 'euler' orientation group: axes, lower case extrinsic
    time_column: stamp          # CSV only
    streams:
      pose:    {columns: {position: [x, y, z], quaternion: [qx, qy, qz, qw]}, topic: /tool_pose}
               # or rotvec: [rx, ry, rz] (a UR controller's TCP pose), or euler: [a, b, c] (with 'euler:')
      wrench:  {columns: {force: [fx, fy, fz], torque: [tx, ty, tz]}, topic: /ft_sensor/wrench, offset_s: -0.03}
      twist:   {columns: {linear: [vx, vy, vz], angular: [wx, wy, wz]}, topic: /tool_twist, frame: world}
      command_pose: {columns: {position: [...], quaternion: [...]}, topic: /target_pose}
    frames:
      sensor: {rpy: [180, 0, 0], offset: [0, 0, 12]}   # the logged F/T frame in contactkit's sensor frame
      tool:   {quat_wxyz: [1, 0, 0, 0], offset: [0, 0, 150]}  # the tool origin in the logged body frame
      base:   {rpy: [0, 0, 90]}                          # the logged base frame in the world

Everything but ``streams.pose`` (or ``streams.joints`` with a forward-kinematics function) and
``streams.wrench`` is optional. ``units`` are those of a CSV log's values and of the mapping's own numbers
(``frames``); ROS messages are SI (REP 103) and are read as such. Bad mappings raise
:class:`~contactkit.errors.InvalidInputError` naming the file and the key.
"""

from __future__ import annotations

import enum
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import quat_mul, rotvec_to_quat

MAX_MAPPING_BYTES = 1 << 20
"""Largest mapping file read [bytes]; a mapping is a few hundred bytes."""

UNIT_FACTORS: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
    "position": {"m": 1.0, "mm": 1e-3},
    "force": {"N": 1.0, "mN": 1e-3},
    "torque": {"N*m": 1.0, "N*mm": 1e-3, "mN*m": 1e-3},
    "angle": {"rad": 1.0, "deg": math.pi / 180.0},
}
"""SI factor of each accepted unit, by quantity (``N·m`` and ``Nm`` are read as ``N*m``). Linear velocity is
in position units per second, angular velocity in angle units per second; ``angle`` also applies to the
``rpy`` of ``frames``."""

TIME_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
"""Nanoseconds per time unit (times are kept as integer nanoseconds)."""

MAX_STREAM_OFFSET_S = 60.0
"""Largest ``offset_s`` of a stream [s]: two clocks of one cell that disagree by more are not synchronised at all
(NTP keeps machines within milliseconds; an unsynchronised clock drifts seconds a day); a larger value is a unit or
sign mistake."""

ORIENTATION_GROUPS = {"quaternion": 4, "rotvec": 3, "euler": 3}
"""How a pose stream's orientation may be logged in a CSV: a quaternion (``quaternion_order``), a rotation vector
(axis × angle, ``units.angle``: a UR controller's TCP pose), or three Euler angles (``euler`` convention,
``units.angle``)."""

EULER_AXES = "xyz"
"""Axis letters of an ``euler`` convention: three of them, no two neighbours equal (``xyz``, ``zyx``, ``zyz``...);
lower case are extrinsic (about the fixed axes, in order: ``xyz`` is roll-pitch-yaw, ``R = Rz Ry Rx``), upper case
intrinsic (about the turning axes: ``ZYX`` equals extrinsic ``xyz``)."""


class QuatOrder(str, enum.Enum):
    """Order of the four quaternion columns of a CSV log."""

    WXYZ = "wxyz"
    XYZW = "xyzw"


class TwistFrame(str, enum.Enum):
    """Frame a logged twist is expressed in."""

    WORLD = "world"
    """The (logged base) world frame, linear velocity of the logged body's origin."""
    BODY = "body"
    """The logged body's own frame (ROS ``TwistStamped`` with the body's frame_id)."""


class FtSampling(str, enum.Enum):
    """How the F/T reading of a control step is taken from the logged readings."""

    AUTO = "auto"
    """The default: ``mean`` when the F/T stream has at least :data:`FT_MEAN_MIN_SAMPLES` samples per control
    period (a fast sensor: the mean synchronises and smooths), else ``end`` (a log already at the control rate,
    which a mean over the step would blur: it mixes the reading with its neighbour)."""
    MEAN = "mean"
    """The mean over the step of the readings interpolated linearly (a synchronising filter, as in the Act-FIGNet
    paper Fig. 6)."""
    END = "end"
    """The reading interpolated at the end of the step."""


FT_MEAN_MIN_SAMPLES = 2.0
"""F/T samples per control period (median) from which ``ft_sampling: auto`` takes the step mean: with fewer, the
readings are at the control rate and a mean would blend two steps' readings."""


class StreamKind(str, enum.Enum):
    """The fields a log can provide."""

    POSE = "pose"
    WRENCH = "wrench"
    TWIST = "twist"
    JOINTS = "joints"
    COMMAND_WRENCH = "command_wrench"
    COMMAND_POSE = "command_pose"


STREAM_PARTS: dict[StreamKind, tuple[tuple[str, int], ...]] = {
    StreamKind.POSE: (("position", 3), ("quaternion", 4)),
    StreamKind.WRENCH: (("force", 3), ("torque", 3)),
    StreamKind.TWIST: (("linear", 3), ("angular", 3)),
    StreamKind.JOINTS: (),
    StreamKind.COMMAND_WRENCH: (("force", 3), ("torque", 3)),
    StreamKind.COMMAND_POSE: (("position", 3), ("quaternion", 4)),
}
"""The named column groups of each stream and their widths (joints: one column per entry of ``names``)."""


@dataclass(frozen=True)
class Transform:
    """A rigid transform: ``rotation`` ``(4,)`` unit quaternion (w, x, y, z) and ``offset`` ``(3,)`` [m]."""

    rotation: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @property
    def is_identity(self) -> bool:
        """True when the transform changes nothing."""
        return bool(np.array_equal(self.rotation, [1.0, 0.0, 0.0, 0.0]) and not np.any(self.offset))


@dataclass(frozen=True)
class StreamSpec:
    """Where one stream lives: its CSV ``columns`` (group name → column names) and/or bag ``topic``.

    ``child_frame`` picks the transform of a ``tf2_msgs/TFMessage`` topic; ``names`` are the joints of a
    ``joints`` stream, in the order handed to the forward kinematics (also their CSV columns).
    """

    kind: StreamKind
    topic: str | None = None
    columns: dict[str, tuple[str, ...]] | None = None
    child_frame: str | None = None
    names: tuple[str, ...] = ()
    offset_ns: int = 0
    """Added to the stream's times to put them on the log's common clock [ns] (mapping ``offset_s`` [s])."""


@dataclass(frozen=True)
class Units:
    """SI factors of the logged quantities (see :data:`UNIT_FACTORS`); ``time_ns`` per CSV time unit."""

    time_ns: int = 10**9
    position: float = 1.0
    force: float = 1.0
    torque: float = 1.0
    angle: float = 1.0


@dataclass(frozen=True)
class LogMapping:
    """A parsed mapping file (see the module docstring).

    Attributes:
        streams: the mapped streams by kind.
        units: unit factors.
        quaternion_order: CSV quaternion column order.
        euler: the convention of a CSV ``euler`` orientation group (:data:`EULER_AXES`), or None.
        time_column: the CSV time column.
        twist_frame: frame of the logged twist.
        control_rate: control rate [Hz] or None (then the median interval of the pose stream).
        ft_sampling: how a step's F/T reading is formed.
        command_mode: what a ``command_pose`` stream becomes: ``pose-delta`` (default; the displacement of the
            tool centre point from its current pose) or ``pose-target`` (the absolute target, as the robot's
            Cartesian controller tracked it).
        stamp: ``"header"`` (message header stamps) or ``"receive"`` (bag receive times) for bags.
        sensor: the logged F/T frame in contactkit's sensor frame (``R_s``, ``p_s``).
        tool: the tool origin in the logged body frame.
        base: the logged base frame in the world frame.
        source: the file it was read from (for messages).
    """

    streams: dict[StreamKind, StreamSpec]
    units: Units = Units()
    quaternion_order: QuatOrder = QuatOrder.WXYZ
    euler: str | None = None
    time_column: str = "t"
    twist_frame: TwistFrame = TwistFrame.WORLD
    control_rate: float | None = None
    ft_sampling: FtSampling = FtSampling.AUTO
    command_mode: ActionMode = ActionMode.POSE_DELTA
    stamp: str = "header"
    sensor: Transform = Transform()
    tool: Transform = Transform()
    base: Transform = Transform()
    source: str = "<mapping>"


_TOP_KEYS = {"control_rate", "units", "quaternion_order", "time_column", "streams", "frames", "ft_sampling",
             "stamp", "euler", "command_mode"}
_STREAM_KEYS = {"topic", "columns", "child_frame", "names", "frame", "offset_s"}


def _bad(source: str, key: str, what: str) -> InvalidInputError:
    return InvalidInputError(f"{source}: mapping key '{key}': {what}")


def _choice(source: str, key: str, value, choices) -> str:
    if value not in choices:
        raise _bad(source, key, f"{value!r} is not one of {sorted(choices)}")
    return value


def _numbers(source: str, key: str, value, n: int) -> np.ndarray:
    ok = isinstance(value, (list, tuple)) and len(value) == n and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok:
        raise _bad(source, key, f"needs a list of {n} finite numbers, got {value!r}")
    return np.asarray(value, dtype=np.float64)


def rpy_to_quat(rpy: np.ndarray) -> np.ndarray:
    """Quaternion (w, x, y, z) of roll-pitch-yaw ``(3,)`` [rad]: ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (ROS REP 103)."""
    axes = np.eye(3)
    q = [rotvec_to_quat(axes[i] * rpy[i]) for i in range(3)]
    return quat_mul(q[2], quat_mul(q[1], q[0]))


def _transform(source: str, key: str, spec, units: Units) -> Transform:
    if not isinstance(spec, dict) or not set(spec) <= {"rpy", "quat_wxyz", "offset"}:
        raise _bad(source, key, "needs an object with 'offset' and one of 'rpy', 'quat_wxyz'")
    if "rpy" in spec and "quat_wxyz" in spec:
        raise _bad(source, key, "give 'rpy' or 'quat_wxyz', not both")
    q = np.array([1.0, 0.0, 0.0, 0.0])
    if "rpy" in spec:
        q = rpy_to_quat(_numbers(source, f"{key}.rpy", spec["rpy"], 3) * units.angle)
    elif "quat_wxyz" in spec:
        q = _numbers(source, f"{key}.quat_wxyz", spec["quat_wxyz"], 4)
        if abs(np.linalg.norm(q) - 1.0) > 1e-6:
            raise _bad(source, f"{key}.quat_wxyz", f"not a unit quaternion (norm {np.linalg.norm(q):.9g})")
    offset = _numbers(source, f"{key}.offset", spec.get("offset", [0, 0, 0]), 3) * units.position
    return Transform(q, offset)


def _units(source: str, spec) -> Units:
    if spec is None:
        return Units()
    if not isinstance(spec, dict) or not set(spec) <= set(UNIT_FACTORS):
        raise _bad(source, "units", f"needs an object with keys among {sorted(UNIT_FACTORS)}, got {spec!r}")
    names = {k: str(v).replace("·", "*").replace("Nm", "N*m") if k == "torque" else v for k, v in spec.items()}
    got = {k: UNIT_FACTORS[k][_choice(source, f"units.{k}", v, UNIT_FACTORS[k])] for k, v in names.items()}
    time_ns = TIME_UNIT_NS[names["time"]] if "time" in names else 10**9
    return Units(time_ns, **{k: v for k, v in got.items() if k != "time"})


def _columns(source: str, kind: StreamKind, spec, names: tuple[str, ...]) -> dict[str, tuple[str, ...]] | None:
    key = f"streams.{kind.value}.columns"
    if kind is StreamKind.JOINTS:
        if spec is not None:
            raise _bad(source, key, "a joints stream's CSV columns are its 'names'")
        return None
    if spec is None:
        return None
    parts = dict(STREAM_PARTS[kind])
    if kind in (StreamKind.POSE, StreamKind.COMMAND_POSE) and isinstance(spec, dict):
        given = [g for g in ORIENTATION_GROUPS if g in spec]
        if len(given) != 1:
            raise _bad(source, key, f"needs 'position' and one orientation group of {sorted(ORIENTATION_GROUPS)}, "
                                    f"got {spec!r}")
        parts = {"position": 3, given[0]: ORIENTATION_GROUPS[given[0]]}
    if not isinstance(spec, dict) or set(spec) != set(parts):
        raise _bad(source, key, f"needs exactly the groups {sorted(parts)}, got {spec!r}")
    out = {}
    for group, width in parts.items():
        cols = spec[group]
        if not (isinstance(cols, list) and len(cols) == width and all(isinstance(c, str) and c for c in cols)):
            raise _bad(source, f"{key}.{group}", f"needs a list of {width} column names, got {cols!r}")
        out[group] = tuple(cols)
    return out


def _stream(source: str, kind: StreamKind, spec) -> tuple[StreamSpec, str | None]:
    key = f"streams.{kind.value}"
    if not isinstance(spec, dict) or not set(spec) <= _STREAM_KEYS:
        raise _bad(source, key, f"needs an object with keys among {sorted(_STREAM_KEYS)}, got {spec!r}")
    for text_key in ("topic", "child_frame"):
        if text_key in spec and not (isinstance(spec[text_key], str) and spec[text_key]):
            raise _bad(source, f"{key}.{text_key}", f"needs a non-empty string, got {spec[text_key]!r}")
    names = spec.get("names", [])
    if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
        raise _bad(source, f"{key}.names", f"needs a list of joint names, got {names!r}")
    if (kind is StreamKind.JOINTS) != bool(names):
        raise _bad(source, f"{key}.names", "a joints stream needs 'names'; other streams take none")
    if "frame" in spec and kind is not StreamKind.TWIST:
        raise _bad(source, f"{key}.frame", "only the twist stream takes a frame")
    columns = _columns(source, kind, spec.get("columns"), tuple(names))
    offset = spec.get("offset_s", 0)
    if not (isinstance(offset, (int, float)) and not isinstance(offset, bool) and math.isfinite(offset)
            and abs(offset) <= MAX_STREAM_OFFSET_S):
        raise _bad(source, f"{key}.offset_s", f"needs a number of seconds within ±{MAX_STREAM_OFFSET_S:g} "
                                              f"(MAX_STREAM_OFFSET_S: clocks of one cell further apart are not "
                                              f"synchronised at all), got {offset!r}")
    offset_ns = int(round(offset * 1e9))
    return (StreamSpec(kind, spec.get("topic"), columns, spec.get("child_frame"), tuple(names), offset_ns),
            spec.get("frame"))


def _euler(source: str, convention, streams: dict) -> str | None:
    """The checked ``euler`` convention; required exactly when a stream logs its orientation as Euler angles."""
    uses = [k.value for k, s in streams.items() if s.columns and "euler" in s.columns]
    if convention is None:
        if uses:
            raise _bad(source, "euler", f"the {uses[0]} stream logs Euler angles: state their convention, e.g. "
                                        "'euler: xyz' (extrinsic roll-pitch-yaw) or 'euler: ZYX' (intrinsic), and the "
                                        "angle unit (units.angle: rad or deg)")
        return None
    ok = (isinstance(convention, str) and len(convention) == 3 and convention.lower() == convention.lower()
          and (convention.islower() or convention.isupper()) and set(convention.lower()) <= set(EULER_AXES)
          and convention[0].lower() != convention[1].lower() and convention[1].lower() != convention[2].lower())
    if not ok:
        raise _bad(source, "euler", f"needs three axes of 'xyz', all lower case (extrinsic) or all upper case "
                                    f"(intrinsic), no two neighbours equal (e.g. xyz, ZYX, zyz), got {convention!r}")
    if not uses:
        raise _bad(source, "euler", "no stream logs an 'euler' orientation group")
    return convention


def euler_to_quat(angles: np.ndarray, convention: str) -> np.ndarray:
    """Quaternions ``(N, 4)`` (w, x, y, z) of Euler angles ``(N, 3)`` [rad] in ``convention`` (:data:`EULER_AXES`):
    extrinsic ``abc`` is ``R = R_c(γ) R_b(β) R_a(α)``, intrinsic ``ABC`` is ``R = R_A(α) R_B(β) R_C(γ)``."""
    angles = np.asarray(angles, dtype=np.float64)
    axes = np.eye(3)
    q = [rotvec_to_quat(axes[EULER_AXES.index(a)] * angles[:, [k]]) for k, a in enumerate(convention.lower())]
    if convention.islower():
        return quat_mul(q[2], quat_mul(q[1], q[0]))
    return quat_mul(q[0], quat_mul(q[1], q[2]))


def mapping_from_dict(d, source: str = "<mapping>") -> LogMapping:
    """Build and check a :class:`LogMapping` from the parsed mapping object ``d`` (``source`` names it)."""
    if not isinstance(d, dict):
        raise InvalidInputError(f"{source}: a mapping file must hold an object, got {type(d).__name__}")
    unknown = sorted(set(map(str, d)) - _TOP_KEYS)
    if unknown:
        raise _bad(source, unknown[0], f"unknown key; the keys are {sorted(_TOP_KEYS)}")
    units = _units(source, d.get("units"))
    raw_streams = d.get("streams")
    if not isinstance(raw_streams, dict):
        raise _bad(source, "streams", "needs an object of streams (pose, wrench, ...)")
    kinds = {k.value: k for k in StreamKind}
    streams, twist_frame = {}, "world"
    for name, spec in raw_streams.items():
        kind = kinds.get(_choice(source, f"streams.{name}", name, kinds))
        streams[kind], frame = _stream(source, kind, spec)
        twist_frame = frame or twist_frame
    for needed in ((StreamKind.POSE, StreamKind.JOINTS), (StreamKind.WRENCH,)):
        if not any(k in streams for k in needed):
            raise _bad(source, "streams", f"needs a {' or a '.join(k.value for k in needed)} stream")
    rate = d.get("control_rate")
    if rate is not None and not (isinstance(rate, (int, float)) and not isinstance(rate, bool)
                                 and math.isfinite(rate) and rate > 0):
        raise _bad(source, "control_rate", f"needs a number > 0 [Hz], got {rate!r}")
    time_column = d.get("time_column", "t")
    if not (isinstance(time_column, str) and time_column):
        raise _bad(source, "time_column", f"needs a column name, got {time_column!r}")
    frames = d.get("frames", {})
    if not isinstance(frames, dict) or not set(frames) <= {"sensor", "tool", "base"}:
        raise _bad(source, "frames", f"needs an object with keys among ['base', 'sensor', 'tool'], got {frames!r}")
    transforms = {k: _transform(source, f"frames.{k}", v, units) for k, v in frames.items()}
    euler = _euler(source, d.get("euler"), streams)
    return LogMapping(
        streams=streams, units=units, time_column=time_column, control_rate=None if rate is None else float(rate),
        quaternion_order=QuatOrder(_choice(source, "quaternion_order", d.get("quaternion_order", "wxyz"),
                                           [q.value for q in QuatOrder])),
        twist_frame=TwistFrame(_choice(source, "streams.twist.frame", twist_frame, [f.value for f in TwistFrame])),
        euler=euler,
        ft_sampling=FtSampling(_choice(source, "ft_sampling", d.get("ft_sampling", "auto"),
                                       [f.value for f in FtSampling])),
        stamp=_choice(source, "stamp", d.get("stamp", "header"), ["header", "receive"]),
        command_mode=ActionMode(_choice(source, "command_mode", d.get("command_mode", "pose-delta"),
                                        [ActionMode.POSE_DELTA.value, ActionMode.POSE_TARGET.value])),
        source=source, **transforms)


def load_mapping(path: str | os.PathLike) -> LogMapping:
    """Read a mapping file: ``.json`` as JSON, anything else as YAML (safe loader: plain data only).

    Raises:
        InvalidInputError: a missing, oversized, unparsable file, or a bad key — naming the file and key.
    """
    from contactkit.files import read_bounded

    path = os.fspath(path)
    raw = read_bounded(path, MAX_MAPPING_BYTES, lambda problem: InvalidInputError(f"{path}: mapping file {problem}"))
    try:
        text = raw.decode("utf-8")
        if path.lower().endswith(".json"):
            d = json.loads(text)
        else:
            from ruamel.yaml import YAML
            from ruamel.yaml.error import YAMLError

            try:
                d = YAML(typ="safe", pure=True).load(text)
            except YAMLError as exc:
                text = " ".join(str(exc).split())
                raise InvalidInputError(f"{path}: not a valid YAML mapping file ({text})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInputError(f"{path}: not a valid mapping file ({exc})") from None
    return mapping_from_dict(d, path)
