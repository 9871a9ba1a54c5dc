"""Stable placement under geometric uncertainty: the four tasks of the placement paper (§VI-A, §VI-F).

Every geometry is built from convex pieces whose vertices are affine in the uncertain parameter ``θ``
(:class:`~contactkit.engine.diff.features.ParamPiece`): the same pieces give the MuJoCo scene of the "real" world
at the hidden ``θ_gt`` (:func:`task_scene`) and the differentiable model at an estimate (:func:`diff_scene`). The
tool frame is the gripper (end-effector) frame with the F/T sensor at its origin; the table top is ``z = 0``.

* ``shape`` — a 50 mm cube held at its top face whose left and right walls are ``d1``, ``d2`` longer than nominal,
  so its bottom is tilted in the hand; goal set: bottom face flat on the table (any position; the policy's closest
  goal keeps the bottom centre's measured horizontal position). Error: angle between the bottom face and the table
  [deg].
* ``pose`` — a box-end wrench (a hexagonal ring, 1 mm clearance, and a handle held 60 mm from the ring's centre)
  with in-hand offsets ``x`` (along the handle) and ``z``, placed over a hex part (20 mm across flats, 12 mm high)
  to rest on the table. Error: distance of the ring's centre from its goal [mm].
* ``env`` — a block with a concave bottom placed on a 15 mm square pillar of uncertain horizontal location ``l1``,
  ``l2`` and height ``h``; the bowl is polygonal (an inverted square pyramid of slope 0.3 made of four convex
  pieces), so the block seats on the pillar's four top edges when centred; goal: the bowl's centre over the pillar's
  top centre. Error: distance [mm].
* ``cup-saucer`` — a cup (octagonal prism, 30 mm apothem, the "solid cylinder" of §VI-F) placed into the well of a
  saucer that fits its foot with 1.5 mm radial clearance, inside a rim that rises 5 mm over 10 mm (twelve convex
  wedges); saucer location ``l1``, ``l2``, ``h`` uncertain. Error: distance of the cup's bottom centre from the
  well's [mm].

Simplifications: the end-effector and object are one rigid body (§IV-A); the gripper's own geometry is left out;
contact friction is 0.5 everywhere; the parts are rigid polytopes (the bowl and the cup are polygonal; the bowl is the
coarsest polygon that seats in both horizontal directions).

The policy that places the object (eq 3) is in :mod:`contactkit.tasks.placement_policy`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from contactkit.control.impedance import damping_gains
from contactkit.engine.diff.features import ParamPiece, param_piece
from contactkit.engine.diff.step import DiffScene
from contactkit.errors import InvalidInputError
from contactkit.geometry import Part, hull_piece, mass_properties, polygon
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool

TABLE_SIZE = (0.4, 0.4, 0.02)
"""Full extents of the table box [m]; its top face is the plane z = 0."""
FRICTION = 0.5
"""Friction coefficient of every surface."""
TOOL_MASS = 0.4
"""Mass of the grasped object with the fingers [kg]."""
GAINS = ImpedanceGains(stiffness_pos=np.full(3, 500.0), stiffness_rot=np.full(3, 15.0), damping_ratio=1.5)
"""Cartesian impedance of the arm (a Franka-like compliant setting)."""
WORLD = WorldParams(wrist_armature=2e-4)
"""The MuJoCo "real" world: default contact softness, 25 × 2 ms per 50 ms control step."""


class TaskName(str, enum.Enum):
    """The four placement tasks."""

    SHAPE = "shape"
    POSE = "pose"
    ENV = "env"
    CUP_SAUCER = "cup-saucer"


@dataclass(frozen=True, eq=False)
class PlacementTask:
    """A placement task: geometry affine in ``θ``, goal, start and the distribution of its test cases.

    Attributes:
        name: :class:`TaskName`. param_names: names of the ``P`` parameters (units: metres).
        tool_pieces: object pieces, tool frame. env_pieces: environment pieces, world frame (the table first).
        ref_base, ref_basis: ``(3,)``, ``(P, 3)`` the object's reference point in the tool frame, affine in ``θ`` [m].
        goal_base, goal_basis: ``(3,)``, ``(P, 3)`` where that point goes, world frame, affine in ``θ`` [m].
        lift: start height of the tool above the nominal goal pose ``G(θ_init = 0)`` [m].
        init_std: ``(P,)`` perception noise of the initial guess [m]: the spread of the estimators' initial beliefs
            and of the hidden geometries of the test cases (:func:`sample_cases`).
        angle_error: the release error is the tilt of the bottom face [deg] (shape), else a distance [mm].
    """

    name: TaskName
    param_names: tuple[str, ...]
    tool_pieces: tuple[ParamPiece, ...]
    env_pieces: tuple[ParamPiece, ...]
    ref_base: np.ndarray
    ref_basis: np.ndarray
    goal_base: np.ndarray
    goal_basis: np.ndarray
    lift: float
    init_std: np.ndarray
    angle_error: bool = False

    @property
    def n_params(self) -> int:
        """Number of uncertain parameters ``P``."""
        return len(self.param_names)


def _piece(vertices, name: str, basis_fn=None, n_params: int = 0) -> ParamPiece:
    """Convex hull of ``vertices`` as a :class:`ParamPiece`; ``basis_fn(vertices) -> (P, V, 3)``."""
    hull = hull_piece(np.asarray(vertices, dtype=np.float64), name)
    basis = None if basis_fn is None else basis_fn(hull.vertices)
    return param_piece(hull, basis, n_params, name)


def _box_vertices(lo, hi) -> np.ndarray:
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], dtype=float)


def _table(n_params: int) -> ParamPiece:
    half = np.array(TABLE_SIZE) / 2
    return _piece(_box_vertices([-half[0], -half[1], -TABLE_SIZE[2]], [half[0], half[1], 0.0]), "table",
                  n_params=n_params)


def _translation_basis(axes: tuple[int | None, ...], lift_mask=None):
    """Basis moving every vertex along world axis ``axes[j]`` per parameter ``j`` (``None``: along z for the
    vertices ``lift_mask(v)`` selects)."""

    def basis(v: np.ndarray) -> np.ndarray:
        out = np.zeros((len(axes), len(v), 3))
        for j, axis in enumerate(axes):
            if axis is None:
                out[j, lift_mask(v), 2] = 1.0
            else:
                out[j, :, axis] = 1.0
        return out

    return basis


def shape_task() -> PlacementTask:
    """The ``shape`` task: a cube with uncertain wall heights ``d1`` (left, -x) and ``d2`` (right, +x)."""
    w, h = 0.05, 0.05

    def walls(v: np.ndarray) -> np.ndarray:
        basis = np.zeros((2, len(v), 3))
        bottom = v[:, 2] < -h / 2
        basis[0, bottom & (v[:, 0] < 0), 2] = -1.0
        basis[1, bottom & (v[:, 0] > 0), 2] = -1.0
        return basis

    cube = _piece(_box_vertices([-w / 2, -w / 2, -h], [w / 2, w / 2, 0.0]), "cube", walls)
    return PlacementTask(TaskName.SHAPE, ("d1", "d2"), (cube,), (_table(2),), np.array([0.0, 0.0, -h]),
                         np.array([[0.0, 0.0, -0.5], [0.0, 0.0, -0.5]]), np.zeros(3), np.zeros((2, 3)), lift=0.008,
                         init_std=np.array([2e-3, 2e-3]), angle_error=True)


def pose_task() -> PlacementTask:
    """The ``pose`` task: a box-end wrench with uncertain in-hand offsets ``x``, ``z`` placed over a hex part.

    A ring off by more than the 1 mm clearance rests on the part's flat top: the contact force is then vertical
    whatever the offset, so the readings tell which side the ring rests on and where it did not go, not how far off
    it is (``z`` is observed well). Outcomes are bimodal: ~1 mm over the part or ~12 mm on top of it.
    """
    hole, outer = polygon("hexagon", 0.011), polygon("hexagon", 0.020)
    grasp = np.array([0.06, 0.0, 0.006])
    shift = _translation_basis((0, 2))
    pieces = []
    for k in range(6):
        quad = np.array([hole[k - 1], hole[k], outer[k], outer[k - 1]])
        ring = np.concatenate([np.column_stack([quad, np.zeros(4)]), np.column_stack([quad, np.full(4, 0.006)])])
        pieces.append(_piece(ring - grasp, f"ring{k}", shift))
    pieces.append(_piece(_box_vertices([0.020, -0.006, 0.0], [0.090, 0.006, 0.006]) - grasp, "handle", shift))
    hexagon = polygon("hexagon", 0.010)
    nut = _piece(np.concatenate([np.column_stack([hexagon, np.zeros(6)]),
                                 np.column_stack([hexagon, np.full(6, 0.012)])]), "hex", n_params=2)
    return PlacementTask(TaskName.POSE, ("x", "z"), tuple(pieces), (_table(2), nut), -grasp, np.array([[1.0, 0, 0],
                         [0, 0, 1.0]]), np.zeros(3), np.zeros((2, 3)), lift=0.020,
                         init_std=np.array([3e-3, 2e-3]))


def env_task() -> PlacementTask:
    """The ``env`` task: a block with a recessed bottom onto a 15 mm square pillar at uncertain ``l1``, ``l2``, ``h``.

    The bottom is a concave bowl made polygonal: an inverted square pyramid of slope ``SLOPE`` (four convex sector
    pieces meeting at the apex), so the block seats on the pillar's four top edges only when centred on it.
    """
    half, height, slope, pillar_half, pillar_h = 0.025, 0.03, 0.3, 0.0075, 0.04
    apex = -height + slope * half  # the bottom is highest at the centre

    def bottom(x, y):
        return apex - slope * max(abs(x), abs(y))

    pieces = []
    corners = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]]) * half
    for k in range(4):
        tri = [(0.0, 0.0), tuple(corners[k]), tuple(corners[(k + 1) % 4])]
        verts = [[x, y, bottom(x, y)] for x, y in tri] + [[x, y, 0.0] for x, y in tri]
        pieces.append(_piece(verts, f"block{k}", n_params=3))
    pillar = _piece(_box_vertices([-pillar_half, -pillar_half, 0.0], [pillar_half, pillar_half, pillar_h]), "pillar",
                    _translation_basis((0, 1, None), lambda v: v[:, 2] > pillar_h / 2))
    seat = np.array([0.0, 0.0, apex - slope * pillar_half])  # where the pillar's top centre sits when seated
    return PlacementTask(TaskName.ENV, ("l1", "l2", "h"), tuple(pieces), (_table(3), pillar), seat, np.zeros((3, 3)),
                         np.array([0.0, 0.0, pillar_h]), np.eye(3), lift=0.008,
                         init_std=np.array([5e-3, 5e-3, 2e-3]))


def cup_saucer_task() -> PlacementTask:
    """The cup-on-saucer task (§VI-F): saucer location ``l1``, ``l2``, ``h`` uncertain."""
    cup_poly, cup_h = polygon("circle", 0.03, circle_segments=8), 0.08
    cup = _piece(np.concatenate([np.column_stack([cup_poly, np.full(8, -cup_h)]),
                                 np.column_stack([cup_poly, np.zeros(8)])]), "cup", n_params=3)
    # the well fits the cup's foot with 1.5 mm radial clearance; its wall rises 5 mm over 10 mm (27°)
    floor, rim_top = 0.004, 0.009
    r_in = (float(np.linalg.norm(cup_poly[0])) + 1.5e-3) / np.cos(np.pi / 12)
    r_mid = r_in + 0.010
    base_poly = polygon("circle", 0.06, circle_segments=12)
    r_out = float(np.linalg.norm(base_poly[0]))
    move = _translation_basis((0, 1, 2))  # the saucer's 3-D location (§VI-F)
    pieces = [_piece(np.concatenate([np.column_stack([base_poly, np.zeros(12)]),
                                     np.column_stack([base_poly, np.full(12, floor)])]), "saucer-base", move)]
    angles = np.arctan2(base_poly[:, 1], base_poly[:, 0])
    for k in range(12):
        ends = [angles[k - 1], angles[k]]
        section = [(r_in, floor), (r_out, floor), (r_out, rim_top), (r_mid, rim_top)]
        verts = [[r * np.cos(a), r * np.sin(a), z] for a in ends for r, z in section]
        pieces.append(_piece(verts, f"saucer-rim{k}", move))
    return PlacementTask(TaskName.CUP_SAUCER, ("l1", "l2", "h"), (cup,), (_table(3), *pieces),
                         np.array([0.0, 0.0, -cup_h]), np.zeros((3, 3)), np.array([0.0, 0.0, floor]), np.eye(3),
                         lift=0.012, init_std=np.array([5e-3, 5e-3, 2e-3]))


TASKS = {TaskName.SHAPE: shape_task, TaskName.POSE: pose_task, TaskName.ENV: env_task,
         TaskName.CUP_SAUCER: cup_saucer_task}


def make_task(name: str | TaskName) -> PlacementTask:
    """The task called ``name`` (``shape``, ``pose``, ``env`` or ``cup-saucer``).

    Raises:
        InvalidInputError: an unknown name (the message lists the known ones).
    """
    try:
        return TASKS[TaskName(name)]()
    except ValueError:
        raise InvalidInputError(f"unknown placement task {name!r}; known: {[t.value for t in TaskName]}") from None


def _check_theta(task: PlacementTask, theta) -> np.ndarray:
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (task.n_params,) or not np.all(np.isfinite(theta)):
        raise InvalidInputError(f"{task.name.value}: θ must be {task.n_params} finite numbers {task.param_names}, "
                                f"got {theta!r}")
    return theta


def bottom_normal(task: PlacementTask, theta) -> np.ndarray:
    """Outward unit normal ``(3,)`` of the object's bottom face in the tool frame (the shape task's tilt)."""
    piece = task.tool_pieces[0]
    verts = piece.vertices(_check_theta(task, theta))
    lowest = np.argmin(verts[piece.loops].mean(axis=1)[:, 2])
    a, b, c = verts[piece.loops[lowest, :3]]
    n = np.cross(b - a, c - a)
    return n / np.linalg.norm(n)


def _align_quat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The smallest rotation ``(4,)`` taking unit vector ``a`` to ``b``."""
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    if s < 1e-15:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return rotvec_to_quat(axis / s * np.arctan2(s, float(a @ b)))


