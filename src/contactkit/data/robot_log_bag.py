"""ROS 2 bags (sqlite3 ``.db3`` and MCAP ``.mcap``, a bag folder or one storage file) through ``rosbags``.

Each mapped stream names a ``topic``; the message types read are:

| stream | message types |
| --- | --- |
| ``pose``, ``command_pose`` | ``geometry_msgs/msg/PoseStamped``, ``geometry_msgs/msg/TransformStamped``, |
|  | ``tf2_msgs/msg/TFMessage`` (the transform whose ``child_frame_id`` is the stream's ``child_frame``) |
| ``wrench``, ``command_wrench`` | ``geometry_msgs/msg/WrenchStamped`` |
| ``twist`` | ``geometry_msgs/msg/TwistStamped`` |
| ``joints`` | ``sensor_msgs/msg/JointState`` (the joints of ``names``, in that order) |

A sample's time is its header stamp (``stamp: header``, the default) or the bag's receive time (``stamp:
receive``); messages are ordered by it. Message values are SI (ROS REP 103): the mapping's ``units`` are those of
CSV logs and of the mapping's own numbers (``frames``), not of bags.
Only the mapped topics are deserialised; a bag ``rosbags`` cannot read is a :class:`DatasetError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from contactkit.data.robot_log import LogLimits
from contactkit.data.robot_log_mapping import LogMapping, StreamKind, StreamSpec
from contactkit.data.robot_log_resample import Stream, make_stream
from contactkit.errors import DatasetError, InvalidInputError

POSE_TYPES = ("geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/TransformStamped", "tf2_msgs/msg/TFMessage")
MESSAGE_TYPES: dict[StreamKind, tuple[str, ...]] = {
    StreamKind.POSE: POSE_TYPES,
    StreamKind.COMMAND_POSE: POSE_TYPES,
    StreamKind.WRENCH: ("geometry_msgs/msg/WrenchStamped",),
    StreamKind.COMMAND_WRENCH: ("geometry_msgs/msg/WrenchStamped",),
    StreamKind.TWIST: ("geometry_msgs/msg/TwistStamped",),
    StreamKind.JOINTS: ("sensor_msgs/msg/JointState",),
}
"""Message types accepted for each stream."""


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def _pose_row(msg, msgtype: str, spec: StreamSpec):
    """``(header, [position, quaternion wxyz])`` of a pose-like message, or None when it holds no transform to
    ``spec.child_frame`` (a TFMessage must name it; a TransformStamped topic may, to keep only that child)."""
    if msgtype.endswith("PoseStamped"):
        p, q = msg.pose.position, msg.pose.orientation
        return msg.header, [*_xyz(p), q.w, q.x, q.y, q.z]
    transforms = msg.transforms if msgtype.endswith("TFMessage") else [msg]
    for tf in transforms:
        if spec.child_frame is None or tf.child_frame_id == spec.child_frame:
            t, q = tf.transform.translation, tf.transform.rotation
            return tf.header, [*_xyz(t), q.w, q.x, q.y, q.z]
    return None


def _joint_row(msg, spec: StreamSpec, where: str, index: int):
    names = list(msg.name)
    missing = [n for n in spec.names if n not in names]
    if missing or len(msg.position) != len(names):
        raise DatasetError(f"{where}, message {index}: JointState lacks joint(s) {missing} (has {names}) or its "
                           f"positions ({len(msg.position)}) do not match its names")
    return msg.header, [float(msg.position[names.index(n)]) for n in spec.names]


def _row(kind: StreamKind, msg, msgtype: str, spec: StreamSpec, where: str, index: int):
    """``(header, SI values)`` of one message, or None when it holds no sample of the stream."""
    if kind in (StreamKind.POSE, StreamKind.COMMAND_POSE):
        return _pose_row(msg, msgtype, spec)
    if kind in (StreamKind.WRENCH, StreamKind.COMMAND_WRENCH):
        return msg.header, [*_xyz(msg.wrench.force), *_xyz(msg.wrench.torque)]
    if kind is StreamKind.TWIST:
        return msg.header, [*_xyz(msg.twist.linear), *_xyz(msg.twist.angular)]
    return _joint_row(msg, spec, where, index)


def _connections(reader, path: str, mapping: LogMapping) -> dict:
    """The bag connection of each mapped stream, its type checked."""
    by_topic = {}
    for c in reader.connections:
        by_topic.setdefault(c.topic, []).append(c)
    out = {}
    for kind, spec in mapping.streams.items():
        if spec.topic is None:
            raise InvalidInputError(f"{mapping.source}: mapping key 'streams.{kind.value}.topic': a bag import needs "
                                    "the stream's topic")
        conns = by_topic.get(spec.topic)
        if not conns:
            raise DatasetError(f"{path}: no topic {spec.topic!r} (streams.{kind.value}); the bag has "
                               f"{sorted(by_topic)}")
        for c in conns:
            if c.msgtype not in MESSAGE_TYPES[kind]:
                raise DatasetError(f"{path}: topic {spec.topic!r} holds {c.msgtype}, but the {kind.value} stream "
                                   f"reads {list(MESSAGE_TYPES[kind])}")
        if kind in (StreamKind.POSE, StreamKind.COMMAND_POSE) and any(c.msgtype.endswith("TFMessage") for c in conns) \
                and not spec.child_frame:
            raise InvalidInputError(f"{mapping.source}: mapping key 'streams.{kind.value}.child_frame': the topic "
                                    f"{spec.topic!r} holds TFMessage; name the child frame to read")
        out[kind] = conns
    return out


def _collect(reader, path: str, mapping: LogMapping) -> dict:
    """``{kind: [(time_ns, index, values)]}`` of the mapped topics' messages."""
    conns = _connections(reader, path, mapping)
    owner = {id(c): kind for kind, cs in conns.items() for c in cs}
    rows = {kind: [] for kind in conns}
    counts = dict.fromkeys(conns, 0)
    for conn, stamp, raw in reader.messages(connections=[c for cs in conns.values() for c in cs]):
        kind = owner[id(conn)]
        spec = mapping.streams[kind]
        index = counts[kind]
        counts[kind] += 1
        msg = reader.deserialize(raw, conn.msgtype)
        got = _row(kind, msg, conn.msgtype, spec, f"{path}: topic {spec.topic}", index)
        if got is None:
            continue
        header, values = got
        t = stamp if mapping.stamp == "receive" else int(header.stamp.sec) * 10**9 + int(header.stamp.nanosec)
        rows[kind].append((t + spec.offset_ns, index, values))
    return rows


