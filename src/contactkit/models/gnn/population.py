"""Batched input graphs of a population of tool states in one fixed scene (the planner's fast path).

An iCEM replan (Act-FIGNet paper App. C, Table IV) rolls 20 candidate action sequences out for 50 steps: 250
calls of :meth:`GnnContactModel.step` on 20 windows each, in a scene whose static meshes never move. The
general constructor (:func:`.graph.build_graphs`) builds one graph per window and then collates them; this
module builds the same batched graph in one vectorised pass from structures computed once per scene
(:class:`PopulationCache`, cached on the model):

* the static triangles, their bounding spheres, boxes and normals (the broad phase of the face edges tests
  the tool's faces of every window against them at once, culled by bounding spheres, boxes and planes
  before the exact triangle–triangle test);
* the static rows of every feature array (static bodies do not move, so their node displacements are zero,
  their object↔mesh features fixed and their world↔mesh features zero);
* the index arrays of a batch of ``B`` graphs (they depend only on ``B``).

The graph equals ``build_graphs([arrays] * B, [graph_inputs(arrays, history[i], wrench[i]) ...], config)``:
the same edges in the same order, the same features to float rounding (tests/models/gnn/test_gnn_population.py).
:func:`prune_untouched` then drops, per window, the static bodies that no face edge touches (they cannot reach
the decoders' rows): the planner's steps predict from fewer rows, the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.gnn.face_edges import (
    BRUTE_FORCE_PAIRS,
    bounding_spheres,
    edges_both_ways,
    face_interaction_edges_many,
    straddles,
    triangle_normals,
)
from contactkit.models.gnn.graph import Graph, GraphConfig, ModelVariant, reverse_sign, world_mesh_layout
from contactkit.models.gnn.kinematics import SceneArrays
from contactkit.models.gnn.triangles import triangle_pair_closest_points
from contactkit.rotations import quat_rotate, quat_to_mat
from contactkit.state import STATE_DIM

UNIT_QUAT_TOL = 1e-4
"""Largest ``| |q| − 1 |`` accepted in a history (as :func:`.kinematics.graph_inputs`)."""

MO_SIGN = np.array([-1, -1, -1, 1.0])
"""Mesh→object features are the object→mesh ones with the displacement negated."""
MW_SIGN = np.array([-1, -1, -1, 1, -1, -1, -1, 1.0])
"""Mesh→world features are the world→mesh ones with both vectors negated (without the previous action's blocks:
:func:`.graph.reverse_sign` of the config's layout in general)."""


@dataclass(frozen=True, eq=False)
class PopulationCache:
    """What every batched graph of one scene shares, computed once (:func:`population_cache`).

    Attributes:
        arrays: the scene arrays. config: the graph settings.
        static_tris: ``(Fs, 3, 3)`` static triangles, world frame [m]; static_face_ids ``(Fs, 3)`` their mesh
            ids (after the ``Vt`` tool nodes).
        static_centre, static_radius: ``(Fs, 3)``, ``(Fs,)`` their bounding spheres [m].
        static_lo, static_hi: ``(Fs, 3)`` their axis-aligned boxes [m]. static_normals: ``(Fs, 3)`` their unit normals.
        static_mesh_x, static_object_x: static rows of the node features (zero displacements, ``[0, μ, 0]``).
        static_om_x: ``(Vs, 4)`` static object→mesh features (vertex − body centroid, its norm).
        mesh_obj: ``(N,)`` body of each mesh node of one graph (0: the tool).
    """

    arrays: SceneArrays
    config: GraphConfig
    static_tris: np.ndarray
    static_face_ids: np.ndarray
    static_centre: np.ndarray
    static_radius: np.ndarray
    static_lo: np.ndarray
    static_hi: np.ndarray
    static_normals: np.ndarray
    static_mesh_x: np.ndarray
    static_object_x: np.ndarray
    static_om_x: np.ndarray
    mesh_obj: np.ndarray
    _indices: dict = field(default_factory=dict, repr=False)

    @property
    def num_tool(self) -> int:
        """Tool mesh nodes ``Vt`` per graph."""
        return len(self.arrays.tool_vertices)

    @property
    def num_mesh(self) -> int:
        """Mesh nodes ``N = Vt + Vs`` per graph."""
        return len(self.mesh_obj)

    @property
    def num_objects(self) -> int:
        """Object nodes per graph (the tool and each static body)."""
        return 1 + self.arrays.num_statics


def population_cache(arrays: SceneArrays, config: GraphConfig) -> PopulationCache:
    """The static structures of ``arrays``' scene under ``config`` (node features: eq. 10, edges: eqs. 12–14)."""
    n_tool, h = len(arrays.tool_vertices), config.history
    static_ids = arrays.static_faces + n_tool
    tris = arrays.static_vertices[arrays.static_faces]
    centre, radius = bounding_spheres(tris)
    plus = config.variant is ModelVariant.FIGNET_PLUS
    extra = (12 if config.previous_command else 6) if plus else 0
    attrs = arrays.static_attrs
    zeros_disp = np.zeros((len(arrays.static_vertices), 3 * (h - 1)))
    static_mesh_x = np.concatenate([zeros_disp, attrs[arrays.static_body], np.zeros((len(zeros_disp), extra))], 1)
    static_object_x = np.concatenate([np.zeros((len(attrs), 3 * (h - 1))), attrs, np.zeros((len(attrs), extra))], 1)
    disp = arrays.static_vertices - arrays.static_centers[arrays.static_body]
    return PopulationCache(
        arrays=arrays, config=config, static_tris=tris, static_face_ids=static_ids,
        static_centre=centre, static_radius=radius, static_lo=tris.min(axis=1), static_hi=tris.max(axis=1),
        static_normals=triangle_normals(tris),
        static_mesh_x=static_mesh_x, static_object_x=static_object_x,
        static_om_x=np.concatenate([disp, np.linalg.norm(disp, axis=-1, keepdims=True)], axis=1),
        mesh_obj=np.concatenate([np.zeros(n_tool, dtype=np.int64), 1 + arrays.static_body]),
    )


def tool_kinematics(cache: PopulationCache, history: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World positions of the tool over windows ``history`` (B, h, 13), oldest first.

    Returns:
        ``(vertices (B, h, Vt, 3), centres (B, h, 3), unit quaternions (B, h, 4))`` [m], world frame
        (:func:`.kinematics.body_points` and the centre of mass of :func:`.kinematics.graph_inputs`).

    Raises:
        InvalidInputError: wrong shape, NaN or Inf, or quaternions that are not unit norm.
    """
    h = cache.config.history
    history = np.asarray(history, dtype=np.float64)
    if history.ndim != 3 or history.shape[1:] != (h, STATE_DIM):
        raise InvalidInputError(f"population history must have shape (B, {h}, {STATE_DIM}), got {history.shape}")
    if not np.all(np.isfinite(history)):
        raise InvalidInputError("population history contains NaN or Inf")
    pos, quat = history[..., 0:3], history[..., 3:7]
    norms = np.linalg.norm(quat, axis=-1)
    if np.any(np.abs(norms - 1.0) > UNIT_QUAT_TOL):
        raise InvalidInputError(f"population history quaternions are not unit norm (|q| in [{norms.min()}, "
                                f"{norms.max()}])")
    quat = quat / norms[..., None]
    rot = quat_to_mat(quat)
    verts = np.einsum("...ij,vj->...vi", rot, cache.arrays.tool_vertices) + pos[..., None, :]
    centres = pos + quat_rotate(quat, np.broadcast_to(cache.arrays.tool_center, pos.shape))
    return verts, centres, quat


def net_wrenches(cache: PopulationCache, pos: np.ndarray, centre: np.ndarray, action: np.ndarray) -> np.ndarray:
    """Net non-contact wrenches (B, 6) about the tool centre of mass (:func:`.kinematics.net_external_wrench`).

    ``pos`` (B, 3) tool origins, ``centre`` (B, 3) centres of mass [m], ``action`` (B, 6) applied wrenches, world
    frame, torque about the tool origin [N, N·m]: ``f = f_a + m g``, ``τ_c = τ_a + (o − c) × f_a``.
    """
    f_a, tau_a = action[:, :3], action[:, 3:]
    f = f_a + cache.arrays.tool_attrs[0] * np.asarray(cache.arrays.step.gravity)
    return np.concatenate([f, tau_a + np.cross(pos - centre, f_a)], axis=1)


def population_face_edges(cache: PopulationCache, tool_now: np.ndarray) -> tuple[np.ndarray, ...]:
    """Face-interaction edges (eq. 14) of ``B`` graphs whose tools have vertices ``tool_now`` (B, Vt, 3) [m].

    Returns ``(senders (E, 3), receivers (E, 3), features (E, 34), graph (E,))``: mesh ids within each graph,
    ordered as :func:`.face_edges.face_interaction_edges_many` orders them (per graph: tool→static edges by face
    pair, then static→tool).
    """
    arrays, radius = cache.arrays, cache.config.collision_radius
    tool_faces = arrays.tool_faces
    n_b = len(tool_now)
    if len(tool_faces) * len(cache.static_tris) > BRUTE_FORCE_PAIRS:  # large meshes: the general k-d tree path
        positions = [np.concatenate([t, arrays.static_vertices]) for t in tool_now]
        edges = face_interaction_edges_many(positions, [tool_faces] * n_b, [cache.static_face_ids] * n_b, radius)
        graph = np.concatenate([np.full(e.num_edges, g, dtype=np.int64) for g, e in enumerate(edges)])
        return (*(np.concatenate([getattr(e, k) for e in edges]) for k in ("senders", "receivers", "features")),
                graph)
    ta = tool_now[:, tool_faces]  # (B, Ft, 3, 3)
    tool_normals = triangle_normals(ta.reshape(-1, 3, 3)).reshape(*ta.shape[:2], 3)  # (B, Ft, 3)
    g, ia, ib = _face_candidates(cache, ta, tool_normals)
    a, b = ta[g, ia], cache.static_tris[ib]
    dist, pa, pb = triangle_pair_closest_points(a, b)
    near = dist <= radius
    g, ia, ib, a, b, pa, pb = (x[near] for x in (g, ia, ib, a, b, pa, pb))
    senders, receivers, features = edges_both_ways(tool_faces[ia], a, pa, tool_normals[g, ia],
                                                   cache.static_face_ids[ib], b, pb, cache.static_normals[ib])
    graph = np.concatenate([g, g])
    order = np.argsort(2 * graph + np.repeat([0, 1], len(g)), kind="stable")  # per graph: a→b, then b→a
    return senders[order], receivers[order], features[order], graph[order]


def _face_candidates(cache: PopulationCache, ta: np.ndarray, tool_normals: np.ndarray) -> tuple[np.ndarray, ...]:
    """Broad phase of the tool's faces ``ta`` (B, Ft, 3, 3) [m] (unit normals ``tool_normals`` (B, Ft, 3)) against
    the static faces: the pairs ``(g, ia, ib)``, in that order, that pass the culls of
    :func:`.face_edges._candidate_pairs` (bounding spheres, boxes, each face's plane). Spheres and boxes are tested
    on all ``B·Ft·Fs`` pairs at once against the cached static ones, the planes on the survivors with the cached
    normals: the same pairs in fewer operations."""
    radius = cache.config.collision_radius
    ca, ra = bounding_spheres(ta)
    lo, hi = ta.min(axis=2)[:, :, None], ta.max(axis=2)[:, :, None]  # (B, Ft, 1, 3)
    gap = np.linalg.norm(ca[:, :, None] - cache.static_centre, axis=-1) - ra[:, :, None] - cache.static_radius
    near = gap <= radius
    near &= np.all(np.maximum(lo, cache.static_lo) - np.minimum(hi, cache.static_hi) <= radius, axis=-1)
    g, ia, ib = (i.astype(np.int64) for i in np.nonzero(near))
    a, b = ta[g, ia], cache.static_tris[ib]
    keep = straddles(a, b, radius, tool_normals[g, ia]) & straddles(b, a, radius, cache.static_normals[ib])
    return g[keep], ia[keep], ib[keep]


def _i64(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.int64)


def _f32(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.float32)


def _batch_indices(cache: PopulationCache, n_b: int) -> dict[str, torch.Tensor]:
    """Index arrays of ``n_b`` collated graphs (those of :func:`.graph.batch_graphs`), cached per ``n_b``."""
    if n_b in cache._indices:
        return cache._indices[n_b]
    n, n_obj, n_tool = cache.num_mesh, cache.num_objects, cache.num_tool
    act = cache.config.variant is ModelVariant.ACT_FIGNET
    graph = np.arange(n_b)[:, None]
    mesh = (graph * n + np.arange(n)).ravel()
    obj = (graph * n_obj + cache.mesh_obj).ravel()
    tool = (graph * n + np.arange(n_tool)).ravel()
    out = {"om_index": np.stack([obj, mesh]), "mo_index": np.stack([mesh, obj]), "tool_nodes": tool,
           "tool_graph": np.repeat(np.arange(n_b), n_tool), "tool_om": tool}
    if act:
        world = graph * 2 * n_obj
        senders = np.concatenate([world + 2 * cache.mesh_obj, world + 2 * cache.mesh_obj + 1], axis=1).ravel()
        receivers = np.concatenate([graph * n + np.arange(n)] * 2, axis=1).ravel()
        out.update(wm_index=np.stack([senders, receivers]), mw_index=np.stack([receivers, senders]),
                   tool_mw_force=(graph * 2 * n + np.arange(n_tool)).ravel(),
                   tool_mw_torque=(graph * 2 * n + n + np.arange(n_tool)).ravel())
    else:
        empty = np.zeros((2, 0), dtype=np.int64)
        out.update(wm_index=empty, mw_index=empty, tool_mw_force=np.zeros(0, dtype=np.int64),
                   tool_mw_torque=np.zeros(0, dtype=np.int64))
    cache._indices[n_b] = {k: _i64(v) for k, v in out.items()}
    return cache._indices[n_b]


def _displacements(hist: np.ndarray) -> np.ndarray:
    """Eq. 10's displacements ``(B, M, 3(h−1))``, most recent first, of positions ``hist`` (B, h, M, 3)."""
    steps = (hist[:, 1:] - hist[:, :-1])[:, ::-1]  # (B, h-1, M, 3)
    return np.moveaxis(steps, 1, 2).reshape(hist.shape[0], hist.shape[2], -1)


def _world_features(cache: PopulationCache, wrench: np.ndarray, disp: np.ndarray,
                    prev: np.ndarray | None) -> np.ndarray:
    """World→mesh features (B, 2N, 8 or 12) of eqs. 12–13 (and the previous net wrenches ``prev`` (B, 6) when
    given, :data:`.graph.PREVIOUS_BLOCKS`): force edges then torque edges; zero on static nodes."""
    n_b, n, n_tool = len(wrench), cache.num_mesh, cache.num_tool
    out = np.zeros((n_b, 2 * n, 8 if prev is None else 12))
    rows = [(slice(0, n_tool), 0, wrench[:, None, :3]), (slice(n, n + n_tool), 0, wrench[:, None, 3:]),
            (slice(n, n + n_tool), 4, disp)]
    if prev is not None:
        rows += [(slice(0, n_tool), 8, prev[:, None, :3]), (slice(n, n + n_tool), 8, prev[:, None, 3:])]
    for nodes, col, vec in rows:
        out[:, nodes, col:col + 3] = vec
        out[:, nodes, col + 3:col + 4] = np.linalg.norm(vec, axis=-1, keepdims=True)
    return out


def population_graph(cache: PopulationCache, history: np.ndarray, action: np.ndarray,
                     prev_action: np.ndarray | None = None) -> Graph:
    """The batched input graph of ``B`` windows of the cached scene (paper §III-C.1, eqs. 10–14).

    Args:
        cache: the scene's :class:`PopulationCache`.
        history: ``(B, h, 13)`` tool states, oldest first, world frame.
        action: ``(B, 6)`` wrenches applied to the tool, world frame, torque about the tool origin [N, N·m]
            (for pose-delta models the impedance controller's, :func:`.actions.action_wrench`).
        prev_action: ``(B, 6)`` the same for the previous step's action (needed with
            ``GraphConfig.previous_command``, ignored without).

    Returns:
        the graph :func:`.graph.build_graphs` builds from the same windows (same edges, same order).

    Raises:
        InvalidInputError: wrong shapes, NaN, or non-unit quaternions.
    """
    verts, centres, _ = tool_kinematics(cache, history)
    n_b = len(verts)
    action = np.asarray(action, dtype=np.float64)
    if action.shape != (n_b, 6) or not np.all(np.isfinite(action)):
        raise InvalidInputError(f"population actions must be finite with shape ({n_b}, 6), got {action.shape}")
    origin = np.asarray(history, dtype=np.float64)[:, -1, 0:3]
    wrench = net_wrenches(cache, origin, centres[:, -1], action)
    prev = _previous_wrenches(cache, origin, centres[:, -1], prev_action)
    plus = cache.config.variant is ModelVariant.FIGNET_PLUS
    tool_attrs = np.broadcast_to(cache.arrays.tool_attrs, (n_b, cache.num_tool, 3))
    node_action = wrench if prev is None else np.concatenate([wrench, prev], axis=-1)
    width = node_action.shape[-1]
    tool_x = [_displacements(verts), tool_attrs] + ([np.broadcast_to(node_action[:, None],
                                                                     (n_b, cache.num_tool, width))] if plus else [])
    obj_x = [_displacements(centres[:, :, None]), tool_attrs[:, :1]] + ([node_action[:, None]] if plus else [])
    mesh_x = np.concatenate([np.concatenate(tool_x, axis=-1),
                             np.broadcast_to(cache.static_mesh_x, (n_b, *cache.static_mesh_x.shape))], axis=1)
    object_x = np.concatenate([np.concatenate(obj_x, axis=-1),
                               np.broadcast_to(cache.static_object_x, (n_b, *cache.static_object_x.shape))], axis=1)
    disp = verts[:, -1] - centres[:, -1, None]
    om_x = np.concatenate([np.concatenate([disp, np.linalg.norm(disp, axis=-1, keepdims=True)], axis=-1),
                           np.broadcast_to(cache.static_om_x, (n_b, *cache.static_om_x.shape))], axis=1)
    senders, receivers, face_x, face_graph = population_face_edges(cache, verts[:, -1])
    shift = (face_graph * cache.num_mesh)[:, None]
    idx = _batch_indices(cache, n_b)
    if plus:
        world_x, wm_x = np.zeros((0, 2)), np.zeros((0, 8))
    else:
        world_x = np.tile(np.eye(2), (n_b * cache.num_objects, 1))
        wm_x = _world_features(cache, wrench, disp, prev)
        wm_x = wm_x.reshape(-1, wm_x.shape[-1])
    om_x = om_x.reshape(-1, 4)
    mw_x = wm_x * (MW_SIGN if wm_x.shape[-1] == len(MW_SIGN) else reverse_sign(world_mesh_layout(cache.config)))
    return Graph(
        mesh_x=_f32(mesh_x.reshape(-1, mesh_x.shape[-1])), object_x=_f32(object_x.reshape(-1, object_x.shape[-1])),
        world_x=_f32(world_x), om_index=idx["om_index"], om_x=_f32(om_x), mo_index=idx["mo_index"],
        mo_x=_f32(om_x * MO_SIGN), wm_index=idx["wm_index"], wm_x=_f32(wm_x), mw_index=idx["mw_index"],
        mw_x=_f32(mw_x), face_senders=_i64(senders + shift), face_receivers=_i64(receivers + shift),
        face_x=_f32(face_x), tool_nodes=idx["tool_nodes"], tool_graph=idx["tool_graph"], tool_om=idx["tool_om"],
        tool_mw_force=idx["tool_mw_force"], tool_mw_torque=idx["tool_mw_torque"], num_graphs=n_b,
    )


def _previous_wrenches(cache: PopulationCache, origin: np.ndarray, centre: np.ndarray,
                       prev_action: np.ndarray | None) -> np.ndarray | None:
    """Net wrenches ``(B, 6)`` of the previous actions (:func:`net_wrenches`) when the config reads them, else None."""
    if not cache.config.previous_command:
        return None
    prev_action = None if prev_action is None else np.asarray(prev_action, dtype=np.float64)
    if prev_action is None or prev_action.shape != origin.shape[:1] + (6,) or not np.all(np.isfinite(prev_action)):
        raise InvalidInputError(f"a model with GraphConfig.previous_command needs finite previous actions of shape "
                                f"({len(origin)}, 6), got {None if prev_action is None else prev_action.shape}")
    return net_wrenches(cache, origin, centre, prev_action)


def prune_untouched(cache: PopulationCache, graph: Graph) -> Graph:
    """``graph`` without, in each window, the static bodies that none of its face edges touches.

    Face-interaction edges are the only edges between the tool and a static body (object↔mesh and world↔mesh
    edges stay within a body), so an untouched body's nodes and edges send nothing, through any number of
    message-passing steps, to the tool's nodes and mesh→world edges that the decoders read: the predictions of
    the pruned graph equal those of the full one (to float32 rounding), for a fraction of the rows in free space
    (every static body dropped) and in a slot (the table under it dropped).

    Args:
        cache: the scene's :class:`PopulationCache`.
        graph: ``B`` windows of the scene in the uniform layout of :func:`population_graph` (and of
            :func:`.graph.build_graphs`): per window ``N`` mesh nodes (tool first), one object→mesh edge per
            mesh node in mesh order, world nodes ``(force, torque)`` per body, world→mesh edges the ``N`` force
            then the ``N`` torque edges.
    """
    n_b, n, n_obj = graph.num_graphs, cache.num_mesh, cache.num_objects
    if graph.mesh_x.shape[0] != n_b * n or graph.object_x.shape[0] != n_b * n_obj:
        raise InvalidInputError(f"prune_untouched needs the full layout of {n_b} windows of this scene "
                                f"({n} mesh and {n_obj} object nodes each), got {graph.mesh_x.shape[0]} and "
                                f"{graph.object_x.shape[0]}")
    mesh_obj = torch.as_tensor(cache.mesh_obj)
    ends = torch.cat([graph.face_senders.reshape(-1), graph.face_receivers.reshape(-1)])
    touched = torch.zeros(n_b, n_obj, dtype=torch.bool)
    touched[:, 0] = True  # the tool
    touched[ends // n, mesh_obj[ends % n]] = True
    mesh_keep = touched.gather(1, mesh_obj.expand(n_b, n)).reshape(-1)  # also the object↔mesh edges' mask
    obj_keep = touched.reshape(-1)
    mesh_map, obj_map = torch.cumsum(mesh_keep, 0) - 1, torch.cumsum(obj_keep, 0) - 1
    fields = {"mesh_x": graph.mesh_x[mesh_keep], "object_x": graph.object_x[obj_keep],
              "om_index": torch.stack([obj_map[graph.om_index[0, mesh_keep]], mesh_map[graph.om_index[1, mesh_keep]]]),
              "om_x": graph.om_x[mesh_keep],
              "mo_index": torch.stack([mesh_map[graph.mo_index[0, mesh_keep]], obj_map[graph.mo_index[1, mesh_keep]]]),
              "mo_x": graph.mo_x[mesh_keep], "face_senders": mesh_map[graph.face_senders],
              "face_receivers": mesh_map[graph.face_receivers], "face_x": graph.face_x,
              "tool_nodes": mesh_map[graph.tool_nodes], "tool_graph": graph.tool_graph,
              "tool_om": mesh_map[graph.tool_om]}
    if graph.wm_index.shape[1] == 0:  # FIGNet+: no world nodes
        fields.update({k: getattr(graph, k) for k in ("world_x", "wm_index", "wm_x", "mw_index", "mw_x",
                                                      "tool_mw_force", "tool_mw_torque")})
    else:
        world_keep = obj_keep.repeat_interleave(2)
        wm_keep = mesh_keep.reshape(n_b, 1, n).expand(n_b, 2, n).reshape(-1)
        world_map, wm_map = torch.cumsum(world_keep, 0) - 1, torch.cumsum(wm_keep, 0) - 1
        wm = torch.stack([world_map[graph.wm_index[0, wm_keep]], mesh_map[graph.wm_index[1, wm_keep]]])
        fields.update(world_x=graph.world_x[world_keep], wm_index=wm, wm_x=graph.wm_x[wm_keep],
                      mw_index=wm.flip(0), mw_x=graph.mw_x[wm_keep], tool_mw_force=wm_map[graph.tool_mw_force],
                      tool_mw_torque=wm_map[graph.tool_mw_torque])
    return Graph(**fields, num_graphs=n_b)
