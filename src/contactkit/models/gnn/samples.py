"""Training samples of Act-FIGNet (paper §III-D.a): windows → world-frame inputs and labels, augmentation.

A window is a mapping with ``history`` (h, 13), ``action`` (6,) (the applied wrench), ``command`` (6,) (the
policy's pose-delta command; needed by ``ActionMode.POSE_DELTA`` models, which turn it into the controller's
wrench, :mod:`.actions`), for models with ``GraphConfig.previous_command`` ``prev_command`` / ``prev_action`` (6,)
(step t-1's), and for training ``wrench`` (6,) and ``next_state`` (13,) (float tensors or arrays;
see :mod:`.kinematics` for frames). Augmentation rotates
the whole world about its origin (vertex positions, centres, wrenches; gravity is inside the net external
wrench, so it rotates with them) and adds Gaussian noise to the input positions of the tool.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.actions import action_wrench
from contactkit.models.gnn.graph import Graph, GraphConfig, build_graphs
from contactkit.models.gnn.kinematics import GraphInputs, GraphTargets, SceneArrays, graph_inputs, graph_targets
from contactkit.rotations import quat_to_mat, rotvec_to_quat


class RotationAugmentation(enum.Enum):
    """Random rotation applied to each training sample: none, about world z, or uniform over SO(3)."""

    NONE = "none"
    YAW = "yaw"
    SO3 = "so3"


@dataclass(frozen=True)
class Batch:
    """A batch of graphs with its labels.

    Attributes:
        graph: the batched input graphs.
        accel: ``(NT, 3)`` float32 target ``p_{t+1} − 2 p_t + p_{t−1}`` of every tool vertex [m].
        wrench: ``(G, 6)`` float32 contact wrench per graph, world frame, about the tool centre of mass.
    """

    graph: Graph
    accel: torch.Tensor
    wrench: torch.Tensor

    def to(self, device) -> Batch:
        """The same batch on ``device``."""
        return Batch(self.graph.to(device), self.accel.to(device), self.wrench.to(device))


def _array(window: Mapping, key: str) -> np.ndarray:
    if key not in window:
        raise InvalidInputError(f"window lacks the key '{key}' (has {sorted(window)})")
    value = window[key]
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)


WINDOW_ACTION_KEY = {ActionMode.WRENCH: "action", ActionMode.POSE_DELTA: "command"}
"""Which window entry a model of each action mode reads."""
WINDOW_PREVIOUS_KEY = {ActionMode.WRENCH: "prev_action", ActionMode.POSE_DELTA: "prev_command"}
"""Which window entry holds the previous step's action of a model of each action mode."""


def window_wrench(arrays: SceneArrays, window: Mapping, mode: ActionMode, previous: bool = False) -> np.ndarray:
    """The action wrench (6,) of a window, world frame about the tool origin [N, N·m]: the recorded applied
    wrench (``WRENCH``) or the controller's wrench for the recorded command at the recorded history
    (``POSE_DELTA``, :func:`.actions.command_wrench`). ``previous``: the same for step t-1's action (its
    controller wrench at the same recorded history, as the model computes it in a rollout)."""
    mode = ActionMode(mode)
    action = _array(window, (WINDOW_PREVIOUS_KEY if previous else WINDOW_ACTION_KEY)[mode])
    if mode is ActionMode.WRENCH:
        return action
    history = _array(window, "history")
    if action.shape != (6,) or history.ndim != 2 or history.shape[0] < 2:
        raise InvalidInputError(f"window 'command' must have shape (6,) and 'history' at least 2 states, got "
                                f"{action.shape} and {history.shape}")
    if not (np.all(np.isfinite(action)) and np.all(np.isfinite(history))):
        raise InvalidInputError("window 'command' or 'history' contains NaN or Inf")
    return action_wrench(mode, arrays.law, history, action, arrays.step.dt)


