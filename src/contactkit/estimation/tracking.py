"""Tool-pose tracking over a recorded episode with a particle filter and F/T data (Act-FIGNet paper §IV-C).

Three configurations (Fig. 12):

- ``MOTION_ONLY``: open-loop prediction — the contact model rolled out from the true initial state with the
  recorded actions, no measurement;
- ``KNOWN_INIT``: a particle filter started around the true initial pose; each step a motion update with
  the contact model (plus process noise) and an F/T measurement update comparing the recorded reading with
  each particle's predicted reading;
- ``PERTURBED_INIT``: the same filter started around a pose corrupted by a fixed error (an inaccurate
  camera estimate).

The contact model is any :class:`~contactkit.model.ContactModel`: it predicts both the next state (motion
model) and the F/T reading (observation model). A particle is a 13-D tool state
(:data:`~contactkit.estimation.NoiseSpace.POSE13`); a model that reads ``H > 1`` past states gets a window
extrapolated backwards from each particle at constant velocity (:func:`constant_velocity_window`).

The filter's noise is not free: :func:`calibrate_noise` measures it as the per-axis RMS of the model's
one-step residuals on episodes recorded with ground truth (a calibration session, not the episodes that
are scored). The F/T std then holds the sensor's noise and bias *and* the model's force error, the process
std the model's motion error — neither overconfident (a likelihood sharper than the model's real error
turns every small force mismatch into a weight collapse) nor blind (a hand-set 1 N hides the ~1.5 N that
tells a peg resting on the slot's top face from one falling freely into the hole).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.estimation.particle_filter import (
    NoiseSpace,
    ParticleBelief,
    PFConfig,
    estimate,
    init_belief,
    maybe_resample,
    predict,
    tangent_dim,
    update,
)
from contactkit.estimation.resampling import effective_sample_size
from contactkit.model import ContactModel, check_control_period, rollout, step_with_status
from contactkit.rotations import (
    quat_angle_between,
    quat_conj,
    quat_integrate,
    quat_mul,
    quat_normalize,
    quat_to_rotvec,
    rotvec_to_quat,
)
from contactkit.state import STATE_DIM, BodyState

__all__ = [
    "NoiseCalibration",
    "RecordedEpisode",
    "TrackingConfig",
    "TrackingMode",
    "TrackingResult",
    "calibrate_noise",
    "constant_velocity_window",
    "one_step_residuals",
    "perturbed_pose",
    "track",
]


STD_FLOOR = 1e-9
"""Smallest calibrated std (in each axis' SI unit): keeps a Gaussian defined for an axis the model predicts
exactly (e.g. torques of a model with no rotation); far below any sensor's resolution."""


class TrackingMode(str, enum.Enum):
    """The three configurations of act-fignet Fig. 12."""

    MOTION_ONLY = "motion-only"
    KNOWN_INIT = "pf-known-init"
    PERTURBED_INIT = "pf-perturbed-init"


@dataclass(frozen=True, eq=False)
class RecordedEpisode:
    """What a robot logs during an episode.

    Attributes:
        states: ground-truth tool states, batch ``(T + 1,)``, world frame (used for the initial pose and
            for scoring only, never by the filter after the start).
        actions: ``(T, 6)`` applied actions in the model's ``action_mode`` units.
        wrenches: ``(T, 6)`` measured F/T readings during each step, sensor frame [N, N·m].
        control_dt: the log's control period [s] (a dataset's ``meta.control_dt``), or None when unknown; given,
            :func:`track`, :func:`one_step_residuals` and :func:`calibrate_noise` refuse a model of another period
            (:func:`~contactkit.model.check_control_period`).
    """

    states: BodyState
    actions: np.ndarray
    wrenches: np.ndarray
    control_dt: float | None = None

    def __post_init__(self) -> None:
        self.states.validated("RecordedEpisode.states")
        t = self.states.batch_shape
        actions = np.asarray(self.actions, dtype=np.float64)
        wrenches = np.asarray(self.wrenches, dtype=np.float64)
        if len(t) != 1 or t[0] < 2:
            raise InvalidInputError(f"RecordedEpisode.states must have batch (T+1,) with T >= 1, got {t}")
        for name, arr in (("actions", actions), ("wrenches", wrenches)):
            if arr.shape != (t[0] - 1, 6) or not np.all(np.isfinite(arr)):
                raise InvalidInputError(f"RecordedEpisode.{name} must be finite ({t[0] - 1}, 6), got {arr.shape}")
        object.__setattr__(self, "actions", actions)
        object.__setattr__(self, "wrenches", wrenches)
        dt = self.control_dt
        if dt is not None and (isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating))
                               or not np.isfinite(dt) or dt <= 0):
            raise InvalidInputError(f"RecordedEpisode.control_dt must be None or a finite number > 0 [s], got {dt!r}")

    def check_model(self, model: ContactModel) -> None:
        """Refuse a model whose control period is not the log's (when the log's is known)."""
        if self.control_dt is not None:
            check_control_period(float(model.control_dt), float(self.control_dt), "recorded episode")

    @property
    def n_steps(self) -> int:
        """T, the number of recorded control steps."""
        return int(self.actions.shape[0])


