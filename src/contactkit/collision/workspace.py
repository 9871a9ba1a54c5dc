"""The workspace bound both worlds enforce after every control step: a tool origin that has left the scene's
workspace (``Scene.workspace_lo`` / ``workspace_hi``, world frame) by more than :data:`WORKSPACE_MARGIN_M` along
any axis is a step that went wrong (a sideways push of 1 kN–1 GN sent the engine's tool 4e8 m away and MuJoCo's
1e6 m, with no other error): the world raises :class:`~contactkit.errors.SimulationDiverged` naming the step and
the axis, and keeps the state it had before the step."""

from __future__ import annotations

import numpy as np

from contactkit.scene import Scene

WORKSPACE_MARGIN_M = 1.0
"""How far the tool origin may leave the scene's workspace [m] before a step is diverged: the reach of the UR-class
arm (0.85–1.3 m) that holds the tool over that workspace; a policy that overshoots its workspace by centimetres
(a spline's overshoot, a spring pulling it back) stays far inside."""
AXES = "xyz"


def leaves_workspace(scene: Scene, pos: np.ndarray, margin: float = WORKSPACE_MARGIN_M) -> str | None:
    """Why the tool origin at ``pos`` is out of bounds, or None.

    Args:
        scene: gives ``workspace_lo``, ``workspace_hi`` ``(3,)`` [m, world].
        pos: ``(3,)`` the tool origin [m, world]; margin: slack beyond each face [m].

    Returns:
        one line naming the first axis beyond ``workspace_lo - margin`` or ``workspace_hi + margin`` (with the
        position, the bound and the margin), or None when inside.
    """
    pos = np.asarray(pos, dtype=np.float64)
    lo, hi = scene.workspace_lo, scene.workspace_hi
    for axis in range(3):
        if pos[axis] < lo[axis] - margin or pos[axis] > hi[axis] + margin:
            side, bound = ("workspace_lo", lo[axis]) if pos[axis] < lo[axis] else ("workspace_hi", hi[axis])
            return (f"the tool origin left the scene's workspace along {AXES[axis]}: {AXES[axis]} = {pos[axis]:.6g} m, "
                    f"more than {margin:g} m beyond {side} {AXES[axis]} = {bound:g} m")
    return None
