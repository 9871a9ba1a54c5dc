"""Online linear contact-force model: Linear Model Learning (LML), Tracy et al., connector insertion.

``ỹ ≈ G̃ w`` (eq 2) maps a feature vector ``w`` (eq 1, e.g. the pose/command map of eq 18) to the
F/T reading; LML (Algorithm 1) learns ``G̃`` online as a Kalman filter over the whitened rows, with the
regulariser as the prior (eq 16) and adaptive regularisation (Algorithm 2). See ``docs/lml.md``.
"""

from contactkit.models.linear.baselines import (
    ResolveState,
    RLSState,
    resolve_init,
    resolve_update,
    rls_init,
    rls_update,
)
from contactkit.models.linear.fast import (
    FastLMLState,
    fast_predict,
    fast_predict_wrench,
    fast_update,
    from_fast,
    to_fast,
)
from contactkit.models.linear.features import (
    POSE_FEATURE_DIM,
    FeatureMap,
    PoseCommandFeatures,
    attitude_error,
    features_from_episode,
)
from contactkit.models.linear.kalman import (
    DEFAULT_PRIOR_WEIGHT,
    LMLState,
    SensorNoise,
    drift_process_noise,
    init_state,
    joseph_rank_one,
    predict,
    predict_wrench,
    sensor_noise,
    update,
)
from contactkit.models.linear.model import Backend, LinearForceModel
from contactkit.models.linear.regularize import regularize

__all__ = [
    "DEFAULT_PRIOR_WEIGHT",
    "POSE_FEATURE_DIM",
    "Backend",
    "FastLMLState",
    "FeatureMap",
    "LMLState",
    "LinearForceModel",
    "PoseCommandFeatures",
    "RLSState",
    "ResolveState",
    "SensorNoise",
    "attitude_error",
    "drift_process_noise",
    "fast_predict",
    "fast_predict_wrench",
    "fast_update",
    "features_from_episode",
    "from_fast",
    "init_state",
    "joseph_rank_one",
    "predict",
    "predict_wrench",
    "regularize",
    "resolve_init",
    "resolve_update",
    "rls_init",
    "rls_update",
    "sensor_noise",
    "to_fast",
    "update",
]
