"""Adaptive regularisation, Algorithm 2: add ``‖G diag(ρ)‖²`` to the LML cost at any time.

The regulariser is written as ``n_w`` fictitious scalar measurements ``zᵢ = ĝ⁽ʲ⁾[i] + rᵢ`` with
``zᵢ = 0`` and noise variance ``rᵢ = 1/ρᵢ²`` (eq 17). Because that noise is diagonal, the measurements
are applied one after another as scalar updates (sequential processing, Kailath et al. 2000), so no
matrix is inverted; each update is shared by all rows of ``Ĝ`` exactly as in Algorithm 1.

With ``Q = 0`` the result equals the closed-form solution with ``diag(ρ²)`` added to the information
matrix, whatever the moment at which it is applied. ``ρ`` acts on the whitened ``G = Lᵀ G̃`` of eq 5.
"""

from __future__ import annotations

import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear.kalman import LMLState, _as_tensor, joseph_rank_one


def regularize(state: LMLState, rho) -> LMLState:
    """Algorithm 2: sequential scalar updates that add ``Σᵢ ρᵢ² ‖Ĝ[:, i]‖²`` to the MAP cost.

    For each feature ``i`` (with ``c = eᵢ``, ``r = 1/ρᵢ²``): ``s = Σ[i, i] + r``, ``ℓ = Σ[:, i] / s``,
    ``Σ ← (I − ℓcᵀ) Σ (I − ℓcᵀ)ᵀ + r ℓℓᵀ`` (Joseph form, :func:`kalman.joseph_rank_one`) and
    ``Ĝ ← Ĝ − Ĝ[:, i] ℓᵀ``. The gain is evaluated as ``ℓ = ρ²/(ρ² Σ[i, i] + 1) · Σ[:, i]`` and
    ``sℓ = Σ[:, i]``, the same algebra multiplied through by ``ρ²``, so that ``ρᵢ = 0`` (``r = ∞``: no
    regularisation of feature ``i``) stays finite and leaves the state unchanged.

    Args:
        state: belief with ``G`` ``(*B, n_y, n_w)``, ``Sigma`` ``(*B, n_w, n_w)``.
        rho: scalar or ``(n_w,)`` / ``(*B, n_w)`` weights ρ ≥ 0 [whitened units per feature unit].

    Returns:
        The regularised belief (a new state).

    Raises:
        InvalidInputError: ``rho`` has a wrong shape, a NaN/Inf, or a negative entry.
    """
    G, Sigma = state.G, state.Sigma
    rho = _as_tensor(rho, "regularisation weights rho", G.dtype, G.device)
    if rho.ndim == 0:
        rho = rho.expand(state.n_w)
    if rho.shape[-1] != state.n_w:
        raise InvalidInputError(f"rho must end in n_w = {state.n_w}, got shape {tuple(rho.shape)}")
    if not bool(torch.isfinite(rho).all()) or bool((rho < 0).any()):
        raise InvalidInputError("regularisation weights rho must be finite and ≥ 0")
    try:
        rho = rho.expand(*state.batch_shape, state.n_w)
    except RuntimeError as exc:
        raise InvalidInputError(f"rho {tuple(rho.shape)} does not fit the batch {state.batch_shape}") from exc
    active = (rho != 0).reshape(-1, state.n_w).any(0).tolist()
    for i in range(state.n_w):
        if not active[i]:
            continue
        a = Sigma[..., :, i]
        p = Sigma[..., i, i]
        rho_i = rho[..., i]
        d = rho_i**2 * p + 1.0
        ell = a * (rho_i**2 / d).unsqueeze(-1)
        G = G - G[..., :, i : i + 1] * ell.unsqueeze(-2)
        Sigma = joseph_rank_one(Sigma, a, ell, a)
    return LMLState(G=G, Sigma=Sigma, noise=state.noise)
