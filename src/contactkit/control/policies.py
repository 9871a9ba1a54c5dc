"""Scripted and random policies of the Act-FIGNet paper, Appendix E, acting through the impedance controller.

Every policy emits ``POSE_DELTA`` actions: a displacement of the impedance target from the current pose
(position [m], rotation vector [rad], world frame). A policy is planned once per episode by ``reset``
(all randomness is drawn there from the generator it is given) and then reads the state and the last
F/T reading at each step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum

import numpy as np
from scipy.interpolate import CubicSpline

from contactkit.control.tare import TARE_STEPS, Tare, TareMode, estimate_tare, hold_command
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec
from contactkit.scene import Scene
from contactkit.state import BodyState

CONTACT_FORCE_N = 1.0
"""F/T force norm [N] above which a scripted policy considers the tool in contact."""


class PolicyName(str, Enum):
    """Policies available to ``contactkit collect --policy``."""

    RANDOM_SPLINE = "random-spline"
    SPIRAL = "spiral"
    CIRCLE_SLOW = "circle-slow"
    CIRCLE_FAST = "circle-fast"
    TIGHT_SPLINE = "tight-spline"
    CONTACT_SPLINE = "contact-spline"
    SCREW = "screw"


def _upright_correction(state: BodyState, scene: Scene, gain: float) -> np.ndarray:
    """Rotation vector (3,) [rad] turning the tool a fraction ``gain`` toward the scene's target orientation."""
    return gain * quat_to_rotvec(quat_mul(scene.target_quat, quat_conj(state.quat)))


@dataclass(frozen=True)
class SplineConfig:
    """Random cubic-spline actions (Act-FIGNet paper App. E-a).

    Attributes:
        n_steps: episode length the spline covers [control steps].
        knot_every: control steps between random knots.
        pos_limit: ``(3,)`` bound of the position displacement per axis [m].
        rot_limit: bound of each rotation-vector component [rad].
        down_bias: fraction of the z range shifted downward, so the tool meets the table and obstacles.
        workspace_gain: displacement added per metre outside the workspace (the virtual spring).
        upright_gain: fraction of the orientation error from the scene's target orientation added back each
            step (the rotational counterpart of the workspace spring; keeps a wrist-held tool from tumbling).
        z_flip: probability that a knot's z displacement is flipped to point down (``z → −|z|``, before the
            down bias): the contact-seeking flips of the Act-FIGNet paper's data (App. V: "the target ... along
            the z-axis is randomly flipped to negative"); 0 draws nothing extra.
    """

    n_steps: int = 400
    knot_every: int = 8
    pos_limit: tuple[float, float, float] = (0.015, 0.015, 0.015)
    rot_limit: float = 0.08
    down_bias: float = 0.35
    workspace_gain: float = 2.0
    upright_gain: float = 0.15
    z_flip: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.z_flip <= 1.0:
            raise InvalidInputError(f"SplineConfig.z_flip is a probability in [0, 1], got {self.z_flip}")


CONTACT_SPLINE_FLIP = 0.5
"""``z_flip`` of the ``contact-spline`` policy: half of the knots push down."""


class RandomSplinePolicy:
    """Random pose-displacement sequence from a cubic spline through uniform knots, with a workspace spring."""

    name = PolicyName.RANDOM_SPLINE
    mode = ActionMode.POSE_DELTA

    def __init__(self, config: SplineConfig | None = None):
        self.config = config or SplineConfig()
        self._plan: np.ndarray | None = None

    def params(self) -> dict:
        """JSON-compatible parameters."""
        return {"name": self.name.value, **asdict(self.config)}

    def reset(self, scene: Scene, state: BodyState, rng: np.random.Generator) -> None:
        """Draw knots uniformly within the action limits and spline them over ``n_steps``."""
        c = self.config
        self.scene = scene
        n_knots = c.n_steps // c.knot_every + 2
        lim = np.array([*c.pos_limit, c.rot_limit, c.rot_limit, c.rot_limit])
        knots = rng.uniform(-lim, lim, size=(n_knots, 6))
        if c.z_flip > 0.0:
            flip = rng.random(n_knots) < c.z_flip
            knots[flip, 2] = -np.abs(knots[flip, 2])
        knots[:, 2] -= c.down_bias * lim[2]
        t = np.arange(n_knots) * c.knot_every
        self._plan = np.clip(CubicSpline(t, knots, axis=0)(np.arange(c.n_steps + 1)), -lim * 1.5, lim * 1.5)

    def act(self, t: int, state: BodyState, wrench: np.ndarray) -> np.ndarray:
        """Action ``(6,)`` at step ``t``: the spline value plus the workspace spring's pull-back."""
        if self._plan is None:
            raise InvalidInputError("call reset() before act()")
        a = self._plan[min(t, len(self._plan) - 1)].copy()
        lo, hi = self.scene.workspace_lo, self.scene.workspace_hi
        a[:3] += self.config.workspace_gain * (np.clip(state.pos, lo, hi) - state.pos)
        a[3:] += _upright_correction(state, self.scene, self.config.upright_gain)
        return a


