"""Gradient checks of the differentiable step against central finite differences (paper §IV; DESIGN.md testing).

The step is seen as a function of one flat input vector around a base configuration,
``x = [δp (3) m, δφ (3) rad, v (3) m/s, ω (3) rad/s, δu_p (3) m, δu_φ (3) rad, θ (P)]`` (the orientation and the
reference orientation perturbed by world-frame rotation vectors, so every input lives in a vector space), and of one
flat output ``f = [y (6), p⁺ (3), quat⁺ (4), v⁺ (3), ω⁺ (3)]``. The autograd Jacobian is compared block by block with
the central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h``, all perturbations evaluated as one batch of the step
(each with its own collision query and LCP solve, so a switch of the feature pairs or of the active set within
``±h`` shows up as an error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from contactkit.engine.diff.rotations import rotate_by
from contactkit.engine.diff.step import DiffScene, StepConfig, diff_step

FD_STEP = 1e-6
"""Central-difference step ``h`` (in the units of each input: m, rad, m/s, rad/s, θ units): round-off ``~1e-16/h``
must stay small against the smallest blocks (the orientation's response to ``ω`` is ``~Δ/2``), and the feature
pairs and the LCP's active set must not switch within ``±h`` at a generic configuration."""

BLOCK_FLOOR = 1e-6
"""A Jacobian block whose largest finite-difference entry is below this is compared in absolute terms."""

INPUT_BLOCKS = ("position", "orientation", "lin_vel", "ang_vel", "target_position", "target_orientation", "theta")
OUTPUT_BLOCKS = {"wrench": slice(0, 6), "pos": slice(6, 9), "quat": slice(9, 13), "lin_vel": slice(13, 16),
                 "ang_vel": slice(16, 19)}


@dataclass(frozen=True)
class Configuration:
    """A base point of the step: state, reference pose and geometry (single problem, numpy).

    Attributes:
        pos: ``(3,)`` [m]. quat: ``(4,)``. lin_vel, ang_vel: ``(3,)`` [m/s, rad/s], world frame.
        target_pos: ``(3,)`` [m]. target_quat: ``(4,)``. theta: ``(P,)``.
    """

    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray
    target_pos: np.ndarray
    target_quat: np.ndarray
    theta: np.ndarray


@dataclass(frozen=True)
class GradCheck:
    """Outcome of :func:`check_step`.

    Attributes:
        analytic: ``(19, n_in)`` autograd Jacobian. numeric: ``(19, n_in)`` central differences.
        rel_err: ``{(output block, input block): relative error}`` over the blocks with a non-negligible entry.
        abs_err: the same for the negligible blocks (absolute error).
        toi: the base point's time of impact (1: no split). n_contacts: feature pairs at the base point.
    """

    analytic: np.ndarray
    numeric: np.ndarray
    rel_err: dict[tuple[str, str], float]
    abs_err: dict[tuple[str, str], float]
    toi: float
    n_contacts: int

    @property
    def max_rel_err(self) -> float:
        """Largest relative error over all blocks (0 when every block is negligible)."""
        return max(self.rel_err.values(), default=0.0)

    def finite(self) -> bool:
        """No NaN or Inf in the autograd Jacobian."""
        return bool(np.all(np.isfinite(self.analytic)))


def _evaluate(scene: DiffScene, cfg: StepConfig, base: Configuration, x: torch.Tensor):
    """Flat outputs ``(B, 19)`` of the step at the inputs ``x (B, 18 + P)`` around ``base``; also the step output."""
    n = x.shape[0]
    t = {k: torch.as_tensor(getattr(base, k), dtype=torch.float64).expand(n, -1) for k in base.__dataclass_fields__}
    out = diff_step(
        scene, cfg, t["pos"] + x[:, 0:3], rotate_by(x[:, 3:6], t["quat"]), x[:, 6:9], x[:, 9:12],
        t["target_pos"] + x[:, 12:15], rotate_by(x[:, 15:18], t["target_quat"]), t["theta"] + x[:, 18:],
    )
    return torch.cat([out.wrench, out.pos, out.quat, out.lin_vel, out.ang_vel], dim=-1), out


def _blocks(n_params: int) -> dict[str, slice]:
    sizes = [3, 3, 3, 3, 3, 3, n_params]
    starts = np.cumsum([0, *sizes])
    return {name: slice(int(starts[i]), int(starts[i + 1])) for i, name in enumerate(INPUT_BLOCKS)}


def check_step(scene: DiffScene, cfg: StepConfig, base: Configuration, h: float = FD_STEP) -> GradCheck:
    """Compare the autograd Jacobian of :func:`~contactkit.engine.diff.step.diff_step` with central differences.

    Args:
        scene, cfg: the step. base: the configuration (its velocities are the base values of the velocity inputs).
        h: finite-difference step.

    Returns:
        :class:`GradCheck` with per-block errors: ``max |J_ad - J_fd| / max |J_fd|`` for blocks whose largest entry
        exceeds :data:`BLOCK_FLOOR`, and the absolute error for the others.
    """
    n_in = 18 + scene.n_params
    x0 = np.zeros(n_in)
    x0[6:9], x0[9:12] = base.lin_vel, base.ang_vel
    x = torch.tensor(x0[None], requires_grad=True)
    f, out = _evaluate(scene, cfg, base, x)
    analytic = np.stack([torch.autograd.grad(f[0, i], x, retain_graph=True)[0][0].numpy() for i in range(f.shape[1])])
    probes = np.concatenate([x0 + h * np.eye(n_in), x0 - h * np.eye(n_in)])
    with torch.no_grad():
        values = _evaluate(scene, cfg, base, torch.tensor(probes))[0].numpy()
    numeric = (values[:n_in] - values[n_in:]).T / (2.0 * h)
    rel, absolute = {}, {}
    for out_name, rows in OUTPUT_BLOCKS.items():
        for in_name, cols in _blocks(scene.n_params).items():
            ref = np.abs(numeric[rows, cols]).max(initial=0.0)
            err = np.abs(analytic[rows, cols] - numeric[rows, cols]).max(initial=0.0)
            (rel if ref > BLOCK_FLOOR else absolute)[(out_name, in_name)] = err / ref if ref > BLOCK_FLOOR else err
    return GradCheck(analytic, numeric, rel, absolute, float(out.toi[0].detach()), int(out.n_contacts[0]))
