"""``contactkit report``, ``render`` and ``view``: look at results and rollouts (a report page, rendered videos, an
interactive 3-D page)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

from contactkit.cli._app import app, check_outputs, console, fail
from contactkit.errors import ContactkitError, InvalidInputError


def _paper_of(result: dict) -> dict | None:
    """The paper's numbers the result's measurement module quotes (its ``PAPER`` constant), if any."""
    from contactkit.eval.harness import BENCHMARKS, EXPERIMENTS

    registry = BENCHMARKS if result.get("kind") == "benchmark" else EXPERIMENTS
    module = registry.get(str(result.get("name", "")))
    return getattr(importlib.import_module(module), "PAPER", None) if module else None


def _own_table(result: dict) -> str | None:
    """The measurement's own markdown table of ``result``, or a line saying why it cannot be made from this file
    (a result stored by an older version, or edited by hand, may lack what the table reads)."""
    from contactkit.eval.harness import markdown_of

    try:
        return markdown_of(result)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        return f"The measurement's own table cannot be made from this file ({type(exc).__name__}: {exc})."


def _demo_sections(demo_dir: Path) -> list[dict]:
    """The demo page's sections (``make demo``'s ``summary.json``), figures resolved in ``demo_dir``."""
    from contactkit.demo import report_sections
    from contactkit.eval.results import read_result

    sections = report_sections(read_result(demo_dir / "summary.json"))
    for s in sections:
        s["title"] = f"demo: {s['title']}"
        s["figures"] = [str((demo_dir / f).resolve()) for f in s.get("figures", [])]
        s["links"] = [(text, str((demo_dir / href).resolve())) for text, href in s.get("links", [])]
    return sections


@app.command()
def report(
    out: Annotated[Path, typer.Option("-o", "--out", help="the HTML page to write (one self-contained file)")] = Path(
        "report.html"),
    results: Annotated[Path | None, typer.Option(help="folder of stored results; default: docs/results of the source "
                                                       "checkout")] = None,
    demo: Annotated[Path | None, typer.Option(help="a `contactkit demo` output folder whose sections (rendered "
                                                   "rollouts included) are appended")] = None,
) -> None:
    """One self-contained HTML page of every stored benchmark and experiment: the command, our numbers beside the
    paper's, the peer rows and the figures (embedded)."""
    from contactkit.errors import ResultStoreError
    from contactkit.eval.results import read_result
    from contactkit.eval.store import default_results_dir, source_root
    from contactkit.report.results_page import write_results_report

    try:
        results = results or default_results_dir()
        if not results.is_dir():
            raise InvalidInputError(f"--results '{results}' is not a folder")
        if demo is not None and not (demo / "summary.json").is_file():
            raise InvalidInputError(f"--demo '{demo}' holds no summary.json (run `contactkit demo --out {demo}`)")
        check_outputs((out, "--out", False))
        stored = [read_result(f) for f in sorted(results.glob("*.json"))]
        try:
            root = source_root()
        except ResultStoreError:
            root = Path.cwd()
        extra = _demo_sections(demo) if demo is not None else []
        page = write_results_report(stored, out, root, own_table=_own_table, paper=_paper_of, extra=extra)
    except ContactkitError as exc:
        fail(exc)
    console.print(f"wrote {page} ({len(stored)} result(s), {page.stat().st_size / 1e6:.1f} MB)", markup=False,
                  highlight=False, soft_wrap=True)


