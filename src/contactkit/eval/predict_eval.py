"""Evaluate contact models on recorded trajectories (act-fignet §IV-B.c): rollouts and one-step F/T.

Every model is scored on the same samples of a dataset: ``N`` segments of ``T`` steps, each rolled out
open loop (predictions fed back as history) from the recorded states ``s_{t0-H+1} .. s_{t0}`` with the
recorded inputs of steps ``t0 .. t0+T-1``; and ``M`` transitions whose F/T reading is predicted in one step
from the recorded history. Metrics: :mod:`contactkit.eval.metrics`.

What "the recorded inputs" are depends on the model (:class:`ActionSource`):

* ``APPLIED``: the episode's ``action``, the mean wrench the controller applied during the step (world
  frame, about the tool origin, gravity compensation included) — what Act-FIGNet and FIGNet+ read.
* ``COMMAND``: the episode's ``command``, what the policy asked in the dataset's action mode (e.g. a pose
  target displacement for the impedance controller) — what a simulator with its own model of the
  controller reads. Replaying commands in the world that recorded them reproduces the data up to the
  contact solver's warm start (measured: about 1e-6 m and 2e-4 N per step in steady contact).

A MuJoCo world can also replay ``APPLIED`` wrenches (:class:`AppliedWrenchReplay`): the wrench command of
``ActionMode.WRENCH`` is added to the nominal gravity compensation, which is therefore subtracted first.
Measured: that replay is *not* faithful under impedance control — a constant mean wrench is not the
time-varying wrench of the control period — and drifts by about a millimetre per step even in the
recording world (see ``tests/eval/test_predict_eval.py``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.control.impedance import ActionMode
from contactkit.data.reader import open_dataset
from contactkit.data.schema import DatasetMeta, Episode
from contactkit.errors import CheckpointError, DatasetError, InvalidInputError
from contactkit.eval.metrics import (
    OneStepMetrics,
    RolloutMetrics,
    concat_rollout_errors,
    one_step_metrics,
    rollout_errors,
    rollout_metrics,
)
from contactkit.model import ContactModel, rollout
from contactkit.mujoco.mjcf import GRAVITY_MPS2
from contactkit.mujoco.model import MujocoContactModel
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = [
    "ActionSource",
    "AppliedWrenchReplay",
    "EvalConfig",
    "PredictionReport",
    "Predictor",
    "RecordedData",
    "checkpoint_predictor",
    "evaluate_predictors",
    "gravity_compensation",
    "load_recorded",
    "mujoco_predictor",
    "noise_free",
    "report_row",
    "resolve_checkpoint",
    "sample_segments",
    "sample_transitions",
    "training_data",
    "TrainingData",
]

M_TO_MM = 1e3
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


@dataclass(frozen=True)
class EvalConfig:
    """Sample sizes of an evaluation (act-fignet: 4k segments of 100 steps, 40k transitions).

    Attributes:
        horizon: steps ``T`` per rollout segment.
        history: recorded states ``H`` given to a model (the largest any model reads; Act-FIGNet: 3).
        max_segments: segments drawn (all valid ones when fewer exist).
        max_transitions: transitions for the one-step F/T error (all when fewer exist).
    """

    horizon: int = 100
    history: int = 3
    max_segments: int = 64
    max_transitions: int = 2000

    def __post_init__(self):
        for name in ("horizon", "history", "max_segments", "max_transitions"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidInputError(f"EvalConfig.{name} must be an integer >= 1, got {v!r}")


@dataclass(frozen=True)
class RecordedData:
    """The committed episodes of a dataset file with the scene of each (JSON text) and the file's meta."""

    path: str
    meta: DatasetMeta
    episodes: tuple[Episode, ...]
    scenes: tuple[str, ...]

    @property
    def policy(self) -> str:
        """Name of the policy that recorded the data (``"?"`` when the meta does not say)."""
        return str(json.loads(self.meta.policy).get("name", "?"))