def check_bag_path(path: str) -> None:
    """Refuse, before the bag is opened, a path that is neither a folder nor a regular file (a FIFO would block the
    storage reader, a device be read without end), and a bag folder holding such a file."""
    import stat

    from contactkit.files import PathKind, expect_path

    if os.path.isdir(path):
        for entry in os.scandir(path):
            mode = entry.stat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise DatasetError(f"{path}: bag folder holds {entry.name!r}, which is not a regular file")
        return
    expect_path(path, PathKind.FILE, lambda problem: DatasetError(f"{path}: bag {problem} (or a bag folder)"))


def read_bag_streams(path: str | os.PathLike, mapping: LogMapping,
                     limits: LogLimits | None = None) -> dict[StreamKind, Stream]:
    """Read the mapped topics of a ROS 2 bag into streams (SI units, w-first quaternions, logged frames).

    Args:
        path: a bag folder (with ``metadata.yaml``), or one ``.mcap`` or ``.db3`` storage file.
        mapping: streams with their topics, stamp choice.
        limits: plausibility bounds (default :class:`LogLimits`).

    Raises:
        DatasetError: a missing or unreadable bag, a missing topic or one of another message type, an empty
            stream, repeated stamps, implausible values — naming the bag, topic and message.
    """
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    path = os.fspath(path)
    if not os.path.exists(path):
        raise DatasetError(f"{path}: no such bag (a bag folder, or a .mcap or .db3 file)")
    check_bag_path(path)
    try:
        with AnyReader([Path(path)], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
            rows = _collect(reader, path, mapping)
    except (DatasetError, InvalidInputError):
        raise
    except Exception as exc:  # noqa: BLE001 - rosbags and its storage back ends raise many kinds on a bad file
        raise DatasetError(f"{path}: not a readable ROS 2 bag ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:200]})") from None
    out = {}
    for kind, samples in rows.items():
        spec = mapping.streams[kind]
        if not samples:
            raise DatasetError(f"{path}: topic {spec.topic!r} ({kind.value}) holds no sample")
        if mapping.stamp == "header" and len(samples) > 1 and not any(r[0] for r in samples):
            raise DatasetError(f"{path}: topic {spec.topic!r}: every header stamp is zero; read the bag's receive "
                               "times instead (mapping: stamp: receive)")
        samples.sort(key=lambda r: r[0])
        times, ids, values = zip(*samples, strict=True)
        out[kind] = make_stream(kind, times, values, ids, f"{path}: topic {spec.topic}, message {{id}}", limits)
    return out
