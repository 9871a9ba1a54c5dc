"""Offline per-episode tare (:func:`contactkit.control.tare.episode_offsets`): median of free steps, fallback."""

import numpy as np
import pytest

from contactkit.control.tare import MIN_FREE_SPACE_STEPS, episode_offsets
from contactkit.errors import InvalidInputError


def _episode(rng, bias, n_free, n_contact):
    free = rng.normal(0.0, 0.01, (n_free, 6)) + bias
    contact = rng.normal(0.0, 0.01, (n_contact, 6)) + bias + np.array([0, 0, 5.0, 0, 0, 0.1])
    return np.concatenate([free, contact]), np.r_[np.ones(n_free, bool), np.zeros(n_contact, bool)]


def test_own_offsets_are_the_free_median_and_the_rest_fall_back():
    rng = np.random.default_rng(0)
    biases = [np.array([0.2, -0.1, 0.27, 0.01, 0.0, -0.02]), np.array([0.3, 0.0, 0.2, 0.0, 0.02, 0.0]),
              np.array([9.0] * 6)]
    parts = [_episode(rng, biases[0], 20, 30), _episode(rng, biases[1], 15, 10),
             _episode(rng, biases[2], MIN_FREE_SPACE_STEPS - 1, 10)]
    readings = np.concatenate([p[0] for p in parts])
    free = np.concatenate([p[1] for p in parts])
    episode = np.concatenate([np.full(len(p[0]), e) for e, p in enumerate(parts)])
    offsets, own = episode_offsets(readings, episode, free, 3)
    assert own.tolist() == [True, True, False]
    for e in (0, 1):
        np.testing.assert_array_equal(offsets[e], np.median(readings[free & (episode == e)], axis=0))
        np.testing.assert_allclose(offsets[e], biases[e], atol=0.01)
    np.testing.assert_array_equal(offsets[2], np.median(offsets[:2], axis=0))


def test_no_episode_with_enough_free_steps_gives_zeros():
    offsets, own = episode_offsets(np.ones((4, 6)), np.array([0, 0, 1, 1]), np.ones(4, bool), 2)
    np.testing.assert_array_equal(offsets, np.zeros((2, 6)))
    assert not own.any()


def test_mismatched_shapes_are_refused():
    with pytest.raises(InvalidInputError, match="must match"):
        episode_offsets(np.ones((4, 6)), np.zeros(3, int), np.ones(4, bool), 1)
    with pytest.raises(InvalidInputError, match="episode indices"):
        episode_offsets(np.ones((2, 6)), np.array([0, 2]), np.ones(2, bool), 2)
