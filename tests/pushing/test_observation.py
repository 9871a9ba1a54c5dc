"""The short history in the residual policy's observation (issue 32 part 3)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.controller import OBS_DIM
from contactkit.pushing.observation import (
    BASE_DIM,
    HISTORY_DIM,
    HISTORY_FIELDS,
    HISTORY_LEN,
    HISTORY_STRIDE,
    empty_history,
    push_history,
    with_history,
)


def test_history_rows_are_the_lagged_base_fields():
    """After k pushes of base observations b_0 … b_{k−1}, the history reads b_{k−s}, b_{k−2s}, … (zeros before 0)."""
    assert BASE_DIM == OBS_DIM and HISTORY_DIM == BASE_DIM + HISTORY_LEN * len(HISTORY_FIELDS) == 43
    buffer = empty_history()
    bases = [(i + 1 + np.arange(BASE_DIM) / 100).astype(np.float32) for i in range(25)]
    for b in bases:
        buffer = push_history(buffer, b)
    current = np.zeros(BASE_DIM, dtype=np.float32)
    obs = with_history(current, buffer)
    assert obs.shape == (HISTORY_DIM,) and obs.dtype == np.float32
    rows = obs[BASE_DIM:].reshape(HISTORY_LEN, -1)
    k = len(bases)
    for j in range(HISTORY_LEN):
        i = k - (j + 1) * HISTORY_STRIDE
        np.testing.assert_array_equal(rows[j], bases[i][list(HISTORY_FIELDS)] if i >= 0 else 0.0)


def test_bad_history_input_refused():
    with pytest.raises(InvalidInputError):
        push_history(empty_history(), np.zeros(BASE_DIM + 1))
