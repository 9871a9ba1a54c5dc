"""Physics parameters of a simulated world, apart from the scene.

A :class:`WorldParams` says *how* a scene is simulated: time step, sub-steps per control step, contact
softness, friction and mass scaling, damping, gravity, and the F/T sensor's noise and bias. A "target"
world (a stand-in for a real lab) differs from the "nominal" one only here, never in the scene.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path

import numpy as np

from contactkit.errors import InvalidInputError

PRESET_NAMES = ("nominal", "target")


@dataclass(frozen=True)
class WorldParams:
    """Simulation parameters.

    Attributes:
        timestep: physics step [s].
        n_substeps: physics steps per control step (Act-FIGNet paper: 25); control period = timestep·n_substeps.
        friction_scale: multiplies every sliding friction coefficient of the scene.
        mass_scale: multiplies the tool mass and inertia (the controller still compensates the nominal weight).
        solref: MuJoCo contact ``(timeconst [s], dampratio)``.
        solimp: MuJoCo contact impedance ``(dmin, dmax, width [m], midpoint, power)``.
        linear_damping: viscous damping on the tool's translation [N·s/m].
        angular_damping: viscous damping on the tool's rotation [N·m·s/rad].
        wrist_armature: reflected rotational inertia of the robot's wrist added to the tool's three
            rotational degrees of freedom [kg·m²] (Act-FIGNet paper App. D tunes armature for the same reason: a
            tool alone is far lighter than the wrist that holds it, and its rotation would be unrealistically stiff).
        gravity: whether gravity (−9.81 m/s² along z) acts.
        ft_noise_std: ``(6,)`` standard deviation of white noise on the F/T reading [N, N·m].
        ft_bias: ``(6,)`` constant offset of the F/T reading [N, N·m].
        cone: ``"elliptic"`` or ``"pyramidal"`` friction cone (MuJoCo).
        impratio: MuJoCo's frictional-to-normal impedance ratio (elliptic cones).
        integrator: MuJoCo integrator name (``"implicitfast"``, ``"Euler"``, ``"RK4"``).
    """

    timestep: float = 0.002
    n_substeps: int = 25
    friction_scale: float = 1.0
    mass_scale: float = 1.0
    solref: tuple[float, float] = (0.02, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.9, 0.95, 0.001, 0.5, 2.0)
    linear_damping: float = 0.0
    angular_damping: float = 0.0
    wrist_armature: float = 2e-3
    gravity: bool = True
    ft_noise_std: tuple[float, ...] = field(default=(0.0,) * 6)
    ft_bias: tuple[float, ...] = field(default=(0.0,) * 6)
    cone: str = "elliptic"
    impratio: float = 1.0
    integrator: str = "implicitfast"

    def __post_init__(self):
        for name in ("timestep", "friction_scale", "mass_scale", "impratio"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise InvalidInputError(f"world.{name} must be a positive finite number, got {v!r}")
        if not (isinstance(self.n_substeps, int) and self.n_substeps >= 1):
            raise InvalidInputError(f"world.n_substeps must be an integer >= 1, got {self.n_substeps!r}")
        for name, n in (("solref", 2), ("solimp", 5), ("ft_noise_std", 6), ("ft_bias", 6)):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != n or not all(np.isfinite(v)):
                raise InvalidInputError(
                    f"world.{name} must be {n} finite numbers, got {getattr(self, name)!r}"
                )
            object.__setattr__(self, name, v)
        if any(s < 0 for s in self.ft_noise_std):
            raise InvalidInputError(f"world.ft_noise_std must be >= 0, got {self.ft_noise_std}")
        for name in ("linear_damping", "angular_damping", "wrist_armature"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise InvalidInputError(f"world.{name} must be >= 0")
        if self.cone not in ("elliptic", "pyramidal"):
            raise InvalidInputError(f"world.cone must be 'elliptic' or 'pyramidal', got {self.cone!r}")
        if self.integrator not in ("implicitfast", "implicit", "Euler", "RK4"):
            raise InvalidInputError(f"world.integrator {self.integrator!r} is not a MuJoCo integrator")

    @property
    def control_dt(self) -> float:
        """Control period [s] = timestep · n_substeps."""
        return self.timestep * self.n_substeps

    def to_dict(self) -> dict:
        """JSON-compatible dictionary."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    def to_json(self) -> str:
        """JSON string of :meth:`to_dict`."""
        return json.dumps(self.to_dict())

    @staticmethod
    def from_dict(d: dict) -> WorldParams:
        """Build from a dictionary; unknown keys are an error naming them."""
        known = {f.name for f in fields(WorldParams)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InvalidInputError(f"unknown world parameter(s) {unknown}; valid: {sorted(known)}")
        conv = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return WorldParams(**conv)


MAX_WORLD_FILE_BYTES = 1 << 20
"""Largest world JSON file read [bytes]; a world file is a few hundred bytes, so this bounds hostile input."""


def load_world(spec: str | Path | None) -> WorldParams:
    """World parameters from a preset name (``nominal``, ``target``), a JSON file path, or None (defaults).

    The file is a UTF-8 JSON object of :class:`WorldParams` fields (lists for tuples) and an optional
    ``description``; at most :data:`MAX_WORLD_FILE_BYTES`.

    Raises:
        InvalidInputError: one line naming the preset or file: unknown preset, missing, unreadable, too
            large, not UTF-8 text, not valid JSON, not an object, or holding unknown or invalid parameters.
    """
    if spec is None:
        return WorldParams()
    spec_str = str(spec)
    if spec_str in PRESET_NAMES:
        text = resources.files("contactkit.presets").joinpath(f"{spec_str}.json").read_text()
        source = f"preset '{spec_str}'"
    else:
        path = Path(spec_str)
        if not path.is_file():
            raise InvalidInputError(f"world '{spec_str}' is neither a preset {PRESET_NAMES} nor a JSON file")
        source = f"world file '{path}'"
        text = _read_world_text(path, source)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInputError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{source} must hold a JSON object, got {type(data).__name__}")
    data.pop("description", None)
    try:
        return WorldParams.from_dict(data)
    except (InvalidInputError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{source}: {exc}") from None


def _read_world_text(path: Path, source: str) -> str:
    """The UTF-8 text of a world file (InvalidInputError naming ``source`` when it cannot be)."""
    try:
        size = path.stat().st_size
        if size > MAX_WORLD_FILE_BYTES:
            raise InvalidInputError(f"{source}: {size} bytes, more than the {MAX_WORLD_FILE_BYTES} accepted; "
                                    "not a world JSON file")
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{source} is not UTF-8 JSON text (byte {data[exc.start]:#04x} at offset "
                                f"{exc.start}); a binary file?") from None