def goal_pose(task: PlacementTask, theta) -> tuple[np.ndarray, np.ndarray]:
    """The goal tool pose ``G(θ)`` (eq 2): ``(pos (3,) [m], quat (4,))`` putting the reference point on its goal.

    For ``shape`` the orientation turns the bottom face flat (the goal set's member at the start's x, y and yaw).
    """
    theta = _check_theta(task, theta)
    quat = _align_quat(bottom_normal(task, theta), np.array([0.0, 0.0, -1.0])) if task.angle_error else \
        np.array([1.0, 0.0, 0.0, 0.0])
    ref = task.ref_base + theta @ task.ref_basis
    return task.goal_base + theta @ task.goal_basis - quat_to_mat(quat) @ ref, quat


def start_pose(task: PlacementTask) -> tuple[np.ndarray, np.ndarray]:
    """Initial tool pose: ``lift`` above the nominal goal ``G(θ_init = 0)`` (§VI-A)."""
    pos, quat = goal_pose(task, np.zeros(task.n_params))
    return pos + np.array([0.0, 0.0, task.lift]), quat


def release_error(task: PlacementTask, pos, quat, theta_gt) -> float:
    """Distance to the goal at release (§VI-D): the bottom face's tilt [deg] for ``shape``, else the distance [mm]
    between the object's reference point and its goal, for the tool at ``pos (3,)``, ``quat (4,)`` and ``θ_gt``."""
    theta = _check_theta(task, theta_gt)
    rot = quat_to_mat(np.asarray(quat, dtype=np.float64))
    if task.angle_error:
        n = rot @ bottom_normal(task, theta)
        return float(np.degrees(np.arctan2(np.hypot(n[0], n[1]), -n[2])))  # exact near 0, unlike arccos
    point = np.asarray(pos) + rot @ (task.ref_base + theta @ task.ref_basis)
    return float(1e3 * np.linalg.norm(point - (task.goal_base + theta @ task.goal_basis)))


