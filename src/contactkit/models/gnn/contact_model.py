"""A trained Act-FIGNet / FIGNet+ model behind the ContactModel protocol (docs/architecture.md).

``step(history, action) -> (next state, F/T reading)`` runs the whole pipeline of paper §III-C: the action
wrench (the impedance controller's, from a pose-delta command at the current state, :mod:`.actions`; or a
given wrench), graph construction from the last ``h`` tool states and that wrench, the EPD stack, then
post-processing (Euler integration of vertex accelerations, rigid alignment, finite-difference
velocities) and the conversion of the predicted wrench to the sensor frame. Inputs and outputs are numpy
float64; batch dimensions lead.

A model trained on tared labels (``contactkit train`` and the prediction experiment tare them by default,
:mod:`contactkit.data.label_tare`; the checkpoint's ``train_state["labels"]`` says so) predicts the *tared* F/T
reading: no sensor bias, zero in free space, as the residual model's. A model with
``GraphConfig.previous_command`` also reads the previous step's action; ``step`` takes it, per batch position,
from :class:`~contactkit.models.command_memory.CommandMemory` (the command of its own last call where the
history continues that call's returned state, :meth:`GnnContactModel.prime`'s for a fresh history, else the
current command), as the residual model does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.command_memory import CommandMemory
from contactkit.models.gnn.actions import action_wrench
from contactkit.models.gnn.checkpoint import load_checkpoint, restore_model
from contactkit.models.gnn.graph import build_graphs
from contactkit.models.gnn.kinematics import SceneArrays, StepSpec, center_to_sensor, graph_inputs, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode
from contactkit.models.gnn.population import (
    PopulationCache,
    population_cache,
    population_graph,
    prune_untouched,
    tool_kinematics,
)
from contactkit.models.gnn.postprocess import (
    align_pose,
    finite_difference_velocity,
    integrate_positions,
    same_hemisphere,
)
from contactkit.scene import Scene
from contactkit.state import BodyState, stack_states


@dataclass(frozen=True, eq=False)
class GnnContactModel:
    """A learned contact model for one scene.

    Attributes:
        model: the trained EPD stack (evaluated without gradients).
        scene: the scene it predicts (any geometry: the model is not tied to its training scenes).
        step_spec: control period [s] and gravity [m/s²] it was trained for.
        device: torch device the network runs on.
    """

    model: EncodeProcessDecode
    scene: Scene
    step_spec: StepSpec
    device: str = "cpu"
    arrays: SceneArrays = field(init=False, repr=False)
    population: PopulationCache = field(init=False, repr=False)
    memory: CommandMemory = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "arrays", prepare_scene(self.scene, self.step_spec))
        object.__setattr__(self, "population", population_cache(self.arrays, self.model.config.graph))
        object.__setattr__(self, "memory", CommandMemory())
        self.model.to(self.device).eval()

    def prime(self, previous_command: np.ndarray) -> None:
        """The action ``(*B, 6)`` of the step that ended at the next call's history (used once; ignored by a
        model without ``GraphConfig.previous_command``)."""
        self.memory.prime(previous_command)

    @staticmethod
    def from_checkpoint(path: str | Path, scene: Scene, device: str = "cpu",
                        action_mode: ActionMode | str | None = ActionMode.POSE_DELTA) -> GnnContactModel:
        """Load a checkpoint written by training.

        Args:
            path: the ``.safetensors`` file.
            scene: the scene to predict.
            device: torch device.
            action_mode: the actions the caller will give (default pose deltas); None accepts either mode.

        Raises:
            CheckpointError: the file is unusable, or its model takes another kind of action.
        """
        ckpt = load_checkpoint(path, action_mode=action_mode)
        return GnnContactModel(restore_model(ckpt, device), scene, ckpt.step_spec, device)

    @property
    def action_mode(self) -> ActionMode:
        """What an action is: a pose-target displacement (``POSE_DELTA``) or an applied wrench (``WRENCH``)."""
        return self.model.config.graph.action_mode

    @property
    def history(self) -> int:
        """Number of past states ``h`` a step reads (the last ``h`` of the history it is given)."""
        return self.model.config.graph.history

    @property
    def control_dt(self) -> float:
        """Control period [s] between states."""
        return self.step_spec.dt

    def _check(self, history: BodyState, action) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        history = history.validated("history")
        shape = history.batch_shape
        h = self.history
        if len(shape) < 1 or shape[-1] < h:
            raise InvalidInputError(f"history must have a time axis of at least {h} states, got batch shape {shape}")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (*shape[:-1], 6):
            raise InvalidInputError(f"action must have shape {(*shape[:-1], 6)}, got {action.shape}")
        if not np.all(np.isfinite(action)):
            raise InvalidInputError("action contains NaN or Inf")
        flat = history.as_array()[..., -h:, :].reshape(-1, h, 13)
        return flat, action.reshape(-1, 6), shape[:-1]

    def step(self, history: BodyState, action) -> tuple[BodyState, np.ndarray]:
        """One control step (paper §III-C, g and h of §III-A combined).

        Args:
            history: tool states with time axis last among the batch dims: fields ``(*B, H, ...)``,
                oldest first, ``H >= history``; world frame.
            action: ``(*B, 6)``: with ``action_mode`` ``POSE_DELTA`` a displacement of the impedance target
                from the current pose (position [m], rotation vector [rad], world frame), turned into the
                controller's wrench at the current state (:func:`.actions.command_wrench`); with ``WRENCH``
                the wrench applied to the tool, world frame, torque about the tool origin [N, N·m].

        Returns:
            ``(state, wrench)``: next tool state ``(*B,)`` (velocities by finite difference over ``dt``) and
            the F/T reading at ``t`` ``(*B, 6)``, sensor frame, torque about the sensor origin [N, N·m]
            (tared, without sensor bias, for a model trained on tared labels: module docstring).

        Raises:
            InvalidInputError: wrong shapes, NaN, non-unit quaternions, too short a history.
        """
        flat, act, batch = self._check(history, action)
        prev, _, _ = self.memory.recall(flat[:, -1], act)
        wrench_in = action_wrench(self.action_mode, self.arrays.law, flat, act, self.control_dt)
        prev_in = action_wrench(self.action_mode, self.arrays.law, flat, prev, self.control_dt) \
            if self.model.config.graph.previous_command else None
        graph = self.input_graph(flat, wrench_in, prune=True, prev_wrench=prev_in).to(self.device)
        accel, wrench = self.model.predict(graph)
        n, n_vert = len(flat), len(self.arrays.tool_vertices)
        accel = accel.detach().cpu().to(torch.float64).reshape(n, n_vert, 3)
        verts = tool_kinematics(self.population, flat[:, -self.history:])[0]
        p_t, p_prev = torch.as_tensor(verts[:, -1]), torch.as_tensor(verts[:, -2])
        ref = torch.as_tensor(self.arrays.tool_vertices).expand(n, n_vert, 3)
        pos1, quat1 = align_pose(ref, integrate_positions(accel, p_t, p_prev))
        pos0 = torch.as_tensor(flat[:, -1, 0:3])
        quat0 = torch.as_tensor(flat[:, -1, 3:7] / np.linalg.norm(flat[:, -1, 3:7], axis=-1, keepdims=True))
        quat1 = same_hemisphere(quat1, quat0)
        lin, ang = finite_difference_velocity(pos0, quat0, pos1, quat1, self.control_dt)
        state = np.concatenate([pos1.numpy(), quat1.numpy(), lin.numpy(), ang.numpy()], axis=-1)
        reading = center_to_sensor(self.arrays, pos0.numpy(), quat0.numpy(),
                                   wrench.detach().cpu().to(torch.float64).numpy())
        self.memory.remember(state, act)
        return BodyState.from_array(state.reshape(*batch, 13)), reading.reshape(*batch, 6)

    def input_graph(self, windows: np.ndarray, wrench: np.ndarray, fast: bool = True, prune: bool = False,
                    prev_wrench: np.ndarray | None = None):
        """The batched input graph of ``windows`` (B, h, 13) (oldest first) and applied wrenches ``wrench`` (B, 6)
        (world frame, torque about the tool origin [N, N·m]; ``prev_wrench`` (B, 6) the previous step's, for a
        model with ``GraphConfig.previous_command``), on the CPU.

        ``fast``: built in one pass from the scene's cached static structures (:mod:`.population`); else one graph
        per window, collated (:func:`.graph.build_graphs`, the reference the fast path is tested against).
        ``prune``: without each window's static bodies that no face edge touches (:func:`.population.prune_untouched`:
        the same predictions from fewer rows; :meth:`step` prunes).
        """
        if fast:
            graph = population_graph(self.population, windows, wrench, prev_wrench)
        else:
            inputs = [graph_inputs(self.arrays, windows[i], wrench[i], None if prev_wrench is None else prev_wrench[i])
                      for i in range(len(windows))]
            graph = build_graphs([self.arrays] * len(inputs), inputs, self.model.config.graph)
        return prune_untouched(self.population, graph) if prune else graph

    def rollout(self, history: BodyState, actions) -> tuple[BodyState, np.ndarray]:
        """Rollout feeding predictions back as history (paper §IV-B.c); with pose-delta actions the controller's
        wrench is recomputed at every predicted state, so the rollout is closed loop like a simulator's.

        Args:
            history: initial states, fields ``(*B, H, ...)``, ``H >= history``.
            actions: ``(*B, T, 6)`` actions of :meth:`step`, one per step.

        Returns:
            states with fields ``(*B, T, ...)`` (``s_{t+1} .. s_{t+T}``) and F/T readings ``(*B, T, 6)``.
        """
        actions = np.asarray(actions, dtype=np.float64)
        if actions.ndim < 2 or actions.shape[-1] != 6:
            raise InvalidInputError(f"actions must have shape (*B, T, 6), got {actions.shape}")
        h = self.history
        window = BodyState.from_array(history.validated("history").as_array()[..., -h:, :])
        states, readings = [], []
        for k in range(actions.shape[-2]):
            nxt, reading = self.step(window, actions[..., k, :])
            states.append(nxt)
            readings.append(reading)
            merged = np.concatenate([window.as_array()[..., 1:, :], nxt.as_array()[..., None, :]], axis=-2)
            window = BodyState.from_array(merged)
        time_axis = len(actions.shape) - 2
        return stack_states(states, axis=time_axis), np.stack(readings, axis=time_axis)
