"""Import a mapped robot log (CSV or ROS 2 bag) into the project's HDF5 dataset (``docs/robot-logs.md``).

    log = load_robot_log(LogFormat.BAG, "run_0001.mcap", load_mapping("ur10e.yaml"))
    import_robot_log(LogFormat.CSV, "run.csv", load_mapping("lab.json"), "logs.h5", scene_json=scene.to_json())

Both formats are read into the same streams and converted by
:func:`~contactkit.data.robot_log_resample.episode_from_streams`, so a bag and the equivalent CSV give the same
arrays. The dataset's ``action_mode`` is the mapping's ``command_mode`` (``pose-delta`` by default, or
``pose-target``) when the log has pose targets, else ``wrench``; its
policy attribute records ``has_action`` (a commanded wrench) and ``logged_velocity``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os

from contactkit.data.robot_log import LOG_BACKEND, LogLimits
from contactkit.data.robot_log_checks import check_imported
from contactkit.data.robot_log_mapping import LogMapping
from contactkit.data.robot_log_resample import ForwardKinematics, ImportedLog, episode_from_streams
from contactkit.data.schema import DatasetMeta
from contactkit.data.writer import DatasetWriter
from contactkit.errors import DatasetError, InvalidInputError


class LogFormat(str, enum.Enum):
    """The kind of log file."""

    CSV = "csv"
    BAG = "bag"


def load_robot_log(fmt: LogFormat | str, path: str | os.PathLike, mapping: LogMapping, *,
                   forward_kinematics: ForwardKinematics | None = None,
                   limits: LogLimits | None = None, scene=None, checks: bool = True) -> ImportedLog:
    """Read a log with its mapping and convert it into an episode at the control rate.

    Args:
        fmt: ``csv`` (a mapped CSV file) or ``bag`` (a ROS 2 bag folder, ``.mcap`` or ``.db3``).
        path: the log.
        mapping: from :func:`~contactkit.data.robot_log_mapping.load_mapping`.
        forward_kinematics: joint positions ``(N, J)`` → logged-body pose ``((N, 3) [m], (N, 4) wxyz)`` in the
            logged base frame; needed when the pose comes from a ``joints`` stream.
        limits: plausibility bounds (default :class:`LogLimits`).
        scene: the cell's :class:`~contactkit.scene.Scene` (or its JSON text), for the checks against the tool's
            weight and size and the scene's geometry, and for the controller's tool centre point that pose
            commands refer to (none: the tool origin).
        checks: run the consistency checks (False: only the value checks, for a synthetic log whose twist or
            torques are made up on purpose).

    Returns:
        the episode (``states`` at the control grid, time from 0 [s]), what the log held and the named warnings of
        the consistency checks (:mod:`contactkit.data.robot_log_checks`; also issued as ``RobotLogWarning``).

    Raises:
        DatasetError / InvalidInputError: naming the file, line or topic and message, and the problem; a refused
            consistency check names the likely mistake and the mapping key to fix.
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
    cell = _scene_of(scene)
    tcp = (0.0, 0.0, 0.0) if cell is None else tuple(cell.controller.tcp_offset)
    log = episode_from_streams(streams, mapping, forward_kinematics, tcp)
    if not checks:
        return log
    found = check_imported(log, streams, mapping, cell)
    return dataclasses.replace(log, warnings=tuple(found))


def _scene_of(scene):
    """A :class:`~contactkit.scene.Scene` from a Scene, its JSON text or dict; None when it is none or not a full
    scene (a dataset may store any JSON object as its scene: the scene checks are then skipped)."""
    from contactkit.errors import ContactkitError
    from contactkit.scene import Scene

    if scene is None or isinstance(scene, Scene):
        return scene
    try:
        return Scene.from_json(scene if isinstance(scene, str) else json.dumps(scene))
    except (ContactkitError, TypeError, ValueError, KeyError):
        return None


def source_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a log file, or of a bag folder's regular files (each one's relative name and bytes, in
    sorted order)."""
    path = os.fspath(path)
    digest = hashlib.sha256()
    files = [path] if not os.path.isdir(path) else sorted(
        os.path.join(root, name) for root, _, names in os.walk(path) for name in names)
    for name in files:
        if os.path.isdir(path):
            digest.update(os.path.relpath(name, path).encode("utf-8") + b"\0")
        with open(name, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def log_source(fmt: LogFormat | str, path: str | os.PathLike, log: ImportedLog, mapping: LogMapping,
               sha256: str) -> dict:
    """The provenance an imported episode is stored with (:meth:`~contactkit.data.reader.Dataset.source`)."""
    return {"format": LogFormat(fmt).value, "file": os.path.abspath(os.fspath(path)), "sha256": sha256,
            "stamp": mapping.stamp if LogFormat(fmt) is LogFormat.BAG else f"csv:{mapping.time_column}",
            "start_ns": int(log.start_ns), "ft_sampling": log.ft_sampling.value}


def check_not_imported(out_path: str | os.PathLike, sha256: str, source: str) -> None:
    """Refuse a log whose sha256 is already the source of an episode of ``out_path`` (a re-run import would append
    the same episodes again)."""
    if not os.path.exists(out_path):
        return
    from contactkit.data.reader import open_dataset

    with open_dataset(out_path) as ds:
        for i, s in enumerate(ds.sources()):
            if s is not None and s.get("sha256") == sha256:
                raise DatasetError(f"{source}: already imported into {os.fspath(out_path)} as episode {i} (same sha256 "
                                   f"{sha256[:12]}…, from {s.get('file')}); pass allow_duplicate=True "
                                   "(--allow-duplicate) to import it again")


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
                     resume: bool = True, allow_duplicate: bool = False) -> ImportedLog:
    """Import one log as one episode appended to the dataset ``out_path`` (created if absent; append-safe:
    logs of the same kind, rate and scene go into one file, see :class:`DatasetWriter`).

    Args:
        scene_json: the geometry (``Scene.to_json()``); training needs it.
        world_json: physics parameters, ``{}`` if unknown.
        seed: the file's ``seed`` attribute.
        allow_duplicate: import a log whose content (sha256) is already the source of an episode of the file
            (refused by default: a re-run import would append the same episodes again).
        Others as :func:`load_robot_log`.

    Each episode is stored with its provenance: the log's path, sha256, stamp mode (bags: ``header`` or
    ``receive``; CSV: the time column), start time on the log's clock [ns] and F/T sampling.

    Returns:
        the imported log, as written.
    """
    sha256 = source_sha256(path) if os.path.exists(path) else ""
    if sha256 and not allow_duplicate:
        check_not_imported(out_path, sha256, os.fspath(path))
    log = load_robot_log(fmt, path, mapping, forward_kinematics=forward_kinematics, limits=limits, scene=scene_json)
    meta = log_meta(log, scene_json=scene_json, world_json=world_json, seed=seed)
    with DatasetWriter(out_path, meta=meta, resume=resume) as writer:
        writer.append_episode(log.episode, source=log_source(fmt, path, log, mapping, sha256))
    return log
