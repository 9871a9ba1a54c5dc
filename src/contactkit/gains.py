"""The scene's Cartesian impedance controller as data: gains, damping, the spring's reference point, limits.

:class:`ImpedanceGains` is the ``controller`` of a :class:`~contactkit.scene.Scene` (re-exported there); the law it
parameterises is :mod:`contactkit.control.impedance`. A real cell's controller differs from the default in three
ways a scene can now say (docs/scenes.md, "The controller"):

* the spring acts on a tool centre point (``tcp_offset``, tool frame) rather than the tool frame origin;
* its damping is given as values (``damping_pos`` [N·s/m], ``damping_rot`` [N·m·s/rad]) rather than a ratio;
* its command limits (``max_pos_step``, ``max_rot_step``, ``max_force``, ``max_torque``) bind, and a world
  reports when they do (:attr:`contactkit.model.StepResult.clipped`).

The defaults reproduce the controller contactkit always had (TCP at the origin, critical damping ratio 1), and
:meth:`ImpedanceGains.to_dict` writes the new fields only when they differ from it, so a default scene's JSON is
unchanged. A calibration reaches every field with ``dataclasses.replace(scene, controller=dataclasses.replace(
scene.controller, tcp_offset=..., damping_pos=..., damping_rot=..., damping_ratio=1.0))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contactkit.bounds import MAX_TCP_OFFSET_M
from contactkit.errors import InvalidInputError
from contactkit.values import real, vector

DEFAULT_DAMPING_RATIO = 1.0
"""ζ of :class:`ImpedanceGains` (critical damping per axis); damping values exclude any other ratio."""
LIMIT_FIELDS = ("max_pos_step", "max_rot_step", "max_force", "max_torque")
"""The controller's command limits, in the order a step's report (:attr:`contactkit.model.StepResult.clipped`)
names them."""


@dataclass(frozen=True)
class ImpedanceGains:
    """Cartesian impedance controller of the wrist, world-frame gains, acting at the tool centre point (TCP).

    Attributes:
        stiffness_pos: ``(3,)`` translational stiffness [N/m].
        stiffness_rot: ``(3,)`` rotational stiffness [N·m/rad].
        damping_ratio: ζ; damping = 2 ζ sqrt(K m) per axis (m: nominal mass or principal inertia). Used unless
            ``damping_pos``/``damping_rot`` are given; with them it must stay at its default (1).
        max_force: limit on the norm of the commanded force [N].
        max_torque: limit on the norm of the commanded torque [N·m].
        max_pos_step: largest distance of the pose target from the current TCP [m]; a farther one is clipped
            to it and the step reports it.
        max_rot_step: largest rotation of the orientation target from the current orientation [rad]; likewise.
        gravity_compensation: add the nominal tool weight as a feed-forward force (at the tool origin).
        tcp_offset: ``(3,)`` the point the spring acts on, tool frame [m] (default the tool origin). Pose targets
            and the current pose refer to it; its wrench is applied there (moved to the tool origin in
            ``StepResult.applied``).
        damping_pos: ``(3,)`` translational damping values [N·s/m] at the TCP, or None (from the ratio).
        damping_rot: ``(3,)`` rotational damping values [N·m·s/rad], or None. Give both or neither.
    """

    stiffness_pos: np.ndarray = field(default_factory=lambda: np.full(3, 400.0))
    stiffness_rot: np.ndarray = field(default_factory=lambda: np.full(3, 4.0))
    damping_ratio: float = DEFAULT_DAMPING_RATIO
    max_force: float = 40.0
    max_torque: float = 2.0
    max_pos_step: float = 0.03
    max_rot_step: float = 0.3
    gravity_compensation: bool = True
    tcp_offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    damping_pos: np.ndarray | None = None
    damping_rot: np.ndarray | None = None

    def __post_init__(self):
        for name in ("stiffness_pos", "stiffness_rot"):
            object.__setattr__(self, name, _non_negative(getattr(self, name), name))
        if not isinstance(self.gravity_compensation, (bool, np.bool_)):
            raise InvalidInputError(f"controller.gravity_compensation must be true or false, got "
                                    f"{self.gravity_compensation!r}")
        for name in ("damping_ratio", *LIMIT_FIELDS):
            v = real(getattr(self, name), f"controller.{name}")
            if not (np.isfinite(v) and v >= 0):
                raise InvalidInputError(f"controller.{name} must be finite and >= 0, got {v}")
        tcp = vector(self.tcp_offset, 3, "controller.tcp_offset")
        if np.linalg.norm(tcp) > MAX_TCP_OFFSET_M:
            raise InvalidInputError(f"controller.tcp_offset {tcp.tolist()} is {np.linalg.norm(tcp):.6g} m from the "
                                    f"tool origin, beyond {MAX_TCP_OFFSET_M:g} m (longer than any tool a robot "
                                    "holds: metres given for millimetres?)")
        object.__setattr__(self, "tcp_offset", tcp)
        self._check_damping()

    def _check_damping(self) -> None:
        """Damping values: both or neither, each ``(3,)`` finite >= 0, and not beside a non-default ratio."""
        given = [name for name in ("damping_pos", "damping_rot") if getattr(self, name) is not None]
        if len(given) == 1:
            missing = "damping_rot" if given == ["damping_pos"] else "damping_pos"
            raise InvalidInputError(f"controller.{given[0]} is given without controller.{missing}: give the "
                                    "damping values of both or neither (then damping_ratio sets them)")
        if given and float(self.damping_ratio) != DEFAULT_DAMPING_RATIO:
            raise InvalidInputError(f"controller.damping_ratio {self.damping_ratio!r} and controller.damping_pos/"
                                    "damping_rot are exclusive: give the damping as a ratio or as values")
        for name in given:
            object.__setattr__(self, name, _non_negative(getattr(self, name), name))

    @property
    def has_tcp(self) -> bool:
        """Whether the spring acts off the tool origin (``tcp_offset`` not zero)."""
        return bool(np.any(self.tcp_offset != 0.0))

    def to_dict(self) -> dict:
        """JSON-compatible dictionary; ``tcp_offset`` and the damping values only when set (a default controller's
        JSON is what it always was)."""
        out = {"stiffness_pos": self.stiffness_pos.tolist(), "stiffness_rot": self.stiffness_rot.tolist(),
               "damping_ratio": self.damping_ratio, "max_force": self.max_force, "max_torque": self.max_torque,
               "max_pos_step": self.max_pos_step, "max_rot_step": self.max_rot_step,
               "gravity_compensation": self.gravity_compensation}
        if self.has_tcp:
            out["tcp_offset"] = self.tcp_offset.tolist()
        if self.damping_pos is not None:
            out |= {"damping_pos": self.damping_pos.tolist(), "damping_rot": self.damping_rot.tolist()}
        return out

    @staticmethod
    def from_dict(d) -> ImpedanceGains:
        """Inverse of :meth:`to_dict`; keys left out take their defaults (an older scene JSON loads), an unknown
        key or a malformed value is an InvalidInputError naming it."""
        if not isinstance(d, dict):
            raise InvalidInputError(f"scene controller must be a JSON object, got {type(d).__name__}")
        unknown = sorted(set(d) - set(ImpedanceGains.__dataclass_fields__))
        if unknown:
            raise InvalidInputError(f"scene controller has unknown key(s) {unknown}; valid: "
                                    f"{list(ImpedanceGains.__dataclass_fields__)}")
        return ImpedanceGains(**d)


def _non_negative(x, name: str) -> np.ndarray:
    v = vector(x, 3, f"controller.{name}")
    if np.any(v < 0):
        raise InvalidInputError(f"controller.{name} must be >= 0, got {v.tolist()}")
    return v
