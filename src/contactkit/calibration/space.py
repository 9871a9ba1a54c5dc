"""The parameters a calibration may change, their bounds, and the map between a unit cube and a world.

Act-FIGNet paper App. V-D calibrates MuJoCo's "mass, inertia, joint damping, armature" on free-space trajectories,
then those and the "constraint solver parameters (solref, solimp)" on trajectories with contact
(:data:`PAPER_FREE`, :data:`PAPER_CONTACT`). Each parameter is searched in ``[0, 1]`` mapped to its physical bounds
(log-scaled for the positive ones that span decades). The bounds are what a tool on a robot plausibly has, not a
window around any one target world: the mass and inertia within a factor 2 of the scene's CAD value; damping from
none to a tenth of the impedance controller's own damping; the wrist's reflected inertia from a light
direct-drive wrist (1e-4 kg·m²) to a heavy geared one (5e-2 kg·m²); solref's time constant from MuJoCo's stiffest
useful value (2 × the 2 ms step) to 0.2 s, and solimp within MuJoCo's documented range.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from contactkit.calibration.controller import CONTROLLER
from contactkit.calibration.realcell import REALCELL, realcell_values, with_realcell
from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams
from contactkit.scene import Scene

__all__ = ["PAPER_CONTACT", "PAPER_FREE", "PARAMS", "ParamSet", "ParamSpec", "from_unit", "param_names", "to_unit"]


@dataclass(frozen=True)
class ParamSpec:
    """One calibrated quantity: ``name``, bounds ``lo..hi`` (relative to the scene's value when ``relative``) and
    whether it is searched on a log scale."""

    name: str
    lo: float
    hi: float
    log: bool
    relative: bool = False
    unit: str = ""


PARAMS = {p.name: p for p in (
    ParamSpec("tool_mass", 0.5, 2.0, True, relative=True, unit="× the scene's mass"),
    ParamSpec("inertia_scale", 0.5, 2.0, True, unit="× the scene's inertia"),
    ParamSpec("linear_damping", 1e-3, 8.0, True, unit="N s/m"),
    ParamSpec("angular_damping", 1e-5, 0.08, True, unit="N m s/rad"),
    ParamSpec("wrist_armature", 1e-4, 5e-2, True, unit="kg m^2"),
    ParamSpec("solref_timeconst", 0.004, 0.2, True, unit="s"),
    ParamSpec("solref_dampratio", 0.3, 2.0, False),
    ParamSpec("solimp_dmin", 0.5, 0.99, False),
    ParamSpec("solimp_dmax", 0.8, 0.9999, False),
    ParamSpec("solimp_width", 1e-4, 1e-2, True, unit="m"),
    ParamSpec("friction_scale", 0.5, 2.0, True),
    ParamSpec("command_latency_s", 0.0, 0.03, False, unit="s"),
    ParamSpec("compliance_k_lin", 1e4, 1e6, True, unit="N/m"),
    ParamSpec("compliance_k_rot_xy", 10.0, 1e4, True, unit="N m/rad"),
    ParamSpec("compliance_k_rot_z", 10.0, 1e4, True, unit="N m/rad"),
    ParamSpec("compliance_zeta", 0.02, 1.0, True),
    ParamSpec("ft_filter_hz", 2.0, 1000.0, True, unit="Hz"),
    ParamSpec("controller_stiffness_scale", 0.25, 4.0, True, unit="× the scene's stiffness"),
    ParamSpec("controller_damping_ratio", 0.2, 2.0, False),
    ParamSpec("tcp_offset_x", -0.2, 0.2, False, unit="m"),
    ParamSpec("tcp_offset_y", -0.2, 0.2, False, unit="m"),
    ParamSpec("tcp_offset_z", -0.2, 0.2, False, unit="m"),
)}
"""Every parameter :func:`from_unit` can set. The friction scale is not in the paper's sets (its MuJoCo keeps the
nominal friction); a user may add it with ``--params``. The real-cell fields (:mod:`contactkit.calibration.realcell`,
where their bounds are sourced) are the ``full`` set's additions; the scene controller's fields
(:mod:`contactkit.calibration.controller`) the ``controller`` set's."""


class ParamSet(str, Enum):
    """Named parameter sets of ``contactkit calibrate --params``."""

    PAPER = "paper"
    PAPER_FRICTION = "paper+friction"
    FULL = "full"
    """The paper's sets plus the real-cell fields (latency, flange–tool compliance, sensor filter) in both stages."""
    CONTROLLER = "controller"
    """The scene controller's stiffness scale, damping ratio and TCP, in both stages (combine: ``paper,controller``)."""


PAPER_FREE = ("tool_mass", "inertia_scale", "linear_damping", "angular_damping", "wrist_armature")
"""Stage 1 (free-space trajectories): mass, inertia, damping, armature."""
PAPER_CONTACT = PAPER_FREE + ("solref_timeconst", "solref_dampratio", "solimp_dmin", "solimp_dmax", "solimp_width")
"""Stage 2 (contact trajectories): stage 1's and the constraint solver's."""


