"""Contacts between the tool and the static environment, per pair of convex pieces, through COAL.

One query (:func:`contacts`) takes the tool pose and a margin and returns every contact point within
the margin, in the :class:`contactkit.collision.Contacts` form the engine's contact problem reads
(tight-tolerance paper §II: contact nodes ``x_i`` with normals ``n_i`` and signed distances ``d_i``,
the inputs of eqs 1–3). The pipeline per query:

1. Broad phase: the world AABB of each tool piece, grown by the margin, against the (static, world)
   AABBs of the environment pieces; survivors are then culled by separating axes: a pair is dropped when
   the tool piece lies more than ``margin`` beyond one face plane of the environment piece (a lower bound
   of their distance, so no pair within the margin is lost). A peg centred in a 64-sided hole with a
   margin below its clearance leaves no pair for COAL.
2. Narrow phase: ``coal.collide`` with ``security_margin = margin`` per surviving pair (normal, signed
   distance, closest points), then the manifold rule of :mod:`contactkit.collision.manifold`: COAL's
   contact patch of the touching features, the vertices near the other piece and the closest pair, each
   with its exact gap along the pair normal (one vectorised pass over all pairs).

Friction of a contact is ``max(tool.friction, static.friction)`` (the combination :class:`Tool` states).
The environment is static: :class:`CollisionWorld` places its pieces in the world and builds their
COAL objects once. A NaN or Inf pose is refused (COAL would silently report distance 0 for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contactkit.collision.coal_shapes import CoalPiece, coal_piece, placed_piece, stack_planes, stack_vertices
from contactkit.collision.contact_set import Contacts
from contactkit.collision.manifold import (
    candidates,
    near_vertices,
    pair_patch,
    pair_query,
    select,
    surface_gaps,
    world_planes,
)
from contactkit.errors import InvalidInputError
from contactkit.scene import Scene

QUAT_NORM_TOL = 1e-6
"""Largest accepted deviation of ``|quat|`` from 1 for a tool pose (the quaternion is then normalised)."""


@dataclass(frozen=True, eq=False)
class CollisionWorld:
    """COAL objects of a scene's tool pieces (tool frame) and environment pieces (placed in the world).

    Construct with ``CollisionWorld(scene)``; every other attribute is derived once from it.

    Attributes:
        scene: the static scene.
        tool_pieces: ``T`` tool pieces, tool frame.
        env_pieces: ``E`` environment pieces, world frame, body by body in ``scene.statics`` order.
        env_body: ``(E,)`` index into ``scene.statics`` of each environment piece.
        env_piece: ``(E,)`` index of each environment piece within its body's part.
        env_friction: ``(E,)`` friction coefficient of contacts with each piece (max of tool and body).
        env_lo, env_hi: ``(E, 3)`` world AABB corners of the environment pieces [m].
        env_planes: ``(G, E, 4)`` world face planes ``m·x ≤ o`` of the environment pieces, padded, faces first.
        env_plane_rows: ``(P, 4)`` the same planes unpadded, piece after piece.
        env_plane_count: ``(E,)`` number of planes of each piece.
        env_verts, env_vmask: ``(E, W, 3)`` world vertices of the environment pieces, padded, and ``(E, W)``
            mask of the real ones.
        tool_planes: ``(T, F, 4)`` tool-frame face planes of the tool pieces, padded.
        tool_verts, tool_vmask: ``(T, V, 3)`` tool-frame vertices of the tool pieces, padded; ``(T, V)`` mask.
    """

    scene: Scene
    tool_pieces: tuple[CoalPiece, ...] = field(init=False)
    env_pieces: tuple[CoalPiece, ...] = field(init=False)
    env_body: np.ndarray = field(init=False)
    env_piece: np.ndarray = field(init=False)
    env_friction: np.ndarray = field(init=False)
    env_lo: np.ndarray = field(init=False)
    env_hi: np.ndarray = field(init=False)
    env_planes: np.ndarray = field(init=False)
    env_plane_rows: np.ndarray = field(init=False)
    env_plane_count: np.ndarray = field(init=False)
    env_verts: np.ndarray = field(init=False)
    env_vmask: np.ndarray = field(init=False)
    tool_planes: np.ndarray = field(init=False)
    tool_verts: np.ndarray = field(init=False)
    tool_vmask: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        scene = self.scene
        if not isinstance(scene, Scene):
            raise InvalidInputError(f"CollisionWorld needs a Scene, got {type(scene).__name__}")
        tool_name = scene.tool.part.name
        tool = tuple(
            coal_piece(p.vertices, p.faces, f"tool '{tool_name}' piece {i}")
            for i, p in enumerate(scene.tool.part.pieces)
        )
        env, body, index, mu = [], [], [], []
        for b, static in enumerate(scene.statics):
            if not static.part.pieces:
                raise InvalidInputError(
                    f"static {b} '{static.part.name}' has no convex pieces: decompose it before collision use"
                )
            for i, p in enumerate(static.part.pieces):
                label = f"static {b} '{static.part.name}' piece {i}"
                env.append(placed_piece(p.vertices, p.faces, static.pos, static.quat, label))
                body.append(b)
                index.append(i)
                mu.append(max(scene.tool.friction, static.friction))
        if not tool:
            raise InvalidInputError(f"tool '{tool_name}' has no convex pieces to collide")
        derived = {
            "tool_pieces": tool,
            "env_pieces": tuple(env),
            "env_body": np.array(body, dtype=np.int64),
            "env_piece": np.array(index, dtype=np.int64),
            "env_friction": np.array(mu, dtype=np.float64),
            "env_lo": np.array([p.lo for p in env]).reshape(-1, 3),
            "env_hi": np.array([p.hi for p in env]).reshape(-1, 3),
            "env_planes": np.ascontiguousarray(stack_planes(env).transpose(1, 0, 2)) if env else np.zeros((1, 0, 4)),
            "env_plane_rows": np.concatenate([p.planes for p in env]) if env else np.zeros((0, 4)),
            "env_plane_count": np.array([len(p.planes) for p in env], dtype=np.int64),
            "tool_planes": stack_planes(tool),
        }
        derived["env_verts"], derived["env_vmask"] = (
            stack_vertices(env) if env else (np.zeros((0, 1, 3)), np.zeros((0, 1), bool))
        )
        derived["tool_verts"], derived["tool_vmask"] = stack_vertices(tool)
        for name, value in derived.items():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, name, value)


@dataclass(frozen=True, eq=False)
class LabelledContacts:
    """Contacts with the pieces they come from.

    Attributes:
        contacts: the ``K`` contacts (engine form: points, normals into the tool, distances, friction).
        tool_piece: ``(K,)`` index into ``scene.tool.part.pieces``.
        env_body: ``(K,)`` index into ``scene.statics``.
        env_piece: ``(K,)`` index into ``scene.statics[env_body].part.pieces``.
    """

    contacts: Contacts
    tool_piece: np.ndarray
    env_body: np.ndarray
    env_piece: np.ndarray


def check_query(pos, quat, margin) -> tuple[np.ndarray, np.ndarray, float]:
    """Validated tool pose and margin: ``(pos (3,) [m], R (3, 3) tool → world, margin [m])``.

    Raises:
        InvalidInputError: wrong shape, NaN or Inf in the pose, a quaternion whose norm differs from 1 by
            more than ``QUAT_NORM_TOL``, or a margin that is negative or not finite.
    """
    p = np.asarray(pos, dtype=np.float64)
    q = np.asarray(quat, dtype=np.float64)
    if p.shape != (3,) or q.shape != (4,):
        raise InvalidInputError(f"tool pose must be pos (3,) and quat (4,), got {p.shape} and {q.shape}")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
        raise InvalidInputError(f"tool pose contains NaN or Inf: pos {p.tolist()}, quat {q.tolist()}")
    size = float(np.linalg.norm(q))
    if abs(size - 1.0) > QUAT_NORM_TOL:
        raise InvalidInputError(f"tool quat must be a unit quaternion (w, x, y, z); its norm is {size:.9g}")
    margin = float(margin)
    if not np.isfinite(margin) or margin < 0.0:
        raise InvalidInputError(f"contact margin must be finite and >= 0 m, got {margin!r}")
    return p, _rotation(q / size), margin


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` of one unit quaternion (w, x, y, z), from scalars (a per-query hot path)."""
    w, x, y, z = q.tolist()
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def candidate_pairs(world: CollisionWorld, rot: np.ndarray, pos: np.ndarray, margin: float) -> list[tuple[int, int]]:
    """Broad phase (module docstring, step 1): ``(tool piece, env piece)`` pairs that may be within ``margin``.

    Args:
        rot: ``(3, 3)`` tool rotation (tool → world). pos: ``(3,)`` tool position [m]. margin: [m].

    Returns:
        pairs in increasing ``(tool piece, env piece)`` order.
    """
    pairs: list[tuple[int, int]] = []
    if not world.env_pieces:
        return pairs
    for t, piece in enumerate(world.tool_pieces):
        verts = piece.vertices @ rot.T + pos
        lo, hi = verts.min(axis=0) - margin, verts.max(axis=0) + margin
        overlap = np.all((world.env_lo <= hi) & (world.env_hi >= lo), axis=1)
        near = np.flatnonzero(overlap)
        if near.size:  # separating axes: the face planes of the pieces the AABB test kept
            rows = world.env_plane_rows[np.repeat(overlap, world.env_plane_count)]
            separation = (rows[:, :3] @ verts.T).min(axis=1) - rows[:, 3]
            starts = np.cumsum(world.env_plane_count[near]) - world.env_plane_count[near]
            near = near[np.maximum.reduceat(separation, starts) <= margin]
        pairs.extend((t, int(e)) for e in near)
    return pairs


