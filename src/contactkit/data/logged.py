"""Datasets as :class:`~contactkit.models.residual.LoggedEpisode` lists: what the residual and calibration read.

Every file is checked against the others and against the world a model will simulate before anything is trained
or fitted: the same action mode and control period, a scene for every episode (or ``scene`` given), and a period
equal to the world's. A file that fails is one :class:`~contactkit.errors.DatasetError` naming it; NaN or Inf in an
episode is refused by the reader (:mod:`contactkit.data.reader`) the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.data.reader import open_dataset
from contactkit.errors import DatasetError
from contactkit.model import ActionMode
from contactkit.models.residual.transitions import LoggedEpisode
from contactkit.scene import Scene

__all__ = ["CONTROL_DT_REL_TOL", "LoggedSet", "load_logged"]

CONTROL_DT_REL_TOL = 1e-9
"""Relative tolerance of two control periods that must be equal."""


@dataclass(frozen=True)
class LoggedSet:
    """The episodes of one or more files, with what they share.

    Attributes:
        episodes: every committed episode, files in order. action_mode: what the commands mean.
        control_dt: the control period [s]. sources: ``(file, episodes)`` per file.
    """

    episodes: tuple[LoggedEpisode, ...]
    action_mode: ActionMode
    control_dt: float
    sources: tuple[tuple[str, int], ...]


def load_logged(paths: Sequence[str | Path], scene: Scene | None = None, control_dt: float | None = None,
                action_mode: ActionMode | None = None, max_episodes: int | None = None) -> LoggedSet:
    """Read ``paths`` as logged episodes (states ``(T+1, 13)``, commands and readings ``(T, 6)``).

    Args:
        paths: dataset files; scene: the geometry of episodes stored without one;
        control_dt: the period [s] the files must have (the model world's), None: the first file's;
        action_mode: the action mode they must have, None: the first file's;
        max_episodes: read at most this many episodes per file (None: all).

    Raises:
        DatasetError: naming the file: unreadable, NaN/Inf, another action mode or control period than the others
            or the world, or an episode without a scene.
    """
    episodes, sources, scenes = [], [], {}
    for path in paths:
        with open_dataset(path) as ds:
            meta, n = ds.meta, len(ds) if max_episodes is None else min(len(ds), max_episodes)
            action_mode = action_mode or meta.action_mode
            control_dt = control_dt or meta.control_dt
            if meta.action_mode is not action_mode:
                raise DatasetError(f"{path}: its commands are {meta.action_mode.value!r}, the others' (or the "
                                   f"model's) {action_mode.value!r}")
            if not math.isclose(meta.control_dt, control_dt, rel_tol=CONTROL_DT_REL_TOL):
                raise DatasetError(f"{path}: control period {meta.control_dt:g} s, but the model world (or the first "
                                   f"file) steps {control_dt:g} s: log and model must share the control rate")
            for i in range(n):
                episodes.append(_logged(path, i, ds.episode(i), ds.scene_json(i), scene, scenes))
            sources.append((str(path), n))
    if not episodes:
        raise DatasetError(f"{', '.join(str(p) for p in paths)}: no committed episode")
    return LoggedSet(tuple(episodes), action_mode, float(control_dt), tuple(sources))


def _logged(path, i: int, ep, text: str, scene: Scene | None, parsed: dict[str, Scene]) -> LoggedEpisode:
    """One episode as a :class:`LoggedEpisode`; ``parsed`` caches the scenes already read (episodes share them)."""
    if text.strip() in ("", "{}"):
        if scene is None:
            raise DatasetError(f"{path}: episode {i} has no scene description; give the geometry (--scene FILE)")
        geometry = scene
    else:
        geometry = parsed.setdefault(text, Scene.from_json(text)) if text not in parsed else parsed[text]
    states = np.asarray(ep.states().as_array(), dtype=np.float64)
    return LoggedEpisode(geometry, states, np.asarray(ep.command, dtype=np.float64),
                         np.asarray(ep.wrench, dtype=np.float64))

