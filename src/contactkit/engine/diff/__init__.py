"""Differentiable contact dynamics: the F/T reading as a torch function of state, action and geometry θ.

The placement paper (Li et al.) §IV: contact features of convex pieces whose vertices are affine in θ
(:mod:`.features`, feature pairs chosen by the numpy query of :mod:`.query`, redundant ones dropped by
:mod:`.reduction`), the box-friction LCP solved exactly and
differentiated at its active set (:mod:`.lcp_grad`), the impedance-controlled step with time of impact (:mod:`.step`),
and central finite-difference checks of every gradient (:mod:`.gradcheck`). Quaternion helpers in :mod:`.rotations`.
"""

from contactkit.engine.diff.features import (
    FeatureIndex,
    NormalKind,
    ParamPiece,
    PointKind,
    contact_features,
    face_planes_np,
    face_planes_torch,
    param_piece,
    world_tool_vertices,
)
from contactkit.engine.diff.gradcheck import Configuration, GradCheck, check_step
from contactkit.engine.diff.lcp_grad import RowStatus, active_set_solve, active_set_system, solve_batch
from contactkit.engine.diff.query import query_batch, topology
from contactkit.engine.diff.reduction import reduce_contacts
from contactkit.engine.diff.step import (
    DiffScene,
    StepConfig,
    StepOutput,
    contact_frames_torch,
    diff_step,
    prepare_geometry,
    spatial_inertia,
    time_of_impact,
    world_planes,
)

__all__ = [
    "Configuration",
    "DiffScene",
    "FeatureIndex",
    "GradCheck",
    "NormalKind",
    "ParamPiece",
    "PointKind",
    "RowStatus",
    "StepConfig",
    "StepOutput",
    "active_set_solve",
    "active_set_system",
    "check_step",
    "contact_features",
    "contact_frames_torch",
    "diff_step",
    "face_planes_np",
    "face_planes_torch",
    "param_piece",
    "prepare_geometry",
    "query_batch",
    "reduce_contacts",
    "solve_batch",
    "spatial_inertia",
    "time_of_impact",
    "topology",
    "world_planes",
    "world_tool_vertices",
]
