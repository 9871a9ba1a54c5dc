"""One Act-FIGNet processor step: the hand-written scatter (``models/gnn/model.py``) against a PyG port.

Issue 15 item 8: port the graph network to PyG's heterogeneous graphs or drop the pinned dependency,
deciding on measured step times. This script measures both on the same graphs, in the same process:

* graphs: the peg-in-hole scenes as the model builds them (``build_graphs``), from MuJoCo episodes of
  the spiral policy (descend, then search: most windows touch the slot), for each ``--shapes`` entry;
  batches of ``--batch-sizes`` windows drawn at random from all episodes;
* the PyG port: ``HeteroData`` per window (face edges keep their ranked ``(EF, 3)`` sender/receiver ids,
  incremented by the mesh node count on batching), ``Batch.from_data_list``, one ``MessagePassing``
  per pairwise edge type (``edge_updater`` for eq. 3, ``propagate`` with sum aggregation for eq. 4)
  and for the face edges (eqs. 15–17: the split messages propagated to their receivers); node updates
  are the same node MLPs. It *shares the modules* of the hand-written layer, and the script checks
  that both give the same latents and the same gradients before it times anything;
* timings: median over ``--repeats`` of the mean of ``--inner`` calls, the two implementations
  interleaved; forward (no grad, as in planning) and forward + backward (as in training), and the
  collation of per-window graphs (``batch_graphs`` vs ``Batch.from_data_list``).

Needs ``torch-geometric`` (not a dependency of contactkit: ``pip install torch-geometric==2.8.1``)::

    python benchmarks/gnn_pyg_vs_scatter.py [--quick] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

try:
    import torch_geometric
    from torch_geometric.data import Batch, HeteroData
    from torch_geometric.nn import MessagePassing
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit("this benchmark needs torch-geometric: pip install torch-geometric==2.8.1")

from contactkit.control.policies import make_policy
from contactkit.data.collect import make_world, random_start, run_episode
from contactkit.model import ActionMode
from contactkit.models.gnn.graph import EdgeType, Graph, GraphConfig, NodeType, batch_graphs, build_graphs
from contactkit.models.gnn.kinematics import StepSpec, prepare_scene
from contactkit.models.gnn.model import EdgeBlock, FaceBlock, ModelConfig, ProcessorLayer
from contactkit.models.gnn.samples import prepare_window
from contactkit.physics import WorldParams
from contactkit.tasks import peg_in_hole

SAME_TOL = 1e-5
"""Largest difference between the two implementations' latents and gradients (float32, relative)."""
LARGE_BATCH = 8
"""Batches larger than this are timed with ``inner = 1`` (a call takes a large fraction of a second)."""
PAIRWISE = (EdgeType.OBJECT_MESH, EdgeType.MESH_OBJECT, EdgeType.WORLD_MESH, EdgeType.MESH_WORLD)


# --- the graphs --------------------------------------------------------------------------------------


def episode_windows(shape: str, clearance: float, steps: int, seed: int):
    """``(arrays, [(inputs, targets)])`` of every window of one spiral episode in MuJoCo (nominal world)."""
    scene, params = peg_in_hole(shape, clearance), WorldParams()
    rng = np.random.default_rng(seed)
    world = make_world("mujoco", scene, params, rng)
    policy = make_policy("spiral", steps)
    ep = run_episode(world, policy, steps, random_start(scene, rng, 0.004, 0.02), rng, seed)
    states = np.concatenate([ep.pos, ep.quat, ep.lin_vel, ep.ang_vel], axis=1)
    arrays = prepare_scene(scene, StepSpec.from_world(params))
    out = []
    for t in range(2, steps):
        window = {"history": states[t - 2 : t + 1], "action": ep.action[t], "wrench": ep.wrench[t],
                  "next_state": states[t + 1]}
        out.append(prepare_window(arrays, window, ActionMode.WRENCH))
    return arrays, out