class _ContactSplinePolicy(RandomSplinePolicy):
    """:class:`RandomSplinePolicy` with contact-seeking z flips (:data:`CONTACT_SPLINE_FLIP`): ``contact-spline``."""

    name = PolicyName.CONTACT_SPLINE


class _TightSplinePolicy(RandomSplinePolicy):
    """:class:`RandomSplinePolicy` with :func:`tight_spline_config` amplitudes, named ``tight-spline``."""

    name = PolicyName.TIGHT_SPLINE


@dataclass(frozen=True)
class SpiralConfig:
    """Spiral-search insertion with a constant downward push (Act-FIGNet paper App. E-b).

    Attributes:
        descend_step: target displacement per step while descending to the surface [m].
        press: downward target offset while searching [m] (force ≈ stiffness_z · press).
        pitch: radial growth of the spiral per revolution [m].
        steps_per_turn: control steps per revolution.
        max_radius: the spiral restarts from the centre beyond this radius [m].
        center_noise: std of the error of the believed hole centre [m] (drawn at reset).
        center_offset: ``(2,)`` known error of the believed hole centre, world x and y [m] (a misaligned start
            that the search has to correct; the demo draws it from its generator); added to the drawn noise.
        upright_gain: fraction of the orientation error corrected per step.
        tare: :attr:`TareMode.FREE_SPACE` holds still for ``tare_steps`` control steps first, tares the F/T
            sensor (:func:`contactkit.control.tare.estimate_tare`) and detects contact relative to its noise;
            :attr:`TareMode.NONE` (the default, as before tare existed) compares the raw force with
            :data:`CONTACT_FORCE_N`.
        tare_steps: length of the still window [control steps].
    """

    descend_step: float = 0.004
    press: float = 0.012
    pitch: float = 0.0015
    steps_per_turn: int = 16
    max_radius: float = 0.008
    center_noise: float = 0.0
    center_offset: tuple[float, float] = (0.0, 0.0)
    upright_gain: float = 0.5
    tare: TareMode = TareMode.NONE
    tare_steps: int = TARE_STEPS


class SpiralPolicy:
    """Descend to contact above the believed hole centre, then spiral in xy while pressing down."""

    name = PolicyName.SPIRAL
    mode = ActionMode.POSE_DELTA

    def __init__(self, config: SpiralConfig | None = None):
        self.config = config or SpiralConfig()

    def params(self) -> dict:
        """JSON-compatible parameters."""
        return {"name": self.name.value, **asdict(self.config)}

    def reset(self, scene: Scene, state: BodyState, rng: np.random.Generator) -> None:
        """Draw the believed hole centre and start in the descending phase."""
        self.scene = scene
        noise = rng.normal(0.0, self.config.center_noise, size=2)
        self.center = scene.target_pos[:2] + np.asarray(self.config.center_offset, dtype=float) + noise
        self.search_start: int | None = None
        self.tare: Tare | None = None
        self._still: list[np.ndarray] = []
        self._hold = state

    def _taring(self, t: int, wrench: np.ndarray) -> bool:
        """With :attr:`TareMode.FREE_SPACE`: collect the still window's readings (the reading given at ``t`` is
        the one after step ``t − 1``), estimate the tare once it is full; True while the tool must hold still."""
        if TareMode(self.config.tare) is TareMode.NONE or self.tare is not None:
            return False
        if t > 0:
            self._still.append(np.asarray(wrench, dtype=np.float64))
        if len(self._still) < self.config.tare_steps:
            return True
        self.tare = estimate_tare(np.stack(self._still))
        return False

    def touching(self, wrench: np.ndarray) -> bool:
        """Contact: the tared force is above the tare's noise threshold, or (no tare) the raw force is above
        :data:`CONTACT_FORCE_N`."""
        if self.tare is not None:
            return bool(self.tare.in_contact(wrench))
        return bool(np.linalg.norm(wrench[:3]) > CONTACT_FORCE_N)

    def act(self, t: int, state: BodyState, wrench: np.ndarray) -> np.ndarray:
        """Action ``(6,)``: (with a tare) hold the start pose for the still window, descend until contact
        (:meth:`touching`), then spiral."""
        c = self.config
        a = np.zeros(6)
        if self._taring(t, wrench):
            return hold_command(state, self._hold)
        a[3:] = _upright_correction(state, self.scene, c.upright_gain)
        if self.search_start is None and self.touching(wrench):
            self.search_start = t
        if self.search_start is None:
            a[:2] = self.center - state.pos[:2]
            a[2] = -c.descend_step
            return a
        k = t - self.search_start
        theta = 2.0 * np.pi * k / c.steps_per_turn
        radius = (c.pitch * theta / (2.0 * np.pi)) % c.max_radius
        goal = self.center + radius * np.array([np.cos(theta), np.sin(theta)])
        a[:2] = goal - state.pos[:2]
        a[2] = -c.press
        return a


