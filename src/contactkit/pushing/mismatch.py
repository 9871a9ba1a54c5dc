"""Mismatch that real pushing has (issue 32 part 2): families, stated ranges with their sources, seeded draws.

Every family below is a way in which the robot of the pushing paper differs from the model the controller plans
with. Each range was written down before any policy was tried on a draw, and the "real" world
(:mod:`contactkit.pushing.real`) draws from them with a generator the policy never sees. The ranges are not to be
tuned to any method's outcome.

=========================  ===================  ==================================================================
family                     range (uniform)      source / status
=========================  ===================  ==================================================================
object mass                × [0.85, 1.15]       Table II gives 300 g / 350 g without tolerance; an FDM print's
                                                infill and wall count move its mass by this much. ASSUMPTION.
pusher mass                × [0.90, 1.30]       Table II's 30 g / 40 g without the screws and flange adapter that
                                                mount it. ASSUMPTION.
pusher–object friction     × [0.80, 1.25]       PLA on PLA; the nominal 0.35 is itself CHOSEN (paper: none).
                                                ASSUMPTION.
table friction (mean)      × [0.70, 1.30]       table material not given by the paper. ASSUMPTION.
table friction (patches)   × [0.80, 1.20] per   friction is location dependent over a pushing surface (Yu, Bauza,
                           5 cm patch           Fazeli, Rodriguez, IROS 2016, measured it over their surfaces);
                                                the magnitude and patch size here are an ASSUMPTION.
centre-of-mass offset      ±5 mm per axis       the tracked point (geometric centre; the ArUco marker placed by
                           (object x, y)        hand on the top face, §III-B) is not the centre of mass of a
                                                printed part with uneven infill. ASSUMPTION.
pusher tips' calibration   ±2 mm per axis       a hand-assembled, 3-D printed pusher on the flange; the paper states
                           (pusher x, y, z)     no tool calibration, the tool frame is CAD's. ASSUMPTION.
joint viscous damping      × [0.5, 2.0] per     Kinova publishes no viscous friction (the MJCF's values are
                           joint                CHOSEN). ASSUMPTION.
joint armature             × [0.5, 2.0] per     reflected rotor inertia around :data:`NOMINAL_ARMATURE` (itself an
                           joint                ASSUMPTION, see there).
=========================  ===================  ==================================================================

Frames: object frame (x, y) for the centre-of-mass offset, pusher frame (x along the tip bar, y the push
direction, z the reach) for the tip offset. Units SI.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.pushing.patches import FrictionPatches, draw_patches
from contactkit.pushing.scene import N_ARM_JOINTS, PushScene

NOMINAL_ARMATURE = (0.01,) * N_ARM_JOINTS
"""Reflected rotor inertia of each joint [kg m²]: rotor inertia × gear ratio². ASSUMPTION: Kinova publishes neither
figure for the KA-75+ / KA-58 actuators; 0.01 kg m² is a frameless BLDC rotor of order 10⁻⁶ kg m² through a 100:1
harmonic drive. It dominates the wrist's link inertia (joint 7 about its axis: 8·10⁻⁵ kg m² at the home posture),
as reflected inertia does in geared arms."""
PATCH_ORIGIN = (0.25, -0.25)
"""Lower-left corner ``(x, y)`` [m] of the patched table area (world)."""
PATCH_EXTENT = (0.50, 0.50)
"""Size ``(x, y)`` [m] of the patched table area: every start and goal of the experiment lies inside."""
REAL_STREAM = 32
"""Last element of the "real" draws' seed sequence (issue 32): a stream neither training, validation nor the gain
search use."""


@dataclass(frozen=True)
class PhysicsRanges:
    """Uniform ranges of the mismatch families (module table).

    Attributes:
        object_mass_scale, pusher_mass_scale, mu_contact_scale, mu_ground_scale, damping_scale, armature_scale,
            patch_scale: ``(low, high)`` factors [-].
        com_offset_m: largest ``|offset|`` per object axis [m]. tip_offset_m: largest ``|offset|`` per pusher axis
            [m] ``(x, y, z)``. patch_cell_m: side of a friction patch [m].
    """

    object_mass_scale: tuple[float, float]
    pusher_mass_scale: tuple[float, float]
    mu_contact_scale: tuple[float, float]
    mu_ground_scale: tuple[float, float]
    patch_scale: tuple[float, float]
    patch_cell_m: float
    com_offset_m: float
    tip_offset_m: tuple[float, float, float]
    damping_scale: tuple[float, float]
    armature_scale: tuple[float, float]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = np.asarray(getattr(self, f.name), dtype=np.float64)
            if not np.all(np.isfinite(value)) or np.any(value < 0.0):
                raise InvalidInputError(f"PhysicsRanges.{f.name} must be finite and >= 0, got {value}")
            if value.shape == (2,) and f.name.endswith("scale") and value[0] > value[1]:
                raise InvalidInputError(f"PhysicsRanges.{f.name} must be (low, high), got {value}")


REAL_RANGES = PhysicsRanges(object_mass_scale=(0.85, 1.15), pusher_mass_scale=(0.90, 1.30),
                            mu_contact_scale=(0.80, 1.25), mu_ground_scale=(0.70, 1.30), patch_scale=(0.80, 1.20),
                            patch_cell_m=0.05, com_offset_m=0.005, tip_offset_m=(0.002, 0.002, 0.002),
                            damping_scale=(0.5, 2.0), armature_scale=(0.5, 2.0))
"""The "real" world's mismatch ranges (module table; written before any policy was tried on a draw)."""


