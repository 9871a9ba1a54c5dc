"""Graph construction Φ_con of Act-FIGNet and FIGNet+ (paper §III-C.1, appendix V-A, eqs. 10–14).

Nodes: mesh nodes (tool vertices first, then the static vertices), one object node per body (tool first),
and for Act-FIGNet a force and a torque world node per body. Edges: object↔mesh, world↔mesh (Act-FIGNet)
and face-interaction mesh→mesh edges between the tool and the environment. Features are world-frame
vectors followed by their norms, so a rotation of the whole scene rotates every vector block and leaves
the rest unchanged (the ``*_LAYOUT`` tuples say which block is which).

Deviation noted: eq. 10 lists ``h`` displacements, which needs ``h + 1`` positions; a window holds ``h``
states, so a node carries the ``h − 1`` displacements they define (2 for the paper's ``h = 3``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.face_edges import (
    FACE_FEATURE_LAYOUT,
    FaceEdges,
    face_interaction_edges,
    face_interaction_edges_many,
)
from contactkit.models.gnn.kinematics import GraphInputs, SceneArrays

Layout = tuple[tuple[str, int, bool], ...]


class ModelVariant(enum.Enum):
    """Which graph and network: the paper's model, or the action-augmented FIGNet baseline (§IV-B.b)."""

    ACT_FIGNET = "act_fignet"
    FIGNET_PLUS = "fignet_plus"


class NodeType(enum.Enum):
    """Node sets of the heterogeneous graph (paper §III-C.1); the value is the key of the latents."""

    MESH = "mesh"
    """V^M: mesh vertices, tool vertices first."""
    OBJECT = "object"
    """V^O: one node per body at its centre of mass, tool first."""
    WORLD = "world"
    """V^W: a force and a torque virtual world node per body (Act-FIGNet only)."""


class EdgeType(enum.Enum):
    """Edge sets of the heterogeneous graph (paper §III-C.1).

    The value is the edge set's key: :class:`Graph` fields ``{value}_index``/``{value}_x`` (face edges:
    ``face_senders``, ``face_receivers``, ``face_x``) and the parameter names of the processor's blocks.
    The order is the order of the blocks' parameters in a checkpoint's optimizer state: do not reorder.
    """

    OBJECT_MESH = "om"
    """E^{O→M}: object node to each of its mesh nodes (displacement vertex − CoM)."""
    MESH_OBJECT = "mo"
    """E^{M→O}: the reverse direction (negated displacement)."""
    FACE = "face"
    """E^{M↔M}: face-interaction mesh–mesh edges between colliding tool/environment faces (app. V-A.2.b)."""
    WORLD_MESH = "wm"
    """E^{W→M}: action edges, applied force/torque from the world nodes to the mesh nodes (eqs. 12–13)."""
    MESH_WORLD = "mw"
    """E^{M→W}: reaction edges from the mesh nodes to the world nodes; the F/T decoder reads them (eq. 6)."""

    @property
    def sender(self) -> NodeType:
        """Node type at the tail of the edges (face edges: mesh nodes of the sender face)."""
        return _EDGE_ENDS[self][0]

    @property
    def receiver(self) -> NodeType:
        """Node type the messages of these edges are summed into."""
        return _EDGE_ENDS[self][1]


_EDGE_ENDS = {
    EdgeType.OBJECT_MESH: (NodeType.OBJECT, NodeType.MESH), EdgeType.MESH_OBJECT: (NodeType.MESH, NodeType.OBJECT),
    EdgeType.FACE: (NodeType.MESH, NodeType.MESH), EdgeType.WORLD_MESH: (NodeType.WORLD, NodeType.MESH),
    EdgeType.MESH_WORLD: (NodeType.MESH, NodeType.WORLD),
}
_WORLD_EDGES = (EdgeType.WORLD_MESH, EdgeType.MESH_WORLD)


def node_types(variant: ModelVariant) -> tuple[NodeType, ...]:
    """The node sets a variant's graph has, in enum order (FIGNet+ has no world nodes)."""
    return tuple(t for t in NodeType if t is not NodeType.WORLD or ModelVariant(variant) is ModelVariant.ACT_FIGNET)