def _rollout(path: Path, index: int, checkpoint: Path | None):
    """Episode ``index`` of the dataset ``path``, its scene and, with a checkpoint, the model's open-loop prediction
    (:func:`contactkit.report.render.predicted_episode`): ``(scene, episode, predicted or None, prediction's name,
    control period [s])``."""
    from contactkit.data.reader import open_dataset
    from contactkit.report.render import predicted_episode
    from contactkit.scene import Scene

    with open_dataset(path) as ds:
        if not 0 <= index < len(ds):
            raise InvalidInputError(f"--episode {index} is out of range: {path} holds {len(ds)} episode(s)")
        episode, scene, meta = ds.episode(index), Scene.from_json(ds.scene_json(index)), ds.meta
    if checkpoint is None:
        return scene, episode, None, "", meta.control_dt
    from contactkit.eval.predictors import resolve_checkpoint
    from contactkit.models.gnn import GnnContactModel

    checkpoint = resolve_checkpoint(checkpoint)
    model = GnnContactModel.from_checkpoint(checkpoint, scene, action_mode=meta.action_mode)
    from contactkit.model import check_control_period

    check_control_period(float(model.control_dt), meta.control_dt, str(path), f"checkpoint {checkpoint.name}")
    predicted = predicted_episode(episode, model, meta.action_mode)
    return scene, episode, predicted, f"predicted ({checkpoint.name})", meta.control_dt


@app.command()
def render(
    path: Annotated[Path, typer.Argument(help="HDF5 dataset (contactkit collect)")],
    out: Annotated[Path, typer.Option("-o", "--out", help=".gif, .mp4 (needs ffmpeg on PATH) or a folder for PNG "
                                                          "frames")],
    episode: Annotated[int, typer.Option(help="episode index, 0 .. episodes - 1")] = 0,
    checkpoint: Annotated[Path | None, typer.Option(help="a trained Act-FIGNet checkpoint (.safetensors file or "
                                                         "training folder): its open-loop prediction is drawn beside "
                                                         "the recording")] = None,
    stride: Annotated[int, typer.Option(help="draw every STRIDE-th state (the video still plays in real time)")] = 2,
    width: Annotated[int, typer.Option(help="panel width [pixels], even")] = 360,
    height: Annotated[int, typer.Option(help="panel height [pixels], even")] = 270,
) -> None:
    """Render one episode with MuJoCo's off-screen renderer (EGL, else OSMesa): the tool and environment meshes,
    the F/T reading as arrows (force red, torque blue), contact points green; a model's prediction beside it."""
    from contactkit.report.render import RenderConfig, check_video_path, episode_frames, write_video

    try:
        config = RenderConfig(width=width, height=height, stride=stride)
        check_outputs((out, "--out", not out.suffix))
        check_video_path(out)
        scene, recorded, predicted, name, control_dt = _rollout(path, episode, checkpoint)
        frames = episode_frames(scene, recorded, config, predicted, title="measured", predicted_title=name)
        written = write_video(frames, out, fps=1.0 / (control_dt * config.stride))
    except ContactkitError as exc:
        fail(exc)
    console.print(f"wrote {written}", soft_wrap=True, markup=False, highlight=False)


@app.command()
def view(
    path: Annotated[Path, typer.Argument(help="HDF5 dataset (contactkit collect)")],
    out: Annotated[Path, typer.Option("-o", "--out", help="the HTML page to write (self-contained)")],
    episode: Annotated[int, typer.Option(help="episode index, 0 .. episodes - 1")] = 0,
    checkpoint: Annotated[Path | None, typer.Option(help="a trained Act-FIGNet checkpoint (.safetensors file or "
                                                         "training folder): its open-loop prediction is shown too")
                          ] = None,
) -> None:
    """An interactive 3-D page of one episode: scrub through time, play, orbit and zoom; meshes, poses, F/T arrows,
    contact points, and a model's prediction beside the recording. One file, no library, nothing fetched."""
    from contactkit.report.viewer import write_viewer

    try:
        check_outputs((out, "--out", False))
        scene, recorded, predicted, name, _ = _rollout(path, episode, checkpoint)
        written = write_viewer(out, scene, recorded, predicted, name, title=f"{scene.name}: episode {episode} of "
                               f"{path.name}")
    except ContactkitError as exc:
        fail(exc)
    console.print(f"wrote {written}", soft_wrap=True, markup=False, highlight=False)
