"""Free-space tare: estimates against known offset and noise, the false-alarm rate of the noise-relative contact
threshold, bad input, and the spiral policy on a biased sensor (the fixed 1 N threshold fires in the air)."""

from dataclasses import replace

import numpy as np
import pytest

from contactkit.control.policies import CONTACT_FORCE_N, SpiralConfig, SpiralPolicy
from contactkit.control.tare import (
    CONTACT_FALSE_ALARM,
    MIN_CONTACT_FORCE_N,
    Tare,
    TaredWorld,
    TareMode,
    estimate_tare,
    hold_command,
    parse_tare_mode,
    tare_world,
)
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.tasks.scenes import peg_in_hole

BIAS = np.array([2.5, -1.5, 2.0, 0.04, -0.03, 0.02])
NOISE = np.array([0.25, 0.25, 0.3, 0.006, 0.006, 0.004])


def test_estimate_recovers_offset_and_noise():
    rng = np.random.default_rng(0)
    readings = BIAS + NOISE * rng.standard_normal((400, 6))
    tare = estimate_tare(readings)
    assert np.all(np.abs(tare.bias - BIAS) < 5 * NOISE / np.sqrt(400))
    assert np.allclose(tare.noise_std, NOISE, rtol=0.2)
    assert np.allclose(tare.apply(readings).mean(axis=0), 0.0, atol=1e-12)


def test_false_alarm_rate_of_the_threshold():
    """Isotropic force noise of std σ: |f|²/σ² is χ²₃, so free-space readings exceed the threshold at the rate
    CONTACT_FALSE_ALARM (binomial bound at 4 standard deviations)."""
    rng = np.random.default_rng(1)
    sigma = np.array([0.3, 0.3, 0.3, 0.01, 0.01, 0.01])
    tare = Tare(bias=BIAS, noise_std=sigma, samples=10**6)
    n = 400_000
    alarms = int(np.sum(tare.in_contact(BIAS + sigma * rng.standard_normal((n, 6)))))
    expected = CONTACT_FALSE_ALARM * n
    assert abs(alarms - expected) < 4 * np.sqrt(expected) + 1
    assert not tare.in_contact(BIAS)
    assert tare.in_contact(BIAS + np.array([0, 0, 1.1 * tare.contact_threshold(), 0, 0, 0]))


def test_noise_free_sensor_uses_the_floor():
    tare = estimate_tare(np.tile(BIAS, (5, 1)))
    assert tare.contact_threshold() == MIN_CONTACT_FORCE_N


@pytest.mark.parametrize("readings, words", [
    (np.zeros((2, 6)), "at least"),
    (np.zeros((10, 5)), "shape"),
    (np.full((10, 6), np.nan), "NaN"),
])
def test_bad_readings_are_refused(readings, words):
    with pytest.raises(InvalidInputError, match=words):
        estimate_tare(readings)


def _first_contact(mode: TareMode, seed: int = 0) -> tuple[SpiralPolicy, int, float]:
    """Run the spiral on a sensor with a 3.6 N offset; return the policy, the step contact was declared and the
    tool's height above the slot's top surface then [m]."""
    scene = peg_in_hole("hexagon", 1e-3)
    params = replace(load_world("nominal"), ft_bias=tuple(BIAS), ft_noise_std=tuple(NOISE))
    rng = np.random.default_rng(seed)
    world = MujocoWorld(scene, params, rng=rng)
    state = world.reset()
    policy = SpiralPolicy(SpiralConfig(tare=mode))
    policy.reset(scene, state, rng)
    wrench = np.zeros(6)
    z0 = float(state.pos[2])
    for t in range(60):
        action = policy.act(t, state, wrench)
        if policy.search_start is not None:
            return policy, t, z0 - float(state.pos[2])
        result = world.step(action, ActionMode.POSE_DELTA)
        state, wrench = result.state, result.wrench
    raise AssertionError("no contact declared in 60 steps")


def test_spiral_with_tare_waits_for_the_surface():
    """The peg starts 10 mm above the slot (scene start_height), aligned with it: with the raw 3.6 N offset the
    fixed threshold calls contact in the air, less than half-way down; after a tare, contact is called only once
    the tool has descended past the surface (here: into the hole, to its floor)."""
    assert np.linalg.norm(BIAS[:3]) > CONTACT_FORCE_N
    _, _, fallen_raw = _first_contact(TareMode.NONE)
    policy, t, fallen = _first_contact(TareMode.FREE_SPACE)
    assert fallen_raw < 5e-3
    assert fallen > 10e-3
    assert t > policy.config.tare_steps
    assert np.all(np.abs(policy.tare.bias - BIAS) < 5 * NOISE)


def test_tared_world_reads_zero_in_free_space():
    """tare_world holds the tool still: its position does not drift, and the wrapped world's free-space
    readings then average to zero within the noise (the offset is gone)."""
    scene = peg_in_hole("hexagon", 1e-3)
    params = replace(load_world("nominal"), ft_bias=tuple(BIAS), ft_noise_std=tuple(NOISE))
    world = MujocoWorld(scene, params, rng=np.random.default_rng(3))
    start = world.reset().pos.copy()
    tare = tare_world(world, 20)
    tared = TaredWorld(world, tare)
    results = [tared.step(np.zeros(6), ActionMode.POSE_DELTA) for _ in range(40)]
    readings = np.stack([r.wrench for r in results])
    assert np.all(np.abs(readings.mean(axis=0)) < 5 * NOISE / np.sqrt(20) + 5 * NOISE / np.sqrt(40))
    assert np.linalg.norm(results[-1].state.pos - start) < 5e-4
    assert tared.scene is world.scene
    with pytest.raises(InvalidInputError, match="still steps"):
        tare_world(world, 1)


def test_tare_mode_names():
    assert parse_tare_mode(None) is TareMode.NONE
    assert parse_tare_mode("free-space") is TareMode.FREE_SPACE
    with pytest.raises(InvalidInputError, match="free-space"):
        parse_tare_mode("zero")


def _still_window_drift(hold: bool) -> float:
    """Height lost [m] over a 10-step still window in a world whose tool is 8 % heavier than the controller's
    gravity compensation assumes (``target-parametric``), commanding either the held pose or zero deltas."""
    scene = peg_in_hole("hexagon", 1e-3)
    world = MujocoWorld(scene, load_world("target-parametric"), rng=np.random.default_rng(0))
    start = world.reset()
    state = world.step(np.zeros(6), ActionMode.POSE_DELTA).state
    for _ in range(10):
        command = hold_command(state, start) if hold else np.zeros(6)
        state = world.step(command, ActionMode.POSE_DELTA).state
    return float(start.pos[2] - state.pos[2])


def test_the_still_window_holds_a_pose_instead_of_creeping():
    """A zero pose delta re-targets the controller where the tool sagged to, so an uncompensated weight makes it
    creep every step; holding the start pose leaves only the steady sag, which does not grow."""
    assert _still_window_drift(hold=False) > 2e-3
    assert _still_window_drift(hold=True) < 1e-3
    scene = peg_in_hole("hexagon", 1e-3)
    world = MujocoWorld(scene, load_world("target-parametric"), rng=np.random.default_rng(0))
    start = world.reset()
    tare_world(world, 10)  # holds the pose too
    assert start.pos[2] - world.state().pos[2] < 1e-3
