"""Gaussian noise with a power-law spectrum ("colored noise") for sampling action sequences.

iCEM (Pinneri et al. 2020, "Sample-efficient cross-entropy method for real-time planning", §3.1) samples
action perturbations whose power spectral density falls off as ``PSD(f) ∝ 1 / f^β`` along time: β = 0 is
white noise, β = 1 pink, β = 2 brown (red) noise. Larger β gives smoother, more temporally correlated
action sequences.

The sampler follows Timmer & König (1995): draw independent complex Gaussian Fourier coefficients with
amplitude ``f^(-β/2)``, then take the inverse real FFT along the time axis. The result is circularly
stationary, so every time step has the same marginal variance; dividing by its exact value gives unit
variance at every time step.

Circular stationarity has a side effect that the iCEM reference implementation (the ``colorednoise``
package) keeps: the last step of a sequence is as strongly correlated with the first as with its own
neighbour (about 0.88 for β = 2, T = 30). :attr:`NoiseBoundary.CROPPED` removes it by sampling a
sequence twice as long and keeping its first half, a window of a stationary process with the same
power-law autocovariance; :attr:`NoiseBoundary.PERIODIC` is the reference behaviour.
"""

from __future__ import annotations

import enum

import numpy as np

from contactkit.errors import InvalidInputError

__all__ = ["NoiseBoundary", "colored_noise", "colored_noise_variance_scale"]

CROP_FACTOR = 2
"""A :attr:`NoiseBoundary.CROPPED` sequence of T steps is the first T steps of one of ``2 T`` steps."""


class NoiseBoundary(enum.Enum):
    """How a sampled sequence treats its ends."""

    PERIODIC = "periodic"
    """Circularly stationary: step T-1 neighbours step 0 (the reference iCEM sampler)."""
    CROPPED = "cropped"
    """First T steps of a periodic sequence of ``2 T`` steps: no wrap-around correlation."""


def _amplitudes(beta: float, n_steps: int, fmin: float) -> np.ndarray:
    """Fourier amplitude per rfft bin ``(n_steps // 2 + 1,)``: ``max(f, fmin)^(-β/2)``, f in cycles/step."""
    freqs = np.fft.rfftfreq(n_steps)
    return np.maximum(freqs, fmin) ** (-0.5 * beta)


def colored_noise_variance_scale(beta: float, n_steps: int, fmin: float | None = None) -> float:
    """Standard deviation of one time step of the unnormalised power-law sequence (before scaling).

    With real coefficient ``X_0 = √2 a_0 g`` at f = 0, complex ``X_k = a_k (g + i g')`` for 0 < k < n/2 and
    real ``X_{n/2} = √2 a_{n/2} g`` at the Nyquist bin (even n), ``numpy.fft.irfft`` gives every time
    step the variance ``(2 a_0² + 4 Σ_{0<k<n/2} a_k² + 2 a_{n/2}²) / n²``. This function returns its root.

    Args:
        beta: spectral exponent β ≥ 0 (PSD ∝ f^-β).
        n_steps: sequence length T ≥ 2 along time.
        fmin: lowest frequency [cycles/step] used for the amplitude; bins below it (the DC bin) take the
            amplitude of ``fmin``. Default ``1 / n_steps`` (the lowest non-zero bin).

    Returns:
        float, the standard deviation that :func:`colored_noise` divides by.
    """
    fmin = 1.0 / n_steps if fmin is None else fmin
    a2 = _amplitudes(beta, n_steps, fmin) ** 2
    total = 2.0 * a2[0]
    if n_steps % 2 == 0:
        total += 4.0 * np.sum(a2[1:-1]) + 2.0 * a2[-1]
    else:
        total += 4.0 * np.sum(a2[1:])
    return float(np.sqrt(total) / n_steps)


def _periodic_last_axis(beta: float, lead: tuple[int, ...], n_steps: int, fmin, rng) -> np.ndarray:
    """``(*lead, n_steps)`` unit-variance circularly stationary power-law noise along the last axis."""
    if n_steps == 1:
        return rng.standard_normal((*lead, 1))
    amp = _amplitudes(beta, n_steps, 1.0 / n_steps if fmin is None else fmin)
    real = rng.standard_normal((*lead, amp.shape[0])) * amp
    imag = rng.standard_normal((*lead, amp.shape[0])) * amp
    # The DC bin, and the Nyquist bin for even T, must be real; √2 keeps their power equal to 2 a².
    imag[..., 0] = 0.0
    real[..., 0] *= np.sqrt(2.0)
    if n_steps % 2 == 0:
        imag[..., -1] = 0.0
        real[..., -1] *= np.sqrt(2.0)
    series = np.fft.irfft(real + 1j * imag, n=n_steps, axis=-1)
    return series / colored_noise_variance_scale(beta, n_steps, fmin)


def colored_noise(
    beta: float,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    time_axis: int = -1,
    boundary: NoiseBoundary = NoiseBoundary.PERIODIC,
    fmin: float | None = None,
) -> np.ndarray:
    """Sample zero-mean, unit-variance Gaussian noise with PSD ∝ f^-β along ``time_axis``.

    Implements the colored-noise sampling of iCEM (Pinneri et al. 2020, §3.1, ``C^β`` in Alg. 1):
    independent sequences for every index of the other axes (e.g. per sample and per action dimension).

    Args:
        beta: spectral exponent β ≥ 0; 0 gives white noise.
        shape: output shape; ``shape[time_axis]`` is the sequence length T [steps].
        rng: source of randomness.
        time_axis: axis along which the samples are correlated.
        boundary: PERIODIC (reference sampler) or CROPPED (first half of a ``2 T`` sequence).
        fmin: low-frequency cut-off [cycles/step] of the generated sequence (length T, or ``2 T`` when
            cropped), see :func:`colored_noise_variance_scale`; in ``(0, 0.5]``. Default 1 / length.

    Returns:
        ``shape`` float64 array; every element has variance 1 exactly (in distribution). With PERIODIC the
        expected periodogram along ``time_axis`` is proportional to ``f^-β`` for ``f ≥ fmin``; with CROPPED
        the autocovariance at lags below T is that of the periodic ``2 T`` process.

    Raises:
        InvalidInputError: on negative or non-finite β, an empty shape, or an ``fmin`` out of range.
    """
    if not np.isfinite(beta) or beta < 0.0:
        raise InvalidInputError(f"colored noise exponent beta must be finite and >= 0, got {beta}")
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0 or min(shape) < 1:
        raise InvalidInputError(f"colored noise shape must have at least one axis, all >= 1, got {shape}")
    if not -len(shape) <= time_axis < len(shape):
        raise InvalidInputError(f"time_axis {time_axis} is out of range for shape {shape}")
    if fmin is not None and not 0.0 < fmin <= 0.5:
        raise InvalidInputError(f"colored noise fmin must lie in (0, 0.5] cycles/step, got {fmin}")
    boundary = NoiseBoundary(boundary)
    n_steps = shape[time_axis]
    lead = tuple(s for i, s in enumerate(shape) if i != time_axis % len(shape))
    length = n_steps * (CROP_FACTOR if boundary is NoiseBoundary.CROPPED else 1)
    series = _periodic_last_axis(beta, lead, length, fmin, rng)[..., :n_steps]
    return np.moveaxis(series, -1, time_axis)
