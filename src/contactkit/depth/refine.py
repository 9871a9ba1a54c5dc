"""The depth network's training loss and its full-batch L-BFGS refinement (tight-tolerance paper §III-A; the
training loop is :mod:`contactkit.depth.training`).

Loss: squared error for samples within ``fit_band`` of the surface, and for farther ones a hinge that only asks the
output to lie beyond ``±fit_band`` on the right side, in units of :data:`LOSS_UNIT`. The refinement minimises the
same terms raised to a higher power on the whole sample set in float64 (the largest errors dominate).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from contactkit.depth.network import mlp

if TYPE_CHECKING:
    from contactkit.depth.training import TrainConfig

__all__ = ["LOSS_UNIT", "REFINE_CHUNK", "REFINE_HISTORY", "refine"]

LOSS_UNIT = 1e-5
"""[m] the loss is minimised in units of LOSS_UNIT² so that its gradients are O(1) at µm errors: in m² they fall
to ~1e-9, below Adam's ε = 1e-8, where Adam no longer normalises its steps. Measured on the paper hole (together
with fit_band 3 → 1 mm): 15k steps reached a 6.4 µm max error at the peg's nodes, where 30k steps in m² had
stalled at 11.6 µm."""
REFINE_HISTORY = 50
"""Curvature pairs kept by the L-BFGS refinement (:func:`refine`)."""
REFINE_CHUNK = 100
"""L-BFGS iterations between two progress reports."""


def refine(params, x: torch.Tensor, y: torch.Tensor, scale: float, config: TrainConfig,
           progress: Callable[[int, float], None] | None = None) -> tuple[list[torch.Tensor], float]:
    """Full-batch L-BFGS (strong-Wolfe line search, float64) of the network's ``params`` on all samples ``x``
    (scaled inputs, ``(M, k)``) and ``y`` (signed distance [m], ``(M,)``) for ``config.refine_steps``
    iterations, on the loss of :func:`_loss` with the errors in :data:`LOSS_UNIT` raised to
    ``config.refine_power``. Adam's minibatch noise leaves the fit on a plateau; small MLPs go well below it
    with a quasi-Newton method on the whole set. ``progress(step, loss [m²-equivalent])`` continues Adam's
    step count.

    Returns:
        ``(params, loss)``: float64 leaf tensors and the final loss as ``(mean |e|^p)^(2/p)`` [m²].
    """
    params = [p.detach().to(torch.float64).requires_grad_(True) for p in params]
    x, y = x.to(torch.float64), y.to(torch.float64)
    power = config.refine_power
    opt = torch.optim.LBFGS(params, lr=1.0, history_size=REFINE_HISTORY, tolerance_grad=0.0, tolerance_change=0.0,
                            line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = _loss(mlp(params, x, scale), y, config.fit_band, power, LOSS_UNIT)
        loss.backward()
        return loss

    done, loss = 0, math.nan
    while done < config.refine_steps:
        chunk = min(REFINE_CHUNK, config.refine_steps - done)
        opt.param_groups[0].update(max_iter=chunk, max_eval=chunk * 5 // 4 + 1)
        opt.step(closure)
        done += chunk
        with torch.no_grad():
            loss = float(_loss(mlp(params, x, scale), y, config.fit_band, power, LOSS_UNIT)) ** (2 / power)
            loss *= LOSS_UNIT**2
        if progress is not None:
            progress(config.steps + done, loss)
    return params, loss


def _loss(pred: torch.Tensor, target: torch.Tensor, fit_band: float, power: int = 2,
          unit: float = 1.0) -> torch.Tensor:
    """Mean of ``(|error| / unit) ** power`` within ``fit_band`` of the surface and of the hinge beyond (module
    docstring); the squared error in m² by default."""
    near = target.abs() <= fit_band
    hinge = torch.relu(fit_band - torch.sign(target) * pred)
    return torch.mean(torch.where(near, (pred - target).abs() / unit, hinge / unit) ** power)
