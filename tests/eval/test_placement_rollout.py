"""A placement traced for rendering: one state per control step plus the start, one F/T reading per step, the same
episode from the same generator, the scene holding the true geometry."""

from __future__ import annotations

import numpy as np

from contactkit.eval.placement_rollout import traced_placement
from contactkit.tasks.placement import make_task, sample_cases

STEPS = 3


def test_a_traced_placement_is_an_episode_of_its_steps_and_repeats_from_its_generator():
    theta = sample_cases(make_task("env"), 1, np.random.default_rng(0))[0]
    scene, episode = traced_placement("env", theta, np.random.default_rng([0, 21]), steps=STEPS)
    assert episode.pos.shape == (STEPS + 1, 3) and episode.wrench.shape == (STEPS, 6)
    assert np.all(np.diff(episode.time) > 0) and np.all(np.isfinite(episode.wrench))
    np.testing.assert_allclose(episode.pos[0], scene.tool.init_pos, atol=1e-9)
    _, again = traced_placement("env", theta, np.random.default_rng([0, 21]), steps=STEPS)
    np.testing.assert_array_equal(again.pos, episode.pos)
    np.testing.assert_array_equal(again.wrench, episode.wrench)
