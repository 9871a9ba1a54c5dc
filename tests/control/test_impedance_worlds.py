"""The controller of a real cell in both worlds (issue 31 part 3): the TCP offset obeys the law's statics, damping
values reproduce the ratio, absolute pose targets step as the deltas they equal, limits are reported when they bind."""

import dataclasses

import numpy as np
import pytest

from contactkit.control.clipping import CommandsClipped
from contactkit.control.impedance import damping_gains, tcp_position
from contactkit.data.collect import run_episode
from contactkit.engine.model import EngineContactModel
from contactkit.engine.world import EngineWorld
from contactkit.gains import ImpedanceGains
from contactkit.model import ActionMode
from contactkit.mujoco import MujocoWorld
from contactkit.mujoco.model import MujocoContactModel
from contactkit.physics import WorldParams
from contactkit.rotations import cross, quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

WORLDS = {"mujoco": MujocoWorld, "engine": EngineWorld}
MODELS = {"mujoco": MujocoContactModel, "engine": EngineContactModel}
TCP = np.array([0.04, 0.0, 0.0])
"""A TCP 4 cm to the side of the peg's axis: the weight at the centre of mass turns the tool about it."""
G = 9.81
SAG_TOL_M = 1e-6
"""Equilibrium TCP position against ``F / K`` (a 7.4 mm sag) after 4 s of a critically damped settle."""
WRENCH_TOL = 1e-4
"""Equilibrium applied wrench against the weight it holds [N, N·m]."""


def _scene(**gains):
    return peg_in_hole("hexagon", 1e-3, start_height=0.06, controller=ImpedanceGains(**gains))


def _target_of(state, gains):
    """The POSE_TARGET command that holds a tool at ``state``: its TCP position and orientation's rotation vector."""
    return np.concatenate([tcp_position(state.pos, state.quat, gains), quat_to_rotvec(state.quat)])


@pytest.mark.parametrize("backend", list(WORLDS))
def test_a_tcp_spring_holds_the_weight_with_the_tcp_displaced_by_f_over_k(backend):
    """Gravity uncompensated pushes the tool by F = m g at its centre of mass; in equilibrium the spring at the TCP
    carries F, so the TCP sits F / K below its target (exactly, whatever the tool's turn), the tool turns about the
    TCP (so its origin moves otherwise), and the applied wrench about the origin balances the weight."""
    scene = _scene(tcp_offset=TCP, gravity_compensation=False)
    gains, tool = scene.controller, scene.tool
    world = WORLDS[backend](scene, WorldParams())
    start = world.reset()
    hold = _target_of(start, gains)
    for _ in range(80):
        result = world.step(hold, ActionMode.POSE_TARGET)
    s = result.state
    sag = tcp_position(s.pos, s.quat, gains) - hold[:3]
    assert np.allclose(sag, [0.0, 0.0, -tool.mass * G / gains.stiffness_pos[2]], atol=SAG_TOL_M)
    assert np.linalg.norm(quat_to_rotvec(quat_mul(s.quat, quat_conj(start.quat)))) > 0.01  # it turned about the TCP
    weight = np.array([0.0, 0.0, -tool.mass * G])
    lever = quat_to_mat(s.quat) @ tool.com
    assert np.allclose(result.applied[:3], -weight, atol=WRENCH_TOL)
    assert np.allclose(result.applied[3:], -cross(lever, weight), atol=WRENCH_TOL)
    assert result.clipped == frozenset()


@pytest.mark.parametrize("backend", list(WORLDS))
def test_damping_values_equal_to_the_ratios_reproduce_it_bit_for_bit(backend):
    ratio = _scene(damping_ratio=0.6)
    d_pos, d_rot = damping_gains(ratio.controller, ratio.tool.mass, np.linalg.eigvalsh(ratio.tool.inertia))
    values = dataclasses.replace(ratio, controller=ImpedanceGains(damping_pos=d_pos, damping_rot=d_rot))
    runs = []
    for scene in (ratio, values):
        world = WORLDS[backend](scene, WorldParams())
        world.reset()
        runs.append([world.step(np.array([0.004, -0.002, -0.01, 0.0, 0.05, 0.0]), ActionMode.POSE_DELTA)
                     for _ in range(5)])
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a.state.as_array(), b.state.as_array()) and np.array_equal(a.applied, b.applied)


@pytest.mark.parametrize("backend", list(WORLDS))
def test_an_absolute_target_steps_as_the_delta_it_equals(backend):
    scene = _scene(tcp_offset=TCP)
    gains = scene.controller
    delta = np.array([0.004, -0.002, -0.01, 0.0, 0.05, 0.0])
    worlds = [WORLDS[backend](scene, WorldParams()) for _ in range(2)]
    s = worlds[0].reset()
    worlds[1].reset()
    goal = np.concatenate([tcp_position(s.pos, s.quat, gains) + delta[:3],
                           quat_to_rotvec(quat_mul(rotvec_to_quat(delta[3:]), s.quat))])
    by_delta = worlds[0].step(delta, ActionMode.POSE_DELTA)
    by_target = worlds[1].step(goal, ActionMode.POSE_TARGET)
    assert np.allclose(by_delta.state.as_array(), by_target.state.as_array(), atol=1e-12)


@pytest.mark.parametrize("backend", list(WORLDS))
def test_the_batched_model_replays_absolute_targets_as_the_world_does(backend):
    scene = _scene(tcp_offset=TCP)
    world = WORLDS[backend](scene, WorldParams())
    model = MODELS[backend](scene, WorldParams(), ActionMode.POSE_TARGET)
    s = world.reset()
    goal = _target_of(s, scene.controller) + [0.003, 0.0, -0.004, 0.0, 0.0, 0.0]
    want = world.step(goal, ActionMode.POSE_TARGET).state
    got, _ = model.step(BodyState.from_array(s.as_array()[None, None]), goal[None])
    assert np.allclose(got.as_array()[0], want.as_array(), atol=1e-9)


@pytest.mark.parametrize("backend", list(WORLDS))
def test_limits_that_bind_are_reported_never_silent(backend):
    scene = _scene(max_force=2.0)
    world = WORLDS[backend](scene, WorldParams())
    world.reset()
    assert world.step(np.zeros(6), ActionMode.POSE_DELTA).clipped == frozenset()
    far = world.step(np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.4]), ActionMode.POSE_DELTA)
    assert {"max_pos_step", "max_rot_step", "max_force"} <= far.clipped


class _Jump:
    """Every other step asks for 5 cm (beyond max_pos_step 3 cm)."""

    mode = ActionMode.POSE_DELTA

    def reset(self, scene, state, rng):
        pass

    def act(self, t, state, reading):
        return np.array([0.0, 0.0, 0.05 if t % 2 else 0.0, 0.0, 0.0, 0.0])


def test_an_episode_warns_with_the_fraction_of_clipped_commands():
    scene = _scene()
    world = MujocoWorld(scene, WorldParams())
    with pytest.warns(CommandsClipped, match=r"max_pos_step in 2 of 4 \(50.0 %\)"):
        run_episode(world, _Jump(), 4, world.reset(), np.random.default_rng(0), seed=0)
