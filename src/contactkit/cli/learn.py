"""``contactkit train`` and ``evaluate``: train Act-FIGNet / FIGNet+ and measure prediction accuracy."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from contactkit.cli._app import app, check_device_and_checkpoint, check_outputs, console, fail, progress
from contactkit.errors import ContactkitError, InvalidInputError

MODEL_VARIANTS = {"act-fignet": "act_fignet", "fignet-plus": "fignet_plus"}
RESIDUAL_MODEL = "residual"
"""``contactkit train --model residual``: physics plus a learned residual (:mod:`contactkit.cli.residual`)."""
"""``contactkit train --model`` names → :class:`contactkit.models.gnn.ModelVariant` values."""
VAL_FRACTION = 0.1
"""Episodes held out for validation when ``contactkit train`` is given no ``--val`` file."""


def _train_sets(data: list[Path], val: list[Path] | None, seed: int, scene=None, tare: bool = True):
    """Training and validation :class:`~contactkit.data.training.TrainingData` (a split when no ``--val``);
    ``scene`` for episodes stored without one; ``tare``: F/T labels less each episode's free-space offset."""
    from contactkit.data.reader import open_dataset
    from contactkit.data.training import training_data
    from contactkit.data.windows import split_by_episode

    if val:
        return training_data(data, scene=scene, tare=tare), training_data(val, scene=scene, tare=tare)
    n = 0
    for path in data:
        with open_dataset(path) as ds:
            n += len(ds)
    train_idx, val_idx = split_by_episode(n, VAL_FRACTION, np.random.default_rng(seed))
    return (training_data(data, episodes=train_idx, scene=scene, tare=tare),
            training_data(data, episodes=val_idx, scene=scene, tare=tare))


def _action_mode(option: str | None, data: list[Path]):
    """``--action-mode`` (default: the first file's ``action_mode``); a wrench model needs the applied or commanded
    wrench, which a robot log without wrench commands lacks (its ``action`` is zero)."""
    from contactkit.data.reader import open_dataset
    from contactkit.model import ActionMode

    modes = [m.value for m in ActionMode]
    if option is not None and option not in modes:
        raise InvalidInputError(f"--action-mode {option!r} is not one of {modes}")
    mode = ActionMode(option) if option is not None else None
    for path in data:
        with open_dataset(path) as ds:
            meta = ds.meta
        mode = mode or meta.action_mode
        if mode is ActionMode.WRENCH and json.loads(meta.policy).get("has_action") is False:
            raise InvalidInputError(f"{path}: a robot log without wrench commands (its action is zero) cannot train a "
                                    f"wrench model; map its command_wrench stream, or use --action-mode pose-delta "
                                    "on a log with pose targets")
    return mode


def _val_text(p) -> str:
    v = p.val
    return (f"step {p.step}: train loss {p.train_loss:.3g}, lr {p.lr:.1e} | validation: one-step position "
            f"{v['pos_rmse'] * 1e3:.3f} mm, force {v['force_err']:.3f} N, torque {v['torque_err']:.4f} N·m")


