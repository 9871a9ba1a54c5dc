"""``contactkit benchmark``, ``experiment``, ``results`` and ``demo``: measurements and the main story."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from contactkit.cli._app import (
    RichProgressSink,
    app,
    check_device_and_checkpoint,
    check_outputs,
    console,
    err_console,
    fail,
    progress,
)
from contactkit.errors import ContactkitError, InvalidInputError, ResultStoreError
from contactkit.eval.harness import BENCHMARKS, EXPERIMENTS


def _measure(kind: str, name: str, quick: bool, json_path: Path | None, seed: int, device: str,
             plots: Path | None = None, options: dict | None = None, results_dir: Path | None = None) -> None:
    from contactkit.eval import progress as measure_progress
    from contactkit.eval.harness import STDOUT, run_measurement

    to_stdout = json_path is not None and str(json_path) == STDOUT
    try:
        check_device_and_checkpoint(device, (options or {}).get("checkpoint"))
        check_outputs((None if to_stdout else json_path, "--json", False), (plots, "--plots", True),
                      (results_dir, "--results-dir", True))
        with progress(err_console, transient=True) as display, measure_progress.reporting(RichProgressSink(display)):
            with measure_progress.task(f"{kind} {name}{' (quick)' if quick else ''}"):
                result = run_measurement(
                    kind,
                    name,
                    quick=quick,
                    seed=seed,
                    device=device,
                    json_path=STDOUT if to_stdout else str(json_path) if json_path else None,
                    plots=str(plots) if plots else None,
                    options=options,
                    results_dir=results_dir,
                    argv=sys.argv,
                )
    except ContactkitError as exc:
        fail(exc)
    if to_stdout:
        typer.echo(json.dumps(result, indent=2, default=str))
        return
    print_summary(result, json_path)
    reasons = result["provenance"]["not_stored"]
    console.print(f"stored {result['stored']}" if "stored" in result else
                  f"not stored in docs/results ({', '.join(reasons)})", markup=False, highlight=False)


def print_summary(result: dict, json_path: Path | None) -> None:
    """The measurement's own table (its ``markdown``), else the generic :func:`contactkit.eval.summary.summarise`
    tables, and where the full result is."""
    from rich.markdown import Markdown
    from rich.table import Table

    from contactkit.eval.harness import markdown_of
    from contactkit.eval.summary import summarise

    own = markdown_of(result)
    if own is not None:
        console.print(Markdown(own))
    else:
        summary = summarise(result)
        for part in summary.tables:
            table = Table(title=part.title or None, title_justify="left", show_edge=False)
            for column in ("", *part.columns):
                table.add_column(column, overflow="fold")
            for label, cells in part.rows:
                table.add_row(label, *cells)
            console.print(table)
            if part.cut:
                console.print(f"  ({part.cut} more rows/columns)", markup=False, highlight=False)
    where = f"in {json_path}" if json_path else "written by --json FILE, or printed by --json -"
    console.print(f"{result['kind']} {result['name']}: full result {where}", markup=False, highlight=False)


SCENE_HELP = "a Scene JSON file (contactkit scene) to run on instead of the built-in scenes, where one is taken"
WORLD_HELP = ("a WorldParams JSON file or preset (nominal, target-parametric, target; docs/worlds.md) that acts as "
              "reality, where the measurement takes one (default: its stored pairing)")
MODEL_WORLD_HELP = "a WorldParams JSON file (or preset name) that planning and estimation models assume"
WORKERS_HELP = "episodes, trials and cases run in parallel on this many workers (same results as serial)"
RAY_HELP = "address of a running Ray cluster for the workers (default: a local one)"


def _shared_options(scene: Path | None, world: str | None, model_world: str | None, workers: int | None,
                    ray_address: str | None) -> dict:
    """The options every measurement may take, as ``run`` keyword arguments (None: not given, not passed)."""
    return {"scene": str(scene) if scene else None, "world": world, "model_world": model_world,
            "workers": workers, "ray_address": ray_address}


RESULTS_DIR_HELP = ("where an unrestricted full run is stored (default: docs/results of the source checkout "
                    "contactkit runs from)")


JSON_HELP = ("write the full result to this JSON file (a run with --json is not stored); '-' prints it to stdout "
             "instead of the summary")
QUICK_HELP = "a small, fast version of the run (never stored)"


@app.command(help="Run a speed benchmark: one of " + ", ".join(BENCHMARKS) + ". Unrestricted full runs are "
                  "stored in docs/results/NAME.json; a summary table is printed, the full result with --json.")
def benchmark(
    name: Annotated[str, typer.Argument(help="the benchmark: " + ", ".join(BENCHMARKS), metavar="NAME",
                                        show_default=False)],
    quick: Annotated[bool, typer.Option(help=QUICK_HELP)] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help=JSON_HELP)] = None,
    seed: int = 0,
    device: str = "cpu",
    checkpoint: Annotated[Path | None, typer.Option(help="replan: the Act-FIGNet checkpoint")] = None,
    results_dir: Annotated[Path | None, typer.Option(help=RESULTS_DIR_HELP)] = None,
    hole_net: Annotated[Path | None, typer.Option(
        help="contact-detection: depth network of the paper's hole, a .safetensors file or a piecewise set's "
             ".json manifest (default: the committed one)")] = None,
    bolt_net: Annotated[Path | None, typer.Option(
        help="contact-detection: depth network of the M48 bolt, a .safetensors file or a piecewise set's .json "
             "manifest (default: the committed one)")] = None,
    scene: Annotated[Path | None, typer.Option(help=SCENE_HELP)] = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=RAY_HELP)] = None,
) -> None:
    nets = {"hole_net": str(hole_net) if hole_net else None, "bolt_net": str(bolt_net) if bolt_net else None}
    _measure("benchmark", name, quick, json_path, seed, device,
             options={"checkpoint": str(checkpoint) if checkpoint else None, **nets,
                      **_shared_options(scene, None, None, workers, ray_address)}, results_dir=results_dir)


def _names(text: str | None) -> tuple[str, ...] | None:
    """A comma-separated option as a tuple of names (None when not given)."""
    return tuple(m.strip() for m in text.split(",")) if text else None


@app.command(help="Reproduce a paper experiment: one of " + ", ".join(EXPERIMENTS) + ". Unrestricted full runs "
                  "are stored in docs/results/NAME.json; a summary table is printed, the full result with --json.")
def experiment(
    name: Annotated[str, typer.Argument(help="the experiment: " + ", ".join(EXPERIMENTS), metavar="NAME",
                                        show_default=False)],
    quick: Annotated[bool, typer.Option(help=QUICK_HELP)] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help=JSON_HELP)] = None,
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
    reference_dir: Annotated[Path | None, typer.Option(
        help="tight-assembly: folder of the cached reference data (default for a full run: "
             "out/tight-assembly/reference; a file whose task, seed, rows or code differ is refused)")] = None,
    scene: Annotated[Path | None, typer.Option(help=SCENE_HELP)] = None,
    world: Annotated[str | None, typer.Option(help=WORLD_HELP)] = None,
    model_world: Annotated[str | None, typer.Option(help=MODEL_WORLD_HELP)] = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=RAY_HELP)] = None,
    tare: Annotated[str | None, typer.Option(
        help="pf-tracking: F/T sensor tare, 'none' (the stored run: raw readings, a fixed 1 N contact threshold) "
             "or 'free-space' (hold still, zero the sensor, contact relative to its noise)")] = None,
) -> None:
    options = {"models": _names(models), "checkpoint": str(checkpoint) if checkpoint else None,
               "episodes": episodes, "pairings": _names(pairings),
               "reference_dir": str(reference_dir) if reference_dir else None,
               "tare": tare, **_shared_options(scene, world, model_world, workers, ray_address)}
    _measure("experiment", name, quick, json_path, seed, device, plots, options, results_dir)


@app.command()
def results(
    results_dir: Annotated[Path | None, typer.Option(help="default: docs/results of the source checkout")] = None,
    out: Annotated[Path | None, typer.Option(help="default: docs/RESULTS.md of the source checkout")] = None,
) -> None:
    """Regenerate docs/RESULTS.md (and each measurement's own NAME.md table) from the stored full-run JSON files."""
    import contactkit
    from contactkit.eval.results import default_results_page, refresh_tables, render_results
    from contactkit.eval.store import default_results_dir, source_root

    try:
        if results_dir is None or out is None:
            try:
                source_root()
            except ResultStoreError as exc:
                raise InvalidInputError("contactkit results: no source checkout to find docs/results in (contactkit "
                                        f"is imported from {Path(contactkit.__file__).parent}); give --results-dir "
                                        "DIR (the stored NAME.json files) and --out FILE") from exc
        results_dir = results_dir or default_results_dir()
        out = out or default_results_page()
        if not results_dir.is_dir():
            raise InvalidInputError(f"--results-dir '{results_dir}' is not a folder")
        check_outputs((out, "--out", False))
        tables = refresh_tables(results_dir)
        out.write_text(render_results(results_dir))
    except ContactkitError as exc:
        fail(exc)
    console.print(f"wrote {out} and {len(tables)} table(s) in {results_dir}")


@app.command()
def demo(out: Path = Path("out/demo"), seed: int = 0) -> None:
    """The main story end to end on CPU: touch, insert, report (out/demo/index.html)."""
    from contactkit.demo import run_demo

    try:
        check_outputs((out, "--out", True))
        run_demo(out, seed, log=console.print)
    except ContactkitError as exc:
        fail(exc)
