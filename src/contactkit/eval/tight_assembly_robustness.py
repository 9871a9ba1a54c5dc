"""Section (e) of the tight-assembly experiment (:mod:`contactkit.eval.exp_tight_assembly`): robustness, the
stand-in for §V-F's haptic rendering — simulated minutes of random arbitrary commands on the nut, with NaN, exact
penetration and energy growth.

Energy: the tool's kinetic energy plus the coupling springs' ``½k|e|² + ½k_r|φ|²``; a setpoint's jump adds energy
through the coupling (the operator's work); ``energy_growth`` [J] is the sum over steps of the change within each
step (the simulator's own contribution: ≤ 0 for a passive simulation).
"""

from __future__ import annotations

import math
import time

import numpy as np

from contactkit.eval.tight_assembly_pipeline import Pipeline, TightAssemblyConfig, _configs
from contactkit.eval.tight_assembly_sim import penetration

ROBUST_SPIN = 3.0
"""[rad/s] scale of the commanded turning speed of the nut (the keyboard-driven gripper of §V-F)."""
ROBUST_OFFSET = 2e-3
"""[m] scale of the commanded position offset from the screwed pose (the haptic device's hand motion)."""
ROBUST_TILT = 0.03
"""[rad] scale of the commanded tilt."""
ROBUST_TAU = 0.5
"""[s] correlation time of the random commands (Ornstein-Uhlenbeck)."""


def random_commands(pitch: float, n: int, rng: np.random.Generator, z0: float, turns: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(pos (n,3), quat (n,4))`` arbitrary nut setpoints: the screwed pose (from height ``z0`` [m]) of a turn
    angle whose speed is an Ornstein-Uhlenbeck process (scale :data:`ROBUST_SPIN`), kept within ``[0, turns]``
    turns by reflection (the nut stays on the thread: below is the table, above the bolt's end), plus OU offsets
    and tilts (:data:`ROBUST_OFFSET`, :data:`ROBUST_TILT`), all with correlation time :data:`ROBUST_TAU`, at
    ``SIM_DT``."""
    from contactkit.assembly.task import SIM_DT
    from contactkit.geometry.fasteners import screw_pose
    from contactkit.rotations import quat_mul, rotvec_to_quat

    a, top = math.exp(-SIM_DT / ROBUST_TAU), 2.0 * math.pi * max(turns, 0.0)
    x = np.zeros(6)
    scale = np.array([ROBUST_SPIN, ROBUST_OFFSET, ROBUST_OFFSET, ROBUST_OFFSET, ROBUST_TILT, ROBUST_TILT])
    pos, quat, angle = np.zeros((n, 3)), np.zeros((n, 4)), 0.0
    for t in range(n):
        x = a * x + math.sqrt(1 - a * a) * scale * rng.standard_normal(6)
        angle += x[0] * SIM_DT
        if not 0.0 <= angle <= top:  # reflect the angle and its speed at the ends of the range
            angle, x[0] = min(max(-angle if angle < 0.0 else 2.0 * top - angle, 0.0), top), -x[0]
        p, q = screw_pose(pitch, angle, z0=z0)
        pos[t] = p + x[1:4]
        quat[t] = quat_mul(rotvec_to_quat(np.array([x[4], x[5], 0.0])), q)
    return pos, quat


def energy(task, gains, state, sp_pos, sp_quat) -> float:
    """Kinetic energy of the tool plus the coupling springs' ``½k|e|² + ½k_r|φ|²`` [J] (module docstring)."""
    from contactkit.assembly.coupling import pose_error
    from contactkit.engine.reference import generalized_velocity, kinetic_energy

    e, phi = pose_error(task.body, state, sp_pos, sp_quat)
    return (kinetic_energy(task.body, generalized_velocity(task.body, state))
            + 0.5 * gains.stiffness * float(e @ e) + 0.5 * gains.angular_stiffness * float(phi @ phi))


def robustness(p: Pipeline, config: TightAssemblyConfig, rng: np.random.Generator) -> tuple[dict, dict]:
    """(e) ``config.robustness_s`` simulated seconds of :func:`random_commands` on the nut from its screwed pose
    one pitch up (turned up to a pitch below the bolt's top), with ours (learned clustering, Algorithm 1,
    C-space): NaN, exact penetration, energy growth."""
    from contactkit.assembly.simulator import step
    from contactkit.assembly.task import SIM_DT
    from contactkit.geometry.fasteners import screw_pose
    from contactkit.state import BodyState

    nc, _ = _configs()
    start = time.perf_counter()
    n = max(1, int(round(config.robustness_s / SIM_DT)))
    z0 = p.task.pitch
    thickness = float(np.ptp(p.task.nodes[:, 2]))
    turns = (p.task.axis_height - thickness - 2.0 * z0) / p.task.pitch  # one pitch clear of the bolt's top
    pos, quat = random_commands(p.task.pitch, n, rng, z0, turns)
    state = BodyState.at_rest(*screw_pose(p.task.pitch, 0.0, z0=z0))
    growth, worst, nan, pen, force = 0.0, 0.0, False, [], np.full(n, np.nan)
    for t in range(n):
        result = step(p.task, state, pos[t], quat[t], p.gains, p.ours, nc, p.cspace)
        if not (np.all(np.isfinite(result.state.as_array())) and np.all(np.isfinite(result.wrench))):
            nan = True
            break
        gain = energy(p.task, p.gains, result.state, pos[t], quat[t]) - energy(p.task, p.gains, state, pos[t], quat[t])
        growth, worst = growth + gain, max(worst, gain)
        force[t] = np.linalg.norm(result.wrench[:3])
        state = result.state
        if t % config.penetration_every == 0 or t == n - 1:
            pen.append(((t + 1) * SIM_DT, penetration(p.task, state)[0]))
    pen = np.array(pen).reshape(-1, 2)  # (time after the step [s], max penetration [m])
    out = {"sim_s": n * SIM_DT, "steps": n, "max_penetration_m": float(pen[:, 1].max()) if len(pen) else math.nan,
           "energy_growth": growth, "max_step_energy_gain_J": worst, "nan": nan,
           "clearance_m": p.task.clearance, "seconds": time.perf_counter() - start}
    return out, {"force": force, "penetration": pen}

