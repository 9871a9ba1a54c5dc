"""Collecting the tight-tolerance paper's parts (issue 17, part 6): the bolting scene through the engine under the
screw policy (the nut follows the thread: a pitch per turn, the geometry's oracle), EngineContactModel on the
same scene, and the small-amplitude spline for the tight peg."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contactkit.control.policies import TIGHT_SPLINE_POS_LIMIT, TIGHT_SPLINE_ROT_LIMIT, make_policy
from contactkit.control.screw_policy import ScrewConfig, ScrewDirection, ScrewPolicy
from contactkit.data.collect import CollectSpec, collect
from contactkit.data.reader import open_dataset
from contactkit.engine.model import EngineContactModel
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, rollout
from contactkit.physics import WorldParams
from contactkit.state import BodyState
from contactkit.tasks.assembly_scenes import bolting_scene, tight_peg_scene

PITCH_RTOL = 0.03
"""The nut's advance per turn must be the pitch within this (the engine's fastener oracle holds 2 % under a pure
torque; the screw policy also pushes axially, taking up the flank play once: < 0.1 mm of 5 mm)."""
NO_GRAVITY = WorldParams(gravity=False)


def _yaw(quat: np.ndarray) -> np.ndarray:
    w, x, y, z = np.moveaxis(np.asarray(quat), -1, 0)
    return np.unwrap(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


def test_engine_collects_screwing_the_nut_a_pitch_per_turn(tmp_path):
    out = tmp_path / "bolting.h5"
    spec = CollectSpec(task="bolting", policy="screw", episodes=2, steps=12, backend="engine", world=NO_GRAVITY)
    assert spec.start_xy == 0.0 and spec.start_tilt == 0.0
    assert collect(spec, str(out)) == 2
    with open_dataset(out) as ds:
        assert len(ds) == 2
        scene = json.loads(ds.meta.scene)
        assert scene["meta"]["task"] == "bolting" and ds.meta.backend == "engine"
        pitch, hand = scene["meta"]["pitch"], scene["meta"]["handedness"]
        for ep in ds.episodes():
            a = ep.arrays()
            assert all(np.all(np.isfinite(v)) for v in a.values())
            yaw, z = _yaw(a["quat"]), a["pos"][:, 2]
            assert yaw[-1] - yaw[0] < -1.5  # tightening a right-hand thread: clockwise seen from +z
            advance = np.polyfit(yaw, z, 1)[0] * 2.0 * math.pi
            assert advance == pytest.approx(hand * pitch, rel=PITCH_RTOL)
            assert np.abs(a["pos"][:, :2]).max() < scene["meta"]["clearance"]  # centred on the bolt in the play


def test_engine_contact_model_steps_the_nut_along_the_thread():
    """A batch of two nuts: one loosened (turned counter-clockwise: it rises along +z), one tightened; rolled three
    steps through the batched engine model. States and F/T readings are finite, and each nut's height follows
    its turn along the helix."""
    scene = bolting_scene()
    model = EngineContactModel(scene, NO_GRAVITY, ActionMode.POSE_DELTA)
    start = BodyState.at_rest(scene.tool.init_pos, scene.tool.init_quat)
    history = BodyState(*(np.stack([v, v])[:, None] for v in (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    turn, push = 0.25, 0.005
    actions = np.zeros((2, 3, 6))
    actions[0, :, 5], actions[0, :, 2] = turn, push  # loosen: counter-clockwise, up
    actions[1, :, 5], actions[1, :, 2] = -turn, -push  # tighten: clockwise, down
    states, wrenches = rollout(model, history, actions)
    assert np.all(np.isfinite(states.pos)) and np.all(np.isfinite(wrenches)) and model.failures == 0
    pitch = scene.meta["pitch"]
    for b, sign in ((0, 1.0), (1, -1.0)):
        turned = _yaw(np.concatenate([start.quat[None], states.quat[b]]))[-1] - _yaw(start.quat[None])[0]
        rise = states.pos[b, -1, 2] - start.pos[2]
        assert sign * turned > 0.3
        assert sign * rise > 0.0
        axial_play = scene.meta["play"] / 4.0 / math.cos(math.radians(30.0))  # flank gap seen along the axis
        assert rise == pytest.approx(pitch * turned / (2.0 * math.pi), abs=axial_play)


def test_screw_policy_needs_a_bolting_scene_and_draws_from_its_generator():
    policy = make_policy("screw")
    assert isinstance(policy, ScrewPolicy) and policy.mode is ActionMode.POSE_DELTA
    peg = tight_peg_scene()
    start = BodyState.at_rest(peg.tool.init_pos, peg.tool.init_quat)
    with pytest.raises(InvalidInputError, match="bolting"):
        policy.reset(peg, start, np.random.default_rng(0))
    nut = bolting_scene()
    start = BodyState.at_rest(nut.tool.init_pos, nut.tool.init_quat)
    loosen = ScrewPolicy(ScrewConfig(direction=ScrewDirection.LOOSEN, turn_range=(0.2, 0.2), push_range=(0.0, 0.0)))
    loosen.reset(nut, start, np.random.default_rng(0))
    a = loosen.act(0, start, np.zeros(6))
    pitch = nut.meta["pitch"]
    assert a[5] == pytest.approx(0.2) and a[2] == pytest.approx(pitch * 0.2 / (2.0 * math.pi))
    assert np.allclose(a[[0, 1, 3, 4]], 0.0, atol=1e-12)


def test_tight_spline_stays_within_its_small_amplitudes():
    peg = tight_peg_scene()
    policy = make_policy("tight-spline", 200)
    start = BodyState.at_rest(peg.tool.init_pos, peg.tool.init_quat)
    policy.reset(peg, start, np.random.default_rng(3))
    actions = np.array([policy.act(t, start, np.zeros(6)) for t in range(200)])
    lim = np.array([*TIGHT_SPLINE_POS_LIMIT, *(3 * [TIGHT_SPLINE_ROT_LIMIT])])
    assert np.all(np.abs(actions) <= 1.5 * lim + 1e-15)
    assert actions[:, 2].mean() < 0.0  # biased into the bore


def test_a_bolting_pair_for_another_task_is_refused():
    with pytest.raises(InvalidInputError, match="bolting pair"):
        CollectSpec(task="tight-peg-in-hole", diameter=0.039, pitch=0.004)


def test_mujoco_collects_the_tight_peg(tmp_path):
    """MuJoCo steps the same scene (its exact convex pieces); no accuracy claim here."""
    out = tmp_path / "peg.h5"
    spec = CollectSpec(task="tight-peg-in-hole", policy="tight-spline", episodes=1, steps=3, backend="mujoco",
                       world=NO_GRAVITY)
    assert collect(spec, str(out)) == 1
    with open_dataset(out) as ds:
        a = ds.episode(0).arrays()
    assert all(np.all(np.isfinite(v)) for v in a.values()) and len(a["action"]) == 3
