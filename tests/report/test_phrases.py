"""Signed heights and offsets in words (issue 15, item 10: "sank 0.22 mm into the floor")."""

import math

import pytest

from contactkit.errors import InvalidInputError
from contactkit.report.phrases import MM_ZERO, height_phrase, signed_phrase


@pytest.mark.parametrize(
    ("height_m", "words"),
    [
        (-0.00022, "sank 0.22 mm into the floor"),
        (0.0031, "3.10 mm above the floor"),
        (0.0, "on the floor"),
        (-0.4 * MM_ZERO * 1e-3, "on the floor"),
        (0.4 * MM_ZERO * 1e-3, "on the floor"),
    ],
)
def test_height_folds_the_sign_into_the_words(height_m, words):
    assert height_phrase(height_m, "the floor") == words


def test_no_minus_sign_in_any_height_phrase():
    """Every penetration reads as a positive depth, never '−x mm above'."""
    for k in range(-50, 51):
        phrase = height_phrase(k * 1.37e-4, "the slot floor")
        assert "-" not in phrase and "−" not in phrase
        assert ("sank" in phrase) == (round(k * 0.137, 2) < 0)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (-1.23, "1.2 mm toward −x"),
        (2.06, "2.1 mm toward +x"),
        (0.04, "0.0 mm"),
    ],
)
def test_signed_phrase_picks_the_word_of_the_sign(value, words):
    assert signed_phrase(value, "mm", "toward +x", "toward −x") == words


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_values_are_refused(bad):
    with pytest.raises(InvalidInputError, match="height_m"):
        height_phrase(bad, "the floor")
    with pytest.raises(InvalidInputError, match="value"):
        signed_phrase(bad, "mm", "up", "down")
