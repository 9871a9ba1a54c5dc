"""``contactkit collect``, ``info`` and ``plot``: make, inspect and look at HDF5 datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from contactkit.cli._app import app, check_outputs, console, fail, progress
from contactkit.errors import ContactkitError, InvalidInputError


@app.command()
def collect(
    out: Annotated[Path, typer.Option(help="output HDF5 file (resumed if it exists with the same settings)")],
    task: Annotated[str, typer.Option(
        help="peg-in-hole | random-scene | tight-peg-in-hole | bolting (the tight-tolerance paper's parts)")
    ] = "peg-in-hole",
    shape: Annotated[
        str, typer.Option(help="peg shape: triangle, square, pentagon, hexagon, circle")
    ] = "hexagon",
    clearance: Annotated[float, typer.Option(help="radial clearance [m]")] = 1e-3,
    slot_shape: Annotated[str | None, typer.Option(help="slot shape if not the peg's")] = None,
    policy: Annotated[
        str, typer.Option(help="random-spline | contact-spline (random splines with contact-seeking z flips, "
                          "Act-FIGNet App. V) | "
                          "spiral | circle-slow | circle-fast | tight-spline (small "
                          "amplitudes for a tight fit) | screw (bolting: turn the nut along the thread)")
    ] = "random-spline",
    episodes: int = 20,
    steps: int = 400,
    seed: int = 0,
    world: Annotated[str | None, typer.Option(
        help="physics: a preset (nominal, target-parametric, target) or a WorldParams JSON file (docs/worlds.md)")
    ] = None,
    backend: Annotated[
        str, typer.Option(help="simulator: mujoco (the reference) | engine (contactkit's rigid contact engine)")
    ] = "mujoco",
    diameter: Annotated[float | None, typer.Option(help="bolting: bolt diameter [m] of a Table II pair")] = None,
    pitch: Annotated[float | None, typer.Option(help="bolting: thread pitch [m] of a Table II pair")] = None,
    scene: Annotated[Path | None, typer.Option(
        help="a Scene JSON file (contactkit scene) to collect on instead of the built-in peg-in-hole scene "
             "(then --shape, --clearance and --slot-shape are not taken)")] = None,
    workers: Annotated[int, typer.Option(
        help="episodes run in parallel on this many Ray workers; this process alone writes OUT, in episode order, "
             "the same file as a serial run (docs/scale.md)")] = 1,
    ray_address: Annotated[str | None, typer.Option(
        help="address of a running Ray cluster for the workers (HOST:PORT or auto; default: a local one)")] = None,
) -> None:
    """Collect trajectories (state, action, F/T) into an HDF5 dataset."""
    from contactkit.data.collect import CollectSpec
    from contactkit.data.collect import collect as run_collect
    from contactkit.geometry.decompose import DEFAULT_CACHE_DIR
    from contactkit.physics import load_world
    from contactkit.scene import load_scene

    try:
        check_outputs((out, "--out", False))
        fixed_scene = None
        if scene is not None:
            given = [o for o, v, d in (("--shape", shape, "hexagon"), ("--clearance", clearance, 1e-3),
                                       ("--slot-shape", slot_shape, None)) if v != d]
            if task != "peg-in-hole" or given:
                raise InvalidInputError(f"--scene {scene} replaces the peg-in-hole scene: it takes no "
                                        f"{given or ['--task ' + task]}")
            fixed_scene = load_scene(scene)
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
            diameter=diameter,
            pitch=pitch,
            coacd_cache=str(DEFAULT_CACHE_DIR.expanduser()),
            fixed_scene=fixed_scene,
        )
        bar = progress()
        job = bar.add_task(f"collect {fixed_scene.name if fixed_scene else task}/{policy}", total=episodes)

        def report(done: int, total: int) -> None:  # first called once OUT is open and checked
            if not bar.live.is_started:
                bar.start()
            bar.update(job, completed=done)

        try:
            written = run_collect(spec, str(out), progress=report, workers=workers, ray_address=ray_address)
        finally:
            if bar.live.is_started:
                bar.stop()
    except ContactkitError as exc:
        fail(exc)
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
        fail(exc)
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
        fail(exc)
    console.print(f"wrote {written}", soft_wrap=True, markup=False, highlight=False)  # the path unbroken
