"""The environment's own MuJoCo world as a planning model: ground truth for a world with hidden state.

A real-cell world (``target``: command latency, flange–tool compliance, sensor filter; docs/worlds.md) has state
beyond the tool's :class:`~contactkit.state.BodyState`, so :class:`~contactkit.mujoco.model.MujocoContactModel`
refuses it. The Act-FIGNet paper's ground-truth row plans with the simulator that acts as reality (§IV-A); here
that is :class:`WorldOracle`: it :meth:`~WorldOracle.follow`\\ s the environment's :class:`MujocoWorld`, starts
every rollout from a copy of that world's whole state (:meth:`MujocoWorld.snapshot`), and carries each batch
element's hidden state from one step of the rollout to the next. It is privileged: it reads the world, not only
the observation. Its F/T readings are noise- and bias-free (as :class:`MujocoContactModel`'s), the filter kept.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import NamedTuple

import mujoco
import numpy as np
from mujoco import rollout

from contactkit.collision.tunnelling import find_tunnel
from contactkit.collision.workspace import leaves_workspace
from contactkit.errors import InvalidInputError, SimulationDiverged, ToolTunnelled
from contactkit.model import ActionMode
from contactkit.mujoco.diverged import captured_warnings, clear_warnings, divergence
from contactkit.mujoco.realcell import Issued
from contactkit.mujoco.world import BACKUP_SPEC, CONTROL_SPEC, STATE_SPEC, MujocoWorld, WorldSnapshot
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = ["FRESH_STATE_TOL", "HiddenStart", "WorldOracle"]

FRESH_STATE_TOL = 1e-9
"""Largest difference [m, m/s, rad/s, quaternion units] between a rollout's start state and the followed world's
state for the rollout to start from that world: an observation is the state in float64 with its quaternion
renormalised (:func:`contactkit.tasks.peg_env.split_observation`), ~1e-16 away."""


class HiddenStart(str, Enum):
    """Where a rollout from a state that is neither the followed world's nor the model's own last output starts."""

    REFUSE = "refuse"
    """Refuse it (the oracle: the hidden state of an arbitrary state is unknown)."""
    AT_REST = "at-rest"
    """As :meth:`MujocoWorld.set_state` leaves a world: compliance undeflected, the latency's queue holding the
    pose, the sensor filter at zero (a model of a real cell replaying a log from recorded states, e.g. a world
    calibrated with those fields: the first step's reading and motion then miss what the cell carried over)."""


def _planning_params(params: WorldParams) -> WorldParams:
    """``params`` without F/T bias and noise (a planning model's readings are clean and untared)."""
    return dataclasses.replace(params, ft_bias=(0.0,) * 6, ft_noise_std=(0.0,) * 6)


class _Prepared(NamedTuple):
    """One element's step before its sub-steps run: its hidden state, the command as issued, the latency's
    segments, the FULLPHYSICS start state, warm start ``(nv,)``, per-sub-step controls ``(n, ncontrol)``, the tool
    state ``(13,)`` the reading's first sub-step starts from and the tool pose before the step (tunnel check)."""

    start: WorldSnapshot
    issued: Issued
    segments: list
    init: np.ndarray
    warm: np.ndarray
    control: np.ndarray
    start13: np.ndarray
    pos0: np.ndarray
    rot0: np.ndarray


class WorldOracle:
    """MuJoCo with every hidden state of ``params``'s world, stepping a batch from a followed world.

    Args:
        scene: static description (the followed world's).
        params: the followed world's physics (bias and noise are dropped).
        action_mode: how actions are read.
        n_threads: MuJoCo rollout threads (0: run in the calling thread); the result does not depend on it (each
            element starts from its own warm start).
        unknown: what a start state of unknown hidden state gets (:class:`HiddenStart`; default refused).

    A :meth:`step` whose start states all equal the followed world's current state starts each element from that
    world's snapshot; one whose start states are exactly this oracle's last outputs continues those elements;
    anything else is refused, or with ``unknown=AT_REST`` started at rest.
    """

    history = 1

    def __init__(self, scene: Scene, params: WorldParams, action_mode: ActionMode = ActionMode.POSE_DELTA,
                 n_threads: int = 0, unknown: HiddenStart = HiddenStart.REFUSE):
        self.scene, self.params = scene, _planning_params(params)
        self.unknown = HiddenStart(unknown)
        self.world = MujocoWorld(scene, self.params)
        self._rollout_pool = rollout.Rollout(nthread=n_threads)
        self._datas = [mujoco.MjData(self.world.model) for _ in range(max(1, n_threads))]  # the world's holds one
        self.action_mode = ActionMode(action_mode)
        self.control_dt = self.params.control_dt
        self.source: MujocoWorld | None = None
        self._returned = np.empty((0, 13))
        self._hidden: list[WorldSnapshot] = []

    def follow(self, world: MujocoWorld) -> None:
        """Plan from ``world`` (the environment's) from now on.

        Raises:
            InvalidInputError: a world of another scene or physics than this oracle's (bias and noise aside).
        """
        if world.scene is not self.scene and world.scene.to_json() != self.scene.to_json():
            raise InvalidInputError("WorldOracle.follow: the world simulates another scene than the oracle's")
        if _planning_params(world.params) != self.params:
            raise InvalidInputError("WorldOracle.follow: the world's physics differ from the oracle's (beyond F/T "
                                    "bias and noise); build the oracle with the world's params")
        self.source = world

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """One control step for every batch element (see :class:`~contactkit.model.ContactModel`): each element's
        inputs are prepared as :meth:`MujocoWorld.step` would from its hidden state, all sub-steps run in one
        ``mujoco.rollout`` call, then each element is checked and its reading summarised as the world's step does.

        Args:
            history: ``(*B, H)`` states (world frame); only the last is read.
            action: ``(*B, 6)`` commands in :attr:`action_mode`.

        Returns:
            ``(next_state (*B,), wrench (*B, 6))``: world frame; sensor frame, clean [m, rad, N, N·m].

        Raises:
            InvalidInputError: no followed world, bad actions, or start states that are neither the followed
                world's state nor this oracle's last outputs.
            SimulationDiverged, ToolTunnelled: an element's step failed as the world's would (the first one's).
        """
        state, wrench, _ = self._step(history, action, raise_first=True)
        return state, wrench

    def step_with_status(self, history: BodyState,
                         action: np.ndarray) -> tuple[BodyState, np.ndarray, np.ndarray]:
        """:meth:`step` that flags the elements whose step failed instead of raising (see
        :class:`~contactkit.model.ContactModel`): ``(next_state (*B,), wrench (*B, 6), diverged (*B,) bool)``; a
        flagged element keeps its input state and hidden state, and reads NaN. MuJoCo's warnings are per rollout
        call, not per element: one flags every element of the call."""
        return self._step(history, action, raise_first=False)

    def _step(self, history: BodyState, action: np.ndarray, raise_first: bool):
        """:meth:`step_with_status`, or with ``raise_first`` the first failed element's error raised."""
        last = np.asarray(history.as_array(), dtype=np.float64)[..., -1, :]
        batch = last.shape[:-1]
        flat = last.reshape(-1, 13)
        action = np.asarray(action, dtype=np.float64).reshape(-1, 6)
        if action.shape[0] != flat.shape[0] or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"actions must be finite with shape {batch + (6,)}, got {np.shape(action)}")
        prepared = [self._prepare(start, a) for start, a in zip(self._starts(flat), action, strict=True)]
        states, sensors, messages = self._rollout(prepared)
        out = [self._finish(p, states[i], sensors[i], messages) for i, p in enumerate(prepared)]
        failed = [o for o in out if isinstance(o, Exception)]
        if failed and raise_first:
            raise failed[0]
        bad = np.array([isinstance(o, Exception) for o in out])
        self._returned = np.stack([flat[i] if bad[i] else o[0] for i, o in enumerate(out)])
        self._hidden = [prepared[i].start if bad[i] else o[2] for i, o in enumerate(out)]
        readings = np.stack([np.full(6, np.nan) if bad[i] else o[1] for i, o in enumerate(out)])
        return (BodyState.from_array(self._returned.reshape(*batch, 13).copy()), readings.reshape(*batch, 6),
                bad.reshape(batch))

    def _prepare(self, start: WorldSnapshot, command: np.ndarray) -> _Prepared:
        """One element's rollout inputs from its hidden state ``start`` and ``(6,)`` ``command``."""
        w = self.world
        m, d = w.model, w.data
        w.restore(start)
        w.limits.check(command, self.action_mode, "WorldOracle.step", w._tcp())
        body = w._body
        pos0, rot0 = d.xpos[body].copy(), d.xmat[body].reshape(3, 3).copy()
        w._set_inputs(command, self.action_mode)
        issued = w._issue()
        segments = w._delay.segments(issued)
        init = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        mujoco.mj_getState(m, d, init, STATE_SPEC)
        control = np.empty((self.params.n_substeps, issued.control.size))
        for first, inputs in segments:
            control[first:] = inputs.control
        return _Prepared(start, issued, segments, init, d.qacc_warmstart.copy(), control,
                         np.concatenate([d.qpos[0:7], d.qvel[0:6]]), pos0, rot0)

    def _rollout(self, prepared: list[_Prepared]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Every element's sub-steps in one call: ``(b, n, nstate)`` states, ``(b, n, nsensordata)`` sensors and
        MuJoCo's warning messages."""
        m = self.world.model
        b, n = len(prepared), self.params.n_substeps
        states = np.empty((b, n, len(prepared[0].init)))
        sensors = np.empty((b, n, m.nsensordata))
        for data in self._datas:
            clear_warnings(data)
        with captured_warnings() as messages:
            self._rollout_pool.rollout([m] * b, self._datas, np.stack([p.init for p in prepared]),
                            np.stack([p.control for p in prepared]), control_spec=int(CONTROL_SPEC), nstep=n,
                            skip_checks=True, initial_warmstart=np.stack([p.warm for p in prepared]),
                            state=states, sensordata=sensors)
        return states, sensors, messages

    def _finish(self, p: _Prepared, states: np.ndarray, sensors: np.ndarray,
                messages: list[str]) -> tuple[np.ndarray, np.ndarray, WorldSnapshot] | Exception:
        """One element after its rollout: the world's checks, its ``(13,)`` state, ``(6,)`` reading and hidden
        state (the warm start kept from before the step: the rollout does not return it), or the error of a
        failed check (returned, not raised)."""
        w = self.world
        m, d = w.model, w.data
        problem = next(filter(None, (divergence(data, states[:, 0], p.init[0], m.opt.timestep, messages)
                                     for data in self._datas)), None)
        error = SimulationDiverged if problem else ToolTunnelled
        if problem is None:
            mujoco.mj_setState(m, d, p.start.physics, BACKUP_SPEC)
            mujoco.mj_setState(m, d, states[-1], STATE_SPEC)
            mujoco.mj_setState(m, d, p.segments[-1][1].control, CONTROL_SPEC)
            mujoco.mj_kinematics(m, d)
            if w._compliant:
                mujoco.mj_comPos(m, d)
                mujoco.mj_comVel(m, d)
            body = w._body
            problem = find_tunnel(w._guard, p.pos0, p.rot0, d.xpos[body], d.xmat[body].reshape(3, 3))
            if problem is None:
                error, problem = SimulationDiverged, leaves_workspace(self.scene, d.xpos[body])
        if problem is not None:
            return error(f"WorldOracle.step: a rollout step {p.start.steps} control steps after the world's reset "
                         f"diverged: {problem}; nothing of this batch is returned")
        w._delay._issued = list(p.start.issued)
        w._delay.commit(p.issued)
        w._filtered[:] = p.start.filtered
        w._start, w.steps = p.start13, p.start.steps + 1
        result = w._summarise(states, sensors, p.segments, self.action_mode)
        return result.state.as_array(), result.wrench, w.snapshot()

    def _at_rest(self, row: np.ndarray) -> WorldSnapshot:
        """The hidden state :meth:`MujocoWorld.set_state` gives the ``(13,)`` state ``row`` (filter at zero)."""
        self.world.reset(BodyState.from_array(row))
        return self.world.snapshot()

    def _starts(self, flat: np.ndarray) -> list[WorldSnapshot]:
        """The snapshot each of the ``(b, 13)`` start states continues from."""
        if self.source is not None and np.all(np.abs(flat - self.source.state().as_array()) <= FRESH_STATE_TOL):
            return [self.source.snapshot()] * len(flat)
        if flat.shape == self._returned.shape and np.array_equal(flat, self._returned):
            return self._hidden
        if self.unknown is HiddenStart.AT_REST:
            return [self._at_rest(row) for row in flat]
        if self.source is None:
            raise InvalidInputError("WorldOracle.step: follow(world) first (the oracle plans from a world's state)")
        raise InvalidInputError("WorldOracle.step: a start state that is neither the followed world's current state "
                                "nor one of the oracle's last outputs (their hidden state is unknown)")
