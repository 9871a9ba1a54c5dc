"""benchmarks/pushing_residual_bound.py: its hand-set residuals read the observation the trained actor reads
(:func:`contactkit.pushing.controller.observe`) and act in the same action units; its case summary picks the
best residual that lost no object."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from contactkit.control.icr import AngularProfile, ProfileKind
from contactkit.pushing import controller as ctl
from contactkit.pushing.scene import ObjectKind, PushScene

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pushing_residual_bound.py"


@pytest.fixture(scope="module")
def bound():
    spec = importlib.util.spec_from_file_location("pushing_residual_bound", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plan():
    scene = PushScene.for_object(ObjectKind.CUBE)
    start = np.array(scene.object_pose)
    return ctl.plan_push(scene, start, start + [0.08, 0.01, 0.2], AngularProfile(ProfileKind.CONSTANT), 2.0, 0.01)


def test_pose_feedback_pushes_against_the_deviation_in_action_units(bound, plan):
    k = 50
    dev = np.array([0.002, -0.001, 0.005])  # push frame: n, t [m], yaw [rad]
    pose = plan.poses[k].copy()
    pose[:2] += ctl.push_frame(plan, k).T @ dev[:2]
    pose[2] += dev[2]
    obs = ctl.observe(plan, k, np.zeros((2, 2)), np.zeros(6), pose)
    action = bound.Residual(bound.Family.POSE, (0.5, 0.5, 1.0))(obs)
    expected = [-0.5 * dev[0] / ctl.ACTION_LIN_SCALE, -0.5 * dev[1] / ctl.ACTION_LIN_SCALE,
                -1.0 * dev[2] / ctl.ACTION_ANG_SCALE]
    np.testing.assert_allclose(action, expected, atol=1e-5)


def test_force_feedback_acts_on_the_total_normal_force_error(bound, plan):
    k = 50
    actual = np.array([[0.1, 0.05], [0.3, -0.02]])
    obs = ctl.observe(plan, k, actual, np.zeros(6), plan.poses[k])
    action = bound.Residual(bound.Family.FORCE, (0.4, 0.0))(obs)
    missing = plan.f_n[k].sum() - actual[:, 0].sum()
    np.testing.assert_allclose(action, [np.clip(0.4 * missing, -1, 1), 0.0, 0.0], atol=1e-5)


def test_case_summary_keeps_the_best_residual_that_lost_nothing(bound):
    def res(translation, angle, lost=False):
        errors = {"translation_pct": translation, "angle_pct": angle, "force_N": 0.1, "torque_Nm": 0.01}
        return {"errors": errors, "lost": lost, "contact_frac": [1.0, 1.0]}

    per = {0: [res(6.0, 6.0)], 1: [res(0.5, 0.5, lost=True)], 2: [res(2.0, 1.0)], 3: [res(1.0, 4.0)]}
    out = bound.case_summary(per)
    assert out["best_residual"]["policy"] == bound.POLICIES[2].name
    assert out["best_le_5pct"] is True
    assert out["pd_over_best"] == pytest.approx(6.0 / 1.5, abs=0.01)
    assert out["all"][bound.POLICIES[1].name]["lost"] == 1
