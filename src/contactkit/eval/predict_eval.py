"""Evaluate contact models on recorded trajectories (Act-FIGNet paper §IV-B.c): rollouts and one-step F/T.

Every model is scored on the same samples of a dataset: ``N`` segments of ``T`` steps, each rolled out
(predictions fed back as history) from the recorded states ``s_{t0-H+1} .. s_{t0}`` with the recorded
inputs of steps ``t0 .. t0+T-1``; and ``M`` transitions whose F/T reading is predicted in one step from the
recorded history. Metrics: :mod:`contactkit.eval.metrics`; the models: :mod:`contactkit.eval.predictors`.

What "the recorded inputs" are depends on the model (:class:`ActionSource`):

* ``APPLIED``: the episode's ``action``, the mean wrench the controller applied during the step (world
  frame, about the tool origin, gravity compensation included).
* ``COMMAND``: the episode's ``command``, what the policy asked in the dataset's action mode (e.g. a pose
  target displacement for the impedance controller) — what a simulator with its own model of the
  controller reads, and a ``POSE_DELTA`` Act-FIGNet / FIGNet+. Replaying commands in the world that
  recorded them reproduces the data up to the contact solver's warm start (measured: about 1e-6 m and
  2e-4 N per step in steady contact).

F/T errors are taken against the recorded readings (noise and bias of the recording sensor included) and,
when a *clean twin* of the data is given — the same episodes recorded by a sensor without noise and bias,
verified to be the same trajectories (:func:`check_clean_twin`) — also against the noise-free readings.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.data.reader import open_dataset
from contactkit.data.schema import DatasetMeta, Episode
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.eval.metrics import (
    OneStepMetrics,
    RolloutMetrics,
    concat_rollout_errors,
    one_step_metrics,
    rollout_errors,
    rollout_metrics,
)
from contactkit.eval.predictors import (
    ActionSource,
    AppliedWrenchReplay,
    Predictor,
    checkpoint_predictor,
    gravity_compensation,
    mujoco_predictor,
    noise_free,
    resolve_checkpoint,
)
from contactkit.model import ContactModel, rollout
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = [
    "ActionSource",
    "AppliedWrenchReplay",
    "EvalConfig",
    "PredictionReport",
    "Predictor",
    "RecordedData",
    "TWIN_STATE_TOL",
    "check_clean_twin",
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
]

M_TO_MM = 1e3
TWIN_STATE_TOL = 1e-9
"""Largest state difference [m, rad, m/s, rad/s] between a dataset and its clean twin: the same simulation,
only the F/T readings differ (the sensor's noise does not act on the dynamics)."""


@dataclass(frozen=True)
class EvalConfig:
    """Sample sizes of an evaluation (Act-FIGNet paper: 4k segments of 100 steps, 40k transitions).

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
    """Scores of one model on one dataset, and the seconds its evaluation took.

    ``one_step``: F/T errors against the recorded readings; ``one_step_clean``: against the clean twin's
    noise-free readings (None without a twin).
    """

    rollout: RolloutMetrics
    one_step: OneStepMetrics
    wall_s: float
    one_step_clean: OneStepMetrics | None = None


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


def check_clean_twin(data: RecordedData, clean: RecordedData) -> float:
    """Check that ``clean`` holds the same trajectories as ``data``; returns the largest state difference.

    Raises:
        DatasetError: other episodes, lengths, commands, or states further apart than ``TWIN_STATE_TOL``.
    """
    if len(data.episodes) != len(clean.episodes) or data.scenes != clean.scenes:
        raise DatasetError(f"{clean.path} is not a twin of {data.path}: other episodes or scenes")
    worst = 0.0
    for k, (a, b) in enumerate(zip(data.episodes, clean.episodes, strict=True)):
        if a.n_steps != b.n_steps or not np.array_equal(a.command, b.command):
            raise DatasetError(f"{clean.path} is not a twin of {data.path}: episode {k} has other commands")
        worst = max(worst, float(np.max(np.abs(a.states().as_array() - b.states().as_array()))))
    if worst > TWIN_STATE_TOL:
        raise DatasetError(f"{clean.path} is not a twin of {data.path}: states differ by up to {worst:.3g} "
                           f"(> {TWIN_STATE_TOL}); the sensor noise acted on the trajectories (F/T feedback)")
    return worst


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


def _prime(model: ContactModel, data: RecordedData, rows: np.ndarray, source: ActionSource) -> None:
    """Give a model that reads the previous command (it has ``prime``: the residual model, a graph network) the
    recorded input of the step before each row's ``t`` (the step's own input at ``t = 0``)."""
    if hasattr(model, "prime"):
        model.prime(np.stack([_inputs(data.episodes[int(e)], source)[max(int(t) - 1, 0)] for e, t in rows]))


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
    _prime(model, data, rows, source)
    predicted, _ = rollout(model, history, actions)
    return rollout_errors(predicted, truth, history.index((slice(None), -1)))


def _one_step(model_for, data: RecordedData, transitions: np.ndarray, groups: dict, config: EvalConfig,
              source: ActionSource) -> np.ndarray:
    """Predicted F/T readings ``(M, 6)`` of the transitions, in their order."""
    out = np.zeros((len(transitions), 6))
    for text, ks in groups.items():
        rows = transitions[ks]
        actions = np.stack([_inputs(data.episodes[int(e)], source)[int(t)] for e, t in rows])
        model = model_for(text)
        _prime(model, data, rows, source)
        _, out[ks] = model.step(_histories(data, rows, config.history), actions)
    return out


def _readings(data: RecordedData, rows: np.ndarray) -> np.ndarray:
    return np.stack([data.episodes[int(e)].wrench[int(t)] for e, t in rows])


def evaluate_predictors(predictors: Sequence[Predictor], data: RecordedData, config: EvalConfig,
                        rng: np.random.Generator, clean: RecordedData | None = None) -> dict[str, PredictionReport]:
    """Score each predictor on the same segments and transitions of ``data`` (drawn once from ``rng``).

    Args:
        predictors: the models (unique names).
        data: the recorded test set.
        config: sample sizes.
        rng: draws the segments and transitions.
        clean: optional clean twin of ``data`` (:func:`check_clean_twin`): F/T errors against its readings too.

    Returns:
        ``{predictor.name: PredictionReport}`` in the order given: :class:`RolloutMetrics` at
        ``config.horizon`` (positions of the tool origin, world frame) and :class:`OneStepMetrics` (F/T,
        sensor frame, against the recorded — possibly noisy and biased — readings, and the clean ones).

    Raises:
        InvalidInputError: episodes too short, or two predictors share a name. DatasetError: not a twin.
    """
    names = [p.name for p in predictors]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"predictor names must be unique, got {names}")
    if clean is not None:
        check_clean_twin(data, clean)
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
        predicted = _one_step(model_for, data, transitions, step_groups, config, p.source)
        reports[p.name] = PredictionReport(
            rollout_metrics(concat_rollout_errors(parts)),
            one_step_metrics(predicted, _readings(data, transitions)),
            time.perf_counter() - started,
            None if clean is None else one_step_metrics(predicted, _readings(clean, transitions)),
        )
    return reports


def report_row(model: str, policy: str, report: PredictionReport) -> dict:
    """One row of Table I: keys ``model, policy, rmse_pos_mm, rel_pos, rmse_rot_deg, rel_rot, force_err_N,
    torque_err_Nm`` (relative errors as fractions, not percent), ``force_err_clean_N, torque_err_clean_Nm``
    (against the clean twin's readings; None without one), plus ``horizon, rollouts, transitions``."""
    r, s, c = report.rollout, report.one_step, report.one_step_clean
    return {
        "model": model,
        "policy": policy,
        "rmse_pos_mm": r.rmse_pos_m * M_TO_MM,
        "rel_pos": r.rel_pos,
        "rmse_rot_deg": float(np.degrees(r.rmse_rot_rad)),
        "rel_rot": r.rel_rot,
        "force_err_N": s.force_err_N,
        "torque_err_Nm": s.torque_err_Nm,
        "force_err_clean_N": None if c is None else c.force_err_N,
        "torque_err_clean_Nm": None if c is None else c.torque_err_Nm,
        "horizon": r.horizon,
        "rollouts": r.n_rollouts,
        "transitions": s.n_transitions,
    }
