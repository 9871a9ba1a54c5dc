"""Colored noise: exact unit variance, power-law spectrum, boundary handling, determinism, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.control.colored_noise import NoiseBoundary, colored_noise
from contactkit.errors import InvalidInputError

SLOPE_TOL = 0.03
"""Log-PSD slope tolerance. The log of a bin averaged over 32 periodograms has variance ≈ 1/32; a
least-squares slope over 2047 bins with var(log f) ≈ 1 then has standard error ≈ 0.004, so 0.03 is
about 7 standard errors while any wrong exponent scaling (e.g. f^-β instead of f^-β/2) misses by ≥ β/2."""

MOMENT_SAMPLES = 20_000
MOMENT_TOL = 0.05
"""Variance tolerance at 20 000 samples: the standard error of a unit variance is √(2/M) = 0.01 (5σ)."""

CORRELATION_TOL = 0.05
"""A mean of products x_0 x_k of unit-variance Gaussians has variance (1 + ρ²)/M ≤ 2/M: standard error
≤ 0.01 at 20 000 samples, so 0.05 is 5σ."""


def _autocorrelation(beta: float, n: int, lags: np.ndarray) -> np.ndarray:
    """Autocorrelation of the periodic length-n power-law process, from its PSD (Wiener–Khinchin).

    Every bin k of the full FFT has expected power ∝ max(|f_k|, 1/n)^-β; the autocovariance is the inverse
    FFT of the power spectrum.
    """
    f = np.abs(np.fft.fftfreq(n))
    power = np.maximum(f, 1.0 / n) ** (-beta)
    acov = np.fft.ifft(power).real
    return acov[lags] / acov[0]


@pytest.mark.parametrize("boundary", list(NoiseBoundary))
@pytest.mark.parametrize("n_steps", [31, 32])
@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0, 3.0])
def test_unit_variance_and_zero_mean_at_every_step(beta, n_steps, boundary):
    x = colored_noise(beta, (MOMENT_SAMPLES, n_steps), np.random.default_rng(0), boundary=boundary)
    assert x.shape == (MOMENT_SAMPLES, n_steps)
    np.testing.assert_allclose(x.var(axis=0), 1.0, atol=MOMENT_TOL)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=5.0 / np.sqrt(MOMENT_SAMPLES))


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0, 3.0])
def test_periodic_spectrum_has_requested_log_slope(beta):
    n = 4096
    x = colored_noise(beta, (32, n), np.random.default_rng(1))
    periodogram = np.mean(np.abs(np.fft.rfft(x, axis=-1)) ** 2, axis=0)
    f = np.fft.rfftfreq(n)
    bins = slice(1, n // 2)  # exclude DC (cut off at fmin) and the Nyquist bin
    slope = np.polyfit(np.log(f[bins]), np.log(periodogram[bins]), 1)[0]
    assert abs(slope + beta) < SLOPE_TOL, f"log-PSD slope {slope:.4f}, expected {-beta}"


@pytest.mark.parametrize("beta", [1.0, 2.0])
def test_time_correlation_matches_power_law_autocovariance(beta):
    n = 30
    lags = np.arange(n)
    periodic = colored_noise(beta, (MOMENT_SAMPLES, n), np.random.default_rng(2))
    cropped = colored_noise(
        beta, (MOMENT_SAMPLES, n), np.random.default_rng(3), boundary=NoiseBoundary.CROPPED
    )
    for x, expected in (
        (periodic, _autocorrelation(beta, n, lags)),
        (cropped, _autocorrelation(beta, 2 * n, lags)),
    ):
        measured = np.array([np.mean(x[:, 0] * x[:, lag]) for lag in lags])
        np.testing.assert_allclose(measured, expected, atol=CORRELATION_TOL)


def test_cropping_removes_wrap_around_correlation():
    """Periodic noise ties the last step to the first as tightly as to its neighbour; cropped does not."""
    n, beta = 30, 2.0
    periodic = colored_noise(beta, (MOMENT_SAMPLES, n), np.random.default_rng(4))
    cropped = colored_noise(
        beta, (MOMENT_SAMPLES, n), np.random.default_rng(4), boundary=NoiseBoundary.CROPPED
    )
    first_last_periodic = np.corrcoef(periodic[:, 0], periodic[:, -1])[0, 1]
    first_last_cropped = np.corrcoef(cropped[:, 0], cropped[:, -1])[0, 1]
    neighbours = np.corrcoef(periodic[:, 0], periodic[:, 1])[0, 1]
    assert first_last_periodic > 0.8
    assert first_last_periodic == pytest.approx(neighbours, abs=CORRELATION_TOL)
    expected_cropped = _autocorrelation(beta, 2 * n, np.array([n - 1]))[0]
    assert abs(expected_cropped) < 0.2
    assert first_last_cropped == pytest.approx(expected_cropped, abs=CORRELATION_TOL)


def test_time_axis_and_determinism():
    a = colored_noise(2.0, (5, 8, 3), np.random.default_rng(7), time_axis=1)
    b = colored_noise(2.0, (5, 3, 8), np.random.default_rng(7), time_axis=-1)
    np.testing.assert_array_equal(a, np.swapaxes(b, 1, 2))
    np.testing.assert_array_equal(a, colored_noise(2.0, (5, 8, 3), np.random.default_rng(7), time_axis=1))
    assert not np.array_equal(a, colored_noise(2.0, (5, 8, 3), np.random.default_rng(8), time_axis=1))


def test_single_step_is_standard_normal():
    x = colored_noise(2.0, (MOMENT_SAMPLES, 1), np.random.default_rng(5))
    assert x.var() == pytest.approx(1.0, abs=MOMENT_TOL)


@pytest.mark.parametrize(
    ("beta", "shape", "kwargs"),
    [
        (-1.0, (4, 8), {}),
        (float("nan"), (4, 8), {}),
        (1.0, (4, 0), {}),
        (1.0, (), {}),
        (1.0, (4, 8), {"time_axis": 2}),
        (1.0, (4, 8), {"fmin": 0.0}),
        (1.0, (4, 8), {"fmin": 0.7}),
    ],
)
def test_bad_input_is_refused(beta, shape, kwargs):
    with pytest.raises(InvalidInputError):
        colored_noise(beta, shape, np.random.default_rng(0), **kwargs)
