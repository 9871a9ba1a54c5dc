"""Which static bodies the engine collides through a learned depth network, and their kernel arrays.

A :class:`~contactkit.scene.StaticBody` whose ``depth_model`` names a depth checkpoint or a piecewise set's
manifest (:func:`contactkit.depth.load_depth_nets`, refused when its mesh hash differs from the body's part) is
collided by :func:`._kernels_depthnet.depth_contacts` — every surface node of the tool against the network
(tight-tolerance paper §III-A) — wherever the network answers (inside its training domain), and through its
convex pieces elsewhere (:func:`piece_networks`; a point outside the domain would otherwise see no contact at
all); its pieces also serve MuJoCo and the tunnelling guard. Statics without a network keep the convex-piece
path (:mod:`._kernels_contacts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from contactkit.engine._kernels_depthnet import (
    FRAME_AXIS,
    FRAME_BASIS,
    FRAME_BINORMAL,
    FRAME_ORIGIN,
    FRAME_REF,
    KIND_CARTESIAN,
    KIND_CYLINDRICAL,
    KIND_HELICAL,
    MAX_FEATURES,
    SCALAR_HAND,
    SCALAR_PITCH,
    SCALAR_R_EPS,
    SCALAR_SCALE,
    DepthSet,
    empty_depth_set,
)
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene

if TYPE_CHECKING:
    from contactkit.depth import DepthNet, DepthNetSet

_KIND = {"cartesian": KIND_CARTESIAN, "cylindrical": KIND_CYLINDRICAL, "helical": KIND_HELICAL}
"""Kernel code of each :class:`contactkit.depth.Coordinates` value."""


def _kind(net: DepthNet) -> int:
    return _KIND[getattr(net.coordinates, "value", net.coordinates)]


def scene_depth_nets(scene: Scene) -> dict[int, DepthNetSet]:
    """The depth networks of a scene's statics: ``{static index: net set}`` for each static whose ``depth_model``
    is set (loaded and checked against the static's part by :func:`contactkit.depth.load_depth_nets`; a single
    network is a set of one piece)."""
    nets = {}
    for b, static in enumerate(scene.statics):
        path = static.depth_model
        if path is not None:
            from contactkit.depth import load_depth_nets  # torch: imported only by scenes that use a network

            nets[b] = load_depth_nets(path, static.part)
    return nets


def piece_networks(nets: Mapping[int, DepthNet | DepthNetSet], env_body: np.ndarray) -> np.ndarray:
    """``(E,)`` int64: for each environment piece (``env_body``: its static's index), the index of its static's
    first network in :func:`depth_set`'s order (statics by index, each set's pieces along its axis), or -1 when
    its static has none. The engine collides such a piece only outside every network's domain of that static
    (:func:`._kernels_depthnet.inside_domain`, :mod:`._kernels_contacts`)."""
    first, count = {}, 0
    for b in sorted(nets):
        first[b], count = count, count + len(nets[b].pieces)
    return np.array([first.get(int(b), -1) for b in env_body], dtype=np.int64)


def _r_eps() -> float:
    from contactkit.depth import R_EPS

    return float(R_EPS)


def _domain_box(net: DepthNet, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World bounding box ``lo, hi (3,)`` [m] of the points whose features lie in the net's domain."""
    origin, axis = frame[FRAME_ORIGIN], frame[FRAME_AXIS]
    lo, hi = np.asarray(net.feature_lo, float), np.asarray(net.feature_hi, float)
    if _kind(net) == KIND_CARTESIAN:
        basis = frame[FRAME_BASIS:FRAME_BASIS + 3]  # rows: part axes in the world
        centre = origin + basis.T @ (0.5 * (lo + hi))
        half = np.abs(basis.T) @ (0.5 * (hi - lo))
        return centre - half, centre + half
    z_lo, z_hi = (lo[1], hi[1]) if _kind(net) == KIND_CYLINDRICAL else (lo[3], hi[3])
    ends = np.stack([origin + z_lo * axis, origin + z_hi * axis])
    radius = float(hi[0]) * np.sqrt(np.clip(1.0 - axis**2, 0.0, 1.0))
    return ends.min(axis=0) - radius, ends.max(axis=0) + radius


