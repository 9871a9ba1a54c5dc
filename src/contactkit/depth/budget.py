"""What a depth network's training costs, and the settings that fit a step count or a time budget (issue 34,
part 5: ``contactkit learn depth --steps N`` or ``--budget SECONDS`` bounds the whole run, not only Adam).

A run's cost (:func:`expected_seconds`) is the exact signed distance of its samples and of the accuracy points,
the Adam steps (a batch each, plus every ``hard_every`` steps a forward pass over all samples for the hard
examples) and the L-BFGS refinement (about :data:`LBFGS_EVALS` full-batch float64 passes per iteration). Its unit
costs are measured on this machine in a fraction of a second (:func:`measure_costs`).

The rule (:func:`scaled_config`): one factor ``s`` in (0, 1] scales the Adam steps, the samples (at least
:data:`MIN_SAMPLES`) and the refinement's iterations (and the hard-example mining's poses and nodes) of the
preset's settings together, so that a run of ``s`` of the preset's steps costs about ``s`` (samples × refinement:
up to ``s²``) of the full one. ``--steps N`` below the preset's ``S`` takes ``s = N / S``; ``--budget T`` the
largest ``s`` whose expected time is at most ``T`` (:func:`fit_budget`). A setting given explicitly is kept.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import torch

from contactkit.depth.training import DepthSetup, TrainConfig, uniform_samples
from contactkit.errors import InvalidInputError
from contactkit.geometry.part import Part
from contactkit.geometry.signed_distance import signed_distance

__all__ = ["LBFGS_EVALS", "MIN_SAMPLES", "SCALED", "CostModel", "expected_seconds", "fit_budget", "measure_costs",
           "scaled_config", "steps_config"]

MIN_SAMPLES = 2_000
"""The fewest training samples a scaled run draws (a 64-64 network has about 4.4k weights)."""
LBFGS_EVALS = 1.25
"""Full-batch evaluations per L-BFGS iteration (:func:`contactkit.depth.refine.refine` allows 5/4 per chunk)."""
SCALED = ("steps", "samples", "refine_steps", "mate_poses", "mine_worst", "mine_random", "adam_mate_poses",
          "adam_mate_nodes")
"""The :class:`TrainConfig` fields :func:`scaled_config` scales (the rest are kept)."""
PROBE_POINTS = 2_000
"""Points of each unit-cost measurement (:func:`measure_costs`)."""


@dataclass(frozen=True)
class CostModel:
    """Unit costs of a depth network's training on this machine [s] (:func:`measure_costs`).

    Attributes:
        distance: per point of the exact signed distance; adam_row: per batch row of an Adam step (forward,
            backward, update) in the run's dtype; forward_row: per sample of a forward pass in the run's dtype;
        refine_row: per sample of a float64 forward and backward pass (one L-BFGS evaluation).
    """

    distance: float
    adam_row: float
    forward_row: float
    refine_row: float


def _timed(fn, repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``fn()`` [s] (after one warm-up)."""
    fn()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _network_costs(k: int, scale: float, dtype: torch.dtype, device: str) -> tuple[float, float]:
    """``(Adam step, forward pass)`` [s] per row of a 64-64 network of ``k`` features, timed on
    :data:`PROBE_POINTS` rows of ``dtype`` on ``device``."""
    from contactkit.depth.network import HIDDEN, mlp

    x = torch.rand((PROBE_POINTS, k), dtype=dtype, device=device)
    w = [torch.randn(s, dtype=dtype, device=device).requires_grad_(True)
         for s in ((HIDDEN, k), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (1, HIDDEN), (1,))]
    opt = torch.optim.Adam(w)

    def step():
        opt.zero_grad()
        mlp(w, x, scale).square().mean().backward()
        opt.step()

    def forward():
        with torch.no_grad():
            mlp(w, x, scale)

    return _timed(step) / PROBE_POINTS, _timed(forward) / PROBE_POINTS


def measure_costs(part: Part, setup: DepthSetup, config: TrainConfig, device: str = "cpu") -> CostModel:
    """The :class:`CostModel` of training ``part``'s network with ``config`` on ``device``: each unit cost timed on
    :data:`PROBE_POINTS` points of the domain (about 0.2 s, a few seconds on the first torch use of a process)."""
    pts = uniform_samples(setup, PROBE_POINTS, np.random.default_rng(0))
    distance = _timed(lambda: signed_distance(part, pts), 1) / PROBE_POINTS
    k = len(setup.feature_lo)
    adam_row, forward_row = _network_costs(k, setup.depth_scale, getattr(torch, config.dtype), device)
    refine_row, _ = _network_costs(k, setup.depth_scale, torch.float64, device)
    return CostModel(distance, adam_row, forward_row, refine_row)


def expected_seconds(config: TrainConfig, cost: CostModel, eval_points: int = 0) -> float:
    """Expected wall time [s] of a run with ``config`` (module docstring) and ``eval_points`` accuracy points."""
    batch = min(config.batch, config.samples)
    adam = config.steps * (batch * cost.adam_row + config.samples / config.hard_every * cost.forward_row)
    refine = config.refine_steps * LBFGS_EVALS * config.samples * cost.refine_row
    return (config.samples + eval_points) * cost.distance + adam + refine


def scaled_config(config: TrainConfig, s: float, keep: Collection[str] = ()) -> TrainConfig:
    """``config`` with the fields of :data:`SCALED` not in ``keep`` multiplied by ``s`` in (0, 1] (module
    docstring): steps at least 1, samples at least :data:`MIN_SAMPLES` (or the preset's, if fewer), the others
    rounded down. ``s`` = 1 returns ``config`` itself."""
    if not 0 < s <= 1:
        raise InvalidInputError(f"scale factor must be in (0, 1], got {s!r}")
    if s == 1:
        return config
    floors = {"steps": 1, "samples": min(MIN_SAMPLES, config.samples)}
    changes = {name: max(floors.get(name, 0), math.floor(getattr(config, name) * s)) for name in SCALED
               if name not in keep}
    return dataclasses.replace(config, **changes)


def steps_config(config: TrainConfig, steps: int, keep: Collection[str] = ()) -> TrainConfig:
    """The preset's ``config`` for ``--steps steps``: scaled by ``steps / config.steps`` when that is in (0, 1)
    (:func:`scaled_config`), with exactly ``steps`` Adam steps; else only the steps replaced (0: a warm start's
    refinement only, whose settings stay as given)."""
    if 0 < steps < config.steps:
        config = scaled_config(config, steps / config.steps, keep)
    return dataclasses.replace(config, steps=steps)


def fit_budget(config: TrainConfig, cost: CostModel, budget_s: float, keep: Collection[str] = (),
               eval_points: int = 0) -> TrainConfig:
    """The largest scaling of ``config`` (:func:`scaled_config`, by bisection on ``s``) whose
    :func:`expected_seconds` is at most ``budget_s`` [s].

    Raises:
        InvalidInputError: a budget that is not finite and > 0, or below the smallest run's expected time.
    """
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise InvalidInputError(f"--budget must be finite and > 0 [s], got {budget_s!r}")
    if expected_seconds(config, cost, eval_points) <= budget_s:
        return config
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if mid > 0 and expected_seconds(scaled_config(config, mid, keep), cost, eval_points) <= budget_s:
            lo = mid
        else:
            hi = mid
    if lo == 0.0:
        smallest = expected_seconds(scaled_config(config, 1e-12, keep), cost, eval_points)
        raise InvalidInputError(f"--budget {budget_s:g} s is below the smallest run's expected {smallest:.1f} s")
    return scaled_config(config, lo, keep)