def graph_sizes(graphs: list[Graph]) -> dict:
    """Nodes and edges per type of single-window graphs: mean and max, and the share with face edges."""
    counts = {
        "mesh": [g.mesh_x.shape[0] for g in graphs], "object": [g.object_x.shape[0] for g in graphs],
        "world": [g.world_x.shape[0] for g in graphs],
        **{t.value: [getattr(g, f"{t.value}_x").shape[0] for g in graphs] for t in EdgeType},
    }
    out = {k: {"mean": float(np.mean(v)), "max": int(np.max(v))} for k, v in counts.items()}
    out["windows"] = len(graphs)
    out["share_with_face_edges"] = float(np.mean(np.array(counts["face"]) > 0))
    return out


# --- the PyG port --------------------------------------------------------------------------------------


class FaceHeteroData(HeteroData):
    """HeteroData whose face edges keep ranked ``(EF, 3)`` mesh ids, shifted by the mesh count on batching."""

    def __inc__(self, key, value, store=None, *args, **kwargs):
        if key in ("senders", "receivers"):
            return self["mesh"].num_nodes
        return super().__inc__(key, value, store, *args, **kwargs)


def to_hetero(g: Graph) -> FaceHeteroData:
    """One window's :class:`Graph` as PyG heterogeneous data (same node and edge order)."""
    d = FaceHeteroData()
    d["mesh"].x, d["object"].x, d["world"].x = g.mesh_x, g.object_x, g.world_x
    for t in PAIRWISE:
        store = d[t.sender.value, t.value, t.receiver.value]
        store.edge_index, store.edge_attr = getattr(g, f"{t.value}_index"), getattr(g, f"{t.value}_x")
    face = d["mesh", EdgeType.FACE.value, "mesh"]
    face.senders, face.receivers, face.edge_attr = g.face_senders, g.face_receivers, g.face_x
    return d


class PygEdgeConv(MessagePassing):
    """Eq. 3 and the sum of eq. 4 for one pairwise edge type, with the MLP of an :class:`EdgeBlock`."""

    def __init__(self, block: EdgeBlock):
        super().__init__(aggr="sum", flow="source_to_target")
        self.mlp = block.mlp

    def edge_update(self, edge_attr, x_j, x_i):
        return self.mlp(torch.cat([edge_attr, x_j, x_i], dim=-1))

    def message(self, edge_attr):
        return edge_attr

    def forward(self, x_src, x_dst, edge_index, edge_attr):
        new = self.edge_updater(edge_index, x=(x_src, x_dst), edge_attr=edge_attr)
        agg = self.propagate(edge_index, edge_attr=new, size=(x_src.shape[0], x_dst.shape[0]))
        return new, agg


class PygFaceConv(MessagePassing):
    """Eqs. 15–17 with the MLP of a :class:`FaceBlock`: each face edge's three messages propagated to the
    receiver vertex of the same rank (``(sender_i, receiver_i)`` pairs as a flat edge index)."""

    def __init__(self, block: FaceBlock):
        super().__init__(aggr="sum")
        self.mlp = block.mlp

    def message(self, edge_attr):
        return edge_attr

    def forward(self, x, senders, receivers, edge_attr):
        ends = [x[senders[:, i]] for i in range(3)] + [x[receivers[:, i]] for i in range(3)]
        new = self.mlp(torch.cat([edge_attr, *ends], dim=-1))
        index = torch.stack([senders.reshape(-1), receivers.reshape(-1)])
        agg = self.propagate(index, edge_attr=new.reshape(-1, x.shape[-1]), size=(x.shape[0], x.shape[0]))
        return new, agg


class PygProcessorLayer(torch.nn.Module):
    """The same step as :class:`ProcessorLayer` (whose modules it shares) on a batched ``FaceHeteroData``."""

    def __init__(self, layer: ProcessorLayer):
        super().__init__()
        self.convs = torch.nn.ModuleDict({
            k: PygFaceConv(b) if b.edge_type is EdgeType.FACE else PygEdgeConv(b) for k, b in layer.edge.items()
        })
        self.nodes = layer.node

    def forward(self, x: dict[str, torch.Tensor], e: dict[str, torch.Tensor], data) -> tuple[dict, dict]:
        """Node latents ``x`` and edge latents ``e`` by type value -> the updated ones (residual added)."""
        new_e, sums = {}, {}
        for k, conv in self.convs.items():
            t = EdgeType(k)
            if t is EdgeType.FACE:
                store = data["mesh", k, "mesh"]
                new_e[k], sums[t] = conv(x["mesh"], store.senders, store.receivers, e[k])
            else:
                store = data[t.sender.value, k, t.receiver.value]
                new_e[k], sums[t] = conv(x[t.sender.value], x[t.receiver.value], store.edge_index, e[k])
        new_x = {k: block(x[k], sums) for k, block in self.nodes.items()}
        return ({k: x[k] + new_x[k] for k in x}, {k: e[k] + new_e[k] for k in e})


