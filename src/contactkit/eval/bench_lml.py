"""Benchmark of Linear Model Learning (LML): single-model updates per second and closed-form accuracy.

For each feature length n_w ∈ SIZES (n_y = 6) one model is updated one sample at a time, as a robot
loop does, on one CPU core (torch and OpenBLAS limited to one thread for the measurement):

* ``updates_per_s`` — the LML filter, numpy + BLAS single-model path (``fast_update``), CPU;
* ``torch_updates_per_s`` — the same filter through the batched torch functions (``update``) on
  ``device`` (batch shape ``()``);
* ``rls_updates_per_s`` — conventional recursive least squares (``rls_update``), CPU;
* ``resolve_updates_per_s`` — accumulate the normal equations and re-solve them by Cholesky at every
  sample (``resolve_update``), CPU.

All four solve the same problem (eq 6 with the prior of eq 16, Q = 0, correlated sensor noise R).
``closed_form_max_rel_err`` is the largest relative Frobenius error, over n_w and both LML paths, of
the filter's ``G̃`` against the closed-form solution on the samples it consumed.

Run: ``contactkit benchmark lml [--quick] [--device cuda] [--json out.json]``.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch

from contactkit.eval import progress
from contactkit.models.linear import (
    DEFAULT_PRIOR_WEIGHT,
    fast_update,
    init_state,
    resolve_init,
    resolve_update,
    rls_init,
    rls_update,
    sensor_noise,
    to_fast,
    update,
)

SIZES = (19, 50, 100, 200, 500)
"""Feature lengths n_w measured."""

N_Y = 6
"""Measurement length (a wrench)."""

SEED = 0
"""Seed of the synthetic data."""

WARMUP = 20
"""Least number of updates run before the clock starts."""

WARMUP_S = 0.1
"""Least time [s] of updates run before the clock starts (caches, clock frequency, lazy init)."""

BUDGET_S = {True: 0.25, False: 2.0}
"""Seconds of timed updates per method and n_w (quick, full)."""

MIN_SAMPLES_PER_FEATURE = 2
"""Least number of updates, per feature, before a recursive method's accuracy is compared."""

DATA_ELEMENTS = 4_000_000
"""Feature-matrix size that bounds the number of samples generated per n_w."""

_OPENBLAS_THREADS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


@contextlib.contextmanager
def one_core() -> Iterator[bool]:
    """Limit torch and every loaded OpenBLAS to one thread; restore afterwards. Yields whether the
    OpenBLAS limit could be applied (Linux, libraries found)."""
    torch_threads = torch.get_num_threads()
    restore: list[tuple[Callable, int]] = []
    try:
        with open("/proc/self/maps") as f:
            paths = sorted(
                {line.split()[-1] for line in f if "openblas" in line and line.split()[-1].startswith("/")}
            )
    except OSError:
        paths = []
    for path in paths:
        lib = ctypes.CDLL(path)
        for get, put in _OPENBLAS_THREADS:
            if hasattr(lib, get) and hasattr(lib, put):
                restore.append((getattr(lib, put), getattr(lib, get)()))
                getattr(lib, put)(1)
    torch.set_num_threads(1)
    try:
        yield bool(restore)
    finally:
        torch.set_num_threads(torch_threads)
        for put, n in restore:
            put(n)


def make_problem(n_w: int, n: int, rng: np.random.Generator):
    """Correlated sensor noise R (6, 6), features W (n, n_w) with a bias column, noisy wrenches Y."""
    A = rng.normal(size=(N_Y, N_Y))
    R = 0.01 * (A @ A.T + 0.1 * np.eye(N_Y))
    W = rng.normal(size=(n, n_w))
    W[:, -1] = 1.0
    G_true = rng.normal(size=(N_Y, n_w)) * 10.0
    Y = W @ G_true.T + rng.multivariate_normal(np.zeros(N_Y), R, size=n)
    return R, W, Y


def timed(
    step: Callable, state, rows_w: list, rows_y: list, budget_s: float, device: str, min_updates: int = 0
):
    """Run ``state = step(state, w, y)`` over the rows until ``budget_s`` is spent and at least
    ``min_updates`` were done (or the rows run out); returns (updates/s, final state, updates done)."""
    t_warm, k = time.perf_counter(), 0
    while k < WARMUP or time.perf_counter() - t_warm < WARMUP_S:
        step(state, rows_w[k % WARMUP], rows_y[k % WARMUP])
        k += 1
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    t0 = time.perf_counter()
    k = 0
    for w, y in zip(rows_w, rows_y, strict=True):
        state = step(state, w, y)
        k += 1
        if (k & 15) == 0 and k >= min_updates and time.perf_counter() - t0 > budget_s:
            break
    sync()
    return k / (time.perf_counter() - t0), state, k


