"""``contactkit scene``: write a Scene JSON file from a user's meshes or from parameters, and summarise one.

The file is what ``--scene FILE`` of ``collect``, ``experiment`` and ``benchmark`` reads (docs/scenes.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from contactkit.cli._app import app, check_outputs, console, fail
from contactkit.errors import ContactkitError, GeometryError, InvalidInputError

scene_app = typer.Typer(help="Write a Scene JSON file (for --scene) from your meshes or from parameters.",
                        no_args_is_help=True)
app.add_typer(scene_app, name="scene")

OUT_HELP = "Scene JSON file to write"
MASS_HELP = "tool mass [kg]"
FRICTION_HELP = "sliding friction coefficient of every surface"
START_HELP = "gap between the tool's tip and the slot's top face at the start [m]"


def _write(scene, out: Path) -> None:
    """Write ``scene`` to ``out`` atomically and print a one-line summary."""
    from contactkit.files import write_atomic

    write_atomic(out, scene.to_json())
    console.print(f"wrote {out}: {scene.name}, {len(scene.statics)} static bodies, tool "
                  f"{scene.tool.mass:g} kg with {len(scene.tool.part.pieces)} convex piece(s)",
                  soft_wrap=True, markup=False, highlight=False)


def _pair(text: str | None, option: str) -> tuple[float, float] | None:
    """``"x,y"`` as two finite floats (None when not given)."""
    return _floats(text, option, "x,y")


def _floats(text: str | None, option: str, form: str) -> tuple[float, ...] | None:
    """``text`` in the comma-separated ``form`` (``"x,y"``, ``"x,y,z"``) as finite floats (None when not given)."""
    if text is None:
        return None
    words = {2: "two", 3: "three"}
    n = form.count(",") + 1
    try:
        values = tuple(float(t) for t in text.split(","))
    except ValueError:
        values = ()
    if len(values) != n:
        raise InvalidInputError(f"{option} must be {words[n]} numbers '{form}', got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise InvalidInputError(f"{option} must be finite, got {text!r}")
    return values


def _read_parts(files: dict[str, Path], units: str, settings, cache: Path, strict: bool) -> tuple[dict, dict]:
    """``({"tool": part, "slot": part}, {"tool": report, ...})``: each file read, scaled from ``units`` to metres,
    its size checked (:func:`contactkit.tasks.mesh_checks.size_finding`: a warning, or with ``strict`` a refusal
    before the decomposition) and cut into convex pieces."""
    from contactkit.geometry.decompose import decompose
    from contactkit.geometry.mesh_io import load_mesh
    from contactkit.geometry.user_parts import length_scale, scaled
    from contactkit.tasks.mesh_checks import size_finding

    scale = length_scale(units)
    parts = {what: scaled(load_mesh(path), scale) for what, path in files.items()}
    _findings([f for what, part in parts.items()
               if (f := size_finding(part, f"--{what} '{files[what]}'", units)) is not None], strict)
    reports = {}
    with console.status("decomposing the meshes into convex pieces ..."):
        for what in parts:
            parts[what], reports[what] = decompose(parts[what], settings, cache_dir=cache)
    return parts, reports


def _findings(findings: list[str], strict: bool, lines: list[str] = ()) -> None:
    """With ``strict``, refuse with the first finding (InvalidInputError naming --strict) before printing
    anything; else print ``lines``, then each finding as a warning."""
    if strict and findings:
        raise InvalidInputError(f"{findings[0]} (refused: --strict)")
    for line in [*lines, *(f"warning: {f}" for f in findings)]:
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _check_fit(scene, reports: dict) -> tuple[list[str], list[str]]:
    """``(report lines, findings)``: how far each part's convex pieces stick out of its mesh or leave it uncovered,
    and the fit's measured clearance; a finding for each beyond
    :data:`~contactkit.tasks.mesh_checks.PIECE_DEVIATION_FRACTION` of it
    (:func:`contactkit.tasks.mesh_checks.deviation_findings`). The protrusion is the larger of the check's and
    the decomposition report's (both sampled)."""
    import dataclasses

    import numpy as np

    from contactkit.tasks.mesh_checks import CHECK_SEED, deviation_findings, fit_clearance, part_deviation

    rng = np.random.default_rng(CHECK_SEED)
    devs = {"tool": part_deviation(scene.tool.part, rng), "slot": part_deviation(scene.statics[1].part, rng)}
    devs = {what: dataclasses.replace(d, protrusion=max(d.protrusion, reports[what].max_protrusion))
            for what, d in devs.items()}
    clearance = fit_clearance(scene, rng)
    lines = [f"{what}: {reports[what].n_pieces} convex piece(s) ({reports[what].method}"
             f"{', cached' if reports[what].cached else ''}); they stick out of the mesh by up to "
             f"{d.protrusion * 1e3:.3f} mm and leave it uncovered by up to {d.uncovered * 1e3:.3f} mm"
             for what, d in devs.items()]
    m = scene.meta
    lines += [f"hole: {m['depth'] * 1e3:.3f} mm deep, inradius {m['hole_apothem'] * 1e3:.3f} mm",
              f"clearance: {clearance * 1e3:.3f} mm (radial, measured with the tool on the hole's axis)"]
    return lines, deviation_findings(list(devs.values()), clearance)


