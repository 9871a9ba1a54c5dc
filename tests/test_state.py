"""BodyState: flat round trip, validation errors name the field."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.state import BodyState, stack_states


def test_flat_round_trip_and_stack():
    x = np.random.default_rng(0).normal(size=(4, 13))
    s = BodyState.from_array(x)
    assert np.array_equal(s.as_array(), x)
    stacked = stack_states([s, s], axis=1)
    assert stacked.batch_shape == (4, 2)


@pytest.mark.parametrize(("field", "value", "msg"), [
    ("pos", np.array([np.nan, 0, 0]), "pos"), ("quat", np.array([1.0, 0.1, 0, 0]), "unit"),
    ("lin_vel", np.zeros(2), "lin_vel"), ("ang_vel", np.array([np.inf, 0, 0]), "ang_vel")])
def test_validation_names_the_field(field, value, msg):
    s = BodyState.at_rest([0.0, 0.0, 0.1]).replace(**{field: value})
    with pytest.raises(InvalidInputError, match=msg):
        s.validated()
