"""Import a mapped robot log (CSV or ROS 2 bag) into the project's HDF5 dataset (``docs/robot-logs.md``).

    log = load_robot_log(LogFormat.BAG, "run_0001.mcap", load_mapping("ur10e.yaml"))
    import_robot_log(LogFormat.CSV, "run.csv", load_mapping("lab.json"), "logs.h5", scene_json=scene.to_json())

Both formats are read into the same streams and converted by
:func:`~contactkit.data.robot_log_resample.episode_from_streams`, so a bag and the equivalent CSV give the same
arrays. The dataset's ``action_mode`` is ``pose-delta`` when the log has pose targets, else ``wrench``; its
policy attribute records ``has_action`` (a commanded wrench) and ``logged_velocity``.
"""

from __future__ import annotations

import enum
import json
import os

from contactkit.data.robot_log import LOG_BACKEND, LogLimits
from contactkit.data.robot_log_mapping import LogMapping
from contactkit.data.robot_log_resample import ForwardKinematics, ImportedLog, episode_from_streams
from contactkit.data.schema import DatasetMeta
from contactkit.data.writer import DatasetWriter
from contactkit.errors import InvalidInputError


class LogFormat(str, enum.Enum):
    """The kind of log file."""

    CSV = "csv"
    BAG = "bag"


def load_robot_log(fmt: LogFormat | str, path: str | os.PathLike, mapping: LogMapping, *,
                   forward_kinematics: ForwardKinematics | None = None,
                   limits: LogLimits | None = None) -> ImportedLog:
    """Read a log with its mapping and convert it into an episode at the control rate.

    Args:
        fmt: ``csv`` (a mapped CSV file) or ``bag`` (a ROS 2 bag folder, ``.mcap`` or ``.db3``).
        path: the log.
        mapping: from :func:`~contactkit.data.robot_log_mapping.load_mapping`.
        forward_kinematics: joint positions ``(N, J)`` → logged-body pose ``((N, 3) [m], (N, 4) wxyz)`` in the
            logged base frame; needed when the pose comes from a ``joints`` stream.
        limits: plausibility bounds (default :class:`LogLimits`).

    Returns:
        the episode (``states`` at the control grid, time from 0 [s]) and what the log held.

    Raises:
        DatasetError / InvalidInputError: naming the file, line or topic and message, and the problem.
    """
    if fmt not in {f.value for f in LogFormat}:
        raise InvalidInputError(f"log format {fmt!r} is not one of {[f.value for f in LogFormat]}")
    fmt = LogFormat(fmt)
    if fmt is LogFormat.CSV:
        from contactkit.data.robot_log_csv import read_csv_streams

        streams = read_csv_streams(path, mapping, limits)
    else:
        from contactkit.data.robot_log_bag import read_bag_streams

        streams = read_bag_streams(path, mapping, limits)
    return episode_from_streams(streams, mapping, forward_kinematics)


def log_meta(log: ImportedLog, *, scene_json: str | dict | None = None, world_json: str | dict | None = None,
             seed: int = 0) -> DatasetMeta:
    """The dataset meta of an imported log (``backend = "robot-log"``; scene and world ``{}`` when not given)."""
    return DatasetMeta(
        scene=scene_json if scene_json is not None else "{}",
        world=world_json if world_json is not None else "{}",
        policy=json.dumps({"name": LOG_BACKEND, "has_action": log.has_action,
                           "logged_velocity": log.logged_velocity}),
        seed=seed,
        action_mode=log.action_mode,
        control_dt=log.control_dt,
        backend=LOG_BACKEND,
    )


def import_robot_log(fmt: LogFormat | str, path: str | os.PathLike, mapping: LogMapping,
                     out_path: str | os.PathLike, *, scene_json: str | dict | None = None,
                     world_json: str | dict | None = None, seed: int = 0,
                     forward_kinematics: ForwardKinematics | None = None, limits: LogLimits | None = None,
                     resume: bool = True) -> ImportedLog:
    """Import one log as one episode appended to the dataset ``out_path`` (created if absent; append-safe:
    logs of the same kind, rate and scene go into one file, see :class:`DatasetWriter`).

    Args:
        scene_json: the geometry (``Scene.to_json()``); training needs it.
        world_json: physics parameters, ``{}`` if unknown.
        seed: the file's ``seed`` attribute.
        Others as :func:`load_robot_log`.

    Returns:
        the imported log, as written.
    """
    log = load_robot_log(fmt, path, mapping, forward_kinematics=forward_kinematics, limits=limits)
    meta = log_meta(log, scene_json=scene_json, world_json=world_json, seed=seed)
    with DatasetWriter(out_path, meta=meta, resume=resume) as writer:
        writer.append_episode(log.episode)
    return log
