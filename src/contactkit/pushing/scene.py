"""The pushing scene of the hybrid-contact pushing paper (Table II): arm, two-point pusher, object, table.

* :class:`ObjectKind` — the cube (88 mm, 300 g) or the wedge (140 × 85 × 80 mm, 350 g).
* :class:`PushScene` — frozen description: object kind, masses, frictions, sizes, pusher, home posture.
* :func:`object_polygon`, :func:`object_inertia_z` — the object's plan (convex polygon about its centre of
  mass, object frame) and its inertia about the vertical axis, used by the hybrid model (eqs 11–12).
* :func:`build_mjcf` — the MuJoCo model: the Kinova Gen2 7-DoF arm of ``assets/kinova_gen2_7dof.xml`` (every
  number cited there), the pusher on its end-effector frame, the object on a free joint, the table plane.

Frames: world z up, table top at ``z = 0``, arm base at the world origin. The object frame sits at its centre
of mass; its plan lies in the object's x–y plane. The pusher frame is the arm's end-effector frame (z out of the
flange); the pusher bar runs along its x axis, its tips are spheres at ``(±tip_separation/2, front, reach)``
and push along +y. Units SI.

The wedge's plan is not given by the paper (only its 140 × 85 × 80 mm box); we CHOSE a right-triangular plan
with legs 140 mm (x) and 85 mm (y), extruded 80 mm high, so that it has a slanted face unlike the cube.
"""

from __future__ import annotations

import enum
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.pushing.patches import FrictionPatches

GRAVITY_MPS2 = 9.81
"""Gravitational acceleration [m/s²] of both worlds."""

ARM_ASSET = "kinova_gen2_7dof.xml"
"""File name of the arm MJCF under ``contactkit/pushing/assets``."""

N_ARM_JOINTS = 7
"""Degrees of freedom of the arm."""

OBJECT_BODY = "object"
PUSHER_BODY = "pusher"
TIP_SITES = ("tip0", "tip1")
"""Sites at the pusher tip sphere centres (tip 0 at -x of the pusher frame, tip 1 at +x)."""
TIP_GEOMS = ("tip0_geom", "tip1_geom")
OBJECT_GEOM = "object_geom"
TABLE_GEOM = "table"


class ObjectKind(str, enum.Enum):
    """Which object of Table II is pushed."""

    CUBE = "cube"
    WEDGE = "wedge"


_TABLE_II = {
    # kind: (object mass [kg], size x, y, z [m], pusher mass [kg]) — pushing paper Table II.
    ObjectKind.CUBE: (0.300, (0.088, 0.088, 0.088), 0.030),
    ObjectKind.WEDGE: (0.350, (0.140, 0.085, 0.080), 0.040),
}

_DEFAULT_POSE = {
    # Tips at HOME_Q are at x = 0.4005 m, y = ±0.032 m; faces 0.5 mm beyond the 5 mm tip radius.
    ObjectKind.CUBE: (0.4005 + 0.0055 + 0.044, 0.0, 0.0),
    ObjectKind.WEDGE: (0.4005 + 0.0055 + 0.140 / 3, 0.085 / 3 - 0.085 / 2, 0.0),
}

HOME_Q = (-0.0505, 0.9701, -0.0345, 1.1221, 0.1853, 0.1549, 1.7229)
"""Default arm posture [rad]: pusher pointing down, tips at the cube's mid-height just behind its -x face (IK, best
conditioned of 30 random starts; smallest singular value of the 6x7 Jacobian 0.21)."""


