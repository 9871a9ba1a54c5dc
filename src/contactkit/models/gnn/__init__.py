"""Act-FIGNet and the FIGNet+ baseline: action-conditional graph networks for tool motion and F/T.

Paper: Yi, Hertzberg, Atzmueller, "Learning Contact Dynamics through Touching: Action-conditional Graph
Neural Networks for Robotic Peg Insertion" (``shared/papers/act-fignet_peg-insertion.txt``).

Typical use::

    cfg = TrainConfig.preset("small")
    result = train(cfg, train_ds, val_ds, "runs/gnn", scene=scene, step=StepSpec.from_world(params))
    model = GnnContactModel.from_checkpoint(result.best_checkpoint, scene)
    next_state, ft = model.step(history, action)
"""

from contactkit.models.gnn.checkpoint import Checkpoint, load_checkpoint, restore_model, save_checkpoint
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.face_edges import FaceEdges, face_interaction_edges, face_pairs_within
from contactkit.models.gnn.graph import Graph, GraphConfig, ModelVariant, batch_graphs, build_graph, feature_layouts
from contactkit.models.gnn.kinematics import GraphInputs, GraphTargets, SceneArrays, StepSpec, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.normalize import RunningNormalizer
from contactkit.models.gnn.postprocess import align_pose, finite_difference_velocity, integrate_positions
from contactkit.models.gnn.samples import Batch, RotationAugmentation, make_batch
from contactkit.models.gnn.train import TrainConfig, TrainProgress, TrainResult, train, validate
from contactkit.models.gnn.triangles import triangle_pair_closest_points

__all__ = [
    "Batch",
    "Checkpoint",
    "EncodeProcessDecode",
    "FaceEdges",
    "GnnContactModel",
    "Graph",
    "GraphConfig",
    "GraphInputs",
    "GraphTargets",
    "ModelConfig",
    "ModelVariant",
    "RotationAugmentation",
    "RunningNormalizer",
    "SceneArrays",
    "StepSpec",
    "TrainConfig",
    "TrainProgress",
    "TrainResult",
    "align_pose",
    "batch_graphs",
    "build_graph",
    "face_interaction_edges",
    "face_pairs_within",
    "feature_layouts",
    "finite_difference_velocity",
    "integrate_positions",
    "load_checkpoint",
    "make_batch",
    "prepare_scene",
    "restore_model",
    "save_checkpoint",
    "train",
    "triangle_pair_closest_points",
    "validate",
]
