"""Episode and DatasetMeta: validation names the field and step; metadata survives a JSON round trip."""

import dataclasses
import json

import numpy as np
import pytest

from contactkit.data.schema import DatasetMeta, Episode
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.state import STATE_DIM, BodyState


def test_valid_episode_is_returned_as_float64_copies(rng, make_episode):
    ep = make_episode(rng, 6, seed=3)
    v = ep.validated()
    assert v.n_steps == 6 and v.seed == 3
    for key, value in v.arrays().items():
        assert value.dtype == np.float64 and value.flags.c_contiguous
        assert np.array_equal(value, getattr(ep, key))
        assert value is not getattr(ep, key)


def test_states_view_and_from_states_round_trip(rng, make_episode):
    ep = make_episode(rng, 4)
    states = ep.states()
    assert isinstance(states, BodyState) and states.batch_shape == (5,)
    assert states.as_array().shape == (5, STATE_DIM)
    back = Episode.from_states(ep.time, states, ep.action, ep.command, ep.wrench, seed=1)
    for key, value in ep.arrays().items():
        assert np.array_equal(getattr(back, key), value)
    assert back.seed == 1


@pytest.mark.parametrize("field", ["pos", "quat", "lin_vel", "ang_vel", "time", "action", "command",
                                   "wrench"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_value_names_field_and_step(rng, make_episode, field, bad):
    ep = make_episode(rng, 5)
    value = np.array(getattr(ep, field))
    value[3] = bad
    with pytest.raises(InvalidInputError, match=rf"episode\.{field} is NaN or Inf at step 3"):
        dataclasses.replace(ep, **{field: value}).validated()


@pytest.mark.parametrize("field,shape", [("pos", (5, 3)), ("quat", (6, 3)), ("wrench", (6, 6)),
                                         ("action", (5, 5)), ("time", (6, 1))])
def test_wrong_shape_names_field(rng, make_episode, field, shape):
    ep = make_episode(rng, 5)
    with pytest.raises(InvalidInputError, match=rf"\.{field} must have shape"):
        dataclasses.replace(ep, **{field: np.zeros(shape)}).validated()


def test_empty_episode_is_refused(rng, make_episode):
    ep = make_episode(rng, 1)
    with pytest.raises(InvalidInputError, match="T >= 1"):
        dataclasses.replace(ep, action=np.zeros((0, 6))).validated()


def test_non_unit_quaternion_names_step(rng, make_episode):
    ep = make_episode(rng, 5)
    quat = ep.quat.copy()
    quat[4] *= 1.01
    with pytest.raises(InvalidInputError, match=r"episode\.quat at step 4 is not unit norm"):
        dataclasses.replace(ep, quat=quat).validated()


@pytest.mark.parametrize("delta", [0.0, -1e-3])
def test_time_must_increase(rng, make_episode, delta):
    ep = make_episode(rng, 5)
    time = ep.time.copy()
    time[2] = time[1] + delta
    with pytest.raises(InvalidInputError, match=r"episode\.time does not increase at step 2"):
        dataclasses.replace(ep, time=time).validated()


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_bad_seed_is_refused(rng, make_episode, seed):
    with pytest.raises(InvalidInputError, match="seed"):
        dataclasses.replace(make_episode(rng, 2), seed=seed).validated()


def test_non_numeric_field_is_refused(rng, make_episode):
    with pytest.raises(InvalidInputError, match=r"episode\.pos is not a numeric array"):
        dataclasses.replace(make_episode(rng, 2), pos=[["a", "b", "c"]] * 3).validated()


def test_episode_scene_is_kept_as_given(rng, make_episode, make_scene):
    text = make_scene(rng)
    assert not text.isascii()
    v = make_episode(rng, 2, scene=text).validated()
    assert v.scene == text and type(v.scene) is str
    assert make_episode(rng, 2).validated().scene is None
    assert make_episode(rng, 2, scene="{}").validated().scene == "{}"
    ep = make_episode(rng, 3)
    assert Episode.from_states(ep.time, ep.states(), ep.action, ep.command, ep.wrench, 4, text).scene == text


@pytest.mark.parametrize("scene,problem", [
    ({"name": "peg"}, r"episode\.scene must be None or JSON object text \(str\), got dict"),
    (b"{}", r"episode\.scene must be None or JSON object text \(str\), got bytes"),
    ("", r"episode\.scene is not valid JSON"),
    ('{"name": "peg"', r"episode\.scene is not valid JSON"),
    ("[1, 2]", r"episode\.scene must be a JSON object, got list"),
    ('"peg"', r"episode\.scene must be a JSON object, got str"),
    ('{"name": "\ud800"}', r"episode\.scene cannot be encoded as UTF-8 \(surrogates not allowed at character 10\)"),
])
def test_bad_episode_scene_is_refused(rng, make_episode, scene, problem):
    with pytest.raises(InvalidInputError, match=problem):
        make_episode(rng, 2, scene=scene).validated()


def test_meta_json_round_trip(make_meta):
    meta = make_meta()
    back = DatasetMeta.from_json(meta.to_json())
    assert back == meta
    assert back.action_mode is ActionMode.WRENCH
    assert json.loads(meta.to_json())["action_mode"] == "wrench"


def test_meta_accepts_dicts_and_enum_values(make_meta):
    meta = make_meta(scene={"b": 1, "a": 2}, action_mode="pose-delta")
    assert json.loads(meta.scene) == {"a": 2, "b": 1}
    assert meta.action_mode is ActionMode.POSE_DELTA


@pytest.mark.parametrize("changes,key", [
    ({"scene": "{not json"}, "scene"),
    ({"world": "[1, 2]"}, "world"),
    ({"policy": json.dumps({"scale": 1})}, "policy"),
    ({"seed": -3}, "seed"),
    ({"seed": 2.5}, "seed"),
    ({"action_mode": "teleport"}, "action_mode"),
    ({"control_dt": 0.0}, "control_dt"),
    ({"control_dt": float("nan")}, "control_dt"),
    ({"backend": 3}, "backend"),
])
def test_meta_rejects_bad_values_naming_the_key(make_meta, changes, key):
    with pytest.raises(InvalidInputError, match=rf"meta\.{key}"):
        make_meta(**changes)


def test_meta_from_dict_names_missing_and_unknown_keys(make_meta):
    d = make_meta().to_dict()
    del d["scene"]
    d["colour"] = "red"
    with pytest.raises(InvalidInputError, match=r"missing \['scene'\], unknown \['colour'\]"):
        DatasetMeta.from_dict(d)


def test_mismatched_keys_compares_json_by_value(make_meta):
    meta = make_meta(scene={"a": 1, "b": 2})
    reordered = make_meta(scene='{"b": 2,   "a": 1}', created="2000-01-01T00:00:00+00:00")
    assert meta.mismatched_keys(reordered) == []
    changed = make_meta(scene={"a": 1, "b": 3}, seed=8, control_dt=0.02)
    assert meta.mismatched_keys(changed) == ["scene", "seed", "control_dt"]
