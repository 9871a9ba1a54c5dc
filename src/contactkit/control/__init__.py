"""Control: the impedance controller, scripted policies, iCEM MPC and the force-minimising QP."""

from contactkit.control.force_qp import ForceQPConfig, ForceQPSolution, solve_force_clip, solve_force_qp
from contactkit.control.icem import ICEMConfig, ICEMState, initial_state, optimize, shift
from contactkit.control.impedance import damping_gains, impedance_wrench, pose_target
from contactkit.control.mpc import ActionScale, MPCAgent, MPCConfig, MPCState, make_objective, mpc_reset, mpc_step
from contactkit.control.policies import (
    CirclePolicy,
    PolicyName,
    RandomSplinePolicy,
    SpiralPolicy,
    make_policy,
)
from contactkit.model import ActionMode

__all__ = [
    "ActionMode", "ActionScale", "CirclePolicy", "ForceQPConfig", "ForceQPSolution", "ICEMConfig", "ICEMState",
    "MPCAgent", "MPCConfig", "MPCState", "PolicyName", "RandomSplinePolicy", "SpiralPolicy", "damping_gains",
    "impedance_wrench", "initial_state", "make_objective", "make_policy", "mpc_reset", "mpc_step", "optimize",
    "pose_target", "shift", "solve_force_clip", "solve_force_qp",
]
