"""Particle filter: Kalman-filter oracle, outliers, pose noise, quaternion mean, determinism, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.estimation import (
    NoiseSpace,
    ParticleBelief,
    PFConfig,
    estimate,
    init_belief,
    maybe_resample,
    perturb,
    predict,
    quaternion_mean,
    update,
)
from contactkit.rotations import (
    quat_angle_between,
    quat_conj,
    quat_mul,
    quat_normalize,
    quat_to_rotvec,
    rotvec_to_quat,
)

KF_MEAN_TOL = 0.2
"""|PF mean − KF mean| accepted, in units of the KF posterior std, at every step, with 5000 particles.
The gap is Monte Carlo error, not bias: on this system it shrank as 1/√N (mean worst-step gap 0.32 at
N = 500, 0.10 at 5000, 0.04 at 50 000) and the worst of 30 seeds at 5000 was 0.13. A wrong likelihood
scale, missing process noise or unweighted mean each miss by a large fraction of one std."""

KF_VAR_RATIO = (0.75, 1.33)
"""Accepted ratio of the PF's weighted variance to the KF variance (worst of 30 seeds: 0.86 to 1.24)."""

MOMENT_TOL = 0.1
"""Relative tolerance on a sample std from 2000 draws (standard error √(1/(2·2000)) ≈ 1.6 %, so 6σ)."""

UNIT_NORM_TOL = 1e-12
"""Round-off allowed on |q| after composing and renormalising quaternions."""

