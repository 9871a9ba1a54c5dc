"""The depth network's two hidden layers in numba (tight-tolerance paper §V-B: ``h1 = relu(W0 x̂ + b0)``,
``h2 = relu(W1 h1 + b1)``, output ``W2 h2 + b2``) and their analytic backward pass, on one thread: the passes of
:func:`contactkit.engine._kernels_depthnet.evaluate` over a chunk of nodes, with the 64 × 64 layer as a blocked
product (:func:`_product`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def _product(a, bt, c):
    """``c = a @ btᵀ`` for ``a (M, H)`` with ``M ≥ 4``, ``bt (W, H)`` with ``W`` even: each entry a dot product of
    two contiguous rows, in blocks of four rows of ``a`` by two rows of ``bt`` (eight sums in registers, each
    loaded value used two or four times); the last block overlaps the one before when ``M`` is not a multiple of
    four, so every row is computed by the same instructions wherever it sits (a node's depth does not depend on
    which nodes share its chunk). ``fastmath`` vectorises each sum: entries differ from a sequential sum by
    round-off (~1e-15 relative). 1.6–1.8× faster than the four-row outer-product loop it replaces on a
    128 × 64 × 64 product (measured, one thread). Not ``np.dot``: numba's goes to BLAS, whose threads on these
    small products made a step 8 times slower on the shared machine than one thread (measured)."""
    m, n, w = a.shape[0], a.shape[1], bt.shape[0]
    for block in range((m + 3) // 4):
        p = min(4 * block, m - 4)
        for i in range(0, w, 2):
            s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = 0.0
            for j in range(n):
                y0, y1 = bt[i, j], bt[i + 1, j]
                x = a[p, j]
                s00 += x * y0
                s01 += x * y1
                x = a[p + 1, j]
                s10 += x * y0
                s11 += x * y1
                x = a[p + 2, j]
                s20 += x * y0
                s21 += x * y1
                x = a[p + 3, j]
                s30 += x * y0
                s31 += x * y1
            c[p, i], c[p, i + 1], c[p + 1, i], c[p + 1, i + 1] = s00, s01, s10, s11
            c[p + 2, i], c[p + 2, i + 1], c[p + 3, i], c[p + 3, i + 1] = s20, s21, s30, s31


@njit(cache=True)
def _times_t(a, bt, c):
    """:func:`_product` ``c = a @ btᵀ`` for any number of rows: fewer than four are zero-padded to a block."""
    m = a.shape[0]
    if m >= 4:
        _product(a, bt, c)
    elif m > 0:
        pad, out = np.zeros((4, a.shape[1])), np.empty((4, bt.shape[0]))
        pad[:m] = a
        _product(pad, bt, out)
        c[:m] = out[:m]


@njit(cache=True)
def _forward(ds, s, xhat, h1, h2, out):
    """Hidden layers ``h1, h2 (M, H)`` (written, after the ReLU) and the pre-tanh output ``out (M,)`` (written) of
    network ``s`` of ``ds`` (:class:`~contactkit.engine._kernels_depthnet.DepthSet`) at scaled inputs
    ``xhat (M, F)``; the 64 × 64 layer by :func:`_times_t`."""
    w0, b0, b1, w2 = ds.w0[s], ds.b0[s], ds.b1[s], ds.w2[s]
    m, n_hidden = xhat.shape[0], w0.shape[0]
    for p in range(m):
        for j in range(n_hidden):
            acc = b0[j]
            for i in range(xhat.shape[1]):
                acc += w0[j, i] * xhat[p, i]
            h1[p, j] = max(acc, 0.0)
    _times_t(h1, ds.w1[s], h2)  # h1 W1ᵀ
    for p in range(m):
        acc = ds.b2[s]
        for j in range(n_hidden):
            v = max(h2[p, j] + b1[j], 0.0)
            h2[p, j] = v
            acc += w2[j] * v
        out[p] = acc


@njit(cache=True)
def _backward(ds, s, h1, h2, slope, g2, g1):
    """``g1 (M, H)`` (written) = ``∂d/∂(W0 x̂ + b0)``: ``slope (M,)`` ``= scale (1 - t²)`` through ``W2``, the
    ReLU masks and ``W1`` (:func:`_times_t`); ``g2 (M, H)``: scratch."""
    w2 = ds.w2[s]
    m, n_hidden = h1.shape[0], h1.shape[1]
    for p in range(m):
        for j in range(n_hidden):
            g2[p, j] = slope[p] * w2[j] if h2[p, j] > 0.0 else 0.0
    _times_t(g2, ds.w1t[s], g1)  # g2 W1
    for p in range(m):
        for j in range(n_hidden):
            if h1[p, j] <= 0.0:
                g1[p, j] = 0.0
