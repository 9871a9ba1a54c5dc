"""Trajectory datasets: schema, crash-safe writer, validating reader, torch windows, robot-log import (CSV logs
with a mapping file and ROS 2 bags: ``docs/robot-logs.md``)."""

from contactkit.data.parallel import RayPool, check_workers, uses_ray
from contactkit.data.reader import Dataset, EpisodeIndex, open_dataset
from contactkit.data.robot_log import (
    ACTION_COLUMNS,
    MAX_PLAUSIBLE_FORCE,
    MAX_PLAUSIBLE_TORQUE,
    QUAT_RENORM_TOL,
    REQUIRED_COLUMNS,
    LogLimits,
    finite_difference_velocities,
    import_log,
    load_log,
)
from contactkit.data.robot_log_import import LogFormat, import_robot_log, load_robot_log, log_meta
from contactkit.data.robot_log_mapping import LogMapping, load_mapping, mapping_from_dict
from contactkit.data.robot_log_resample import ImportedLog, episode_from_streams
from contactkit.data.schema import FORMAT_NAME, SCHEMA_VERSION, DatasetMeta, Episode
from contactkit.data.writer import DatasetWriter

_LAZY = {"TrajectoryWindows", "split_by_episode"}  # windows.py imports torch: load it on first use


def __getattr__(name: str):
    if name in _LAZY:
        from contactkit.data import windows

        return getattr(windows, name)
    raise AttributeError(f"module 'contactkit.data' has no attribute {name!r}")


__all__ = [
    "ACTION_COLUMNS",
    "FORMAT_NAME",
    "MAX_PLAUSIBLE_FORCE",
    "MAX_PLAUSIBLE_TORQUE",
    "QUAT_RENORM_TOL",
    "REQUIRED_COLUMNS",
    "SCHEMA_VERSION",
    "Dataset",
    "DatasetMeta",
    "DatasetWriter",
    "Episode",
    "EpisodeIndex",
    "ImportedLog",
    "LogFormat",
    "LogLimits",
    "LogMapping",
    "RayPool",
    "TrajectoryWindows",
    "check_workers",
    "episode_from_streams",
    "finite_difference_velocities",
    "import_log",
    "import_robot_log",
    "load_log",
    "load_mapping",
    "load_robot_log",
    "log_meta",
    "mapping_from_dict",
    "open_dataset",
    "uses_ray",
    "split_by_episode",
]
