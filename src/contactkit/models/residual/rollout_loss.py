"""The multi-step rollout loss of the residual over a non-differentiable physics backbone.

Segments of ``K`` steps are drawn from the logs; each is rolled out open loop from its recorded history: the backbone
steps from the model's own last predicted state (numpy, no gradient), the ensemble mean's correction (ungated) is
added with gradient, and the predicted state enters the next step's history (so the loss sees what the model's own
errors do to its later inputs). The loss is the mean over steps of a Huber loss on the errors of position, rotation,
velocities and tared reading, each divided by the mean normalisation scale of its target group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from contactkit.errors import ContactkitError
from contactkit.models.residual.features import HISTORY, TARGET_GROUPS, apply_correction, features
from contactkit.models.residual.network import ResidualNet
from contactkit.models.residual.transitions import LoggedEpisode
from contactkit.rotations.torch import quat_conj, quat_mul, quat_to_rotvec
from contactkit.state import BodyState

__all__ = ["HUBER_DELTA", "rollout_loss"]

HUBER_DELTA = 1.0
"""Huber threshold in normalised units: errors beyond one normalisation scale count linearly (a diverging segment
does not swamp the gradient)."""


def _segments(episodes: Sequence[LoggedEpisode], batch: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """``(batch, 2)`` random ``(episode, t0)`` with a full history before ``t0`` and ``steps`` commands after."""
    ok = [e for e, ep in enumerate(episodes) if len(ep.commands) >= HISTORY - 1 + steps]
    e = np.asarray(ok)[rng.integers(0, len(ok), batch)]
    t0 = np.array([rng.integers(HISTORY - 1, len(episodes[k].commands) - steps + 1) for k in e])
    return np.stack([e, t0], axis=1)


def _backbone_step(backbones: Callable, episodes: Sequence[LoggedEpisode], keys: list[str], seg: np.ndarray,
                   last: np.ndarray, cmd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The backbone's next states ``(B, 13)`` and readings ``(B, 6)``, one call per scene."""
    nxt, wrench = np.zeros((len(seg), 13)), np.zeros((len(seg), 6))
    groups: dict[str, list[int]] = {}
    for k, e in enumerate(seg[:, 0]):
        groups.setdefault(keys[int(e)], []).append(k)
    for ks in groups.values():
        model = backbones(episodes[int(seg[ks[0], 0])].scene)
        s, w = model.step(BodyState.from_array(last[ks][:, None]), cmd[ks])
        nxt[ks], wrench[ks] = s.as_array(), w
    return nxt, wrench


def _errors(state: torch.Tensor, reading: torch.Tensor, truth: torch.Tensor, truth_reading: torch.Tensor,
            scale: dict[str, float]) -> torch.Tensor:
    """``(B, 18)`` normalised errors of position, rotation, velocities and reading."""
    rot = quat_to_rotvec(quat_mul(state[:, 3:7], quat_conj(truth[:, 3:7])))
    parts = [(state[:, 0:3] - truth[:, 0:3]) / scale["pos"], rot / scale["rot"],
             (state[:, 7:10] - truth[:, 7:10]) / scale["lin_vel"],
             (state[:, 10:13] - truth[:, 10:13]) / scale["ang_vel"],
             (reading[:, :3] - truth_reading[:, :3]) / scale["force"],
             (reading[:, 3:] - truth_reading[:, 3:]) / scale["torque"]]
    return torch.cat(parts, dim=-1)


def rollout_loss(net: ResidualNet, episodes: Sequence[LoggedEpisode], offsets: np.ndarray, backbones: Callable,
                 batch: int, steps: int, rng: np.random.Generator, keys: list[str]) -> torch.Tensor:
    """The mean Huber loss ``()`` over ``batch`` segments of ``steps`` open-loop steps (see the module docstring).

    Args:
        net: the ensemble (its mean correction is used, ungated); episodes: the training logs;
        offsets: ``(E, 6)`` their sensor offsets (tare); backbones: ``scene -> ContactModel``;
        rng: draws the segments; keys: each episode's scene JSON (groups the segments by scene; computed once by the
        caller, not at every iteration).

    Returns:
        a scalar tensor with gradient; zero (no gradient) when the backbone refuses or diverges on a predicted state.
    """
    seg = _segments(episodes, batch, steps, rng)
    scale = {g: float(net.out_std[s].mean()) for g, s in TARGET_GROUPS.items()}
    t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    hist = t(np.stack([episodes[e].states[t0 - HISTORY + 1:t0 + 1] for e, t0 in seg]))
    ref_pos = t(np.stack([episodes[e].scene.target_pos for e, _ in seg]))
    ref_quat = t(np.stack([episodes[e].scene.target_quat for e, _ in seg]))
    total = torch.zeros((), dtype=torch.float64)
    for k in range(steps):
        at = lambda f, d=0, k=k: np.stack([f(episodes[e])[t0 + k + d] for e, t0 in seg])  # noqa: E731
        cmd, prev = at(lambda ep: ep.commands), at(lambda ep: ep.commands, -1)
        try:
            bb, bbw = _backbone_step(backbones, episodes, keys, seg, hist[:, -1].detach().numpy(), cmd)
        except ContactkitError:  # a predicted state the backbone cannot start from, or a diverged step
            return torch.zeros((), dtype=torch.float64)
        x = features(hist, t(cmd), t(prev), t(bb), t(bbw), ref_pos, ref_quat)
        corr = net.members_normalised(x.float()).mean(0) * net.out_std + net.out_mean
        state, reading = apply_correction(hist[:, -1], t(bb), t(bbw), corr.double())
        truth = t(at(lambda ep: ep.states, 1))
        truth_reading = t(at(lambda ep: ep.readings) - offsets[seg[:, 0]])
        err = _errors(state, reading, truth, truth_reading, scale)
        total = total + torch.nn.functional.huber_loss(err, torch.zeros_like(err), delta=HUBER_DELTA)
        hist = torch.cat([hist[:, 1:], state[:, None]], dim=1)
    return total / steps
