"""Time-step stability of the impedance controller: a world refuses a physics step its controller cannot survive.

Every world integrates the controller's spring ``K`` explicitly (the wrench is evaluated at the start of the
step), so a physics step ``h`` that is long against the period of the spring-mass system makes the tool's motion
grow without bound (``WorldParams(timestep=0.5)`` sent the tool to 2e7 m). Per controlled axis the dynamics are
``M x'' = −K x − D x'`` with ``M`` the mass (translation: ``mass · mass_scale``; rotation: the smallest principal
inertia ``· mass_scale`` plus the wrist armature, for every axis, since the tool may turn any axis into any other),
``K`` the stiffness and ``D = 2 ζ sqrt(K m)`` the damping of :func:`contactkit.control.impedance.damping_gains`.
One physics step is a linear map of ``(x, v)``; it is stable when the map's spectral radius is at most 1
(:data:`SPECTRAL_RADIUS_TOL`). The map depends on how the integrator treats the damping
(:data:`INTEGRATOR_SCHEME`):

* ``IMPLICIT_DAMPING`` — semi-implicit Euler, damping implicit: MuJoCo's ``implicitfast`` and ``implicit``, and
  the contactkit engine (its controller damping enters ``M + hD``). Stable iff ``h² K < 4 M + 2 h D``.
* ``EXPLICIT_DAMPING`` — semi-implicit Euler, damping explicit: MuJoCo's ``Euler`` (only joint damping is
  implicit there, the actuators' is not). Stable iff ``h² K + 2 h D < 4 M``.
* ``RK4`` — MuJoCo's ``RK4``: ``|R(h λ)| ≤ 1`` for the eigenvalues ``λ`` of the continuous system,
  ``R(z) = 1 + z + z²/2 + z³/6 + z⁴/24``.

Both worlds run the same check on ``WorldParams.timestep`` and ``WorldParams.integrator``, so a (scene, world
parameters) pair is refused by both or by neither (the engine, whose own step may be shorter, follows MuJoCo's).
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from contactkit.control.impedance import damping_gains
from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams
from contactkit.scene import Scene

SPECTRAL_RADIUS_TOL = 1e-9
"""A step map whose spectral radius exceeds 1 by more than this is unstable (undamped semi-implicit Euler sits
at exactly 1, neutrally stable)."""
AXES = ("x", "y", "z", "rx", "ry", "rz")
"""Names of the six controlled axes (world frame) in error messages."""


class StepScheme(str, Enum):
    """How one physics step treats the controller's spring and damping (module docstring)."""

    IMPLICIT_DAMPING = "semi-implicit Euler, implicit damping"
    EXPLICIT_DAMPING = "semi-implicit Euler, explicit damping"
    RK4 = "4th-order Runge-Kutta"


INTEGRATOR_SCHEME = {
    "implicitfast": StepScheme.IMPLICIT_DAMPING,
    "implicit": StepScheme.IMPLICIT_DAMPING,
    "Euler": StepScheme.EXPLICIT_DAMPING,
    "RK4": StepScheme.RK4,
}
"""The scheme of each ``WorldParams.integrator``."""


def step_map(h: float, mass: float, stiffness: float, damping: float, scheme: StepScheme) -> np.ndarray:
    """``(2, 2)`` matrix taking ``(x, v)`` to its value one step ``h`` [s] later under ``M x'' = −K x − D x'``.

    Args:
        h: step [s]; mass: ``M`` [kg or kg·m²]; stiffness: ``K`` [N/m or N·m/rad]; damping: ``D`` [N·s/m or
            N·m·s/rad]; scheme: how the step treats the damping (module docstring).
    """
    k, d = stiffness / mass, damping / mass
    if scheme is StepScheme.RK4:
        a = np.array([[0.0, 1.0], [-k, -d]]) * h
        out, term = np.eye(2), np.eye(2)
        for n in range(1, 5):
            term = term @ a / n
            out = out + term
        return out
    damp = 1.0 / (1.0 + h * d) if scheme is StepScheme.IMPLICIT_DAMPING else 1.0
    keep = 1.0 if scheme is StepScheme.IMPLICIT_DAMPING else 1.0 - h * d
    v_row = np.array([-h * k * damp, keep * damp])  # v' = keep·damp·v − h k damp x
    return np.array([[1.0, 0.0], [0.0, 0.0]]) + np.outer([h, 1.0], v_row)  # x' = x + h v'


def axis_dynamics(scene: Scene, params: WorldParams) -> np.ndarray:
    """``(6, 3)`` rows ``(M, K, D)`` of the six controlled axes (module docstring): mass or inertia [kg, kg·m²],
    stiffness [N/m, N·m/rad], damping [N·s/m, N·m·s/rad]."""
    tool, gains = scene.tool, scene.controller
    eig = np.linalg.eigvalsh(tool.inertia)
    d_pos, d_rot = damping_gains(gains, tool.mass, eig)
    mass = np.concatenate([np.full(3, tool.mass * params.mass_scale),
                           np.full(3, eig[0] * params.mass_scale + params.wrist_armature)])
    return np.column_stack([mass, np.concatenate([gains.stiffness_pos, gains.stiffness_rot]),
                            np.concatenate([d_pos, d_rot])])


def unstable_axes(scene: Scene, params: WorldParams) -> list[tuple[str, float]]:
    """The axes whose step map at ``params.timestep`` has a spectral radius above ``1 + SPECTRAL_RADIUS_TOL``,
    as ``(axis name, spectral radius)``; empty when the controller is stable."""
    scheme = INTEGRATOR_SCHEME[params.integrator]
    out = []
    for name, (mass, stiffness, damping) in zip(AXES, axis_dynamics(scene, params), strict=True):
        radius = float(np.abs(np.linalg.eigvals(step_map(params.timestep, mass, stiffness, damping, scheme))).max())
        if radius > 1.0 + SPECTRAL_RADIUS_TOL:
            out.append((name, radius))
    return out


def check_timestep(scene: Scene, params: WorldParams, where: str) -> None:
    """Refuse ``params.timestep`` [s] when the scene's impedance controller cannot be stable with it.

    Raises:
        InvalidInputError: naming ``where``, the time step, the integrator, the worst axis and its growth per step.
    """
    bad = unstable_axes(scene, params)
    if bad:
        name, radius = max(bad, key=lambda item: item[1])
        scheme = INTEGRATOR_SCHEME[params.integrator]
        raise InvalidInputError(
            f"{where}: world.timestep {params.timestep:g} s cannot be stable for this scene's impedance controller "
            f"({params.integrator}: {scheme.value}); axis {name} grows x{radius:.4g} per step: use a shorter "
            "timestep or a softer controller"
        )
