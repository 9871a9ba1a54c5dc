"""Multi-point pushing with a redundant arm (the hybrid-contact residual-RL pushing paper): the arm, pusher and
objects as a scene, the hybrid MLCP contact dynamics with box friction that the policy trains in, and the
"real" MuJoCo world it is deployed in.

Layer: beside :mod:`contactkit.tasks` (above the engine, MuJoCo and control layers, below data).
Its modules load on first use (PEP 562).
"""

_LAZY = {
    "ObjectKind": "contactkit.pushing.scene",
    "PushScene": "contactkit.pushing.scene",
    "build_mjcf": "contactkit.pushing.scene",
    "Arm": "contactkit.pushing.arm",
    "ArmSingularityError": "contactkit.pushing.arm",
    "JointPD": "contactkit.pushing.arm",
    "HybridPushWorld": "contactkit.pushing.hybrid",
    "PushState": "contactkit.pushing.hybrid",
    "PushStep": "contactkit.pushing.hybrid",
    "DriveLoop": "contactkit.pushing.real",
    "RealPushWorld": "contactkit.pushing.real",
    "RealWorldParams": "contactkit.pushing.real",
    "FrictionPatches": "contactkit.pushing.patches",
    "PhysicsDraw": "contactkit.pushing.mismatch",
    "PhysicsRanges": "contactkit.pushing.mismatch",
    "REAL_RANGES": "contactkit.pushing.mismatch",
    "draw_physics": "contactkit.pushing.mismatch",
    "real_draw": "contactkit.pushing.mismatch",
    "RewardKind": "contactkit.pushing.env",
    "TrainOptions": "contactkit.pushing.residual",
    "EpisodeLog": "contactkit.pushing.episode_log",
    "PushPlan": "contactkit.pushing.controller",
    "plan_push": "contactkit.pushing.controller",
    "run_episode": "contactkit.pushing.controller",
    "episode_errors": "contactkit.pushing.episode_log",
    "PushingResidualEnv": "contactkit.pushing.env",
    "eq17_reward": "contactkit.pushing.env",
    "ResidualPolicy": "contactkit.pushing.residual",
    "TrainResult": "contactkit.pushing.residual",
    "load_residual": "contactkit.pushing.residual",
    "save_residual": "contactkit.pushing.residual",
    "train_residual": "contactkit.pushing.residual",
    "PolicyScore": "contactkit.pushing.validation",
    "score_policy": "contactkit.pushing.validation",
    "validation_draws": "contactkit.pushing.validation",
}

__all__ = [
    "REAL_RANGES",
    "Arm",
    "ArmSingularityError",
    "DriveLoop",
    "EpisodeLog",
    "FrictionPatches",
    "HybridPushWorld",
    "JointPD",
    "ObjectKind",
    "PhysicsDraw",
    "PhysicsRanges",
    "PolicyScore",
    "PushPlan",
    "PushScene",
    "PushState",
    "PushStep",
    "PushingResidualEnv",
    "RealPushWorld",
    "RealWorldParams",
    "ResidualPolicy",
    "RewardKind",
    "TrainOptions",
    "TrainResult",
    "build_mjcf",
    "draw_physics",
    "episode_errors",
    "eq17_reward",
    "load_residual",
    "plan_push",
    "real_draw",
    "run_episode",
    "save_residual",
    "score_policy",
    "train_residual",
    "validation_draws",
]


def __getattr__(name: str):
    """The public names of the submodules, imported when first asked for (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'contactkit.pushing' has no attribute {name!r}")
