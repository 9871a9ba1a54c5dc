"""The contact models that :mod:`contactkit.eval.predict_eval` scores, and the training data of the learned ones.

* MuJoCo worlds (:func:`mujoco_predictor`): a world preset replaying the policy's commands through its own
  impedance controller (``COMMAND``), or the recorded mean applied wrench (``APPLIED``,
  :class:`AppliedWrenchReplay`). Measured: the latter is *not* faithful under impedance control — a constant
  mean wrench is not the time-varying wrench of the control period — and drifts by about a millimetre per
  step even in the recording world (see ``tests/eval/test_predict_eval.py``).
* Trained Act-FIGNet / FIGNet+ checkpoints (:func:`checkpoint_predictor`): a ``POSE_DELTA`` model replays
  the commands (it computes the controller's wrench at its own state, closed loop); a ``WRENCH`` model, the
  recorded applied wrenches.
* :func:`training_data`: windows over dataset files with the scene of each, for
  :func:`contactkit.models.gnn.train`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.data.reader import open_dataset
from contactkit.errors import CheckpointError, DatasetError
from contactkit.model import ActionMode, ContactModel
from contactkit.mujoco.mjcf import GRAVITY_MPS2
from contactkit.mujoco.model import MujocoContactModel
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = [
    "ActionSource",
    "AppliedWrenchReplay",
    "CHECKPOINT_NAMES",
    "Predictor",
    "TrainingData",
    "checkpoint_predictor",
    "gravity_compensation",
    "mujoco_predictor",
    "noise_free",
    "resolve_checkpoint",
    "training_data",
]

CHECKPOINT_NAMES = ("best.safetensors", "last.safetensors")
"""Files looked for, in this order, when a checkpoint is given as a training output folder."""


class ActionSource(str, Enum):
    """Which recorded input a model is driven by: the applied wrench or the policy's command."""

    APPLIED = "applied"
    COMMAND = "command"


@dataclass(frozen=True)
class Predictor:
    """A named contact model to evaluate.

    Attributes:
        name: row label.
        make: ``make(scene, action_mode) -> ContactModel`` for one scene; ``action_mode`` is what the
            dataset's ``command`` means (models driven by ``APPLIED`` wrenches may ignore it).
        source: which recorded input drives the model.
    """

    name: str
    make: Callable[[Scene, ActionMode], ContactModel]
    source: ActionSource = ActionSource.APPLIED


def noise_free(params: WorldParams) -> WorldParams:
    """``params`` without F/T noise and bias (a simulator used as a model predicts the ideal reading)."""
    return dataclasses.replace(params, ft_noise_std=(0.0,) * 6, ft_bias=(0.0,) * 6)


def gravity_compensation(scene: Scene, params: WorldParams) -> np.ndarray:
    """Feed-forward wrench ``(6,)`` [N, N·m] a MuJoCo world adds in every mode: the *nominal* tool weight.

    ``[0, 0, m g, 0, 0, 0]`` with ``m`` the scene's tool mass (``params.mass_scale`` changes the simulated
    body, not the compensation), or zeros without compensation or gravity.
    """
    on = scene.controller.gravity_compensation and params.gravity
    return np.array([0.0, 0.0, scene.tool.mass * GRAVITY_MPS2 if on else 0.0, 0.0, 0.0, 0.0])


class AppliedWrenchReplay:
    """A MuJoCo world driven by recorded applied wrenches (``APPLIED``), as a ContactModel.

    ``step(history, applied)`` subtracts :func:`gravity_compensation` and steps MuJoCo in ``WRENCH`` mode,
    so that the total external wrench equals ``applied`` (world frame, about the tool origin [N, N·m]).
    """

    history = 1
    action_mode = ActionMode.WRENCH

    def __init__(self, scene: Scene, params: WorldParams):
        self.inner = MujocoContactModel(scene, noise_free(params), ActionMode.WRENCH)
        self.control_dt = self.inner.control_dt
        self.compensation = gravity_compensation(scene, params)

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step (see :class:`contactkit.model.ContactModel`); ``action`` ``(*B, 6)`` applied wrench."""
        return self.inner.step(history, np.asarray(action, dtype=np.float64) - self.compensation)


def mujoco_predictor(params: WorldParams, name: str, source: ActionSource = ActionSource.COMMAND) -> Predictor:
    """MuJoCo under ``params`` (noise-free F/T) replaying commands (its own controller) or applied wrenches."""
    source = ActionSource(source)
    if source is ActionSource.COMMAND:
        return Predictor(name, lambda scene, mode: MujocoContactModel(scene, noise_free(params), mode), source)
    return Predictor(name, lambda scene, mode: AppliedWrenchReplay(scene, params), source)


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file, or the best (else last) checkpoint in a training output folder.

    Raises:
        CheckpointError: nothing usable at ``path``.
    """
    path = Path(path)
    if path.is_dir():
        for name in CHECKPOINT_NAMES:
            if (path / name).is_file():
                return path / name
        raise CheckpointError(f"{str(path)!r} holds no checkpoint (looked for {list(CHECKPOINT_NAMES)})")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    return path


