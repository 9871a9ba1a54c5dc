"""Scene constructors for the papers' tasks: peg-in-hole and the Act-FIGNet paper's random training scenes.

World layout: the table top is the plane z = 0; slots and obstacles stand on it. The tool (a peg)
starts above its target; its F/T sensor sits at the top of the peg (the wrist mount).
"""

from __future__ import annotations

import math

import numpy as np

from contactkit.bounds import MAX_TOOL_MASS_KG, MIN_TOOL_MASS_KG, TOOL_MASS_REASON
from contactkit.errors import InvalidInputError
from contactkit.geometry import (
    DEFAULT_CHAMFER_ANGLE,
    Part,
    Shape,
    box,
    mass_properties,
    matching_slot,
    parse_shape,
    peg,
)
from contactkit.geometry.holes import probe_hole
from contactkit.geometry.part import ConvexPiece
from contactkit.geometry.validate import MAX_ABS_COORDINATE
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool

TABLE_SIZE = (0.5, 0.5, 0.02)
"""Full extents of the table box [m]; its top face is z = 0."""
TRAINING_SHAPES = (Shape.TRIANGLE, Shape.SQUARE, Shape.HEXAGON)
"""Tool shapes of the Act-FIGNet paper's training scenes (§IV-A); the circle is held out."""
MESH_WORKSPACE_MARGIN = 0.02
"""Room [m] the workspace of a scene from meshes leaves around the slot's footprint (at least ±8 cm, as
:func:`peg_in_hole`'s)."""


def table(friction: float = 0.5) -> StaticBody:
    """The table: a box whose top face is the plane z = 0."""
    return StaticBody(box(TABLE_SIZE, name="table"), pos=(0.0, 0.0, -TABLE_SIZE[2] / 2), friction=friction)


PEG_WORKSPACE_TOP_M = 0.2
"""Top of :func:`peg_in_hole`'s workspace [m, world z] (its tool origin, the peg's tip, starts below it)."""

def make_tool(part, mass: float, friction: float, init_pos, init_quat=(1.0, 0.0, 0.0, 0.0)) -> Tool:
    """A tool from a peg part with ``mass`` [kg] (within :mod:`contactkit.bounds`' tool masses, checked before the
    inertia is computed from it); the sensor frame sits at the top face centre."""
    if not (isinstance(mass, (int, float)) and MIN_TOOL_MASS_KG <= mass <= MAX_TOOL_MASS_KG):
        raise InvalidInputError(f"tool mass {mass!r} kg is out of [{MIN_TOOL_MASS_KG:g}, {MAX_TOOL_MASS_KG:g}] kg "
                                f"({TOOL_MASS_REASON})")
    props = mass_properties(part, mass=mass)
    length = float(part.meta.get("length", np.ptp(part.vertices[:, 2])))
    return Tool(
        part,
        props.mass,
        props.com,
        props.inertia,
        friction,
        init_pos,
        init_quat,
        sensor_pos=(0.0, 0.0, length),
    )


