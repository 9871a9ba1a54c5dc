"""A tiny synthetic world for the GNN tests: a box tool flying above, or sliding on, a static floor box.

Dynamics in closed form (semi-implicit Euler with exact Coulomb friction on a flat face), so the windows
are physically consistent without a simulator: in flight the tool moves under the action and gravity and
reads zero; on the floor it keeps its height and yaw, the floor pushes with ``N = -(f_z + m g_z)`` at the
bottom-face centre and friction ``μ N`` opposes sliding (or holds the tool when it can).
"""

from __future__ import annotations

import numpy as np
import torch

from contactkit.geometry.part import ConvexPiece, Part
from contactkit.models.gnn.kinematics import StepSpec
from contactkit.rotations import quat_integrate, quat_to_mat, rotvec_to_quat
from contactkit.scene import Scene, StaticBody, Tool

HALF = 0.02  # tool half extent [m]
MASS = 0.5  # [kg]
MU = 0.5
DT = 0.02  # [s]
G = 9.81
STEP = StepSpec(DT, (0.0, 0.0, -G))
SENSOR = np.array([0.0, 0.0, HALF])  # top face centre, tool frame


def box_part(half: tuple[float, float, float], name: str) -> Part:
    """A closed box mesh (8 vertices, 12 outward triangles) centred at its frame origin."""
    hx, hy, hz = half
    v = np.array([[sx * hx, sy * hy, sz * hz] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)], dtype=float)
    f = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                  [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], dtype=np.int64)
    return Part(name, v, f, (ConvexPiece(v.copy(), f.copy()),))


def box_scene(floor_pos=(0.0, 0.0, -0.02), floor_quat=(1.0, 0.0, 0.0, 0.0)) -> Scene:
    """Tool box of 4 cm on a 40 cm x 40 cm x 4 cm floor box whose top is at z = 0 (by default)."""
    inertia = MASS / 3.0 * np.diag([2 * HALF**2] * 3)
    tool = Tool(box_part((HALF,) * 3, "tool box"), MASS, np.zeros(3), inertia, friction=MU, sensor_pos=SENSOR)
    floor = StaticBody(box_part((0.2, 0.2, 0.02), "floor"), np.asarray(floor_pos), np.asarray(floor_quat), MU)
    return Scene("box on floor", tool, (floor,))


def _flight_step(s: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inertia = MASS / 3.0 * 2 * HALF**2
    v = s[7:10] + DT * (action[:3] / MASS + np.array([0, 0, -G]))
    w = s[10:13] + DT * action[3:] / inertia
    q = quat_integrate(s[3:7], w, DT)
    return np.concatenate([s[:3] + DT * v, q, v, w]), np.zeros(6)


def _slide_step(s: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    normal = -(action[2] - MASS * G)
    f_h, v_h = action[:2], s[7:9]
    speed = np.linalg.norm(v_h)
    v_try = v_h + DT * f_h / MASS
    if speed > 1e-9:
        friction = -MU * normal * v_h / speed
        v_new = v_h + DT * (f_h + friction) / MASS
        if v_new @ v_h <= 0:  # friction stops it within the step
            v_new, friction = np.zeros(2), -MASS * v_h / DT - f_h
    elif np.linalg.norm(f_h) <= MU * normal:
        v_new, friction = np.zeros(2), -f_h
    else:
        friction = -MU * normal * v_try / np.linalg.norm(v_try)
        v_new = v_h + DT * (f_h + friction) / MASS
    pos = s[:3] + DT * np.array([*v_new, 0.0])
    nxt = np.concatenate([pos, s[3:7], v_new, [0.0], np.zeros(3)])
    force = np.array([*friction, normal])  # world frame, on the tool, at the bottom-face centre
    rot = quat_to_mat(s[3:7])
    f_sensor = rot.T @ force
    lever = np.array([0.0, 0.0, -HALF]) - SENSOR  # contact point minus sensor origin, tool frame
    return nxt, np.concatenate([f_sensor, np.cross(lever, f_sensor)])


def flight_trajectory(rng: np.random.Generator, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States (steps+1, 13), actions (steps, 6), readings (steps, 6) of a tool flying 5–10 cm up."""
    q = rotvec_to_quat(rng.normal(0, 0.3, 3))
    s = np.concatenate([[*rng.uniform(-0.05, 0.05, 2), rng.uniform(0.08, 0.12)], q,
                        rng.normal(0, 0.05, 3), rng.normal(0, 0.5, 3)])
    return _roll(s, rng.normal(0, 1.0, (steps, 6)) * [1, 1, 1, 0.01, 0.01, 0.01] + [0, 0, MASS * G, 0, 0, 0],
                 _flight_step)


def slide_trajectory(rng: np.random.Generator, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States, actions and readings of a tool sliding on the floor (random yaw, push and downward force)."""
    q = rotvec_to_quat(np.array([0.0, 0.0, rng.uniform(-np.pi, np.pi)]))
    s = np.concatenate([[*rng.uniform(-0.05, 0.05, 2), HALF], q, [*rng.normal(0, 0.15, 2), 0.0], np.zeros(3)])
    actions = np.zeros((steps, 6))
    actions[:, :2] = rng.normal(0, 2.0, (steps, 2))
    actions[:, 2] = -rng.uniform(0.0, 3.0, steps)
    return _roll(s, actions, _slide_step)


def _roll(s, actions, fn):
    states, readings = [s], []
    for a in actions:
        s, r = fn(s, a)
        states.append(s)
        readings.append(r)
    return np.stack(states), actions, np.stack(readings)


def windows_from(states, actions, readings, h: int = 3) -> list[dict]:
    """Data windows (dicts of float32 tensors) of a trajectory, one per step that has ``h`` past states."""
    out = []
    for t in range(h - 1, len(actions)):
        out.append({
            "history": torch.tensor(states[t - h + 1 : t + 1], dtype=torch.float32),
            "action": torch.tensor(actions[t], dtype=torch.float32),
            "prev_action": torch.tensor(actions[max(t - 1, 0)], dtype=torch.float32),
            "wrench": torch.tensor(readings[t], dtype=torch.float32),
            "next_state": torch.tensor(states[t + 1], dtype=torch.float32),
        })
    return out


def make_windows(rng: np.random.Generator, n_flight: int, n_slide: int, h: int = 3) -> list[dict]:
    """``n_flight + n_slide`` windows, each from its own short trajectory."""
    out = []
    for _ in range(n_flight):
        out += windows_from(*flight_trajectory(rng, h), h=h)[:1]
    for _ in range(n_slide):
        out += windows_from(*slide_trajectory(rng, h), h=h)[:1]
    return out