def _empty() -> LabelledContacts:
    none = np.zeros(0, dtype=np.int64)
    return LabelledContacts(Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)), none, none, none)


def labelled_contacts(world: CollisionWorld, pos, quat, margin: float) -> LabelledContacts:
    """All contacts within ``margin`` of the tool at one pose, with their pieces.

    Args:
        world: the scene's collision world.
        pos: ``(3,)`` tool frame origin in the world [m]. quat: ``(4,)`` tool orientation (w, x, y, z).
        margin: contact margin [m], ≥ 0: contacts with signed distance ``≤ margin`` are returned.

    Returns:
        :class:`LabelledContacts`; points on the tool surface (world frame) [m], unit normals from the
        environment into the tool (world frame), signed distances [m] (< 0: penetration), ordered by
        tool piece, then environment piece, then the manifold rule's candidate order
        (:mod:`contactkit.collision.manifold`).

    Raises:
        InvalidInputError: see :func:`check_query` (a NaN or Inf pose in particular).
    """
    pos, rot, margin = check_query(pos, quat, margin)
    pairs = candidate_pairs(world, rot, pos, margin)
    if not pairs:
        return _empty()
    query = pair_query(rot, pos, margin)
    patches, tool_ids, env_ids = [], [], []
    for t, e in pairs:
        patch = pair_patch(world.env_pieces[e], world.tool_pieces[t], query)
        if patch is not None:
            patches.append(patch)
            tool_ids.append(t)
            env_ids.append(e)
    if not patches:
        return _empty()
    tool_ids, env_ids = np.array(tool_ids), np.array(env_ids)
    normals = np.array([p.normal for p in patches])
    tool_verts = world.tool_verts[tool_ids] @ rot.T + pos
    tool_near, env_near = near_vertices(
        normals, tool_verts, world.tool_vmask[tool_ids], world.env_verts[env_ids], world.env_vmask[env_ids], margin
    )
    cands = candidates(patches, tool_verts, tool_near, world.env_verts[env_ids], env_near)
    tid, eid = tool_ids[cands.pair], env_ids[cands.pair]
    env_planes = world.env_planes[: world.env_plane_count[eid].max(), eid]
    tool_planes = world_planes(world.tool_planes, rot, pos)
    t_tool, t_env, hit = surface_gaps(cands.points, cands.normals, tool_planes, tid, env_planes)
    points = cands.points + np.where(hit, t_tool, 0.0)[:, None] * cands.normals
    distance = t_tool - t_env
    keep = select(cands, points, distance, hit, margin)
    contacts = Contacts(points[keep], cands.normals[keep], distance[keep], world.env_friction[eid[keep]])
    return LabelledContacts(contacts, tid[keep], world.env_body[eid[keep]], world.env_piece[eid[keep]])