@dataclass(frozen=True)
class PushScene:
    """Static description of one pushing setup (pushing paper Table II, Fig. 4).

    Attributes:
        object_kind: cube or wedge.
        object_mass: [kg] (Table II: 0.300 cube, 0.350 wedge).
        object_size: ``(3,)`` bounding box [m] (Table II: 88³ mm cube, 140 × 85 × 80 mm wedge).
        pusher_mass: [kg] (Table II: 0.030 cube setup, 0.040 wedge setup).
        pusher_size: ``(3,)`` bar size [m] along the pusher x (tip to tip), y (thickness, push direction) and
            z (reach from the flange): Table II's 104 × 30 × 48 mm (we read 48 mm as the reach).
        tip_radius: radius of the two spherical tips [m] (CHOSEN: 5 mm; not given by the paper).
        tip_separation: distance between the two tip centres [m]. CHOSEN 64 mm (tips 20 mm in from the ends of
            the 104 mm bar): the paper gives only the bar size, and tips at the bar ends (104 mm apart) could
            not both touch one 88 mm face of the cube.
        mu_contact: pusher–object friction coefficient μ_i of eq 5 (CHOSEN 0.35, PLA on PLA; not in the paper).
        mu_ground: object–table friction coefficient of eq 11's ``f`` (CHOSEN 0.30; not in the paper).
        object_pose: ``(3,)`` initial planar pose ``(x, y, θ)`` of the object's centre of mass [m, m, rad].
        home_q: ``(7,)`` initial arm posture [rad].
        dt: control period [s] (the paper's 100 Hz loop).
        com_offset: ``(2,)`` centre of mass relative to the object frame's origin (the geometric centre the pose
            tracking sees), object frame [m]; 0 in the nominal scene (the controller's belief).
        tip_offset: ``(3,)`` where the tips really are relative to :func:`tip_offsets`, pusher frame [m] (tool
            calibration error); 0 in the nominal scene.
        joint_armature: ``(7,)`` reflected rotor inertia per joint [kg m²] added to ``M(q)`` (0: the MJCF's).
        joint_damping_scale: ``(7,)`` factor on the MJCF's viscous joint damping (1: the MJCF's).
        friction_patches: the table's friction field (:class:`~contactkit.pushing.patches.FrictionPatches`) scaling
            ``mu_ground`` where the object stands, or None (uniform ``mu_ground``).
    """

    object_kind: ObjectKind = ObjectKind.CUBE
    object_mass: float = 0.300
    object_size: tuple[float, float, float] = (0.088, 0.088, 0.088)
    pusher_mass: float = 0.030
    pusher_size: tuple[float, float, float] = (0.104, 0.030, 0.048)
    tip_radius: float = 0.005
    tip_separation: float = 0.064
    mu_contact: float = 0.35
    mu_ground: float = 0.30
    object_pose: tuple[float, float, float] = (0.45, 0.0, 0.0)
    home_q: tuple[float, ...] = field(default=HOME_Q)
    dt: float = 0.01
    com_offset: tuple[float, float] = (0.0, 0.0)
    tip_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    joint_armature: tuple[float, ...] = (0.0,) * N_ARM_JOINTS
    joint_damping_scale: tuple[float, ...] = (1.0,) * N_ARM_JOINTS
    friction_patches: FrictionPatches | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.object_kind, ObjectKind):
            raise InvalidInputError(f"object_kind must be an ObjectKind, got {self.object_kind!r}")
        for name in ("object_mass", "pusher_mass", "tip_radius", "tip_separation", "dt"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"PushScene.{name} must be finite and > 0, got {value!r}")
        for name in ("mu_contact", "mu_ground"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"PushScene.{name} must be finite and >= 0, got {value!r}")
        for name, n in (("object_size", 3), ("pusher_size", 3), ("object_pose", 3), ("home_q", N_ARM_JOINTS),
                        ("com_offset", 2), ("tip_offset", 3), ("joint_armature", N_ARM_JOINTS),
                        ("joint_damping_scale", N_ARM_JOINTS)):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                raise InvalidInputError(f"PushScene.{name} must be {n} finite numbers, got {getattr(self, name)!r}")
        if min(self.object_size) <= 0.0 or min(self.pusher_size) <= 0.0:
            raise InvalidInputError(f"PushScene sizes must be > 0, got {self.object_size}, {self.pusher_size}")
        if min(self.joint_armature) < 0.0 or min(self.joint_damping_scale) < 0.0:
            raise InvalidInputError(f"PushScene joint_armature and joint_damping_scale must be >= 0, got "
                                    f"{self.joint_armature}, {self.joint_damping_scale}")

    @classmethod
    def for_object(cls, kind: ObjectKind, **overrides) -> PushScene:
        """The Table II setup of ``kind`` (object and pusher masses, object size), with ``overrides``.

        The default object pose puts the face to be pushed (the cube's -x face; the wedge's 85 mm leg, centred
        on the tips) 0.5 mm in front of the tips at :data:`HOME_Q`.
        """
        mass, size, pusher = _TABLE_II[ObjectKind(kind)]
        values = dict(object_kind=ObjectKind(kind), object_mass=mass, object_size=size, pusher_mass=pusher,
                      object_pose=_DEFAULT_POSE[ObjectKind(kind)])
        values.update(overrides)
        return cls(**values)

    @property
    def contact_height(self) -> float:
        """Height of the object's centre of mass above the table [m], where the tips push (paper Fig. 3)."""
        return 0.5 * self.object_size[2]


def object_polygon(scene: PushScene) -> np.ndarray:
    """``(V, 2)`` plan of the object, counter-clockwise, object frame (origin at the geometric centre: the centre of
    mass of a uniform object, the point the pose tracking sees) [m]."""
    a, b = scene.object_size[0], scene.object_size[1]
    if scene.object_kind is ObjectKind.CUBE:
        return np.array([[-a / 2, -b / 2], [a / 2, -b / 2], [a / 2, b / 2], [-a / 2, b / 2]])
    tri = np.array([[0.0, 0.0], [a, 0.0], [0.0, b]])
    return tri - tri.mean(axis=0)


def com_polygon(scene: PushScene) -> np.ndarray:
    """``(V, 2)`` plan about the true centre of mass: :func:`object_polygon` minus ``scene.com_offset`` [m]."""
    return object_polygon(scene) - np.asarray(scene.com_offset, dtype=np.float64)


def apply_joint_params(model, scene: PushScene) -> None:
    """Set the scene's armature [kg m²] and damping scale on the arm joints of a compiled MuJoCo ``model``."""
    model.dof_armature[:N_ARM_JOINTS] = np.asarray(scene.joint_armature, dtype=np.float64)
    model.dof_damping[:N_ARM_JOINTS] *= np.asarray(scene.joint_damping_scale, dtype=np.float64)