def edge_types(variant: ModelVariant) -> tuple[EdgeType, ...]:
    """The edge sets a variant's graph has, in enum order (FIGNet+ has no world↔mesh edges)."""
    act = ModelVariant(variant) is ModelVariant.ACT_FIGNET
    return tuple(t for t in EdgeType if act or t not in _WORLD_EDGES)


@dataclass(frozen=True)
class GraphConfig:
    """Graph construction settings.

    Attributes:
        variant: Act-FIGNet (world nodes and edges) or FIGNet+ (action in node features).
        history: number of tool states ``h`` a graph reads (paper: 3), >= 2.
        collision_radius: faces closer than this interact [m] (paper appendix V-B: 1 mm or 10 mm).
        action_mode: what the model's action is: a pose-delta command of the impedance controller, turned
            into the controller's wrench at the model's own state (:mod:`.actions`; the default), or the
            wrench applied to the tool (``WRENCH``: for data recorded under wrench control).
        previous_command: the previous step's action enters the graph too, as a second net wrench computed
            the same way (:data:`PREVIOUS_BLOCKS`): a command latency makes the wrench of step t depend on it.
            False in checkpoints from before the flag existed.
    """

    variant: ModelVariant = ModelVariant.ACT_FIGNET
    history: int = 3
    collision_radius: float = 0.01
    action_mode: ActionMode = ActionMode.POSE_DELTA
    previous_command: bool = False

    def __post_init__(self):
        object.__setattr__(self, "variant", ModelVariant(self.variant))
        object.__setattr__(self, "action_mode", ActionMode(self.action_mode))
        if self.action_mode is ActionMode.POSE_TARGET:
            raise InvalidInputError(f"GraphConfig.action_mode: Act-FIGNet / FIGNet+ do not take "
                                    f"{ActionMode.POSE_TARGET.value!r} actions (absolute pose targets); train on "
                                    f"{ActionMode.POSE_DELTA.value!r} or {ActionMode.WRENCH.value!r} data")
        if not (isinstance(self.history, int) and self.history >= 2):
            raise InvalidInputError(f"GraphConfig.history must be an integer >= 2, got {self.history!r}")
        if not isinstance(self.previous_command, bool):
            raise InvalidInputError(f"GraphConfig.previous_command must be a bool, got {self.previous_command!r}")
        if not (np.isfinite(self.collision_radius) and self.collision_radius > 0):
            raise InvalidInputError(f"GraphConfig.collision_radius must be > 0 [m], got {self.collision_radius}")


def node_layout(config: GraphConfig) -> Layout:
    """Mesh and object node feature blocks (eq. 10; FIGNet+ appends the action wrench, and the previous one's)."""
    blocks = [(f"disp_{i}", 3, True) for i in range(config.history - 1)]
    blocks += [("mass", 1, False), ("friction", 1, False), ("dynamic", 1, False)]
    if config.variant is ModelVariant.FIGNET_PLUS:
        blocks += [("force", 3, True), ("torque", 3, True)]
        if config.previous_command:
            blocks += [("prev_force", 3, True), ("prev_torque", 3, True)]
    return tuple(blocks)


OBJECT_MESH_LAYOUT: Layout = (("disp", 3, True), ("norm_disp", 1, False))
"""Object↔mesh edge blocks: vertex minus centre of mass (negated mesh→object), and its norm."""
WORLD_LAYOUT: Layout = (("is_force", 1, False), ("is_torque", 1, False))
"""World node blocks (eq. 11, a one-hot of the node type)."""
WORLD_MESH_LAYOUT: Layout = (("vec", 3, True), ("norm_vec", 1, False), ("disp", 3, True), ("norm_disp", 1, False))
"""World↔mesh edge blocks: eq. 12 (force edges, displacement zero) and eq. 13 (torque edges)."""
PREVIOUS_BLOCKS: Layout = (("prev_vec", 3, True), ("norm_prev_vec", 1, False))
"""World↔mesh blocks appended with ``GraphConfig.previous_command``: the previous action's net force (force edges)
or torque (torque edges) and its norm, as eqs. 12–13 give the current one's."""


def world_mesh_layout(config: GraphConfig) -> Layout:
    """World↔mesh edge blocks under ``config`` (:data:`WORLD_MESH_LAYOUT`, then :data:`PREVIOUS_BLOCKS` if set)."""
    return WORLD_MESH_LAYOUT + (PREVIOUS_BLOCKS if config.previous_command else ())