def _placed(net: DepthNet, pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(frame (7, 3), scalars (4,))`` of a net placed at a static's pose (kernel rows ``FRAME_*``, ``SCALAR_*``)."""
    axis, ref = rot @ np.asarray(net.axis, float), rot @ np.asarray(net.ref, float)
    frame = np.zeros((7, 3))
    frame[FRAME_ORIGIN] = pos + rot @ np.asarray(net.origin, float)
    frame[FRAME_AXIS], frame[FRAME_REF], frame[FRAME_BINORMAL] = axis, ref, np.cross(axis, ref)
    frame[FRAME_BASIS:FRAME_BASIS + 3] = rot.T
    scalars = np.zeros(4)
    scalars[SCALAR_PITCH] = float(net.pitch) if _kind(net) == KIND_HELICAL else 1.0
    scalars[SCALAR_HAND] = float(net.handedness)
    scalars[SCALAR_R_EPS] = _r_eps()
    scalars[SCALAR_SCALE] = float(net.depth_scale)
    return frame, scalars


def depth_set(scene: Scene, nets: Mapping[int, DepthNet | DepthNetSet], first_piece: int) -> DepthSet:
    """The kernel arrays (:class:`~._kernels_depthnet.DepthSet`) of ``nets`` (``{static index: net or set}``) placed
    at their statics' world poses, with the tool's mesh vertices (tool frame [m]) as nodes; the friction of a
    body's contacts is ``max(tool.friction, static.friction)`` (as :class:`contactkit.collision.CollisionWorld`).

    ``first_piece``: the key number of the first network (the convex pieces' count, so keys stay distinct).

    Raises:
        InvalidInputError: an index that is no static of the scene, or networks of different hidden sizes.
    """
    for b in nets:
        if not 0 <= b < len(scene.statics):
            raise InvalidInputError(f"depth network for static {b}: the scene has {len(scene.statics)} statics")
    placed = [(net, scene.statics[b].pos, scene.statics[b].quat, max(scene.tool.friction, scene.statics[b].friction))
              for b, net in sorted(nets.items())]
    return placed_depth_set(placed, scene.tool.part.vertices, first_piece)


def placed_depth_set(placed: Sequence[tuple[DepthNet | DepthNetSet, np.ndarray, np.ndarray, float]],
                     nodes: np.ndarray, first_piece: int = 0) -> DepthSet:
    """The :class:`~._kernels_depthnet.DepthSet` of networks placed in the world.

    Args:
        placed: per static ``(net, pos (3,) [m], quat (4,) wxyz, friction)``: its network or piecewise set (each
            piece one kernel network, chained by ``next_net`` / ``prev_net``), its static part's world pose and the
            friction coefficient of its contacts.
        nodes: ``(N, 3)`` the tool's surface nodes, tool frame [m] (duplicates are dropped).
        first_piece: key number of the first network.
    """
    if not placed:
        return empty_depth_set()
    chains = [len(net.pieces) for net, *_ in placed]
    placed = [(piece, pos, quat, friction) for net, pos, quat, friction in placed for piece in net.pieces]
    hidden = {net.weights[0].shape[0] for net, *_ in placed}
    if len(hidden) != 1:
        raise InvalidInputError(f"depth networks of one scene must share their hidden size, got {sorted(hidden)}")
    n_hidden = hidden.pop()
    if n_hidden % 2:
        raise InvalidInputError(f"the depth kernel needs an even hidden size, got {n_hidden}")
    arrays = {name: [] for name in ("kind", "frame", "scalars", "lo", "hi", "box_lo", "box_hi", "w0", "b0",
                                    "w1t", "b1", "w1", "w2", "b2", "friction")}
    for net, pos, quat, friction in placed:
        frame, scalars = _placed(net, np.asarray(pos, dtype=np.float64), quat_to_mat(np.asarray(quat, np.float64)))
        k = len(net.feature_lo)
        lo, hi = -np.ones(MAX_FEATURES), np.ones(MAX_FEATURES)
        lo[:k], hi[:k] = net.feature_lo, net.feature_hi
        w0, b0, w1, b1, w2, b2 = (np.asarray(w, dtype=np.float64) for w in net.weights)
        w0_pad = np.zeros((n_hidden, MAX_FEATURES))
        w0_pad[:, :k] = w0
        box = _domain_box(net, frame)
        for name, value in (("kind", _kind(net)), ("frame", frame), ("scalars", scalars), ("lo", lo),
                            ("hi", hi), ("box_lo", box[0]), ("box_hi", box[1]), ("w0", w0_pad), ("b0", b0),
                            ("w1t", np.ascontiguousarray(w1.T)), ("b1", b1), ("w1", w1), ("w2", w2.reshape(-1)),
                            ("b2", float(b2.reshape(-1)[0])), ("friction", float(friction))):
            arrays[name].append(value)
    nodes = np.unique(np.asarray(nodes, dtype=np.float64).reshape(-1, 3), axis=0)
    stacked = {name: np.ascontiguousarray(np.array(v)) for name, v in arrays.items()}
    stacked["kind"] = stacked["kind"].astype(np.int64)
    next_net, prev_net = np.full(len(placed), -1, np.int64), np.full(len(placed), -1, np.int64)
    start = 0
    for n in chains:
        next_net[start:start + n - 1] = np.arange(start + 1, start + n)
        prev_net[start + 1:start + n] = np.arange(start, start + n - 1)
        start += n
    return DepthSet(nodes=np.ascontiguousarray(nodes), node_lo=nodes.min(axis=0), node_hi=nodes.max(axis=0),
                    key_piece=np.arange(first_piece, first_piece + len(placed), dtype=np.float64),
                    next_net=next_net, prev_net=prev_net, **stacked)
