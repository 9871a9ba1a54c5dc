"""Encoder–processor–decoder Ψ_θ of Act-FIGNet and FIGNet+ (paper §III-C.2, appendix V-A.2.b, V-B).

* Encoders (eqs. 1–2): one MLP per node and edge type, to ``latent_dim`` (face edges to ``3·latent_dim``).
* Processor (eqs. 3–4, 15–17): ``message_passing_steps`` layers with unshared weights; each updates every
  edge from ``[edge, sender, receiver]``, sums the new edge latents per receiver and edge type, updates
  every node from ``[node, sums...]``; inputs are added to outputs (residual). A face edge is updated
  from its latent and its six nodes and split into three messages, one per receiver vertex (eq. 17).
  One block per edge type (:class:`EdgeBlock`, :class:`FaceBlock`, keyed by :class:`EdgeType`) and per
  node type (:class:`NodeBlock`, keyed by :class:`NodeType`); scatter-sums are ``index_add_``. A PyG port
  of this step (``benchmarks/gnn_pyg_vs_scatter.py``) computed the same bits no faster, so PyG is not used.
* Decoders: vertex accelerations from mesh latents (eq. 5); F/T from the tool mesh→world edges averaged
  over tool vertices (eqs. 6–7) for Act-FIGNet, or from the tool object→mesh edges for FIGNet+.

MLPs have ``mlp_layers`` hidden ReLU layers of ``hidden_dim`` and a LayerNorm after them, except the
decoders. Inputs and targets pass through :class:`RunningNormalizer` buffers that travel with the weights.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.graph import (
    EdgeType,
    Graph,
    GraphConfig,
    ModelVariant,
    NodeType,
    edge_types,
    feature_layouts,
    layout_dim,
    node_types,
)
from contactkit.models.gnn.normalize import RunningNormalizer

LEGACY_ACTION_MODE = ActionMode.WRENCH
"""Action mode of a stored config that does not name one (checkpoints from before pose-delta actions)."""


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the EPD stack (paper Table II: 10 steps, 128 wide, 2-layer MLPs) and its graph settings."""

    graph: GraphConfig = GraphConfig()
    latent_dim: int = 128
    hidden_dim: int = 128
    mlp_layers: int = 2
    message_passing_steps: int = 10

    def __post_init__(self):
        for name in ("latent_dim", "hidden_dim", "mlp_layers", "message_passing_steps"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise InvalidInputError(f"ModelConfig.{name} must be an integer >= 1, got {v!r}")

    def to_dict(self) -> dict:
        """JSON-compatible form (the variant and the action mode as their string values)."""
        d = asdict(self)
        d["graph"]["variant"] = self.graph.variant.value
        d["graph"]["action_mode"] = self.graph.action_mode.value
        return d

    @staticmethod
    def from_dict(d: dict) -> ModelConfig:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise InvalidInputError naming them.

        A ``graph`` without ``action_mode`` (written before the key existed, by models trained on applied
        wrenches) reads as ``ActionMode.WRENCH``; one without ``previous_command`` as False.
        """
        _check_keys(d, ModelConfig, "model config")
        graph_d = dict(d["graph"]) if isinstance(d["graph"], dict) else d["graph"]
        if isinstance(graph_d, dict):
            graph_d.setdefault("action_mode", LEGACY_ACTION_MODE.value)
            graph_d.setdefault("previous_command", False)
        _check_keys(graph_d, GraphConfig, "model config 'graph'")
        graph = GraphConfig(**{**graph_d, "variant": ModelVariant(graph_d["variant"]),
                               "action_mode": ActionMode(graph_d["action_mode"])})
        return ModelConfig(graph=graph, **{k: v for k, v in d.items() if k != "graph"})


def _check_keys(d, cls, what: str) -> None:
    if not isinstance(d, dict):
        raise InvalidInputError(f"{what} must be a JSON object, got {type(d).__name__}")
    names = {f.name for f in fields(cls)}
    if set(d) != names:
        raise InvalidInputError(f"{what}: unknown keys {sorted(set(d) - names)}, missing keys {sorted(names - set(d))}")


def mlp(in_dim: int, hidden_dim: int, out_dim: int, layers: int, layer_norm: bool) -> nn.Sequential:
    """``layers`` hidden Linear+ReLU layers of ``hidden_dim``, a linear output, optional LayerNorm."""
    mods: list[nn.Module] = []
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden_dim), nn.ReLU()]
        width = hidden_dim
    mods.append(nn.Linear(width, out_dim))
    if layer_norm:
        mods.append(nn.LayerNorm(out_dim))
    return nn.Sequential(*mods)


def init_parameters(module: nn.Module, generator: torch.Generator) -> None:
    """Re-initialise every Linear layer as PyTorch's default does, drawing from ``generator`` only."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
            bound = 1.0 / math.sqrt(m.in_features)
            nn.init.uniform_(m.bias, -bound, bound, generator=generator)


def _sum_to(n: int, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``(n, D)`` sums of the rows of ``values`` (E, D) by ``index`` (E,) (the scatter-sum of eq. 4)."""
    return values.new_zeros((n, values.shape[-1])).index_add_(0, index, values)


def split_first_layer(linear: nn.Linear, edge: torch.Tensor,
                      ends: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """``linear(cat([edge, nodes[ids[:, 0]], nodes[ids[:, 1]], ...]))`` for each ``(nodes, ids)`` of ``ends``, without
    building the concatenation: the weight is split into its column blocks, each node set is multiplied once by
    the blocks of its slots and the products are gathered per edge. Same value to float rounding; far fewer
    multiply-adds when there are fewer nodes than edges (a face edge reads six mesh nodes, eqs. 15–17).

    Args:
        linear: the first layer of an edge MLP, input ``[edge (E, De), slot 1 (E, L), slot 2, ...]``.
        edge: ``(E, De)`` edge latents.
        ends: per node set, its latents ``(N, L)`` and the ids ``(E, k)`` of the ``k`` slots it fills, in order.

    Returns:
        ``(E, H)`` pre-activations of the first layer.
    """
    width = edge.shape[-1]
    out = nn.functional.linear(edge, linear.weight[:, :width], linear.bias)
    hidden = linear.weight.shape[0]
    for nodes, ids in ends:
        k, dim = ids.shape[1], nodes.shape[-1]
        block = linear.weight[:, width:width + k * dim].reshape(hidden, k, dim)  # (H, k, L)
        proj = (nodes @ block.permute(2, 1, 0).reshape(dim, k * hidden)).reshape(-1, hidden)  # (N·k, H)
        flat = ids * k + torch.arange(k, device=ids.device)  # (E, k) rows of proj
        if k == 1:
            out = out + proj.index_select(0, flat.reshape(-1))
        else:  # gather and sum the k rows in one fused kernel (same sum order as index_select + sum)
            out = out + nn.functional.embedding_bag(flat, proj, mode="sum")
        width += k * dim
    return out


class EdgeBlock(nn.Module):
    """Edge update of eq. 3 for one pairwise edge type: ``e' = MLP([e, v_sender, v_receiver])``."""

    def __init__(self, edge_type: EdgeType, cfg: ModelConfig):
        super().__init__()
        if edge_type is EdgeType.FACE:
            raise InvalidInputError("face edges have their own block (FaceBlock), not an EdgeBlock")
        self.edge_type = edge_type
        self.mlp = mlp(3 * cfg.latent_dim, cfg.hidden_dim, cfg.latent_dim, cfg.mlp_layers, True)

    def forward(self, edge: torch.Tensor, sender: torch.Tensor, receiver: torch.Tensor,
                index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """New edge latents ``(E, L)`` and their sums per receiver node ``(NR, L)``.

        Args: edge ``(E, L)``, sender ``(NS, L)`` and receiver ``(NR, L)`` latents; index ``(2, E)`` rows
        (sender id, receiver id).
        """
        new = self.mlp[1:](split_first_layer(self.mlp[0], edge, [(sender, index[0:1].T), (receiver, index[1:2].T)]))
        return new, _sum_to(receiver.shape[0], index[1], new)


class FaceBlock(nn.Module):
    """Face-interaction mesh–mesh edges (eqs. 15–17): ``e' = MLP([e, v_s1..3, v_r1..3])``, ``(EF, 3L)``,
    split into three messages of width ``L``, message ``i`` summed into receiver vertex ``i``."""

    edge_type = EdgeType.FACE

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        L = cfg.latent_dim
        self.mlp = mlp(9 * L, cfg.hidden_dim, 3 * L, cfg.mlp_layers, True)

    def forward(self, face: torch.Tensor, mesh: torch.Tensor, senders: torch.Tensor,
                receivers: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """New face latents ``(EF, 3L)`` and the per-mesh-node sums of their messages ``(NM, L)``.

        Args: face ``(EF, 3L)`` and mesh ``(NM, L)`` latents; senders, receivers ``(EF, 3)`` ranked mesh ids.
        """
        new = self.mlp[1:](split_first_layer(self.mlp[0], face, [(mesh, torch.cat([senders, receivers], dim=1))]))
        messages = new.reshape(-1, mesh.shape[-1])  # (EF·3, L): message i goes to receiver i
        return new, _sum_to(mesh.shape[0], receivers.reshape(-1), messages)


class NodeBlock(nn.Module):
    """Node update of eq. 4 for one node type: ``v' = MLP([v, Σe'_1, ..., Σe'_k])`` over ``incoming``."""

    def __init__(self, node_type: NodeType, incoming: tuple[EdgeType, ...], cfg: ModelConfig):
        super().__init__()
        self.node_type, self.incoming = node_type, incoming
        L = cfg.latent_dim
        self.mlp = mlp((1 + len(incoming)) * L, cfg.hidden_dim, L, cfg.mlp_layers, True)

    def forward(self, node: torch.Tensor, sums: dict[EdgeType, torch.Tensor]) -> torch.Tensor:
        """New node latents ``(N, L)`` from ``node`` ``(N, L)`` and each incoming type's per-node sums ``(N, L)``."""
        return self.mlp(torch.cat([node, *(sums[t] for t in self.incoming)], dim=-1))


def incoming_edges(variant: ModelVariant) -> dict[NodeType, tuple[EdgeType, ...]]:
    """The edge types whose messages each node type sums, in the order of its node MLP's input blocks."""
    types = edge_types(variant)
    return {n: tuple(t for t in types if t.receiver is n) for n in node_types(variant)}


class ProcessorLayer(nn.Module):
    """One message-passing step l: every edge block (eq. 3; eqs. 15–17 for face edges), then every node
    block (eq. 4), inputs added to outputs. Blocks live in ``edge[EdgeType.value]`` and ``node[NodeType.value]``.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        variant = cfg.graph.variant
        self.edge = nn.ModuleDict(
            {t.value: FaceBlock(cfg) if t is EdgeType.FACE else EdgeBlock(t, cfg) for t in edge_types(variant)}
        )
        self.node = nn.ModuleDict({n.value: NodeBlock(n, inc, cfg) for n, inc in incoming_edges(variant).items()})

    def forward(self, lat: dict[str, torch.Tensor], g: Graph) -> dict[str, torch.Tensor]:
        """Updated latents (same keys and shapes as ``lat``: node and edge type values)."""
        new, sums = {}, {}
        for block in self.edge.values():
            t = block.edge_type
            if t is EdgeType.FACE:
                new[t.value], sums[t] = block(lat[t.value], lat[NodeType.MESH.value], g.face_senders, g.face_receivers)
            else:
                new[t.value], sums[t] = block(lat[t.value], lat[t.sender.value], lat[t.receiver.value],
                                              getattr(g, f"{t.value}_index"))
        for block in self.node.values():
            new[block.node_type.value] = block(lat[block.node_type.value], sums)
        return {k: lat[k] + new[k] for k in lat}

    def tool_rows(self, lat: dict[str, torch.Tensor], g: Graph) -> tuple[torch.Tensor, torch.Tensor]:
        """What :meth:`forward` would return at the rows the decoders read, from only the edges and nodes they
        depend on (the last step of :class:`EncodeProcessDecode`): the tool's mesh latents ``(NT, L)`` and the
        F/T readout edges' latents, ``(2·NT, L)`` mesh→world edges ``[force..., torque...]`` (Act-FIGNet) or
        ``(NT, L)`` object→mesh edges (FIGNet+), in the order of ``g.tool_nodes``.

        A tool vertex's update reads its object→mesh edge, its world→mesh edges (the reverses of its mesh→world
        edges, same ids) and the face edges received by tool vertices (a face edge's receivers are all of one
        body); the other edges and nodes of the step feed no decoder. Same values as ``forward`` to float32
        rounding, for about half the face edges and a fraction of the rest.
        """
        mesh, tool = lat[NodeType.MESH.value], g.tool_nodes
        is_tool = torch.zeros(mesh.shape[0], dtype=torch.bool, device=mesh.device)
        is_tool[tool] = True
        world_ids = torch.cat([g.tool_mw_force, g.tool_mw_torque])
        edge_ids = {EdgeType.OBJECT_MESH: g.tool_om, EdgeType.WORLD_MESH: world_ids, EdgeType.MESH_WORLD: world_ids}
        sums, updated = {}, {}
        for block in self.edge.values():
            t = block.edge_type
            if t is EdgeType.FACE:
                keep = is_tool[g.face_receivers[:, 0]]
                _, sums[t] = block(lat[t.value][keep], mesh, g.face_senders[keep], g.face_receivers[keep])
            elif t in edge_ids:
                ids = edge_ids[t]
                new, sums[t] = block(lat[t.value][ids], lat[t.sender.value], lat[t.receiver.value],
                                     getattr(g, f"{t.value}_index")[:, ids])
                updated[t] = lat[t.value][ids] + new
        node = self.node[NodeType.MESH.value]
        mesh_tool = mesh[tool] + node(mesh[tool], {t: sums[t][tool] for t in node.incoming})
        readout = EdgeType.MESH_WORLD if EdgeType.MESH_WORLD in updated else EdgeType.OBJECT_MESH
        return mesh_tool, updated[readout]


_INPUTS = {"mesh_x": "mesh", "object_x": "object", "world_x": "world", "om_x": "om", "mo_x": "mo",
           "wm_x": "wm", "mw_x": "mw", "face_x": "face"}


class EncodeProcessDecode(nn.Module):
    """The EPD stack Ψ_θ for one :class:`ModelConfig` (either variant).

    ``forward(graph)`` returns normalised predictions; :meth:`predict` returns them in SI units.
    Weights are drawn from ``generator`` (a fixed seed 0 when None), never from torch's global generator.
    """

    def __init__(self, config: ModelConfig, generator: torch.Generator | None = None):
        super().__init__()
        self.config = config
        L, H, n = config.latent_dim, config.hidden_dim, config.mlp_layers
        self.act = config.graph.variant is ModelVariant.ACT_FIGNET
        layouts = feature_layouts(config.graph)
        self.inputs = [k for k in _INPUTS if k in layouts]
        self.norm = nn.ModuleDict({k: RunningNormalizer(layout_dim(layouts[k])) for k in self.inputs})
        self.norm.update({"accel": RunningNormalizer(3), "wrench": RunningNormalizer(6)})
        self.encoders = nn.ModuleDict(
            {_INPUTS[k]: mlp(layout_dim(layouts[k]), H, 3 * L if k == "face_x" else L, n, True) for k in self.inputs}
        )
        self.layers = nn.ModuleList(ProcessorLayer(config) for _ in range(config.message_passing_steps))
        self.accel_decoder = mlp(L, H, 3, n, False)
        self.ft_decoder = mlp(L, H, 3 if self.act else 6, n, False)
        init_parameters(self, generator if generator is not None else torch.Generator().manual_seed(0))

    def forward(self, g: Graph) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised tool-vertex accelerations (NT, 3) and per-graph wrench (G, 6) for batch ``g``."""
        lat = {_INPUTS[k]: self.encoders[_INPUTS[k]](self.norm[k](getattr(g, k))) for k in self.inputs}
        for layer in self.layers[:-1]:
            lat = layer(lat, g)
        mesh_tool, readout = self.layers[-1].tool_rows(lat, g)  # the last step at the decoders' rows only
        accel = self.accel_decoder(mesh_tool)
        if self.act:
            force, torque = readout.chunk(2)
            per_vertex = torch.cat([self.ft_decoder(force), self.ft_decoder(torque)], -1)
        else:
            per_vertex = self.ft_decoder(readout)
        counts = torch.bincount(g.tool_graph, minlength=g.num_graphs).clamp(min=1).to(per_vertex.dtype)
        wrench = _sum_to(g.num_graphs, g.tool_graph, per_vertex) / counts[:, None]
        return accel, wrench

    @torch.no_grad()
    def predict(self, g: Graph) -> tuple[torch.Tensor, torch.Tensor]:
        """Accelerations ``p_{t+1} - 2 p_t + p_{t-1}`` (NT, 3) [m] and wrench (G, 6), world frame,
        torque about the tool centre of mass [N, N·m]."""
        accel, wrench = self(g)
        return self.norm["accel"].inverse(accel), self.norm["wrench"].inverse(wrench)

    def update_normalizers(self, g: Graph, accel: torch.Tensor, wrench: torch.Tensor) -> None:
        """Accumulate input statistics of ``g`` and target statistics ``accel`` (NT, 3), ``wrench`` (G, 6)."""
        for k in self.inputs:
            self.norm[k].update(getattr(g, k))
        self.norm["accel"].update(accel)
        self.norm["wrench"].update(wrench)
