"""Single-model CPU fast path of Algorithm 1 in numpy + BLAS (same equations as ``kalman``).

A robot loop updates one model at a time with n_w ≈ 20; there torch's per-call overhead (several µs
per tiny op) dominates. This path runs the same arithmetic as :func:`kalman.update` through direct
BLAS level-1/2 calls (``dsymv``, ``dsyr2``, ``dger``, ``dgemv``, ``dtrmv``, ``daxpy``), ten calls per
update. ``Σ`` is held in its upper triangle only (Fortran order), which the symmetric BLAS routines
read and write, so it stays exactly symmetric by construction; :attr:`FastLMLState.Sigma` returns the
full matrix. Convert with :func:`to_fast` / :func:`from_fast`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg import blas

from contactkit.errors import InvalidInputError
from contactkit.models.linear.kalman import LMLState, SensorNoise


@dataclass(frozen=True, slots=True)
class FastLMLState:
    """Belief of one model (no batch dimensions), numpy float64, Fortran order.

    Attributes:
        G: ``(n_y, n_w)`` whitened mean ``Ĝ`` (eq 5).
        Sigma_upper: ``(n_w, n_w)`` whose upper triangle (diagonal included) is ``Σ``; the strict lower
            triangle is not maintained.
        L_T: ``(n_y, n_y)`` upper-triangular whitening ``Lᵀ`` (eq 4).
        L_inv_T: ``(n_y, n_y)`` ``L⁻ᵀ``.
    """

    G: np.ndarray
    Sigma_upper: np.ndarray
    L_T: np.ndarray
    L_inv_T: np.ndarray

    @property
    def Sigma(self) -> np.ndarray:
        """``(n_w, n_w)`` full symmetric covariance Σ."""
        U = np.triu(self.Sigma_upper)
        return U + np.triu(U, 1).T

    @property
    def G_wrench(self) -> np.ndarray:
        """``(n_y, n_w)`` model ``G̃ = L⁻ᵀ Ĝ`` in wrench units per feature unit."""
        return self.L_inv_T @ self.G


def to_fast(state: LMLState) -> FastLMLState:
    """Copy a single-model torch ``LMLState`` (batch shape ``()``) into a :class:`FastLMLState`."""
    if state.batch_shape != ():
        raise InvalidInputError(f"the fast path holds one model; got batch shape {state.batch_shape}")

    def f(t: torch.Tensor) -> np.ndarray:
        return np.asfortranarray(t.detach().to("cpu", torch.float64).numpy())

    return FastLMLState(f(state.G), f(state.Sigma), f(state.noise.L_T), f(state.noise.L_inv_T))


def from_fast(fast: FastLMLState, *, dtype: torch.dtype = torch.float64, device=None) -> LMLState:
    """The torch ``LMLState`` (batch shape ``()``) holding the same belief as ``fast``."""

    def t(x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(x), dtype=dtype, device=device)

    return LMLState(
        G=t(fast.G), Sigma=t(fast.Sigma), noise=SensorNoise(L_T=t(fast.L_T), L_inv_T=t(fast.L_inv_T))
    )


def fast_predict(state: FastLMLState, Q: np.ndarray | None = None) -> FastLMLState:
    """Predict step of Algorithm 1 (eq 11): ``Σ ← Σ + Q``; ``Q`` ``(n_w, n_w)`` symmetric PSD or ``None``."""
    if Q is None:
        return state
    Q = np.asarray(Q, dtype=np.float64)
    n_w = state.G.shape[1]
    if Q.shape != (n_w, n_w) or not np.isfinite(Q).all():
        raise InvalidInputError(f"process noise Q must be a finite ({n_w}, {n_w}) matrix, got {Q.shape}")
    return FastLMLState(state.G, np.asfortranarray(state.Sigma_upper + Q), state.L_T, state.L_inv_T)


def _reject(w: np.ndarray, y: np.ndarray) -> InvalidInputError:
    for name, x in (("feature vector w", w), ("measurement y", y)):
        if not np.isfinite(x).all():
            return InvalidInputError(f"{name} contains NaN or Inf; update rejected")
    return InvalidInputError("update overflowed to a non-finite value (features too large); update rejected")


def fast_update(state: FastLMLState, w: np.ndarray, y: np.ndarray) -> FastLMLState:
    """Measurement update of Algorithm 1 (eqs 12–15), same arithmetic as :func:`kalman.update`.

    ``a = Σw``, ``s = wᵀa + 1``, ``z = Lᵀỹ − Ĝw``, ``ℓ = a/s``, ``Ĝ ← Ĝ + zℓᵀ``,
    ``Σ ← Σ − (ℓdᵀ + dℓᵀ)``, ``d = a − sℓ/2`` (Joseph form, expanded; :func:`kalman.joseph_rank_one`).

    Args:
        state: predicted belief.
        w: ``(n_w,)`` float64 feature vector [feature units].
        y: ``(n_y,)`` float64 raw F/T reading [N, N·m], sensor frame.

    Returns:
        The updated belief (a new state; ``state`` is not modified).

    Raises:
        InvalidInputError: wrong shape or a NaN/Inf in ``w`` or ``y``; ``state`` is unchanged.
    """
    G, P = state.G, state.Sigma_upper
    w, y = np.asarray(w, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if w.shape != (P.shape[0],) or y.shape != (G.shape[0],):
        raise InvalidInputError(
            f"fast_update expects w ({P.shape[0]},) and y ({G.shape[0]},), got {w.shape}, {y.shape}"
        )
    a = blas.dsymv(1.0, P, w)
    s = blas.ddot(w, a) + 1.0
    z = blas.dgemv(-1.0, G, w, beta=1.0, y=blas.dtrmv(state.L_T, y), overwrite_y=1)
    if not math.isfinite(s + blas.dasum(z)):
        raise _reject(w, y)
    ell = a * (1.0 / s)
    d = blas.daxpy(ell, a, a=-0.5 * s)  # d = a − (sℓ)/2, written over a
    return FastLMLState(blas.dger(1.0, z, ell, a=G), blas.dsyr2(-1.0, ell, d, a=P), state.L_T, state.L_inv_T)


def fast_predict_wrench(state: FastLMLState, w: np.ndarray) -> np.ndarray:
    """Predicted F/T reading ``ỹ = L⁻ᵀ Ĝ w`` ``(…, n_y)`` [N, N·m] for features ``w`` ``(…, n_w)`` (eq 2)."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape[-1:] != (state.G.shape[1],):
        raise InvalidInputError(f"feature vector w must end in n_w = {state.G.shape[1]}, got {w.shape}")
    return w @ state.G_wrench.T