DT = 0.1
F_MATRIX = np.array([[1.0, DT], [0.0, 1.0]])
B_VECTOR = np.array([0.5 * DT * DT, DT])
PROCESS_STD = np.array([0.005, 0.02])
H_MATRIX = np.array([[0.0, 0.0], [0.0, 0.0], [-50.0, -5.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
"""A spring-damper contact: fz = −k x − c v, and a torque proportional to the velocity."""
MEASUREMENT_STD = np.array([0.5, 0.5, 0.5, 0.05, 0.05, 0.05])


def _linear_motion(particles, action):
    """Double integrator ``x ← F x + B a`` over a (position [m], velocity [m/s]) state."""
    return particles @ F_MATRIX.T + action * B_VECTOR


def test_matches_kalman_filter_on_linear_gaussian_system():
    rng, truth_rng = np.random.default_rng(0), np.random.default_rng(100)
    m0, s0 = np.array([0.01, 0.0]), np.array([0.005, 0.03])
    mean, cov = m0.copy(), np.diag(s0**2)
    x = m0 + s0 * truth_rng.standard_normal(2)
    belief = init_belief(m0, s0, 5000, rng)
    for k in range(20):
        action = np.sin(0.3 * k)
        x = F_MATRIX @ x + B_VECTOR * action + PROCESS_STD * truth_rng.standard_normal(2)
        z = H_MATRIX @ x + MEASUREMENT_STD * truth_rng.standard_normal(6)
        # Kalman filter, the exact posterior of this system.
        mean = F_MATRIX @ mean + B_VECTOR * action
        cov = F_MATRIX @ cov @ F_MATRIX.T + np.diag(PROCESS_STD**2)
        gain = cov @ H_MATRIX.T @ np.linalg.inv(H_MATRIX @ cov @ H_MATRIX.T + np.diag(MEASUREMENT_STD**2))
        mean, cov = mean + gain @ (z - H_MATRIX @ mean), (np.eye(2) - gain @ H_MATRIX) @ cov
        # Particle filter.
        belief = predict(belief, _linear_motion, action, PROCESS_STD, rng)
        belief = update(belief, belief.particles @ H_MATRIX.T, z, MEASUREMENT_STD)
        pf_mean = estimate(belief)
        weights = np.exp(belief.log_weights)
        pf_var = weights @ (belief.particles - pf_mean) ** 2
        kf_std = np.sqrt(np.diag(cov))
        assert np.all(np.abs(pf_mean - mean) <= KF_MEAN_TOL * kf_std), f"step {k}"
        assert np.all(pf_var / kf_std**2 > KF_VAR_RATIO[0]) and np.all(pf_var / kf_std**2 < KF_VAR_RATIO[1])
        belief = maybe_resample(belief, 0.5, rng)


@pytest.mark.parametrize("sigmas", [10.0, -10.0, 1e3])
def test_far_outlier_gives_finite_normalised_weights(sigmas):
    rng = np.random.default_rng(1)
    belief = init_belief(np.zeros(2), np.array([0.01, 0.05]), 50, rng)
    predicted = belief.particles @ H_MATRIX.T
    measured = predicted.mean(axis=0) + sigmas * MEASUREMENT_STD * np.array([1, -1, 1, -1, 1, -1])
    log_likelihood = -0.5 * np.sum(((predicted - measured) / MEASUREMENT_STD) ** 2, axis=1)
    if sigmas == 1e3:
        assert np.sum(np.exp(log_likelihood)) == 0.0  # plain weights would all underflow
    posterior = update(belief, predicted, measured, MEASUREMENT_STD)
    assert np.all(np.isfinite(posterior.log_weights))
    assert np.sum(np.exp(posterior.log_weights)) == pytest.approx(1.0, rel=1e-12)
    assert np.argmax(posterior.log_weights) == np.argmax(log_likelihood)
    assert np.all(np.isfinite(estimate(posterior)))


def test_particles_with_non_finite_prediction_get_zero_weight():
    belief = init_belief(np.zeros(2), np.ones(2), 4, np.random.default_rng(2))
    predicted = np.zeros((4, 6))
    predicted[1] = np.nan
    predicted[2, 0] = 1e300  # its squared residual overflows
    posterior = update(belief, predicted, np.zeros(6), MEASUREMENT_STD)
    np.testing.assert_array_equal(np.exp(posterior.log_weights), [0.5, 0.0, 0.0, 0.5])
    with pytest.raises(InvalidInputError, match="no particle"):
        update(belief, np.full((4, 6), np.nan), np.zeros(6), MEASUREMENT_STD)


def _random_pose_state(rng):
    quat = quat_normalize(rng.standard_normal(4))
    return np.concatenate([rng.standard_normal(3), quat, rng.standard_normal(6)])


def test_pose_noise_keeps_unit_quaternions_and_has_the_requested_spread():
    rng = np.random.default_rng(3)
    state = _random_pose_state(rng)
    std = np.array([0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.1, 0.1, 0.1, 0.3, 0.3, 0.3])
    belief = init_belief(state, np.zeros(12), 2000, rng, NoiseSpace.POSE13)
    moved = predict(belief, lambda p, a: p, None, std, rng, NoiseSpace.POSE13).particles
    np.testing.assert_allclose(np.linalg.norm(moved[:, 3:7], axis=1), 1.0, atol=UNIT_NORM_TOL)
    # The orientation noise is a world-frame rotation vector: q' ⊗ q⁻¹ = exp(φ), φ ~ N(0, σ²).
    phi = quat_to_rotvec(quat_mul(moved[:, 3:7], quat_conj(state[3:7])))
    tangent = np.concatenate([moved[:, 0:3] - state[0:3], phi, moved[:, 7:13] - state[7:13]], axis=1)
    np.testing.assert_allclose(tangent.std(axis=0), std, rtol=MOMENT_TOL)
    big = predict(belief, lambda p, a: p, None, np.full(12, 3.0), rng, NoiseSpace.POSE13).particles
    np.testing.assert_allclose(np.linalg.norm(big[:, 3:7], axis=1), 1.0, atol=UNIT_NORM_TOL)


def test_quaternion_mean_is_sign_invariant_and_symmetric():
    rng = np.random.default_rng(4)
    q = quat_normalize(rng.standard_normal(4))
    flipped = np.stack([q, -q, q, -q])
    assert quat_angle_between(quaternion_mean(flipped, np.full(4, 0.25)), q) < 1e-7
    theta = 0.4
    about_z = rotvec_to_quat(np.array([[0.0, 0.0, theta], [0.0, 0.0, -theta]]))
    mean = quaternion_mean(quat_mul(about_z, q), np.array([0.5, 0.5]))
    assert quat_angle_between(mean, q) < 1e-7
    heavy = quaternion_mean(quat_mul(about_z, q), np.array([1.0, 0.0]))
    assert quat_angle_between(heavy, quat_mul(about_z[0], q)) < 1e-7


def test_pose_estimate_small_spread_matches_rotation_vector_average():
    """For small spreads the eigenvector mean agrees with exp(Σ w φ) ⊗ q to third order in the spread."""
    rng = np.random.default_rng(5)
    state = _random_pose_state(rng)
    phi = 0.01 * rng.standard_normal((200, 3))
    particles = np.tile(state, (200, 1))
    particles[:, 3:7] = quat_mul(rotvec_to_quat(phi), state[3:7])
    particles[:, 0:3] += rng.standard_normal((200, 3))
    weights = rng.dirichlet(np.ones(200))
    belief = ParticleBelief(particles, np.log(weights))
    est = estimate(belief, NoiseSpace.POSE13)
    np.testing.assert_allclose(est[0:3], weights @ particles[:, 0:3], rtol=1e-12)
    expected = quat_mul(rotvec_to_quat(weights @ phi), state[3:7])
    assert quat_angle_between(est[3:7], expected) < 1e-5
    np.testing.assert_allclose(np.linalg.norm(est[3:7]), 1.0, atol=UNIT_NORM_TOL)


def _filter_run(seed):
    rng = np.random.default_rng(seed)
    belief = init_belief(np.zeros(2), np.array([0.01, 0.05]), 30, rng)
    for k in range(10):
        belief = predict(belief, _linear_motion, 0.1 * k, PROCESS_STD, rng)
        belief = update(belief, belief.particles @ H_MATRIX.T, np.full(6, 0.01 * k), MEASUREMENT_STD)
        belief = maybe_resample(belief, 0.5, rng)
    return belief


def test_same_seed_gives_same_result():
    a, b, c = _filter_run(7), _filter_run(7), _filter_run(8)
    np.testing.assert_array_equal(a.particles, b.particles)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    assert not np.array_equal(a.particles, c.particles)


def test_maybe_resample_only_when_effective_sample_size_is_low():
    rng = np.random.default_rng(6)
    belief = init_belief(np.zeros(2), np.ones(2), 10, rng)
    assert maybe_resample(belief, 0.5, rng) is belief
    log_weights = np.full(10, -np.inf)
    log_weights[3] = 0.0
    degenerate = ParticleBelief(belief.particles, log_weights)
    resampled = maybe_resample(degenerate, 0.5, rng)
    np.testing.assert_array_equal(resampled.particles, np.tile(belief.particles[3], (10, 1)))
    np.testing.assert_allclose(resampled.log_weights, -np.log(10))
    assert maybe_resample(degenerate, 0.0, rng) is degenerate


def test_motion_function_gets_read_only_particles_and_bad_output_is_refused():
    rng = np.random.default_rng(7)
    belief = init_belief(np.zeros(2), np.ones(2), 5, rng)

    def mutating(particles, action):
        particles += 1.0
        return particles

    with pytest.raises(ValueError, match="read-only"):
        predict(belief, mutating, None, PROCESS_STD, rng)
    with pytest.raises(InvalidInputError, match="shape"):
        predict(belief, lambda p, a: p[:, :1], None, PROCESS_STD, rng)
    with pytest.raises(InvalidInputError, match="NaN"):
        predict(belief, lambda p, a: p * np.nan, None, PROCESS_STD, rng)


def test_bad_input_is_refused():
    rng = np.random.default_rng(8)
    belief = init_belief(np.zeros(2), np.ones(2), 5, rng)
    with pytest.raises(InvalidInputError, match="measured_wrench"):
        update(belief, np.zeros((5, 6)), np.array([0.0, 0, 0, 0, 0, np.nan]), MEASUREMENT_STD)
    with pytest.raises(InvalidInputError, match="predicted_wrench"):
        update(belief, np.zeros((4, 6)), np.zeros(6), MEASUREMENT_STD)
    with pytest.raises(InvalidInputError, match="measurement_std"):
        update(belief, np.zeros((5, 6)), np.zeros(6), np.zeros(6))
    with pytest.raises(InvalidInputError, match="noise std"):
        perturb(belief.particles, np.ones(3), rng)
    with pytest.raises(InvalidInputError, match="POSE13"):
        init_belief(np.zeros(7), np.zeros(12), 5, rng, NoiseSpace.POSE13)
    state = _random_pose_state(rng)
    state[3:7] *= 1.1
    with pytest.raises(InvalidInputError, match="norm"):
        init_belief(state, np.zeros(12), 5, rng, NoiseSpace.POSE13)
    with pytest.raises(InvalidInputError, match="NaN"):
        ParticleBelief(np.full((2, 2), np.nan), np.zeros(2))
    with pytest.raises(InvalidInputError, match="threshold"):
        maybe_resample(belief, 1.5, rng)


def test_config_defaults_and_validation():
    config = PFConfig(
        process_noise_std=np.full(12, 0.01), measurement_std=MEASUREMENT_STD, noise_space="pose13"
    )
    assert config.n_particles == 30 and config.resample_threshold == 0.5
    assert config.noise_space is NoiseSpace.POSE13
    with pytest.raises(InvalidInputError):
        PFConfig(process_noise_std=np.full(13, 0.01), measurement_std=MEASUREMENT_STD, noise_space="pose13")
    with pytest.raises(InvalidInputError):
        PFConfig(process_noise_std=PROCESS_STD, measurement_std=MEASUREMENT_STD[:5])
    with pytest.raises(InvalidInputError):
        PFConfig(process_noise_std=-PROCESS_STD, measurement_std=MEASUREMENT_STD)
    with pytest.raises(InvalidInputError):
        PFConfig(process_noise_std=PROCESS_STD, measurement_std=MEASUREMENT_STD, resample_threshold=2.0)