def _attach_depth(scene, path: Path):
    """``scene`` with the depth network (a .safetensors file, or a piecewise set's .json manifest) at ``path`` on
    its slot (the second static), after checking that it was trained on the slot's mesh (CheckpointError if not);
    the scene records the file's absolute path."""
    import dataclasses

    from contactkit.depth import load_depth_nets

    slot = scene.statics[1]
    try:
        load_depth_nets(path, slot.part)
    except ContactkitError as exc:
        raise type(exc)(f"--depth: {exc}") from None
    statics = (*scene.statics[:1], dataclasses.replace(slot, depth_model=str(path.resolve())), *scene.statics[2:])
    return dataclasses.replace(scene, statics=statics)


@scene_app.command("mesh")
def from_meshes(
    tool: Annotated[Path, typer.Option(help="tool mesh file (OBJ, STL, PLY, OFF): a closed solid")],
    slot: Annotated[Path, typer.Option(help="slot mesh file: a closed solid with a hole opening upwards (+z)")],
    out: Annotated[Path, typer.Option(help=OUT_HELP)],
    units: Annotated[str, typer.Option(help="length unit of both files: m, cm, mm, um, in")] = "m",
    tool_origin: Annotated[str, typer.Option(
        help="tip: move the tool's frame under its centre of mass, at the height of its lowest point (its tip; "
             "+z kept); mesh: keep the file's frame (it must be there already)")] = "tip",
    hole_xy: Annotated[str | None, typer.Option(
        help="x,y of the hole's axis in the slot file's frame [file units] (default: found, centred)")] = None,
    tool_mass: Annotated[float, typer.Option(help=MASS_HELP)] = 0.3,
    friction: Annotated[float, typer.Option(help=FRICTION_HELP)] = 0.5,
    start_height: Annotated[float, typer.Option(help=START_HELP)] = 0.01,
    threshold: Annotated[float, typer.Option(
        help="CoACD concavity threshold for non-convex parts (smaller: more pieces, closer fit)")] = 0.02,
    coacd_cache: Annotated[Path | None, typer.Option(
        help="folder of cached convex decompositions (default: ~/.cache/contactkit/coacd)")] = None,
    strict: Annotated[bool, typer.Option(
        help="refuse (one line, exit 2) instead of warning: a part whose size is implausible for --units, or "
             "convex pieces off the mesh by more than 0.2 x the measured clearance")] = False,
    depth: Annotated[Path | None, typer.Option(
        help="the slot's depth network (contactkit learn depth: a .safetensors file, or a learn depth-set .json "
             "manifest), trained on the slot's mesh in metres; the engine takes the tool's contacts with the slot "
             "from it")] = None,
) -> None:
    """A peg-in-hole scene from your tool and slot meshes; non-convex parts get CoACD convex pieces. Warns (or with
    --strict refuses) when a part's size does not fit --units or the pieces stray from the meshes by more than
    0.2 x the clearance."""
    from contactkit.geometry import DecompositionSettings
    from contactkit.geometry.decompose import DEFAULT_CACHE_DIR
    from contactkit.geometry.user_parts import length_scale
    from contactkit.tasks.scenes import mesh_peg_in_hole, tip_frame

    try:
        check_outputs((out, "--out", False))
        if tool_origin not in ("tip", "mesh"):
            raise InvalidInputError(f"--tool-origin must be tip or mesh, got {tool_origin!r}")
        xy = _pair(hole_xy, "--hole-xy")
        scale = length_scale(units)
        settings = DecompositionSettings(threshold=threshold)
        cache = (coacd_cache or DEFAULT_CACHE_DIR).expanduser()
        parts, reports = _read_parts({"tool": tool, "slot": slot}, units, settings, cache, strict)
        tool_part = tip_frame(parts["tool"]) if tool_origin == "tip" else parts["tool"]
        try:
            scene = mesh_peg_in_hole(tool_part, parts["slot"], tool_mass=tool_mass, friction=friction,
                                     hole_xy=None if xy is None else (xy[0] * scale, xy[1] * scale),
                                     start_height=start_height)
        except GeometryError as exc:  # the hole: name the file it was looked for in
            raise GeometryError(f"--slot '{slot}': {exc}") from None
        lines, findings = _check_fit(scene, reports)
        if depth is not None:
            scene = _attach_depth(scene, depth)
            lines.append(f"slot: depth network {depth}")
        _findings(findings, strict, lines)
        _write(scene, out)
    except ContactkitError as exc:
        fail(exc)


