"""Linear Model Learning (LML): the Kalman filter of Algorithm 1 over the rows of a linear force model.

The model (eq 2) predicts the F/T reading ``ỹ ≈ G̃ w`` from a feature vector ``w`` (n_w,). With the
sensor-noise covariance ``R`` (n_y, n_y) and the Cholesky factor ``L`` of ``R⁻¹ = L Lᵀ`` (eq 4) the
problem decouples in the whitened variables ``G = Lᵀ G̃`` and ``y = Lᵀ ỹ`` (eq 5): every row of ``G``
is estimated by a Kalman filter with unit measurement noise (eqs 11–12), and all rows share one
covariance ``Σ`` (n_w, n_w) and one scalar-gain vector ``ℓ`` (eq 13). The state therefore holds the
whitened mean ``Ĝ`` and ``Σ``; predictions are mapped back with ``L⁻ᵀ`` (computed once, offline).

Regularisation. Eq 6 writes the regulariser as ``‖G b‖²``, but the initial belief of eq 16,
``Σ₀ = diag(1/b²)``, is the MAP form of ``Σᵢ bᵢ² ‖G[:, i]‖² = ‖G diag(b)‖²_F``; this module implements
eq 16 (the filter the paper runs), so with ``Q = 0`` it reproduces the closed form
``G = Yᵀ W (WᵀW + diag(b²))⁻¹`` of eq 6 read with ``diag(b)``.

Shapes: every tensor has leading batch dimensions ``*B`` of independent models. Units: ``ỹ`` is a
wrench ``(fx, fy, fz, tx, ty, tz)`` [N, N·m] in the F/T sensor frame, ``R`` its covariance [N², N·m²,
...]; whitened quantities are dimensionless; ``w`` is in the user's feature units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from contactkit.errors import InvalidInputError

DEFAULT_DTYPE = torch.float64
"""Floating-point type of every state tensor unless the caller asks for another."""

DEFAULT_N_Y = 6
"""Length of a wrench measurement (fx, fy, fz, tx, ty, tz)."""

DEFAULT_PRIOR_WEIGHT = 1e-3
"""Default regularisation weight ``b`` of eq 16 (prior standard deviation 1/b = 1000 whitened units)."""

R_MIN_RCOND = 1e-12
"""Smallest accepted ratio λ_min(R) / λ_max(R); below it ``R`` counts as singular."""

SYMMETRY_RTOL = 1e-9
"""Largest accepted ``max|A − Aᵀ| / max|A|`` for a matrix that must be symmetric (R, Q)."""


@dataclass(frozen=True)
class SensorNoise:
    """Whitening of the F/T sensor noise, eqs 4–5 (static: computed once per sensor).

    Attributes:
        L_T: ``(*B, n_y, n_y)`` upper-triangular ``Lᵀ`` with ``L Lᵀ = R⁻¹``; ``y = Lᵀ ỹ`` is whitened.
        L_inv_T: ``(*B, n_y, n_y)`` ``L⁻ᵀ``, maps whitened predictions back: ``ỹ = L⁻ᵀ y``, ``G̃ = L⁻ᵀ G``.
    """

    L_T: torch.Tensor
    L_inv_T: torch.Tensor

    @property
    def n_y(self) -> int:
        """Measurement length n_y."""
        return self.L_T.shape[-1]


@dataclass(frozen=True)
class LMLState:
    """Belief of Algorithm 1 over the whitened model ``G = Lᵀ G̃`` of ``*B`` independent models.

    Attributes:
        G: ``(*B, n_y, n_w)`` whitened mean estimate ``Ĝ`` (row j is ``ĝ⁽ʲ⁾``, eq 14).
        Sigma: ``(*B, n_w, n_w)`` covariance ``Σ`` shared by every row of ``Ĝ`` (Section 4.1).
        noise: the sensor whitening (static data carried along so that ``update`` and
            ``predict_wrench`` can map raw wrenches in and out).
    """

    G: torch.Tensor
    Sigma: torch.Tensor
    noise: SensorNoise

    @property
    def n_w(self) -> int:
        """Feature length n_w."""
        return self.G.shape[-1]

    @property
    def n_y(self) -> int:
        """Measurement length n_y."""
        return self.G.shape[-2]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading batch shape ``B``."""
        return tuple(self.G.shape[:-2])

    @property
    def G_wrench(self) -> torch.Tensor:
        """``(*B, n_y, n_w)`` model ``G̃ = L⁻ᵀ Ĝ`` in wrench units per feature unit (eq 2, eq 5)."""
        return self.noise.L_inv_T @ self.G


