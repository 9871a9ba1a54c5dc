"""Tasks: scenes of the papers' experiments, the peg-insertion gymnasium environment, connector insertion."""

from contactkit.tasks.connector import (
    SOCKET_VARIANTS,
    ConnectorGeometry,
    Misalignment,
    SocketVariant,
    connector_insertion,
    plug,
    socket,
)
from contactkit.tasks.mesh_checks import (
    PIECE_DEVIATION_FRACTION,
    PLAUSIBLE_EXTENT_M,
    PartDeviation,
    deviation_findings,
    fit_clearance,
    part_deviation,
    size_finding,
)
from contactkit.tasks.peg_env import (
    INSERTION_PAIRINGS,
    ObservationBounds,
    PegEnvConfig,
    PegInsertionEnv,
    split_observation,
)
from contactkit.tasks.reward import InsertionGoal, goal_reward, insertion_reward, is_halfway, is_success
from contactkit.tasks.scenes import (
    TRAINING_SHAPES,
    make_tool,
    mesh_peg_in_hole,
    peg_in_hole,
    random_training_scene,
    table,
    tip_frame,
)

__all__ = [
    "INSERTION_PAIRINGS", "PIECE_DEVIATION_FRACTION", "PLAUSIBLE_EXTENT_M",
    "SOCKET_VARIANTS", "TRAINING_SHAPES", "ConnectorGeometry", "InsertionGoal", "Misalignment",
    "ObservationBounds",
    "PegEnvConfig",
    "PartDeviation", "PegInsertionEnv", "SocketVariant", "deviation_findings", "fit_clearance", "part_deviation",
    "size_finding", "connector_insertion", "goal_reward", "insertion_reward", "is_halfway",
    "is_success", "make_tool", "mesh_peg_in_hole", "peg_in_hole", "plug", "random_training_scene", "socket",
    "split_observation", "table", "tip_frame",
]
