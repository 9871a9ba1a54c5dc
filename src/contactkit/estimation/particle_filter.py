"""Particle filter with force-torque measurement updates (Act-FIGNet paper §IV-C).

A bootstrap (sampling-importance-resampling) particle filter, generic over the state vector: particles
are ``(N, D)`` arrays and weights are log-weights ``(N,)``. The motion update runs any batched contact
model (``motion_fn``) and adds process noise; the measurement update weighs particles by the Gaussian
likelihood of the measured F/T wrench given each particle's predicted wrench; resampling is systematic
and happens when the effective sample size drops below a fraction of N.

Two state spaces are supported (:class:`NoiseSpace`): EUCLIDEAN states get additive noise and arithmetic
means; POSE13 states are :class:`contactkit.state.BodyState` vectors ``[pos(3), quat(4), lin_vel(3),
ang_vel(3)]`` whose orientation noise is a small world-frame rotation composed onto the quaternion, and
whose mean orientation is the eigenvector quaternion mean (Markley et al. 2007).

The act-fignet filter uses 30 particles, the learned model for both updates, and hand-tuned noise.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.estimation.resampling import effective_sample_size, normalize_log_weights, systematic_resample
from contactkit.rotations import quat_mul, quat_normalize, rotvec_to_quat
from contactkit.state import QUAT_NORM_TOL, STATE_DIM

__all__ = [
    "NoiseSpace",
    "PFConfig",
    "ParticleBelief",
    "estimate",
    "init_belief",
    "maybe_resample",
    "perturb",
    "predict",
    "quaternion_mean",
    "tangent_dim",
    "update",
]

WRENCH_DIM = 6
"""Length of an F/T wrench ``(fx, fy, fz, tx, ty, tz)`` [N, N·m]."""

# Layout of a POSE13 state, as written by ``contactkit.state.BodyState.as_array``.
POSE13_POS = slice(0, 3)
POSE13_QUAT = slice(3, 7)
POSE13_VEL = slice(7, 13)

POSE13_TANGENT_DIM = 12
"""Noise dimension of a POSE13 state: ``[dpos(3) m, rotvec(3) rad, dlin_vel(3) m/s, dang_vel(3) rad/s]``."""

MotionFn = Callable[[np.ndarray, np.ndarray], "np.ndarray | tuple[np.ndarray, np.ndarray]"]
"""``motion_fn(particles (N, D), action) -> (N, D)``: a batched deterministic model step; or ``-> ((N, D), diverged
(N,) bool)`` for a model with a per-element status (:func:`contactkit.model.step_with_status`): a flagged particle
gets weight 0 (its state is kept, never averaged) and is dropped at the next resampling."""


class NoiseSpace(enum.Enum):
    """How noise is added to a particle and how particles are averaged."""

    EUCLIDEAN = "euclidean"
    """Any ``(N, D)`` vector state: additive Gaussian noise, weighted arithmetic mean."""
    POSE13 = "pose13"
    """``BodyState`` vectors ``(N, 13)``: rotation-vector noise on the quaternion, eigenvector mean."""


def tangent_dim(space: NoiseSpace, state_dim: int) -> int:
    """Length of the noise vector (and of every noise std) for a ``state_dim`` state in ``space``."""
    if NoiseSpace(space) is NoiseSpace.POSE13:
        if state_dim != STATE_DIM:
            raise InvalidInputError(f"NoiseSpace.POSE13 needs {STATE_DIM}-D states, got D = {state_dim}")
        return POSE13_TANGENT_DIM
    return state_dim


def _std_vector(std, size: int, name: str, positive: bool = False) -> np.ndarray:
    """``std`` as a float64 ``(size,)`` array, finite and ≥ 0 (> 0 when ``positive``)."""
    arr = np.asarray(std, dtype=np.float64)
    if arr.shape != (size,):
        raise InvalidInputError(f"{name} must have shape ({size},), got {arr.shape}")
    bad = ~np.isfinite(arr) | ((arr <= 0.0) if positive else (arr < 0.0))
    if np.any(bad):
        raise InvalidInputError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {arr}")
    return arr


@dataclass(frozen=True, kw_only=True, eq=False)
class PFConfig:
    """Static particle-filter settings (Act-FIGNet paper §IV-C: 30 particles, empirically tuned noise).

    Attributes:
        process_noise_std: ``(tangent_dim,)`` std of the motion noise per step, in the state's units
            (for POSE13: ``[m, m, m, rad, rad, rad, m/s, m/s, m/s, rad/s, rad/s, rad/s]``).
        measurement_std: ``(6,)`` std of the F/T measurement noise ``[N, N, N, N·m, N·m, N·m]``.
        n_particles: N.
        resample_threshold: resample when the effective sample size falls below this fraction of N.
        noise_space: how noise is applied and particles are averaged.
    """

    process_noise_std: np.ndarray
    measurement_std: np.ndarray
    n_particles: int = 30
    resample_threshold: float = 0.5
    noise_space: NoiseSpace = NoiseSpace.EUCLIDEAN

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_space", NoiseSpace(self.noise_space))
        process = np.asarray(self.process_noise_std, dtype=np.float64)
        if process.ndim != 1:
            raise InvalidInputError(f"PFConfig.process_noise_std must be 1-D, got shape {process.shape}")
        if self.noise_space is NoiseSpace.POSE13:
            process = _std_vector(process, POSE13_TANGENT_DIM, "PFConfig.process_noise_std (POSE13)")
        process = _std_vector(process, process.shape[0], "PFConfig.process_noise_std")
        measurement = _std_vector(self.measurement_std, WRENCH_DIM, "PFConfig.measurement_std", positive=True)
        for name, value in (("process_noise_std", process), ("measurement_std", measurement)):
            value = value.copy()
            value.flags.writeable = False
            object.__setattr__(self, name, value)
        if not isinstance(self.n_particles, int | np.integer) or self.n_particles < 1:
            raise InvalidInputError(f"PFConfig.n_particles must be an integer >= 1, got {self.n_particles!r}")
        if not 0.0 <= self.resample_threshold <= 1.0:
            raise InvalidInputError(
                f"PFConfig.resample_threshold must lie in [0, 1], got {self.resample_threshold}"
            )


@dataclass(frozen=True, eq=False)
class ParticleBelief:
    """A weighted particle set.

    Attributes:
        particles: ``(N, D)`` states, finite.
        log_weights: ``(N,)`` normalised log-weights (``log Σ exp = 0``); ``-inf`` marks an impossible
            particle.
    """

    particles: np.ndarray
    log_weights: np.ndarray

    def __post_init__(self) -> None:
        particles = np.array(self.particles, dtype=np.float64)
        log_weights = np.array(self.log_weights, dtype=np.float64)
        if particles.ndim != 2 or particles.shape[0] < 1:
            raise InvalidInputError(
                f"ParticleBelief.particles must be (N, D) with N >= 1, got {particles.shape}"
            )
        if log_weights.shape != (particles.shape[0],):
            raise InvalidInputError(
                f"ParticleBelief.log_weights must be ({particles.shape[0]},), got {log_weights.shape}"
            )
        if not np.all(np.isfinite(particles)):
            raise InvalidInputError("ParticleBelief.particles contain NaN or inf")
        particles.flags.writeable = False
        log_weights.flags.writeable = False
        object.__setattr__(self, "particles", particles)
        object.__setattr__(self, "log_weights", log_weights)

    @property
    def n_particles(self) -> int:
        """N."""
        return int(self.particles.shape[0])


def perturb(
    particles: np.ndarray, std: np.ndarray, rng: np.random.Generator, space: NoiseSpace = NoiseSpace.EUCLIDEAN
) -> np.ndarray:
    """Add zero-mean Gaussian noise of per-component ``std`` to every particle.

    EUCLIDEAN: ``x + σ ⊙ ε``. POSE13: position and velocities additive; orientation
    ``q ← exp(φ) ⊗ q`` with ``φ ~ N(0, diag σ_rot²)`` a world-frame rotation vector [rad], renormalised
    (``w ≥ 0``).

    Args:
        particles: ``(N, D)`` states.
        std: ``(tangent_dim(space, D),)`` standard deviations, ≥ 0, in the state's units.
        rng: source of randomness (N × tangent_dim normal draws, also when ``std`` is 0).
        space: state space.

    Returns:
        ``(N, D)`` new particles; quaternions of POSE13 particles have unit norm.
    """
    particles = np.asarray(particles, dtype=np.float64)
    n, d = particles.shape
    std = _std_vector(std, tangent_dim(space, d), "process noise std")
    noise = rng.standard_normal((n, std.shape[0])) * std
    if NoiseSpace(space) is NoiseSpace.EUCLIDEAN:
        return particles + noise
    out = particles.copy()
    out[:, POSE13_POS] += noise[:, 0:3]
    rotation = rotvec_to_quat(noise[:, 3:6])
    out[:, POSE13_QUAT] = quat_normalize(quat_mul(rotation, quat_normalize(out[:, POSE13_QUAT])))
    out[:, POSE13_VEL] += noise[:, 6:12]
    return out


def init_belief(
    mean: np.ndarray,
    std: np.ndarray,
    n: int,
    rng: np.random.Generator,
    space: NoiseSpace = NoiseSpace.EUCLIDEAN,
) -> ParticleBelief:
    """N equally weighted particles drawn from a Gaussian around ``mean`` (e.g. a camera pose estimate).

    Args:
        mean: ``(D,)`` state; for POSE13 a ``BodyState`` vector with unit quaternion.
        std: ``(tangent_dim(space, D),)`` standard deviations of the initial uncertainty.
        n: number of particles N ≥ 1.
        rng: source of randomness.
        space: state space.

    Returns:
        ParticleBelief with ``(N, D)`` particles and uniform log-weights ``−log N``.
    """
    mean = np.asarray(mean, dtype=np.float64)
    if mean.ndim != 1 or not np.all(np.isfinite(mean)):
        raise InvalidInputError(f"init_belief mean must be a finite (D,) vector, got shape {mean.shape}")
    if NoiseSpace(space) is NoiseSpace.POSE13:
        tangent_dim(space, mean.shape[0])
        norm = np.linalg.norm(mean[POSE13_QUAT])
        if abs(norm - 1.0) > QUAT_NORM_TOL:
            raise InvalidInputError(f"init_belief mean quaternion has norm {norm}, expected 1")
    if not isinstance(n, int | np.integer) or n < 1:
        raise InvalidInputError(f"init_belief needs an integer number of particles >= 1, got {n!r}")
    particles = perturb(np.broadcast_to(mean, (n, mean.shape[0])), std, rng, space)
    return ParticleBelief(particles, np.full(n, -np.log(n)))


def predict(
    belief: ParticleBelief,
    motion_fn: MotionFn,
    action: np.ndarray,
    process_noise_std: np.ndarray,
    rng: np.random.Generator,
    space: NoiseSpace = NoiseSpace.EUCLIDEAN,
) -> ParticleBelief:
    """Motion update ``x_i ← f(x_i, u) + w_i`` of every particle; weights unchanged.

    Args:
        belief: current particles ``(N, D)``.
        motion_fn: batched model step ``(particles (N, D) read-only, action) -> (N, D)``; a contact model
            (e.g. Act-FIGNet's next-state prediction) closes into it.
        action: the applied action, passed through unchanged (e.g. a ``(6,)`` wrench command).
        process_noise_std: ``(tangent_dim(space, D),)`` per-step noise std, see :func:`perturb`.
        rng: source of randomness.
        space: state space.

    Returns:
        ParticleBelief with moved, perturbed particles and the same log-weights, except that a particle
        ``motion_fn`` flags as diverged gets log-weight ``-inf`` (weight 0).

    Raises:
        InvalidInputError: if ``motion_fn`` returns a wrong shape or non-finite states (of particles it does not
            flag), or flags every particle that had weight.
    """
    view = belief.particles.view()
    out = motion_fn(view, action)
    moved, diverged = out if isinstance(out, tuple) else (out, None)
    moved = np.asarray(moved, dtype=np.float64)
    if moved.shape != belief.particles.shape:
        raise InvalidInputError(f"motion_fn returned shape {moved.shape}, expected {belief.particles.shape}")
    log_weights = belief.log_weights
    if diverged is not None:
        diverged = np.asarray(diverged, dtype=bool)
        if diverged.shape != (belief.n_particles,):
            raise InvalidInputError(f"motion_fn's diverged flags must be ({belief.n_particles},), got {diverged.shape}")
        if diverged.any():
            log_weights = np.where(diverged, -np.inf, log_weights)
            if not np.any(np.isfinite(log_weights)):
                raise InvalidInputError(f"every particle with weight diverged in the motion update "
                                        f"({int(diverged.sum())} of {belief.n_particles} flagged by the model)")
            moved = np.where(diverged[:, None], belief.particles, moved)
            log_weights = normalize_log_weights(log_weights)
    if not np.all(np.isfinite(moved)):
        raise InvalidInputError("motion_fn returned NaN or inf states")
    return ParticleBelief(perturb(moved, process_noise_std, rng, space), log_weights)


def update(
    belief: ParticleBelief,
    predicted_wrench: np.ndarray,
    measured_wrench: np.ndarray,
    measurement_std: np.ndarray,
) -> ParticleBelief:
    """F/T measurement update: ``log w_i += log N(z; ẑ_i, diag σ²)``, then log-sum-exp normalisation.

    The Gaussian log-likelihood ``−½ Σ_j ((z_j − ẑ_ij) / σ_j)²`` (constants cancel in the normalisation)
    is added to the log-weights. Normalising in log space keeps the weights finite however far the
    measurement lies in the tail: a 10σ outlier on every axis gives log-likelihoods near −300 for all
    particles, which exponentiate to 0 in float64 but normalise to exact finite weights here.

    Args:
        belief: particles ``(N, D)`` after the motion update.
        predicted_wrench: ``(N, 6)`` wrench each particle predicts, sensor frame [N, N·m]. A particle whose
            prediction is not finite gets weight 0.
        measured_wrench: ``(6,)`` F/T reading, sensor frame [N, N·m], finite.
        measurement_std: ``(6,)`` measurement noise std [N, N·m], > 0.

    Returns:
        ParticleBelief with the same particles and updated, normalised log-weights.

    Raises:
        InvalidInputError: on wrong shapes, a non-finite measurement, or when no particle has a finite
            prediction.
    """
    predicted = np.asarray(predicted_wrench, dtype=np.float64)
    measured = np.asarray(measured_wrench, dtype=np.float64)
    sigma = _std_vector(measurement_std, WRENCH_DIM, "measurement_std", positive=True)
    if predicted.shape != (belief.n_particles, WRENCH_DIM):
        raise InvalidInputError(
            f"predicted_wrench must have shape ({belief.n_particles}, {WRENCH_DIM}), got {predicted.shape}"
        )
    if measured.shape != (WRENCH_DIM,) or not np.all(np.isfinite(measured)):
        raise InvalidInputError(f"measured_wrench must be a finite ({WRENCH_DIM},) vector, got {measured}")
    with np.errstate(over="ignore", invalid="ignore"):
        log_likelihood = -0.5 * np.sum(((predicted - measured) / sigma) ** 2, axis=1)
    log_likelihood[~np.isfinite(log_likelihood)] = -np.inf
    if not np.any(np.isfinite(log_likelihood)):
        raise InvalidInputError("no particle has a finite predicted wrench: cannot weigh the measurement")
    return ParticleBelief(belief.particles, normalize_log_weights(belief.log_weights + log_likelihood))


def maybe_resample(belief: ParticleBelief, threshold: float, rng: np.random.Generator) -> ParticleBelief:
    """Systematic resampling when the effective sample size is below ``threshold · N``.

    Args:
        belief: weighted particles ``(N, D)``.
        threshold: fraction of N in ``[0, 1]``; 0 never resamples, 1 resamples unless weights are uniform.
        rng: source of randomness (one uniform draw, only when resampling).

    Returns:
        ``belief`` itself when no resampling is needed; otherwise N copies of the selected particles
        with uniform log-weights ``−log N``.
    """
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(f"resample threshold must lie in [0, 1], got {threshold}")
    n = belief.n_particles
    if effective_sample_size(belief.log_weights) >= threshold * n:
        return belief
    indices = systematic_resample(belief.log_weights, rng)
    return ParticleBelief(belief.particles[indices], np.full(n, -np.log(n)))


def quaternion_mean(quats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted mean orientation: the unit eigenvector of ``M = Σ w_i q_i q_iᵀ`` of largest eigenvalue.

    Markley, Cheng, Crassidis & Oshman 2007, "Averaging quaternions", eq. (13): the maximiser of
    ``Σ w_i (q_i · q)²``, indifferent to the sign of each ``q_i`` (q and −q are one rotation).

    Args:
        quats: ``(N, 4)`` unit quaternions ``(w, x, y, z)``.
        weights: ``(N,)`` non-negative weights summing to 1.

    Returns:
        ``(4,)`` unit quaternion with ``w ≥ 0``.
    """
    quats = np.asarray(quats, dtype=np.float64)
    m = np.einsum("i,ij,ik->jk", np.asarray(weights, dtype=np.float64), quats, quats)
    _, vectors = np.linalg.eigh(m)
    return quat_normalize(vectors[:, -1])


def estimate(belief: ParticleBelief, space: NoiseSpace = NoiseSpace.EUCLIDEAN) -> np.ndarray:
    """Weighted mean state ``(D,)`` of the belief (the filter's point estimate).

    EUCLIDEAN: ``Σ w_i x_i``. POSE13: weighted arithmetic mean of positions and velocities and the
    eigenvector mean of the quaternions (:func:`quaternion_mean`).
    """
    weights = np.exp(normalize_log_weights(belief.log_weights))
    mean = weights @ belief.particles
    if NoiseSpace(space) is NoiseSpace.POSE13:
        tangent_dim(space, belief.particles.shape[1])
        mean[POSE13_QUAT] = quaternion_mean(belief.particles[:, POSE13_QUAT], weights)
    return mean