def _angle(deg: float, option: str) -> float:
    """A chamfer angle in degrees as radians; 45° exactly as the library's default (bit-identical parts)."""
    from contactkit.geometry import DEFAULT_CHAMFER_ANGLE

    if not math.isfinite(deg):
        raise InvalidInputError(f"{option} must be finite [deg], got {deg}")
    return DEFAULT_CHAMFER_ANGLE if deg == 45.0 else math.radians(deg)


def _yaw(deg: float) -> float:
    """``--yaw-deg`` as radians (exactly 0 for 0: the default scene, bit for bit)."""
    if not math.isfinite(deg):
        raise InvalidInputError(f"--yaw-deg must be finite [deg], got {deg}")
    return math.radians(deg) if deg else 0.0


def _controller(gains: dict, tcp: str | None = None):
    """:class:`~contactkit.scene.ImpedanceGains` with the given (not None) values replacing the defaults; a
    stiffness or damping value applies to every axis; ``tcp`` is ``--tcp-offset`` ``"x,y,z"`` [m, tool frame].
    InvalidInputError naming the option when one is not finite or negative (or the gains refuse the mix)."""
    import numpy as np

    from contactkit.scene import ImpedanceGains

    given = {k: v for k, v in gains.items() if v is not None}
    for name, value in given.items():
        if not (math.isfinite(value) and value >= 0):
            raise InvalidInputError(f"--{name.replace('_', '-')} must be finite and >= 0, got {value}")
    for name in ("stiffness_pos", "stiffness_rot", "damping_pos", "damping_rot"):
        if name in given:
            given[name] = np.full(3, float(given[name]))
    if tcp is not None:
        given["tcp_offset"] = np.array(_floats(tcp, "--tcp-offset", "x,y,z"))
    return ImpedanceGains(**given) if given else None


