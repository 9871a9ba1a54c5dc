"""Hard-example mining at the mating part's nodes, and warm starts, for the depth networks' L-BFGS refinement
(issue 16: the bar is the MAX error at the mating part's nodes, in the ±0.5 mm band).

The mating part's nodes (e.g. the nut's vertices on the bolt) occupy a thin region of the static part's feature
space: for a screwed nut, each vertex keeps its helical phase φ and radius r at every turn, so the nodes lie
near a few (r, φ) curves × z, smeared by the play. Samples drawn around the static part's whole surface cover
that region thinly where the field is hardest (a thread's chamfered end). Mining: after Adam, draw the mating
part's nodes at ``mate_poses`` random poses of the fit (a preset's sampler, with its own random stream so that
the Adam phase is unchanged), keep those within ``fit_band`` of the surface, evaluate the network there against
the exact signed distance, and add the ``mine_worst`` worst-fitted and ``mine_random`` others drawn at random to
the refinement's samples (:func:`contactkit.depth.training.refine`, a power-p loss: the worst errors dominate).
The same nodes can also join the Adam phase's samples from the start (:func:`mate_samples`, from scratch: the
network then spends its capacity on them from the first step, and the hard-example half of each batch keeps
drawing the worst-fitted of them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from contactkit.depth.coordinates import features_numpy
from contactkit.depth.network import DepthNet, mlp
from contactkit.errors import CheckpointError, InvalidInputError

MINE_STREAM = 16
"""Second word of the ``np.random.default_rng([seed, MINE_STREAM])`` stream the mining draws from (the samples
and Adam's batches keep theirs)."""
ADAM_STREAM = 17
"""Second word of the stream :func:`mate_samples` draws from (the Adam phase's mate nodes)."""
MINE_CHUNK = 200_000
"""Nodes evaluated at a time while mining."""
DOMAIN_TOL = 1e-12
"""Relative tolerance on a warm-start network's domain bounds."""

MateSampler = Callable[[np.random.Generator, int], np.ndarray]
"""``sampler(rng, poses) -> (N, 3)`` part-frame positions [m] of the mating part's nodes at ``poses`` poses."""


def warm_start(net: DepthNet, setup, mesh_sha: str, dtype: torch.dtype) -> list[torch.Tensor]:
    """The weights of ``net`` as leaf tensors in ``dtype``, to continue training from.

    Raises:
        CheckpointError: ``net`` was trained on another mesh (``mesh_sha``), in other coordinates or on
            another domain or output scale than ``setup`` (:class:`contactkit.depth.training.DepthSetup`).
    """
    f = setup.frame
    same = (net.mesh_sha256 == mesh_sha and net.coordinates is f.coordinates
            and net.feature_lo.shape == setup.feature_lo.shape
            and np.allclose(net.feature_lo, setup.feature_lo, rtol=DOMAIN_TOL, atol=0)
            and np.allclose(net.feature_hi, setup.feature_hi, rtol=DOMAIN_TOL, atol=0)
            and net.depth_scale == setup.depth_scale and net.pitch == f.pitch and net.handedness == f.handedness
            and all(np.array_equal(a, b) for a, b in ((net.origin, f.origin), (net.axis, f.axis), (net.ref, f.ref))))
    if not same:
        raise CheckpointError(f"initial network of {net.part_name!r} ({net.coordinates.value}, domain "
                              f"{net.feature_lo.tolist()}..{net.feature_hi.tolist()}) does not match this part's "
                              f"mesh, coordinates, domain and output scale ({f.coordinates.value}, "
                              f"{setup.feature_lo.tolist()}..{setup.feature_hi.tolist()})")
    return [torch.as_tensor(w, dtype=dtype).clone().requires_grad_(True) for w in net.weights]


def mined_samples(params, setup, part, sampler: MateSampler | None, poses: int, worst: int, random: int,
                  fit_band: float, seed: int, scaled: Callable[[np.ndarray], np.ndarray],
                  exact: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict]:
    """Mate-node samples for the refinement (module docstring).

    Args:
        params: the network's current weight tensors; setup: its ``DepthSetup``; part: the static part.
        sampler: the mating part's node sampler (None: refused when ``poses`` > 0).
        poses, worst, random: poses drawn; worst-fitted nodes kept; other nodes kept at random.
        fit_band: [m] nodes farther from the surface are dropped; seed: the training seed.
        scaled: features → scaled inputs ``(N, 3) -> (N, k)``; exact: ``(N, 3) -> (N,)`` exact signed distance [m].

    Returns:
        ``(points (M, 3), exact (M,), stats)``; ``stats``: candidate count and their max/RMS error before [µm].
    """
    if sampler is None:
        raise InvalidInputError(f"mate_poses {poses}: part {part.name!r} has no mating part's node sampler "
                                "(only the m48-bolt preset has one)")
    rng = np.random.default_rng([seed, MINE_STREAM])
    nodes, d = _candidates(setup, sampler, rng, poses, fit_band, exact)
    err = np.empty(len(nodes))
    with torch.no_grad():
        for s in range(0, len(nodes), MINE_CHUNK):
            x = torch.as_tensor(scaled(nodes[s:s + MINE_CHUNK]), dtype=params[0].dtype)
            err[s:s + MINE_CHUNK] = np.abs(mlp(params, x, setup.depth_scale).to(torch.float64).numpy()
                                           - d[s:s + MINE_CHUNK])
    order = np.argsort(-err, kind="stable")
    rest = order[worst:]
    pick = np.concatenate([order[:worst], rng.choice(rest, min(random, len(rest)), replace=False)])
    stats = {"mate_candidates": int(len(nodes)),
             "mate_max_err_before_um": float(err.max() * 1e6) if len(err) else None,
             "mate_rms_err_before_um": float(np.sqrt(np.mean(err**2)) * 1e6) if len(err) else None}
    return nodes[pick], d[pick], stats


def _candidates(setup, sampler: MateSampler, rng: np.random.Generator, poses: int, fit_band: float,
                exact: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes (M, 3), exact (M,))``: the mating part's nodes at ``poses`` poses inside the domain of ``setup``
    and within ``fit_band`` [m] of the surface."""
    nodes = sampler(rng, poses)
    f = features_numpy(setup.frame, nodes)
    nodes = nodes[((f >= setup.feature_lo) & (f <= setup.feature_hi)).all(axis=1)]
    d = exact(nodes)
    near = np.abs(d) <= fit_band
    return nodes[near], d[near]


def mate_samples(setup, part, sampler: MateSampler | None, poses: int, n: int, fit_band: float, seed: int,
                 exact: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` of the mating part's nodes, drawn at random among those at ``poses`` random poses of the fit
    that lie in the domain and within ``fit_band`` [m] of the surface, for the Adam phase's samples (module
    docstring); from the ``[seed, ADAM_STREAM]`` stream, so the other samples and the mining are unchanged.

    Returns:
        ``(points (M, 3) [m] part frame, exact signed distance (M,) [m])``, ``M = min(n, candidates)``.

    Raises:
        InvalidInputError: ``sampler`` is None.
    """
    if sampler is None:
        raise InvalidInputError(f"adam_mate_poses {poses}: part {part.name!r} has no mating part's node sampler "
                                "(only the m48-bolt preset has one)")
    rng = np.random.default_rng([seed, ADAM_STREAM])
    nodes, d = _candidates(setup, sampler, rng, poses, fit_band, exact)
    pick = rng.choice(len(nodes), min(n, len(nodes)), replace=False)
    return nodes[pick], d[pick]
