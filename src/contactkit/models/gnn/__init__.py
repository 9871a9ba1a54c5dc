"""Act-FIGNet and the FIGNet+ baseline: action-conditional graph networks for tool motion and F/T.

Paper: Yi, Hertzberg, Atzmueller, "Learning Contact Dynamics through Touching: Action-conditional Graph
Neural Networks for Robotic Peg Insertion" (``shared/papers/act-fignet_peg-insertion.txt``).

Typical use::

    cfg = TrainConfig.preset("small")  # pose-delta actions (GraphConfig.action_mode)
    result = train(cfg, train_ds, val_ds, "runs/gnn", scene=scene, step=StepSpec.from_world(params))
    model = GnnContactModel.from_checkpoint(result.best_checkpoint, scene)  # refuses a wrench-action model
    next_state, ft = model.step(history, pose_delta)  # history (*B, h, ...), pose_delta (*B, 6)
"""

from contactkit.models.gnn.actions import (
    ImpedanceLaw,
    action_wrench,
    command_wrench,
    finite_difference_twist,
    impedance_law,
)
from contactkit.models.gnn.checkpoint import Checkpoint, load_checkpoint, restore_model, save_checkpoint
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.ddp import shard_batch, spawn_training, train_distributed
from contactkit.models.gnn.face_edges import (
    FaceEdges,
    face_interaction_edges,
    face_interaction_edges_many,
    face_pairs_within,
)
from contactkit.models.gnn.graph import (
    EdgeType,
    Graph,
    GraphConfig,
    ModelVariant,
    NodeType,
    batch_graphs,
    build_graph,
    build_graphs,
    feature_layouts,
)
from contactkit.models.gnn.kinematics import GraphInputs, GraphTargets, SceneArrays, StepSpec, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.normalize import RunningNormalizer
from contactkit.models.gnn.population import PopulationCache, population_cache, population_graph
from contactkit.models.gnn.postprocess import align_pose, finite_difference_velocity, integrate_positions
from contactkit.models.gnn.samples import Batch, RotationAugmentation, make_batch
from contactkit.models.gnn.train import TrainConfig, TrainProgress, TrainResult, train, validate
from contactkit.models.gnn.triangles import triangle_pair_closest_points

__all__ = [
    "Batch",
    "Checkpoint",
    "EdgeType",
    "EncodeProcessDecode",
    "FaceEdges",
    "GnnContactModel",
    "Graph",
    "GraphConfig",
    "GraphInputs",
    "GraphTargets",
    "ImpedanceLaw",
    "ModelConfig",
    "ModelVariant",
    "PopulationCache",
    "NodeType",
    "RotationAugmentation",
    "RunningNormalizer",
    "SceneArrays",
    "StepSpec",
    "TrainConfig",
    "TrainProgress",
    "TrainResult",
    "action_wrench",
    "align_pose",
    "batch_graphs",
    "build_graph",
    "build_graphs",
    "command_wrench",
    "face_interaction_edges",
    "face_interaction_edges_many",
    "face_pairs_within",
    "feature_layouts",
    "finite_difference_twist",
    "finite_difference_velocity",
    "impedance_law",
    "integrate_positions",
    "load_checkpoint",
    "make_batch",
    "population_cache",
    "population_graph",
    "prepare_scene",
    "restore_model",
    "save_checkpoint",
    "shard_batch",
    "spawn_training",
    "train",
    "train_distributed",
    "triangle_pair_closest_points",
    "validate",
]
