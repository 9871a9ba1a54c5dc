"""Free-space tare of a force-torque sensor, and contact detection relative to the sensor's own noise.

A real F/T sensor reads a slowly drifting offset (temperature, cable strain, the tool's weight in the current
orientation) on top of white noise. Users zero ("tare") it before a task: the robot holds still in free space for
a short window, the mean reading over the window is the offset, and the spread of the readings is the noise. A
contact is then a tared force whose magnitude would be very unlikely under that noise alone — not a force above a
fixed 1 N, which a bias of a newton or two crosses before anything is touched.

Model of a free-space reading, sensor frame: ``w_t = b + n_t`` with ``b (6,)`` constant and ``n_t ~ N(0, diag(σ²))``.
The tare estimates ``b̂ = mean_t w_t`` and ``σ̂ = std_t w_t`` (per axis, ``ddof = 1``). With the tare applied, the
force part ``f = w[:3] − b̂[:3]`` of a free-space reading has ``|f|² / σ_max² ≤ χ²₃`` (each axis has a std of at
most ``σ_max``), so :func:`contact_threshold` is ``σ_max · sqrt(χ²₃(1 − CONTACT_FALSE_ALARM))``, with a floor of
:data:`MIN_CONTACT_FORCE_N` for a noise-free (simulated) sensor.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import chi2

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, StepResult, World
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec
from contactkit.state import BodyState

__all__ = [
    "CONTACT_FALSE_ALARM",
    "MIN_CONTACT_FORCE_N",
    "MIN_FREE_SPACE_STEPS",
    "MIN_TARE_SAMPLES",
    "TARE_STEPS",
    "Tare",
    "TareMode",
    "TaredWorld",
    "episode_offsets",
    "estimate_tare",
    "hold_command",
    "parse_tare_mode",
    "tare_world",
]

CONTACT_FALSE_ALARM = 1e-4
"""Probability that one free-space reading of the tared sensor is taken for a contact."""
MIN_CONTACT_FORCE_N = 0.1
"""Floor of the contact threshold [N]: a noise-free sensor still needs a force to call a contact."""
MIN_TARE_SAMPLES = 3
"""Fewest readings a tare is estimated from (the noise needs a spread)."""
MIN_FREE_SPACE_STEPS = 5
"""Fewest free-space steps a logged episode needs for its own offset (:func:`episode_offsets`); with fewer it takes
the median offset of the episodes that have one."""
TARE_STEPS = 10
"""Default length of the still window [control steps] (1 s at the 10 Hz control rate of the peg tasks)."""


class TareMode(str, enum.Enum):
    """How a controller or estimator treats the F/T sensor's offset."""

    NONE = "none"
    """Raw readings; contact when the force exceeds a fixed threshold (the behaviour before tare existed)."""
    FREE_SPACE = "free-space"
    """Hold still in free space for a window, subtract the mean reading, threshold relative to the noise."""


def parse_tare_mode(name: TareMode | str | None) -> TareMode:
    """A :class:`TareMode` from its name (None: :attr:`TareMode.NONE`); InvalidInputError listing the names."""
    try:
        return TareMode(name if name is not None else TareMode.NONE)
    except ValueError:
        raise InvalidInputError(f"tare must be one of {[m.value for m in TareMode]}, got {name!r}") from None


@dataclass(frozen=True)
class Tare:
    """The offset and noise of an F/T sensor, estimated in free space.

    Attributes:
        bias: ``(6,)`` mean free-space reading, sensor frame [N, N·m].
        noise_std: ``(6,)`` per-axis standard deviation of the free-space readings [N, N·m].
        samples: number of readings the estimate is made from.
    """

    bias: np.ndarray
    noise_std: np.ndarray
    samples: int

    def apply(self, wrench: np.ndarray) -> np.ndarray:
        """Tared reading(s): ``wrench (..., 6)`` minus :attr:`bias`, sensor frame [N, N·m]."""
        wrench = np.asarray(wrench, dtype=np.float64)
        if wrench.shape[-1:] != (6,):
            raise InvalidInputError(f"a wrench has 6 components, got shape {wrench.shape}")
        return wrench - self.bias

    def contact_threshold(self) -> float:
        """Force magnitude [N] above which a tared reading is a contact:
        ``max(MIN_CONTACT_FORCE_N, σ_max · sqrt(χ²₃ quantile at 1 − CONTACT_FALSE_ALARM))``."""
        scale = float(np.max(self.noise_std[:3]))
        return max(MIN_CONTACT_FORCE_N, scale * float(np.sqrt(chi2.ppf(1.0 - CONTACT_FALSE_ALARM, df=3))))

    def in_contact(self, wrench: np.ndarray) -> np.ndarray | bool:
        """Whether the tared force of ``wrench (..., 6)`` exceeds :meth:`contact_threshold` (shape ``(...)``)."""
        touching = np.linalg.norm(self.apply(wrench)[..., :3], axis=-1) > self.contact_threshold()
        return bool(touching) if touching.ndim == 0 else touching

    def as_dict(self) -> dict:
        """JSON-compatible record: bias, noise, samples and the contact threshold."""
        return {"bias": [float(v) for v in self.bias], "noise_std": [float(v) for v in self.noise_std],
                "samples": int(self.samples), "contact_threshold_N": self.contact_threshold()}


