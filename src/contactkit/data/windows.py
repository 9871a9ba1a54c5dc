"""Fixed-length history windows over trajectory datasets, as a ``torch.utils.data.Dataset``.

A window at step ``t`` of an episode pairs the states ``s_{t-h+1} .. s_t`` with the action and F/T
reading of step ``t`` and the state ``s_{t+1}`` that followed — the inputs and targets of
``ContactModel.step(history, action) -> (next_state, wrench)``. Windows start at ``t = h - 1``, the first
step with a full history, so an episode of ``T`` steps gives ``max(0, T - h + 1)`` windows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch

from contactkit.data.reader import open_dataset
from contactkit.data.schema import Episode
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.model import ActionMode

DEFAULT_HISTORY = 3
"""Default number of states ``h`` in a window's history."""


def split_by_episode(n_episodes: int, val_fraction: float, rng: np.random.Generator):
    """Random split of episode indices into training and validation sets (no episode in both).

    Args:
        n_episodes: number of episodes ``E`` (≥ 2 when ``val_fraction > 0``).
        val_fraction: fraction in ``[0, 1)`` of episodes for validation; rounded, at least one episode
            when positive, and at least one episode is left for training.
        rng: the randomness (``numpy.random.Generator``).

    Returns:
        ``(train_idx, val_idx)``: sorted int64 arrays partitioning ``0 .. E-1``.
    """
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if isinstance(n_episodes, bool) or not isinstance(n_episodes, (int, np.integer)) or n_episodes < 1:
        raise InvalidInputError(f"n_episodes must be an int >= 1, got {n_episodes!r}")
    if not 0.0 <= val_fraction < 1.0:
        raise InvalidInputError(f"val_fraction must lie in [0, 1), got {val_fraction!r}")
    n_val = int(round(val_fraction * n_episodes))
    if val_fraction > 0.0:
        if n_episodes < 2:
            raise InvalidInputError("a validation split needs at least 2 episodes")
        n_val = min(max(n_val, 1), n_episodes - 1)
    perm = rng.permutation(n_episodes)
    return np.sort(perm[n_val:]).astype(np.int64), np.sort(perm[:n_val]).astype(np.int64)


def _load_episodes(paths: Sequence[str]) -> tuple[list[Episode], ActionMode | None]:
    """All committed episodes of the files, in order, and their action mode; files must agree on action mode
    and control period."""
    episodes: list[Episode] = []
    first = None
    for path in paths:
        with open_dataset(path) as ds:
            if first is None:
                first = (path, ds.meta)
            for key in ("action_mode", "control_dt"):
                if getattr(ds.meta, key) != getattr(first[1], key):
                    raise DatasetError(f"{path}: {key} {getattr(ds.meta, key)!r} differs from "
                                       f"{getattr(first[1], key)!r} in {first[0]}; windows cannot mix them")
            episodes.extend(ds.all_episodes())
    return episodes, (first[1].action_mode if first is not None else None)


