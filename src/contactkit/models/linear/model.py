"""``LinearForceModel``: a thin, immutable convenience wrapper over the LML functions.

    model = LinearForceModel.fit(W, Y, R=R, rho=rho)    # W (N, n_w) features, Y (N, 6) F/T log
    y_hat = model.predict(W_new)                          # (M, 6) predicted wrenches [N, N·m]
    model = model.update(w, y)                            # one online step (predict with Q, update)

Every method returns a new model; the wrapped :class:`LMLState` is never modified.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear.fast import fast_predict, fast_update, from_fast, to_fast
from contactkit.models.linear.kalman import (
    DEFAULT_DTYPE,
    DEFAULT_PRIOR_WEIGHT,
    LMLState,
    _as_tensor,
    init_state,
    predict,
    sensor_noise,
    update,
)
from contactkit.models.linear.regularize import regularize


class Backend(enum.Enum):
    """Which implementation runs a sequence of updates (the arithmetic is the same)."""

    TORCH = "torch"
    """The batched torch functions of :mod:`kalman`, on the state's device."""
    NUMPY = "numpy"
    """The single-model BLAS path of :mod:`fast` (CPU, float64, batch shape ``()`` only)."""
    AUTO = "auto"
    """NUMPY when the model is a single float64 model on the CPU, else TORCH."""


