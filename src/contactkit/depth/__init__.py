"""Learned penetration depth of a part (tight-tolerance paper §III-A, network of §V-B): a small MLP per
static part, trained offline from its mesh alone, queried for every candidate node of the moving part in
one batched call; the contact normal is the gradient of the depth.

Symmetry coordinates (:mod:`contactkit.depth.coordinates`): the peg-in-hole HOLE is learned in cylindrical
coordinates (r, z), the M48 BOLT's thread in helical coordinates (r, cos φ, sin φ, z); any other part in
cartesian coordinates."""

from contactkit.depth.budget import CostModel, expected_seconds, fit_budget, measure_costs, scaled_config, steps_config
from contactkit.depth.checkpoint import load_depth_net, save_depth_net
from contactkit.depth.coordinates import R_EPS, Coordinates, SymmetryFrame, make_frame
from contactkit.depth.mining import MateSampler, mined_samples, warm_start
from contactkit.depth.netset import depth_net_files, load_depth_nets, save_depth_net_set
from contactkit.depth.network import DepthNet, DepthNetSet, NodeContacts, detect, features, query
from contactkit.depth.training import (
    ACCURACY_BAND,
    ACCURACY_SAMPLES,
    DepthSetup,
    TrainConfig,
    accuracy,
    default_setup,
    train_depth_net,
    training_samples,
)

__all__ = [
    "ACCURACY_BAND",
    "ACCURACY_SAMPLES",
    "R_EPS",
    "Coordinates",
    "CostModel",
    "DepthNet",
    "DepthNetSet",
    "DepthSetup",
    "MateSampler",
    "NodeContacts",
    "SymmetryFrame",
    "TrainConfig",
    "accuracy",
    "default_setup",
    "depth_net_files",
    "detect",
    "expected_seconds",
    "features",
    "fit_budget",
    "load_depth_net",
    "load_depth_nets",
    "make_frame",
    "measure_costs",
    "mined_samples",
    "query",
    "save_depth_net",
    "save_depth_net_set",
    "scaled_config",
    "steps_config",
    "train_depth_net",
    "training_samples",
    "warm_start",
]