def peg_in_hole(
    shape: str | Shape = "hexagon",
    clearance: float = 1e-3,
    *,
    size: float = 0.01,
    length: float = 0.06,
    depth: float = 0.025,
    slot_shape: str | Shape | None = None,
    chamfer: float = 0.0,
    tool_mass: float = 0.3,
    friction: float = 0.5,
    start_height: float = 0.01,
    circle_segments: int = 32,
    controller: ImpedanceGains | None = None,
    chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
    slot_chamfer: float = 0.0,
    slot_chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
    yaw: float = 0.0,
) -> Scene:
    """A peg above a matching slot on the table.

    Args:
        shape: peg cross-section: a named shape, ``"circle"`` or any regular polygon as ``"<n>-gon"``
            (:func:`contactkit.geometry.section`); ``slot_shape`` defaults to it (Act-FIGNet paper's unseen pairing:
            circle in square).
        clearance: radial clearance [m] (see :func:`contactkit.geometry.slot.slot`).
        size: peg apothem (radius for a circle) [m]; 0.01 gives a 20 mm peg.
        length: peg length [m]. depth: hole depth [m].
        chamfer, chamfer_angle: the peg tip's bevel: axial length [m] and angle from the axis [rad] (default 45°).
        slot_chamfer, slot_chamfer_angle: the hole's entry chamfer, likewise (0: none).
        tool_mass: [kg]. friction: sliding friction of every surface.
        start_height: gap between the peg tip and the slot's top face at the start [m].
        circle_segments: polygon sides of a circular peg.
        controller: impedance gains; default :class:`ImpedanceGains`.
        yaw: turn of the peg and its slot together about world +z [rad]. At 0 the section's face ``k`` has its
            outward normal at ``2 pi k / n`` from world +x (a face towards +x; a square's faces along ±x and ±y,
            a triangle's corner towards −x; :func:`contactkit.geometry.prism.polygon`); the tool's start and target
            orientation and the slot's body turn by ``yaw``, so the peg still fits (recorded as ``meta["yaw"]``).

    Returns:
        Scene whose ``target_pos`` is the hole's bottom centre (where the peg tip ends when inserted).
    """
    for name, value in (("size", size), ("length", length), ("depth", depth)):
        if isinstance(value, (int, float)) and value > MAX_ABS_COORDINATE:  # (NaN, <= 0: the part builders say)
            raise InvalidInputError(f"peg_in_hole: {name} {value!r} m is beyond the geometry's coordinate limit "
                                    f"of {MAX_ABS_COORDINATE:g} m (geometry.validate.MAX_ABS_COORDINATE)")
    if not (isinstance(yaw, (int, float)) and math.isfinite(yaw)):
        raise InvalidInputError(f"peg_in_hole: yaw must be a finite angle [rad], got {yaw!r}")
    turn = np.array([math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)])
    tool_part = peg(shape, size, length, chamfer=chamfer, chamfer_angle=chamfer_angle, circle_segments=circle_segments)
    slot_part = matching_slot(tool_part, clearance, depth, slot_shape=slot_shape, chamfer=slot_chamfer,
                              chamfer_angle=slot_chamfer_angle)
    floor = slot_part.meta["floor"]
    room = PEG_WORKSPACE_TOP_M - floor - depth
    if not 0.0 <= start_height <= room:
        raise InvalidInputError(f"start_height {start_height!r} m must be in [0, {room:g}] m: the peg's tip starts "
                                f"inside its workspace (top at z = {PEG_WORKSPACE_TOP_M} m)")
    slot_body = StaticBody(slot_part, pos=(0.0, 0.0, floor), quat=turn, friction=friction)
    target = np.array([0.0, 0.0, floor])
    tool = make_tool(tool_part, tool_mass, friction, target + [0.0, 0.0, depth + start_height], turn)
    meta = {
        "task": "peg-in-hole",
        "shape": tool_part.meta["shape"],
        "slot_shape": slot_part.meta["shape"],
        "clearance": float(clearance),
        "depth": float(depth),
        "hole_apothem": slot_part.meta["hole_apothem"],
        "slot_top_z": float(floor + depth),
        **({"yaw": float(yaw)} if yaw else {}),
    }
    return Scene(
        name=f"peg-in-hole({tool_part.meta['shape']} in {slot_part.meta['shape']}, {clearance * 1e3:g} mm"
             + (f", yaw {math.degrees(yaw):g} deg)" if yaw else ")"),
        tool=tool,
        statics=(table(friction), slot_body),
        controller=controller or ImpedanceGains(),
        workspace_lo=(-0.08, -0.08, floor),
        workspace_hi=(0.08, 0.08, PEG_WORKSPACE_TOP_M),
        target_pos=target,
        target_quat=turn,
        meta=meta,
    )


def random_training_scene(
    rng: np.random.Generator,
    *,
    shapes: tuple[Shape | str, ...] = TRAINING_SHAPES,
    n_obstacles: tuple[int, int] = (3, 6),
    tool_mass: float = 0.3,
    friction: float = 0.5,
    controller: ImpedanceGains | None = None,
) -> Scene:
    """Act-FIGNet paper §IV-A training scene: a tool of a random primitive shape and 3–6 box obstacles on the table.

    Obstacles are boxes of 2–6 cm sides and 1–4 cm height at random places within ±9 cm of the centre,
    never under the tool's start position (a 3 cm keep-out radius). The tool starts 8 cm above the table.

    Args:
        rng: the only source of randomness.
        shapes: tool shapes to draw from.
        n_obstacles: inclusive range of the number of boxes.
    """
    lo, hi = n_obstacles
    if not 0 <= lo <= hi:
        raise InvalidInputError(f"n_obstacles must be a range (lo, hi) with 0 <= lo <= hi, got {n_obstacles}")
    shape = parse_shape(shapes[int(rng.integers(len(shapes)))])
    size = float(rng.uniform(0.008, 0.012))
    length = float(rng.uniform(0.05, 0.07))
    tool_part = peg(shape, size, length)
    statics = [table(friction)]
    placed: list[np.ndarray] = []
    while len(placed) < int(rng.integers(lo, hi + 1)):
        dims = np.array([rng.uniform(0.02, 0.06), rng.uniform(0.02, 0.06), rng.uniform(0.01, 0.04)])
        xy = rng.uniform(-0.09, 0.09, size=2)
        if np.linalg.norm(xy) < 0.03 + 0.5 * np.linalg.norm(dims[:2]):
            continue
        placed.append(xy)
        yaw = rng.uniform(-np.pi, np.pi)
        quat = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        part = box(tuple(dims), name=f"obstacle{len(placed)}")
        statics.append(StaticBody(part, pos=(xy[0], xy[1], dims[2] / 2), quat=quat, friction=friction))
    tool = make_tool(tool_part, tool_mass, friction, (0.0, 0.0, 0.08))
    return Scene(
        name=f"random-scene({shape.value}, {len(placed)} obstacles)",
        tool=tool,
        statics=tuple(statics),
        controller=controller or ImpedanceGains(),
        workspace_lo=(-0.1, -0.1, 0.0),
        workspace_hi=(0.1, 0.1, 0.15),
        target_pos=(0.0, 0.0, 0.0),
        meta={"task": "random-scene", "shape": shape.value, "n_obstacles": len(placed)},
    )


