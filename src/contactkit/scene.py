"""Static scene description: the tool, the fixed environment, the controller and the F/T sensor.

A :class:`Scene` is frozen and JSON-serialisable; every backend (MuJoCo, the contactkit engine, learned
models) reads the same description. Frames: world z up; the tool frame is the frame of the tool's mesh
(for a peg, origin at the centre of the tip face, axis +z); poses are ``(pos (3,), quat (4,) w,x,y,z)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from contactkit.bounds import MAX_TOOL_INERTIA_KGM2, MAX_TOOL_MASS_KG, MIN_TOOL_MASS_KG, TOOL_MASS_REASON
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.gains import ImpedanceGains
from contactkit.geometry.part import Part
from contactkit.model import ActionMode
from contactkit.values import numbers as _numbers
from contactkit.values import real as _real
from contactkit.values import vector as _vec

SCENE_SCHEMA_VERSION = 1
MAX_SCENE_FILE_BYTES = 256 * 2**20
"""Largest scene file :func:`load_scene` reads [bytes] (a scene with fine meshes is a few MB); bounds memory."""

CONTROLLER_FORCE_REACH = math.sqrt(3.0)
"""The impedance controller's force (torque) can reach √3 times its limit in norm: MuJoCo clamps each of the
three axes to ``±max_force`` (:mod:`contactkit.mujoco.mjcf`), so a recorded applied wrench replayed as a
``WRENCH`` command is up to this factor above ``ImpedanceGains.max_force`` (``max_torque``)."""
MAX_COMMAND_ACCELERATION = 10.0 * 9.81
"""Default force limit of a ``WRENCH`` command per kg of tool [m/s²] (10 g) where it exceeds the controller's reach."""
MAX_ROTATION_STEP = math.pi
"""Default limit on a ``POSE_DELTA`` rotation vector [rad]: a longer one is a shorter rotation written the long
way round (or degrees passed as radians)."""


def _check_pieces(part: Part, what: str) -> None:
    """Refuse a part without convex pieces: collision (COAL, MuJoCo) would pass through it."""
    if not isinstance(part, Part):
        raise InvalidInputError(f"{what}: part must be a contactkit.geometry.Part, got {type(part).__name__}")
    if not part.pieces:
        raise InvalidInputError(
            f"{what} '{part.name}' has no convex collision pieces (a non-convex mesh): call "
            "contactkit.geometry.decompose(part) first, or the tool passes through it"
        )


def _unit_quat(q, what: str) -> np.ndarray:
    q = _vec(q, 4, what)
    n = np.linalg.norm(q)
    if abs(n - 1.0) > 1e-6:
        raise InvalidInputError(f"{what} must be a unit quaternion (w, x, y, z); its norm is {n:.6g}")
    return q


@dataclass(frozen=True)
class Tool:
    """The dynamic body held by the robot.

    Attributes:
        part: tool geometry, tool frame [m].
        mass: [kg], > 0.
        com: ``(3,)`` centre of mass in the tool frame [m].
        inertia: ``(3, 3)`` inertia about the centre of mass, tool-frame axes [kg·m²], SPD.
        friction: sliding friction coefficient of the tool surface (combined with the environment's by max).
        init_pos: ``(3,)`` initial position of the tool frame in the world [m].
        init_quat: ``(4,)`` initial orientation (w, x, y, z).
        sensor_pos: ``(3,)`` F/T sensor origin in the tool frame [m].
        sensor_quat: ``(4,)`` sensor frame orientation relative to the tool frame.
    """

    part: Part
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    friction: float = 0.5
    init_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    init_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    sensor_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    sensor_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))

    def __post_init__(self):
        _check_pieces(self.part, "tool")
        _real(self.mass, f"tool '{self.part.name}': mass")
        if not (np.isfinite(self.mass) and MIN_TOOL_MASS_KG <= self.mass <= MAX_TOOL_MASS_KG):
            raise InvalidInputError(f"tool '{self.part.name}': mass must be in [{MIN_TOOL_MASS_KG:g}, "
                                    f"{MAX_TOOL_MASS_KG:g}] kg ({TOOL_MASS_REASON}), got {self.mass}")
        inertia = _numbers(self.inertia, f"tool '{self.part.name}': inertia")
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise InvalidInputError(f"tool '{self.part.name}': inertia must be a finite 3x3 matrix")
        if not np.allclose(inertia, inertia.T, atol=1e-12) or np.linalg.eigvalsh(inertia).min() <= 0:
            raise InvalidInputError(f"tool '{self.part.name}': inertia must be symmetric positive definite")
        if np.linalg.eigvalsh(inertia).max() > MAX_TOOL_INERTIA_KGM2:
            raise InvalidInputError(f"tool '{self.part.name}': inertia's largest principal moment is beyond "
                                    f"{MAX_TOOL_INERTIA_KGM2:g} kg m^2 (the heaviest payload 1 m from its centre)")
        if not (np.isfinite(self.friction) and self.friction >= 0):
            raise InvalidInputError(f"tool '{self.part.name}': friction must be >= 0, got {self.friction}")
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "com", _vec(self.com, 3, "tool.com"))
        object.__setattr__(self, "init_pos", _vec(self.init_pos, 3, "tool.init_pos"))
        object.__setattr__(self, "init_quat", _unit_quat(self.init_quat, "tool.init_quat"))
        object.__setattr__(self, "sensor_pos", _vec(self.sensor_pos, 3, "tool.sensor_pos"))
        object.__setattr__(self, "sensor_quat", _unit_quat(self.sensor_quat, "tool.sensor_quat"))


