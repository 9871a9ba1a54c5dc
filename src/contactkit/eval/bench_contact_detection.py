"""Benchmark ``contact-detection`` (tight-tolerance paper §V-C, Table I): time per query of the learned node
contact detection against COAL's BVH mesh–mesh collision query, on the same pair of meshes at the same poses,
on one CPU core; plus the learned depth's error against the exact signed distance.

Tasks: ``peg-in-hole`` (the paper's peg and hole, :func:`contactkit.geometry.paper_peg` /
:func:`~contactkit.geometry.paper_hole`, 32.5 µm radial clearance) and ``bolting`` (the M48×5 nut on its bolt,
0.2 mm radial play). Poses (:mod:`contactkit.eval.contact_detection_poses`, seeded): the peg moving down the
hole from 10 mm above the opening to the bottom, the nut turned down the bolt along its thread, with random
lateral offsets and tilts inside the clearance (feasible: the exact gap is at least −2 µm), and a share
pushed into clear penetration. The static part sits at a fixed, non-trivial world pose (:data:`STATIC_POSE`).

What each side is asked, per pose (both report contacts within the same :data:`MARGIN_M`, the engine's default
contact margin, ``EngineParams.contact_margin``):

* learned: :func:`contactkit.depth.detect` — the moving part's mesh vertices (its nodes) against the static
  part's network: broad phase by the network's domain box, then every candidate node in one batched torch call,
  normals by autograd; torch limited to one thread. (The engine's own numba kernel of the same network,
  :mod:`contactkit.engine`, is not what is timed here.)
* COAL: ``coal.collide`` of the two meshes as ``coal.BVHModelOBBRSS`` (built once, outside the timing) with a
  ``CollisionRequest(CollisionRequestFlag.CONTACT, COAL_MAX_CONTACTS)``: ``enable_contact = True`` (contact
  point, normal and penetration of every colliding triangle pair), ``security_margin = MARGIN_M`` (pairs closer
  than the margin count). ``coal_exact_*`` is the same query with ``security_margin = 0`` (touching pairs only).

Timing: ``time.perf_counter`` around the one call (the COAL transforms and result object are made before the
clock starts, the result is cleared inside it; the learned call converts its poses itself); each pose is timed
``REPEATS`` times per side, interleaved, and its best time kept (removes the other processes of a shared
machine, equally for both), after a warm-up. Mean and max are over the poses;
``speedup = coal_ms_mean / learned_ms_mean``.

Depth error, per pose: the nodes the learned side returns and every node whose exact signed distance lies within
the ±0.5 mm band, ``|d_net − d_exact|`` with ``d_exact`` from :func:`contactkit.geometry.signed_distance`
(libigl); also its 99th percentile, its maximum over the returned nodes alone (``contact_depth_max_err_m``)
and where the maximum was. Nodes in the band that the network's domain does not cover are counted
(``band_nodes_missed``).
Bar (issue 16): speedup ≥ 8 on both tasks; ``depth_max_err_m`` ≤ 0.2 × the radial clearance.

Run: ``contactkit benchmark contact-detection [--quick] [--json out.json] [--hole-net F] [--bolt-net F]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import coal
import numpy as np
import torch

from contactkit.assembly.task import DEFAULT_NETS as ASSEMBLY_NETS
from contactkit.depth import ACCURACY_BAND, DepthNetSet, depth_net_files, detect, load_depth_nets, query
from contactkit.engine.params import EngineParams
from contactkit.errors import CheckpointError, ResultStoreError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.bench_lml import one_core
from contactkit.eval.contact_detection_poses import PoseSet, insertion_poses, screwing_poses, transform
from contactkit.eval.store import source_root
from contactkit.geometry import Part, paper_hole, paper_peg, signed_distance
from contactkit.geometry.fasteners import bolt, nut
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat

PAPER = paper_quotes.CONTACT_DETECTION
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

MARGIN_M = EngineParams().contact_margin
"""Contacts within this gap [m] are reported by both sides (the engine's default speculative margin)."""

BAND_M = ACCURACY_BAND
"""Half-width [m] of the band around the surface in which the depth error is measured (issue 16: ±0.5 mm)."""

CLEAR_M = 5e-5
"""A pose is clearly in contact when its exact gap is below −CLEAR_M, clearly free above MARGIN_M + CLEAR_M [m]."""

POSES = {True: 6, False: 200}
"""Poses per task (quick, full)."""

REPEATS = {True: 1, False: 3}
"""Timed calls per pose and side (quick, full); the best is kept."""

WARMUP_POSES = 3
"""Poses queried (untimed) by both sides before the clock starts."""

PENETRATING_SHARE = 0.15
"""Share of the poses pushed into clear penetration on purpose."""

COAL_MAX_CONTACTS = 1_000_000
"""``num_max_contacts`` of the COAL request: large enough that COAL never stops early."""

SPEEDUP_BAR = 8.0
"""Least ``speedup`` on each task (issue 16; paper Table I: 8.2× peg-in-hole, 21.1× bolting, against FCL)."""

DEPTH_BAR_FRACTION = 0.2
"""``depth_max_err_m`` must stay within this fraction of the task's radial clearance (issue 16)."""

STATIC_POSE = (np.array([0.45, -0.12, 0.02]), rotvec_to_quat(np.array([0.0, 0.0, 0.3])))
"""World pose ``(pos [m], quat wxyz)`` of the static part in every task."""

DEFAULT_NETS = ASSEMBLY_NETS
"""Committed networks of the static parts, relative to the source checkout's root (the bolt's a piecewise set's
manifest)."""

WIDENING_OPTIONS = frozenset({"hole_net", "bolt_net"})
"""Options that choose a network without cutting the run (the harness records each network's sha256)."""


@dataclass(frozen=True)
class Task:
    """One benchmark task: a static part with its learned network, a moving part, its poses.

    Attributes:
        name: task key in the result. static, moving: the parts (the moving part's vertices are its nodes).
        clearance: radial clearance [m] (the depth-error bar is a fraction of it). net: path of the network.
        poses: ``poses(n, rng) -> PoseSet`` in the static part's frame.
    """

    name: str
    static: Part
    moving: Part
    clearance: float
    net: Path
    poses: Callable[[int, np.random.Generator], PoseSet]


def _net_path(option: str | None, task: str) -> Path:
    """The network file of ``task``: the option as given, else the committed default of the source checkout
    (relative to the working directory when it lies below it, absolute otherwise)."""
    if option is not None:
        return Path(option)
    try:
        path = source_root() / DEFAULT_NETS[task]
    except ResultStoreError as exc:
        raise CheckpointError(f"no network given for {task} and {exc}: pass its file") from None
    cwd = Path.cwd().resolve()
    return path.relative_to(cwd) if path.is_relative_to(cwd) else path  # a stored result names it repo-relative


def tasks(hole_net: str | None = None, bolt_net: str | None = None) -> list[Task]:
    """The two tasks of the paper's Table I with their parts and network files (module docstring)."""
    hole, peg = paper_hole(), paper_peg()
    clearance, depth = hole.meta["radial_clearance"], hole.meta["depth"]

    def insertion(n: int, rng: np.random.Generator) -> PoseSet:
        return insertion_poses(hole, peg, depth=depth, clearance=clearance, n=n,
                               penetrating_share=PENETRATING_SHARE, rng=rng)

    b, m = bolt(), nut()
    pitch, play = b.meta["p"], m.meta["play"] / 2.0
    start = np.floor(b.meta["chamfer_start_z"] / pitch - 1.0) * pitch  # engaged by a turn below the chamfer

    def screwing(n: int, rng: np.random.Generator) -> PoseSet:
        return screwing_poses(b, m, z_start=start, turns=start / pitch, pitch=pitch,
                              handedness=b.meta["handedness"], radial_play=play, n=n,
                              penetrating_share=PENETRATING_SHARE, rng=rng)

    return [Task("peg-in-hole", hole, peg, clearance, _net_path(hole_net, "peg-in-hole"), insertion),
            Task("bolting", b, m, play, _net_path(bolt_net, "bolting"), screwing)]


def _shown(path: Path) -> str:
    """``path`` relative to the source checkout when it lies inside it, else as given."""
    try:
        return Path(path).resolve().relative_to(source_root()).as_posix()
    except (ValueError, ResultStoreError):
        return str(path)


def coal_model(part: Part) -> coal.BVHModelOBBRSS:
    """The part's surface mesh as a COAL OBB/RSS bounding-volume hierarchy (part frame)."""
    model = coal.BVHModelOBBRSS()
    model.beginModel(len(part.faces), len(part.vertices))
    model.addVertices(np.ascontiguousarray(part.vertices, dtype=np.float64))
    model.addTriangles(np.ascontiguousarray(part.faces, dtype=np.int64))
    model.endModel()
    return model


def coal_request(margin: float) -> coal.CollisionRequest:
    """Every colliding triangle pair with its contact (module docstring), pairs within ``margin`` [m] included."""
    request = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, COAL_MAX_CONTACTS)
    request.enable_contact = True
    request.security_margin = float(margin)
    return request