CASE_MIN_NORM = 1.0
"""A hidden geometry is at least this many perception-noise deviations (Mahalanobis) from the guess ``θ_init = 0``."""

CASE_MAX_SIGMA = 2.5
"""... and within this many deviations per parameter."""


def sample_cases(task: PlacementTask, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, P)`` hidden geometries ``θ_gt ≠ θ_init = 0`` drawn from the perception noise ``N(0, diag(init_std²))``
    that also spreads the estimators' initial beliefs (§V-B), kept when at least :data:`CASE_MIN_NORM` deviations from
    the guess and within :data:`CASE_MAX_SIGMA` per parameter. For ``shape`` the two wall heights also differ by at
    least 1.5 mm (a tilt of 1.7° or more), so that the cube is not flat in the hand.
    """
    out = []
    while len(out) < n:
        z = rng.normal(size=task.n_params)
        theta = z * task.init_std
        flat_ok = not task.angle_error or abs(theta[1] - theta[0]) >= 1.5e-3
        if np.linalg.norm(z) >= CASE_MIN_NORM and np.all(np.abs(z) <= CASE_MAX_SIGMA) and flat_ok:
            out.append(theta)
    return np.array(out)


def _mass_properties(pieces: list) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, COM and inertia about the COM of the union of disjoint convex pieces at :data:`TOOL_MASS`."""
    props = [mass_properties(Part("piece", p.vertices, p.faces, (p,)), density=1.0) for p in pieces]
    volume = sum(p.mass for p in props)
    com = sum(p.mass * p.com for p in props) / volume
    inertia = sum(p.inertia + p.mass * ((p.com - com) @ (p.com - com) * np.eye(3) - np.outer(p.com - com, p.com - com))
                  for p in props)
    return TOOL_MASS, com, inertia * (TOOL_MASS / volume)