@app.command()
def train(
    data: Annotated[list[Path], typer.Option(help="training HDF5 file(s); repeat --data for several")],
    out: Annotated[Path, typer.Option(help="output folder for checkpoints (resumed if it holds a run)")],
    val: Annotated[list[Path] | None, typer.Option(
        help="validation HDF5 file(s); repeat --val for several (default: 10 % of the episodes)")] = None,
    model: Annotated[str, typer.Option(help="act-fignet | fignet-plus | residual (a learned correction of a physics "
                                             "backbone: --backbone, --model-world)")] = "act-fignet",
    backbone: Annotated[str, typer.Option(help="residual: the physics it corrects, mujoco | engine")] = "mujoco",
    model_world: Annotated[str, typer.Option(
        help="residual: the backbone's world, a preset or JSON file (e.g. contactkit calibrate's)")] = "nominal",
    config: Annotated[str, typer.Option(help="preset: small (2 CPUs, < 30 min) | paper (Table II)")] = "small",
    steps: Annotated[int | None, typer.Option(help="optimisation steps (default: the preset's)")] = None,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    threads: Annotated[int, typer.Option(help="torch CPU threads (1 is fastest for these small graphs)")] = 1,
    seed: int = 0,
    resume: Annotated[bool, typer.Option(help="continue from OUT/last.safetensors if present")] = True,
    augment: Annotated[str, typer.Option(
        help="rotation augmentation of the graph networks' samples: yaw (about gravity; the default: SO(3) stalls "
             "training on a CPU budget), so3 (the paper's), none")] = "yaw",
    collision_radius: Annotated[float | None, typer.Option(
        help="face-interaction radius in metres (paper App. Table III compares 0.001 and 0.01; default 0.01)")] = None,
    action_mode: Annotated[str | None, typer.Option(
        "--action-mode", help="wrench | pose-delta: the model's action, the applied wrench or the impedance "
        "target's displacement (default: the data's action mode)")] = None,
    scene: Annotated[Path | None, typer.Option(
        help="Scene JSON file (contactkit scene) for episodes stored without geometry, e.g. robot logs imported "
        "without --scene: training needs the scene")] = None,
    time_budget_s: Annotated[float | None, typer.Option(
        help="stop after the step that ends this many seconds after the start (validated and saved there; "
        "run again to continue)")] = None,
    workers: Annotated[int, typer.Option(help="processes building batches ahead of the optimiser (0: none; "
                                         "the same batches either way)")] = 0,
    from_checkpoint: Annotated[Path | None, typer.Option(
        help="continue the training state of this checkpoint (e.g. a committed models/*/best.safetensors) in an "
        "OUT without a run of its own; same settings required but for --steps")] = None,
    tare: Annotated[bool, typer.Option(
        help="graph networks: subtract each episode's F/T sensor offset (the median reading where the tool is "
        "clear of all static geometry) from its labels, so that the model predicts tared readings")] = True,
    previous_command: Annotated[bool, typer.Option(
        help="graph networks: also feed the previous step's command (a command latency makes it matter); "
        "--no-previous-command to continue a run made before the option existed")] = True,
    ddp: Annotated[int, typer.Option(
        help="train data-parallel (PyTorch DDP, gloo) in this many local processes, each on its share of every "
        "batch (the serial run's steps within float tolerance); under torchrun (torchrun --nproc-per-node N -m "
        "contactkit train ...) its processes are used instead")] = 1,
) -> None:
    """Train Act-FIGNet, FIGNet+ or a residual over physics on recorded trajectories, with periodic validation. The
    data must carry its scene (collected data does; for imported robot logs give --scene here or to contactkit
    import)."""
    import dataclasses

    import torch

    from contactkit.cli.importing import scene_text
    from contactkit.models.gnn import ModelVariant, RotationAugmentation, TrainConfig
    from contactkit.models.gnn import train as run_train
    from contactkit.models.gnn.ddp import init_process_group, launched_by_torchrun, spawn_training, train_distributed
    from contactkit.models.gnn.train import LAST_CHECKPOINT, check_out_dir
    from contactkit.scene import Scene

    if model == RESIDUAL_MODEL:
        from contactkit.cli.residual import train_residual_command

        return train_residual_command(list(data), list(val or []), out, backbone, model_world, steps, seed, scene)
    try:  # every argument is checked before any data is read (--out, a checkpoint to resume included)
        check_device_and_checkpoint(device)
        if model not in MODEL_VARIANTS:
            raise InvalidInputError(f"unknown model {model!r}; choose one of {sorted(MODEL_VARIANTS)} or "
                                    f"{RESIDUAL_MODEL!r}")
        if threads < 1:
            raise InvalidInputError(f"--threads must be >= 1, got {threads}")
        if ddp < 1 or ((ddp > 1 or launched_by_torchrun()) and workers > 0):
            raise InvalidInputError(f"--ddp must be >= 1 and takes no batch --workers, got --ddp {ddp}, --workers "
                                    f"{workers}")
        torch.set_num_threads(threads)
        geometry = scene_text(scene) if scene is not None else None
        if augment not in [a.value for a in RotationAugmentation]:
            raise InvalidInputError(f"--augment {augment!r} is not one of {[a.value for a in RotationAugmentation]}")
        cfg = TrainConfig.preset(config, seed=seed, rotation=RotationAugmentation(augment),
                                 **({"num_steps": steps} if steps is not None else {}))
        graph = dataclasses.replace(cfg.model.graph, variant=ModelVariant(MODEL_VARIANTS[model]),
                                    previous_command=previous_command,
                                    **({"collision_radius": collision_radius} if collision_radius is not None else {}))
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, graph=graph))
        last = check_out_dir(out) / LAST_CHECKPOINT
        if from_checkpoint is not None:
            _start_from(from_checkpoint, last, resume)
        if resume and last.exists():
            check_device_and_checkpoint(device, last)
        mode = _action_mode(action_mode, list(data) + list(val or []))  # the first read of the data
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(
            cfg.model, graph=dataclasses.replace(cfg.model.graph, action_mode=mode)))
        train_set, val_set = _train_sets(data, val, seed, None if geometry is None else Scene.from_json(geometry),
                                         tare)
        console.print(f"{model} ({config}): {len(train_set.windows)} training and {len(val_set.windows)} "
                      f"validation windows, {len(train_set.scenes)} scene(s), {cfg.num_steps} steps on {device}")
        with progress() as bar:
            job = bar.add_task(f"train {model}", total=cfg.num_steps)

            def report(p) -> None:
                bar.update(job, completed=p.step)
                if p.val is not None:
                    bar.console.print(_val_text(p), highlight=False)

            common = {"scene": train_set.scenes, "step": train_set.step, "resume": resume,
                      "time_budget_s": time_budget_s}
            if launched_by_torchrun():
                init_process_group(device)
                result = train_distributed(cfg, train_set.windows, val_set.windows, out, device, report, **common)
            elif ddp > 1:
                result = spawn_training(ddp, cfg, train_set.windows, val_set.windows, out, device, None, **common)
            else:
                result = run_train(cfg, train_set.windows, val_set.windows, out, device, report, workers=workers,
                                   **common)
    except ContactkitError as exc:
        fail(exc)
    if int(os.environ.get("RANK", "0")) != 0:
        return  # a torchrun process other than rank 0: rank 0 writes and reports
    history = [{"step": s, **v} for s, v in result.val_history]
    (out / "val_history.json").write_text(json.dumps(history, indent=1) + "\n")
    stopped = " (time budget spent: run again to continue)" if result.out_of_time else ""
    console.print(f"done at step {result.step}{stopped}: best {result.best_checkpoint}, last {result.last_checkpoint}")


