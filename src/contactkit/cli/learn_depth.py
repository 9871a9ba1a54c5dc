"""``contactkit learn``: per-part models learned from geometry alone (no recorded data): the depth networks of
``learn depth`` and the piecewise sets of ``learn depth-set`` (``learn pushing`` registers from
:mod:`contactkit.cli.pushing`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from contactkit.cli._app import app, check_outputs, console, fail, progress
from contactkit.errors import ContactkitError, InvalidInputError

learn_app = typer.Typer(help="Learn per-part models from geometry alone (no recorded data).", no_args_is_help=True)
app.add_typer(learn_app, name="learn")


@learn_app.command("depth")
def learn_depth(
    part: Annotated[str, typer.Option(help="paper-hole | m48-bolt | a mesh file (OBJ/STL/PLY, metres)")],
    out: Annotated[Path, typer.Option(help="output folder: gets <name>.safetensors and accuracy.json")],
    coordinates: Annotated[str | None, typer.Option(
        help="cartesian | cylindrical | helical (default: the part's; cylindrical hole, helical bolt)")] = None,
    steps: Annotated[int | None, typer.Option(
        help="Adam steps (default: the part's preset). Below the preset's S, N steps also scale the samples and "
             "the L-BFGS iterations (and mining) by N/S, at least 2000 samples; options given explicitly are "
             "kept")] = None,
    budget: Annotated[float | None, typer.Option(
        help="[s] bound the whole run's expected time: steps, samples and L-BFGS iterations scaled by the largest "
             "factor <= 1 that fits, from unit costs timed here at the start")] = None,
    seed: int = 0,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    threads: Annotated[int, typer.Option(help="torch CPU threads")] = 1,
    name: Annotated[str | None, typer.Option(help="file stem (default: hole, bolt, or the mesh file's stem)")] = None,
    init: Annotated[Path | None, typer.Option(
        help="start from this network of the same part and domain (warm start; --steps 0: refinement only)")] = None,
    samples: Annotated[int | None, typer.Option(
        help="training samples drawn around the surface (default: the preset's)")] = None,
    refine_steps: Annotated[int | None, typer.Option(
        help="L-BFGS iterations after Adam (default: the preset's)")] = None,
    refine_power: Annotated[int | None, typer.Option(
        help="power of the refinement's errors (default: the preset's)")] = None,
    mate_poses: Annotated[int | None, typer.Option(
        help="hard-example mining: poses of the mating part whose nodes are mined (presets only; default 0)")] = None,
    mine_worst: Annotated[int | None, typer.Option(help="mined nodes kept: the worst-fitted")] = None,
    mine_random: Annotated[int | None, typer.Option(help="mined nodes kept: others at random")] = None,
    adam_mate_poses: Annotated[int | None, typer.Option(
        help="the mating part's nodes at this many poses join the Adam samples from the start (presets only)")] = None,
    adam_mate_nodes: Annotated[int | None, typer.Option(help="how many of those nodes join (at random)")] = None,
    end_fraction: Annotated[float | None, typer.Option(
        help="share of the near-surface samples drawn by the axial ends (default: the preset's)")] = None,
    end_span: Annotated[float | None, typer.Option(help="[m] how far from the axial ends those lie")] = None,
    z_range: Annotated[str | None, typer.Option(
        help="LO,HI [m]: the axial window of the domain (cylindrical/helical), one piece of a piecewise network "
             "(contactkit.depth.DepthNetSet)")] = None,
) -> None:
    """Train a part's penetration-depth network from its mesh (tight-tolerance paper §III-A, §V-B) and measure
    its error against the exact signed distance in the ±0.5 mm band."""
    import time

    started = time.perf_counter()
    import torch

    from contactkit.depth import accuracy, load_depth_net, save_depth_net
    from contactkit.depth.network import check_device
    from contactkit.depth.presets import part_setup

    try:
        check_device(device)
        check_outputs((out, "--out", True))
        if threads < 1:
            raise InvalidInputError(f"--threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
        extra = {"samples": samples, "refine_steps": refine_steps, "refine_power": refine_power,
                 "mate_poses": mate_poses,
                 "mine_worst": mine_worst, "mine_random": mine_random, "adam_mate_poses": adam_mate_poses,
                 "adam_mate_nodes": adam_mate_nodes, "end_fraction": end_fraction, "end_span": end_span}
        extra = {k: v for k, v in extra.items() if v is not None}
        window = _pair(z_range, "--z-range") if z_range is not None else None
        ps = part_setup(part, coordinates=coordinates, seed=seed, overrides=extra, z_range=window)
        start = load_depth_net(init, ps.part) if init is not None else None
        stem = name or {"paper-hole": "hole", "m48-bolt": "bolt"}.get(part, Path(part).stem)
        cfg, expected = _plan(ps, steps, budget, set(extra), device, started)
        if budget is not None:  # the run's own settings, so that its command repeats it without the timing
            extra = {**extra, "samples": cfg.samples, "refine_steps": cfg.refine_steps}
        console.print(f"{ps.part.name}: {len(ps.part.faces)} triangles, {ps.setup.frame.coordinates.value} "
                      f"coordinates, {cfg.samples} samples, {cfg.steps} Adam steps (batch {cfg.batch}, {cfg.dtype}), "
                      f"{cfg.refine_steps} L-BFGS iterations; expected about {_duration(expected)} on this machine",
                      highlight=False, soft_wrap=True)
        net = _train(ps, cfg, stem, device, start)
        t0 = time.perf_counter()
        acc = accuracy(net, ps.part, np.random.default_rng(seed + 1), device=device)
        acc["eval_time_s"] = round(time.perf_counter() - t0, 1)
        if ps.contact_nodes is not None:
            acc["contact_nodes"] = accuracy(net, ps.part, np.random.default_rng(seed + 1), points=ps.contact_nodes,
                                            device=device)
        net = dataclasses_replace_meta(net, {"expected_s": round(expected, 1)}
                                       | ({"budget_s": budget} if budget is not None else {}))
        command = (f"contactkit learn depth --part {part} --out {out} --coordinates "
                   f"{ps.setup.frame.coordinates.value} --steps {cfg.steps} --seed {seed}"
                   + (f" --init {init}" if init is not None else "")
                   + "".join(f" --{k.replace('_', '-')} {v}" for k, v in extra.items())
                   + (f" --z-range {z_range}" if z_range is not None else ""))
        net = dataclasses_replace_meta(net, {"accuracy": acc, "command": command})
        path = save_depth_net(net, out / f"{stem}.safetensors")
    except ContactkitError as exc:
        fail(exc)
    (out / "accuracy.json").write_text(json.dumps(net.meta, indent=1) + "\n")
    (out / "README.md").write_text(_model_card(net, path))
    if "contact_nodes" in acc:
        c = acc["contact_nodes"]
        console.print(f"contact-relevant nodes within the band ({c['n']}): max {c['max_um']:.2f} µm, RMS "
                      f"{c['rms_um']:.2f} µm, p99 {c['p99_um']:.2f} µm")
    console.print(f"±{acc['band_m'] * 1e3:g} mm band, {acc['n']} points: max {acc['max_um']:.2f} µm, RMS "
                  f"{acc['rms_um']:.2f} µm, p99 {acc['p99_um']:.2f} µm ({acc['n_far']} band points outside the "
                  f"domain); wrote {path}")


def _plan(ps, steps: int | None, budget: float | None, keep: set[str], device: str, started: float):
    """``(TrainConfig, expected seconds)`` of the run: the preset's settings, scaled to ``--steps``
    (:func:`contactkit.depth.budget.steps_config`) and then to what is left of ``--budget`` [s] since ``started``
    (``time.perf_counter()`` at the command's start; :func:`contactkit.depth.budget.fit_budget}`), keeping the
    options in ``keep``."""
    import time

    from contactkit.depth.budget import expected_seconds, fit_budget, measure_costs, steps_config
    from contactkit.depth.training import ACCURACY_SAMPLES

    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise InvalidInputError(f"--budget must be finite and > 0 [s], got {budget!r}")
    cfg = ps.config if steps is None else steps_config(ps.config, steps, keep)
    cost = measure_costs(ps.part, ps.setup, cfg, device)
    eval_points = ACCURACY_SAMPLES + (0 if ps.contact_nodes is None else len(ps.contact_nodes))
    if budget is not None:
        spent = time.perf_counter() - started
        if spent >= budget:
            raise InvalidInputError(f"--budget {budget:g} s was spent before training (reading the part and timing "
                                    f"this machine took {spent:.1f} s)")
        cfg = fit_budget(cfg, cost, budget - spent, keep, eval_points)
    return cfg, expected_seconds(cfg, cost, eval_points)


def _train(ps, cfg, stem: str, device: str, start):
    """Train with a progress bar over the Adam steps and L-BFGS iterations (phase and RMS in its text)."""
    from contactkit.depth import train_depth_net

    with progress() as bar:
        job = bar.add_task(f"learn depth {stem}: sampling", total=cfg.steps + cfg.refine_steps)

        def report(step: int, loss: float) -> None:
            phase = "Adam" if step <= cfg.steps else "L-BFGS"
            bar.update(job, completed=step, description=f"learn depth {stem}: {phase} (RMS {loss**0.5 * 1e6:.1f} µm)")

        return train_depth_net(ps.part, ps.setup, cfg, report, device=device, init=start, mate=ps.mate)


def _duration(seconds: float) -> str:
    """``seconds`` as ``"12 s"``, ``"3.5 min"`` or ``"1.2 h"``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


@learn_app.command("depth-set")
def learn_depth_set(
    pieces: Annotated[list[Path], typer.Argument(help="the pieces' .safetensors files (contactkit learn depth "
                                                      "--z-range), inside the manifest's folder")],
    out: Annotated[Path, typer.Option(help="the manifest to write (.json)")],
) -> None:
    """Join depth networks of one part, trained on adjacent axial windows (``learn depth --z-range``), into a
    piecewise network (a manifest naming each piece and its sha256); every command that takes a network file
    takes the manifest."""
    from contactkit.depth import load_depth_nets, save_depth_net_set

    try:
        path = save_depth_net_set(pieces, out)
        net_set = load_depth_nets(path)
    except ContactkitError as exc:
        fail(exc)
    windows = ", ".join(f"[{n.feature_lo[-1] * 1e3:g}, {n.feature_hi[-1] * 1e3:g}]" for n in net_set.pieces)
    console.print(f"{net_set.part_name}: {len(net_set.pieces)} pieces, axial windows {windows} mm; wrote {path}")


def _pair(text: str, option: str) -> tuple[float, float]:
    """``"LO,HI"`` as two floats; InvalidInputError naming ``option`` otherwise."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise InvalidInputError(f"{option} takes LO,HI (two numbers), got {text!r}") from None
    return lo, hi


def _um(acc: dict) -> str:
    return (f"max {acc['max_um']:.2f} µm, RMS {acc['rms_um']:.2f} µm, p99 {acc['p99_um']:.2f} µm over {acc['n']} "
            f"points ({acc['n_far']} outside the domain)")


def _model_card(net, path: Path) -> str:
    """Markdown model card of a trained depth network (what ``contactkit learn depth`` writes as README.md)."""
    import hashlib
    import time

    m, acc = net.meta, net.meta["accuracy"]
    k = len(net.feature_lo)
    lines = [
        f"# Depth network of {net.part_name}", "",
        "Learned signed distance d(x) [m] of a node x (part frame) to the part's surface, positive outside "
        "(tight-tolerance paper §III-A; network of §V-B). Load with "
        "`contactkit.depth.load_depth_net(path, part)` (the part's mesh sha256 must match).", "",
        f"- file: `{path.name}`, {path.stat().st_size} bytes, sha256 `{hashlib.sha256(path.read_bytes()).hexdigest()}`",
        f"- part: `{net.part_name}`, mesh sha256 `{net.mesh_sha256}`",
        f"- coordinates: {net.coordinates.value} (origin {net.origin.tolist()}, axis {net.axis.tolist()}, ref "
        f"{net.ref.tolist()}, pitch {net.pitch} m, handedness {net.handedness})",
        f"- padded domain (features): lo {net.feature_lo.tolist()}, hi {net.feature_hi.tolist()}; outside it a "
        "point is far (no contact)",
        f"- architecture: {k} features → 64 ReLU → 64 ReLU → 1, d = {net.depth_scale} m · tanh(·)",
        f"- samples: {m['n_samples']} in the domain (surface fraction {m['surface_fraction']}, of which "
        f"{m['edge_fraction']} near sharp edges; normal offsets σ ∈ {m['offset_scales_m']} m; the rest uniform)",
        f"- training: {m['steps']} Adam steps, batch {m['batch']} (hard-example share {m['hard_fraction']}, "
        f"refreshed every {m['hard_every']}), lr {m['lr']} → {m['lr_final']} cosine, {m['dtype']}, squared "
        f"error within ±{m['fit_band']} m of the surface and a hinge beyond, seed {m['seed']}, "
        f"{m['train_time_s']} s on this machine",
        f"- accuracy vs the exact signed distance (libigl), ±{acc['band_m'] * 1e3:g} mm band: {_um(acc)}",
    ]
    lines[-1:-1] = _refinement_lines(m)
    if "contact_nodes" in acc:
        lines.append(f"- accuracy at the mating part's nodes at sampled poses of the fit (within the band): "
                     f"{_um(acc['contact_nodes'])}")
    import platform
    from importlib.metadata import version

    import torch

    lines.append(f"- made with torch {torch.__version__}, libigl {version('libigl')}, Python "
                 f"{platform.python_version()}, {time.strftime('%Y-%m-%d', time.gmtime())}")
    lines += ["", "Made by (from the repository root; one torch thread):", "", "```", f"nice -n 10 {m['command']}",
              "```", ""]
    return "\n".join(lines)


def _refinement_lines(m: dict) -> list[str]:
    """The model card's lines on the warm start, the hard-example mining and the L-BFGS refinement (if any)."""
    out = []
    if m.get("budget_s") is not None:
        out.append(f"- steps, samples and L-BFGS iterations scaled to fit a budget of {m['budget_s']:g} s (expected "
                   f"{m.get('expected_s')} s; `contactkit.depth.budget`)")
    if m.get("adam_mate_poses"):
        out.append(f"- of those samples, up to {m['adam_mate_nodes']} are the mating part's nodes at "
                   f"{m['adam_mate_poses']} random poses of the fit (within ±{m['fit_band']} m), in the Adam phase "
                   "from the first step")
    if m.get("end_fraction"):
        out.append(f"- {m['end_fraction']} of the near-surface samples lie within {m['end_span']} m of the axial ends")
    if m.get("init"):
        out.append(f"- started from a network made by `{m['init'].get('command')}` ({m['init'].get('steps')} Adam "
                   f"steps, {m['init'].get('train_time_s')} s), not from fresh weights")
    if m.get("mate_poses"):
        out.append(f"- hard-example mining: the mating part's nodes at {m['mate_poses']} random poses of the fit "
                   f"({m.get('mate_candidates')} within ±{m['fit_band']} m; before: max "
                   f"{m.get('mate_max_err_before_um', 0):.1f} µm, RMS {m.get('mate_rms_err_before_um', 0):.1f} µm), "
                   f"the {m['mine_worst']} worst and {m['mine_random']} others added to the refinement's samples")
    if m.get("refine_steps"):
        out.append(f"- refinement: {m['refine_steps']} full-batch float64 L-BFGS iterations on the errors to the "
                   f"power {m['refine_power']}")
    return out


def dataclasses_replace_meta(net, extra: dict):
    """``net`` with ``extra`` merged into its meta."""
    import dataclasses

    return dataclasses.replace(net, meta={**net.meta, **extra})
