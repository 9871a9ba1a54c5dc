"""Particle weights in log space: normalisation, effective sample size, systematic resampling.

Weights are kept as logarithms so that a measurement far in a Gaussian tail (log-likelihoods of −10⁴ and
below) cannot underflow every weight to zero: normalisation subtracts the largest log-weight before
exponentiating (log-sum-exp).
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError

__all__ = ["effective_sample_size", "normalize_log_weights", "systematic_resample"]


def normalize_log_weights(log_weights: np.ndarray) -> np.ndarray:
    """Shift ``log_weights`` ``(N,)`` so that ``Σ exp(log_weights) = 1`` (log-sum-exp normalisation).

    ``log w_i − log Σ_j exp(log w_j)``, computed as ``l_i − m − log Σ_j exp(l_j − m)`` with ``m = max l``,
    so that the largest weight is ``exp(0)`` before summing and nothing underflows to an all-zero set.
    ``-inf`` entries (impossible particles) stay ``-inf``.

    Raises:
        InvalidInputError: on a shape other than ``(N,)`` with N ≥ 1, NaN or ``+inf`` entries, or when
            every entry is ``-inf`` (no particle is possible).
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.ndim != 1 or lw.shape[0] < 1:
        raise InvalidInputError(f"log_weights must have shape (N,) with N >= 1, got {lw.shape}")
    if np.any(np.isnan(lw)) or np.any(lw == np.inf):
        raise InvalidInputError("log_weights contain NaN or +inf")
    top = np.max(lw)
    if top == -np.inf:
        raise InvalidInputError("every log-weight is -inf: no particle explains the data")
    shifted = lw - top  # exact for entries near the top: subtract before adding the small log-sum
    return shifted - np.log(np.sum(np.exp(shifted)))


def effective_sample_size(log_weights: np.ndarray) -> float:
    """Kish's effective sample size ``1 / Σ w_i²`` of normalised weights, in ``[1, N]``.

    Args:
        log_weights: ``(N,)`` log-weights, normalised or not.

    Returns:
        float, N for uniform weights and 1 when one particle carries all the weight.
    """
    lw = normalize_log_weights(log_weights)
    return float(1.0 / np.sum(np.exp(2.0 * lw)))


def systematic_resample(log_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of N particles drawn by systematic (low-variance) resampling.

    One uniform offset ``u₀ ~ U[0, 1/N)`` places N equally spaced pointers ``u_k = u₀ + k/N``; particle i
    is copied once for every pointer in ``[c_{i−1}, c_i)`` of the cumulative weights. Particle i is
    therefore copied ``⌊N w_i⌋`` or ``⌈N w_i⌉`` times, ``N w_i`` times on average (unbiased), and a
    zero-weight particle never (Kitagawa 1996; Thrun, Burgard & Fox, Probabilistic Robotics, Table 4.4).

    Args:
        log_weights: ``(N,)`` log-weights, normalised or not.
        rng: source of the single uniform draw.

    Returns:
        ``(N,)`` int64 indices into the particles, non-decreasing.
    """
    weights = np.exp(normalize_log_weights(log_weights))
    n = weights.shape[0]
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0  # guard against round-off leaving the last pointer past the end
    pointers = (rng.random() + np.arange(n)) / n
    return np.minimum(np.searchsorted(cumulative, pointers, side="right"), n - 1).astype(np.int64)