@dataclass(frozen=True)
class PredictionReport:
    """Scores of one model on one dataset, and the seconds its evaluation took."""

    rollout: RolloutMetrics
    one_step: OneStepMetrics
    wall_s: float


def load_recorded(path: str | Path) -> RecordedData:
    """Read every committed episode of ``path`` and its scene.

    Raises:
        DatasetError: the file is unreadable, or an episode's scene is unknown (``"{}"``, e.g. a robot log
            imported without one): models need the geometry.
    """
    with open_dataset(path) as ds:
        episodes = tuple(ds.all_episodes())
        scenes = tuple(ds.scene_json(i) for i in range(len(ds)))
        meta = ds.meta
    for i, text in enumerate(scenes):
        if text.strip() in ("", "{}"):
            raise DatasetError(f"{path}: episode {i} has no scene description; a contact model needs the geometry")
    return RecordedData(str(path), meta, episodes, scenes)


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
    """A trained Act-FIGNet / FIGNet+ checkpoint (file or training folder), driven by applied wrenches."""
    from contactkit.models.gnn import GnnContactModel, load_checkpoint, restore_model

    ckpt = load_checkpoint(resolve_checkpoint(path))
    net = restore_model(ckpt, device)
    return Predictor(name, lambda scene, mode: GnnContactModel(net, scene, ckpt.step_spec, device))


def _lengths(data: RecordedData) -> np.ndarray:
    return np.array([e.n_steps for e in data.episodes], dtype=np.int64)


def _draw(pairs: np.ndarray, limit: int, rng: np.random.Generator) -> np.ndarray:
    if len(pairs) > limit:
        pairs = pairs[np.sort(rng.choice(len(pairs), size=limit, replace=False))]
    return pairs