@dataclass(frozen=True)
class StaticBody:
    """A fixed environment body: a part placed at a world pose.

    Attributes:
        part: its geometry, body frame [m]; it must have convex pieces (:func:`contactkit.geometry.decompose`).
        pos: ``(3,)`` world position of the body frame [m]; quat: ``(4,)`` its orientation (w, x, y, z).
        friction: sliding friction coefficient (>= 0).
        depth_model: path of a learned penetration-depth network checkpoint for this part
            (:mod:`contactkit.depth`, tight-tolerance paper §III-A), or ``None``. Where set, the engine takes the
            tool's node contacts with this body from the network inside the network's domain and from the convex
            pieces outside it (MuJoCo uses the pieces only); the engine checks the file and that it was trained on
            this mesh.
    """

    part: Part
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    friction: float = 0.5
    depth_model: str | None = None

    def __post_init__(self):
        _check_pieces(self.part, "static")
        if self.depth_model is not None and not (isinstance(self.depth_model, str) and self.depth_model.strip()):
            raise InvalidInputError(
                f"static '{self.part.name}': depth_model must be a non-empty path string or None, "
                f"got {self.depth_model!r}"
            )
        object.__setattr__(self, "pos", _vec(self.pos, 3, f"static '{self.part.name}' pos"))
        object.__setattr__(self, "quat", _unit_quat(self.quat, f"static '{self.part.name}' quat"))
        if not (np.isfinite(self.friction) and self.friction >= 0):
            raise InvalidInputError(f"static '{self.part.name}': friction must be >= 0, got {self.friction}")