def reverse_sign(layout: Layout) -> np.ndarray:
    """Per-column factor turning sender→receiver features into the reverse edge's: vectors negated, norms kept."""
    return np.concatenate([np.full(w, -1.0 if vector else 1.0) for _, w, vector in layout])


def feature_layouts(config: GraphConfig) -> dict[str, Layout]:
    """Feature layout of every feature field of :class:`Graph` under ``config``."""
    out = {"mesh_x": node_layout(config), "object_x": node_layout(config), "om_x": OBJECT_MESH_LAYOUT,
           "mo_x": OBJECT_MESH_LAYOUT, "face_x": FACE_FEATURE_LAYOUT}
    if config.variant is ModelVariant.ACT_FIGNET:
        out.update(world_x=WORLD_LAYOUT, wm_x=world_mesh_layout(config), mw_x=world_mesh_layout(config))
    return out


def layout_dim(layout: Layout) -> int:
    """Total width of a feature layout."""
    return sum(w for _, w, _ in layout)


@dataclass(frozen=True)
class Graph:
    """A batch of ``num_graphs`` input graphs G_in (float32 features, int64 indices, one device).

    Node sets: ``mesh_x`` (NM, dM), ``object_x`` (NO, dO), ``world_x`` (NW, 2) (NW = 0 for FIGNet+).
    Edge sets ``*_index`` (2, E) hold (sender, receiver) rows: ``om`` object→mesh, ``mo`` mesh→object,
    ``wm`` world→mesh, ``mw`` mesh→world. Face edges: ``face_senders``/``face_receivers`` (EF, 3) ranked
    mesh ids, ``face_x`` (EF, 34). Tool bookkeeping, one row per tool vertex: ``tool_nodes`` (mesh id),
    ``tool_graph`` (graph id), ``tool_om`` (its object→mesh edge), ``tool_mw_force``/``tool_mw_torque``
    (its mesh→world edges; empty for FIGNet+).
    """

    mesh_x: torch.Tensor
    object_x: torch.Tensor
    world_x: torch.Tensor
    om_index: torch.Tensor
    om_x: torch.Tensor
    mo_index: torch.Tensor
    mo_x: torch.Tensor
    wm_index: torch.Tensor
    wm_x: torch.Tensor
    mw_index: torch.Tensor
    mw_x: torch.Tensor
    face_senders: torch.Tensor
    face_receivers: torch.Tensor
    face_x: torch.Tensor
    tool_nodes: torch.Tensor
    tool_graph: torch.Tensor
    tool_om: torch.Tensor
    tool_mw_force: torch.Tensor
    tool_mw_torque: torch.Tensor
    num_graphs: int

    def to(self, device: torch.device | str) -> Graph:
        """The same graph with every tensor on ``device``."""
        return Graph(**{f.name: _move(getattr(self, f.name), device) for f in fields(self)})


