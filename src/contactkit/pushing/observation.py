"""A short history of forces and poses in the residual policy's observation (issue 32 part 3).

The base observation (:func:`contactkit.pushing.controller.observe`, :data:`BASE_DIM` numbers) shows one instant:
the policy cannot tell which randomised world it is in (a heavier object, an offset centre of mass, a stickier
patch). :func:`with_history` appends, for the lags ``s, 2s, …, H s`` steps (``s`` = :data:`HISTORY_STRIDE`, ``H`` =
:data:`HISTORY_LEN`: the last 0.4 s at 100 Hz), the contact forces ``(λ_n, λ_t)`` of both tips and the object's
pose deviation ``(d_n, d_t, dθ)`` as the base observation scales them (:data:`HISTORY_FIELDS`); steps before the
episode's start read 0. The buffer is a plain ``(H s, 7)`` array, oldest row first, updated by the pure
:func:`push_history`.
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError

BASE_DIM = 15
"""Length of the base observation: λ (4), F_des (4), EE planar twist (3), pose deviation (3), progress (1)."""
HISTORY_FIELDS = (0, 1, 2, 3, 11, 12, 13)
"""Entries of the base observation kept in the history: λ of both tips (0–3) and the pose deviation (11–13)."""
HISTORY_LEN = 4
"""Past samples in the observation (``H``)."""
HISTORY_STRIDE = 10
"""Steps between two samples (``s``): 0.1 s at 100 Hz."""
HISTORY_DIM = BASE_DIM + HISTORY_LEN * len(HISTORY_FIELDS)
"""Length of the observation with history (43)."""


def empty_history() -> np.ndarray:
    """``(HISTORY_LEN · HISTORY_STRIDE, 7)`` float32 zeros: the buffer at an episode's start."""
    return np.zeros((HISTORY_LEN * HISTORY_STRIDE, len(HISTORY_FIELDS)), dtype=np.float32)


def push_history(buffer: np.ndarray, base_obs: np.ndarray) -> np.ndarray:
    """The buffer after the step whose base observation was ``base_obs`` ``(BASE_DIM,)``: oldest row dropped."""
    base = np.asarray(base_obs, dtype=np.float32)
    if base.shape != (BASE_DIM,) or buffer.shape != empty_history().shape:
        raise InvalidInputError(f"history needs a ({BASE_DIM},) observation and a {empty_history().shape} buffer, "
                                f"got {base.shape}, {buffer.shape}")
    return np.concatenate([buffer[1:], base[list(HISTORY_FIELDS)][None]])


def with_history(base_obs: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """``(HISTORY_DIM,)`` float32: ``base_obs`` then the rows at lags ``s, 2s, …, H s`` (newest first)."""
    lagged = buffer[::-1][HISTORY_STRIDE - 1::HISTORY_STRIDE]
    return np.concatenate([np.asarray(base_obs, dtype=np.float32), lagged.reshape(-1)])
