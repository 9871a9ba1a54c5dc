"""Scene → MJCF: the tool as a free body with one mesh geom per convex piece, statics as fixed bodies.

All angles are radians (``<compiler angle="radian"/>``) and orientations are given as quaternions, so no
degree/radian confusion can narrow a hole. Mesh vertices are written in the part frame with full
precision (``repr`` of float64), so MuJoCo's geometry equals the scene's to rounding.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from contactkit.control.impedance import damping_gains
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene

TOOL_BODY = "tool"
"""Name of the tool body in the generated model."""
FLANGE_BODY = "flange"
"""Name of the body the controller drives when the world's flange–tool compliance is on (the tool is its child,
coupled by six spring-damper joints at the sensor origin); without compliance the controller drives the tool."""
COMPLIANCE_JOINTS = ("compliance_x", "compliance_y", "compliance_z", "compliance_rx", "compliance_ry", "compliance_rz")
"""Slide (x, y, z) and hinge (about x, y, z) joints of the compliance, along the nominal sensor axes."""
FLANGE_INERTIA = 1e-6
"""Principal moments [kg·m²] of the flange body itself; its rotational inertia is the wrist's armature."""
SENSOR_POS = "ft_sensor_pos"
SENSOR_QUAT = "ft_sensor_quat"
"""Frame sensors of the real sensor site (world position, orientation), present only with compliance."""
SENSOR_SITE = "ft_sensor"
"""Name of the site at the F/T sensor frame."""
ORIGIN_SITE = "tool_origin"
"""Site at the tool centre point (``ImpedanceGains.tcp_offset``; the tool frame origin by default), where the
impedance controller acts."""
TARGET_POS_BODY = "target_pos"
"""Mocap body whose position is the impedance position target (orientation fixed to the world's)."""
TARGET_ROT_BODY = "target_rot"
"""Mocap body whose orientation is the impedance orientation target."""
CONTACT_SENSOR = "tool_contact"
"""Net contact wrench sensor of the tool (force, torque about ``pos``, pos; world frame)."""
TORSIONAL_FRICTION = 0.0
ROLLING_FRICTION = 0.0
GRAVITY_MPS2 = 9.81


def _nums(a) -> str:
    return " ".join(repr(float(x)) for x in np.asarray(a, dtype=np.float64).reshape(-1))


def _ints(a) -> str:
    return " ".join(str(int(x)) for x in np.asarray(a).reshape(-1))


def tool_geom_name(i: int) -> str:
    """Name of the tool's i-th convex piece geom."""
    return f"tool_piece{i}"


def _actuators(scene: Scene, params: WorldParams) -> str:
    """Six site actuators forming the Cartesian impedance law in C (robosuite-style OSC without the arm).

    Actuator i (translation, i < 3) pushes the tool centre point (:data:`ORIGIN_SITE`) along world axis i with
    ``k_i (target_i − p_i) − d_i v_i`` clamped to ``±max_force``; actuators 3..5 do the same for the
    rotation error about the axes of the orientation target, clamped to ``±max_torque``.
    """
    tool, c = scene.tool, scene.controller
    d_pos, d_rot = damping_gains(c, tool.mass, np.linalg.eigvalsh(tool.inertia))
    out = []
    for i in range(6):
        gear = ["0"] * 6
        gear[i] = "1"
        rot = i >= 3
        k = float(c.stiffness_rot[i - 3] if rot else c.stiffness_pos[i])
        kd = float(d_rot[i - 3] if rot else d_pos[i])
        limit = float(c.max_torque if rot else c.max_force)
        ref = TARGET_ROT_BODY if rot else TARGET_POS_BODY
        out.append(
            f'<general name="impedance{i}" site="{ORIGIN_SITE}" refsite="{ref}" gear="{" ".join(gear)}" '
            f'gainprm="0" biastype="affine" biasprm="0 {-k!r} {-kd!r}" forcerange="{-limit!r} {limit!r}"/>'
        )
    return "<actuator>" + "".join(out) + "</actuator>"