def contacts(world: CollisionWorld, pos, quat, margin: float) -> Contacts:
    """The contacts of :func:`labelled_contacts` in the engine's form (:class:`contactkit.collision.Contacts`).

    Args:
        world: the scene's collision world. pos: ``(3,)`` [m], quat: ``(4,)`` (w, x, y, z): tool pose in
            the world. margin: [m], ≥ 0.

    Returns:
        ``Contacts`` with ``points (K, 3)`` [m] on the tool surface, ``normals (K, 3)`` unit, world frame,
        environment → tool, ``distances (K,)`` [m] signed, ``friction (K,)``.
    """
    return labelled_contacts(world, pos, quat, margin).contacts


def contacts_batch(world: CollisionWorld, pos, quat, margin: float) -> list[Contacts]:
    """:func:`contacts` for ``B`` tool poses ``pos (B, 3)`` [m], ``quat (B, 4)`` (a loop; one list entry each)."""
    p = np.asarray(pos, dtype=np.float64)
    q = np.asarray(quat, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or q.shape != (p.shape[0], 4):
        raise InvalidInputError(f"batched tool poses must be pos (B, 3) and quat (B, 4), got {p.shape} and {q.shape}")
    return [contacts(world, p[b], q[b], margin) for b in range(p.shape[0])]
