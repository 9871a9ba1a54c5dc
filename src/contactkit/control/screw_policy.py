"""The infinite-turn gripper of the bolting task (data-driven simulation paper §V-A): the impedance target turns
about the bolt axis and advances a pitch per turn, with a small axial push (``contactkit collect --task bolting
--policy screw``). Emits ``POSE_DELTA`` actions like the policies of :mod:`contactkit.control.policies`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum

import numpy as np

from contactkit.control.policies import PolicyName
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec
from contactkit.scene import Scene
from contactkit.state import BodyState

__all__ = ["ScrewConfig", "ScrewDirection", "ScrewPolicy"]


class ScrewDirection(str, Enum):
    """Which way :class:`ScrewPolicy` turns the nut: ``TIGHTEN`` moves it toward the bolt's foot (clockwise seen
    from +z for a right-hand thread), ``LOOSEN`` toward the bolt's top."""

    TIGHTEN = "tighten"
    LOOSEN = "loosen"


@dataclass(frozen=True)
class ScrewConfig:
    """The infinite-turn gripper screwing a nut (data-driven simulation paper §V-A, bolting task).

    Attributes:
        direction: :class:`ScrewDirection`.
        turn_range: ``(lo, hi)`` turn of the impedance target per control step [rad], drawn uniformly per episode.
        push_range: ``(lo, hi)`` axial offset of the target beyond the helix, along the direction of travel [m],
            drawn uniformly per episode (force ≈ stiffness_z · push: 2-6 N at the default 400 N/m).
        max_lead: most the target's turn may lead the nut's measured turn [rad] (a jammed nut is not wound up
            past half a turn, where the shortest rotation to the target would flip).
        center_gain: fraction of the lateral offset from the bolt axis and of the tilt corrected per step.
    """

    direction: ScrewDirection = ScrewDirection.TIGHTEN
    turn_range: tuple[float, float] = (0.15, 0.25)
    push_range: tuple[float, float] = (0.005, 0.015)
    max_lead: float = 0.5
    center_gain: float = 0.5


class ScrewPolicy:
    """Screw a nut along its bolt's helix: the impedance target turns about the bolt axis at a fixed rate and
    advances by the pitch per turn (``z = z0 + handedness · pitch · Δθ / 2π``), with a small axial push.

    Reads from the scene's ``meta`` (:func:`contactkit.tasks.assembly_scenes.bolting_scene`): ``pitch`` [m],
    ``handedness`` (±1) and ``axis_xy`` (the bolt axis, parallel to world z). The nut's turn is measured as the
    unwrapped yaw of its orientation relative to its start (world z).
    """

    name = PolicyName.SCREW
    mode = ActionMode.POSE_DELTA

    def __init__(self, config: ScrewConfig | None = None):
        self.config = config or ScrewConfig()
        self._start: BodyState | None = None

    def params(self) -> dict:
        """JSON-compatible parameters."""
        direction = ScrewDirection(self.config.direction).value
        return {"name": self.name.value, **asdict(self.config), "direction": direction}

    def reset(self, scene: Scene, state: BodyState, rng: np.random.Generator) -> None:
        """Read the thread from ``scene.meta`` and draw this episode's turn rate and push from ``rng``."""
        meta = scene.meta
        if meta.get("task") != "bolting" or "pitch" not in meta:
            raise InvalidInputError(f"the screw policy needs a bolting scene (meta task 'bolting' with a pitch), "
                                    f"got task {meta.get('task')!r}")
        c = self.config
        self.pitch, self.hand = float(meta["pitch"]), int(meta.get("handedness", 1))
        self.axis_xy = np.asarray(meta.get("axis_xy", (0.0, 0.0)), dtype=np.float64)
        sign = -self.hand if ScrewDirection(c.direction) is ScrewDirection.TIGHTEN else self.hand
        self.turn = sign * float(rng.uniform(*c.turn_range))
        self.push = float(rng.uniform(*c.push_range))
        self._start, self._turned, self._last_yaw = state, 0.0, _yaw(state.quat)

    def act(self, t: int, state: BodyState, wrench: np.ndarray) -> np.ndarray:
        """Action ``(6,)``: turn the target ``turn`` ahead of the step's schedule (lead clipped to ``max_lead``),
        its height on the helix at that turn plus the push, its axis on the bolt's (world frame pose delta)."""
        if self._start is None:
            raise InvalidInputError("call reset() before act()")
        c = self.config
        yaw = _yaw(state.quat)
        self._turned += (yaw - self._last_yaw + np.pi) % (2.0 * np.pi) - np.pi
        self._last_yaw = yaw
        lead = float(np.clip(self.turn * (t + 1) - self._turned, -c.max_lead, c.max_lead))
        goal_turn = self._turned + lead
        advance = self.hand * self.pitch * goal_turn / (2.0 * np.pi)
        a = np.zeros(6)
        a[:2] = c.center_gain * (self.axis_xy - state.pos[:2])
        a[2] = self._start.pos[2] + advance + np.sign(self.turn * self.hand) * self.push - state.pos[2]
        upright = quat_mul(_about_z(self._turned), self._start.quat)
        a[3:] = c.center_gain * quat_to_rotvec(quat_mul(upright, quat_conj(state.quat)))
        a[5] += lead
        return a


def _yaw(quat: np.ndarray) -> float:
    """Rotation of the body's x axis about world z [rad], in (−π, π]."""
    w, x, y, z = np.asarray(quat, dtype=np.float64)
    return float(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


def _about_z(angle: float) -> np.ndarray:
    return np.array([np.cos(angle / 2.0), 0.0, 0.0, np.sin(angle / 2.0)])
