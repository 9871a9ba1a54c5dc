"""What a real arm-plus-sensor adds to the MuJoCo world (issue 19 part 1; docs/worlds.md): the stability check of
the flange–tool compliance, the queue that delays commands by whole physics sub-steps, and the F/T filter's gain.

The compliance itself is in the model (:func:`contactkit.mujoco.mjcf.scene_to_mjcf`); the world uses these helpers
to refuse a stiffness its time step cannot integrate, to feed each sub-step the command in effect, and to filter
the reading.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.mujoco.mjcf import FLANGE_INERTIA
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene

COMPLIANCE_MAX_OMEGA_DT = 1.0
"""Largest ``ω·h`` (a compliance mode's angular frequency [rad/s] times the physics step [s]) accepted. MuJoCo
integrates joint springs explicitly: an undamped mode grows without bound above ``ω·h = 2``; half of that leaves the
margin that contacts and the controller need."""


def compliance_modes(scene: Scene, params: WorldParams) -> np.ndarray:
    """``(6,)`` angular frequencies [rad/s] of the six flange–tool modes (along and about the nominal sensor axes):
    ``ω = sqrt(k (1/m_flange + 1/m_tool))`` for the slides, ``sqrt(k (1/I_wrist + 1/I_tool,axis))`` for the hinges,
    with the tool's inertia about each hinge axis through the sensor origin (parallel axis theorem) and the wrist's
    ``wrist_armature`` on the flange. Each mode treated alone (the two-body frequency of that axis)."""
    tool = scene.tool
    mass, inertia = params.tool_mass_properties(tool.mass, tool.inertia)
    r = np.asarray(tool.com, dtype=np.float64) - np.asarray(tool.sensor_pos, dtype=np.float64)
    about_sensor = inertia + mass * (float(r @ r) * np.eye(3) - np.outer(r, r))
    axes = quat_to_mat(np.asarray(tool.sensor_quat, dtype=np.float64))
    k = np.asarray(params.compliance_stiffness)
    omega = np.empty(6)
    omega[:3] = np.sqrt(k[:3] * (1.0 / params.compliance_mass + 1.0 / mass))
    flange = params.wrist_armature + FLANGE_INERTIA
    for i in range(3):
        omega[3 + i] = math.sqrt(k[3 + i] * (1.0 / flange + 1.0 / float(axes[:, i] @ about_sensor @ axes[:, i])))
    return omega


def check_compliance(scene: Scene, params: WorldParams, where: str) -> None:
    """Refuse a compliance that ``params.timestep`` cannot integrate (:data:`COMPLIANCE_MAX_OMEGA_DT`).

    Raises:
        InvalidInputError: naming ``where``, the stiffest axis, its frequency and the largest stable time step.
    """
    if not params.compliant:
        return
    omega = compliance_modes(scene, params)
    worst = int(np.argmax(omega))
    if omega[worst] * params.timestep > COMPLIANCE_MAX_OMEGA_DT:
        raise InvalidInputError(
            f"{where}: world.compliance_stiffness[{worst}] = {params.compliance_stiffness[worst]:g} gives a "
            f"flange-tool mode of {omega[worst] / (2 * math.pi):.4g} Hz that world.timestep {params.timestep:g} s "
            f"cannot integrate stably (omega*h = {omega[worst] * params.timestep:.3g} > {COMPLIANCE_MAX_OMEGA_DT}): "
            f"use timestep <= {COMPLIANCE_MAX_OMEGA_DT / omega[worst]:.3g} s (and more n_substeps), or a softer "
            "compliance")


def filter_gain(params: WorldParams) -> float:
    """``α = 1 − exp(−2π f_c h)`` of the sensor's first-order low-pass (:func:`contactkit.mujoco.substeps.low_pass`),
    ``f_c = params.ft_filter_hz`` [Hz], ``h = params.timestep`` [s]; 0 when the filter is off."""
    if not params.ft_filter_hz:
        return 0.0
    return -math.expm1(-2.0 * math.pi * params.ft_filter_hz * params.timestep)


class Issued(NamedTuple):
    """One control step's inputs as the robot received them: the MuJoCo control vector (``CONTROL_SPEC``
    layout), the impedance targets (world) and the feedforward wrench about the tool origin (world)."""

    control: np.ndarray
    target_pos: np.ndarray
    target_quat: np.ndarray
    feedforward: np.ndarray


class CommandDelay:
    """The commands of the last control steps, so that each sub-step gets the one in effect after a latency of
    ``k`` sub-steps: with ``n`` sub-steps per control step, ``q = k // n`` and ``r = k % n``, sub-steps ``0..r-1``
    of control step ``t`` run the command issued at step ``t - q - 1`` and the rest the one of step ``t - q``
    (before the first command: the hold issued at reset)."""

    def __init__(self, latency: int, n_substeps: int):
        self.q, self.r = divmod(int(latency), int(n_substeps))
        self._issued: list[Issued] = []

    def reset(self, hold: Issued) -> None:
        """Forget the past: every earlier command is ``hold`` (targets at the reset pose, gravity compensation)."""
        self._issued = [hold] * (self.q + 2)

    def segments(self, new: Issued) -> list[tuple[int, Issued]]:
        """``[(first sub-step, inputs), ...]`` of the coming control step if ``new`` is issued now (not committed)."""
        if self.q == 0 and self.r == 0:
            return [(0, new)]
        recent = [*self._issued[1:], new]
        late, current = recent[-self.q - 2], recent[-self.q - 1]
        return [(0, current)] if self.r == 0 else [(0, late), (self.r, current)]

    def commit(self, new: Issued) -> None:
        """Record ``new`` as issued (after its control step succeeded)."""
        if self._issued:
            self._issued = [*self._issued[1:], new]