@dataclass(frozen=True, eq=False)
class TrackingConfig:
    """Static settings of the tracking run.

    Attributes:
        pf: particle-filter settings; ``noise_space`` must be POSE13 (process noise ``(12,)``).
        init_std: ``(12,)`` spread of the initial belief around the given pose (tangent units of POSE13).
        perturb_pos: norm of the position error of the perturbed initial pose [m].
        perturb_rot: angle of the orientation error of the perturbed initial pose [rad].
        perturbed_init_std: ``(12,)`` spread of the initial belief around the perturbed pose.
    """

    pf: PFConfig
    init_std: np.ndarray
    perturb_pos: float
    perturb_rot: float
    perturbed_init_std: np.ndarray

    def __post_init__(self) -> None:
        if self.pf.noise_space is not NoiseSpace.POSE13:
            raise InvalidInputError(f"tracking filters POSE13 tool states, got noise space {self.pf.noise_space}")
        dim = tangent_dim(NoiseSpace.POSE13, STATE_DIM)
        for name in ("init_std", "perturbed_init_std"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (dim,) or not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
                raise InvalidInputError(f"TrackingConfig.{name} must be ({dim},) finite and >= 0, got {arr}")
            object.__setattr__(self, name, arr)
        for name in ("perturb_pos", "perturb_rot"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0.0):
                raise InvalidInputError(f"TrackingConfig.{name} must be finite and >= 0")


@dataclass(frozen=True, eq=False)
class TrackingResult:
    """Estimates against ground truth.

    Attributes:
        mode: the configuration.
        estimates: ``(T + 1, 13)`` estimated tool states (index 0: the initial estimate).
        pos_err: ``(T + 1,)`` position error ‖p̂ − p‖ [m].
        rot_err: ``(T + 1,)`` geodesic orientation error [rad].
        ess: ``(T,)`` effective sample size after each measurement update (N for motion-only).
    """

    mode: TrackingMode
    estimates: np.ndarray
    pos_err: np.ndarray
    rot_err: np.ndarray
    ess: np.ndarray


def constant_velocity_window(states: np.ndarray, h: int, dt: float) -> BodyState:
    """Histories ``(N, h)`` ending at ``states`` ``(N, 13)``, extrapolated backwards at constant velocity.

    State ``k`` steps before the last: ``p − k·dt·v``, ``q`` rotated by ``−k·dt·ω`` (world frame), the same
    velocities. With ``h = 1`` the window is the state itself.
    """
    states = np.asarray(states, dtype=np.float64)
    n = states.shape[0]
    lags = (np.arange(h)[::-1] * dt)[None, :, None]  # oldest first, 0 for the last state
    pos = states[:, None, 0:3] - lags * states[:, None, 7:10]
    quat = quat_integrate(np.repeat(states[:, None, 3:7], h, axis=1), -lags * states[:, None, 10:13], 1.0)
    vel = np.broadcast_to(states[:, None, 7:13], (n, h, 6))
    return BodyState(pos, quat, vel[..., 0:3].copy(), vel[..., 3:6].copy())


def perturbed_pose(state: BodyState, pos_err: float, rot_err: float, rng: np.random.Generator) -> BodyState:
    """``state`` moved by ``pos_err`` [m] in a random direction and turned by ``rot_err`` [rad] about a random
    world axis (the corrupted initial estimate of ``PERTURBED_INIT``)."""
    directions = rng.standard_normal((2, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    quat = quat_normalize(quat_mul(rotvec_to_quat(rot_err * directions[1]), state.quat))
    return state.replace(pos=state.pos + pos_err * directions[0], quat=quat)


@dataclass(frozen=True, eq=False)
class NoiseCalibration:
    """Filter noise measured from a model's one-step residuals (:func:`calibrate_noise`).

    Attributes:
        process_std: ``(12,)`` POSE13 tangent std per control step ``[m ×3, rad ×3, m/s ×3, rad/s ×3]``.
        measurement_std: ``(6,)`` F/T std ``[N ×3, N·m ×3]``, sensor frame.
        n_samples: number of residuals (control steps) each std is computed from.
    """

    process_std: np.ndarray
    measurement_std: np.ndarray
    n_samples: int


def one_step_residuals(model: ContactModel, episode: RecordedEpisode) -> tuple[np.ndarray, np.ndarray]:
    """Truth minus the model's prediction, one control step ahead of every recorded state.

    Each step ``t`` the model starts from the recorded state ``x_t`` (window from
    :func:`constant_velocity_window`, as the filter builds it for a particle) with the recorded action
    ``u_t``; all ``T`` steps go in one batch.

    Returns:
        ``(state (T, 12), wrench (T, 6))``: the state residual in the POSE13 tangent — position [m],
        world-frame rotation vector of ``q_true ⊗ q_pred⁻¹`` [rad] (the convention of
        :func:`~contactkit.estimation.particle_filter.perturb`), linear [m/s] and angular [rad/s] velocity —
        and the reading minus the predicted reading [N, N·m], sensor frame.
    """
    episode.check_model(model)
    states = episode.states.as_array()
    window = constant_velocity_window(states[:-1], int(model.history), float(model.control_dt))
    nxt, wrench = model.step(window, episode.actions)
    pred, truth = nxt.as_array(), states[1:]
    rot = quat_to_rotvec(quat_mul(truth[:, 3:7], quat_conj(pred[:, 3:7])))
    state = np.concatenate([truth[:, 0:3] - pred[:, 0:3], rot, truth[:, 7:13] - pred[:, 7:13]], axis=1)
    return state, episode.wrenches - np.asarray(wrench, dtype=np.float64)


def calibrate_noise(model: ContactModel, episodes: list[RecordedEpisode]) -> NoiseCalibration:
    """Process and F/T noise std of ``model``: per-axis RMS of its one-step residuals over ``episodes``.

    ``σ_k = sqrt(mean_t r_tk²)`` is the maximum-likelihood std of a zero-mean Gaussian fitted to the
    residuals ``r`` of :func:`one_step_residuals` — the ``Q`` and ``R`` of the bootstrap filter in
    :func:`track` (Act-FIGNet paper §IV-C leaves them "empirically selected"; here they are measured). The
    residual is taken about zero, so a constant sensor bias or a systematic model error (other mass,
    friction, contact softness) widens the std instead of being ignored. Episodes must carry ground-truth
    states (e.g. a motion-capture calibration session), and should not be the ones that are then scored.

    Args:
        model: the motion and observation model the filter will use.
        episodes: at least one recorded episode, actions in ``model.action_mode`` units.

    Returns:
        :class:`NoiseCalibration`; each std is at least :data:`STD_FLOOR`.
    """
    if not episodes:
        raise InvalidInputError("calibrate_noise needs at least one recorded episode")
    residuals = [one_step_residuals(model, episode) for episode in episodes]
    state = np.concatenate([r[0] for r in residuals])
    wrench = np.concatenate([r[1] for r in residuals])
    if not (np.all(np.isfinite(state)) and np.all(np.isfinite(wrench))):
        raise InvalidInputError("calibrate_noise: the model predicted NaN or inf on the calibration episodes")
    rms = lambda r: np.maximum(np.sqrt(np.mean(r**2, axis=0)), STD_FLOOR)  # noqa: E731
    return NoiseCalibration(rms(state), rms(wrench), int(state.shape[0]))


def _errors(estimates: np.ndarray, truth: BodyState) -> tuple[np.ndarray, np.ndarray]:
    return (np.linalg.norm(estimates[:, 0:3] - truth.pos, axis=-1),
            quat_angle_between(estimates[:, 3:7], truth.quat))


def _motion_only(model: ContactModel, episode: RecordedEpisode) -> TrackingResult:
    first = episode.states.index(0).as_array()[None]
    window = constant_velocity_window(first, int(model.history), float(model.control_dt))
    states, _ = rollout(model, window.index(0), episode.actions)
    estimates = np.concatenate([first, states.as_array()])
    pos_err, rot_err = _errors(estimates, episode.states)
    return TrackingResult(TrackingMode.MOTION_ONLY, estimates, pos_err, rot_err,
                          np.ones(episode.n_steps))


def _filter(model: ContactModel, episode: RecordedEpisode, config: TrackingConfig, belief: ParticleBelief,
            mode: TrackingMode, rng: np.random.Generator) -> TrackingResult:
    space, pf = NoiseSpace.POSE13, config.pf
    h, dt = int(model.history), float(model.control_dt)
    predicted: dict[str, np.ndarray] = {}

    def motion(particles: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        window = constant_velocity_window(particles, h, dt)
        nxt, predicted["wrench"], predicted["diverged"] = step_with_status(
            model, window, np.broadcast_to(action, (len(particles), 6)))
        return nxt.as_array(), predicted["diverged"]

    estimates, ess = [estimate(belief, space)], []
    for t in range(episode.n_steps):
        belief = predict(belief, motion, episode.actions[t], pf.process_noise_std, rng, space)
        belief = update(belief, predicted["wrench"], episode.wrenches[t], pf.measurement_std)
        estimates.append(estimate(belief, space))
        ess.append(effective_sample_size(belief.log_weights))
        # a particle the model flagged as diverged is resampled away at once, whatever the ESS
        belief = maybe_resample(belief, 1.0 if predicted["diverged"].any() else pf.resample_threshold, rng)
    estimates = np.stack(estimates)
    pos_err, rot_err = _errors(estimates, episode.states)
    return TrackingResult(mode, estimates, pos_err, rot_err, np.array(ess))


def track(
    model: ContactModel,
    episode: RecordedEpisode,
    config: TrackingConfig,
    mode: TrackingMode,
    rng: np.random.Generator,
) -> TrackingResult:
    """Estimate the tool pose along ``episode`` in configuration ``mode`` (Act-FIGNet paper §IV-C, Fig. 12).

    The filter is a bootstrap particle filter: motion update ``x ← f(x, u_t) + w`` with the contact model
    ``f``, measurement update ``w_i ∝ w_i · N(z_t; ĥ(x_i, u_t), diag σ²)`` with the reading ``ĥ`` the model
    predicts during the same step, weighted-mean estimate, systematic resampling below the ESS threshold.

    Args:
        model: motion and observation model (its ``action_mode`` must match ``episode.actions``).
        episode: recorded states ``(T + 1,)``, actions ``(T, 6)``, readings ``(T, 6)``.
        config: filter and initialisation settings.
        mode: which of the three configurations.
        rng: source of randomness (initial belief, process noise, resampling, the perturbation).

    Returns:
        :class:`TrackingResult` with ``(T + 1,)`` position [m] and orientation [rad] errors.
    """
    mode = TrackingMode(mode)
    episode.check_model(model)
    if mode is TrackingMode.MOTION_ONLY:
        return _motion_only(model, episode)
    start = episode.states.index(0)
    std = config.init_std
    if mode is TrackingMode.PERTURBED_INIT:
        start = perturbed_pose(start, config.perturb_pos, config.perturb_rot, rng)
        std = config.perturbed_init_std
    belief = init_belief(start.as_array(), std, config.pf.n_particles, rng, NoiseSpace.POSE13)
    return _filter(model, episode, config, belief, mode, rng)