# --- measurement ---------------------------------------------------------------------------------------


def latents(batch: Graph, cfg: ModelConfig, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Random latents of every node and edge set of ``batch`` (the processor's input; values do not matter)."""
    L = cfg.latent_dim
    sizes = {"mesh": batch.mesh_x.shape[0], "object": batch.object_x.shape[0], "world": batch.world_x.shape[0],
             **{t.value: getattr(batch, f"{t.value}_x").shape[0] for t in EdgeType}}
    return {k: torch.randn(n, 3 * L if k == "face" else L, generator=gen) for k, n in sizes.items()}


def check_same(layer: ProcessorLayer, pyg: PygProcessorLayer, lat: dict, batch: Graph, data) -> float:
    """Largest relative difference between the two implementations' outputs and parameter gradients."""
    nodes = [t.value for t in NodeType]
    ref = layer(lat, batch)
    ref_grads = torch.autograd.grad(sum(v.square().sum() for v in ref.values()), list(layer.parameters()))
    xs, es = pyg({k: lat[k] for k in nodes}, {k: v for k, v in lat.items() if k not in nodes}, data)
    got = {**xs, **es}
    got_grads = torch.autograd.grad(sum(v.square().sum() for v in got.values()), list(layer.parameters()))
    worst = 0.0
    pairs = [*((ref[k].detach(), got[k].detach()) for k in ref), *zip(ref_grads, got_grads, strict=True)]
    for a, b in pairs:
        worst = max(worst, float((a - b).abs().max() / a.abs().max().clamp(min=1e-12)))
    return worst


def timed(fns: dict[str, Callable[[], object]], repeats: int, inner: int) -> dict[str, float]:
    """Median seconds per call of each function, the functions interleaved within every repeat."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[k].append((time.perf_counter() - t0) / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def pick_windows(windows, graphs: list[Graph], batch_size: int, seed: int) -> list:
    """A batch of windows: the one with the median face-edge count for 1, else a uniform random draw."""
    if batch_size == 1:
        faces = np.array([g.face_x.shape[0] for g in graphs])
        return [windows[int(np.argsort(faces)[len(faces) // 2])]]
    return [windows[i] for i in np.random.default_rng(seed).integers(0, len(windows), batch_size)]


def measure(pick, cfg: ModelConfig, repeats: int, inner: int, seed: int) -> dict:
    """Collation, forward and forward+backward of one processor step, both ways, on the batch ``pick``."""
    batch_size = len(pick)
    singles = [build_graphs(a, [x], cfg.graph) for a, x in pick]
    heteros = [to_hetero(g) for g in singles]
    batch, data = batch_graphs(singles), Batch.from_data_list(heteros)
    layer = ProcessorLayer(cfg)
    pyg = PygProcessorLayer(layer)
    lat = latents(batch, cfg, torch.Generator().manual_seed(seed))
    diff = check_same(layer, pyg, lat, batch, data)
    if diff > SAME_TOL:
        raise SystemExit(f"the PyG port differs from the hand-written step by {diff:.3g} (> {SAME_TOL})")
    nodes = [t.value for t in NodeType]
    x, e = {k: lat[k] for k in nodes}, {k: v for k, v in lat.items() if k not in nodes}

    def fwd_hand():
        with torch.no_grad():
            layer(lat, batch)

    def fwd_pyg():
        with torch.no_grad():
            pyg(x, e, data)

    def bwd_hand():
        out = layer(lat, batch)
        sum(v.sum() for v in out.values()).backward()

    def bwd_pyg():
        xs, es = pyg(x, e, data)
        (sum(v.sum() for v in xs.values()) + sum(v.sum() for v in es.values())).backward()

    t = timed({"collate_hand": lambda: batch_graphs(singles), "collate_pyg": lambda: Batch.from_data_list(heteros),
               "fwd_hand": fwd_hand, "fwd_pyg": fwd_pyg, "fwdbwd_hand": bwd_hand, "fwdbwd_pyg": bwd_pyg},
              repeats, inner)
    out = {"batch_size": batch_size, "latent_dim": cfg.latent_dim, "collision_radius": cfg.graph.collision_radius,
           "max_rel_diff": diff,
           "nodes": {k: int(v.shape[0]) for k, v in x.items()}, "edges": {k: int(v.shape[0]) for k, v in e.items()}}
    for what in ("collate", "fwd", "fwdbwd"):
        hand, pg = t[f"{what}_hand"], t[f"{what}_pyg"]
        out[what] = {"hand_ms": 1e3 * hand, "pyg_ms": 1e3 * pg, "pyg_over_hand": pg / hand}
    return out


def main(argv: list[str] | None = None) -> dict:
    """Parse arguments, build the graphs, measure, print a table, optionally write JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one shape, short episodes, few repeats")
    p.add_argument("--shapes", default="hexagon,circle")
    p.add_argument("--clearance", type=float, default=0.005, help="radial clearance [m] (mpc-insertion: 5 mm)")
    p.add_argument("--steps", type=int, default=120, help="control steps per episode")
    p.add_argument("--batch-sizes", default="1,20",
                   help="1: one step (the median window); 20: iCEM population (train: 32, paper 256)")
    p.add_argument("--latent-dims", default="128", help="128: paper Table II; 64: the 'small' preset")
    p.add_argument("--radii", default="0.01,0.001", help="collision radii [m] (paper App. Table III: 10 and 1 mm)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--inner", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.shapes, a.steps, a.batch_sizes, a.repeats, a.inner = "hexagon", 40, "1,20", 3, 2
    torch.set_num_threads(a.threads)
    windows = []
    for i, shape in enumerate(a.shapes.split(",")):
        arrays, items = episode_windows(shape, a.clearance, a.steps, a.seed + i)
        windows += [(arrays, inputs) for inputs, _ in items]
    result = {
        "command": " ".join(sys.argv), "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
        "threads": a.threads, "machine": f"{platform.machine()} {platform.processor()} {platform.node()}",
        "graph_sizes": {}, "runs": [],
    }
    for radius in (float(v) for v in a.radii.split(",")):
        graph_cfg = GraphConfig(collision_radius=radius, action_mode=ActionMode.WRENCH)
        graphs = [build_graphs(arr, [x], graph_cfg) for arr, x in windows]
        result["graph_sizes"][str(radius)] = graph_sizes(graphs)
        print(json.dumps({"collision_radius": radius, **graph_sizes(graphs)}), flush=True)
        for L in (int(v) for v in a.latent_dims.split(",")):
            cfg = ModelConfig(graph_cfg, latent_dim=L, hidden_dim=L)
            for b in (int(v) for v in a.batch_sizes.split(",")):
                pick = pick_windows(windows, graphs, b, a.seed)
                run = measure(pick, cfg, a.repeats, 1 if b > LARGE_BATCH else a.inner, a.seed)
                run["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                result["runs"].append(run)
                print(json.dumps(run), flush=True)
    print(f"{'r mm':>5} {'L':>4} {'B':>4} | {'collate hand/pyg ms':>20} | {'fwd hand/pyg ms':>18} {'ratio':>6} | "
          f"{'fwd+bwd hand/pyg ms':>20} {'ratio':>6}")
    for r in result["runs"]:
        c, f, b = r["collate"], r["fwd"], r["fwdbwd"]
        print(f"{1e3 * r['collision_radius']:>5.1f} {r['latent_dim']:>4} {r['batch_size']:>4} | "
              f"{c['hand_ms']:>9.3f}/{c['pyg_ms']:<10.3f} | "
              f"{f['hand_ms']:>8.3f}/{f['pyg_ms']:<9.3f} {f['pyg_over_hand']:>6.2f} | "
              f"{b['hand_ms']:>9.3f}/{b['pyg_ms']:<10.3f} {b['pyg_over_hand']:>6.2f}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
