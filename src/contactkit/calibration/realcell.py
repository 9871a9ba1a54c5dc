"""The real-cell fields a calibration may also identify: command latency, flange–tool compliance, sensor filter.

The Act-FIGNet paper's MuJoCo calibration (App. V-D) has no such fields; a real cell has them (docs/worlds.md), so
``contactkit calibrate --params full`` adds them to the paper's sets: the ``mujoco-calibrated-full`` row. Their
bounds are what robot cells have, not a window around any one world:

* command latency 0–30 ms: a 1 kHz torque interface adds about 1 ms, a UR's RTDE 2–8 ms, a ROS Cartesian
  controller 10–30 ms;
* flange–tool translational stiffness 1e4–1e6 N/m, rotational 10–1e4 N·m/rad (about the sensor's x/y axes and its
  z axis apart): from a cobot wrist's compliance seen at the tool (the soft end) to a stiff F/T sensor and adapter
  (their own stiffness is 1e7–1e8 N/m: a coupling stiffer than 1e6 N/m no longer moves a 50 ms control step);
* the coupling's damping ratio 0.02–1 (structural damping of bolted metal is a few per cent);
* the sensor's low-pass cut-off 2–1000 Hz (F/T boxes offer 5 Hz to kHz; above a few hundred Hz a 50 ms mean sees
  no filter).

A stiff coupling needs a short physics step: :func:`with_realcell` shortens ``timestep`` (keeping the control
period) until every coupling mode satisfies :data:`~contactkit.mujoco.realcell.COMPLIANCE_MAX_OMEGA_DT` with the
margin :data:`STEP_MARGIN`, and rounds the latency to whole sub-steps of that step. A mode above
:data:`MODE_CAP_HZ` is softened to it (a modelling choice for cost: such a mode is rigid at a 20 Hz control rate,
and resolving it would cost up to 20× the sub-steps).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from contactkit.physics import WorldParams
from contactkit.scene import Scene

__all__ = ["MODE_CAP_HZ", "REALCELL", "STEP_MARGIN", "realcell_values", "with_realcell"]

REALCELL = ("command_latency_s", "compliance_k_lin", "compliance_k_rot_xy", "compliance_k_rot_z",
            "compliance_zeta", "ft_filter_hz")
"""The real-cell parameters (:data:`~contactkit.calibration.space.PARAMS` holds their bounds)."""
MODE_CAP_HZ = 500.0
"""Highest coupling mode simulated [Hz]; a stiffer axis is softened to it (25× the 20 Hz control rate, so the step
stays at or above 0.25 ms: at most 200 sub-steps per 50 ms control period)."""
STEP_MARGIN = 0.8
"""Fraction of the largest stable physics step used: the step is at most ``0.8 · COMPLIANCE_MAX_OMEGA_DT / ω_max``."""


def _mode_inertias(scene: Scene, params: WorldParams) -> np.ndarray:
    """``(6,)`` reduced mass [kg] / inertia [kg·m²] of each coupling mode (``k / ω²``), from the world's modes."""
    from contactkit.mujoco.realcell import compliance_modes

    unit = dataclasses.replace(params, compliance_stiffness=(1.0,) * 6)
    return 1.0 / compliance_modes(scene, unit) ** 2


def realcell_values(world: WorldParams, scene: Scene) -> dict[str, float]:
    """The real-cell parameters of ``world`` (latency in seconds; the x-axis stiffness of each group; the x-axis
    damping ratio; 0 where the effect is off)."""
    k = np.asarray(world.compliance_stiffness, dtype=np.float64)
    zeta = 0.0
    if world.compliant and k[0] > 0:
        zeta = float(world.compliance_damping[0] / (2.0 * math.sqrt(k[0] * _mode_inertias(scene, world)[0])))
    return {"command_latency_s": world.command_latency_substeps * world.timestep, "compliance_k_lin": float(k[0]),
            "compliance_k_rot_xy": float(k[3]), "compliance_k_rot_z": float(k[5]), "compliance_zeta": zeta,
            "ft_filter_hz": float(world.ft_filter_hz)}


def with_realcell(base: WorldParams, scene: Scene, values: dict[str, float]) -> WorldParams:
    """``base`` with the real-cell ``values`` (names of :data:`REALCELL`, SI units): stiffness per axis group,
    damping ``2 ζ sqrt(k m)`` per mode, a physics step short enough for the coupling (control period kept) and the
    latency in whole sub-steps of it."""
    from contactkit.mujoco.realcell import COMPLIANCE_MAX_OMEGA_DT

    k = np.array([values["compliance_k_lin"]] * 3 + [values["compliance_k_rot_xy"]] * 2
                 + [values["compliance_k_rot_z"]])
    world = dataclasses.replace(base, compliance_stiffness=(1.0,) * 6, compliance_damping=(0.0,) * 6,
                                ft_filter_hz=float(values["ft_filter_hz"]))
    inertias = _mode_inertias(scene, world)
    k = np.minimum(k, inertias * (2.0 * math.pi * MODE_CAP_HZ) ** 2)
    world = dataclasses.replace(world, compliance_stiffness=tuple(float(x) for x in k))
    damping = 2.0 * values["compliance_zeta"] * np.sqrt(k * inertias)
    omega_max = float(np.max(np.sqrt(k / inertias)))
    control_dt = base.control_dt
    step = base.timestep if omega_max == 0.0 else min(base.timestep, STEP_MARGIN * COMPLIANCE_MAX_OMEGA_DT / omega_max)
    n = int(math.ceil(control_dt / step - 1e-9))
    latency = int(round(values["command_latency_s"] / (control_dt / n)))
    return dataclasses.replace(world, compliance_damping=tuple(float(x) for x in damping), timestep=control_dt / n,
                               n_substeps=n, command_latency_substeps=latency)