def prepare_window(arrays: SceneArrays, window: Mapping, mode: ActionMode = ActionMode.POSE_DELTA,
                   previous: bool = False) -> tuple[GraphInputs, GraphTargets]:
    """World-frame inputs and labels of a training window (raises InvalidInputError on bad shapes/NaN).

    ``mode``: the model's action mode, which says whether the window's ``command`` or ``action`` drives it;
    ``previous``: also the previous step's (``GraphConfig.previous_command``).
    """
    history = _array(window, "history")
    prev = window_wrench(arrays, window, mode, previous=True) if previous else None
    inputs = graph_inputs(arrays, history, window_wrench(arrays, window, mode), prev)
    return inputs, graph_targets(arrays, history, _array(window, "wrench"), _array(window, "next_state"))


def random_rotation(rng: np.random.Generator, mode: RotationAugmentation) -> np.ndarray | None:
    """A random rotation matrix (3, 3) drawn from ``rng`` (uniform on SO(3) or about z), or None."""
    mode = RotationAugmentation(mode)
    if mode is RotationAugmentation.NONE:
        return None
    if mode is RotationAugmentation.YAW:
        return quat_to_mat(rotvec_to_quat(np.array([0.0, 0.0, rng.uniform(-np.pi, np.pi)])))
    q = rng.normal(size=4)
    return quat_to_mat(q / np.linalg.norm(q))


def rotate_sample(inputs: GraphInputs, targets: GraphTargets, rot: np.ndarray) -> tuple[GraphInputs, GraphTargets]:
    """Rotate a sample's world by ``rot`` (3, 3) about the world origin."""

    def r(x):
        return x @ rot.T

    def rw(w):
        return np.concatenate([rot @ w[:3], rot @ w[3:]])

    inputs = replace(
        inputs,
        tool_positions=r(inputs.tool_positions),
        tool_centers=r(inputs.tool_centers),
        static_positions=r(inputs.static_positions),
        static_centers=r(inputs.static_centers),
        wrench=rw(inputs.wrench),
        prev_wrench=None if inputs.prev_wrench is None else rw(inputs.prev_wrench),
    )
    return inputs, GraphTargets(next_positions=r(targets.next_positions), wrench=rw(targets.wrench))


def add_position_noise(inputs: GraphInputs, std: float, rng: np.random.Generator) -> GraphInputs:
    """Inputs with i.i.d. Gaussian noise of ``std`` [m] on every tool vertex and centre position."""
    return replace(
        inputs,
        tool_positions=inputs.tool_positions + rng.normal(0.0, std, inputs.tool_positions.shape),
        tool_centers=inputs.tool_centers + rng.normal(0.0, std, inputs.tool_centers.shape),
    )


def acceleration_target(inputs: GraphInputs, targets: GraphTargets) -> np.ndarray:
    """``p_{t+1} − 2 p_t + p_{t−1}`` (Vt, 3) [m]: what Euler integration must add (§III-C.3)."""
    return targets.next_positions - 2.0 * inputs.tool_positions[-1] + inputs.tool_positions[-2]


def make_batch(
    items: Sequence[tuple[SceneArrays, GraphInputs, GraphTargets, np.ndarray | None]],
    config: GraphConfig,
    noise_std: float = 0.0,
    rng: np.random.Generator | None = None,
) -> Batch:
    """Build, augment and batch samples ``(arrays, inputs, targets, rotation or None)``.

    Noise (``noise_std`` [m], drawn from ``rng``) is added after the rotation; the acceleration target is
    taken relative to the noisy positions.
    """
    if noise_std > 0 and rng is None:
        raise InvalidInputError("make_batch: noise_std > 0 needs an explicit rng")
    all_arrays, all_inputs, accels, wrenches = [], [], [], []
    for arrays, inputs, targets, rot in items:
        if rot is not None:
            inputs, targets = rotate_sample(inputs, targets, rot)
        if noise_std > 0:
            inputs = add_position_noise(inputs, noise_std, rng)
        all_arrays.append(arrays)
        all_inputs.append(inputs)
        accels.append(acceleration_target(inputs, targets))
        wrenches.append(targets.wrench)
    return Batch(
        graph=build_graphs(all_arrays, all_inputs, config),
        accel=torch.as_tensor(np.concatenate(accels), dtype=torch.float32),
        wrench=torch.as_tensor(np.stack(wrenches), dtype=torch.float32),
    )