def sample_segments(lengths: Sequence[int], horizon: int, history: int, limit: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Rollout segments ``(N, 2)`` int64 rows ``(episode, t0)``, uniform without replacement, sorted.

    A segment starts at state ``t0 >= history - 1`` (a full history) and needs ``t0 + horizon <= T_e``
    (episode ``e`` has ``T_e`` steps). ``N = min(limit, number of valid segments)``.

    Raises:
        InvalidInputError: no episode is long enough for one segment.
    """
    pairs = [(e, t) for e, n in enumerate(lengths) for t in range(history - 1, int(n) - horizon + 1)]
    if not pairs:
        raise InvalidInputError(f"no episode has the {history - 1 + horizon} steps a {horizon}-step rollout "
                                f"with a {history}-state history needs (longest: {max(lengths, default=0)})")
    return _draw(np.array(pairs, dtype=np.int64), limit, rng)


def sample_transitions(lengths: Sequence[int], history: int, limit: int, rng: np.random.Generator) -> np.ndarray:
    """One-step samples ``(M, 2)`` int64 rows ``(episode, t)`` with ``history - 1 <= t < T_e``, uniform, sorted.

    Raises:
        InvalidInputError: no episode has a full history.
    """
    pairs = [(e, t) for e, n in enumerate(lengths) for t in range(history - 1, int(n))]
    if not pairs:
        raise InvalidInputError(f"no episode is longer than the {history}-state history")
    return _draw(np.array(pairs, dtype=np.int64), limit, rng)


def _inputs(ep: Episode, source: ActionSource) -> np.ndarray:
    return ep.action if source is ActionSource.APPLIED else ep.command


def _by_scene(data: RecordedData, rows: np.ndarray) -> dict[str, np.ndarray]:
    groups: dict[str, list[int]] = {}
    for k, e in enumerate(rows[:, 0]):
        groups.setdefault(data.scenes[int(e)], []).append(k)
    return {text: np.array(ks) for text, ks in groups.items()}


def _histories(data: RecordedData, rows: np.ndarray, history: int) -> BodyState:
    """Recorded states ``s_{t-H+1} .. s_t`` for each row ``(episode, t)``: fields ``(n, H, ...)``."""
    flat = [data.episodes[int(e)].states().as_array()[int(t) - history + 1:int(t) + 1] for e, t in rows]
    return BodyState.from_array(np.stack(flat))


def _rollout_part(model: ContactModel, data: RecordedData, rows: np.ndarray, config: EvalConfig,
                  source: ActionSource):
    T, H = config.horizon, config.history
    history = _histories(data, rows, H)
    actions = np.stack([_inputs(data.episodes[int(e)], source)[int(t):int(t) + T] for e, t in rows])
    truth = BodyState.from_array(np.stack([data.episodes[int(e)].states().as_array()[int(t) + 1:int(t) + T + 1]
                                           for e, t in rows]))
    predicted, _ = rollout(model, history, actions)
    return rollout_errors(predicted, truth, history.index((slice(None), -1)))


def evaluate_predictors(predictors: Sequence[Predictor], data: RecordedData, config: EvalConfig,
                        rng: np.random.Generator) -> dict[str, PredictionReport]:
    """Score each predictor on the same segments and transitions of ``data`` (drawn once from ``rng``).

    Returns:
        ``{predictor.name: PredictionReport}`` in the order given: :class:`RolloutMetrics` at
        ``config.horizon`` (positions of the tool origin, world frame) and :class:`OneStepMetrics` (F/T,
        sensor frame, against the recorded — possibly noisy and biased — readings).

    Raises:
        InvalidInputError: episodes too short, or two predictors share a name.
    """
    names = [p.name for p in predictors]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"predictor names must be unique, got {names}")
    lengths = _lengths(data)
    segments = sample_segments(lengths, config.horizon, config.history, config.max_segments, rng)
    transitions = sample_transitions(lengths, config.history, config.max_transitions, rng)
    seg_groups, step_groups = _by_scene(data, segments), _by_scene(data, transitions)
    reports = {}
    for p in predictors:
        started = time.perf_counter()
        models: dict[str, ContactModel] = {}

        def model_for(text: str, p=p, models=models) -> ContactModel:
            if text not in models:
                models[text] = p.make(Scene.from_json(text), data.meta.action_mode)
            return models[text]

        parts = [_rollout_part(model_for(text), data, segments[ks], config, p.source)
                 for text, ks in seg_groups.items()]
        predicted, measured = [], []
        for text, ks in step_groups.items():
            rows = transitions[ks]
            actions = np.stack([_inputs(data.episodes[int(e)], p.source)[int(t)] for e, t in rows])
            _, wrench = model_for(text).step(_histories(data, rows, config.history), actions)
            predicted.append(wrench)
            measured.append(np.stack([data.episodes[int(e)].wrench[int(t)] for e, t in rows]))
        reports[p.name] = PredictionReport(
            rollout_metrics(concat_rollout_errors(parts)),
            one_step_metrics(np.concatenate(predicted), np.concatenate(measured)),
            time.perf_counter() - started,
        )
    return reports


def report_row(model: str, policy: str, report: PredictionReport) -> dict:
    """One row of Table I: keys ``model, policy, rmse_pos_mm, rel_pos, rmse_rot_deg, rel_rot, force_err_N,
    torque_err_Nm`` (relative errors as fractions, not percent), plus ``horizon, rollouts, transitions``."""
    r, s = report.rollout, report.one_step
    return {
        "model": model,
        "policy": policy,
        "rmse_pos_mm": r.rmse_pos_m * M_TO_MM,
        "rel_pos": r.rel_pos,
        "rmse_rot_deg": float(np.degrees(r.rmse_rot_rad)),
        "rel_rot": r.rel_rot,
        "force_err_N": s.force_err_N,
        "torque_err_Nm": s.torque_err_Nm,
        "horizon": r.horizon,
        "rollouts": r.n_rollouts,
        "transitions": s.n_transitions,
    }


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
