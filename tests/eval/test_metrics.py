"""Prediction metrics against closed forms: constant offsets, linear drift, the stationary predictor."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.eval.metrics import (
    concat_rollout_errors,
    horizon_curve,
    one_step_metrics,
    rollout_errors,
    rollout_metrics,
    rotation_angle,
)
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState

N, T = 3, 10


def states(pos: np.ndarray, quat: np.ndarray | None = None) -> BodyState:
    """States with positions ``pos`` (..., 3), orientations ``quat`` (identity by default), zero velocity."""
    quat = np.broadcast_to([1.0, 0.0, 0.0, 0.0], pos.shape[:-1] + (4,)) if quat is None else quat
    return BodyState(pos, np.array(quat, dtype=float), np.zeros_like(pos), np.zeros_like(pos))


def linear_motion(velocity: np.ndarray) -> tuple[BodyState, BodyState]:
    """Start at the origin and truth ``p_t = t v`` for t = 1..T, per rollout ``v`` (N, 3)."""
    t = np.arange(1, T + 1)[None, :, None]
    return states(np.zeros((N, 3))), states(t * velocity[:, None, :])


def test_rotation_angle_is_the_geodesic_angle_and_sign_invariant():
    axis = np.array([0.3, -0.4, 0.5]) / np.linalg.norm([0.3, -0.4, 0.5])
    for angle in (1e-9, 0.2, 1.0, np.pi - 1e-6):
        q = rotvec_to_quat(angle * axis)
        assert rotation_angle(q, [1.0, 0.0, 0.0, 0.0]) == pytest.approx(angle, rel=1e-9)
        assert rotation_angle(-q, [1.0, 0.0, 0.0, 0.0]) == pytest.approx(angle, rel=1e-9)
    a, b = rotvec_to_quat(np.array([0.0, 0.0, 0.7])), rotvec_to_quat(np.array([0.0, 0.0, 0.2]))
    assert rotation_angle(a, b) == pytest.approx(0.5, rel=1e-12)


def test_constant_offset_gives_its_norm_at_every_horizon():
    start, truth = linear_motion(np.tile([1e-3, 0.0, 0.0], (N, 1)))
    offset = np.array([3e-3, 0.0, 4e-3])
    m = rollout_metrics(rollout_errors(states(truth.pos + offset), truth, start))
    np.testing.assert_allclose(m.pos_curve_m, 5e-3, rtol=1e-12)
    assert m.rmse_pos_m == pytest.approx(5e-3, rel=1e-12) and m.rmse_rot_rad == 0.0
    # true displacement t·1 mm: RMS over t = 1..T is 1 mm · sqrt((T+1)(2T+1)/6)
    assert m.rel_pos == pytest.approx(5.0 / np.sqrt((T + 1) * (2 * T + 1) / 6), rel=1e-12)
    assert np.isnan(m.rel_rot)  # the tool never turned: no denominator


def test_linear_drift_has_the_closed_form_rmse_curve():
    start, truth = linear_motion(np.tile([0.0, 2e-3, 0.0], (N, 1)))
    drift = 1e-4 * np.arange(1, T + 1)[None, :, None] * np.array([1.0, 0.0, 0.0])
    m = rollout_metrics(rollout_errors(states(truth.pos + drift), truth, start))
    k = np.arange(1, T + 1)
    np.testing.assert_allclose(m.pos_curve_m, 1e-4 * np.sqrt((k + 1) * (2 * k + 1) / 6), rtol=1e-12)
    assert rollout_metrics(rollout_errors(states(truth.pos + drift), truth, start), horizon=4).rmse_pos_m == \
        pytest.approx(1e-4 * np.sqrt(5 * 9 / 6), rel=1e-12)


def test_a_model_that_predicts_no_motion_scores_exactly_one_relative_error():
    rng = np.random.default_rng(0)
    start_pos = rng.normal(size=(N, 3)) * 0.01
    start_q = rotvec_to_quat(rng.normal(size=(N, 3)) * 0.1)
    true_pos = start_pos[:, None] + np.cumsum(rng.normal(size=(N, T, 3)) * 1e-3, axis=1)
    true_q = rotvec_to_quat(rng.normal(size=(N, T, 3)) * 0.2)
    start = states(start_pos, start_q)
    truth = states(true_pos, true_q)
    frozen = states(np.repeat(start_pos[:, None], T, axis=1), np.repeat(start_q[:, None], T, axis=1))
    m = rollout_metrics(rollout_errors(frozen, truth, start))
    assert m.rel_pos == pytest.approx(1.0, rel=1e-12) and m.rel_rot == pytest.approx(1.0, rel=1e-12)
    perfect = rollout_metrics(rollout_errors(truth, truth, start))
    assert perfect.rmse_pos_m == 0.0 and perfect.rel_pos == 0.0 and perfect.rmse_rot_rad == pytest.approx(0, abs=1e-7)


def test_orientation_error_of_a_constant_yaw_offset():
    start, truth = linear_motion(np.tile([1e-3, 0.0, 0.0], (N, 1)))
    yaw = rotvec_to_quat(np.array([0.0, 0.0, 0.05]))
    m = rollout_metrics(rollout_errors(states(truth.pos, np.broadcast_to(yaw, (N, T, 4))), truth, start))
    np.testing.assert_allclose(m.rot_curve_rad, 0.05, rtol=1e-12)


def test_pooling_weights_every_rollout_equally():
    start, truth = linear_motion(np.tile([1e-3, 0.0, 0.0], (N, 1)))
    a = rollout_errors(states(truth.pos + [1e-3, 0, 0]), truth, start)
    b = rollout_errors(states(truth.pos + [3e-3, 0, 0]), truth, start)
    pooled = rollout_metrics(concat_rollout_errors([a, b]))
    assert pooled.rmse_pos_m == pytest.approx(np.sqrt((1e-6 + 9e-6) / 2), rel=1e-12)
    assert pooled.n_rollouts == 2 * N
    short = rollout_errors(states(truth.pos[:, :4]), truth.index((slice(None), slice(0, 4))), start)
    with pytest.raises(InvalidInputError, match="horizons"):
        concat_rollout_errors([a, short])


def test_one_step_errors_are_mean_euclidean_norms():
    measured = np.zeros((2, 6))
    predicted = np.array([[3.0, 4.0, 0.0, 0.0, 0.0, 0.1], [0.0, 0.0, 1.0, 0.3, 0.4, 0.0]])
    m = one_step_metrics(predicted, measured)
    assert (m.force_err_N, m.torque_err_Nm, m.n_transitions) == (pytest.approx(3.0), pytest.approx(0.3), 2)


def test_bad_inputs_are_refused():
    start, truth = linear_motion(np.tile([1e-3, 0.0, 0.0], (N, 1)))
    with pytest.raises(InvalidInputError, match="batch shape"):
        rollout_errors(truth.index(0), truth, start)
    with pytest.raises(InvalidInputError, match="start"):
        rollout_errors(truth, truth, start.index(slice(0, 1)))
    with pytest.raises(InvalidInputError, match="horizon"):
        rollout_metrics(rollout_errors(truth, truth, start), horizon=T + 1)
    with pytest.raises(InvalidInputError, match="NaN"):
        one_step_metrics(np.full((1, 6), np.nan), np.zeros((1, 6)))
    with pytest.raises(InvalidInputError, match=r"\(N, 6\)"):
        one_step_metrics(np.zeros((2, 6)), np.zeros((3, 6)))
    with pytest.raises(InvalidInputError, match="shape"):
        horizon_curve(np.zeros((0, 3)))
