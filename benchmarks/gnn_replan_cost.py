"""Where an Act-FIGNet iCEM replan's CPU time goes, on the planner's fast path and on the reference path.

Issue 19 part 5 asks for a median replan of at most 2 s on CPU at the Table IV budget (horizon 50, population
20, 5 iterations: 250 model steps of 20 windows) for the triangle, square and hexagon. ``contactkit benchmark
replan`` times whole replans from a reference MuJoCo episode; this script times one replan per (shape, start
state) with the committed checkpoint, in one process and one torch thread by default, and splits it into

* ``graph_s``: building the batched input graphs (:meth:`GnnContactModel.input_graph`: kinematics, face-edge
  broad and narrow phase, features, and on the fast path the pruning of untouched static bodies);
* ``gnn_s``: the encoder–processor–decoder (:meth:`EncodeProcessDecode.predict`);
* ``other_s``: the rest (the controller's wrench, post-processing, iCEM sampling and the reward).

Each replan runs on the fast path (:func:`contactkit.models.gnn.population.population_graph`, pruned by
:func:`~contactkit.models.gnn.population.prune_untouched`, as :meth:`GnnContactModel.step` builds it) and on the
per-window reference path (``input_graph(fast=False)``, full graphs), interleaved, from the same sampling stream;
``same_plan`` says whether both returned the same plan bit for bit (pruned graphs give the same predictions to
float32 rounding, which can differ in the last bits). Start states: ``free`` (tip
5 cm above the slot: no face edges), ``start`` (the environment's first state, seed 0: 5–20 mm above) and
``contact`` (tip 0.5 mm above the slot's top face, over the hole); ``face_edges`` is the mean number of
face-interaction edges per window over the replan's model steps. Seconds are process CPU time::

    python benchmarks/gnn_replan_cost.py [--shapes triangle,square,hexagon] [--points free,start,contact]
        [--threads 1] [--horizon 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from contextlib import contextmanager

import numpy as np
import torch

from contactkit.control.icem import initial_state, optimize
from contactkit.control.mpc import MPCConfig, make_objective
from contactkit.models.gnn import GnnContactModel
from contactkit.models.gnn.model import EncodeProcessDecode
from contactkit.state import BodyState
from contactkit.tasks.peg_env import PegEnvConfig, PegInsertionEnv
from contactkit.tasks.reward import goal_reward

CHECKPOINT = "models/act-fignet-hexagon-target/best.safetensors"
"""The committed Act-FIGNet checkpoint (its model card: models/act-fignet-hexagon-target/README.md)."""

FREE_HEIGHT_M = 0.05
"""Tip height above the slot's top face of the ``free`` start [m] (beyond the 10 mm collision radius)."""

CONTACT_HEIGHT_M = 0.0005
"""Tip height above the slot's top face of the ``contact`` start [m]."""


class Clock:
    """CPU seconds spent in the graph constructor and in the network, and face edges per window built."""

    def __init__(self):
        self.graph_s = self.gnn_s = 0.0
        self.face_edges: list[float] = []

    @contextmanager
    def patched(self, fast: bool):
        """Count inside :meth:`GnnContactModel.input_graph` (forced to ``fast``; pruned as asked on the fast path,
        never on the reference path) and the network's ``predict``."""
        build, predict = GnnContactModel.input_graph, EncodeProcessDecode.predict

        def timed_build(model, windows, wrench, fast_asked=True, prune=False):
            started = time.process_time()
            graph = build(model, windows, wrench, fast=fast, prune=prune and fast)  # the reference: full graphs
            self.graph_s += time.process_time() - started
            self.face_edges.append(graph.face_x.shape[0] / graph.num_graphs)
            return graph

        def timed_predict(net, graph):
            started = time.process_time()
            out = predict(net, graph)
            self.gnn_s += time.process_time() - started
            return out

        GnnContactModel.input_graph, EncodeProcessDecode.predict = timed_build, timed_predict
        try:
            yield self
        finally:
            GnnContactModel.input_graph, EncodeProcessDecode.predict = build, predict


def start_history(env: PegInsertionEnv, point: str, history: int) -> BodyState:
    """``(history,)`` states at rest at the named start (module doc)."""
    state = env.sample_initial_state(np.random.default_rng(0))
    heights = {"free": FREE_HEIGHT_M, "contact": CONTACT_HEIGHT_M}
    if point in heights:
        pos = state.pos.copy()
        pos[2] = env.goal.slot_top_z + heights[point]
        state = state.replace(pos=pos)
    elif point != "start":
        raise SystemExit(f"unknown point {point!r}: free, start or contact")
    return BodyState(*(np.repeat(np.asarray(a)[None], history, axis=0)
                       for a in (state.pos, state.quat, state.lin_vel, state.ang_vel)))


def time_replan(model: GnnContactModel, env: PegInsertionEnv, config: MPCConfig, point: str, fast: bool) -> dict:
    """One replan from ``point`` on the fast or the reference path: CPU seconds, their split, and the plan."""
    objective = make_objective(model, goal_reward(env.scene), config.scale, start_history(env, point, model.history))
    with Clock().patched(fast) as clock:
        started = time.process_time()
        plan = optimize(objective, initial_state(config.icem), config.icem, np.random.default_rng(0))[0]
        total = time.process_time() - started
    return {"replan_s": total, "graph_s": clock.graph_s, "gnn_s": clock.gnn_s,
            "other_s": total - clock.graph_s - clock.gnn_s, "face_edges": float(np.mean(clock.face_edges)),
            "plan": plan}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="triangle,square,hexagon")
    parser.add_argument("--points", default="free,start,contact")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--horizon", type=int, default=50, help="iCEM horizon (Table IV: 50)")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for shape in args.shapes.split(","):
        env = PegInsertionEnv(PegEnvConfig(pairing=shape), observation_dtype=np.float64)
        model = GnnContactModel.from_checkpoint(CHECKPOINT, env.scene)
        config = MPCConfig.table_iv(env.scale, horizon=args.horizon)
        for point in args.points.split(","):
            fast, ref = (time_replan(model, env, config, point, f) for f in (True, False))
            row = {"shape": shape, "point": point, "same_plan": bool(np.array_equal(fast.pop("plan"), ref.pop("plan"))),
                   "fast": fast, "reference": ref, "reference_over_fast": ref["replan_s"] / fast["replan_s"]}
            rows.append(row)
            print(f"{shape:8s} {point:7s} edges/window {fast['face_edges']:5.0f}  fast {fast['replan_s']:5.1f} s "
                  f"(graph {fast['graph_s']:4.1f}, gnn {fast['gnn_s']:4.1f}, other {fast['other_s']:4.1f})  "
                  f"reference {ref['replan_s']:5.1f} s (graph {ref['graph_s']:4.1f})  same plan {row['same_plan']}",
                  flush=True)
    if args.json:
        meta = {"threads": args.threads, "horizon": args.horizon, "torch": torch.__version__,
                "machine": platform.machine(), "processor": platform.processor(), "checkpoint": CHECKPOINT}
        with open(args.json, "w") as f:
            json.dump({"settings": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