def world_pose(rel_pos: np.ndarray, rel_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World pose of the moving part whose pose in the static part's frame is ``(rel_pos, rel_quat)``."""
    pos, quat = STATIC_POSE
    return transform(rel_pos[None], pos, quat)[0], quat_mul(quat, rel_quat)


def _best(call, repeats: int) -> tuple[float, object]:
    """Best wall time [s] of ``repeats`` calls of ``call()`` and the last call's return value."""
    best, out = np.inf, None
    for _ in range(repeats):
        started = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - started)
    return best, out


def time_task(task: Task, net: DepthNetSet, poses: PoseSet, repeats: int, device: str) -> dict:
    """Per-pose best times [s] of both sides, the learned contacts and COAL's contact counts (module docstring)."""
    nodes = np.ascontiguousarray(task.moving.vertices)
    sp, sq = STATIC_POSE
    static_model, moving_model = coal_model(task.static), coal_model(task.moving)
    static_tf = coal.Transform3s(quat_to_mat(sq), sp)
    requests = {"coal": coal_request(MARGIN_M), "coal_exact": coal_request(0.0)}
    out = {"learned": [], "coal": [], "coal_exact": [], "contacts": [], "coal_pairs": [], "coal_hit": []}

    def one(k: int, reps: int, keep: bool) -> None:
        pos, quat = world_pose(poses.pos[k], poses.quat[k])
        dt, contacts = _best(lambda: detect(net, sp, sq, nodes, pos, quat, MARGIN_M, device=device), reps)
        tf = coal.Transform3s(quat_to_mat(quat), pos)
        for key, request in requests.items():
            result = coal.CollisionResult()

            def collide(request=request, result=result):
                result.clear()
                return coal.collide(moving_model, tf, static_model, static_tf, request, result)

            dt_coal, _ = _best(collide, reps)
            if keep:
                out[key].append(dt_coal)
                if key == "coal":
                    out["coal_pairs"].append(result.numContacts())
                    out["coal_hit"].append(bool(result.isCollision()))
        if keep:
            out["learned"].append(dt)
            out["contacts"].append(contacts)

    for k in range(min(WARMUP_POSES, len(poses.pos))):
        one(k, 2, keep=False)
    for k in range(len(poses.pos)):
        one(k, repeats, keep=True)
    return out