def tip_frame(part: Part) -> Part:
    """``part`` moved so that its frame is the tool frame of a peg: origin on the vertical line through its centre of
    mass (uniform density), at the height of its lowest point (for a peg: the centre of its tip face), axis +z (the
    part is not turned).

    Returns:
        The translated :class:`Part` (vertices and pieces [m]); ``meta["tip_offset"]`` holds the ``(3,)`` shift
        applied [m].
    """
    com = mass_properties(part, mass=1.0).com
    shift = -np.array([com[0], com[1], float(part.vertices[:, 2].min())])
    pieces = tuple(ConvexPiece(p.vertices + shift, p.faces) for p in part.pieces)
    return Part(part.name, part.vertices + shift, part.faces, pieces, dict(part.meta) | {"tip_offset": shift.tolist()})


def mesh_peg_in_hole(
    tool_part: Part,
    slot_part: Part,
    *,
    hole_xy=None,
    tool_mass: float = 0.3,
    friction: float = 0.5,
    start_height: float = 0.01,
    controller: ImpedanceGains | None = None,
    name: str | None = None,
) -> Scene:
    """A peg-in-hole scene from any tool and slot parts (e.g. a user's meshes, :func:`contactkit.geometry.user_parts.
    load_part`): the slot stands on the table with its hole's axis on the world z axis, the tool above it.

    Args:
        tool_part: the tool, with convex pieces; its frame is the tool frame (origin at the tip, +z towards the
            wrist: :func:`tip_frame` moves a mesh there). The F/T sensor sits at ``(0, 0, top of the tool)``.
        slot_part: the slot, with convex pieces, hole opening upwards (+z) in its frame.
        hole_xy: ``(2,)`` x, y [m] of the hole's axis in the slot's frame; None: found
            (:func:`contactkit.geometry.holes.probe_hole`).
        tool_mass: [kg]. friction: sliding friction of every surface.
        start_height: gap between the tool's tip and the slot's top face at the start [m].
        controller: impedance gains; default :class:`ImpedanceGains`.
        name: scene name; default ``"peg-in-hole(<tool> in <slot>)"``.

    Returns:
        Scene whose ``target_pos`` is the hole's floor on its axis (the table, for a hole through the slot: where the
        tip ends when inserted) and whose
        ``meta`` holds what :class:`contactkit.tasks.reward.InsertionGoal` reads (``slot_top_z``, ``depth``,
        ``hole_apothem``: the hole's inradius) and the hole's axis in the slot frame.

    Raises:
        GeometryError: no hole on the axis. InvalidInputError: a part without convex pieces, a bad mass.
    """
    hole = probe_hole(slot_part, hole_xy)
    low = float(slot_part.vertices[:, 2].min())
    place = np.array([-hole.axis_xy[0], -hole.axis_xy[1], -low])
    slot_body = StaticBody(slot_part, pos=place, friction=friction)
    target = np.array([0.0, 0.0, hole.floor_z - low])
    top = hole.top_z - low
    tool = make_tool(tool_part, tool_mass, friction, target + [0.0, 0.0, hole.depth + start_height])
    tool = Tool(tool.part, tool.mass, tool.com, tool.inertia, friction, tool.init_pos,
                sensor_pos=(0.0, 0.0, float(tool_part.vertices[:, 2].max())))
    footprint = float(np.abs(slot_part.vertices[:, :2] + place[:2]).max())
    half = max(0.08, footprint + MESH_WORKSPACE_MARGIN)
    height = top + start_height + float(np.ptp(tool_part.vertices[:, 2]))
    meta = {"task": "peg-in-hole", "shape": tool_part.name, "slot_shape": slot_part.name, "depth": hole.depth,
            "hole_apothem": hole.inradius, "slot_top_z": top, "hole_axis_xy": hole.axis_xy.tolist(),
            "through_hole": hole.through,
            "source": "meshes"}
    return Scene(
        name=name or f"peg-in-hole({tool_part.name} in {slot_part.name})",
        tool=tool,
        statics=(table(friction), slot_body),
        controller=controller or ImpedanceGains(),
        workspace_lo=(-half, -half, target[2]),
        workspace_hi=(half, half, max(0.2, height + 0.05)),
        target_pos=target,
        meta=meta,
    )
