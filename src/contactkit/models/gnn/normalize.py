"""Running normalisation statistics, kept as model buffers so that they are saved with the weights.

Paper §III-D.a: "All inputs/outputs are normalized during training." Each feature set (node and edge
features of every type) and each target (vertex accelerations, force, torque) has its own per-column
mean and standard deviation, accumulated from the training batches (MeshGraphNets-style) in float64.
"""

from __future__ import annotations

import torch
from torch import nn

from contactkit.errors import InvalidInputError

STD_EPSILON = 1e-8
"""Floor on a standard deviation, in the units of the feature, so that a constant column maps to 0."""


class RunningNormalizer(nn.Module):
    """Per-column ``(x - mean) / std`` with statistics accumulated by :meth:`update`.

    Args:
        dim: number of columns ``D``.

    Buffers (saved in checkpoints): ``count`` () float64, ``total`` (D,) and ``total_sq`` (D,) float64 sums.
    With no data yet the map is the identity.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.dim = int(dim)
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("total", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("total_sq", torch.zeros(dim, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Add the rows of ``x`` (N, D) to the statistics."""
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise InvalidInputError(f"normalizer of width {self.dim} got a batch of shape {tuple(x.shape)}")
        x64 = x.detach().to(torch.float64)
        self.count += x64.shape[0]
        self.total += x64.sum(dim=0)
        self.total_sq += (x64 * x64).sum(dim=0)

    def mean(self) -> torch.Tensor:
        """Column means (D,) float64; zeros before any update."""
        return self.total / self.count.clamp(min=1.0)

    def std(self) -> torch.Tensor:
        """Column standard deviations (D,) float64, at least ``STD_EPSILON``; ones before any update."""
        if self.count.item() == 0:
            return torch.ones_like(self.total)
        var = self.total_sq / self.count - self.mean() ** 2
        return var.clamp(min=0.0).sqrt().clamp(min=STD_EPSILON)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised ``x`` (N, D), in the dtype of ``x``."""
        return ((x.to(torch.float64) - self.mean()) / self.std()).to(x.dtype)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """Map normalised values ``y`` (N, D) back to feature units, in the dtype of ``y``."""
        return (y.to(torch.float64) * self.std() + self.mean()).to(y.dtype)
