"""The engine as a batched :class:`~contactkit.model.ContactModel` (as :mod:`contactkit.mujoco.model` is MuJoCo).

A batch of ``B`` tool states is advanced by one compiled call (:func:`_advance_batch`) that runs the engine's
control-period kernel (:func:`contactkit.engine._kernels_step.advance`, the same code as
:meth:`EngineWorld.step <contactkit.engine.world.EngineWorld.step>`) for every element, each with its own
solver buffers, on ``n_threads`` threads (contiguous slices of the batch; the kernel releases the GIL).
F/T readings are noise-free.

Warm start. An element whose history ends exactly (bit for bit) at the state this model returned for the
same batch position in the previous call continues from the engine's internal state: the solver is warm
started from the impulses of the previous step, as a world stepping without interruption is, so an open-loop
rollout through :func:`contactkit.model.rollout` equals a sequence of ``EngineWorld.step`` calls. Any other
element is placed with :meth:`EngineWorld.set_state` (validation, penetration check, cold solver).

Why one compiled call: a control period of the 50 mm peg costs the kernel about a millisecond, and driving
:class:`EngineWorld` element by element adds Python around every element (``set_state`` included). An iCEM
replan of Table IV (population 20, horizon 50, 5 iterations) is 5000 element-steps;
``contactkit experiment mpc-insertion`` reports the replan time per model, MuJoCo's beside the engine's.
Threads pay only on idle cores.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.control.impedance import POSE_MODES
from contactkit.engine._kernels_dynamics import Control, body_state, pose_command_target
from contactkit.engine._kernels_step import STAT_NONFINITE, Buffers, advance
from contactkit.engine.layout import STATE_SIZE
from contactkit.engine.params import EngineParams
from contactkit.engine.world import EngineWorld, _buffers
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.state import STATE_DIM, BodyState

__all__ = ["EngineContactModel"]


class _BatchBuffers(NamedTuple):
    """:class:`~contactkit.engine._kernels_step.Buffers` of ``B`` elements, stacked on a leading axis."""

    cache_tool: np.ndarray
    cache_env: np.ndarray
    raw: np.ndarray
    contacts: np.ndarray
    impulses: np.ndarray
    frames: np.ndarray
    jac: np.ndarray
    m_inv_jt: np.ndarray
    blocks: np.ndarray
    bias: np.ndarray
    mu: np.ndarray
    prev_keys: np.ndarray
    prev_impulses: np.ndarray
    counts: np.ndarray
    stats: np.ndarray
    cache_env_edges: np.ndarray
    cache_tool_edges: np.ndarray
    cache_pairs: np.ndarray
    pair_gaps: np.ndarray
    pair_motion: np.ndarray


def _stacked_buffers(geometry, max_contacts: int, size: int) -> _BatchBuffers:
    """Fresh buffers of ``size`` elements (cold solvers, empty separating-plane caches)."""
    one = _buffers(geometry, max_contacts)
    return _BatchBuffers(*(np.repeat(a[None], size, axis=0) for a in one))


def _advance_batch_py(geo, body, template, settings, bufs, states, deltas, max_pos_step, max_rot_step,
                      pose_mode, absolute, readings, applied, failed, origin):
    """One control period of every element ``i`` (compiled below).

    ``states (B, 13)`` kernel states ``[com; quat; v_com; ω_body]`` (:mod:`.layout`) advanced in place;
    ``deltas (B, 6)`` pose commands of the tool centre point (``pose_mode``: deltas [m, rad], or absolute targets
    where ``absolute``, :func:`~._kernels_dynamics.pose_command_target`) or world wrenches about the tool origin
    [N, N·m];
    ``readings`` and ``applied (B, 6)`` written as by ``advance``; ``failed (B,)`` set where the step left the
    finite numbers (that element's state is restored and its warm start cleared, as ``EngineWorld.step`` does);
    ``origin (B, 13)`` written: the tool-origin states ``[pos; quat; lin_vel; ang_vel]`` (world frame).
    """
    for i in range(states.shape[0]):
        state = states[i]
        if pose_mode:
            target_pos, target_quat, _, _ = pose_command_target(state, body.com_local, deltas[i], absolute,
                                                                template.tcp, template.has_tcp, max_pos_step,
                                                                max_rot_step)
            command = template.command
        else:
            target_pos, target_quat = template.target_pos, template.target_quat
            command = deltas[i].copy()
        ctrl = Control(pose_mode, target_pos, target_quat, template.stiffness_pos, template.stiffness_rot,
                       template.damping_pos, template.damping_rot, template.max_force, template.max_torque,
                       template.weight, command, template.tcp, template.has_tcp)
        buf = Buffers(bufs.cache_tool[i], bufs.cache_env[i], bufs.raw[i], bufs.contacts[i], bufs.impulses[i],
                      bufs.frames[i], bufs.jac[i], bufs.m_inv_jt[i], bufs.blocks[i], bufs.bias[i], bufs.mu[i],
                      bufs.prev_keys[i], bufs.prev_impulses[i], bufs.counts[i], bufs.stats[i],
                      bufs.cache_env_edges[i], bufs.cache_tool_edges[i], bufs.cache_pairs[i],
                      bufs.pair_gaps[i], bufs.pair_motion[i])
        before = state.copy()
        advance(geo, body, ctrl, settings, buf, state, readings[i], applied[i])
        failed[i] = buf.stats[STAT_NONFINITE] != 0.0
        if failed[i]:
            state[:] = before
            buf.counts[:] = 0
        pos, quat, lin_vel, ang_vel = body_state(state, body.com_local)
        origin[i] = np.concatenate((pos, quat, lin_vel, ang_vel))  # BodyState.as_array order


# Cached on disk like the kernels it calls; numba keys that cache on this file alone, so after editing a
# ``_kernels_*`` module delete ``src/contactkit/engine/__pycache__/*.nbi`` and ``*.nbc`` (as
# contactkit.engine._kernels_step says). ``nogil``: threads step disjoint slices of the batch at once.
_advance_batch = njit(cache=True, nogil=True)(_advance_batch_py)


class EngineContactModel:
    """The contactkit engine stepping a batch of tool states; noise-free F/T (``params``' bias and noise
    are not added).

    Args:
        scene: static description.
        params: shared physics parameters (control period, scales, damping, armature, gravity).
        action_mode: how actions are read (``POSE_DELTA`` or ``POSE_TARGET`` through the impedance controller, or
            ``WRENCH``).
        engine: engine-only settings.
        n_threads: threads that step slices of the batch at once (0 or 1: the calling thread alone).

    Attributes:
        history: states read per step (1: the engine is Markov in the tool state).
        control_dt: duration of one step [s].
        failures: elements whose step left the finite numbers since construction (their state was kept).
    """

    history = 1

    def __init__(self, scene: Scene, params: WorldParams | None = None,
                 action_mode: ActionMode = ActionMode.POSE_DELTA, engine: EngineParams | None = None,
                 n_threads: int = 0):
        params = params or WorldParams()
        ideal = dataclasses.replace(params, ft_noise_std=(0.0,) * 6, ft_bias=(0.0,) * 6)
        self.world = EngineWorld(scene, ideal, engine=engine)
        self.scene, self.params = scene, params
        self.action_mode = ActionMode(action_mode)
        self.control_dt = params.control_dt
        if not (isinstance(n_threads, int) and n_threads >= 0):
            raise InvalidInputError(f"n_threads must be an integer >= 0, got {n_threads!r}")
        self.n_threads = n_threads
        self._pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
        self.failures = 0
        self._bufs: _BatchBuffers | None = None
        self._kernel = np.zeros((0, STATE_SIZE))
        self._returned = np.zeros((0, STATE_DIM))

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`).

        Args:
            history: ``(*B, H)`` states, world frame; the last of the window is stepped.
            action: ``(*B, 6)`` actions in ``action_mode``: pose deltas [m, rad], absolute pose targets of the tool
                centre point [m, rad; world] or world wrenches about the tool origin [N, N·m].

        Returns:
            ``(next_state (*B,), wrench (*B, 6))``: F/T reading in the sensor frame [N, N·m], mean over the
            control period; an element whose step diverged keeps its state and reads NaN.

        Raises:
            InvalidInputError: non-finite or misshaped actions, invalid states, or a state penetrating the
                environment deeper than ``EngineParams.max_initial_penetration``.
        """
        last = BodyState(history.pos[..., -1, :], history.quat[..., -1, :], history.lin_vel[..., -1, :],
                         history.ang_vel[..., -1, :])
        batch = last.batch_shape
        flat = np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1, a.shape[-1]) for a in
                               (last.pos, last.quat, last.lin_vel, last.ang_vel)], axis=-1)
        action = np.asarray(action, dtype=np.float64)
        if action.shape != batch + (6,) or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"actions must be finite with shape {batch + (6,)}, got {np.shape(action)}")
        BodyState.from_array(flat).validated("history")
        kernel = self._kernel_states(flat)
        readings, applied, failed, origin = self._advance(kernel, action.reshape(-1, 6))
        readings[failed] = np.nan
        self.failures += int(failed.sum())
        self._kernel, self._returned = kernel, origin
        return BodyState.from_array(origin.reshape(*batch, STATE_DIM).copy()), readings.reshape(*batch, 6)

    def _advance(self, kernel: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, ...]:
        """Run :func:`_advance_batch` on ``kernel (B, 13)`` in place, split over the threads; returns
        ``(readings (B, 6), applied (B, 6), failed (B,), origin (B, 13))``."""
        b = len(kernel)
        readings, applied = np.zeros((b, 6)), np.zeros((b, 6))
        failed, origin = np.zeros(b, dtype=np.bool_), np.empty((b, STATE_DIM))
        action = np.ascontiguousarray(action)
        w, c = self.world, self.scene.controller
        pose_mode, absolute = self.action_mode in POSE_MODES, self.action_mode is ActionMode.POSE_TARGET

        def run(part: slice) -> None:
            bufs = _BatchBuffers(*(a[part] for a in self._bufs))
            _advance_batch(w.geometry, w.body, w._template, w.settings, bufs, kernel[part], action[part],
                           float(c.max_pos_step), float(c.max_rot_step), pose_mode, absolute, readings[part],
                           applied[part], failed[part], origin[part])

        if self._pool is None or b < 2:
            run(slice(0, b))
        else:
            bounds = np.linspace(0, b, min(self.n_threads, b) + 1).astype(int)
            list(self._pool.map(run, [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]))
        return readings, applied, failed, origin

    def _kernel_states(self, flat: np.ndarray) -> np.ndarray:
        """Kernel states ``(B, 13)`` of origin states ``(B, 13)``: continued where ``flat`` repeats the last
        output bit for bit (warm start kept), else placed by ``EngineWorld.set_state`` (cold start)."""
        size = len(flat)
        if self._bufs is None or self._bufs.counts.shape[0] != size:
            self._bufs = _stacked_buffers(self.world.geometry, self.world.engine.max_contacts, size)
            self._kernel, self._returned = np.zeros((size, STATE_SIZE)), np.full((size, STATE_DIM), np.nan)
        kernel = self._kernel.copy()
        fresh = np.flatnonzero(np.any(flat != self._returned, axis=-1))
        if fresh.size:
            rows, inverse = np.unique(flat[fresh], axis=0, return_inverse=True)
            placed = np.empty((len(rows), STATE_SIZE))
            for j, row in enumerate(rows):
                self.world.set_state(BodyState.from_array(row))
                placed[j] = self.world._state
            kernel[fresh] = placed[inverse.reshape(-1)]
            self._bufs.counts[fresh] = 0
        return kernel
