"""Physics parameters of a simulated world, apart from the scene.

A :class:`WorldParams` says *how* a scene is simulated: time step, sub-steps per control step, contact
softness, friction and mass scaling (or absolute tool mass and inertia), damping, gravity, the F/T sensor's noise,
bias, mounting and low-pass filter, and the unmodelled effects of a real arm (command latency, compliance between
the flange and the tool). A "target" world (a stand-in for a real lab) differs from the "nominal" one only here,
never in the scene. docs/worlds.md gives each parameter's meaning, units, a typical value and its source.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path

import numpy as np

from contactkit.bounds import MAX_TOOL_INERTIA_KGM2, MAX_TOOL_MASS_KG, MIN_TOOL_MASS_KG, TOOL_MASS_REASON
from contactkit.errors import InvalidInputError
from contactkit.files import read_bounded_text
from contactkit.rotations import quat_mul, quat_to_mat

PRESET_NAMES = ("nominal", "target", "target-parametric")
"""Presets shipped in ``contactkit/presets``: ``target-parametric`` is the target world of the stored results before
issue 19 (other parameters only); ``target`` adds command latency, flange-tool compliance and the sensor's filter."""
UNIT_QUAT_TOL = 1e-6
"""Largest ``| |q| - 1 |`` accepted for ``ft_mount_quat`` (a quaternion written with 7 digits passes)."""
MAX_LATENCY_SUBSTEPS = 100_000
"""Largest ``command_latency_substeps`` accepted (200 s at the default 2 ms step): a world file cannot make the
world hold millions of pending commands."""
INERTIA_TRIANGLE_TOL = 1e-12
"""Slack [kg·m²] of the principal-moment triangle inequality of ``tool_inertia`` (a thin rod's equality passes)."""


MAX_TIMESTEP_S = 1.0
"""Longest physics step [s]: over one second a contact simulation resolves nothing (the tool falls 4.9 m under
gravity in one step); the impedance controller's own bound (:mod:`contactkit.control.stability`) is far shorter."""
MAX_SUBSTEPS = 100_000
"""Most physics steps per control step (20 Hz at 2 ms needs 25; at the shortest useful step, 10 µs, a 1 s control
period needs 100,000); keeps ``control_dt`` finite."""
MAX_FRICTION_SCALE = 100.0
"""Largest ``friction_scale``: a scene's coefficients (0.1–1) times 100 are far beyond any measured dry-contact pair
(μ of a few at most, clean metals in vacuum)."""
MASS_SCALE_RANGE = (1e-3, 1e3)
"""``mass_scale`` bounds: a tool 1000 times lighter or heavier than the scene's is another object."""
MASS_SCALE_REASON = "a tool 1000 times lighter or heavier than the scene's is another object; give tool_mass [kg]"
MAX_LINEAR_DAMPING = 1e4
"""Largest ``linear_damping`` [N·s/m]: at 1e4 a 1 kg tool's velocity decays in 0.1 ms — glued, not damped."""
MAX_ANGULAR_DAMPING = 1e2
"""Largest ``angular_damping`` [N·m·s/rad]: at 100 a 0.01 kg·m² tool's spin decays in 0.1 ms — glued, not damped."""
MAX_WRIST_ARMATURE = 10.0
"""Largest ``wrist_armature`` [kg·m²]: a 1e-4 kg·m² rotor behind a 100:1 gear reflects 1 kg·m²; ten times that."""
MAX_FT_FORCE_N = 1e5
"""Largest F/T bias or noise force component [N]; see :data:`FT_RANGE_REASON`."""
MAX_FT_TORQUE_NM = 1e4
"""Largest F/T bias or noise torque component [N·m]; see :data:`FT_RANGE_REASON`."""
FT_RANGE_REASON = ("an order of magnitude beyond the full scale of the largest 6-axis F/T sensors, tens of kN and "
                   "a few kN m: a sensor error, not a bias or noise")
