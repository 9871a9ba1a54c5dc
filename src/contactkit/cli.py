"""The ``contactkit`` command: collect, inspect, plot, benchmark, run experiments, regenerate results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contactkit.errors import ContactkitError, InvalidInputError

app = typer.Typer(
    help="contactkit: contact models, F/T sensing, estimation and control for manipulation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()


def _fail(exc: Exception) -> None:
    """Print ``exc`` as one ``error:`` line (its text escaped: a path in brackets is no markup) and exit 2."""
    text = " ".join(str(exc).split())
    console.print(f"[bold red]error:[/] {escape(text)}", soft_wrap=True, markup=True, highlight=False)
    raise typer.Exit(2)


def _check_device_and_checkpoint(device: str, checkpoint: str | Path | None = None) -> None:
    """Before any work: ``--device`` exists here, ``--checkpoint`` (a file or a training folder) is a valid
    Act-FIGNet checkpoint (InvalidInputError / CheckpointError naming them)."""
    from contactkit.models.gnn.checkpoint import check_device, load_checkpoint

    check_device(device)
    if checkpoint is not None:
        from contactkit.eval.predictors import resolve_checkpoint

        load_checkpoint(resolve_checkpoint(checkpoint))


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _check_outputs(*outputs: tuple[Path | None, str, bool]) -> None:
    """Before any work: each ``(path, option, is_folder)`` output can be written there: no existing path of the
    other kind, and its nearest existing parent is a folder (InvalidInputError naming the option)."""
    for path, option, folder in outputs:
        if path is not None and path.exists() and path.is_dir() != folder:
            raise InvalidInputError(f"{option} '{path}' is an existing {'file' if folder else 'folder'}; "
                                    f"{option} needs {'a folder' if folder else 'a file name'}")
        above = next((p for p in path.parents if p.exists()), None) if path is not None else None
        if above is not None and not above.is_dir():
            raise InvalidInputError(f"{option} '{path}' cannot be created: '{above}' is a file")


@app.command()
def collect(
    out: Annotated[Path, typer.Option(help="output HDF5 file (resumed if it exists with the same settings)")],
    task: Annotated[str, typer.Option(help="peg-in-hole | random-scene")] = "peg-in-hole",
    shape: Annotated[
        str, typer.Option(help="peg shape: triangle, square, pentagon, hexagon, circle")
    ] = "hexagon",
    clearance: Annotated[float, typer.Option(help="radial clearance [m]")] = 1e-3,
    slot_shape: Annotated[str | None, typer.Option(help="slot shape if not the peg's")] = None,
    policy: Annotated[
        str, typer.Option(help="random-spline | spiral | circle-slow | circle-fast")
    ] = "random-spline",
    episodes: int = 20,
    steps: int = 400,
    seed: int = 0,
    world: Annotated[str | None, typer.Option(help="physics: 'nominal', 'target' or a JSON file")] = None,
    backend: Annotated[
        str, typer.Option(help="simulator: mujoco (the reference) | engine (contactkit's rigid contact engine)")
    ] = "mujoco",
) -> None:
    """Collect trajectories (state, action, F/T) into an HDF5 dataset."""
    from contactkit.data.collect import CollectSpec
    from contactkit.data.collect import collect as run_collect
    from contactkit.physics import load_world

    try:
        _check_outputs((out, "--out", False))
        spec = CollectSpec(
            task=task,
            shape=shape,
            clearance=clearance,
            slot_shape=slot_shape,
            policy=policy,
            episodes=episodes,
            steps=steps,
            seed=seed,
            world=load_world(world),
            backend=backend,
        )
        bar = _progress()
        job = bar.add_task(f"collect {task}/{policy}", total=episodes)

        def report(done: int, total: int) -> None:  # first called once OUT is open and checked
            if not bar.live.is_started:
                bar.start()
            bar.update(job, completed=done)

        try:
            written = run_collect(spec, str(out), progress=report)
        finally:
            if bar.live.is_started:
                bar.stop()
    except ContactkitError as exc:
        _fail(exc)
    console.print(f"wrote {written} new episode(s) to {out}")


@app.command()
def info(path: Path) -> None:
    """Summarise a dataset: episodes, steps, scene, world, value ranges."""
    from contactkit.data.reader import open_dataset

    try:
        with open_dataset(path) as ds:
            summary = ds.summary()
            meta = ds.meta
    except ContactkitError as exc:
        _fail(exc)
    table = Table(title=str(path))
    table.add_column("field")
    table.add_column("value")
    scene = json.loads(meta.scene)
    policy = json.loads(meta.policy)
    for key, value in (
        ("episodes", summary["episodes"]),
        ("steps", summary["steps"]),
        ("scene", scene.get("name", "?")),
        ("policy", policy.get("name")),
        ("backend", meta.backend),
        ("action mode", meta.action_mode.value),
        ("control dt [s]", meta.control_dt),
        ("seed", meta.seed),
        ("world", meta.world),
        ("created", meta.created),
        ("contactkit", meta.contactkit_version),
    ):
        table.add_row(key, str(value))
    for field, rng in summary.get("ranges", {}).items():
        lo, hi = np.asarray(rng["min"]), np.asarray(rng["max"])
        table.add_row(
            f"{field} range", f"{np.array2string(lo, precision=3)} .. {np.array2string(hi, precision=3)}"
        )
    console.print(table)


@app.command()
def plot(
    path: Path,
    out: Annotated[Path, typer.Option(help="image to write (.png, .pdf, .svg ...), or a folder for PATH-episodeK.png")],
    episode: Annotated[int, typer.Option(help="episode index, 0 .. episodes - 1")] = 0,
) -> None:
    """Plot position, orientation and F/T of one episode against time."""
    from contactkit.data.reader import open_dataset
    from contactkit.report.plots import figure_path, plot_episode

    try:
        if out.is_dir():
            out = out / f"{path.stem}-episode{episode}.png"
        target = figure_path(out)
        with open_dataset(path) as ds:
            if not 0 <= episode < len(ds):
                numbered = f", numbered 0 .. {len(ds) - 1}" if len(ds) else ""
                raise InvalidInputError(f"--episode {episode} is out of range: {path} holds {len(ds)} episode(s)"
                                        f"{numbered}")
            ep = ds.episode(episode)
            name = json.loads(ds.meta.scene).get("name", "")
        written = plot_episode(ep, target, title=f"{name} — episode {episode}")
    except ContactkitError as exc:
        _fail(exc)
    console.print(f"wrote {written}", soft_wrap=True, markup=False, highlight=False)  # the path unbroken


MODEL_VARIANTS = {"act-fignet": "act_fignet", "fignet-plus": "fignet_plus"}
"""``contactkit train --model`` names → :class:`contactkit.models.gnn.ModelVariant` values."""
VAL_FRACTION = 0.1
"""Episodes held out for validation when ``contactkit train`` is given no ``--val`` file."""


def _train_sets(data: list[Path], val: list[Path] | None, seed: int):
    """Training and validation :class:`~contactkit.data.training.TrainingData` (a split when no ``--val``)."""
    from contactkit.data.reader import open_dataset
    from contactkit.data.training import training_data
    from contactkit.data.windows import split_by_episode

    if val:
        return training_data(data), training_data(val)
    n = 0
    for path in data:
        with open_dataset(path) as ds:
            n += len(ds)
    train_idx, val_idx = split_by_episode(n, VAL_FRACTION, np.random.default_rng(seed))
    return training_data(data, episodes=train_idx), training_data(data, episodes=val_idx)


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
    model: Annotated[str, typer.Option(help="act-fignet | fignet-plus")] = "act-fignet",
    config: Annotated[str, typer.Option(help="preset: small (2 CPUs, < 30 min) | paper (Table II)")] = "small",
    steps: Annotated[int | None, typer.Option(help="optimisation steps (default: the preset's)")] = None,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    threads: Annotated[int, typer.Option(help="torch CPU threads (1 is fastest for these small graphs)")] = 1,
    seed: int = 0,
    resume: Annotated[bool, typer.Option(help="continue from OUT/last.safetensors if present")] = True,
    collision_radius: Annotated[float | None, typer.Option(
        help="face-interaction radius in metres (paper App. Table III compares 0.001 and 0.01; default 0.01)")] = None,
) -> None:
    """Train Act-FIGNet or FIGNet+ on recorded trajectories, with periodic validation."""
    import dataclasses

    import torch

    from contactkit.models.gnn import ModelVariant, TrainConfig
    from contactkit.models.gnn import train as run_train
    from contactkit.models.gnn.train import LAST_CHECKPOINT, check_out_dir

    try:  # every argument is checked before any data is read (--out, a checkpoint to resume included)
        _check_device_and_checkpoint(device)
        if model not in MODEL_VARIANTS:
            raise InvalidInputError(f"unknown model {model!r}; choose one of {sorted(MODEL_VARIANTS)}")
        if threads < 1:
            raise InvalidInputError(f"--threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
        cfg = TrainConfig.preset(config, seed=seed, **({"num_steps": steps} if steps is not None else {}))
        graph = dataclasses.replace(cfg.model.graph, variant=ModelVariant(MODEL_VARIANTS[model]),
                                    **({"collision_radius": collision_radius} if collision_radius is not None else {}))
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, graph=graph))
        last = check_out_dir(out) / LAST_CHECKPOINT
        if resume and last.exists():
            _check_device_and_checkpoint(device, last)
        train_set, val_set = _train_sets(data, val, seed)
        console.print(f"{model} ({config}): {len(train_set.windows)} training and {len(val_set.windows)} "
                      f"validation windows, {len(train_set.scenes)} scene(s), {cfg.num_steps} steps on {device}")
        with _progress() as bar:
            job = bar.add_task(f"train {model}", total=cfg.num_steps)

            def report(p) -> None:
                bar.update(job, completed=p.step)
                if p.val is not None:
                    bar.console.print(_val_text(p), highlight=False)

            result = run_train(cfg, train_set.windows, val_set.windows, out, device, report,
                               scene=train_set.scenes, step=train_set.step, resume=resume)
    except ContactkitError as exc:
        _fail(exc)
    history = [{"step": s, **v} for s, v in result.val_history]
    (out / "val_history.json").write_text(json.dumps(history, indent=1) + "\n")
    console.print(f"done at step {result.step}: best {result.best_checkpoint}, last {result.last_checkpoint}")


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
        _check_device_and_checkpoint(device)
        _check_outputs((json_path, "--json", False))
        label = model.name if model.is_dir() or not model.parent.name else model.parent.name
        predictors = [checkpoint_predictor(model, label, device)]
        if baseline != "none":
            predictors.append(mujoco_predictor(load_world(baseline), f"mujoco-{Path(baseline).stem}"))
        recorded = load_recorded(data)
        cfg = EvalConfig(horizon=horizon, max_segments=segments, max_transitions=transitions)
        with console.status(f"evaluating on {data} ..."):
            reports = evaluate_predictors(predictors, recorded, cfg, np.random.default_rng(seed))
    except ContactkitError as exc:
        _fail(exc)
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


def _measure(kind: str, name: str, quick: bool, json_path: Path | None, seed: int, device: str,
             plots: Path | None = None, options: dict | None = None, results_dir: Path | None = None) -> None:
    from contactkit.eval.harness import markdown_of, run_measurement

    try:
        _check_device_and_checkpoint(device, (options or {}).get("checkpoint"))
        _check_outputs((json_path, "--json", False), (plots, "--plots", True), (results_dir, "--results-dir", True))
        with console.status(f"{kind} {name}{' (quick)' if quick else ''} ..."):
            result = run_measurement(
                kind,
                name,
                quick=quick,
                seed=seed,
                device=device,
                json_path=str(json_path) if json_path else None,
                plots=str(plots) if plots else None,
                options=options,
                results_dir=results_dir,
                argv=sys.argv,
            )
    except ContactkitError as exc:
        _fail(exc)
    shown = {k: v for k, v in result.items() if k not in ("provenance", "stored")}
    console.print_json(json.dumps(shown, default=str))
    table = markdown_of(result)
    if table is not None:
        console.print(table, markup=False, highlight=False, soft_wrap=True)
    reasons = result["provenance"]["not_stored"]
    console.print(f"stored {result['stored']}" if "stored" in result else
                  f"not stored in docs/results ({', '.join(reasons)})", markup=False, highlight=False)


RESULTS_DIR_HELP = ("where an unrestricted full run is stored (default: docs/results of the source checkout "
                    "contactkit runs from)")


@app.command()
def benchmark(
    name: str,
    quick: bool = False,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
    seed: int = 0,
    device: str = "cpu",
    checkpoint: Annotated[Path | None, typer.Option(help="replan: the Act-FIGNet checkpoint")] = None,
    results_dir: Annotated[Path | None, typer.Option(help=RESULTS_DIR_HELP)] = None,
) -> None:
    """Run a speed benchmark (unrestricted full runs are stored in docs/results/NAME.json)."""
    _measure("benchmark", name, quick, json_path, seed, device,
             options={"checkpoint": str(checkpoint) if checkpoint else None}, results_dir=results_dir)


def _names(text: str | None) -> tuple[str, ...] | None:
    """A comma-separated option as a tuple of names (None when not given)."""
    return tuple(m.strip() for m in text.split(",")) if text else None


@app.command()
def experiment(
    name: str,
    quick: bool = False,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
    seed: int = 0,
    device: str = "cpu",
    plots: Annotated[Path | None, typer.Option(help="folder for the experiment's figures")] = None,
    models: Annotated[
        str | None, typer.Option(help="mpc-insertion, pf-tracking: comma-separated models (default: all)")
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="mpc-insertion, pf-tracking: the Act-FIGNet checkpoint")
    ] = None,
    episodes: Annotated[int | None, typer.Option(
        help="mpc-insertion: episodes per pairing (a partial run: written to --json only)")] = None,
    pairings: Annotated[str | None, typer.Option(
        help="mpc-insertion: comma-separated pairings (a partial run: written to --json only)")] = None,
    results_dir: Annotated[Path | None, typer.Option(help=RESULTS_DIR_HELP)] = None,
) -> None:
    """Reproduce a paper experiment (unrestricted full runs are stored in docs/results/NAME.json)."""
    options = {"models": _names(models), "checkpoint": str(checkpoint) if checkpoint else None,
               "episodes": episodes, "pairings": _names(pairings)}
    _measure("experiment", name, quick, json_path, seed, device, plots, options, results_dir)


@app.command()
def results(
    results_dir: Annotated[Path | None, typer.Option(help="default: docs/results of the source checkout")] = None,
    out: Annotated[Path | None, typer.Option(help="default: docs/RESULTS.md of the source checkout")] = None,
) -> None:
    """Regenerate docs/RESULTS.md (and each measurement's own NAME.md table) from the stored full-run JSON files."""
    from contactkit.eval.results import default_results_page, refresh_tables, render_results
    from contactkit.eval.store import default_results_dir

    try:
        results_dir = results_dir or default_results_dir()
        out = out or default_results_page()
        if not results_dir.is_dir():
            raise InvalidInputError(f"--results-dir '{results_dir}' is not a folder")
        _check_outputs((out, "--out", False))
        tables = refresh_tables(results_dir)
        out.write_text(render_results(results_dir))
    except ContactkitError as exc:
        _fail(exc)
    console.print(f"wrote {out} and {len(tables)} table(s) in {results_dir}")


@app.command()
def demo(out: Path = Path("out/demo"), seed: int = 0) -> None:
    """The main story end to end on CPU: touch, insert, report (out/demo/index.html)."""
    from contactkit.demo import run_demo

    try:
        _check_outputs((out, "--out", True))
        run_demo(out, seed, log=console.print)
    except ContactkitError as exc:
        _fail(exc)


if __name__ == "__main__":
    app()