def scene_to_mjcf(scene: Scene, params: WorldParams) -> str:
    """MJCF XML string of ``scene`` under physics ``params``.

    The tool body frame is the tool frame (its origin is the body's ``xpos``); its inertial frame is
    placed at ``tool.com`` with the mass and full inertia tensor of
    :meth:`~contactkit.physics.WorldParams.tool_mass_properties`. The sensor site is the real (mounted) sensor
    frame (:meth:`~contactkit.physics.WorldParams.sensor_frame`). With ``params.compliant`` the free joint moves a
    flange body (:data:`FLANGE_BODY`, ``params.compliance_mass`` at ``tool.com``) that holds the controller's
    site, and the tool hangs from it by :data:`COMPLIANCE_JOINTS` (:func:`_tool_bodies`).
    """
    assets, world = [], []
    geom_common = f'solref="{_nums(params.solref)}" solimp="{_nums(params.solimp)}" condim="3"'
    for b, body in enumerate(scene.statics):
        mu = float(body.friction * params.friction_scale)
        geoms = []
        for p, piece in enumerate(body.part.pieces):
            mesh = f"static{b}_piece{p}"
            assets.append(
                f'<mesh name="{mesh}" vertex="{_nums(piece.vertices)}" face="{_ints(piece.faces)}"/>'
            )
            geoms.append(
                f'<geom name="{mesh}" type="mesh" mesh="{mesh}" friction="{mu!r} '
                f'{TORSIONAL_FRICTION} {ROLLING_FRICTION}" {geom_common} rgba="0.6 0.6 0.65 1"/>'
            )
        world.append(
            f'<body name="static{b}" pos="{_nums(body.pos)}" quat="{_nums(body.quat)}">'
            + "".join(geoms)
            + "</body>"
        )
    world.append(_tool_bodies(scene, params, geom_common, assets))
    gravity = f"0 0 {-GRAVITY_MPS2!r}" if params.gravity else "0 0 0"
    return (
        f"<mujoco model={quoteattr(scene.name)}>"
        '<compiler angle="radian" autolimits="true"/>'
        f'<option timestep="{params.timestep!r}" gravity="{gravity}" cone="{params.cone}" '
        f'impratio="{params.impratio!r}" integrator="{params.integrator}"/>'
        '<size memory="20M"/>'
        "<asset>" + "".join(assets) + "</asset>"
        "<worldbody>"
        + "".join(world)
        + "</worldbody>"
        + _actuators(scene, params)
        + f'<sensor><contact name="{CONTACT_SENSOR}" body1="{TOOL_BODY}" reduce="netforce" data="force torque pos"/>'
        + (f'<framepos name="{SENSOR_POS}" objtype="site" objname="{SENSOR_SITE}"/>'
           f'<framequat name="{SENSOR_QUAT}" objtype="site" objname="{SENSOR_SITE}"/>' if params.compliant else "")
        + "</sensor></mujoco>"
    )


def _tool_bodies(scene: Scene, params: WorldParams, geom_common: str, assets: list[str]) -> str:
    """MJCF of the tool (free, or hanging from a free flange by the compliance joints) and the two mocap targets;
    the tool's mesh assets are appended to ``assets``."""
    tool = scene.tool
    mu = float(tool.friction * params.friction_scale)
    mass, inertia = params.tool_mass_properties(tool.mass, tool.inertia)
    full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    sensor_pos, sensor_quat = params.sensor_frame(tool.sensor_pos, tool.sensor_quat)
    geoms = []
    for p, piece in enumerate(tool.part.pieces):
        mesh = f"tool_mesh{p}"
        assets.append(f'<mesh name="{mesh}" vertex="{_nums(piece.vertices)}" face="{_ints(piece.faces)}"/>')
        geoms.append(
            f'<geom name="{tool_geom_name(p)}" type="mesh" mesh="{mesh}" friction="{mu!r} '
            f'{TORSIONAL_FRICTION} {ROLLING_FRICTION}" {geom_common} rgba="0.85 0.5 0.2 1"/>'
        )
    inner = (f'<inertial pos="{_nums(tool.com)}" mass="{float(mass)!r}" fullinertia="{_nums(full)}"/>'
             + "".join(geoms)
             + f'<site name="{SENSOR_SITE}" pos="{_nums(sensor_pos)}" quat="{_nums(sensor_quat)}"/>')
    pose = f'pos="{_nums(tool.init_pos)}" quat="{_nums(tool.init_quat)}"'
    gains = scene.controller
    at = f' pos="{_nums(gains.tcp_offset)}"' if gains.has_tcp else ""
    tcp = f'<site name="{ORIGIN_SITE}"{at}/>'
    if params.compliant:
        body = (f'<body name="{FLANGE_BODY}" {pose}><freejoint name="tool_free"/>'
                f'<inertial pos="{_nums(tool.com)}" mass="{float(params.compliance_mass)!r}" '
                f'diaginertia="{_nums([FLANGE_INERTIA] * 3)}"/>{tcp}'
                f'<body name="{TOOL_BODY}">{_compliance_joints(tool, params)}{inner}</body></body>')
    else:
        body = (f'<body name="{TOOL_BODY}" {pose}><freejoint name="tool_free"/>{inner}'
                f'{tcp}</body>')
    return (body
            + f'<body name="{TARGET_POS_BODY}" mocap="true" pos="{_nums(tool.init_pos)}">'
            f'<site name="{TARGET_POS_BODY}"/></body>'
            f'<body name="{TARGET_ROT_BODY}" mocap="true" {pose}><site name="{TARGET_ROT_BODY}"/></body>')


def _compliance_joints(tool, params: WorldParams) -> str:
    """Three slides and three hinges at the nominal sensor origin along the nominal sensor axes, each a spring
    (``compliance_stiffness``) and damper (``compliance_damping``) about zero deflection."""
    axes = quat_to_mat(np.asarray(tool.sensor_quat, dtype=np.float64))
    out = []
    for i, name in enumerate(COMPLIANCE_JOINTS):
        kind = "hinge" if i >= 3 else "slide"
        out.append(f'<joint name="{name}" type="{kind}" pos="{_nums(tool.sensor_pos)}" axis="{_nums(axes[:, i % 3])}" '
                   f'stiffness="{params.compliance_stiffness[i]!r}" damping="{params.compliance_damping[i]!r}" '
                   'limited="false"/>')
    return "".join(out)
