"""``contactkit train --model residual`` (physics plus a learned residual) and ``contactkit calibrate`` (a MuJoCo
world identified from logs). Both read dataset files — collected, or a robot's logs imported with ``contactkit
import`` — check them against the model world before anything is fitted, and write a file every command takes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from contactkit.cli._app import app, check_outputs, console, fail, progress
from contactkit.errors import ContactkitError, InvalidInputError

__all__ = ["calibrate", "train_residual_command"]


class _Bar:
    """``progress(stage, done, total)`` onto a rich progress display, one task per stage; the display opens at the
    first report (so an error while the inputs are read is printed alone, on one line) and closes with the block."""

    def __enter__(self) -> _Bar:
        self.bar, self.tasks = None, {}
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = progress().__enter__()
        if stage not in self.tasks:
            self.tasks[stage] = self.bar.add_task(stage, total=total)
        self.bar.update(self.tasks[stage], completed=done, total=total)


def _check_files(option: str, paths: list[Path]) -> None:
    """Every path is an existing regular file (a FIFO or a device would block or exhaust the reader)."""
    for p in paths:
        if not p.is_file():
            raise InvalidInputError(f"{option} '{p}' is not a regular file")


def train_residual_command(data: list[Path], val: list[Path] | None, out: Path, backbone: str, model_world: str,
                           steps: int | None, seed: int, scene: Path | None) -> None:
    """What ``contactkit train --model residual`` runs: train a residual over ``backbone`` in ``model_world`` and
    write ``OUT/residual.safetensors`` (with ``residual.safetensors.record.json``)."""
    import dataclasses

    import torch

    from contactkit.cli.importing import scene_text
    from contactkit.eval.prediction_models import fit_residual
    from contactkit.models.residual import Backbone, ResidualTrainConfig
    from contactkit.physics import load_world
    from contactkit.scene import Scene

    try:
        if backbone not in [b.value for b in Backbone]:
            raise InvalidInputError(f"--backbone {backbone!r} is not one of {[b.value for b in Backbone]}")
        if not val:
            raise InvalidInputError("--model residual needs --val FILE: its gate is calibrated on held-out episodes")
        _check_files("--data", list(data))
        _check_files("--val", list(val))
        check_outputs((out, "--out", True))
        world = load_world(model_world)
        geometry = Scene.from_json(scene_text(scene)) if scene is not None else None
        config = ResidualTrainConfig(seed=seed)
        if steps is not None:
            if steps < 1:
                raise InvalidInputError(f"--steps must be >= 1, got {steps}")
            rollout = max(1, steps // 10)
            config = dataclasses.replace(config, one_step_iters=steps - rollout, rollout_iters=rollout)
        torch.set_num_threads(1)
        started = time.perf_counter()
        with _Bar() as bar:
            path, record = fit_residual(data, val, backbone, world, config, out / "residual.safetensors", geometry, bar)
    except ContactkitError as exc:
        fail(exc)
    v = record["val"]
    console.print(f"wrote {path} in {time.perf_counter() - started:.0f} s. Validation, one step: position "
                  f"{v['pos_err_backbone_m'] * 1e3:.3f} mm ({backbone} alone) -> {v['pos_err_m'] * 1e3:.3f} mm, "
                  f"force {v['force_err_backbone_N']:.3f} N -> {v['force_err_N']:.3f} N (tared readings)",
                  highlight=False)


@app.command()
def calibrate(
    data: Annotated[list[Path], typer.Option(help="logs to fit (HDF5; repeat --data for several)")],
    out: Annotated[Path, typer.Option(help="the calibrated world JSON file (takes --world / --model-world)")],
    held_out: Annotated[list[Path] | None, typer.Option(
        help="logs to report the fit on, never fitted (required; repeat for several)")] = None,
    world: Annotated[str, typer.Option(help="the starting world: a preset or a JSON file")] = "nominal",
    params: Annotated[str, typer.Option(
        help="'paper' (mass, inertia, damping, armature; then solref/solimp: Act-FIGNet App. V-D), "
             "'paper+friction', 'full' (the paper's plus latency, flange compliance and sensor filter), "
             "'controller' (the scene controller's stiffness, damping ratio and TCP), or comma-separated sets "
             "and names (e.g. paper,controller)")] = "paper",
    coarse: Annotated[int, typer.Option(help="coarse-search points per stage")] = 48,
    local: Annotated[int, typer.Option(help="local-optimiser evaluations per start")] = 80,
    segments: Annotated[int, typer.Option(help="replay segments per kind (free, contact)")] = 96,
    horizon: Annotated[int, typer.Option(help="steps per replay segment")] = 10,
    seed: int = 0,
    scene: Annotated[Path | None, typer.Option(help="Scene JSON for logs stored without geometry")] = None,
) -> None:
    """Identify a MuJoCo world from logs (free-space trajectories first, then contact ones; a coarse search, then a
    local optimiser) and write it as a world file; the fit on held-out logs is printed and stored beside it."""
    from contactkit.calibration import CalibrationBudget
    from contactkit.cli.importing import scene_text
    from contactkit.eval.prediction_models import fit_calibration
    from contactkit.physics import load_world
    from contactkit.scene import Scene

    try:
        _check_files("--data", list(data))
        _check_files("--held-out", list(held_out or []))
        if not held_out:
            raise InvalidInputError("calibrate needs --held-out FILE: the fit is reported on logs it never saw")
        check_outputs((out, "--out", False))
        if min(coarse, local, segments, horizon) < 1:
            raise InvalidInputError("--coarse, --local, --segments and --horizon must be >= 1")
        budget = CalibrationBudget(coarse, local, segments, horizon)
        geometry = Scene.from_json(scene_text(scene)) if scene is not None else None
        with _Bar() as bar:
            path, record = fit_calibration(data, held_out, load_world(world), params, budget, out, seed, geometry, bar)
    except ContactkitError as exc:
        fail(exc)
    console.print(f"wrote {path} ({record['evaluations']} replays)", highlight=False)
    if record.get("scene"):
        console.print(f"wrote {record['scene']}: the logs' scene with the calibrated controller "
                      f"({', '.join(f'{k} {v:.4g}' for k, v in record['controller'].items())}); give it as --scene",
                      highlight=False)
    for kind, r in record["held_out"].items():
        s, c = r["start"], r["calibrated"]
        console.print(f"held-out {kind}: position {s['pos_rmse_m'] * 1e3:.3f} -> {c['pos_rmse_m'] * 1e3:.3f} mm, "
                      f"rotation {s['rot_rmse_rad']:.4f} -> {c['rot_rmse_rad']:.4f} rad, force "
                      f"{s['force_rmse_N']:.3f} -> {c['force_rmse_N']:.3f} N", highlight=False)
