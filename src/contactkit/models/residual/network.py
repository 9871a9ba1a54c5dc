"""The residual's network: an ensemble of small MLPs with input/target normalisation and an uncertainty gate.

``E`` members share one set of batched weights (``(E, in, out)`` matrices, one ``baddbmm`` per layer), so the whole
ensemble costs one forward pass of a wider network. The correction returned is the members' mean times a gate
``g ∈ [0, 1]`` (Lakshminarayanan et al. 2017 for the ensemble as an uncertainty estimate; the gate is what makes the
model "never worse than the physics" where its data end):

* disagreement: ``u`` = mean over the target's components of the members' standard deviation, in normalised
  units; ``g_u = clip((GATE_FALLOFF·u_cal − u) / ((GATE_FALLOFF − 1)·u_cal), 0, 1)`` — 1 up to ``u_cal``, 0 from
  ``GATE_FALLOFF·u_cal`` on, with ``u_cal`` the :data:`GATE_QUANTILE` quantile of ``u`` on validation data;
* coverage: ``r`` = the largest ratio of a normalised input to the largest magnitude that input had in training;
  ``g_r = clip((GATE_FALLOFF − r) / (GATE_FALLOFF − 1), 0, 1)``;
* ``g = g_u · g_r``: the backbone's own prediction is returned where either says the input is unlike the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["GATE_FALLOFF", "GATE_QUANTILE", "NetConfig", "ResidualNet"]

GATE_QUANTILE = 0.99
"""Quantile of the validation disagreement up to which a correction is applied in full."""
GATE_FALLOFF = 2.0
"""Multiple of the calibrated disagreement (and of the training input range) at which the gate reaches zero."""
STD_FLOOR = 1e-8
"""Smallest normalisation scale (a constant input or target is not divided by zero)."""


@dataclass(frozen=True)
class NetConfig:
    """Sizes of the ensemble.

    Attributes:
        in_dim, out_dim: feature and target lengths.
        hidden: width of each hidden layer; layers: hidden layers per member; members: ensemble size ``E``.
    """

    in_dim: int
    out_dim: int
    hidden: int = 128
    layers: int = 2
    members: int = 5


class ResidualNet(nn.Module):
    """``E`` MLPs (SiLU) on normalised features; outputs in target units (see the module docstring).

    Buffers (saved with the weights): ``in_mean, in_std (in_dim,)``, ``in_absmax (in_dim,)`` (largest normalised
    magnitude seen in training), ``out_mean, out_std (out_dim,)``, ``u_cal ()`` (gate calibration; 0: gate off).
    """

    def __init__(self, config: NetConfig):
        super().__init__()
        self.config = config
        dims = [config.in_dim] + [config.hidden] * config.layers + [config.out_dim]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            w = torch.empty(config.members, a, b)
            for e in range(config.members):
                nn.init.kaiming_uniform_(w[e].T, a=math.sqrt(5))
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(config.members, 1, b)))
        with torch.no_grad():  # every member starts at the targets' mean (zero before set_normalisation)
            self.weights[-1].zero_()
        for name, n in (("in_mean", config.in_dim), ("out_mean", config.out_dim)):
            self.register_buffer(name, torch.zeros(n))
        for name, n in (("in_std", config.in_dim), ("in_absmax", config.in_dim), ("out_std", config.out_dim)):
            self.register_buffer(name, torch.ones(n))
        self.register_buffer("u_cal", torch.zeros(()))

    def set_normalisation(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """Normalisation from training features ``x (N, in_dim)`` and targets ``y (N, out_dim)``."""
        with torch.no_grad():
            self.in_mean.copy_(x.mean(0))
            self.in_std.copy_(x.std(0).clamp_min(STD_FLOOR))
            self.in_absmax.copy_(((x - self.in_mean) / self.in_std).abs().amax(0).clamp_min(1.0))
            self.out_mean.copy_(y.mean(0))
            self.out_std.copy_(y.std(0).clamp_min(STD_FLOOR))

    def members_normalised(self, x: torch.Tensor) -> torch.Tensor:
        """Each member's output ``(E, B, out_dim)`` in normalised target units for features ``x (B, in_dim)``
        (every member reads the same rows) or ``(E, B, in_dim)`` (a batch per member, as in training)."""
        h = (x - self.in_mean) / self.in_std
        if h.dim() == 2:
            h = h.expand(self.config.members, -1, -1)
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b, h, w)
            if k < last:
                h = nn.functional.silu(h)
        return h

    def gate(self, x: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """The gate ``g (B,)`` for features ``x (B, in_dim)`` and member outputs ``(E, B, out_dim)``."""
        r = (((x - self.in_mean) / self.in_std).abs() / self.in_absmax).amax(-1)
        g = ((GATE_FALLOFF - r) / (GATE_FALLOFF - 1.0)).clamp(0.0, 1.0)
        if float(self.u_cal) > 0.0:
            u = members.std(0).mean(-1)
            cal = self.u_cal
            g = g * ((GATE_FALLOFF * cal - u) / ((GATE_FALLOFF - 1.0) * cal)).clamp(0.0, 1.0)
        return g

    def disagreement(self, x: torch.Tensor) -> torch.Tensor:
        """``u (B,)``: the members' mean standard deviation in normalised units (what :attr:`u_cal` calibrates);
        no gradient."""
        with torch.no_grad():
            return self.members_normalised(x).std(0).mean(-1)

    def forward(self, x: torch.Tensor, gated: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """``(correction (B, out_dim) in target units, gate (B,))``; ``gated=False`` returns the full mean."""
        members = self.members_normalised(x)
        g = self.gate(x, members) if gated else torch.ones(x.shape[0], dtype=x.dtype, device=x.device)
        mean = members.mean(0) * self.out_std + self.out_mean
        return mean * g[:, None], g
