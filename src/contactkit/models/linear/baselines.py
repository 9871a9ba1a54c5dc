"""Peers of the LML filter for the benchmark: recursive least squares, and re-solving least squares.

Both solve the same whitened, regularised problem as the filter (eq 6 with ``diag(b)``, eq 16), one
model at a time on the CPU, in numpy + BLAS with the same care as :mod:`fast`, so that their speed
and accuracy can be compared with the filter's in one run:

* :func:`rls_update` — conventional (exponentially weighted) RLS: ``k = Pw/(λ + wᵀPw)``,
  ``G ← G + (y − Gw)kᵀ``, ``P ← (P − k(Pw)ᵀ)/λ``. It is the filter with ``Q = 0`` but with the
  conventional, non-Joseph covariance update on a full (unsymmetrised) ``P``, and a forgetting factor
  ``λ`` in place of a process-noise model.
* :func:`resolve_update` — accumulates the normal equations ``A = diag(b²) + Σ wwᵀ``, ``B = Σ y wᵀ``
  and re-solves ``G = B A⁻¹`` from scratch at every sample with a fresh Cholesky factorisation,
  O(n_w³) per update (re-forming ``A`` from the whole history as well would cost O(k n_w²) more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas, lapack

from contactkit.errors import InvalidInputError
from contactkit.models.linear.kalman import DEFAULT_PRIOR_WEIGHT, SensorNoise


def _whitening(noise: SensorNoise) -> tuple[np.ndarray, np.ndarray]:
    if noise.L_T.ndim != 2:
        raise InvalidInputError(f"the baselines hold one model; noise has shape {tuple(noise.L_T.shape)}")
    return (
        np.asfortranarray(noise.L_T.detach().cpu().double().numpy()),
        np.asfortranarray(noise.L_inv_T.detach().cpu().double().numpy()),
    )


def _prior_precision(b, n_w: int) -> np.ndarray:
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), (n_w,))
    if not np.isfinite(b).all() or (b <= 0).any():
        raise InvalidInputError("regularisation weights b must be finite and > 0")
    return b**2


def _check(w, y, n_w: int, n_y: int) -> tuple[np.ndarray, np.ndarray]:
    w, y = np.asarray(w, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if w.shape != (n_w,) or y.shape != (n_y,):
        raise InvalidInputError(f"expected w ({n_w},) and y ({n_y},), got {w.shape}, {y.shape}")
    return w, y


@dataclass(frozen=True, slots=True)
class RLSState:
    """Recursive-least-squares state of one model.

    Attributes:
        G: ``(n_y, n_w)`` whitened estimate; P: ``(n_w, n_w)`` inverse information matrix;
        L_T, L_inv_T: ``(n_y, n_y)`` whitening (eqs 4–5); forgetting: λ ∈ (0, 1].
    """

    G: np.ndarray
    P: np.ndarray
    L_T: np.ndarray
    L_inv_T: np.ndarray
    forgetting: float

    @property
    def G_wrench(self) -> np.ndarray:
        """``(n_y, n_w)`` model in wrench units per feature unit."""
        return self.L_inv_T @ self.G


def rls_init(n_w: int, noise: SensorNoise, *, b=DEFAULT_PRIOR_WEIGHT, forgetting: float = 1.0) -> RLSState:
    """RLS state with ``G = 0`` and ``P = diag(1/b²)`` (the prior of eq 16); ``λ = forgetting``."""
    if not 0.0 < forgetting <= 1.0:
        raise InvalidInputError(f"forgetting factor must lie in (0, 1], got {forgetting}")
    L_T, L_inv_T = _whitening(noise)
    P = np.asfortranarray(np.diag(1.0 / _prior_precision(b, n_w)))
    return RLSState(np.zeros((L_T.shape[0], n_w), order="F"), P, L_T, L_inv_T, float(forgetting))


def rls_update(state: RLSState, w, y) -> RLSState:
    """One conventional RLS step on ``w`` ``(n_w,)`` and raw reading ``y`` ``(n_y,)`` [N, N·m].

    Raises:
        InvalidInputError: wrong shapes or a NaN/Inf input (``state`` is unchanged).
    """
    G, P, lam = state.G, state.P, state.forgetting
    w, y = _check(w, y, P.shape[0], G.shape[0])
    a = blas.dgemv(1.0, P, w)
    s = blas.ddot(w, a) + lam
    e = blas.dgemv(-1.0, G, w, beta=1.0, y=blas.dtrmv(state.L_T, y), overwrite_y=1)
    if not math.isfinite(s + blas.dasum(e)):
        raise InvalidInputError("RLS update rejected: w or y contains NaN or Inf")
    k = a * (1.0 / s)
    P_new = blas.dger(-1.0, k, a, a=P)
    if lam != 1.0:
        P_new *= 1.0 / lam
    return RLSState(blas.dger(1.0, e, k, a=G), P_new, state.L_T, state.L_inv_T, lam)


@dataclass(frozen=True, slots=True)
class ResolveState:
    """Normal equations of eq 6 and their latest solution.

    Attributes:
        A: ``(n_w, n_w)`` information ``diag(b²) + Σ wwᵀ`` (upper triangle maintained);
        B: ``(n_y, n_w)`` ``Σ y wᵀ`` (whitened); G: ``(n_y, n_w)`` solution ``B A⁻¹``;
        L_T, L_inv_T: whitening.
    """

    A: np.ndarray
    B: np.ndarray
    G: np.ndarray
    L_T: np.ndarray
    L_inv_T: np.ndarray

    @property
    def G_wrench(self) -> np.ndarray:
        """``(n_y, n_w)`` model in wrench units per feature unit."""
        return self.L_inv_T @ self.G


def resolve_init(n_w: int, noise: SensorNoise, *, b=DEFAULT_PRIOR_WEIGHT) -> ResolveState:
    """Empty normal equations with the regulariser ``diag(b²)`` (eq 6 / eq 16)."""
    L_T, L_inv_T = _whitening(noise)
    n_y = L_T.shape[0]
    zeros = np.zeros((n_y, n_w), order="F")
    return ResolveState(
        np.asfortranarray(np.diag(_prior_precision(b, n_w))), zeros, zeros.copy(), L_T, L_inv_T
    )


def resolve_update(state: ResolveState, w, y) -> ResolveState:
    """Add one sample and solve ``G A = B`` afresh (Cholesky ``dpotrf`` + ``dpotrs``), O(n_w³).

    Raises:
        InvalidInputError: wrong shapes or a NaN/Inf input (``state`` is unchanged).
    """
    w, y = _check(w, y, state.A.shape[0], state.B.shape[0])
    yw = blas.dtrmv(state.L_T, y)
    if not math.isfinite(blas.dasum(w) + blas.dasum(yw)):
        raise InvalidInputError("re-solve update rejected: w or y contains NaN or Inf")
    A = blas.dsyr(1.0, w, a=state.A)
    B = blas.dger(1.0, yw, w, a=state.B)
    c, info = lapack.dpotrf(A, lower=0, clean=0)
    if info != 0:
        raise InvalidInputError(f"normal equations are not positive definite (dpotrf info {info})")
    G_T, info = lapack.dpotrs(c, np.ascontiguousarray(B.T), lower=0)
    return ResolveState(A, B, np.asfortranarray(G_T.T), state.L_T, state.L_inv_T)
