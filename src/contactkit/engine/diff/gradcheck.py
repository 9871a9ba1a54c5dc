"""Gradient checks of the differentiable step against finite differences (placement paper §IV; docs/architecture.md).

The step is seen as a function of one flat input vector around a base configuration,
``x = [δp (3) m, δφ (3) rad, v (3) m/s, ω (3) rad/s, δu_p (3) m, δu_φ (3) rad, θ (P)]`` (the orientation and the
reference orientation perturbed by world-frame rotation vectors, so every input lives in a vector space), and of one
flat output ``f = [y (6), p⁺ (3), quat⁺ (4), v⁺ (3), ω⁺ (3)]``. The autograd Jacobian is compared block by block with
finite differences, all perturbations evaluated as one batch of the step (each with its own collision query and LCP
solve).

The numerical derivative is the fourth-order central difference
``D(h) = (8 (f(x + h e_i) - f(x - h e_i)) - (f(x + 2h e_i) - f(x - 2h e_i))) / 12h`` with the step chosen per
entry by a step sweep over :data:`FD_STEPS`: a single fixed ``h`` is either too small for the entries whose
response is tiny against the output's magnitude (round-off ``~ε|f|/h``: e.g. the orientation, of unit norm, responds
to the angular velocity by only ``~1e-5`` when sticking holds it) or too large for the strongly curved ones
(truncation). Of the steps whose four probes keep the base point's discrete structure (the feature pairs, the time-of
impact split and the LCP active sets, :attr:`~contactkit.engine.diff.step.StepOutput.structure`: the step is a
piecewise smooth function and its derivative is the derivative of the piece the base point lies in), each entry takes
the one whose estimate agrees best with both its admissible neighbours' (the sweep's estimate of the difference
error: truncation shows as a drift toward the large steps, round-off as scatter at the small ones). An input for
which no step keeps the structure (the base point lies on a switch: a kink where a contact's impulse reaches zero,
the time-of-impact threshold ``toi_min``, a contact pair entering the set) is differenced with the smallest step and
named in :attr:`GradCheck.switching`, so a kink or a jump there shows up as an error, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from contactkit.engine.diff.step import DiffScene, StepConfig, diff_step
from contactkit.rotations.torch import rotate_by

FD_STEPS = (1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7)
"""Steps ``h`` of the sweep, largest first (in the units of each input: m, rad, m/s, rad/s, θ units)."""

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
        steps: ``(19, n_in)`` the difference step each entry took. switching: the input blocks with an input whose
            every probe changed the step's discrete structure (the base point lies on a switch).
    """

    analytic: np.ndarray
    numeric: np.ndarray
    rel_err: dict[tuple[str, str], float]
    abs_err: dict[tuple[str, str], float]
    toi: float
    n_contacts: int
    steps: np.ndarray
    switching: tuple[str, ...] = ()

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


def _sweep(values: np.ndarray, same: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fourth-order differences of every step and the per-entry choice (module docstring).

    Args:
        values: ``(S, 4, n_in, 19)`` outputs at ``x + c h_s e_i`` for ``c = (1, -1, 2, -2)``. same: ``(S, 4, n_in)``
            whether each probe kept the base structure. steps: ``(S,)``.

    Returns:
        ``(numeric (19, n_in), chosen steps (19, n_in), switching (n_in,) bool)``.
    """
    diffs = (8.0 * (values[:, 0] - values[:, 1]) - (values[:, 2] - values[:, 3])) / (12.0 * steps[:, None, None])
    admissible = same.all(axis=1)  # (S, n_in)
    n_steps, n_in, n_out = diffs.shape
    numeric, chosen = np.empty((n_out, n_in)), np.empty((n_out, n_in))
    switching = ~admissible.any(axis=0)
    for i in range(n_in):
        rows = np.flatnonzero(admissible[:, i]) if not switching[i] else np.array([n_steps - 1])
        d = diffs[rows, i]  # (A, 19)
        if len(rows) == 1:
            pick = np.zeros(n_out, dtype=np.int64)
        else:  # the step whose estimate differs least from both its admissible neighbours' (larger and smaller)
            gaps = np.abs(np.diff(d, axis=0))
            spread = np.maximum(np.vstack([gaps[:1], gaps]), np.vstack([gaps, gaps[-1:]]))
            pick = np.argmin(spread, axis=0)
        numeric[:, i] = d[pick, np.arange(n_out)]
        chosen[:, i] = steps[rows[pick]]
    return numeric, chosen, switching


def check_step(scene: DiffScene, cfg: StepConfig, base: Configuration, steps: tuple[float, ...] = FD_STEPS
               ) -> GradCheck:
    """Compare the autograd Jacobian of :func:`~contactkit.engine.diff.step.diff_step` with finite differences.

    Args:
        scene, cfg: the step. base: the configuration (its velocities are the base values of the velocity inputs).
        steps: the difference steps swept (module docstring), largest first.

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
    h = np.asarray(steps, dtype=np.float64)
    offsets = np.array([1.0, -1.0, 2.0, -2.0])
    probes = x0 + (h[:, None, None, None] * offsets[None, :, None, None]) * np.eye(n_in)[None, None]  # (S, 4, n, n)
    with torch.no_grad():
        values, probed = _evaluate(scene, cfg, base, torch.tensor(probes.reshape(-1, n_in)))
    same = np.array([s == out.structure[0] for s in probed.structure]).reshape(len(h), 4, n_in)
    numeric, chosen, switching = _sweep(values.numpy().reshape(len(h), 4, n_in, -1), same, h)
    rel, absolute = {}, {}
    blocks = _blocks(scene.n_params)
    for out_name, rows in OUTPUT_BLOCKS.items():
        for in_name, cols in blocks.items():
            ref = np.abs(numeric[rows, cols]).max(initial=0.0)
            err = np.abs(analytic[rows, cols] - numeric[rows, cols]).max(initial=0.0)
            (rel if ref > BLOCK_FLOOR else absolute)[(out_name, in_name)] = err / ref if ref > BLOCK_FLOOR else err
    names = tuple(name for name, cols in blocks.items() if switching[cols].any())
    return GradCheck(analytic, numeric, rel, absolute, float(out.toi[0].detach()), int(out.n_contacts[0]), chosen,
                     names)