def depth_errors(task: Task, net: DepthNetSet, poses: PoseSet, contacts: list) -> dict:
    """``|d_net − d_exact|`` [m] over the returned nodes and the band nodes of every pose (module docstring),
    with where the largest error was (static part frame, and the exact signed distance there)."""
    errors, at_contacts, missed, candidates, worst = [], [], 0, [], {"err": -1.0}
    for k, found in enumerate(contacts):
        local = transform(task.moving.vertices, poses.pos[k], poses.quat[k])
        exact = signed_distance(task.static, local)
        d_net, _ = query(net, local)
        band = np.flatnonzero(np.abs(exact) <= BAND_M)
        missed += int(np.sum(~np.isfinite(d_net[band])))
        band = band[np.isfinite(d_net[band])]
        chosen = np.setdiff1d(band, found.node_index)
        index = np.concatenate([found.node_index, chosen])
        err = np.abs(np.concatenate([found.depth, d_net[chosen]]) - exact[index])
        at_contacts.append(err[: len(found.node_index)])
        errors.append(err)
        candidates.append(int(np.isfinite(d_net).sum()))
        if len(err) and err.max() > worst["err"]:
            i = int(np.argmax(err))
            worst = {"err": float(err[i]), "pose": k, "point_m": local[index[i]].tolist(),
                     "d_exact_m": float(exact[index[i]])}
    err, at = np.concatenate(errors), np.concatenate(at_contacts)
    return {
        "depth_max_err_m": float(err.max()) if len(err) else None,
        "depth_rms_err_m": float(np.sqrt(np.mean(err**2))) if len(err) else None,
        "depth_p99_err_m": float(np.quantile(err, 0.99)) if len(err) else None,
        "depth_err_nodes": int(len(err)),
        "contact_depth_max_err_m": float(at.max()) if len(at) else None,
        "contact_depth_nodes": int(len(at)),
        "depth_max_err_at": worst if len(err) else None,
        "band_nodes_missed": missed,
        "candidate_nodes_mean": float(np.mean(candidates)),
    }


