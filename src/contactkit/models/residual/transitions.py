"""Logged episodes as the residual's training material: backbone predictions, free-space tare, transitions.

A :class:`LoggedEpisode` is one episode of a log (states, commands, F/T readings, its scene). For every transition
``t`` (with a full history) the backbone is stepped once from the recorded state ``s_t`` under the recorded command,
in batches per scene; the reading labels are *tared*: each episode's sensor offset is the median reading over the
steps where the backbone predicts no contact at all (free space; a real sensor is zeroed the same way,
:mod:`contactkit.control.tare`), so a bias is not learned as contact. With ``noise`` the recorded history is first
shifted by a random rigid offset and its velocities perturbed (input noise, as GNS and FIGNet train for rollouts),
the backbone stepped from the shifted state, and the target kept at the recorded next state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from contactkit.control.tare import MIN_FREE_SPACE_STEPS, episode_offsets
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.model import ContactModel
from contactkit.models.residual.features import HISTORY
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = ["BACKBONE_CHUNK", "FREE_SPACE_N", "LoggedEpisode", "MIN_TARE_STEPS", "Transitions", "build_transitions",
           "tare_offsets"]

BACKBONE_CHUNK = 4096
"""Transitions stepped by the backbone per call (bounds MuJoCo's rollout buffers to ~30 MB)."""
FREE_SPACE_N = 1e-9
"""Largest backbone force [N] of a step counted as free space for the tare (the backbone is noise-free: exactly 0
without contact)."""
MIN_TARE_STEPS = MIN_FREE_SPACE_STEPS
"""Fewest free-space steps an episode needs for its own tare; with fewer its offset is the median over the
episodes that have one."""


@dataclass(frozen=True)
class LoggedEpisode:
    """One logged episode.

    Attributes:
        scene: its static description. states: ``(T+1, 13)`` flat states (world frame).
        commands: ``(T, 6)`` the policy's commands. readings: ``(T, 6)`` F/T readings (sensor frame, untared).
    """

    scene: Scene
    states: np.ndarray
    commands: np.ndarray
    readings: np.ndarray


@dataclass(frozen=True)
class Transitions:
    """Flat training rows of :func:`build_transitions` (``N`` rows).

    Attributes:
        history ``(N, H, 13)``, command ``(N, 6)``, prev_command ``(N, 6)``, backbone ``(N, 13)``,
        backbone_wrench ``(N, 6)``, truth ``(N, 13)``, reading ``(N, 6)`` (tared), ref_pos ``(N, 3)``,
        ref_quat ``(N, 4)``, episode ``(N,)`` and step ``(N,)`` indices.
    """

    history: np.ndarray
    command: np.ndarray
    prev_command: np.ndarray
    backbone: np.ndarray
    backbone_wrench: np.ndarray
    truth: np.ndarray
    reading: np.ndarray
    ref_pos: np.ndarray
    ref_quat: np.ndarray
    episode: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return len(self.command)

    @staticmethod
    def concat(parts: Sequence[Transitions]) -> Transitions:
        """Rows of ``parts`` one after the other."""
        names = Transitions.__dataclass_fields__
        return Transitions(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in names})


def _rows(episodes: Sequence[LoggedEpisode]) -> np.ndarray:
    """``(N, 2)`` ``(episode, t)`` of every transition with a full history."""
    rows = [(e, t) for e, ep in enumerate(episodes) for t in range(HISTORY - 1, len(ep.commands))]
    if not rows:
        raise InvalidInputError(f"no logged episode is longer than the {HISTORY}-state history the residual reads")
    return np.array(rows, dtype=np.int64)