def task_scene(task: PlacementTask, theta) -> Scene:
    """The MuJoCo scene of the task at geometry ``θ`` (the "real" world holds ``θ_gt``), tool at its start pose."""
    theta = _check_theta(task, theta)
    pieces = [p.piece(theta) for p in task.tool_pieces]
    mass, com, inertia = _mass_properties(pieces)
    verts = np.concatenate([p.vertices for p in pieces])
    faces = np.concatenate([p.faces + sum(len(q.vertices) for q in pieces[:i]) for i, p in enumerate(pieces)])
    pos, quat = start_pose(task)
    tool = Tool(Part(task.name.value, verts, faces, tuple(pieces)), mass, com, inertia, FRICTION, pos, quat)
    statics = tuple(StaticBody(Part(p.name, p.piece(theta).vertices, p.piece(theta).faces, (p.piece(theta),)),
                               friction=FRICTION) for p in task.env_pieces)
    goal, goal_quat = goal_pose(task, theta)
    return Scene(f"placement({task.name.value})", tool, statics, GAINS, workspace_lo=(-0.15, -0.15, -0.01),
                 workspace_hi=(0.15, 0.15, 0.2), target_pos=goal, target_quat=goal_quat,
                 meta={"task": "placement", "placement": task.name.value, "theta": theta.tolist()})


def diff_scene(task: PlacementTask, world: WorldParams = WORLD) -> DiffScene:
    """The differentiable model of the task: nominal mass properties (constant, §VI-B), the scene's gains."""
    mass, com, inertia = _mass_properties([p.piece(np.zeros(task.n_params)) for p in task.tool_pieces])
    d_pos, d_rot = damping_gains(GAINS, mass, np.linalg.eigvalsh(inertia))
    return DiffScene(task.tool_pieces, task.env_pieces, np.full(len(task.env_pieces), FRICTION), mass, com, inertia,
                     world.wrist_armature, np.concatenate([GAINS.stiffness_pos, GAINS.stiffness_rot]),
                     np.concatenate([d_pos, d_rot]), gravity=9.81 if world.gravity else 0.0,
                     weight_compensated=GAINS.gravity_compensation)