@dataclass(frozen=True)
class PhysicsDraw:
    """One draw of every family: scales [-] on the nominal scene, offsets [m], joint armature [kg m²], patches.

    The default is no mismatch (every scale 1, no offset, :data:`NOMINAL_ARMATURE`, uniform table).
    """

    object_mass_scale: float = 1.0
    pusher_mass_scale: float = 1.0
    mu_contact_scale: float = 1.0
    mu_ground_scale: float = 1.0
    com_offset: tuple[float, float] = (0.0, 0.0)
    tip_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    damping_scale: tuple[float, ...] = (1.0,) * N_ARM_JOINTS
    armature: tuple[float, ...] = field(default=NOMINAL_ARMATURE)
    patches: FrictionPatches | None = None

    def __post_init__(self) -> None:
        for name in ("object_mass_scale", "pusher_mass_scale", "mu_contact_scale", "mu_ground_scale"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"PhysicsDraw.{name} must be finite and > 0, got {value!r}")


def _tuple(values) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(values).reshape(-1))


def draw_physics(rng: np.random.Generator, ranges: PhysicsRanges = REAL_RANGES) -> PhysicsDraw:
    """One :class:`PhysicsDraw` from ``rng``, every family uniform within ``ranges`` (a fixed order of draws)."""
    scales = [rng.uniform(*getattr(ranges, n)) for n in ("object_mass_scale", "pusher_mass_scale",
                                                          "mu_contact_scale", "mu_ground_scale")]
    com = rng.uniform(-ranges.com_offset_m, ranges.com_offset_m, 2)
    tip = rng.uniform(-1.0, 1.0, 3) * np.asarray(ranges.tip_offset_m)
    damping = rng.uniform(*ranges.damping_scale, N_ARM_JOINTS)
    armature = np.asarray(NOMINAL_ARMATURE) * rng.uniform(*ranges.armature_scale, N_ARM_JOINTS)
    patches = draw_patches(rng, PATCH_ORIGIN, PATCH_EXTENT, ranges.patch_cell_m, ranges.patch_scale)
    return PhysicsDraw(*(float(s) for s in scales), _tuple(com), _tuple(tip), _tuple(damping), _tuple(armature),
                       patches)


def apply_draw(scene: PushScene, draw: PhysicsDraw) -> PushScene:
    """The scene of the world ``draw`` describes: masses and frictions scaled, offsets, joints and patches set."""
    return dataclasses.replace(
        scene, object_mass=scene.object_mass * draw.object_mass_scale,
        pusher_mass=scene.pusher_mass * draw.pusher_mass_scale, mu_contact=scene.mu_contact * draw.mu_contact_scale,
        mu_ground=scene.mu_ground * draw.mu_ground_scale, com_offset=draw.com_offset, tip_offset=draw.tip_offset,
        joint_damping_scale=draw.damping_scale, joint_armature=draw.armature, friction_patches=draw.patches)


def real_draw(seed: int, *keys: int) -> PhysicsDraw:
    """The "real" world's draw for trial ``keys`` of run ``seed``: ``draw_physics(default_rng([seed, *keys,
    REAL_STREAM]))``."""
    return draw_physics(np.random.default_rng([int(seed), *(int(k) for k in keys), REAL_STREAM]), REAL_RANGES)
