"""The contact models that :mod:`contactkit.eval.predict_eval` scores.

* MuJoCo worlds (:func:`mujoco_predictor`): a world preset replaying the policy's commands through its own
  impedance controller (``COMMAND``), or the recorded mean applied wrench (``APPLIED``,
  :class:`AppliedWrenchReplay`). Measured: the latter is *not* faithful under impedance control — a constant
  mean wrench is not the time-varying wrench of the control period — and drifts by about a millimetre per
  step even in the recording world (see ``tests/eval/test_predict_eval.py``).
* Trained Act-FIGNet / FIGNet+ checkpoints (:func:`checkpoint_predictor`): a ``POSE_DELTA`` model replays
  the commands (it computes the controller's wrench at its own state, closed loop); a ``WRENCH`` model, the
  recorded applied wrenches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.errors import CheckpointError
from contactkit.files import PathKind, expect_path
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
    "checkpoint_predictor",
    "gravity_compensation",
    "mujoco_predictor",
    "noise_free",
    "residual_predictor",
    "resolve_checkpoint",
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


def stateful_predictor(params: WorldParams, name: str) -> Predictor:
    """MuJoCo under ``params`` with its real cell's hidden state (latency, compliance, filter), replaying commands
    from each recorded state at rest (:func:`contactkit.calibration.objective.replay_model`; noise-free F/T): how
    a world calibrated with those fields (``contactkit calibrate --params full``) predicts a log."""
    from contactkit.calibration.objective import replay_model

    return Predictor(name, lambda scene, mode: replay_model(scene, noise_free(params), mode), ActionSource.COMMAND)


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
    return expect_path(path, PathKind.FILE, lambda problem: CheckpointError(f"checkpoint {str(path)!r} {problem}"))


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


def residual_predictor(path: str | Path, name: str, device: str = "cpu", gated: bool = True) -> Predictor:
    """A trained residual checkpoint (:mod:`contactkit.models.residual`) over its own backbone and backbone world,
    driven by the recorded commands (``COMMAND``).

    Raises:
        CheckpointError: nothing usable at ``path`` (at once), or, from ``make``, data of another action mode, a
            scene of another task, or a world of another control period.
    """
    from contactkit.models.residual import ResidualContactModel, check_compatible, load_residual, make_backbone

    net, ckpt = load_residual(path)
    net = net.to(device)

    def make(scene: Scene, data_mode: ActionMode) -> ContactModel:
        check_compatible(ckpt, ckpt.backbone, ckpt.backbone_world, data_mode, str(scene.meta.get("task", "")))
        backbone = make_backbone(ckpt.backbone, scene, ckpt.backbone_world, ActionMode(data_mode))
        return ResidualContactModel(net, backbone, scene, gated)

    return Predictor(name, make, ActionSource.COMMAND)
