"""Figures of trajectories: position, orientation and F/T against time (Act-FIGNet paper, Fig. 7)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402

from contactkit.errors import InvalidInputError  # noqa: E402
from contactkit.rotations import quat_to_rotvec  # noqa: E402

AXES = ("x", "y", "z")
COLORS = ("tab:red", "tab:green", "tab:blue")


def plot_episode(episode, out: str | Path, title: str = "", reference=None) -> Path:
    """Four stacked panels: position [mm], orientation (rotation vector) [deg], force [N], torque [N·m].

    Args:
        episode: a :class:`contactkit.data.schema.Episode` (states ``T+1``, readings ``T``).
        out: PNG path to write.
        title: figure title.
        reference: optional second Episode drawn dashed (e.g. a model's prediction against the data).
    """
    fig, axes = plt.subplots(4, 1, figsize=(9, 9), sharex=True)
    _draw(axes, episode, "-")
    if reference is not None:
        _draw(axes, reference, "--")
    for ax, label in zip(
        axes, ("position [mm]", "orientation [deg]", "force [N]", "torque [N·m]"), strict=True
    ):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", ncol=3, fontsize=8)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(title)
    return save_figure(fig, out)


def figure_path(out: str | Path) -> Path:
    """The file a figure saved as ``out`` goes to: ``out`` itself when its suffix is an image format matplotlib
    writes (``.png``, ``.pdf``, ``.svg`` ...), ``out`` + ``.png`` when it has no suffix.

    Raises:
        InvalidInputError: ``out`` is an existing folder, or its suffix is not a format matplotlib writes.
    """
    out = Path(out)
    if out.is_dir():
        raise InvalidInputError(f"figure path '{out}' is a folder; give a file name such as '{out / 'fig.png'}'")
    if not out.suffix:
        return out.with_name(out.name + ".png")
    formats = FigureCanvasBase.get_supported_filetypes()
    if out.suffix[1:].lower() not in formats:
        raise InvalidInputError(f"figure path '{out}': {out.suffix!r} is not an image format matplotlib writes; "
                                f"use one of {sorted(formats)}")
    return out


def save_figure(fig, out: str | Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to :func:`figure_path` (``out``) (parent folders created), close it; returns
    the path written.

    Raises:
        InvalidInputError: a bad ``out`` (see :func:`figure_path`), or the file cannot be written.
    """
    try:
        out = figure_path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(out, dpi=dpi)
    except OSError as exc:
        raise InvalidInputError(f"figure '{out}' cannot be written ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
    return out


def _draw(axes, ep, style: str) -> None:
    t_state, t_step = ep.time, ep.time[1:]
    rot = np.degrees(quat_to_rotvec(ep.quat))
    for i, (name, color) in enumerate(zip(AXES, COLORS, strict=True)):
        axes[0].plot(t_state, ep.pos[:, i] * 1e3, style, color=color, label=name if style == "-" else None)
        axes[1].plot(t_state, rot[:, i], style, color=color)
        axes[2].plot(t_step, ep.wrench[:, i], style, color=color)
        axes[3].plot(t_step, ep.wrench[:, 3 + i], style, color=color)