def _stages_of(token: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The (free, contact) stages of a set name, or None."""
    sets = {ParamSet.PAPER.value: (PAPER_FREE, PAPER_CONTACT),
            ParamSet.PAPER_FRICTION.value: (PAPER_FREE, PAPER_CONTACT + ("friction_scale",)),
            ParamSet.FULL.value: (PAPER_FREE + REALCELL, PAPER_CONTACT + REALCELL),
            ParamSet.CONTROLLER.value: (CONTROLLER, CONTROLLER)}
    return sets.get(token)


def param_names(spec: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (free-space, contact) stages of a comma-separated list of set names (:class:`ParamSet`) and
    :data:`PARAMS` names: a set adds its stages; a name joins the contact stage, and the free-space one too when it
    is identifiable without contact (the paper's free set, the real-cell and controller fields).

    Raises:
        InvalidInputError: an unknown name (the message lists the valid ones).
    """
    tokens = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in tokens if n not in PARAMS and _stages_of(n) is None]
    if unknown or not tokens:
        raise InvalidInputError(f"--params {spec!r}: unknown {unknown or 'empty list'}; give "
                                f"{[s.value for s in ParamSet]} or names from {sorted(PARAMS)}, comma-separated")
    free, contact = [], []
    for token in tokens:
        stages = _stages_of(token)
        if stages is None:
            stages = ((token,) if token in PAPER_FREE + REALCELL + CONTROLLER else (), (token,))
        free += [n for n in stages[0] if n not in free]
        contact += [n for n in stages[1] if n not in contact]
    return tuple(free), tuple(contact)


def _value(spec: ParamSpec, u: float, scene: Scene) -> float:
    u = float(np.clip(u, 0.0, 1.0))
    lo, hi = spec.lo, spec.hi
    v = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if spec.log else lo + u * (hi - lo)
    return v * scene.tool.mass if spec.relative else v


def _unit(spec: ParamSpec, v: float, scene: Scene) -> float:
    v = v / scene.tool.mass if spec.relative else v
    v = float(np.clip(v, spec.lo, spec.hi))
    if spec.log:
        return (math.log(v) - math.log(spec.lo)) / (math.log(spec.hi) - math.log(spec.lo))
    return (v - spec.lo) / (spec.hi - spec.lo)


def current(world: WorldParams, scene: Scene) -> dict[str, float]:
    """Every :data:`PARAMS` value of ``world`` for ``scene`` (mass and inertia as simulated)."""
    mass, inertia = world.tool_mass_properties(scene.tool.mass, scene.tool.inertia)
    base = float(np.trace(np.asarray(scene.tool.inertia, dtype=np.float64)))
    return {"tool_mass": mass, "inertia_scale": float(np.trace(inertia)) / base * scene.tool.mass / mass,
            "linear_damping": world.linear_damping, "angular_damping": world.angular_damping,
            "wrist_armature": world.wrist_armature, "solref_timeconst": world.solref[0],
            "solref_dampratio": world.solref[1], "solimp_dmin": world.solimp[0], "solimp_dmax": world.solimp[1],
            "solimp_width": world.solimp[2], "friction_scale": world.friction_scale,
            **realcell_values(world, scene)}


def to_unit(world: WorldParams, scene: Scene, names: tuple[str, ...]) -> np.ndarray:
    """``(len(names),)`` unit-cube coordinates of ``world``'s values (clipped into the bounds)."""
    values = current(world, scene)
    return np.array([_unit(PARAMS[n], values[n], scene) for n in names])


def from_unit(base: WorldParams, scene: Scene, names: tuple[str, ...], u: np.ndarray) -> WorldParams:
    """``base`` with the parameters ``names`` set from unit-cube coordinates ``u (len(names),)``.

    The mass is absolute (``tool_mass``, ``mass_scale`` 1); the inertia is the scene's scaled by the mass ratio and
    ``inertia_scale`` (diagonal and products alike: the shape of the inertia ellipsoid is the CAD's).
    """
    values = current(base, scene)
    values.update({n: _value(PARAMS[n], float(x), scene) for n, x in zip(names, u, strict=True)})
    inertia = np.asarray(scene.tool.inertia, dtype=np.float64) * values["inertia_scale"] * values["tool_mass"] \
        / scene.tool.mass
    inertia_tuple = (inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2])
    solimp = (values["solimp_dmin"], max(values["solimp_dmax"], values["solimp_dmin"]), values["solimp_width"],
              *base.solimp[3:])
    world = dataclasses.replace(
        base, mass_scale=1.0, tool_mass=values["tool_mass"], tool_inertia=tuple(float(x) for x in inertia_tuple),
        linear_damping=values["linear_damping"], angular_damping=values["angular_damping"],
        wrist_armature=values["wrist_armature"], solref=(values["solref_timeconst"], values["solref_dampratio"]),
        solimp=tuple(float(x) for x in solimp), friction_scale=values["friction_scale"])
    return with_realcell(world, scene, values) if set(names) & set(REALCELL) else world


def world_and_controller(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``names`` split into the world's parameters (:func:`from_unit`) and the scene controller's
    (:mod:`contactkit.calibration.controller`)."""
    return tuple(n for n in names if n not in CONTROLLER), tuple(n for n in names if n in CONTROLLER)


def unit_value(name: str, u: float, scene: Scene) -> float:
    """The value of parameter ``name`` at unit-cube coordinate ``u`` (its bounds; log-scaled where stated)."""
    return _value(PARAMS[name], u, scene)


def value_unit(name: str, v: float, scene: Scene) -> float:
    """The unit-cube coordinate of value ``v`` of parameter ``name`` (clipped into its bounds)."""
    return _unit(PARAMS[name], v, scene)