def _ms(seconds: list[float]) -> tuple[float, float, float]:
    """Mean, median and max [ms] of per-pose times [s]."""
    a = np.asarray(seconds) * 1e3
    return float(a.mean()), float(np.median(a)), float(a.max())


def agreement(poses: PoseSet, learned_hit: np.ndarray, coal_hit: np.ndarray) -> dict:
    """How often each side reports contact, and whether both agree with the exact gap where it is clear."""
    clear_in = poses.gap < -CLEAR_M
    clear_out = poses.gap > MARGIN_M + CLEAR_M
    return {
        "learned_contact_poses": int(learned_hit.sum()), "coal_contact_poses": int(coal_hit.sum()),
        "clear_contact_poses": int(clear_in.sum()), "clear_free_poses": int(clear_out.sum()),
        "learned_agrees_on_clear": int((learned_hit[clear_in]).sum() + (~learned_hit[clear_out]).sum()),
        "coal_agrees_on_clear": int((coal_hit[clear_in]).sum() + (~coal_hit[clear_out]).sum()),
    }


def measure(task: Task, n: int, repeats: int, device: str, rng: np.random.Generator) -> dict:
    """All numbers of one task (module docstring)."""
    net = load_depth_nets(task.net, task.static)
    poses = task.poses(n, rng)
    timed = time_task(task, net, poses, repeats, device)
    learned = _ms(timed["learned"])
    coal_ms, exact = _ms(timed["coal"]), _ms(timed["coal_exact"])
    learned_hit = np.array([len(c.node_index) > 0 for c in timed["contacts"]])
    errors = depth_errors(task, net, poses, timed["contacts"])
    bar = DEPTH_BAR_FRACTION * task.clearance
    speedup = coal_ms[0] / learned[0]
    return {
        "learned_ms_mean": learned[0], "learned_ms_max": learned[2], "coal_ms_mean": coal_ms[0],
        "coal_ms_max": coal_ms[2], "speedup": speedup, **errors,
        "n_triangles": {"static": int(len(task.static.faces)), "moving": int(len(task.moving.faces))},
        "learned_ms_median": learned[1], "coal_ms_median": coal_ms[1],
        "coal_exact_ms_mean": exact[0], "coal_exact_ms_median": exact[1], "coal_exact_ms_max": exact[2],
        "speedup_max": coal_ms[2] / learned[2], "speedup_vs_coal_exact": exact[0] / learned[0],
        "n_poses": n, "n_penetrating_poses": int(poses.penetrating.sum()), "n_nodes": int(len(task.moving.vertices)),
        "learned_contacts_mean": float(np.mean([len(c.node_index) for c in timed["contacts"]])),
        "coal_pairs_mean": float(np.mean(timed["coal_pairs"])),
        **agreement(poses, learned_hit, np.array(timed["coal_hit"])),
        "gap_min_m": float(poses.gap.min()), "gap_max_m": float(poses.gap.max()),
        "radial_clearance_m": task.clearance, "depth_err_bar_m": bar,
        "meets_speedup_bar": bool(speedup >= SPEEDUP_BAR),
        "meets_depth_bar": bool(errors["depth_max_err_m"] is not None and errors["depth_max_err_m"] <= bar),
        "static_part": task.static.name, "moving_part": task.moving.name, "network": _shown(task.net),
        "coordinates": net.coordinates.value, "net_meta": net.meta,
    }


