"""Control: the impedance controller, scripted policies, iCEM MPC and the force-minimising QP."""

from contactkit.control.clipping import ClipTally, CommandsClipped
from contactkit.control.force_distribution import (
    DistributionStatus,
    ForceDistribution,
    InfeasibleDistributionError,
    PlanarObject,
    PushedFace,
    TwoTipPusher,
    admissible_centres,
    box_face,
    box_object,
    distribute_forces,
    distribute_trajectory,
    ground_friction_wrench,
    polygon_face,
    polygon_object,
    require_feasible,
    required_wrench,
)
from contactkit.control.force_qp import ForceQPConfig, ForceQPSolution, solve_force_clip, solve_force_qp
from contactkit.control.icem import ICEMConfig, ICEMState, initial_state, optimize, shift
from contactkit.control.icr import (
    AngularProfile,
    ArcMode,
    IcrArc,
    PlanarWorkspace,
    ProfileKind,
    body_point_twist,
    icr_acceleration,
    icr_arc,
    icr_trajectory,
    profile_progress,
)
from contactkit.control.impedance import command_target, damping_gains, impedance_wrench, pose_target, tcp_position
from contactkit.control.mpc import ActionScale, MPCAgent, MPCConfig, MPCState, make_objective, mpc_reset, mpc_step
from contactkit.control.policies import (
    CirclePolicy,
    PolicyName,
    RandomSplinePolicy,
    SpiralPolicy,
    make_policy,
)
from contactkit.control.pushing_pd import PDCommand, PDGains, damped_pinv, pd_torque, planar_task_jacobian
from contactkit.control.tare import Tare, TareMode, estimate_tare
from contactkit.model import ActionMode

__all__ = [
    "ActionMode", "ActionScale", "CirclePolicy", "ForceQPConfig", "ForceQPSolution", "ICEMConfig", "ICEMState",
    "MPCAgent", "MPCConfig", "MPCState", "PolicyName", "RandomSplinePolicy", "SpiralPolicy", "damping_gains",
    "impedance_wrench", "initial_state", "make_objective", "make_policy", "mpc_reset", "mpc_step", "optimize",
    "pose_target", "shift", "solve_force_clip", "solve_force_qp",
    # a real cell's controller (issue 31 part 3): absolute targets at a TCP, limits reported when they bind
    "ClipTally", "CommandsClipped", "command_target", "tcp_position",
    # pushing paper (issue 18): ICR planning, force distribution (eq 13), PD baseline (eqs 14-15)
    "AngularProfile", "ArcMode", "DistributionStatus", "ForceDistribution", "IcrArc", "InfeasibleDistributionError",
    "PDCommand", "PDGains", "PlanarObject", "PlanarWorkspace", "ProfileKind", "PushedFace", "TwoTipPusher",
    "admissible_centres", "box_face", "box_object", "damped_pinv", "distribute_forces", "distribute_trajectory",
    "ground_friction_wrench", "icr_acceleration", "icr_arc", "icr_trajectory", "pd_torque", "planar_task_jacobian",
    "profile_progress", "require_feasible", "required_wrench", "body_point_twist", "polygon_face", "polygon_object",
    # sensor tare (issue 20)
    "Tare", "TareMode", "estimate_tare",
]
