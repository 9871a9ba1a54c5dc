"""Configurations near the C-space boundary and their exact collision labels (tight-tolerance paper §IV-A data).

:func:`sample_poses` draws tool poses around the nominal fit; :func:`label_poses` gives each its deepest exact node
penetration: the exact signed distance of the static mesh (:func:`contactkit.geometry.signed_distance.
signed_distance`) at the tool nodes that can be the deepest given the depth network's error (every node without a
depth network). A configuration is in collision when that penetration exceeds :data:`COLLISION_TOL`.
"""

from __future__ import annotations

import math

import numpy as np

from contactkit.assembly.task import AssemblyKind, AssemblyTask
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat

COLLISION_TOL = 1e-6
"""[m] a node deeper than this inside the static part makes the configuration a collision."""
LABEL_SLACK = {AssemblyKind.PEG_IN_HOLE: 5e-5, AssemblyKind.BOLTING: 2.5e-4}
"""[m] bound used for the depth networks' error when picking the nodes to label exactly (:func:`label_poses`):
about twice the largest error measured over their bands (hole 17.3 µm, bolt 105 µm with the single network; the
piecewise set that replaced it measured 30.3 µm, so the bound is looser than it needs to be, never tighter;
models/*/README)."""
PERTURBATION_RADIUS = 2.0
"""Sampled perturbations reach this many times their normalising limits (:func:`sample_poses`)."""
AXIAL_PLAY = 0.75
"""Axial play of the nut on its bolt as a fraction of the radial clearance (measured on the M48 pair: free up to
0.15 mm of axial and 0.2 mm of lateral offset from the nominal fit)."""
FIRST_NODES = 8
"""Nodes of smallest learned depth checked first when labelling a pose (:func:`label_poses`)."""
MIN_ENGAGED = 2e-3
"""[m] engaged length floor when scaling the sampled tilt."""


def _random_unit_xy(rng: np.random.Generator, n: int) -> np.ndarray:
    ang = rng.uniform(-math.pi, math.pi, n)
    return np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], 1)


def _axis_angle_quat(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    half = 0.5 * angle
    return np.concatenate([np.cos(half)[:, None], np.sin(half)[:, None] * axis], 1)


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a.T
    w2, x2, y2, z2 = b.T
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], 1)


def sample_poses(task: AssemblyTask, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` tool poses ``(pos (n, 3) [m], quat (n, 4) wxyz)`` concentrated near the C-space boundary.

    Base pose: the peg's tip centre inserted to a random depth (from below the floor to above the opening) and
    turned at random about its axis; the nut screwed to a random angle along the whole bolt (the nominal fit of
    ``contactkit.geometry.fasteners.screw_pose``). Perturbation: a random direction ``u`` in the space of lateral
    offset (2), tilt about a horizontal axis through the body origin (2) and, for the nut, axial offset (1), each
    normalised by its own limit (lateral: the clearance; tilt: clearance / engaged length, for the nut at most
    the axial play over the thread radius; axial: the axial play), scaled by ``r ~ U(0, PERTURBATION_RADIUS)``:
    about half the samples land on each side of the boundary (``r ≈ 1``).
    """
    if n < 1:
        raise InvalidInputError(f"need n >= 1 configurations, got {n!r}")
    c, top = task.clearance, task.axis_height
    ez = np.array([0.0, 0.0, 1.0])
    bolting = task.kind is AssemblyKind.BOLTING
    if not bolting:
        z = rng.uniform(-c, top + 2e-3, n)
        spin = rng.uniform(-math.pi, math.pi, n)
        tilt_limit = c / np.maximum(top - z, MIN_ENGAGED)
    else:
        hand = int(task.tool.meta.get("handedness", 1))
        turns = rng.uniform(0.0, (top + 2e-3) / task.pitch, n)
        spin, z = 2.0 * math.pi * turns * hand, task.pitch * turns
        engaged = np.clip(top - z, MIN_ENGAGED, float(task.tool.meta.get("thickness", top)))
        tilt_limit = np.minimum(c / engaged, AXIAL_PLAY * c / float(task.tool.meta.get("major_radius", 1.0)))
    u = rng.normal(size=(n, 5 if bolting else 4))
    u *= (rng.uniform(0.0, PERTURBATION_RADIUS, n) / np.linalg.norm(u, axis=1))[:, None]
    tilt_vec = np.concatenate([u[:, 2:4], np.zeros((n, 1))], 1) * tilt_limit[:, None]
    angle = np.linalg.norm(tilt_vec, axis=1)
    axis = tilt_vec / np.maximum(angle, 1e-300)[:, None]
    quat = _quat_mul(_axis_angle_quat(axis, angle), _axis_angle_quat(np.tile(ez, (n, 1)), spin))
    pos = np.concatenate([u[:, :2] * c, z[:, None]], 1)
    if bolting:
        pos[:, 2] += u[:, 4] * AXIAL_PLAY * c
    return pos, quat / np.linalg.norm(quat, axis=1, keepdims=True)


def _exact(task: AssemblyTask, world: np.ndarray, owner: np.ndarray, node: np.ndarray, out: np.ndarray) -> None:
    """``out[owner] = max(out[owner], -d)`` with ``d`` the exact signed distance of ``world[owner, node]``."""
    from contactkit.geometry.signed_distance import signed_distance

    if len(owner):
        np.maximum.at(out, owner, -signed_distance(task.static, world[owner, node]))


def label_poses(task: AssemblyTask, pos: np.ndarray, quat: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Exact node penetration ``(N,)`` [m] (``≥ 0``) of tool poses ``pos (N, 3)``, ``quat (N, 4)``: the deepest
    over the nodes that decide the label (``> COLLISION_TOL``: in collision).

    With a depth network (``d`` learned, ``ε`` = :data:`LABEL_SLACK`, at least its error): first the
    :data:`FIRST_NODES` nodes of smallest ``d`` below ``ε``; a pose not found in collision then gets every node
    that can be its deepest, ``d < min(ε, d_min + 2ε)``. Nodes with ``d ≥ ε`` cannot penetrate. The value is the
    exact deepest penetration unless a first node already penetrates (then a lower bound of it). Without a depth
    network, every node.
    """
    from contactkit.assembly.detection import learned_depth

    pos, quat = np.asarray(pos, np.float64).reshape(-1, 3), np.asarray(quat, np.float64).reshape(-1, 4)
    rot = quat_to_mat(quat)
    out = np.zeros(len(pos))
    eps = LABEL_SLACK[task.kind]
    for start in range(0, len(pos), chunk):
        end = min(start + chunk, len(pos))
        world = np.einsum("nc,kdc->knd", task.nodes, rot[start:end]) + pos[start:end, None, :]
        part = out[start:end]
        if task.depth_net is None:
            _exact(task, world, *np.nonzero(np.ones(world.shape[:2], dtype=bool)), part)
            continue
        d = learned_depth(task, world.reshape(-1, 3), eps)[0].reshape(world.shape[:2])
        first = np.argsort(d, axis=1)[:, :FIRST_NODES]
        owner = np.repeat(np.arange(end - start), first.shape[1])
        pick = d[owner, first.reshape(-1)] < eps
        _exact(task, world, owner[pick], first.reshape(-1)[pick], part)
        rest = d < np.minimum(eps, d.min(axis=1, keepdims=True) + 2.0 * eps)
        rest[part > COLLISION_TOL] = False
        rest[np.arange(end - start)[:, None], first] = False
        _exact(task, world, *np.nonzero(rest), part)
    return np.maximum(out, 0.0)