def run(quick: bool, seed: int = 0, device: str = "cpu", hole_net: str | None = None,
        bolt_net: str | None = None) -> dict:
    """Both tasks of Table I (module docstring). ``hole_net`` / ``bolt_net``: network files (default: the
    committed ones). Returns ``tasks.{peg-in-hole,bolting}.{learned_ms_mean, learned_ms_max, coal_ms_mean,
    coal_ms_max, speedup, depth_max_err_m, depth_rms_err_m, n_triangles, ...}``, the settings and the network
    files used (``checkpoints``)."""
    rng = np.random.default_rng(seed)
    chosen = tasks(hole_net, bolt_net)
    with one_core() as blas_limited:
        threads = torch.get_num_threads()
        results = {t.name: measure(t, POSES[quick], REPEATS[quick], device, rng)
                   for t in progress.track(chosen, "tasks")}
    for r in results.values():
        r["meets_bar"] = r["meets_speedup_bar"] and r["meets_depth_bar"]
    return {
        "tasks": results,
        "meets_bar": all(r["meets_bar"] for r in results.values()),
        "speedup_bar": SPEEDUP_BAR, "depth_bar_fraction_of_clearance": DEPTH_BAR_FRACTION,
        "margin_m": MARGIN_M, "band_m": BAND_M, "repeats": REPEATS[quick], "device": str(device),
        "torch_threads": threads, "blas_threads_limited_to_one": blas_limited,
        "coal_request": {"flag": "CONTACT", "num_max_contacts": COAL_MAX_CONTACTS, "enable_contact": True,
                         "security_margin_m": MARGIN_M, "bvh": "BVHModelOBBRSS"},
        "static_pose": {"pos": STATIC_POSE[0].tolist(), "quat": STATIC_POSE[1].tolist()},
        "checkpoints": [str(f) for t in chosen for f in depth_net_files(t.net)],
        "quick": quick,
    }


def markdown(result: dict) -> str:
    """The Table I of this result: per task, time per query of both sides, speedup, depth error and bar."""
    lines = ["| task | triangles (static/moving) | learned mean / max [ms] | COAL mean / max [ms] | speedup | "
             "depth max / rms err [µm] | max err at contacts [µm] | bar [µm] | meets bar (speed, depth) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in result.get("tasks", {}).items():
        tri = r["n_triangles"]
        err, rms, at = (r[k] for k in ("depth_max_err_m", "depth_rms_err_m", "contact_depth_max_err_m"))
        err_text = "–" if err is None else f"{err * 1e6:.2f} / {rms * 1e6:.2f}"
        at_text = "–" if at is None else f"{at * 1e6:.2f}"
        met = ", ".join("yes" if r[k] else "no" for k in ("meets_speedup_bar", "meets_depth_bar"))
        lines.append(
            f"| {name} | {tri['static']}/{tri['moving']} | {r['learned_ms_mean']:.3f} / {r['learned_ms_max']:.3f} | "
            f"{r['coal_ms_mean']:.3f} / {r['coal_ms_max']:.3f} | {r['speedup']:.1f}× | {err_text} | {at_text} | "
            f"{r['depth_err_bar_m'] * 1e6:.1f} | {met} |")
    return "\n".join(lines) + "\n"