def checkpoint_predictor(path: str | Path, name: str, device: str = "cpu") -> Predictor:
    """A trained Act-FIGNet / FIGNet+ checkpoint (file or training folder) as a :class:`Predictor`.

    A ``POSE_DELTA`` model is driven by the recorded commands (``COMMAND``) and refuses data whose commands
    are not pose deltas; a ``WRENCH`` model is driven by the recorded applied wrenches (``APPLIED``).

    Raises:
        CheckpointError: nothing usable at ``path`` (at once), or, from ``make``, data of another action mode.
    """
    from contactkit.models.gnn import GnnContactModel, load_checkpoint, restore_model

    ckpt = load_checkpoint(resolve_checkpoint(path))
    net = restore_model(ckpt, device)
    mode = ckpt.model_config.graph.action_mode
    source = ActionSource.COMMAND if mode is ActionMode.POSE_DELTA else ActionSource.APPLIED

    def make(scene: Scene, data_mode: ActionMode) -> ContactModel:
        if mode is ActionMode.POSE_DELTA and ActionMode(data_mode) is not mode:
            raise CheckpointError(f"checkpoint {str(ckpt.path)!r} takes {mode.value!r} commands, but the data's "
                                  f"commands are {ActionMode(data_mode).value!r}")
        return GnnContactModel(net, scene, ckpt.step_spec, device)

    return Predictor(name, make, source)


@dataclass(frozen=True)
class TrainingData:
    """Windows for :func:`contactkit.models.gnn.train` with the scenes they index and the data's step spec.

    Attributes:
        windows: indexable window dicts (:class:`~contactkit.data.TrajectoryWindows` items plus an int
            ``scene_index`` into ``scenes``).
        scenes: the distinct scenes of the selected episodes, in order of first appearance.
        step: control period [s] and gravity of the data.
    """

    windows: object
    scenes: tuple[Scene, ...]
    step: object


class _SceneWindows:
    """TrajectoryWindows whose items also carry ``scene_index``."""

    def __init__(self, windows, scene_index: np.ndarray):
        self.windows, self.scene_index = windows, scene_index
        self.action_mode = windows.action_mode

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> dict:
        return {**self.windows[i], "scene_index": int(self.scene_index[i])}


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
                  episodes: Sequence[int] | None = None) -> TrainingData:
    """Windows of ``history`` states over dataset files, with per-episode scenes (random-scene data included).

    Args:
        paths: one file or several; their episodes are numbered consecutively in order.
        history: states per window (Act-FIGNet: 3).
        episodes: optional subset of those episode numbers (e.g. from ``split_by_episode``).

    Raises:
        DatasetError: unreadable files, files that disagree on control period or gravity, or an episode
            without a scene (``"{}"``).
    """
    from contactkit.data.windows import TrajectoryWindows
    from contactkit.models.gnn.kinematics import STANDARD_GRAVITY, StepSpec

    paths = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    windows = TrajectoryWindows(paths, history=history, episodes=episodes)
    listed, gravity = _file_episodes(paths)
    texts, index = [], []
    for e in windows.episode_ids:
        text, steps = listed[int(e)]
        if text.strip() in ("", "{}"):
            raise DatasetError(f"episode {int(e)} of {paths} has no scene description; training needs the geometry")
        if text not in texts:
            texts.append(text)
        index.append(np.full(max(0, steps - history + 1), texts.index(text), dtype=np.int64))
    scene_index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
    if len(scene_index) != len(windows):
        raise DatasetError(f"{paths}: the episode index lists {len(scene_index)} windows, the data {len(windows)}")
    with open_dataset(paths[0]) as ds:
        dt = ds.meta.control_dt
    step = StepSpec(dt, (0.0, 0.0, -STANDARD_GRAVITY if gravity else 0.0))
    return TrainingData(_SceneWindows(windows, scene_index), tuple(Scene.from_json(t) for t in texts), step)
