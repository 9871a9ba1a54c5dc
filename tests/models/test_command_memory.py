"""The shared previous-command memory of the learned contact models (:mod:`contactkit.models.command_memory`)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.models.command_memory import CommandMemory


def _states(rng, n):
    return rng.normal(size=(n, 13))


def test_fresh_memory_holds_the_current_command():
    rng = np.random.default_rng(0)
    action = rng.normal(size=(3, 6))
    prev, continued, primed = CommandMemory().recall(_states(rng, 3), action)
    np.testing.assert_array_equal(prev, action)
    assert not continued.any() and not primed


def test_continued_elements_recall_the_last_command_others_hold_theirs():
    rng = np.random.default_rng(1)
    memory = CommandMemory()
    returned, first = _states(rng, 3), rng.normal(size=(3, 6))
    memory.remember(returned, first)
    last = returned.copy()
    last[1, 0] += 1e-12  # not bit for bit: a different history
    action = rng.normal(size=(3, 6))
    prev, continued, primed = memory.recall(last, action)
    assert continued.tolist() == [True, False, True] and not primed
    np.testing.assert_array_equal(prev[[0, 2]], first[[0, 2]])
    np.testing.assert_array_equal(prev[1], action[1])


def test_primed_command_wins_once_and_a_wrong_batch_size_is_ignored():
    rng = np.random.default_rng(2)
    memory = CommandMemory()
    returned = _states(rng, 2)
    memory.remember(returned, rng.normal(size=(2, 6)))
    given = rng.normal(size=(2, 6))
    memory.prime(given)
    action = rng.normal(size=(2, 6))
    prev, continued, primed = memory.recall(returned, action)
    np.testing.assert_array_equal(prev, given)
    assert primed and continued.all()
    prev, _, primed = memory.recall(_states(rng, 2), action)  # consumed: the next call holds
    np.testing.assert_array_equal(prev, action)
    assert not primed
    memory.prime(rng.normal(size=(3, 6)))
    prev, _, primed = memory.recall(_states(rng, 2), action)
    np.testing.assert_array_equal(prev, action)
    assert not primed


def test_prime_refuses_non_finite_or_misshapen_commands():
    with pytest.raises(InvalidInputError, match="previous command"):
        CommandMemory().prime(np.full(6, np.nan))
    with pytest.raises(InvalidInputError, match="previous command"):
        CommandMemory().prime(np.zeros((2, 5)))