@scene_app.command("peg")
def parametric_peg(
    out: Annotated[Path, typer.Option(help=OUT_HELP)],
    shape: Annotated[str, typer.Option(
        help="peg section: triangle, square, pentagon, hexagon, circle, or any regular polygon as N-gon (7-gon)")
    ] = "hexagon",
    clearance: Annotated[float, typer.Option(help="radial clearance [m]")] = 1e-3,
    size: Annotated[float, typer.Option(help="peg apothem (radius of a circle) [m]")] = 0.01,
    length: Annotated[float, typer.Option(help="peg length [m]")] = 0.06,
    depth: Annotated[float, typer.Option(help="hole depth [m]")] = 0.025,
    slot_shape: Annotated[str | None, typer.Option(help="hole section if not the peg's")] = None,
    chamfer: Annotated[float, typer.Option(help="peg tip chamfer's length along the axis [m]")] = 0.0,
    chamfer_angle: Annotated[float, typer.Option(
        "--chamfer-angle-deg", "--chamfer-angle", help="peg tip chamfer's angle from the axis [deg]")] = 45.0,
    slot_chamfer: Annotated[float, typer.Option(help="hole entry chamfer's length along the axis [m]")] = 0.0,
    slot_chamfer_angle: Annotated[float, typer.Option(
        "--slot-chamfer-angle-deg", "--slot-chamfer-angle", help="hole entry chamfer's angle from the axis [deg]")
    ] = 45.0,
    circle_segments: Annotated[int, typer.Option(help="sides of the polygon that stands for a circular peg")] = 32,
    tool_mass: Annotated[float, typer.Option(help=MASS_HELP)] = 0.3,
    friction: Annotated[float, typer.Option(help=FRICTION_HELP)] = 0.5,
    start_height: Annotated[float, typer.Option(help=START_HELP)] = 0.01,
    yaw: Annotated[float, typer.Option(
        "--yaw-deg", help="turn of the peg and its slot about world +z [deg]; at 0 a face of the section has its "
                          "outward normal along +x (docs/scenes.md)")] = 0.0,
    stiffness_pos: Annotated[float | None, typer.Option(
        help="controller's translational stiffness, every axis [N/m] (default 400)")] = None,
    stiffness_rot: Annotated[float | None, typer.Option(
        help="controller's rotational stiffness, every axis [N m/rad] (default 4)")] = None,
    damping_ratio: Annotated[float | None, typer.Option(help="controller's damping ratio (default 1)")] = None,
    max_force: Annotated[float | None, typer.Option(help="controller's force limit [N] (default 40)")] = None,
    max_torque: Annotated[float | None, typer.Option(help="controller's torque limit [N m] (default 2)")] = None,
    damping_pos: Annotated[float | None, typer.Option(
        help="controller's translational damping, every axis [N s/m] (instead of --damping-ratio; with "
             "--damping-rot)")] = None,
    damping_rot: Annotated[float | None, typer.Option(
        help="controller's rotational damping, every axis [N m s/rad] (with --damping-pos)")] = None,
    max_pos_step: Annotated[float | None, typer.Option(
        help="farthest pose target from the tool centre point [m] (default 0.03; farther ones are clipped and "
             "reported)")] = None,
    max_rot_step: Annotated[float | None, typer.Option(
        help="largest turn of the orientation target from the tool [rad] (default 0.3)")] = None,
    tcp_offset: Annotated[str | None, typer.Option(
        help="x,y,z the tool centre point the controller's spring acts on, tool frame [m] (default 0,0,0: the "
             "tool origin)")] = None,
) -> None:
    """A parametric peg-in-hole scene: a regular-polygon or circular peg above its slot, chamfers optional, turned
    by --yaw-deg, with the impedance controller's gains of your cell."""
    from contactkit.tasks.scenes import peg_in_hole

    try:
        check_outputs((out, "--out", False))
        gains = {"stiffness_pos": stiffness_pos, "stiffness_rot": stiffness_rot, "damping_ratio": damping_ratio,
                 "max_force": max_force, "max_torque": max_torque, "damping_pos": damping_pos,
                 "damping_rot": damping_rot, "max_pos_step": max_pos_step, "max_rot_step": max_rot_step}
        scene = peg_in_hole(shape, clearance, size=size, length=length, depth=depth, slot_shape=slot_shape,
                            chamfer=chamfer, chamfer_angle=_angle(chamfer_angle, "--chamfer-angle-deg"),
                            slot_chamfer=slot_chamfer,
                            slot_chamfer_angle=_angle(slot_chamfer_angle, "--slot-chamfer-angle-deg"),
                            circle_segments=circle_segments, tool_mass=tool_mass, friction=friction,
                            start_height=start_height, yaw=_yaw(yaw),
                            controller=_controller(gains, tcp_offset))
        _write(scene, out)
    except ContactkitError as exc:
        fail(exc)