def object_inertia_z(scene: PushScene) -> float:
    """Moment of inertia about the vertical axis through the centre of mass [kg m²] (``I_z`` of eq 11's ``M_ob``).

    Box: ``m (a² + b²) / 12``; right-triangular prism with legs ``a, b``: ``m (a² + b²) / 18``.
    """
    a, b = scene.object_size[0], scene.object_size[1]
    div = 12.0 if scene.object_kind is ObjectKind.CUBE else 18.0
    return scene.object_mass * (a * a + b * b) / div


def tip_offsets(scene: PushScene) -> np.ndarray:
    """``(2, 3)`` tip sphere centres in the pusher (end-effector) frame [m] (``scene.tip_offset`` included)."""
    half = 0.5 * scene.tip_separation
    front = 0.5 * scene.pusher_size[1]
    reach = scene.pusher_size[2] - scene.tip_radius
    return np.array([[-half, front, reach], [half, front, reach]]) + np.asarray(scene.tip_offset, dtype=np.float64)


def _nums(values) -> str:
    return " ".join(repr(float(x)) for x in np.asarray(values, dtype=np.float64).reshape(-1))


def _arm_root() -> ET.Element:
    text = resources.files("contactkit.pushing").joinpath("assets", ARM_ASSET).read_text()
    return ET.fromstring(text)


def _add_pusher(root: ET.Element, scene: PushScene) -> None:
    ee = root.find(".//body[@name='end_effector']")
    body = ET.SubElement(ee, "body", name=PUSHER_BODY)
    sx, sy, sz = scene.pusher_size
    ET.SubElement(body, "geom", type="box", size=_nums([sx / 2, sy / 2, sz / 2]), pos=_nums([0, 0, sz / 2]),
                  mass=repr(scene.pusher_mass), contype="0", conaffinity="0", rgba="0.9 0.6 0.1 1")
    for i, p in enumerate(tip_offsets(scene)):
        ET.SubElement(body, "geom", name=TIP_GEOMS[i], type="sphere", size=repr(scene.tip_radius), pos=_nums(p),
                      mass="0", contype="2", conaffinity="1", condim="3", friction=f"{scene.mu_contact} 0 0",
                      rgba="0.9 0.2 0.1 1")
        ET.SubElement(body, "site", name=TIP_SITES[i], pos=_nums(p), size="0.002")


def _add_object(world: ET.Element, scene: PushScene) -> None:
    x, y, th = scene.object_pose
    h = scene.object_size[2]
    quat = [math.cos(th / 2), 0.0, 0.0, math.sin(th / 2)]
    body = ET.SubElement(world, "body", name=OBJECT_BODY, pos=_nums([x, y, h / 2]), quat=_nums(quat))
    ET.SubElement(body, "freejoint", name="object_free")
    common = dict(name=OBJECT_GEOM, mass=repr(scene.object_mass), contype="1", conaffinity="3", condim="3",
                  friction=f"{scene.mu_ground} 0 0", rgba="0.2 0.5 0.8 1")
    if scene.object_kind is ObjectKind.CUBE:
        ET.SubElement(body, "geom", type="box", size=_nums(np.asarray(scene.object_size) / 2), **common)
    else:
        ET.SubElement(body, "geom", type="mesh", mesh="wedge", **common)


def build_mjcf(scene: PushScene, with_object: bool = True) -> str:
    """MJCF text of ``scene``: arm (``assets/kinova_gen2_7dof.xml``), pusher, table and (optionally) the object.

    Args:
        scene: the setup.
        with_object: False gives the arm, pusher and table only (what :mod:`contactkit.pushing.arm` needs).

    Returns:
        A complete ``<mujoco>`` document; the arm's 7 hinge joints are the first 7 ``qpos``/``qvel`` entries,
        the object's free joint (if any) follows. Time step ``scene.dt``; friction of a tip–object pair is the
        larger of the two geoms' (MuJoCo's default), so both carry their own coefficient.
    """
    root = _arm_root()
    root.set("model", f"pushing_{scene.object_kind.value}")
    ET.SubElement(root, "option", timestep=repr(scene.dt), gravity=f"0 0 {-GRAVITY_MPS2}", integrator="implicitfast",
                  cone="pyramidal")
    if scene.object_kind is ObjectKind.WEDGE:
        asset = ET.SubElement(root, "asset")
        plan = object_polygon(scene)
        h = scene.object_size[2]
        verts = np.concatenate([np.c_[plan, np.full(3, -h / 2)], np.c_[plan, np.full(3, h / 2)]])
        ET.SubElement(asset, "mesh", name="wedge", vertex=_nums(verts))
    world = root.find("worldbody")
    ET.SubElement(world, "geom", name=TABLE_GEOM, type="plane", size="2 2 0.1", contype="1", conaffinity="1",
                  friction=f"{scene.mu_ground} 0 0", rgba="0.8 0.8 0.8 1")
    _add_pusher(root, scene)
    if with_object:
        _add_object(world, scene)
    return ET.tostring(root, encoding="unicode")
