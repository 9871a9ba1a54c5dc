"""The engine as a batched :class:`~contactkit.model.ContactModel` (as :mod:`contactkit.mujoco.model` is MuJoCo).

A batch of ``B`` tool states is stepped one after the other by one :class:`EngineWorld` (each element is
placed with ``set_state``, so no warm start carries over between elements), with noise-free F/T readings.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from contactkit.control.impedance import ActionMode
from contactkit.engine.params import EngineParams
from contactkit.engine.world import EngineWorld
from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.state import BodyState


class EngineContactModel:
    """The contactkit engine stepping a batch of tool states; noise-free F/T (``params``' bias and noise
    are not added).

    Args:
        scene: static description.
        params: shared physics parameters (control period, scales, damping, armature, gravity).
        action_mode: how actions are read (``POSE_DELTA`` through the impedance controller, or ``WRENCH``).
        engine: engine-only settings.
    """

    history = 1

    def __init__(self, scene: Scene, params: WorldParams | None = None,
                 action_mode: ActionMode = ActionMode.POSE_DELTA, engine: EngineParams | None = None):
        params = params or WorldParams()
        ideal = dataclasses.replace(params, ft_noise_std=(0.0,) * 6, ft_bias=(0.0,) * 6)
        self.world = EngineWorld(scene, ideal, engine=engine)
        self.scene, self.params = scene, params
        self.action_mode = ActionMode(action_mode)
        self.control_dt = params.control_dt

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`).

        Args:
            history: ``(*B, H)`` states, world frame; the last of the window is stepped.
            action: ``(*B, 6)`` actions in ``action_mode``.

        Returns:
            ``(next_state (*B,), wrench (*B, 6))``: F/T reading in the sensor frame [N, N·m].
        """
        last = BodyState(history.pos[..., -1, :], history.quat[..., -1, :], history.lin_vel[..., -1, :],
                         history.ang_vel[..., -1, :])
        batch = last.batch_shape
        flat = BodyState(*(np.asarray(a, dtype=np.float64).reshape(-1, a.shape[-1]) for a in
                           (last.pos, last.quat, last.lin_vel, last.ang_vel)))
        action = np.asarray(action, dtype=np.float64).reshape(-1, 6)
        if action.shape[0] != flat.pos.shape[0] or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"actions must be finite with shape {batch + (6,)}, got {np.shape(action)}")
        flat.validated("history")
        states, readings = [], []
        for i in range(action.shape[0]):
            self.world.set_state(flat.index(i))
            result = self.world.step(action[i], self.action_mode)
            states.append(result.state)
            readings.append(result.wrench)
        shaped = lambda xs, k: np.stack(xs).reshape(*batch, k)  # noqa: E731
        out = BodyState(shaped([s.pos for s in states], 3), shaped([s.quat for s in states], 4),
                        shaped([s.lin_vel for s in states], 3), shaped([s.ang_vel for s in states], 3))
        return out, shaped(readings, 6)