@dataclass(frozen=True)
class CommandLimits:
    """The largest action a world accepts in one control step; a larger one is an input error, not a push.

    Unlike the controller's own limits (which clip a pose target and saturate the wrench it applies), these
    refuse an implausible command outright: a 1 kN push on a 0.3 kg tool, a pose delta in millimetres read as
    metres, a rotation in degrees read as radians. :meth:`Scene.limits` derives them when a scene sets none.

    Attributes:
        force: largest norm of a ``WRENCH`` command's force [N] (world frame, added to gravity compensation).
        torque: largest norm of a ``WRENCH`` command's torque about the tool origin [N·m].
        pos_step: largest norm of a ``POSE_DELTA`` command's translation [m] (of a ``POSE_TARGET``'s distance from
            the current tool centre point).
        rot_step: largest norm of a ``POSE_DELTA`` (or ``POSE_TARGET``) command's rotation vector [rad].
    """

    force: float
    torque: float
    pos_step: float
    rot_step: float

    def __post_init__(self):
        for name in ("force", "torque", "pos_step", "rot_step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise InvalidInputError(f"command_limits.{name} must be a finite number > 0, got {v!r}")
            object.__setattr__(self, name, float(v))

    @staticmethod
    def derived(tool: Tool, controller: ImpedanceGains, workspace_lo, workspace_hi) -> CommandLimits:
        """Default limits of a scene, from its tool, controller and workspace.

        * ``force = max(√3 · controller.max_force, MAX_COMMAND_ACCELERATION · tool.mass)`` [N]: never below what
          the controller itself applies (:data:`CONTROLLER_FORCE_REACH`), and at least 10 g on the tool.
        * ``torque = max(√3 · controller.max_torque, force · reach)`` [N·m], ``reach`` the distance of the tool's
          farthest vertex from its origin [m] (the force limit applied at the tool's tip).
        * ``pos_step = max(controller.max_pos_step, |workspace_hi − workspace_lo|)`` [m]: the workspace diagonal.
        * ``rot_step = max(controller.max_rot_step, π)`` [rad] (:data:`MAX_ROTATION_STEP`).
        """
        force = max(CONTROLLER_FORCE_REACH * controller.max_force, MAX_COMMAND_ACCELERATION * tool.mass)
        reach = float(np.linalg.norm(tool.part.vertices, axis=1).max())
        diagonal = float(np.linalg.norm(np.asarray(workspace_hi) - np.asarray(workspace_lo)))
        return CommandLimits(
            force=force,
            torque=max(CONTROLLER_FORCE_REACH * controller.max_torque, force * reach),
            pos_step=max(float(controller.max_pos_step), diagonal),
            rot_step=max(float(controller.max_rot_step), MAX_ROTATION_STEP),
        )

    def check(self, command: np.ndarray, mode: ActionMode, where: str, tcp_pos: np.ndarray | None = None) -> None:
        """Refuse a ``(6,)`` finite ``command`` read in ``mode`` that exceeds a limit.

        A ``POSE_TARGET`` command's translation is its distance from ``tcp_pos`` ``(3,)`` (the current tool centre
        point [m, world]) and its rotation the norm of its rotation vector (an orientation beyond π radians is
        degrees read as radians).

        Raises:
            InvalidInputError: naming ``where`` (e.g. ``"MujocoWorld.step"``), the part, its size and the limit.
        """
        if mode is ActionMode.WRENCH:
            parts = (("force", "force", "N"), ("torque", "torque", "N·m"))
        else:
            parts = (("translation", "pos_step", "m"), ("rotation", "rot_step", "rad"))
        if mode is ActionMode.POSE_TARGET and tcp_pos is not None:
            command = np.concatenate([command[:3] - tcp_pos, command[3:]])
        for half, (label, name, unit) in enumerate(parts):
            size, limit = float(np.linalg.norm(command[3 * half:3 * half + 3])), getattr(self, name)
            if size > limit:
                raise InvalidInputError(
                    f"{where}: the {mode.value} command's {label} is {size:.6g} {unit}, above the scene's limit "
                    f"{limit:.6g} {unit} (scene.command_limits.{name})"
                )

    def to_dict(self) -> dict:
        """JSON-compatible dictionary."""
        return {"force": self.force, "torque": self.torque, "pos_step": self.pos_step, "rot_step": self.rot_step}


@dataclass(frozen=True)
class Scene:
    """Everything static about a contact task.

    Attributes:
        name: a short identifier, e.g. ``"peg-in-hole(hexagon, 1mm)"``.
        tool: the dynamic tool body.
        statics: fixed bodies (table, slot, obstacles).
        controller: impedance controller gains and limits.
        workspace_lo, workspace_hi: ``(3,)`` bounds of the tool origin's workspace [m, world].
        target_pos: ``(3,)`` goal of the tool origin (e.g. the slot bottom centre) [m, world].
        target_quat: ``(4,)`` goal orientation of the tool.
        meta: JSON-compatible task facts (task name, shape, clearance, ...).
        command_limits: the largest command a world accepts (:class:`CommandLimits`); ``None`` (the default)
            derives them from the tool, controller and workspace (:meth:`CommandLimits.derived`). Explicit
            limits are written to the JSON; derived ones are not (a scene JSON without the key derives them).
    """

    name: str
    tool: Tool
    statics: tuple[StaticBody, ...]
    controller: ImpedanceGains = field(default_factory=ImpedanceGains)
    workspace_lo: np.ndarray = field(default_factory=lambda: np.array([-0.1, -0.1, 0.0]))
    workspace_hi: np.ndarray = field(default_factory=lambda: np.array([0.1, 0.1, 0.2]))
    target_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    target_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    meta: dict = field(default_factory=dict)
    command_limits: CommandLimits | None = None

    def __post_init__(self):
        if self.command_limits is not None and not isinstance(self.command_limits, CommandLimits):
            raise InvalidInputError(
                f"scene.command_limits must be a CommandLimits or None, got {type(self.command_limits).__name__}"
            )
        object.__setattr__(self, "statics", tuple(self.statics))
        lo = _vec(self.workspace_lo, 3, "scene.workspace_lo")
        hi = _vec(self.workspace_hi, 3, "scene.workspace_hi")
        if np.any(hi <= lo):
            raise InvalidInputError(
                f"scene.workspace_hi {hi.tolist()} must exceed workspace_lo {lo.tolist()}"
            )
        object.__setattr__(self, "workspace_lo", lo)
        object.__setattr__(self, "workspace_hi", hi)
        object.__setattr__(self, "target_pos", _vec(self.target_pos, 3, "scene.target_pos"))
        object.__setattr__(self, "target_quat", _unit_quat(self.target_quat, "scene.target_quat"))

    @property
    def limits(self) -> CommandLimits:
        """The command limits in force: :attr:`command_limits`, or those derived from the tool, controller and
        workspace (:meth:`CommandLimits.derived`)."""
        if self.command_limits is not None:
            return self.command_limits
        return CommandLimits.derived(self.tool, self.controller, self.workspace_lo, self.workspace_hi)

    # ---- JSON -------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-compatible dictionary (arrays as lists)."""
        t = self.tool
        c = self.controller
        return {
            "schema_version": SCENE_SCHEMA_VERSION,
            "name": self.name,
            "tool": {
                "part": t.part.to_dict(),
                "mass": t.mass,
                "com": t.com.tolist(),
                "inertia": t.inertia.tolist(),
                "friction": t.friction,
                "init_pos": t.init_pos.tolist(),
                "init_quat": t.init_quat.tolist(),
                "sensor_pos": t.sensor_pos.tolist(),
                "sensor_quat": t.sensor_quat.tolist(),
            },
            "statics": [
                {
                    "part": s.part.to_dict(),
                    "pos": s.pos.tolist(),
                    "quat": s.quat.tolist(),
                    "friction": s.friction,
                } | ({} if s.depth_model is None else {"depth_model": s.depth_model})
                for s in self.statics
            ],
            "controller": c.to_dict(),
            "workspace_lo": self.workspace_lo.tolist(),
            "workspace_hi": self.workspace_hi.tolist(),
            "target_pos": self.target_pos.tolist(),
            "target_quat": self.target_quat.tolist(),
            "meta": self.meta,
        } | ({} if self.command_limits is None else {"command_limits": self.command_limits.to_dict()})

    def to_json(self) -> str:
        """Serialise to a JSON string."""
        return json.dumps(self.to_dict())

    @staticmethod
    def from_dict(d: dict) -> Scene:
        """Inverse of :meth:`to_dict`; a missing key or a malformed value is an InvalidInputError naming it."""
        if not isinstance(d, dict):
            raise InvalidInputError(f"scene description must be a JSON object, got {type(d).__name__}")
        try:
            if d.get("schema_version") != SCENE_SCHEMA_VERSION:
                raise InvalidInputError(
                    f"scene schema_version {d.get('schema_version')!r} is not {SCENE_SCHEMA_VERSION}"
                )
            td = d["tool"]
            tool = Tool(
                Part.from_dict(td["part"]),
                _real(td["mass"], "tool.mass"),
                td["com"],
                td["inertia"],
                _real(td["friction"], "tool.friction"),
                td["init_pos"],
                td["init_quat"],
                td["sensor_pos"],
                td["sensor_quat"],
            )
            statics = tuple(
                StaticBody(Part.from_dict(s["part"]), s["pos"], s["quat"], _real(s["friction"], "static friction"),
                           s.get("depth_model"))
                for s in d["statics"]
            )
            return Scene(
                d["name"],
                tool,
                statics,
                ImpedanceGains.from_dict(d["controller"]),
                d["workspace_lo"],
                d["workspace_hi"],
                d["target_pos"],
                d["target_quat"],
                dict(d.get("meta", {})),
                _command_limits(d.get("command_limits")),
            )
        except KeyError as exc:
            raise InvalidInputError(f"scene description lacks the key {exc}") from None
        except ContactkitError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:  # a value of the wrong type or form
            raise InvalidInputError(f"scene description is malformed ({type(exc).__name__}: {exc})") from None

    @staticmethod
    def from_json(text: str) -> Scene:
        """Parse a JSON string made by :meth:`to_json`."""
        try:
            return Scene.from_dict(json.loads(text))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InvalidInputError(f"scene JSON is malformed: {exc}") from None


def load_scene(path) -> Scene:
    """The :class:`Scene` in the JSON file ``path`` (written by :meth:`Scene.to_json` or ``contactkit scene``).

    Raises:
        InvalidInputError: naming the file: missing, unreadable, not a regular file (a FIFO, a device, a directory),
            larger than :data:`MAX_SCENE_FILE_BYTES`, not UTF-8
            JSON, or not a valid scene description (what is wrong, as :meth:`Scene.from_dict` says).
    """
    from pathlib import Path

    from contactkit.files import read_bounded_text

    path = Path(path)
    text = read_bounded_text(path, MAX_SCENE_FILE_BYTES,
                             lambda problem: InvalidInputError(f"scene file '{path}': {problem}"), "JSON text")
    try:
        return Scene.from_json(text)
    except ContactkitError as exc:
        raise InvalidInputError(f"scene file '{path}': {exc}") from None


def _command_limits(d) -> CommandLimits | None:
    """:class:`CommandLimits` from the scene JSON's ``command_limits`` object; ``None`` when absent (derived)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InvalidInputError(f"scene command_limits must be a JSON object, got {type(d).__name__}")
    unknown = sorted(set(d) - {"force", "torque", "pos_step", "rot_step"})
    if unknown:
        raise InvalidInputError(f"scene command_limits has unknown key(s) {unknown}")
    return CommandLimits(d["force"], d["torque"], d["pos_step"], d["rot_step"])