def _start_from(checkpoint: Path, last: Path, resume: bool) -> None:
    """Copy a training checkpoint to ``last`` (OUT/last.safetensors) so that training continues from it.

    Raises:
        InvalidInputError: OUT already holds a run, or --no-resume. CheckpointError: the file is unusable.
    """
    from contactkit.files import read_bounded, write_atomic
    from contactkit.models.gnn.checkpoint import MAX_FILE_BYTES, load_checkpoint

    if not resume:
        raise InvalidInputError("--from-checkpoint continues a run: it cannot be combined with --no-resume")
    if last.exists():
        raise InvalidInputError(f"--from-checkpoint: {last.parent} already holds a run ({last.name}); choose an "
                                "empty --out, or drop --from-checkpoint to continue that run")
    if not load_checkpoint(checkpoint).train_state.get("config"):
        raise InvalidInputError(f"--from-checkpoint {checkpoint}: it holds no training state to continue")
    write_atomic(last, read_bounded(checkpoint, MAX_FILE_BYTES,
                                    lambda problem: InvalidInputError(f"--from-checkpoint {checkpoint}: {problem}")))


def check_periods(predictors, recorded) -> None:
    """Refuse a predictor whose model steps another control period than the recorded data (a 20 Hz world replaying
    10 Hz logs would predict each logged step from half of it); the model is built for the data's first scene."""
    from contactkit.model import check_control_period
    from contactkit.scene import Scene

    if not recorded.episodes:
        return
    scene = Scene.from_json(recorded.scenes[0])
    for p in predictors:
        model = p.make(scene, recorded.meta.action_mode)
        check_control_period(float(model.control_dt), recorded.meta.control_dt, str(recorded.path), f"model {p.name}")


@app.command()
def evaluate(
    model: Annotated[Path, typer.Option(help="training folder (best, else last checkpoint) or checkpoint file")],
    data: Annotated[Path, typer.Option(help="test HDF5 file")],
    json_path: Annotated[Path | None, typer.Option("--json", help="write the rows to this JSON file")] = None,
    baseline: Annotated[
        str, typer.Option(help="MuJoCo world replaying the same commands: nominal, target, a JSON file, or none")
    ] = "nominal",
    horizon: Annotated[int, typer.Option(help="rollout steps T")] = 100,
    segments: Annotated[int, typer.Option(help="rollout segments drawn from the data")] = 64,
    transitions: Annotated[int, typer.Option(help="transitions for the one-step F/T error")] = 2000,
    device: str = "cpu",
    seed: int = 0,
) -> None:
    """Rollout RMSE (position, orientation; absolute and relative) and one-step F/T error on a dataset."""
    from contactkit.eval.predict_eval import (
        EvalConfig,
        checkpoint_predictor,
        evaluate_predictors,
        load_recorded,
        mujoco_predictor,
        report_row,
    )
    from contactkit.physics import load_world

    try:
        check_device_and_checkpoint(device)
        check_outputs((json_path, "--json", False))
        label = model.name if model.is_dir() or not model.parent.name else model.parent.name
        predictors = [checkpoint_predictor(model, label, device)]
        if baseline != "none":
            predictors.append(mujoco_predictor(load_world(baseline), f"mujoco-{Path(baseline).stem}"))
        recorded = load_recorded(data)
        check_periods(predictors, recorded)
        cfg = EvalConfig(horizon=horizon, max_segments=segments, max_transitions=transitions)
        with console.status(f"evaluating on {data} ..."):
            reports = evaluate_predictors(predictors, recorded, cfg, np.random.default_rng(seed))
    except ContactkitError as exc:
        fail(exc)
    rows = [report_row(name, recorded.policy, r) for name, r in reports.items()]
    table = Table(title=f"{data} ({recorded.policy}), T = {horizon}")
    for col in ("model", "pos RMSE [mm]", "rel", "rot RMSE [deg]", "rel", "force [N]", "torque [N·m]"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["model"], f"{r['rmse_pos_mm']:.3f}", f"{r['rel_pos']:.3f}", f"{r['rmse_rot_deg']:.3f}",
                      f"{r['rel_rot']:.3f}", f"{r['force_err_N']:.3f}", f"{r['torque_err_Nm']:.4f}")
    console.print(table)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"data": str(data), "model": str(model), "rows": rows}, indent=2) + "\n")
        console.print(f"wrote {json_path}")