def estimate_tare(readings: np.ndarray) -> Tare:
    """Tare from ``readings (T, 6)`` taken while the tool is still and touches nothing, sensor frame [N, N·m].

    Raises:
        InvalidInputError: fewer than :data:`MIN_TARE_SAMPLES` readings, a shape other than ``(T, 6)``, or a
            non-finite reading.
    """
    readings = np.asarray(readings, dtype=np.float64)
    if readings.ndim != 2 or readings.shape[1] != 6:
        raise InvalidInputError(f"tare readings must have shape (T, 6), got {readings.shape}")
    if readings.shape[0] < MIN_TARE_SAMPLES:
        raise InvalidInputError(f"a tare needs at least {MIN_TARE_SAMPLES} still readings, got {readings.shape[0]}")
    if not np.all(np.isfinite(readings)):
        raise InvalidInputError("tare readings contain NaN or infinity")
    return Tare(bias=readings.mean(axis=0), noise_std=readings.std(axis=0, ddof=1), samples=int(readings.shape[0]))


def episode_offsets(readings: np.ndarray, episode: np.ndarray, free: np.ndarray, n_episodes: int,
                    min_steps: int = MIN_FREE_SPACE_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Per-episode sensor offsets of logged readings, tared after the fact: the median free-space reading.

    The offline counterpart of :func:`estimate_tare` for logs with no still window: every step known to touch
    nothing (``free``; how that is known is the caller's: a physics backbone's zero force, or geometry) is a
    free-space reading ``b + n_t``, and the median over an episode's such steps estimates its ``b`` robustly.

    Args:
        readings: ``(N, 6)`` F/T readings, sensor frame [N, N·m] (untared), one per step.
        episode: ``(N,)`` the episode ``0 .. n_episodes-1`` of each step.
        free: ``(N,)`` bool, the steps in free space.
        n_episodes: number of episodes ``E``.
        min_steps: fewest free steps for an episode's own offset.

    Returns:
        ``(offsets (E, 6), own (E,))``: an episode with at least ``min_steps`` free steps gets their median
        (``own`` True); the others the median of those offsets (zeros when no episode has enough).

    Raises:
        InvalidInputError: shapes that do not match, an episode index out of range.
    """
    readings, episode = np.asarray(readings, dtype=np.float64), np.asarray(episode, dtype=np.int64)
    free = np.asarray(free, dtype=bool)
    if readings.ndim != 2 or readings.shape[1:] != (6,) or episode.shape != readings.shape[:1] \
            or free.shape != episode.shape:
        raise InvalidInputError(f"tare readings (N, 6), episodes (N,) and free mask (N,) must match, got "
                                f"{readings.shape}, {episode.shape}, {free.shape}")
    if episode.size and (episode.min() < 0 or episode.max() >= n_episodes):
        raise InvalidInputError(f"tare episode indices must lie in [0, {n_episodes}), got "
                                f"{episode.min()}..{episode.max()}")
    offsets = np.full((n_episodes, 6), np.nan)
    for e in range(n_episodes):
        mask = free & (episode == e)
        if mask.sum() >= min_steps:
            offsets[e] = np.median(readings[mask], axis=0)
    own = ~np.isnan(offsets[:, 0])
    offsets[~own] = np.median(offsets[own], axis=0) if own.any() else 0.0
    return offsets, own


def hold_command(state: BodyState, hold: BodyState) -> np.ndarray:
    """Pose-delta command ``(6,)`` [m, rad] that returns the tool from ``state`` to the pose of ``hold``.

    A zero pose delta re-targets the impedance controller at wherever the tool has got to, so a weight it does
    not compensate (a real tool heavier than its model) makes the tool creep, by the steady sag, every step; the
    still window of a tare must hold a fixed pose instead. Translation ``p_hold − p`` (world frame); rotation the
    rotation vector of ``q_hold ⊗ q⁻¹`` (world frame).
    """
    rotation = quat_to_rotvec(quat_mul(np.asarray(hold.quat), quat_conj(np.asarray(state.quat))))
    return np.concatenate([np.asarray(hold.pos) - np.asarray(state.pos), rotation])


def tare_world(world: World, steps: int = TARE_STEPS) -> Tare:
    """Hold the tool still for ``steps`` control steps and tare from the readings.

    The first step commands a zero pose delta; the pose it reaches is then held (:func:`hold_command`), so the tool
    does not creep under a weight the controller does not compensate. Call it with the tool in free space, as a
    user zeroes a real sensor before a task; the world advances by ``steps`` control steps.
    """
    if steps < MIN_TARE_SAMPLES:
        raise InvalidInputError(f"a tare needs at least {MIN_TARE_SAMPLES} still steps, got {steps}")
    result = world.step(np.zeros(6), ActionMode.POSE_DELTA)
    hold, readings = result.state, [result.wrench]
    for _ in range(steps - 1):
        result = world.step(hold_command(result.state, hold), ActionMode.POSE_DELTA)
        readings.append(result.wrench)
    return estimate_tare(np.stack(readings))


class TaredWorld:
    """A :class:`~contactkit.model.World` whose F/T readings have ``tare`` subtracted (:meth:`Tare.apply`);
    every other attribute (scene, params, reset, the simulator's own state) is the wrapped world's."""

    def __init__(self, world: World, tare: Tare):
        self._world = world
        self.tare = tare

    def __getattr__(self, name: str):
        return getattr(self._world, name)

    def step(self, command: np.ndarray, mode: ActionMode) -> StepResult:
        """The wrapped world's step, its ``wrench (6,)`` tared [N, N·m, sensor frame]."""
        result = self._world.step(command, mode)
        return replace(result, wrench=self.tare.apply(result.wrench))