@dataclass(frozen=True)
class LinearForceModel:
    """A linear contact-force model ``ỹ ≈ G̃ w`` (eq 2) learned online by LML.

    Attributes:
        state: the filter's belief (whitened ``Ĝ`` ``(*B, n_y, n_w)``, ``Σ``, sensor whitening).
        Q: process noise ``(n_w, n_w)`` or ``(*B, n_w, n_w)`` applied before every update (eq 11), or
            ``None`` for a stationary model.
    """

    state: LMLState
    Q: torch.Tensor | None = None

    @classmethod
    def create(
        cls,
        n_w: int,
        *,
        R=None,
        b=DEFAULT_PRIOR_WEIGHT,
        Q=None,
        n_y: int = 6,
        batch_shape: tuple[int, ...] = (),
        dtype: torch.dtype = DEFAULT_DTYPE,
        device=None,
    ) -> LinearForceModel:
        """An untrained model: prior of eq 16 with weights ``b``, sensor covariance ``R`` (n_y, n_y)."""
        noise = sensor_noise(R, n_y=n_y, dtype=dtype, device=device)
        state = init_state(n_w, b=b, noise=noise, batch_shape=batch_shape, dtype=dtype, device=device)
        if Q is not None:
            Q = _as_tensor(Q, "process noise Q", dtype, device)
            predict(state, Q)  # validates Q against the state
        return cls(state=state, Q=Q)

    @classmethod
    def fit(
        cls,
        features,
        wrenches,
        *,
        R=None,
        b=DEFAULT_PRIOR_WEIGHT,
        rho=None,
        Q=None,
        dtype: torch.dtype = DEFAULT_DTYPE,
        device=None,
        backend: Backend = Backend.AUTO,
    ) -> LinearForceModel:
        """Learn a model from a log: features ``(*B, N, n_w)``, wrenches ``(*B, N, n_y)`` [N, N·m].

        Runs Algorithm 1 over the N samples in order from the prior of eq 16 (weights ``b``), then, if
        ``rho`` is given, Algorithm 2 (adds ``‖G diag(ρ)‖²``). ``R`` (n_y, n_y) is the F/T noise
        covariance (default identity). With ``Q = None`` the result is the regularised least-squares
        solution of eq 6.
        """
        W = _as_tensor(features, "features", dtype, device)
        Y = _as_tensor(wrenches, "wrenches", dtype, device)
        if W.ndim < 2 or Y.ndim < 2 or W.shape[:-1] != Y.shape[:-1]:
            raise InvalidInputError(
                f"fit expects features (*B, N, n_w) and wrenches (*B, N, n_y) with equal "
                f"leading shapes, got {tuple(W.shape)} and {tuple(Y.shape)}"
            )
        model = cls.create(
            W.shape[-1],
            R=R,
            b=b,
            Q=Q,
            n_y=Y.shape[-1],
            batch_shape=tuple(W.shape[:-2]),
            dtype=dtype,
            device=device,
        )
        model = model.update_many(W, Y, backend=backend)
        return model if rho is None else model.regularize(rho)

    @property
    def G(self) -> torch.Tensor:
        """``(*B, n_y, n_w)`` model ``G̃`` in wrench units per feature unit (eq 2)."""
        return self.state.G_wrench

    def update(self, w, y) -> LinearForceModel:
        """One online step: predict with ``Q`` (eq 11), then update with ``w`` ``(*B, n_w)`` and the
        raw F/T reading ``y`` ``(*B, n_y)`` [N, N·m] (eqs 12–15). NaN/Inf → InvalidInputError."""
        return replace(self, state=update(predict(self.state, self.Q), w, y))

    def update_many(self, features, wrenches, *, backend: Backend = Backend.AUTO) -> LinearForceModel:
        """Apply :meth:`update` to the samples ``(*B, N, n_w)`` / ``(*B, N, n_y)`` in order.

        Raises:
            InvalidInputError: naming the first sample that holds a NaN/Inf (nothing is applied).
        """
        st = self.state
        W = _as_tensor(features, "features", st.G.dtype, st.G.device)
        Y = _as_tensor(wrenches, "wrenches", st.G.dtype, st.G.device)
        if W.shape[:-1] != Y.shape[:-1] or W.shape[-1] != st.n_w or Y.shape[-1] != st.n_y or W.ndim < 2:
            raise InvalidInputError(
                f"update_many expects (*B, N, {st.n_w}) and (*B, N, {st.n_y}), "
                f"got {tuple(W.shape)} and {tuple(Y.shape)}"
            )
        bad = ~(torch.isfinite(W).all(-1) & torch.isfinite(Y).all(-1))
        if bool(bad.any()):
            k = int(torch.nonzero(bad.reshape(-1, bad.shape[-1]).any(0))[0])
            raise InvalidInputError(f"sample {k} of the log contains NaN or Inf; nothing was applied")
        single_cpu = st.batch_shape == () and st.G.device.type == "cpu" and st.G.dtype == torch.float64
        if backend is Backend.NUMPY and not single_cpu:
            raise InvalidInputError("Backend.NUMPY runs one float64 model on the CPU only")
        if backend is Backend.NUMPY or (backend is Backend.AUTO and single_cpu):
            fast = to_fast(st)
            Q = None if self.Q is None else np.asfortranarray(self.Q.cpu().numpy())
            for w, y in zip(W.numpy(), Y.numpy(), strict=True):
                fast = fast_update(fast_predict(fast, Q), w, y)
            return replace(self, state=from_fast(fast, dtype=st.G.dtype, device=st.G.device))
        for k in range(W.shape[-2]):
            st = update(predict(st, self.Q), W[..., k, :], Y[..., k, :])
        return replace(self, state=st)

    def regularize(self, rho) -> LinearForceModel:
        """Algorithm 2: add ``‖G diag(ρ)‖²`` (ρ ``(n_w,)`` or ``(*B, n_w)``, ≥ 0) to the cost."""
        return replace(self, state=regularize(self.state, rho))

    def predict(self, features):
        """Predicted wrenches ``(…, n_y)`` [N, N·m] for features ``(…, n_w)`` (eq 2).

        For one model, any leading shape; for a batch of models ``*B``, features ``(*B, N, n_w)``.
        numpy in → numpy out; torch in → torch out (on the model's device).
        """
        is_numpy = not isinstance(features, torch.Tensor)
        W = _as_tensor(features, "features", self.state.G.dtype, self.state.G.device)
        if W.shape[-1:] != (self.state.n_w,):
            raise InvalidInputError(f"features must end in n_w = {self.state.n_w}, got {tuple(W.shape)}")
        out = W @ self.G.mT
        return out.cpu().numpy() if is_numpy else out