@dataclass(frozen=True)
class CircleConfig:
    """Circular paths around the hole's perimeter (Act-FIGNet paper App. E-c).

    Attributes:
        circles: revolutions per ``period_steps`` (1 slow, 3 fast in the paper).
        period_steps: control steps for ``circles`` revolutions (200 in the paper).
        radius_offset: circle radius = hole apothem + this [m].
        descend_step, press, upright_gain: as in :class:`SpiralConfig`.
    """

    circles: float = 1.0
    period_steps: int = 200
    radius_offset: float = 0.0
    descend_step: float = 0.004
    press: float = 0.008
    upright_gain: float = 0.5


class CirclePolicy:
    """Descend to the surface next to the hole, then follow a circle around its perimeter."""

    mode = ActionMode.POSE_DELTA

    def __init__(self, config: CircleConfig | None = None):
        self.config = config or CircleConfig()
        self.name = PolicyName.CIRCLE_FAST if self.config.circles > 1.5 else PolicyName.CIRCLE_SLOW

    def params(self) -> dict:
        """JSON-compatible parameters."""
        return {"name": self.name.value, **asdict(self.config)}

    def reset(self, scene: Scene, state: BodyState, rng: np.random.Generator) -> None:
        """Pick a random starting angle on the perimeter."""
        self.scene = scene
        self.radius = float(scene.meta.get("hole_apothem", 0.01)) + self.config.radius_offset
        self.phase = float(rng.uniform(0.0, 2.0 * np.pi))

    def act(self, t: int, state: BodyState, wrench: np.ndarray) -> np.ndarray:
        """Action ``(6,)``: track the moving point on the circle, pressing down."""
        c = self.config
        theta = self.phase + 2.0 * np.pi * c.circles * t / c.period_steps
        goal = self.scene.target_pos[:2] + self.radius * np.array([np.cos(theta), np.sin(theta)])
        a = np.zeros(6)
        a[:2] = goal - state.pos[:2]
        a[2] = -c.press if np.linalg.norm(wrench[:3]) > CONTACT_FORCE_N else -c.descend_step
        a[3:] = _upright_correction(state, self.scene, c.upright_gain)
        return a


TIGHT_SPLINE_POS_LIMIT = (5e-4, 5e-4, 2e-3)
"""Per-axis bound of the tight random spline's target displacement [m]: lateral 0.5 mm (the paper's peg has
32.5 µm of radial clearance, so the target never leaves the bore by much and the wall takes the rest as a
sub-newton push at the default 400 N/m), axial 2 mm."""
TIGHT_SPLINE_DOWN_BIAS = 0.5
"""Downward shift of the tight spline's axial range, as a fraction of its bound: displacements in [−3, 1] mm, so
the peg works its way into the bore (the scene's workspace stops it from leaving)."""
TIGHT_SPLINE_ROT_LIMIT = 2e-3
"""Bound of each rotation-vector component of the tight random spline [rad]: twice the tilt the 32.5 µm clearance
allows over 30 mm of engagement (1.1 mrad), so the target tilts the peg against the wall, not through it."""


def tight_spline_config(n_steps: int = 400) -> SplineConfig:
    """:class:`SplineConfig` for a tight fit (the data-driven simulation paper's tasks): small amplitudes
    (:data:`TIGHT_SPLINE_POS_LIMIT`, :data:`TIGHT_SPLINE_ROT_LIMIT`), a stronger downward bias
    (:data:`TIGHT_SPLINE_DOWN_BIAS`), the same knot spacing."""
    return SplineConfig(n_steps=n_steps, pos_limit=TIGHT_SPLINE_POS_LIMIT, rot_limit=TIGHT_SPLINE_ROT_LIMIT,
                        down_bias=TIGHT_SPLINE_DOWN_BIAS)


def make_policy(name: str | PolicyName, n_steps: int = 400):
    """A policy by name (see :class:`PolicyName`); unknown names are an error listing the valid ones."""
    try:
        key = PolicyName(name)
    except ValueError:
        raise InvalidInputError(f"unknown policy {name!r}; valid: {[p.value for p in PolicyName]}") from None
    if key is PolicyName.RANDOM_SPLINE:
        return RandomSplinePolicy(SplineConfig(n_steps=n_steps))
    if key is PolicyName.CONTACT_SPLINE:
        return _ContactSplinePolicy(SplineConfig(n_steps=n_steps, z_flip=CONTACT_SPLINE_FLIP))
    if key is PolicyName.TIGHT_SPLINE:
        return _TightSplinePolicy(tight_spline_config(n_steps))
    if key is PolicyName.SPIRAL:
        return SpiralPolicy()
    if key is PolicyName.SCREW:
        from contactkit.control.screw_policy import ScrewPolicy

        return ScrewPolicy()
    return CirclePolicy(CircleConfig(circles=3.0 if key is PolicyName.CIRCLE_FAST else 1.0))