class TrajectoryWindows(torch.utils.data.Dataset):
    """History windows over the episodes of one or more dataset files, loaded into memory once.

    Each item is a dict of float32 tensors:

    - ``history`` ``(h, 13)``: states ``s_{t-h+1} .. s_t``, each ``[pos (3) m, quat (4) (w,x,y,z),
      lin_vel (3) m/s, ang_vel (3) rad/s]`` in the world frame;
    - ``action`` ``(6,)``: mean wrench applied during step t (world frame, tool origin) [N, N·m];
    - ``command`` ``(6,)``: what the policy commanded at step t, in the files' ``action_mode`` (a pose-target
      displacement [m, rad] or a wrench [N, N·m], world frame);
    - ``prev_command``, ``prev_action`` ``(6,)``: the ``command`` and ``action`` of step t-1 (at an episode's
      first step, step t's own): a command latency makes the wrench of step t depend on them;
    - ``wrench`` ``(6,)``: F/T reading during step t (sensor frame) [N, N·m];
    - ``next_state`` ``(13,)``: ``s_{t+1}``, same layout as a history row.

    Args:
        paths: one file or a sequence of files; their episodes are numbered consecutively in order.
        history: ``h`` ≥ 1 states per window.
        episodes: optional subset of those global episode indices (e.g. from :func:`split_by_episode`).

    Attributes:
        action_mode: what ``command`` means (the files' :class:`~contactkit.control.impedance.ActionMode`).
        episode_ids: ``(E,)`` the global indices of the selected episodes, in order.
        window_episode: ``(len,)`` each window's episode, as a position in ``episode_ids``.
    """

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike], *,
                 history: int = DEFAULT_HISTORY, episodes: Sequence[int] | np.ndarray | None = None):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(p) for p in paths]
        if not self.paths:
            raise InvalidInputError("TrajectoryWindows needs at least one dataset file")
        if isinstance(history, bool) or not isinstance(history, (int, np.integer)) or history < 1:
            raise InvalidInputError(f"history must be an int >= 1, got {history!r}")
        self.history = int(history)
        loaded, self.action_mode = _load_episodes(self.paths)
        selected = self._select(len(loaded), episodes)
        self.episode_ids = selected
        chosen = [loaded[i] for i in selected]
        states = [e.states().as_array() for e in chosen]
        self._states = torch.from_numpy(np.concatenate(states) if states else np.zeros((0, 13))).float()
        self._action = torch.from_numpy(np.concatenate([e.action for e in chosen]) if chosen
                                        else np.zeros((0, 6))).float()
        self._command = torch.from_numpy(np.concatenate([e.command for e in chosen]) if chosen
                                         else np.zeros((0, 6))).float()
        self._wrench = torch.from_numpy(np.concatenate([e.wrench for e in chosen]) if chosen
                                        else np.zeros((0, 6))).float()
        state_rows, step_rows = [], []
        state_start = step_start = 0
        for e in chosen:
            t = np.arange(self.history - 1, e.n_steps)
            state_rows.append(state_start + t)
            step_rows.append(step_start + t)
            state_start += e.n_steps + 1
            step_start += e.n_steps
        self._state_row = np.concatenate(state_rows).astype(np.int64) if chosen else np.zeros(0, np.int64)
        self._step_row = np.concatenate(step_rows).astype(np.int64) if chosen else np.zeros(0, np.int64)
        starts = np.cumsum([0] + [e.n_steps for e in chosen])
        self._step_bounds = starts
        self.window_episode = np.repeat(np.arange(len(chosen)), [len(r) for r in step_rows]).astype(np.int64)
        first = np.isin(self._step_row, starts[:-1])
        self._prev_row = np.where(first, self._step_row, self._step_row - 1)

    @staticmethod
    def _select(n_loaded: int, episodes) -> np.ndarray:
        if episodes is None:
            return np.arange(n_loaded, dtype=np.int64)
        ids = np.asarray(episodes)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise InvalidInputError(f"episodes must be a 1-D sequence of ints, got {ids!r}")
        ids = ids.astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= n_loaded):
            raise InvalidInputError(f"episode indices must lie in [0, {n_loaded}), "
                                    f"got {ids.min()}..{ids.max()}")
        if np.unique(ids).size != ids.size:
            raise InvalidInputError("episodes contains repeated indices")
        return ids

    def episode_arrays(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """States ``(T+1, 13)`` (world frame) and F/T readings ``(T, 6)`` (sensor frame) of the ``j``-th selected
        episode (of :attr:`episode_ids`), float64 copies of the loaded (float32) arrays."""
        if not 0 <= j < self.n_episodes:
            raise IndexError(f"episode {j} out of range ({self.n_episodes} episodes)")
        lo, hi = int(self._step_bounds[j]), int(self._step_bounds[j + 1])
        states = self._states[lo + j:hi + j + 1].double().numpy()
        return states, self._wrench[lo:hi].double().numpy()

    @property
    def n_episodes(self) -> int:
        """Number of episodes the windows are drawn from."""
        return int(self.episode_ids.size)

    def __len__(self) -> int:
        return int(self._state_row.size)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"window {i} out of range ({n} windows)")
        r, k = int(self._state_row[i]), int(self._step_row[i])
        return {
            "history": self._states[r - self.history + 1:r + 1].clone(),
            "action": self._action[k].clone(),
            "command": self._command[k].clone(),
            "prev_command": self._command[int(self._prev_row[i])].clone(),
            "prev_action": self._action[int(self._prev_row[i])].clone(),
            "wrench": self._wrench[k].clone(),
            "next_state": self._states[r + 1].clone(),
        }
