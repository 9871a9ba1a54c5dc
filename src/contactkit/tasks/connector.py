"""Connector insertion (LML paper, *Efficient Online Learning of Contact Force Models for Connector Insertion*,
§5): a C13-like plug held by the impedance controller above a socket fixed with a sampled misalignment.

Geometry (all built from convex pieces, so MuJoCo collides them exactly as described):

* **Plug** (the tool). Frame: origin at the centre of the housing's front face, axis +z towards the
  wrist. The housing is a prism from ``z = 0`` to ``z = length`` whose cross-section is a
  ``width × depth`` rectangle with the two ``+y`` corners cut at 45° by ``key_chamfer`` (the C13
  keying), its front edge bevelled by ``edge_bevel`` at 45°. Three rectangular pins with bevelled
  tips hang below the front face (``z ∈ [−pin_length, 0]``). The F/T sensor sits on the housing's
  back face (``z = length``), where the wrist holds it.
* **Socket** (fixed). Frame: origin at the centre of the cavity floor, cavity opening along +z. The
  cavity is the housing section offset outward by the variant's ``clearance`` (radial gap with the
  plug centred), ``cavity_depth`` deep, with a 45° entry chamfer of the variant's ``chamfer`` [m]
  (the section offset by ``clearance + chamfer`` at the rim). Walls are one convex piece per cavity
  edge (split along the corner bisectors). The floor slab (``z ∈ [−hole_depth, 0]``) is cut into convex
  strips around three pin holes (pin section offset by ``clearance + pin_hole_margin``), closed below
  by a base slab. The pins are longer than the holes are deep, so a seated plug rests on its pin tips
  with its front face ``seated_height`` above the floor (fewer simultaneous contacts than a housing
  sitting on the strips, which keeps the simulation fast).

World layout: the nominal socket frame is the world frame (the robot believes the socket is there);
the actual socket is placed at the sampled :class:`Misalignment`. The plug starts above the nominal
socket, upright.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.mass import mass_properties
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.geometry.prism import check_positive, convex_prism, loft
from contactkit.geometry.validate import hull_piece
from contactkit.rotations import quat_rotate, rotvec_to_quat
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool

COLLINEAR_TOL = 1e-12
"""Smallest |cross product| of two consecutive face normals [1] treated as a proper corner."""

MIN_PIECE_AREA = 1e-10
"""Floor pieces with a cross-section smaller than this [m²] are dropped (zero-width slivers)."""


@dataclass(frozen=True)
class ConnectorGeometry:
    """Dimensions of the C13-like plug and its socket [m] (about those of IEC 60320 C13/C14)."""

    width: float = 0.024
    depth: float = 0.016
    key_chamfer: float = 0.004
    length: float = 0.030
    edge_bevel: float = 0.001
    pin_size: tuple[float, float] = (0.0015, 0.004)
    pin_length: float = 0.006
    pin_tip_bevel: float = 0.0004
    pin_centres: tuple[tuple[float, float], ...] = ((-0.007, -0.002), (0.007, -0.002), (0.0, 0.003))
    cavity_depth: float = 0.012
    wall: float = 0.004
    hole_depth: float = 0.005
    base: float = 0.004
    pin_hole_margin: float = 0.0003

    @property
    def seated_height(self) -> float:
        """Socket-frame z [m] of the plug front face when the pins bottom out in their holes."""
        return self.pin_length - self.hole_depth

    def __post_init__(self):
        for name in ("width", "depth", "key_chamfer", "length", "edge_bevel", "pin_length", "pin_tip_bevel",
                     "cavity_depth", "wall", "hole_depth", "base", "pin_hole_margin"):
            check_positive(f"connector {name}", getattr(self, name))
        if self.key_chamfer >= min(self.width, self.depth) / 2 or self.pin_tip_bevel >= min(self.pin_size) / 2:
            raise InvalidInputError("connector key_chamfer / pin_tip_bevel too large for the section")
        if not self.hole_depth < self.pin_length < self.cavity_depth:
            raise InvalidInputError("connector pins must be longer than the pin holes (the pins bottom out, "
                                    "the housing does not) and shorter than the cavity")


@dataclass(frozen=True)
class SocketVariant:
    """One of the socket variants: radial clearance [m], friction coefficient, entry chamfer [m]."""

    name: str
    clearance: float
    friction: float
    chamfer: float

    def __post_init__(self):
        for what in ("clearance", "friction", "chamfer"):
            check_positive(f"socket {self.name!r} {what}", getattr(self, what))


def _variants() -> tuple[SocketVariant, ...]:
    out = []
    for clearance in (2e-4, 5e-4):
        for friction in (0.3, 0.8):
            for chamfer in (1e-3, 2.5e-3):
                name = f"c{clearance * 1e3:g}mm-mu{friction:g}-ch{chamfer * 1e3:g}mm"
                out.append(SocketVariant(name, clearance, friction, chamfer))
    return tuple(out)


SOCKET_VARIANTS: tuple[SocketVariant, ...] = _variants()
"""The 8 socket variants: clearance {0.2, 0.5} mm × friction {0.3, 0.8} × entry chamfer {1, 2.5} mm."""


@dataclass(frozen=True)
class Misalignment:
    """Pose of the actual socket in the nominal socket frame (= world).

    Attributes:
        offset: ``(3,)`` position [m].
        rotvec: ``(3,)`` rotation vector [rad] (world frame).
    """

    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotvec: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        for name in ("offset", "rotvec"):
            v = np.asarray(getattr(self, name), dtype=np.float64)
            if v.shape != (3,) or not np.isfinite(v).all():
                raise InvalidInputError(f"misalignment {name} must be 3 finite numbers, got {getattr(self, name)!r}")
            object.__setattr__(self, name, v)

    @property
    def quat(self) -> np.ndarray:
        """``(4,)`` socket orientation (w, x, y, z)."""
        return rotvec_to_quat(self.rotvec)


@dataclass(frozen=True)
class MisalignmentRange:
    """Uniform bounds of the sampled misalignment: lateral offset (x, y) [m], tilt about x and y [rad],
    yaw about z [rad]. The socket's height is not perturbed."""

    lateral: float = 2e-3
    tilt: float = float(np.deg2rad(3.0))
    yaw: float = float(np.deg2rad(2.0))