def _step_rows(model: ContactModel, start: np.ndarray, cmd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One backbone call for ``start (n, 13)`` under ``cmd (n, 6)``; when the backbone refuses the batch (a state it
    cannot start from, a diverged step), the rows one by one. Returns next states, readings and a valid mask."""
    try:
        nxt, w = model.step(BodyState.from_array(start[:, None]), cmd)
        return nxt.as_array(), np.asarray(w), np.ones(len(start), dtype=bool)
    except ContactkitError:
        out, wrench, ok = np.zeros((len(start), 13)), np.zeros((len(start), 6)), np.zeros(len(start), dtype=bool)
        for i in range(len(start)):
            try:
                nxt, w = model.step(BodyState.from_array(start[i:i + 1, None]), cmd[i:i + 1])
                out[i], wrench[i], ok[i] = nxt.as_array()[0], np.asarray(w)[0], True
            except ContactkitError:
                continue
        return out, wrench, ok


def _step_backbone(backbones: Callable[[Scene], ContactModel], episodes: Sequence[LoggedEpisode],
                   rows: np.ndarray, start: np.ndarray, progress: Callable[[int], None] | None):
    """Backbone next states ``(N, 13)``, readings ``(N, 6)`` and a valid mask ``(N,)`` (False: the backbone refused
    the row's state) from ``start (N, 13)`` under the rows' commands."""
    out, wrench, valid = np.zeros((len(rows), 13)), np.zeros((len(rows), 6)), np.zeros(len(rows), dtype=bool)
    keys = [ep.scene.to_json() for ep in episodes]
    by_scene: dict[str, list[int]] = {}
    for k, e in enumerate(rows[:, 0]):
        by_scene.setdefault(keys[int(e)], []).append(k)
    for ks in by_scene.values():
        model = backbones(episodes[int(rows[ks[0], 0])].scene)
        for lo in range(0, len(ks), BACKBONE_CHUNK):
            idx = np.array(ks[lo:lo + BACKBONE_CHUNK])
            cmd = np.stack([episodes[int(e)].commands[int(t)] for e, t in rows[idx]])
            out[idx], wrench[idx], valid[idx] = _step_rows(model, start[idx], cmd)
            if progress:
                progress(len(idx))
    return out, wrench, valid


def _perturb(history: np.ndarray, scales: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``history (N, H, 13)`` shifted by one random rigid offset per row (position σ ``scales[0]`` [m], rotation σ
    ``scales[1]`` [rad] about the last state's origin) and velocity noise (σ ``scales[2]`` [m/s], ``scales[3]``
    [rad/s])."""
    n = len(history)
    out = history.copy()
    dp = rng.normal(0.0, scales[0], (n, 1, 3))
    dq = rotvec_to_quat(rng.normal(0.0, scales[1], (n, 3)))
    turn = quat_to_mat(dq)[:, None]
    rel = history[:, :, 0:3] - history[:, -1:, 0:3]
    out[:, :, 0:3] = (turn @ rel[..., None])[..., 0] + history[:, -1:, 0:3] + dp
    out[:, :, 3:7] = quat_mul(np.broadcast_to(dq[:, None], (n, history.shape[1], 4)), history[:, :, 3:7])
    out[:, :, 7:10] += rng.normal(0.0, scales[2], (n, history.shape[1], 3))
    out[:, :, 10:13] += rng.normal(0.0, scales[3], (n, history.shape[1], 3))
    return out


def tare_offsets(episodes: Sequence[LoggedEpisode], rows: np.ndarray, backbone_wrench: np.ndarray) -> np.ndarray:
    """Per-episode sensor offsets ``(E, 6)`` [N, N·m]: the median reading over the episode's free-space steps
    (the backbone's force ≤ :data:`FREE_SPACE_N`); episodes with fewer than :data:`MIN_TARE_STEPS` such steps
    take the median offset of the others (zeros when none has enough): :func:`~contactkit.control.tare.episode_offsets`
    of the rows' readings.
    """
    free = np.linalg.norm(backbone_wrench[:, :3], axis=-1) <= FREE_SPACE_N
    readings = np.stack([episodes[int(e)].readings[int(t)] for e, t in rows]) if len(rows) else np.zeros((0, 6))
    return episode_offsets(readings, rows[:, 0], free, len(episodes), MIN_TARE_STEPS)[0]


def build_transitions(episodes: Sequence[LoggedEpisode], backbones: Callable[[Scene], ContactModel],
                      noise: np.ndarray | None = None, rng: np.random.Generator | None = None,
                      offsets: np.ndarray | None = None,
                      progress: Callable[[int], None] | None = None) -> tuple[Transitions, np.ndarray]:
    """Every transition of ``episodes`` with its backbone prediction and tared reading.

    Args:
        episodes: the logs; backbones: ``scene -> ContactModel`` (cached by the caller).
        noise: ``(4,)`` input-noise scales (position [m], rotation [rad], linear [m/s] and angular [rad/s]
            velocity) or None for the recorded histories; rng: draws the noise.
        offsets: ``(E, 6)`` per-episode sensor offsets to subtract (None: estimated by :func:`tare_offsets`
            from these backbone predictions).
        progress: called with the number of rows stepped after each backbone call.

    Returns:
        ``(transitions, offsets)``; rows whose state the backbone refuses (e.g. deeper in its geometry than it starts
        from) are left out.
    """
    rows = _rows(episodes)
    hist = np.stack([episodes[int(e)].states[int(t) - HISTORY + 1:int(t) + 1] for e, t in rows])
    if noise is not None:
        hist = _perturb(hist, np.asarray(noise, dtype=np.float64), rng or np.random.default_rng(0))
    nxt, wrench, valid = _step_backbone(backbones, episodes, rows, hist[:, -1], progress)
    rows, hist, nxt, wrench = rows[valid], hist[valid], nxt[valid], wrench[valid]
    if offsets is None:
        offsets = tare_offsets(episodes, rows, wrench)
    pick = lambda f: np.stack([f(episodes[int(e)], int(t)) for e, t in rows])  # noqa: E731
    return Transitions(
        history=hist, command=pick(lambda ep, t: ep.commands[t]), prev_command=pick(lambda ep, t: ep.commands[t - 1]),
        backbone=nxt, backbone_wrench=wrench, truth=pick(lambda ep, t: ep.states[t + 1]),
        reading=pick(lambda ep, t: ep.readings[t]) - offsets[rows[:, 0]],
        ref_pos=pick(lambda ep, t: ep.scene.target_pos), ref_quat=pick(lambda ep, t: ep.scene.target_quat),
        episode=rows[:, 0], step=rows[:, 1]), offsets
