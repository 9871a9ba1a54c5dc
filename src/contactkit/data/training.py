"""Training data of the learned models: windows over dataset files with the scene of each episode.

:func:`training_data` is what ``contactkit train`` (and the demo and the prediction experiment) hand to
:func:`contactkit.models.gnn.train`: :class:`~contactkit.data.windows.TrajectoryWindows` whose items also
carry the index of their episode's scene, the distinct scenes, and the control period and gravity of the
data. It lives in ``data/`` (above the models, below ``eval/``), not in ``eval/`` where it was first written.
With ``tare`` the windows' ``wrench`` labels have their episode's sensor offset subtracted
(:mod:`contactkit.data.label_tare`), and the windows' ``labels`` record it for the checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contactkit.data.label_tare import LabelTare, tare_labels
from contactkit.data.reader import open_dataset
from contactkit.errors import DatasetError
from contactkit.scene import Scene

if TYPE_CHECKING:
    from contactkit.models.gnn.kinematics import StepSpec

__all__ = ["TrainingData", "training_data"]


@dataclass(frozen=True)
class TrainingData:
    """Windows for :func:`contactkit.models.gnn.train` with the scenes they index and the data's step spec.

    Attributes:
        windows: indexable window dicts (:class:`~contactkit.data.TrajectoryWindows` items plus an int
            ``scene_index`` into ``scenes``; ``wrench`` tared when ``tare`` is set); its ``labels`` attribute
            is the JSON-compatible record of the labels (:meth:`LabelTare.summary`, or ``{"tared": False}``).
        scenes: the distinct scenes of the selected episodes, in order of first appearance.
        step: control period [s] and gravity of the data.
        tare: the per-episode offsets subtracted from the labels, or None (untared).
    """

    windows: object
    scenes: tuple[Scene, ...]
    step: StepSpec
    tare: LabelTare | None = None


class _SceneWindows:
    """TrajectoryWindows whose items also carry ``scene_index``, their ``wrench`` less their episode's offset."""

    def __init__(self, windows, scene_index: np.ndarray, tare: LabelTare | None = None):
        self.windows, self.scene_index = windows, scene_index
        import torch

        self.action_mode = windows.action_mode
        self.offsets = None if tare is None else torch.from_numpy(tare.offsets).float()
        self.labels = {"tared": False} if tare is None else tare.summary()

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> dict:
        item = {**self.windows[i], "scene_index": int(self.scene_index[i])}
        if self.offsets is not None:
            item["wrench"] = item["wrench"] - self.offsets[int(self.windows.window_episode[i])]
        return item


def _file_episodes(paths: Sequence[str]) -> tuple[list[tuple[str, int]], bool]:
    """``(scene text, steps)`` of every committed episode of the files in order, and whether gravity acts."""
    out, gravity = [], None
    for path in paths:
        with open_dataset(path) as ds:
            g = bool(json.loads(ds.meta.world).get("gravity", True))
            if gravity is not None and g != gravity:
                raise DatasetError(f"{path}: gravity {g} differs from the other training files")
            gravity = g
            out += [(ds.scene_json(i), int(ds.index.length[i])) for i in range(len(ds))]
    return out, bool(gravity)


def training_data(paths: str | Path | Sequence[str | Path], *, history: int = 3,
                  episodes: Sequence[int] | None = None, scene: Scene | None = None,
                  tare: bool = False) -> TrainingData:
    """Windows of ``history`` states over dataset files, with per-episode scenes (random-scene data included).

    Args:
        paths: one file or several; their episodes are numbered consecutively in order.
        history: states per window (Act-FIGNet: 3).
        episodes: optional subset of those episode numbers (e.g. from ``split_by_episode``).
        scene: the geometry of episodes stored without one (robot logs imported without a scene); episodes
            with their own scene keep it.
        tare: subtract each episode's sensor offset from its ``wrench`` labels (:func:`.label_tare.tare_labels`:
            the median reading over its geometrically free steps), as the graph networks train.

    Raises:
        DatasetError: unreadable files, files that disagree on control period or gravity, or an episode
            without a scene (``"{}"``).
    """
    from contactkit.data.windows import TrajectoryWindows
    from contactkit.models.gnn.kinematics import STANDARD_GRAVITY, StepSpec

    paths = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    windows = TrajectoryWindows(paths, history=history, episodes=episodes)
    listed, gravity = _file_episodes(paths)
    texts, index, episode_scene = [], [], []
    for e in windows.episode_ids:
        text, steps = listed[int(e)]
        if text.strip() in ("", "{}") and scene is not None:
            text = scene.to_json()
        if text.strip() in ("", "{}"):
            raise DatasetError(f"episode {int(e)} of {paths} has no scene description; training needs the geometry "
                               "(give a Scene JSON file: contactkit train --scene FILE, or import with --scene)")
        if text not in texts:
            texts.append(text)
        index.append(np.full(max(0, steps - history + 1), texts.index(text), dtype=np.int64))
        episode_scene.append(texts.index(text))
    scene_index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
    if len(scene_index) != len(windows):
        raise DatasetError(f"{paths}: the episode index lists {len(scene_index)} windows, the data {len(windows)}")
    with open_dataset(paths[0]) as ds:
        dt = ds.meta.control_dt
    step = StepSpec(dt, (0.0, 0.0, -STANDARD_GRAVITY if gravity else 0.0))
    scenes = tuple(Scene.from_json(t) for t in texts)
    offsets = None
    if tare:
        arrays = [windows.episode_arrays(j) for j in range(windows.n_episodes)]
        offsets = tare_labels([scenes[k] for k in episode_scene], [a[0] for a in arrays], [a[1] for a in arrays])
    return TrainingData(_SceneWindows(windows, scene_index, offsets), scenes, step, offsets)
