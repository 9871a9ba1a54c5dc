"""Log-weight normalisation, effective sample size and systematic resampling."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.estimation import effective_sample_size, normalize_log_weights, systematic_resample

COUNT_EPS = 1e-9
"""Round-off slack when comparing integer copy counts with N·w_i (cumulative sums are inexact)."""

OFFSET_REL_TOL = 1e-9
"""Log-weights of magnitude 10⁶ carry an absolute round-off of one ulp, 1.2e-10; after exp() that is a
relative error of the same size in a weight."""

UNBIASED_DRAWS = 4000
UNBIASED_TOL = 5.0 * 0.5 / np.sqrt(UNBIASED_DRAWS)
"""A systematic copy count takes the values ⌊N w⌋ or ⌈N w⌉, so its std is ≤ 0.5; the mean over 4000
draws has standard error ≤ 0.008 and we allow 5 of them."""


def _random_log_weights(rng, n):
    """Uneven log-weights (some may be −inf), shifted by an arbitrary constant (they need not sum to 1)."""
    with np.errstate(divide="ignore"):
        return np.log(rng.dirichlet(np.full(n, 0.3))) + rng.normal(0.0, 50.0)


def test_copy_counts_lie_between_floor_and_ceil_of_expected():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        log_weights = _random_log_weights(rng, n)
        expected = n * np.exp(normalize_log_weights(log_weights))
        counts = np.bincount(systematic_resample(log_weights, rng), minlength=n)
        assert counts.sum() == n
        assert np.all(counts >= np.floor(expected - COUNT_EPS))
        assert np.all(counts <= np.ceil(expected + COUNT_EPS))


def test_resampling_is_unbiased():
    rng = np.random.default_rng(1)
    n = 25
    log_weights = _random_log_weights(rng, n)
    expected = n * np.exp(normalize_log_weights(log_weights))
    mean_counts = np.zeros(n)
    for _ in range(UNBIASED_DRAWS):
        mean_counts += np.bincount(systematic_resample(log_weights, rng), minlength=n) / UNBIASED_DRAWS
    np.testing.assert_allclose(mean_counts, expected, atol=UNBIASED_TOL)


def test_zero_weight_particles_are_never_copied_and_uniform_weights_keep_everyone():
    rng = np.random.default_rng(2)
    log_weights = np.array([-np.inf, 0.0, -np.inf, -1.0, -np.inf])
    for _ in range(100):
        indices = systematic_resample(log_weights, rng)
        assert set(indices.tolist()) <= {1, 3}
        assert np.all(np.diff(indices) >= 0) and indices.dtype == np.int64
    np.testing.assert_array_equal(systematic_resample(np.zeros(7), rng), np.arange(7))


def test_same_seed_gives_same_indices():
    log_weights = _random_log_weights(np.random.default_rng(3), 40)
    a = systematic_resample(log_weights, np.random.default_rng(9))
    b = systematic_resample(log_weights, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


def test_effective_sample_size_limits_and_offset_invariance():
    assert effective_sample_size(np.zeros(30)) == pytest.approx(30.0)
    assert effective_sample_size(np.array([0.0, -np.inf, -np.inf])) == pytest.approx(1.0)
    lw = _random_log_weights(np.random.default_rng(4), 20)
    assert effective_sample_size(lw) == pytest.approx(effective_sample_size(lw + 1e4), rel=OFFSET_REL_TOL)
    w = np.exp(normalize_log_weights(lw))
    assert effective_sample_size(lw) == pytest.approx(1.0 / np.sum(w**2), rel=1e-12)


def test_normalisation_survives_far_tails():
    """Log-weights near −10⁶ exponentiate to exact zeros; log-sum-exp still normalises them."""
    lw = np.array([-1e6, -1e6 - 1.0, -1e6 - 2.0])
    assert np.sum(np.exp(lw)) == 0.0
    w = np.exp(normalize_log_weights(lw))
    np.testing.assert_allclose(
        w, np.exp([0.0, -1.0, -2.0]) / np.sum(np.exp([0.0, -1.0, -2.0])), rtol=OFFSET_REL_TOL
    )


@pytest.mark.parametrize(
    "bad",
    [np.full(3, -np.inf), np.array([0.0, np.nan]), np.array([0.0, np.inf]), np.zeros((2, 2)), np.zeros(0)],
)
def test_bad_log_weights_are_refused(bad):
    with pytest.raises(InvalidInputError):
        normalize_log_weights(bad)
    with pytest.raises(InvalidInputError):
        systematic_resample(bad, np.random.default_rng(0))
