"""State estimation: particle filter with force-torque measurement updates (Act-FIGNet paper §IV-C)."""

from contactkit.estimation.particle_filter import (
    NoiseSpace,
    ParticleBelief,
    PFConfig,
    estimate,
    init_belief,
    maybe_resample,
    perturb,
    predict,
    quaternion_mean,
    tangent_dim,
    update,
)
from contactkit.estimation.resampling import effective_sample_size, normalize_log_weights, systematic_resample
from contactkit.estimation.tracking import (
    NoiseCalibration,
    RecordedEpisode,
    TrackingConfig,
    TrackingMode,
    TrackingResult,
    calibrate_noise,
    one_step_residuals,
    perturbed_pose,
    track,
)

__all__ = [
    "NoiseCalibration",
    "NoiseSpace",
    "PFConfig",
    "RecordedEpisode",
    "TrackingConfig",
    "TrackingMode",
    "TrackingResult",
    "calibrate_noise",
    "one_step_residuals",
    "perturbed_pose",
    "track",
    "ParticleBelief",
    "effective_sample_size",
    "estimate",
    "init_belief",
    "maybe_resample",
    "normalize_log_weights",
    "perturb",
    "predict",
    "quaternion_mean",
    "systematic_resample",
    "tangent_dim",
    "update",
]