def _as_tensor(x, name: str, dtype: torch.dtype, device) -> torch.Tensor:
    """``x`` as a tensor of ``dtype`` on ``device``; a clear error if it cannot be converted."""
    try:
        return torch.as_tensor(x, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInputError(f"{name} cannot be read as a {dtype} tensor: {exc}") from exc


def _check_symmetric(A: torch.Tensor, name: str) -> None:
    """Raise unless ``A`` (*B, n, n) is finite and symmetric within ``SYMMETRY_RTOL``."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise InvalidInputError(f"{name} must be a square matrix (*B, n, n), got shape {tuple(A.shape)}")
    if not bool(torch.isfinite(A).all()):
        raise InvalidInputError(f"{name} contains NaN or Inf")
    scale = float(A.abs().max()) if A.numel() else 0.0
    if float((A - A.mT).abs().max()) > SYMMETRY_RTOL * max(scale, 1e-300):
        raise InvalidInputError(f"{name} is not symmetric")


def sensor_noise(
    R=None, *, n_y: int = DEFAULT_N_Y, dtype: torch.dtype = DEFAULT_DTYPE, device=None
) -> SensorNoise:
    """Whitening factors of eqs 4–5 from the sensor-noise covariance ``R``.

    Args:
        R: ``(*B, n_y, n_y)`` symmetric positive-definite covariance of the F/T noise [N², N²·m, N²·m²
            blocks]; ``None`` means the identity of size ``n_y`` (equal unit weights).
        n_y: measurement length, used only when ``R`` is ``None``.
        dtype, device: of the returned tensors.

    Returns:
        ``SensorNoise`` with ``Lᵀ`` (``R⁻¹ = L Lᵀ``, L the lower Cholesky factor, eq 4) and ``L⁻ᵀ``.

    Raises:
        InvalidInputError: ``R`` is not square, not finite, not symmetric, or singular / not positive
            definite (λ_min(R) ≤ ``R_MIN_RCOND`` · λ_max(R)).
    """
    if R is None:
        R = torch.eye(n_y, dtype=dtype, device=device)
    R = _as_tensor(R, "R", dtype, device)
    _check_symmetric(R, "sensor noise covariance R")
    R = 0.5 * (R + R.mT)
    eig = torch.linalg.eigvalsh(R)
    lo, hi = eig[..., 0], eig[..., -1]
    if not bool((lo > R_MIN_RCOND * hi).all()) or not bool((hi > 0).all()):
        raise InvalidInputError(
            f"sensor noise covariance R is singular or not positive definite: smallest eigenvalue "
            f"{float(lo.min()):.3e}, largest {float(hi.max()):.3e} (R_MIN_RCOND = {R_MIN_RCOND:g})"
        )
    R_inv = torch.cholesky_inverse(torch.linalg.cholesky(R))
    L = torch.linalg.cholesky(0.5 * (R_inv + R_inv.mT))
    eye = torch.eye(R.shape[-1], dtype=dtype, device=device).expand_as(L)
    L_inv_T = torch.linalg.solve_triangular(L.mT, eye, upper=True)
    return SensorNoise(L_T=L.mT.contiguous(), L_inv_T=L_inv_T.contiguous())


def init_state(
    n_w: int,
    *,
    b=DEFAULT_PRIOR_WEIGHT,
    noise: SensorNoise | None = None,
    batch_shape: tuple[int, ...] = (),
    dtype: torch.dtype = DEFAULT_DTYPE,
    device=None,
) -> LMLState:
    """Initial belief that encodes the regulariser as a prior, eq 16: ``Ĝ₀ = 0``, ``Σ₀ = diag(1/b²)``.

    Args:
        n_w: feature length.
        b: regularisation weights, a scalar or ``(*B, n_w)``, finite and > 0 [whitened units per
            feature unit]; ``Σ₀ = diag(1/b²)``.
        noise: sensor whitening from :func:`sensor_noise` (default: identity R with n_y = 6).
        batch_shape: leading shape of independent models; broadcast with those of ``b`` and ``noise``.
        dtype, device: of the state (float64 by default; any torch device).

    Returns:
        ``LMLState`` with ``G`` ``(*B, n_y, n_w)`` zeros and ``Sigma`` ``(*B, n_w, n_w)``.
    """
    if noise is None:
        noise = sensor_noise(dtype=dtype, device=device)
    b = _as_tensor(b, "regularisation weights b", dtype, device)
    if b.ndim == 0:
        b = b.expand(n_w)
    if b.shape[-1] != n_w:
        raise InvalidInputError(f"regularisation weights b must end in n_w = {n_w}, got {tuple(b.shape)}")
    if not bool(torch.isfinite(b).all()) or not bool((b > 0).all()):
        raise InvalidInputError("regularisation weights b must be finite and > 0 (prior variance 1/b²)")
    shape = torch.broadcast_shapes(tuple(batch_shape), b.shape[:-1], noise.L_T.shape[:-2])
    Sigma = torch.diag_embed(1.0 / b**2).expand(*shape, n_w, n_w).clone()
    G = torch.zeros(*shape, noise.n_y, n_w, dtype=dtype, device=device)
    L_T = noise.L_T.to(dtype=dtype, device=device).expand(*shape, noise.n_y, noise.n_y).contiguous()
    L_inv_T = noise.L_inv_T.to(dtype=dtype, device=device).expand_as(L_T).contiguous()
    return LMLState(G=G, Sigma=Sigma, noise=SensorNoise(L_T=L_T, L_inv_T=L_inv_T))


def drift_process_noise(
    drift_std, n_w: int, *, dt: float = 1.0, dtype=DEFAULT_DTYPE, device=None
) -> torch.Tensor:
    """Process noise ``Q = diag(σ² dt)`` of eq 11 for parameters that random-walk at rate ``σ``.

    This is the principled form of a forgetting factor: each whitened entry of ``G`` is expected to
    drift with standard deviation ``σ √dt`` per update, so old data are discounted exactly as much as
    the model is expected to change.

    Args:
        drift_std: scalar or ``(n_w,)`` drift rate σ [whitened units per feature unit per √s], ≥ 0.
        n_w: feature length.
        dt: time between updates [s].

    Returns:
        ``(n_w, n_w)`` diagonal, positive semi-definite ``Q``.
    """
    std = _as_tensor(drift_std, "drift_std", dtype, device).expand(n_w)
    if (
        not bool(torch.isfinite(std).all())
        or not bool((std >= 0).all())
        or not (dt > 0 and math.isfinite(dt))
    ):
        raise InvalidInputError("drift_std must be finite and ≥ 0 and dt finite and > 0")
    return torch.diag_embed(std**2 * dt)


def predict(state: LMLState, Q=None) -> LMLState:
    """Predict step of Algorithm 1 (random-walk dynamics, eq 11): ``Ĝ ← Ĝ``, ``Σ ← Σ + Q``.

    Args:
        state: current belief, ``Sigma`` ``(*B, n_w, n_w)``.
        Q: process-noise covariance ``(n_w, n_w)`` or ``(*B, n_w, n_w)``, symmetric positive
            semi-definite [whitened units², per update]; ``None`` means no process noise (Q = 0).
            Finiteness, symmetry and a non-negative diagonal are checked; full PSD-ness is the
            caller's contract (see :func:`drift_process_noise`).

    Returns:
        The predicted belief (a new state; ``state`` is not modified).
    """
    if Q is None:
        return state
    Q = _as_tensor(Q, "process noise Q", state.Sigma.dtype, state.Sigma.device)
    _check_symmetric(Q, "process noise Q")
    try:
        fits = torch.broadcast_shapes(Q.shape, state.Sigma.shape) == state.Sigma.shape
    except RuntimeError:
        fits = False
    if not fits:
        raise InvalidInputError(
            f"process noise Q of shape {tuple(Q.shape)} does not fit Σ {tuple(state.Sigma.shape)}"
        )
    if bool((torch.diagonal(Q, dim1=-2, dim2=-1) < 0).any()):
        raise InvalidInputError("process noise Q has a negative diagonal entry (not PSD)")
    return LMLState(G=state.G, Sigma=state.Sigma + Q, noise=state.noise)


def joseph_rank_one(
    Sigma: torch.Tensor, a: torch.Tensor, ell: torch.Tensor, s_ell: torch.Tensor
) -> torch.Tensor:
    """Joseph-form covariance update for a scalar measurement, in O(n_w²).

    For a measurement row ``c`` (n_w,) with noise variance ``r`` and any gain ``ℓ``, the Joseph form
    ``(I − ℓcᵀ) Σ (I − ℓcᵀ)ᵀ + r ℓℓᵀ`` expands exactly (no use of the optimal gain) to
    ``Σ − ℓaᵀ − aℓᵀ + s ℓℓᵀ = Σ − (ℓdᵀ + dℓᵀ)`` with ``a = Σc``, ``s = cᵀΣc + r`` and
    ``d = a − (sℓ)/2``. Evaluated as ``M = ℓdᵀ``, ``Σ − (M + Mᵀ)`` the result is exactly symmetric in
    floating point, costs three O(n_w²) operations, and keeps the Joseph form's first-order
    insensitivity to errors in ``ℓ``.

    Args:
        Sigma: ``(*B, n, n)`` symmetric covariance.
        a: ``(*B, n)`` ``Σc``.
        ell: ``(*B, n)`` gain ``ℓ``.
        s_ell: ``(*B, n)`` ``s ℓ`` (passed as a product so that ``r = ∞``, ``ℓ = 0`` stays finite).

    Returns:
        ``(*B, n, n)`` updated covariance.
    """
    d = a - 0.5 * s_ell
    M = torch.outer(ell, d) if ell.ndim == 1 else ell.unsqueeze(-1) * d.unsqueeze(-2)
    return Sigma - (M + M.mT)


def _reject(state: LMLState, w: torch.Tensor, y: torch.Tensor) -> InvalidInputError:
    """The error that names which input made an update non-finite (the state is left as it was)."""
    batch = state.batch_shape
    for name, x in (("feature vector w", w), ("measurement y", y)):
        bad = ~torch.isfinite(x).all(-1)
        if bool(bad.any()):
            where = torch.nonzero(bad.expand(batch) if batch else bad.reshape(1))[:5].tolist()
            return InvalidInputError(f"{name} contains NaN or Inf (batch indices {where}); update rejected")
    return InvalidInputError("update overflowed to a non-finite value (features too large); update rejected")


def update(state: LMLState, w, y) -> LMLState:
    """Measurement update of Algorithm 1 (eqs 12–15) for all rows of ``Ĝ`` with one shared gain.

    ``y_w = Lᵀ ỹ`` (eq 5); innovation ``z = y_w − Ĝ w``; ``s = wᵀΣw + 1``; gain ``ℓ = Σw / s``
    (eq 13, a scalar division: no matrix inversion); ``Ĝ ← Ĝ + z ℓᵀ`` (eq 15);
    ``Σ ← (I − ℓwᵀ) Σ (I − ℓwᵀ)ᵀ + ℓℓᵀ`` (Joseph form, via :func:`joseph_rank_one`).

    Args:
        state: predicted belief (call :func:`predict` first when there is process noise).
        w: ``(*B, n_w)`` feature vectors (broadcast to the state's batch) [feature units].
        y: ``(*B, n_y)`` raw F/T readings ``ỹ`` [N, N·m], sensor frame.

    Returns:
        The updated belief (a new state).

    Raises:
        InvalidInputError: wrong shapes, or a NaN/Inf in ``w`` or ``y`` (or an overflow); the whole
            batched update is rejected and ``state`` is unchanged.
    """
    w, y = _checked_inputs(state, w, y)
    if state.batch_shape == () and w.ndim == 1 and y.ndim == 1:
        return _update_one(state, w, y)
    G, Sigma = state.G, state.Sigma
    a = (Sigma @ w.unsqueeze(-1)).squeeze(-1)
    s = torch.linalg.vecdot(w, a) + 1.0
    z = (state.noise.L_T @ y.unsqueeze(-1)).squeeze(-1) - (G @ w.unsqueeze(-1)).squeeze(-1)
    if not bool(torch.isfinite(s + z.sum(-1)).all()):
        raise _reject(state, w, y)
    ell = a / s.unsqueeze(-1)
    G_new = G + z.unsqueeze(-1) * ell.unsqueeze(-2)
    return LMLState(G=G_new, Sigma=joseph_rank_one(Sigma, a, ell, s.unsqueeze(-1) * ell), noise=state.noise)


def _update_one(state: LMLState, w: torch.Tensor, y: torch.Tensor) -> LMLState:
    """:func:`update` for one model (batch shape ``()``): the same arithmetic with vector ops only,
    fewer tensor calls for the per-sample robot loop."""
    G, Sigma = state.G, state.Sigma
    a = Sigma @ w
    s = float(w @ a) + 1.0
    z = torch.addmv(state.noise.L_T @ y, G, w, alpha=-1.0)
    if not math.isfinite(s + float(z.sum())):
        raise _reject(state, w, y)
    ell = a * (1.0 / s)
    return LMLState(G=torch.addr(G, z, ell), Sigma=joseph_rank_one(Sigma, a, ell, s * ell), noise=state.noise)


def _checked_inputs(state: LMLState, w, y) -> tuple[torch.Tensor, torch.Tensor]:
    """``w``, ``y`` as tensors of the state's dtype/device; a clear error for shapes that do not fit."""
    w = _as_tensor(w, "feature vector w", state.G.dtype, state.G.device)
    y = _as_tensor(y, "measurement y", state.G.dtype, state.G.device)
    batch = state.batch_shape
    if w.shape[-1:] != (state.n_w,) or y.shape[-1:] != (state.n_y,):
        raise InvalidInputError(
            f"update expects w (*B, {state.n_w}) and y (*B, {state.n_y}), got "
            f"{tuple(w.shape)} and {tuple(y.shape)}"
        )
    if w.shape[:-1] == batch and y.shape[:-1] == batch:
        return w, y
    try:
        fits = torch.broadcast_shapes(w.shape[:-1], y.shape[:-1], batch) == batch
    except RuntimeError:
        fits = False
    if not fits:
        raise InvalidInputError(f"w {tuple(w.shape)} and y {tuple(y.shape)} do not fit the batch {batch}")
    return w, y


def predict_wrench(state: LMLState, w) -> torch.Tensor:
    """Predicted F/T reading ``ỹ = L⁻ᵀ Ĝ w`` (eq 2 with eq 5 undone).

    Args:
        state: belief with ``G`` ``(*B, n_y, n_w)``.
        w: ``(*B, n_w)`` feature vectors [feature units].

    Returns:
        ``(*B, n_y)`` wrench [N, N·m] in the F/T sensor frame.
    """
    w = _as_tensor(w, "feature vector w", state.G.dtype, state.G.device)
    if w.shape[-1:] != (state.n_w,):
        raise InvalidInputError(f"feature vector w must end in n_w = {state.n_w}, got {tuple(w.shape)}")
    return (state.G_wrench @ w.unsqueeze(-1)).squeeze(-1)