@scene_app.command("connector")
def connector(
    out: Annotated[Path, typer.Option(help=OUT_HELP)],
    clearance: Annotated[float, typer.Option(help="radial clearance of the socket's cavity [m]")] = 5e-4,
    friction: Annotated[float, typer.Option(help=FRICTION_HELP)] = 0.3,
    chamfer: Annotated[float, typer.Option(help="45° entry chamfer of the socket [m]")] = 1e-3,
    offset: Annotated[str | None, typer.Option(help="x,y offset of the socket from where the robot believes it "
                                                    "is [m]")] = None,
    tilt: Annotated[str | None, typer.Option(
        "--tilt-deg", "--tilt", help="x,y tilt of the socket about the world x and y axes [deg]")] = None,
    yaw: Annotated[float, typer.Option(
        "--yaw-deg", "--yaw", help="turn of the socket about the world z axis [deg]")] = 0.0,
    plug_mass: Annotated[float, typer.Option(help="plug mass [kg]")] = 0.1,
) -> None:
    """A connector-insertion scene (LML paper §5): the C13-like plug above a socket of your parameters."""
    import numpy as np

    from contactkit.tasks.connector import Misalignment, SocketVariant, connector_insertion

    try:
        check_outputs((out, "--out", False))
        xy = _pair(offset, "--offset") or (0.0, 0.0)
        tx, ty = _pair(tilt, "--tilt-deg") or (0.0, 0.0)
        variant = SocketVariant(f"c{clearance * 1e3:g}mm-mu{friction:g}-ch{chamfer * 1e3:g}mm", clearance, friction,
                                chamfer)
        rotvec = np.radians([tx, ty, yaw])
        if not np.isfinite(yaw):
            raise InvalidInputError(f"--yaw-deg must be finite, got {yaw}")
        scene = connector_insertion(variant, Misalignment(np.array([xy[0], xy[1], 0.0]), rotvec), plug_mass=plug_mass)
        _write(scene, out)
    except ContactkitError as exc:
        fail(exc)


@scene_app.command("info")
def info(path: Path) -> None:
    """Summarise a Scene JSON file: its bodies, sizes and task facts."""
    from contactkit.scene import load_scene

    try:
        scene = load_scene(path)
    except ContactkitError as exc:
        fail(exc)
    table = Table(title=f"{path}: {scene.name}")
    table.add_column("field")
    table.add_column("value")
    t = scene.tool
    table.add_row("tool", f"{t.part.name}: {t.mass:g} kg, {len(t.part.pieces)} convex piece(s), "
                          f"{len(t.part.faces)} triangles")
    for s in scene.statics:
        table.add_row("static", f"{s.part.name}: {len(s.part.pieces)} convex piece(s) at {s.pos.round(6).tolist()} m")
    table.add_row("target [m]", str(scene.target_pos.round(6).tolist()))
    for key, value in scene.meta.items():
        table.add_row(f"meta.{key}", json.dumps(value))
    console.print(table)
