"""Physics plus a learned residual: a backbone (nominal MuJoCo or the contactkit engine) whose next state and F/T
reading a gated ensemble corrects (issue: "a learned contact model that beats the simulator on a CPU").

* :mod:`~contactkit.models.residual.features`: inputs and targets in the tool frame, relative to the static geometry;
* :mod:`~contactkit.models.residual.network`: the ensemble, its normalisation and its uncertainty gate;
* :mod:`~contactkit.models.residual.transitions`: logged episodes → transitions with backbone predictions and tare;
* :mod:`~contactkit.models.residual.train`, :mod:`~contactkit.models.residual.rollout_loss`: the training;
* :mod:`~contactkit.models.residual.contact_model`: the :class:`~contactkit.model.ContactModel`;
* :mod:`~contactkit.models.residual.checkpoint`: safetensors checkpoints tied to their backbone.
"""

from contactkit.models.residual.checkpoint import (
    ResidualCheckpoint,
    check_compatible,
    load_residual,
    save_residual,
)
from contactkit.models.residual.contact_model import Backbone, ResidualContactModel, make_backbone
from contactkit.models.residual.features import FEATURE_DIM, HISTORY, TARGET_DIM, apply_correction, features, targets
from contactkit.models.residual.network import GATE_FALLOFF, GATE_QUANTILE, NetConfig, ResidualNet
from contactkit.models.residual.train import ResidualTrainConfig, TrainRecord, train_residual
from contactkit.models.residual.transitions import LoggedEpisode, Transitions, build_transitions, tare_offsets

__all__ = [
    "FEATURE_DIM",
    "GATE_FALLOFF",
    "GATE_QUANTILE",
    "HISTORY",
    "TARGET_DIM",
    "Backbone",
    "LoggedEpisode",
    "NetConfig",
    "ResidualCheckpoint",
    "ResidualContactModel",
    "ResidualNet",
    "ResidualTrainConfig",
    "TrainRecord",
    "Transitions",
    "apply_correction",
    "build_transitions",
    "check_compatible",
    "features",
    "load_residual",
    "make_backbone",
    "save_residual",
    "tare_offsets",
    "targets",
    "train_residual",
]
