"""``contactkit import csv|bag``: robot logs (mapped CSV, ROS 2 bags) into an HDF5 dataset (``docs/robot-logs.md``)."""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from pathlib import Path
from typing import Annotated

import typer

from contactkit.cli._app import app, check_outputs, console, fail
from contactkit.errors import ContactkitError, InvalidInputError

import_app = typer.Typer(help="Import robot logs (a CSV with a mapping file, ROS 2 bags: sqlite3 or MCAP) into an "
                              "HDF5 dataset for training.", no_args_is_help=True)
app.add_typer(import_app, name="import")

LogsArg = Annotated[list[Path], typer.Argument(help="log file(s); each becomes one episode", show_default=False)]
MappingOpt = Annotated[Path, typer.Option(help="mapping file (YAML or JSON): columns or topics, units, frames, rate",
                                          show_default=False)]
OutOpt = Annotated[Path, typer.Option(help="output HDF5 file (appended to if it holds logs of the same kind)",
                                      show_default=False)]
SceneOpt = Annotated[Path | None, typer.Option(
    help="Scene JSON file (contactkit scene, Scene.to_json()): the geometry; train needs it")]
WorldOpt = Annotated[str | None, typer.Option(
    help="physics stored with the data: nominal, target-parametric, target or a JSON file")]
RateOpt = Annotated[float | None, typer.Option(
    "--rate", help="control rate in Hz (overrides the mapping's control_rate)")]
FkOpt = Annotated[str | None, typer.Option(
    "--fk", help="forward kinematics MODULE:FUNCTION (importable, e.g. on PYTHONPATH) for a joints stream: (N, J) "
    "joints -> (pos (N, 3), quat (N, 4))")]


def scene_text(path: Path) -> str:
    """The checked ``Scene.to_json()`` text of a scene file (:func:`contactkit.scene.load_scene`; its
    InvalidInputError prefixed by ``--scene``)."""
    from contactkit.scene import load_scene

    try:
        return load_scene(path).to_json()
    except ContactkitError as exc:
        raise InvalidInputError(f"--scene: {exc}") from None


def check_log_paths(fmt: str, logs: list[Path], mapping: Path) -> None:
    """Refuse, before anything is opened, a mapping or log path that is not a regular file (a bag may also be a
    folder): a FIFO would block the reader, a device such as ``/dev/zero`` would be read until memory runs out.

    Raises:
        InvalidInputError: naming the option or log and what the path is.
    """
    from contactkit.files import PathKind, expect_path

    expect_path(mapping, PathKind.FILE, lambda problem: InvalidInputError(f"--mapping {mapping}: {problem}"))
    for path in logs:
        try:
            expect_path(path, PathKind.FILE, lambda problem, p=path: InvalidInputError(f"log {p}: {problem}"))
        except InvalidInputError:
            if fmt != "bag" or not path.is_dir():
                raise


def forward_kinematics(spec: str):
    """The function named by ``--fk MODULE:FUNCTION`` (InvalidInputError when it cannot be found)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise InvalidInputError(f"--fk {spec!r}: give MODULE:FUNCTION, e.g. my_robot.kinematics:tool_pose")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, SyntaxError) as exc:
        raise InvalidInputError(f"--fk {spec!r}: {exc}") from None
    if not callable(fn):
        raise InvalidInputError(f"--fk {spec!r}: not a function")
    return fn


DuplicateOpt = Annotated[bool, typer.Option(
    "--allow-duplicate", help="import a log already imported into --out (same sha256); refused by default")]


def _import(fmt: str, logs: list[Path], mapping: Path, out: Path, scene: Path | None, world: str | None,
            seed: int, rate: float | None, fk: str | None, allow_duplicate: bool = False) -> None:
    from contactkit.data.robot_log_checks import RobotLogWarning
    from contactkit.data.robot_log_import import import_robot_log
    from contactkit.data.robot_log_mapping import load_mapping
    from contactkit.physics import load_world

    try:  # every option is checked before any log is read
        check_outputs((out, "--out", False))
        if seed < 0:
            raise InvalidInputError(f"--seed must be >= 0, got {seed}")
        if rate is not None and not rate > 0:
            raise InvalidInputError(f"--rate must be > 0 [Hz], got {rate}")
        check_log_paths(fmt, logs, mapping)
        m = load_mapping(mapping)
        if rate is not None:
            m = dataclasses.replace(m, control_rate=float(rate))
        scene_json = scene_text(scene) if scene is not None else None
        world_json = load_world(world).to_json() if world is not None else None
        kinematics = forward_kinematics(fk) if fk is not None else None
        for path in logs:  # one line per log as it is written (no progress display: an error prints alone)
            with warnings.catch_warnings():  # printed below, one line each
                warnings.simplefilter("ignore", RobotLogWarning)
                log = import_robot_log(fmt, path, m, out, scene_json=scene_json, world_json=world_json,
                                       seed=seed, forward_kinematics=kinematics, allow_duplicate=allow_duplicate)
            for text in log.warnings:
                console.print(f"warning: {text}", soft_wrap=True, markup=False, highlight=False)
            commands = ("pose targets (pose-delta)" if log.action_mode.value == "pose-delta" else
                        "commanded wrenches" if log.has_action else "no commands")
            console.print(f"{path}: {log.episode.n_steps} steps at {1.0 / log.control_dt:g} Hz, {commands}, "
                          f"velocities {'logged' if log.logged_velocity else 'by finite differences'}, F/T "
                          f"{log.ft_sampling.value}", soft_wrap=True, markup=False, highlight=False)
    except ContactkitError as exc:
        fail(exc)
    note = "" if scene is not None else " (no --scene: give train --scene FILE, it needs the geometry)"
    console.print(f"wrote {len(logs)} episode(s) to {out}{note}", soft_wrap=True, markup=False, highlight=False)


@import_app.command("csv")
def import_csv(logs: LogsArg, mapping: MappingOpt, out: OutOpt, scene: SceneOpt = None, world: WorldOpt = None,
               seed: int = 0, rate: RateOpt = None, fk: FkOpt = None,
               allow_duplicate: DuplicateOpt = False) -> None:
    """Import CSV logs: a header row, one row per sample, columns named by the mapping file; a stream's cells may be
    empty on rows where it has no sample."""
    _import("csv", logs, mapping, out, scene, world, seed, rate, fk, allow_duplicate)


@import_app.command("bag")
def import_bag(logs: LogsArg, mapping: MappingOpt, out: OutOpt, scene: SceneOpt = None, world: WorldOpt = None,
               seed: int = 0, rate: RateOpt = None, fk: FkOpt = None,
               allow_duplicate: DuplicateOpt = False) -> None:
    """Import ROS 2 bags (a bag folder, or a .mcap or .db3 file): WrenchStamped, PoseStamped, TransformStamped,
    TFMessage, TwistStamped and JointState topics named by the mapping file, synchronised at the control rate."""
    _import("bag", logs, mapping, out, scene, world, seed, rate, fk, allow_duplicate)
