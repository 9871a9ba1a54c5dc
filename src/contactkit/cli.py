"""The ``contactkit`` command: collect, inspect, plot, benchmark, run experiments, regenerate results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contactkit.errors import ContactkitError

app = typer.Typer(
    help="contactkit: contact models, F/T sensing, estimation and control for manipulation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()


def _fail(exc: Exception) -> None:
    console.print(f"[bold red]error:[/] {exc}", soft_wrap=True, markup=True, highlight=False)
    raise typer.Exit(2)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


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
    backend: Annotated[str, typer.Option(help="simulator: mujoco")] = "mujoco",
) -> None:
    """Collect trajectories (state, action, F/T) into an HDF5 dataset."""
    from contactkit.data.collect import CollectSpec
    from contactkit.data.collect import collect as run_collect
    from contactkit.physics import load_world

    try:
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
        with _progress() as bar:
            job = bar.add_task(f"collect {task}/{policy}", total=episodes)
            written = run_collect(
                spec, str(out), progress=lambda done, total: bar.update(job, completed=done)
            )
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
def plot(path: Path, out: Annotated[Path, typer.Option(help="PNG to write")], episode: int = 0) -> None:
    """Plot position, orientation and F/T of one episode against time."""
    from contactkit.data.reader import open_dataset
    from contactkit.report.plots import plot_episode

    try:
        with open_dataset(path) as ds:
            ep = ds.episode(episode)
            name = json.loads(ds.meta.scene).get("name", "")
    except ContactkitError as exc:
        _fail(exc)
    console.print(f"wrote {plot_episode(ep, out, title=f'{name} — episode {episode}')}")


def _measure(kind: str, name: str, quick: bool, json_path: Path | None, seed: int, device: str,
             plots: Path | None = None) -> None:
    from contactkit.eval.harness import run_measurement

    try:
        with console.status(f"{kind} {name}{' (quick)' if quick else ''} ..."):
            result = run_measurement(
                kind,
                name,
                quick=quick,
                seed=seed,
                device=device,
                json_path=str(json_path) if json_path else None,
                plots=str(plots) if plots else None,
            )
    except ContactkitError as exc:
        _fail(exc)
    shown = {k: v for k, v in result.items() if k != "provenance"}
    console.print_json(json.dumps(shown, default=str))


@app.command()
def benchmark(
    name: str,
    quick: bool = False,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
    seed: int = 0,
    device: str = "cpu",
) -> None:
    """Run a speed benchmark (full runs are stored in docs/results/NAME.json)."""
    _measure("benchmark", name, quick, json_path, seed, device)


@app.command()
def experiment(
    name: str,
    quick: bool = False,
    json_path: Annotated[Path | None, typer.Option("--json")] = None,
    seed: int = 0,
    device: str = "cpu",
    plots: Annotated[Path | None, typer.Option(help="folder for the experiment's figures")] = None,
) -> None:
    """Reproduce a paper experiment (full runs are stored in docs/results/NAME.json)."""
    _measure("experiment", name, quick, json_path, seed, device, plots)


@app.command()
def results(results_dir: Path = Path("docs/results"), out: Path = Path("docs/RESULTS.md")) -> None:
    """Regenerate docs/RESULTS.md from the stored full-run JSON files."""
    from contactkit.eval.results import render_results

    out.write_text(render_results(results_dir))
    console.print(f"wrote {out}")


@app.command()
def demo(out: Path = Path("out/demo"), seed: int = 0) -> None:
    """The main story end to end on CPU: touch, insert, report (out/demo/index.html)."""
    from contactkit.demo import run_demo

    try:
        run_demo(out, seed, log=console.print)
    except ContactkitError as exc:
        _fail(exc)


if __name__ == "__main__":
    app()
