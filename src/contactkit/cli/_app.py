"""The ``contactkit`` Typer app, its console, and the checks every command makes before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from contactkit.errors import InvalidInputError

app = typer.Typer(
    help="contactkit: contact models, F/T sensing, estimation and control for manipulation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: units such as [m] or [N] are not markup
)
console = Console(markup=False)
"""Prints text as it is: a unit such as ``[s]`` in a table is no markup (:func:`fail` asks for markup itself)."""
err_console = Console(stderr=True, markup=False)
"""Progress bars and spinners go to stderr, so that stdout holds only the results (``--json -``)."""


def _print_version(value: bool) -> None:
    if value:
        from contactkit import __version__

        console.print(f"contactkit {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    """contactkit: contact models, F/T sensing, estimation and control for manipulation."""


def fail(exc: Exception) -> None:
    """Print ``exc`` as one ``error:`` line (its text escaped: a path in brackets is no markup) and exit 2."""
    text = " ".join(str(exc).split())
    console.print(f"[bold red]error:[/] {escape(text)}", soft_wrap=True, markup=True, highlight=False)
    raise typer.Exit(2)


def check_device_and_checkpoint(device: str, checkpoint: str | Path | None = None) -> None:
    """Before any work: ``--device`` exists here, ``--checkpoint`` (a file or a training folder) is a valid
    Act-FIGNet checkpoint (InvalidInputError / CheckpointError naming them)."""
    from contactkit.models.gnn.checkpoint import check_device, load_checkpoint

    check_device(device)
    if checkpoint is not None:
        from contactkit.eval.predictors import resolve_checkpoint

        load_checkpoint(resolve_checkpoint(checkpoint))


class CountColumn(MofNCompleteColumn):
    """``done/total``, or only ``done`` for a task of unknown length (``0/?`` said nothing)."""

    def render(self, task) -> Text:
        if task.total is None:
            return Text(str(int(task.completed)) if task.completed else "", style="progress.download")
        return super().render(task)


def progress(console: Console = console, transient: bool = False) -> Progress:
    """A rich progress display: description, bar, done/total, elapsed time."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        CountColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
    )


class RichProgressSink:
    """A :class:`contactkit.eval.progress.ProgressSink` that draws each task as a bar of ``display`` (a started
    :func:`progress`); a finished task leaves the display."""

    def __init__(self, display: Progress):
        self.display = display

    def start(self, description: str, total: int | None) -> TaskID:
        return self.display.add_task(escape(description), total=total)

    def advance(self, handle: TaskID, steps: int) -> None:
        self.display.advance(handle, steps)

    def finish(self, handle: TaskID) -> None:
        self.display.remove_task(handle)


def check_outputs(*outputs: tuple[Path | None, str, bool]) -> None:
    """Before any work: each ``(path, option, is_folder)`` output can be written there: no existing path of the
    other kind, and its nearest existing parent is a folder (InvalidInputError naming the option)."""
    for path, option, folder in outputs:
        if path is not None and path.exists() and path.is_dir() != folder:
            raise InvalidInputError(f"{option} '{path}' is an existing {'file' if folder else 'folder'}; "
                                    f"{option} needs {'a folder' if folder else 'a file name'}")
        above = next((p for p in path.parents if p.exists()), None) if path is not None else None
        if above is not None and not above.is_dir():
            raise InvalidInputError(f"{option} '{path}' cannot be created: '{above}' is a file")
