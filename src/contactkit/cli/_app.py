"""The ``contactkit`` Typer app, its console, and the checks every command makes before any work."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from contactkit.errors import InvalidInputError

app = typer.Typer(
    help="contactkit: contact models, F/T sensing, estimation and control for manipulation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()


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


def progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


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