def sample_misalignment(rng: np.random.Generator, bounds: MisalignmentRange | None = None) -> Misalignment:
    """Draw a socket misalignment uniformly within ``bounds`` (offset ``(x, y, 0)`` [m], rotation vector
    ``(tilt_x, tilt_y, yaw)`` [rad]); ``rng`` is the only source of randomness."""
    b = bounds or MisalignmentRange()
    xy = rng.uniform(-b.lateral, b.lateral, size=2)
    tilt = rng.uniform(-b.tilt, b.tilt, size=2)
    yaw = rng.uniform(-b.yaw, b.yaw)
    return Misalignment(np.array([xy[0], xy[1], 0.0]), np.array([tilt[0], tilt[1], yaw]))


# ---- convex sections ---------------------------------------------------------------------------
def _section_planes(g: ConnectorGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Face normals ``(6, 2)`` (counter-clockwise by angle) and offsets ``(6,)`` [m] of the housing section."""
    s = np.sqrt(0.5)
    normals = np.array([[1.0, 0.0], [s, s], [0.0, 1.0], [-s, s], [-1.0, 0.0], [0.0, -1.0]])
    cut = (g.width / 2 + g.depth / 2 - g.key_chamfer) * s
    offsets = np.array([g.width / 2, cut, g.depth / 2, cut, g.width / 2, g.depth / 2])
    return normals, offsets


def offset_polygon(normals: np.ndarray, offsets: np.ndarray, t: float) -> np.ndarray:
    """Corners ``(n, 2)`` [m] of the convex polygon ``{x : n_k·x ≤ a_k + t}``, counter-clockwise.

    Corner ``k`` joins faces ``k`` and ``k + 1``; as ``t`` changes it moves along the bisector of its
    angle, which is why a wall piece split there tiles with its neighbour. ``normals (n, 2)`` unit,
    ordered counter-clockwise; ``offsets (n,)`` [m]; ``t`` [m] (negative shrinks).
    """
    n1, n2 = normals, np.roll(normals, -1, axis=0)
    a1, a2 = offsets + t, np.roll(offsets, -1) + t
    det = n1[:, 0] * n2[:, 1] - n1[:, 1] * n2[:, 0]
    if np.any(np.abs(det) < COLLINEAR_TOL):
        raise InvalidInputError("offset_polygon: two consecutive faces are parallel")
    x = (a1 * n2[:, 1] - a2 * n1[:, 1]) / det
    y = (n1[:, 0] * a2 - n2[:, 0] * a1) / det
    corners = np.column_stack([x, y])
    # the edge from corner k to k + 1 lies on face k + 1 and must run along its tangent (−n_y, n_x)
    tangents = np.roll(normals, -1, axis=0) @ np.array([[0.0, 1.0], [-1.0, 0.0]])
    if np.any(np.einsum("ij,ij->i", np.roll(corners, -1, axis=0) - corners, tangents) <= 0.0):
        raise InvalidInputError(f"offset_polygon: offset {t} m makes a face vanish")
    return corners


def _rect(cx: float, cy: float, hx: float, hy: float) -> np.ndarray:
    return np.array([[cx - hx, cy - hy], [cx + hx, cy - hy], [cx + hx, cy + hy], [cx - hx, cy + hy]])


def _clip(poly: np.ndarray, x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    """Sutherland–Hodgman clip of a convex counter-clockwise polygon to the box ``[x0,x1]×[y0,y1]``."""
    for axis, bound, keep_below in ((0, x1, True), (0, x0, False), (1, y1, True), (1, y0, False)):
        if len(poly) == 0:
            break
        out = []
        for p, q in zip(poly, np.roll(poly, -1, axis=0), strict=True):
            p_in = p[axis] <= bound if keep_below else p[axis] >= bound
            q_in = q[axis] <= bound if keep_below else q[axis] >= bound
            if p_in:
                out.append(p)
            if p_in != q_in:
                out.append(p + (bound - p[axis]) / (q[axis] - p[axis]) * (q - p))
        poly = np.array(out).reshape(-1, 2)
    return poly


def _area(poly: np.ndarray) -> float:
    if len(poly) < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def _union(name: str, pieces: list[ConvexPiece], meta: dict) -> Part:
    """A part whose surface is the disjoint pieces' closed meshes side by side (interiors disjoint)."""
    verts, faces, base = [], [], 0
    for p in pieces:
        verts.append(p.vertices)
        faces.append(p.faces + base)
        base += len(p.vertices)
    return Part(name, np.concatenate(verts), np.concatenate(faces), tuple(pieces), meta)


# ---- parts -------------------------------------------------------------------------------------
def plug(geometry: ConnectorGeometry | None = None) -> Part:
    """The C13-like plug (module docstring): housing (one convex piece) and three pins (one each).

    Returns:
        :class:`Part` in the plug frame [m]: housing ``z ∈ [0, length]``, pins ``z ∈ [−pin_length, 0]``.
    """
    g = geometry or ConnectorGeometry()
    normals, offsets = _section_planes(g)
    section = offset_polygon(normals, offsets, 0.0)
    front = offset_polygon(normals, offsets, -g.edge_bevel)
    housing = ConvexPiece(*loft([(0.0, front), (g.edge_bevel, section), (g.length, section)], centre_caps=False))
    pieces = [housing]
    hx, hy = g.pin_size[0] / 2, g.pin_size[1] / 2
    b = g.pin_tip_bevel
    for cx, cy in g.pin_centres:
        tip, full = _rect(cx, cy, hx - b, hy - b), _rect(cx, cy, hx, hy)
        rings = [(-g.pin_length, tip), (-g.pin_length + b, full), (0.0, full)]
        pieces.append(ConvexPiece(*loft(rings, centre_caps=False)))
    meta = {"kind": "plug", "width": g.width, "depth": g.depth, "length": g.length, "pin_length": g.pin_length}
    return _union("plug(C13)", pieces, meta)


def _wall_pieces(g: ConnectorGeometry, v: SocketVariant) -> list[ConvexPiece]:
    normals, offsets = _section_planes(g)
    inner = offset_polygon(normals, offsets, v.clearance)
    rim = offset_polygon(normals, offsets, v.clearance + v.chamfer)
    outer = offset_polygon(normals, offsets, v.clearance + v.chamfer + g.wall)
    top, knee, bottom = g.cavity_depth, g.cavity_depth - v.chamfer, -g.hole_depth - g.base
    pieces = []
    for j in range(len(inner)):
        idx = [j, (j + 1) % len(inner)]
        pts = [np.column_stack([inner[idx], [z, z]]) for z in (bottom, knee)]
        pts += [np.column_stack([outer[idx], [z, z]]) for z in (bottom, top)]
        pts += [np.column_stack([rim[idx], [top, top]])]
        pieces.append(hull_piece(np.concatenate(pts), label=f"socket wall {j}"))
    return pieces


def _floor_pieces(g: ConnectorGeometry, v: SocketVariant) -> list[ConvexPiece]:
    """The cavity-shaped floor ``z ∈ [−hole_depth, 0]`` in strips around the pin holes, and the base slab
    ``z ∈ [−hole_depth − base, −hole_depth]`` under it."""
    normals, offsets = _section_planes(g)
    region = offset_polygon(normals, offsets, v.clearance)
    m = v.clearance + g.pin_hole_margin
    holes = [(cx - g.pin_size[0] / 2 - m, cx + g.pin_size[0] / 2 + m, cy - g.pin_size[1] / 2 - m,
              cy + g.pin_size[1] / 2 + m) for cx, cy in g.pin_centres]
    lo, hi = region.min(axis=0), region.max(axis=0)
    xs = np.unique(np.clip([lo[0], hi[0], *[h[0] for h in holes], *[h[1] for h in holes]], lo[0], hi[0]))
    pieces = []
    for x0, x1 in zip(xs[:-1], xs[1:], strict=True):
        cuts = sorted((h[2], h[3]) for h in holes if h[0] <= x0 and h[1] >= x1)
        ys = [lo[1], *[y for c in cuts for y in c], hi[1]]
        for y0, y1 in zip(ys[0::2], ys[1::2], strict=True):
            poly = _clip(region, x0, x1, y0, y1)
            if _area(poly) > MIN_PIECE_AREA:
                pieces.append(convex_prism(poly, -g.hole_depth, 0.0))
    pieces.append(convex_prism(region, -g.hole_depth - g.base, -g.hole_depth))
    return pieces


def socket(variant: SocketVariant, geometry: ConnectorGeometry | None = None) -> Part:
    """The socket of ``variant`` for the plug of ``geometry`` (module docstring), in the socket frame [m].

    Returns:
        :class:`Part` with one convex wall piece per cavity edge (``z ∈ [−hole_depth − base,
        cavity_depth]``), the floor strips around the three pin holes (``z ∈ [−hole_depth, 0]``) and the
        base slab; the pieces have disjoint interiors.
    """
    g = geometry or ConnectorGeometry()
    pieces = _wall_pieces(g, variant) + _floor_pieces(g, variant)
    meta = {"kind": "socket", "variant": variant.name, "clearance": variant.clearance,
            "friction": variant.friction, "chamfer": variant.chamfer, "cavity_depth": g.cavity_depth}
    return _union(f"socket({variant.name})", pieces, meta)


# ---- scene -------------------------------------------------------------------------------------
CONNECTOR_GAINS = ImpedanceGains(
    stiffness_pos=np.array([1000.0, 1000.0, 1000.0]),
    stiffness_rot=np.array([10.0, 10.0, 10.0]),
    damping_ratio=1.0,
    max_force=40.0,
    max_torque=2.0,
    max_pos_step=0.03,
    max_rot_step=0.3,
)
"""Impedance gains of the connector task: 1 kN/m and 10 N·m/rad about the plug's front face, the order
of a Cartesian impedance controller on a Franka arm set up for insertion."""

START_CLEARANCE = 0.003
"""Gap [m] between the pin tips and the socket rim at the start."""


def connector_insertion(
    variant: SocketVariant,
    misalignment: Misalignment | None = None,
    *,
    geometry: ConnectorGeometry | None = None,
    plug_mass: float = 0.1,
    controller: ImpedanceGains | None = None,
) -> Scene:
    """The connector-insertion scene: plug above the nominal socket pose, socket at ``misalignment``.

    Args:
        variant: the socket's clearance, friction (used for plug and socket) and chamfer.
        misalignment: actual socket pose in the nominal frame (world); default none.
        geometry: plug and socket dimensions.
        plug_mass: [kg]. controller: impedance gains; default :data:`CONNECTOR_GAINS`.

    Returns:
        Scene whose ``target_pos``/``target_quat`` are the actual socket frame (cavity floor centre,
        world; the seated plug frame lies ``seated_height`` above it along the socket axis), and whose
        ``meta`` holds the variant, the misalignment (``socket_pos``, ``socket_quat``) and ``seated_height``.
    """
    g = geometry or ConnectorGeometry()
    mis = misalignment or Misalignment()
    plug_part, socket_part = plug(g), socket(variant, g)
    props = mass_properties(plug_part, mass=plug_mass)
    start = np.array([0.0, 0.0, g.cavity_depth + g.pin_length + START_CLEARANCE])
    tool = Tool(plug_part, props.mass, props.com, props.inertia, variant.friction, start,
                sensor_pos=(0.0, 0.0, g.length))
    body = StaticBody(socket_part, pos=mis.offset, quat=mis.quat, friction=variant.friction)
    meta = {"task": "connector-insertion", "variant": variant.name, "clearance": variant.clearance,
            "friction": variant.friction, "chamfer": variant.chamfer, "cavity_depth": g.cavity_depth,
            "pin_length": g.pin_length, "seated_height": g.seated_height, "socket_pos": mis.offset.tolist(),
            "socket_quat": mis.quat.tolist(),
            "start_pos": start.tolist()}
    return Scene(
        name=f"connector-insertion({variant.name})",
        tool=tool,
        statics=(body,),
        controller=controller or CONNECTOR_GAINS,
        workspace_lo=(-0.03, -0.03, -0.01),
        workspace_hi=(0.03, 0.03, 0.06),
        target_pos=mis.offset,
        target_quat=mis.quat,
        meta=meta,
    )


def insertion_depth(scene: Scene, pos: np.ndarray, quat: np.ndarray) -> tuple[float, float, float]:
    """Plug pose relative to the actual socket: ``(height, lateral, tilt)``.

    Args:
        scene: a :func:`connector_insertion` scene. pos ``(3,)`` [m], quat ``(4,)``: plug pose (world).

    Returns:
        ``height`` [m]: socket-frame z of the plug front-face centre (``geometry.seated_height`` when
        the pins bottom out);
        ``lateral`` [m]: its distance from the socket axis; ``tilt`` [rad]: angle between plug and socket axes.
    """
    q_s = np.asarray(scene.target_quat)
    rel = quat_rotate(q_s * np.array([1.0, -1.0, -1.0, -1.0]), np.asarray(pos) - scene.target_pos)
    z_plug, z_sock = quat_rotate(np.asarray(quat), np.array([0.0, 0.0, 1.0])), quat_rotate(q_s, np.array([0, 0, 1.0]))
    tilt = float(np.arccos(np.clip(np.dot(z_plug, z_sock), -1.0, 1.0)))
    return float(rel[2]), float(np.hypot(rel[0], rel[1])), tilt