def _move(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _vector_rows(v: np.ndarray, n: int) -> np.ndarray:
    """``(n, 4)``: the vector ``v`` (3,) and its norm on every row."""
    return np.concatenate([np.broadcast_to(v, (n, 3)), np.full((n, 1), np.linalg.norm(v))], 1)


def _world_edges(inputs: GraphInputs, mesh_obj: np.ndarray, disp: np.ndarray, config: GraphConfig):
    """World↔mesh edges of eqs. 12–13 (and :data:`PREVIOUS_BLOCKS`); features of static bodies are zero."""
    n_mesh = len(mesh_obj)
    is_tool = (mesh_obj == 0)[:, None]
    nd = np.linalg.norm(disp, axis=-1, keepdims=True)
    force = [_vector_rows(inputs.wrench[:3], n_mesh), np.zeros((n_mesh, 4))]
    torque = [_vector_rows(inputs.wrench[3:], n_mesh), disp, nd]
    if config.previous_command:
        force.append(_vector_rows(inputs.prev_wrench[:3], n_mesh))
        torque.append(_vector_rows(inputs.prev_wrench[3:], n_mesh))
    wm_x = np.concatenate([np.concatenate(force, 1) * is_tool, np.concatenate(torque, 1) * is_tool])
    mw_x = wm_x * reverse_sign(world_mesh_layout(config))
    world_force, world_torque = 2 * mesh_obj, 2 * mesh_obj + 1
    mesh = np.arange(n_mesh)
    wm_index = np.stack([np.concatenate([world_force, world_torque]), np.concatenate([mesh, mesh])])
    return wm_index, wm_x, wm_index[::-1].copy(), mw_x


def _node_features(disp_hist: np.ndarray, attrs: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
    """Eq. 10: displacements ``p_t - p_{t-1}, ...`` (most recent first) and ``k = [m, μ, b]``."""
    steps = (disp_hist[1:] - disp_hist[:-1])[::-1]  # (h-1, N, 3)
    parts = [np.concatenate(list(steps), axis=-1), attrs]
    if extra is not None:
        parts.append(extra)
    return np.concatenate(parts, axis=-1)


def _check_inputs(arrays: SceneArrays, inputs: GraphInputs, config: GraphConfig) -> None:
    h, n_tool = config.history, len(arrays.tool_vertices)
    if inputs.tool_positions.shape != (h, n_tool, 3) or inputs.tool_centers.shape != (h, 3):
        raise InvalidInputError(
            f"graph inputs hold tool positions {inputs.tool_positions.shape}, expected ({h}, {n_tool}, 3)"
        )
    if config.previous_command and inputs.prev_wrench is None:
        raise InvalidInputError("a model with GraphConfig.previous_command needs the previous action's wrench "
                                "(graph inputs without prev_wrench)")


def build_graphs(arrays: SceneArrays | Sequence[SceneArrays], inputs: Sequence[GraphInputs],
                 config: GraphConfig) -> Graph:
    """The batch of the input graphs of several windows: ``batch_graphs([build_graph(...) ...])``, with the
    face-interaction edges of all graphs found in one vectorised pass (the cost of graph construction).

    Args:
        arrays: the scene arrays of every window (one for all, or one per window).
        inputs: the windows' graph inputs (at least one).
        config: variant, history length and collision radius.
    """
    if not inputs:
        raise InvalidInputError("build_graphs needs at least one window")
    arrays = [arrays] * len(inputs) if isinstance(arrays, SceneArrays) else list(arrays)
    if len(arrays) != len(inputs):
        raise InvalidInputError(f"build_graphs: {len(arrays)} scene arrays for {len(inputs)} windows")
    for a, x in zip(arrays, inputs, strict=True):
        _check_inputs(a, x, config)
    positions = [np.concatenate([x.tool_positions[-1], x.static_positions]) for x in inputs]
    static_faces = {id(a): a.static_faces + len(a.tool_vertices) for a in arrays}  # one array per scene
    faces = face_interaction_edges_many(positions, [a.tool_faces for a in arrays],
                                        [static_faces[id(a)] for a in arrays], config.collision_radius)
    return batch_graphs([build_graph(a, x, config, f) for a, x, f in zip(arrays, inputs, faces, strict=True)])


def build_graph(arrays: SceneArrays, inputs: GraphInputs, config: GraphConfig,
                faces: FaceEdges | None = None) -> Graph:
    """Input graph G_in = Φ_con(s_t^h, a_t, M) of one window (paper §III-C.1), on the CPU.

    Args:
        arrays: static scene arrays (meshes, attributes).
        inputs: world-frame vertex and centre positions over the history, and the net external wrench.
        config: variant, history length ``h`` and collision radius.
        faces: the window's face-interaction edges when already computed (:func:`build_graphs`).

    Raises:
        InvalidInputError: ``inputs`` does not hold ``config.history`` frames of this scene's meshes.
    """
    _check_inputs(arrays, inputs, config)
    h, n_tool = config.history, len(arrays.tool_vertices)
    n_static, n_obj = len(inputs.static_positions), 1 + arrays.num_statics
    mesh_obj = np.concatenate([np.zeros(n_tool, dtype=np.int64), 1 + arrays.static_body])
    static_hist = np.broadcast_to(inputs.static_positions, (h, n_static, 3))
    mesh_hist = np.concatenate([inputs.tool_positions, static_hist], axis=1)
    centre_hist = np.concatenate(
        [inputs.tool_centers[:, None], np.broadcast_to(inputs.static_centers, (h, n_obj - 1, 3))], axis=1
    )
    attrs = np.concatenate([arrays.tool_attrs[None], arrays.static_attrs])
    plus = config.variant is ModelVariant.FIGNET_PLUS
    obj_extra = np.zeros((n_obj, 12 if config.previous_command else 6)) if plus else None
    if plus:
        obj_extra[0] = np.concatenate([inputs.wrench, inputs.prev_wrench]) if config.previous_command \
            else inputs.wrench
    mesh_x = _node_features(mesh_hist, attrs[mesh_obj], obj_extra[mesh_obj] if plus else None)
    object_x = _node_features(centre_hist, attrs, obj_extra)
    pos_t = mesh_hist[-1]
    disp = pos_t - centre_hist[-1][mesh_obj]
    mesh = np.arange(len(mesh_obj))
    om_x = np.concatenate([disp, np.linalg.norm(disp, axis=-1, keepdims=True)], axis=1)
    mo_x = om_x * np.array([-1, -1, -1, 1.0])
    if faces is None:
        faces = face_interaction_edges(pos_t, arrays.tool_faces, arrays.static_faces + n_tool,
                                       config.collision_radius)
    tool = np.arange(n_tool)
    if plus:
        world_x, wm_index, wm_x, mw_index, mw_x = np.zeros((0, 2)), *_empty_edges(8), *_empty_edges(8)
        tool_force = tool_torque = np.zeros(0, dtype=np.int64)
    else:
        world_x = np.tile(np.eye(2), (n_obj, 1))
        wm_index, wm_x, mw_index, mw_x = _world_edges(inputs, mesh_obj, disp, config)
        tool_force, tool_torque = tool, len(mesh_obj) + tool
    return Graph(
        mesh_x=_f32(mesh_x), object_x=_f32(object_x), world_x=_f32(world_x),
        om_index=_i64(np.stack([mesh_obj, mesh])), om_x=_f32(om_x),
        mo_index=_i64(np.stack([mesh, mesh_obj])), mo_x=_f32(mo_x),
        wm_index=_i64(wm_index), wm_x=_f32(wm_x), mw_index=_i64(mw_index), mw_x=_f32(mw_x),
        face_senders=_i64(faces.senders), face_receivers=_i64(faces.receivers), face_x=_f32(faces.features),
        tool_nodes=_i64(tool), tool_graph=_i64(np.zeros(n_tool)), tool_om=_i64(tool),
        tool_mw_force=_i64(tool_force), tool_mw_torque=_i64(tool_torque), num_graphs=1,
    )


def _empty_edges(dim: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((2, 0), dtype=np.int64), np.zeros((0, dim))


def _f32(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.float32)


def _i64(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.int64)


def batch_graphs(graphs: Sequence[Graph]) -> Graph:
    """Concatenate graphs into one disjoint batch, shifting node, edge and graph ids (PyG-style collate)."""
    if not graphs:
        raise InvalidInputError("batch_graphs needs at least one graph")
    off = {"mesh": 0, "object": 0, "world": 0, "om": 0, "mw": 0, "graph": 0}
    parts: dict[str, list[torch.Tensor]] = {f.name: [] for f in fields(Graph) if f.name != "num_graphs"}
    for g in graphs:
        shift = {
            "om_index": torch.tensor([[off["object"]], [off["mesh"]]]),
            "mo_index": torch.tensor([[off["mesh"]], [off["object"]]]),
            "wm_index": torch.tensor([[off["world"]], [off["mesh"]]]),
            "mw_index": torch.tensor([[off["mesh"]], [off["world"]]]),
            "face_senders": off["mesh"], "face_receivers": off["mesh"], "tool_nodes": off["mesh"],
            "tool_graph": off["graph"], "tool_om": off["om"], "tool_mw_force": off["mw"],
            "tool_mw_torque": off["mw"],
        }
        for name, items in parts.items():
            value = getattr(g, name)
            items.append(value + shift[name] if name in shift else value)
        off["mesh"] += g.mesh_x.shape[0]
        off["object"] += g.object_x.shape[0]
        off["world"] += g.world_x.shape[0]
        off["om"] += g.om_x.shape[0]
        off["mw"] += g.mw_x.shape[0]
        off["graph"] += g.num_graphs
    cat = {name: torch.cat(items, dim=1 if name.endswith("_index") else 0) for name, items in parts.items()}
    return Graph(**cat, num_graphs=off["graph"])