def closed_form(W: np.ndarray, Y: np.ndarray, b: float) -> np.ndarray:
    """G̃ = Yᵀ W (WᵀW + b² I)⁻¹, the minimiser of eq 6 with the prior of eq 16 (in wrench units)."""
    return np.linalg.solve(W.T @ W + b**2 * np.eye(W.shape[1]), W.T @ Y).T


def rel_err(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


def measure(n_w: int, quick: bool, device: str, rng: np.random.Generator) -> dict:
    """All four methods for one n_w: (updates/s, closed-form relative error). The recursive methods run
    at least ``MIN_SAMPLES_PER_FEATURE · n_w`` updates so that the closed form they are compared with
    is well conditioned; re-solve, O(n_w³) per update, reports its error only when it got that far."""
    budget, b = BUDGET_S[quick], DEFAULT_PRIOR_WEIGHT
    k_min = MIN_SAMPLES_PER_FEATURE * n_w
    n = max(2 * k_min + WARMUP, min(200_000, DATA_ELEMENTS // n_w))
    R, W, Y = make_problem(n_w, n, rng)
    noise = sensor_noise(R)
    rows_w, rows_y = list(W), list(Y)
    out = {}
    rate, st, k = timed(
        fast_update, to_fast(init_state(n_w, b=b, noise=noise)), rows_w, rows_y, budget, "cpu", k_min
    )
    out["numpy"] = (rate, rel_err(st.G_wrench, closed_form(W[:k], Y[:k], b)))
    Wt = torch.as_tensor(W, device=device)
    Yt = torch.as_tensor(Y, device=device)
    st0 = init_state(n_w, b=b, noise=sensor_noise(R, device=device), device=device)
    rate, st, k = timed(update, st0, list(Wt.unbind(0)), list(Yt.unbind(0)), budget, device, k_min)
    out["torch"] = (rate, rel_err(st.G_wrench.cpu().numpy(), closed_form(W[:k], Y[:k], b)))
    rate, st, k = timed(rls_update, rls_init(n_w, noise, b=b), rows_w, rows_y, budget, "cpu", k_min)
    out["rls"] = (rate, rel_err(st.G_wrench, closed_form(W[:k], Y[:k], b)))
    rate, st, k = timed(resolve_update, resolve_init(n_w, noise, b=b), rows_w, rows_y, budget, "cpu")
    out["resolve"] = (rate, rel_err(st.G_wrench, closed_form(W[:k], Y[:k], b)) if k >= k_min else None)
    return out


def run(quick: bool, seed: int = SEED, device: str = "cpu") -> dict:
    """Measure LML, RLS and re-solve updates/s for n_w in SIZES on one core; see the module docstring.

    Returns a dict with ``closed_form_max_rel_err``, ``updates_per_s``, ``torch_updates_per_s``,
    ``rls_updates_per_s``, ``resolve_updates_per_s`` (dicts keyed by n_w as a string), the per-method
    closed-form errors, ``device`` and ``torch_threads``.
    """
    rng = np.random.default_rng(seed)
    with one_core() as blas_limited:
        threads = torch.get_num_threads()
        results = {str(n_w): measure(n_w, quick, device, rng) for n_w in progress.track(SIZES, "feature sizes")}

    def col(method: str, i: int) -> dict:
        return {n_w: r[method][i] for n_w, r in results.items()}

    lml_errs = [r[m][1] for r in results.values() for m in ("numpy", "torch")]
    return {
        "closed_form_max_rel_err": max(lml_errs),
        "updates_per_s": col("numpy", 0),
        "torch_updates_per_s": col("torch", 0),
        "rls_updates_per_s": col("rls", 0),
        "resolve_updates_per_s": col("resolve", 0),
        "closed_form_rel_err": {m: col(m, 1) for m in ("numpy", "torch", "rls", "resolve")},
        "device": str(device),
        "torch_threads": threads,
        "blas_threads_limited_to_one": blas_limited,
        "prior_weight_b": DEFAULT_PRIOR_WEIGHT,
        "budget_s_per_measurement": BUDGET_S[quick],
        "quick": quick,
    }
