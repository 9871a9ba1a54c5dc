"""What differs between two JSON values, and the resume-mismatch message of a dataset built from it."""

import json

import pytest

from contactkit.data import DatasetWriter
from contactkit.data.collect import CollectSpec, dataset_meta
from contactkit.data.json_diff import DIFF_MAX_ENTRIES, DIFF_VALUE_CHARS, json_diff
from contactkit.errors import DatasetError
from contactkit.model import ActionMode

RESUME_MESSAGE_LIMIT = 1500
"""Longest acceptable resume-mismatch message [characters] (it printed two full scenes, 25 kB, before)."""


def test_nested_dicts_and_lists_give_dotted_paths():
    old = {"a": {"b": 1, "c": [{"d": "x"}, {"d": "y"}], "gone": 2}, "same": [1, 2]}
    new = {"a": {"b": 1, "c": [{"d": "x"}, {"d": "z"}], "added": None}, "same": [1, 2]}
    assert json_diff("m", old, new) == ['m.a.c[1].d: "y" → "z"', "m.a.gone: 2 → (absent)",
                                        "m.a.added: (absent) → None"]
    assert json_diff("m", old, old) == []


def test_numeric_arrays_are_one_entry_counting_their_differences():
    old = {"v": [[0.0, 1.0], [2.0, 3.0]], "n": [1, 2, 3]}
    new = {"v": [[0.0, 1.5], [2.0, 2.0]], "n": [1, 2, 3, 4]}
    assert json_diff("s", old, new) == ["s.v: 2 of 4 values differ (max |Δ| 1)", "s.n: array of shape (3,) → (4,)"]
    assert json_diff("b", [True, False], [True, True]) == ["b[1]: False → True"]  # booleans are no array


def test_long_values_are_cut():
    (entry,) = json_diff("k", "a" * 500, "b" * 500)
    old, new = entry.removeprefix("k: ").split(" → ")
    assert len(old) == len(new) == DIFF_VALUE_CHARS and old.endswith("…") and new.startswith('"bbb')


def test_resume_mismatch_names_the_differences_in_a_short_line(tmp_path):
    out = tmp_path / "d.h5"
    spec = CollectSpec(episodes=1, steps=3)
    DatasetWriter(out, meta=dataset_meta(spec)).close()
    other = CollectSpec(episodes=1, steps=3, clearance=5e-4, seed=3)
    assert len(dataset_meta(spec).scene) > 10_000  # the two scenes it used to print
    with pytest.raises(DatasetError) as err:
        DatasetWriter(out, meta=dataset_meta(other))
    text = str(err.value)
    assert "\n" not in text and len(text) < RESUME_MESSAGE_LIMIT, len(text)
    assert "meta differs in ['scene', 'seed']" in text
    assert "seed: 0 → 3" in text and "scene.name: " in text and "1 mm" in text and "0.5 mm" in text
    shown = text.split("stored → new: ", 1)[1]
    assert shown.count(";") == DIFF_MAX_ENTRIES and shown.rstrip(")").split("; ")[-1].startswith("and ")


def test_plain_keys_come_first_and_the_action_mode_by_name(make_meta):
    a = make_meta()
    b = make_meta(policy=json.dumps({"name": "spiral", "scale": 0.5}), action_mode=ActionMode.POSE_DELTA,
                  control_dt=0.02)
    assert a.differences(b) == ('action_mode: "wrench" → "pose-delta"; control_dt: 0.01 → 0.02; '
                                'policy.name: "random" → "spiral"')
    assert a.differences(a) == ""