_POSITIVE_SCALARS = (
    ("timestep", "s", 0.0, MAX_TIMESTEP_S, "over one second a contact simulation resolves nothing"),
    ("friction_scale", "", 0.0, MAX_FRICTION_SCALE, "beyond any measured dry-contact friction"),
    ("impratio", "", 0.0, np.inf, "MuJoCo's frictional-to-normal impedance ratio"),
)
"""``(field, unit, lower bound (excluded), upper bound, reason)`` of the scalars that must be positive."""
_NON_NEGATIVE_SCALARS = (
    ("linear_damping", "N s/m", MAX_LINEAR_DAMPING, "a 1 kg tool would be glued, not damped"),
    ("angular_damping", "N m s/rad", MAX_ANGULAR_DAMPING, "a 0.01 kg m^2 tool would be glued, not damped"),
    ("wrist_armature", "kg m^2", MAX_WRIST_ARMATURE, "ten times a large arm's reflected wrist inertia"),
)
"""``(field, unit, upper bound, reason)`` of the scalars that must be >= 0."""


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
        tool_mass: absolute tool mass [kg] replacing ``scene.tool.mass · mass_scale`` (None: not overridden; then
            ``mass_scale`` must be 1). The controller still compensates the scene's nominal weight.
        tool_inertia: absolute inertia ``(ixx, iyy, izz, ixy, ixz, iyz)`` about the centre of mass, tool frame
            [kg·m²] (None: the scene's, scaled like the mass).
        ft_mount_pos: ``(3,)`` offset of the real sensor origin from the nominal sensor frame, in that frame [m].
        ft_mount_quat: ``(4,)`` rotation ``(w, x, y, z)`` of the real sensor frame relative to the nominal one:
            the reading is expressed in ``R_nominal · R_mount`` about the offset origin.
        command_latency_substeps: a command takes effect this many physics sub-steps after it is issued (0: at
            once); until then the previous command acts.
        compliance_stiffness: ``(6,)`` stiffness of the flange–tool coupling along and about the nominal sensor
            axes, at the sensor origin [N/m ×3, N·m/rad ×3]; all zero: rigid (off), else all positive.
        compliance_damping: ``(6,)`` damping of that coupling [N·s/m ×3, N·m·s/rad ×3].
        compliance_mass: mass of the flange side of the coupling (sensor body and adapter) [kg], driven by the
            controller; used only when the compliance is on.
        ft_filter_hz: cut-off [Hz] of the sensor's first-order low-pass filter, applied at the physics rate before
            the control-period mean (0: off).
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
    tool_mass: float | None = None
    tool_inertia: tuple[float, ...] | None = None
    ft_mount_pos: tuple[float, ...] = field(default=(0.0,) * 3)
    ft_mount_quat: tuple[float, ...] = field(default=(1.0, 0.0, 0.0, 0.0))
    command_latency_substeps: int = 0
    compliance_stiffness: tuple[float, ...] = field(default=(0.0,) * 6)
    compliance_damping: tuple[float, ...] = field(default=(0.0,) * 6)
    compliance_mass: float = 0.1
    ft_filter_hz: float = 0.0

    def __post_init__(self):
        for name, unit, lo, hi, reason in _POSITIVE_SCALARS:
            _bounded(name, getattr(self, name), unit, lo, hi, reason, lo_inclusive=False)
        for name, unit, hi, reason in _NON_NEGATIVE_SCALARS:
            _bounded(name, getattr(self, name), unit, 0.0, hi, reason)
        _bounded("mass_scale", self.mass_scale, "", *MASS_SCALE_RANGE, MASS_SCALE_REASON)
        n = self.n_substeps
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_SUBSTEPS:
            raise InvalidInputError(f"world.n_substeps must be an integer in [1, {MAX_SUBSTEPS}] (physics steps per "
                                    f"control step), got {n!r}")
        if not isinstance(self.gravity, (bool, np.bool_)):
            raise InvalidInputError(f"world.gravity must be true or false (a JSON boolean), got {self.gravity!r} "
                                    f"({type(self.gravity).__name__})")
        object.__setattr__(self, "n_substeps", int(n))
        object.__setattr__(self, "gravity", bool(self.gravity))
        for name, n in (("solref", 2), ("solimp", 5)):
            object.__setattr__(self, name, _finite_tuple(name, getattr(self, name), n))
        self._validate_sensor_errors()
        if self.cone not in ("elliptic", "pyramidal"):
            raise InvalidInputError(f"world.cone must be 'elliptic' or 'pyramidal', got {self.cone!r}")
        if self.integrator not in ("implicitfast", "implicit", "Euler", "RK4"):
            raise InvalidInputError(f"world.integrator {self.integrator!r} is not a MuJoCo integrator")
        self._validate_real_cell()

    def _validate_sensor_errors(self) -> None:
        """``ft_noise_std`` (>= 0) and ``ft_bias``: 6 finite numbers each, forces within :data:`MAX_FT_FORCE_N`
        and torques within :data:`MAX_FT_TORQUE_NM` (normalised to tuples of floats)."""
        for name in ("ft_noise_std", "ft_bias"):
            v = _finite_tuple(name, getattr(self, name), 6)
            object.__setattr__(self, name, v)
            for axis, x in enumerate(v):
                bound, unit = (MAX_FT_FORCE_N, "N") if axis < 3 else (MAX_FT_TORQUE_NM, "N m")
                if abs(x) > bound:
                    raise InvalidInputError(f"world.{name}[{axis}] = {x:g} {unit} is beyond {bound:g} {unit} "
                                            f"({FT_RANGE_REASON})")
        if any(s < 0 for s in self.ft_noise_std):
            raise InvalidInputError(f"world.ft_noise_std must be >= 0, got {self.ft_noise_std}")

    def _validate_real_cell(self) -> None:
        """Validate (and normalise to tuples of floats) the mass overrides, the sensor mount and the unmodelled
        effects of a real cell; InvalidInputError naming the parameter."""
        for name, n in (("ft_mount_pos", 3), ("ft_mount_quat", 4), ("compliance_stiffness", 6),
                        ("compliance_damping", 6)):
            object.__setattr__(self, name, _finite_tuple(name, getattr(self, name), n))
        if abs(float(np.linalg.norm(self.ft_mount_quat)) - 1.0) > UNIT_QUAT_TOL:
            raise InvalidInputError(f"world.ft_mount_quat must be a unit quaternion (w, x, y, z), got "
                                    f"{self.ft_mount_quat}")
        lat = self.command_latency_substeps
        if isinstance(lat, bool) or not isinstance(lat, int) or not 0 <= lat <= MAX_LATENCY_SUBSTEPS:
            raise InvalidInputError(f"world.command_latency_substeps must be an integer in [0, "
                                    f"{MAX_LATENCY_SUBSTEPS}], got {lat!r}")
        k, c = self.compliance_stiffness, self.compliance_damping
        if any(x < 0 for x in c) or (any(k) and not all(x > 0 for x in k)) or any(x < 0 for x in k):
            raise InvalidInputError(f"world.compliance_stiffness must be all 0 (rigid) or all > 0, and "
                                    f"compliance_damping >= 0; got {k} and {c}")
        _bounded("compliance_mass", self.compliance_mass, "kg", 0.0, MAX_TOOL_MASS_KG,
                 "beyond the payload of the largest industrial arms")
        _bounded("ft_filter_hz", self.ft_filter_hz, "Hz", 0.0, np.inf, "a cut-off frequency")
        if self.compliant and not self.compliance_mass > 0:
            raise InvalidInputError("world.compliance_mass must be > 0 when compliance_stiffness is set")
        self._validate_mass()

    def _validate_mass(self) -> None:
        if self.tool_mass is not None:
            m = _bounded("tool_mass", self.tool_mass, "kg", MIN_TOOL_MASS_KG, MAX_TOOL_MASS_KG, TOOL_MASS_REASON)
            if self.mass_scale != 1.0:
                raise InvalidInputError(f"world.tool_mass ({m}) and mass_scale ({self.mass_scale}) both set: give "
                                        "one (an absolute mass replaces the scaled one)")
        if self.tool_inertia is not None:
            v = _finite_tuple("tool_inertia", self.tool_inertia, 6)
            moments = np.linalg.eigvalsh(_inertia_matrix(v))
            a, b, c = np.sort(moments)
            if c > MAX_TOOL_INERTIA_KGM2:
                raise InvalidInputError(f"world.tool_inertia {v} [kg m^2]: principal moment {c:g} is beyond "
                                        f"{MAX_TOOL_INERTIA_KGM2:g} (the heaviest payload 1 m from its centre)")
            if a <= 0 or a + b < c - INERTIA_TRIANGLE_TOL:
                raise InvalidInputError(f"world.tool_inertia {v} (ixx, iyy, izz, ixy, ixz, iyz) [kg m^2] is not a "
                                        f"rigid body's inertia: principal moments {moments.tolist()} must be "
                                        "positive and satisfy the triangle inequality")
            object.__setattr__(self, "tool_inertia", v)

    @property
    def compliant(self) -> bool:
        """Whether the flange–tool coupling is compliant (any ``compliance_stiffness`` set)."""
        return any(self.compliance_stiffness)

    def unmodelled_effects(self) -> list[str]:
        """Names of the real-cell effects this world turns on that a Markov model of the tool state alone cannot
        represent (latency, compliance, sensor filter): the parameters, for error messages."""
        on = []
        if self.command_latency_substeps:
            on.append("command_latency_substeps")
        if self.compliant:
            on.append("compliance_stiffness")
        if self.ft_filter_hz:
            on.append("ft_filter_hz")
        return on

    @property
    def control_dt(self) -> float:
        """Control period [s] = timestep · n_substeps."""
        return self.timestep * self.n_substeps

    def tool_mass_properties(self, mass: float, inertia: np.ndarray) -> tuple[float, np.ndarray]:
        """The simulated tool's mass [kg] and ``(3, 3)`` inertia about its centre of mass (tool frame) [kg·m²],
        from the scene's ``mass`` and ``inertia``: the overrides when given, else scaled by ``mass_scale`` (an
        overridden mass without an inertia scales the scene's inertia by the same ratio)."""
        inertia = np.asarray(inertia, dtype=np.float64)
        if self.tool_mass is None:
            return float(mass * self.mass_scale), inertia * self.mass_scale
        if self.tool_inertia is not None:
            return float(self.tool_mass), _inertia_matrix(self.tool_inertia)
        return float(self.tool_mass), inertia * (float(self.tool_mass) / float(mass))

    def sensor_frame(self, sensor_pos: np.ndarray, sensor_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The real sensor frame in the tool frame: origin ``(3,)`` [m] and orientation ``(4,)`` (w, x, y, z,
        sensor → tool), ``p = p_nom + R_nom · ft_mount_pos``, ``q = q_nom ⊗ ft_mount_quat``, from the scene's
        nominal sensor pose ``sensor_pos (3,)`` [m], ``sensor_quat (4,)``. The default mount returns the nominal
        numbers bit for bit."""
        q_nom = np.asarray(sensor_quat, dtype=np.float64)
        pos = np.asarray(sensor_pos, dtype=np.float64) + quat_to_mat(q_nom) @ np.asarray(self.ft_mount_pos)
        return pos, quat_mul(q_nom, np.asarray(self.ft_mount_quat) / np.linalg.norm(self.ft_mount_quat))

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


def _is_real(x) -> bool:
    """Whether ``x`` is a real number (an int or float, numpy's too), not a bool or a string."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _bounded(name: str, value, unit: str, lo: float, hi: float, reason: str, lo_inclusive: bool = True) -> float:
    """``value`` as a float after checking that it is a finite real number in ``[lo, hi]`` (``(lo, hi]`` when not
    ``lo_inclusive``); InvalidInputError naming ``world.name``, its unit and ``reason`` otherwise."""
    unit_txt = f" [{unit}]" if unit else ""
    if not _is_real(value):
        raise InvalidInputError(f"world.{name} must be a number{unit_txt}, got {value!r} ({type(value).__name__})")
    v = float(value)
    if not np.isfinite(v):
        raise InvalidInputError(f"world.{name} must be a finite number{unit_txt}, got {value!r}")
    if (v < lo if lo_inclusive else v <= lo) or v > hi:
        low = f"{'>=' if lo_inclusive else '>'} {lo:g}"
        high = f" and <= {hi:g}" if np.isfinite(hi) else ""
        raise InvalidInputError(f"world.{name} = {v:g}{unit_txt} is out of range: must be {low}{high} ({reason})")
    return v


def _finite_tuple(name: str, value, n: int) -> tuple[float, ...]:
    """``value`` (a list, tuple or array of real numbers) as a tuple of ``n`` finite floats (InvalidInputError naming
    ``world.name`` otherwise: a string, a bool or a nested list is not a number)."""
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else None
    if items is None or not all(_is_real(x) for x in items):
        raise InvalidInputError(f"world.{name} must be a list of {n} finite numbers, got {value!r}")
    v = tuple(float(x) for x in items)
    if len(v) != n or not all(np.isfinite(v)):
        raise InvalidInputError(f"world.{name} must be {n} finite numbers, got {value!r}")
    return v


def _inertia_matrix(v: tuple[float, ...]) -> np.ndarray:
    """``(3, 3)`` symmetric inertia from ``(ixx, iyy, izz, ixy, ixz, iyz)`` [kg·m²]."""
    ixx, iyy, izz, ixy, ixz, iyz = v
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


MAX_WORLD_FILE_BYTES = 1 << 20
"""Largest world JSON file read [bytes]; a world file is a few hundred bytes, so this bounds hostile input."""


def load_world(spec: str | Path | None) -> WorldParams:
    """World parameters from a preset name (:data:`PRESET_NAMES`), a JSON file path, or None (defaults).

    The file is a UTF-8 JSON object of :class:`WorldParams` fields (lists for tuples) and an optional
    ``description``; at most :data:`MAX_WORLD_FILE_BYTES`.

    Raises:
        InvalidInputError: one line naming the preset or file: unknown preset, missing, unreadable, not a
            regular file (a FIFO, a device, a directory), too large, not UTF-8 text, not valid JSON, not an object,
            or holding unknown or invalid parameters.
    """
    if spec is None:
        return WorldParams()
    spec_str = str(spec)
    if spec_str in PRESET_NAMES:
        text = resources.files("contactkit.presets").joinpath(f"{spec_str}.json").read_text()
        source = f"preset '{spec_str}'"
    else:
        path = Path(spec_str)
        if not path.exists():
            raise InvalidInputError(f"world '{spec_str}' is neither a preset {PRESET_NAMES} nor a JSON file")
        source = f"world file '{path}'"
        text = read_bounded_text(path, MAX_WORLD_FILE_BYTES,
                                 lambda problem, source=source: InvalidInputError(f"{source}: {problem}"), "JSON text")
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

