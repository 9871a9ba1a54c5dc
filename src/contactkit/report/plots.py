"""Figures of trajectories: position, orientation and F/T against time (Act-FIGNet paper, Fig. 7)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

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


def save_figure(fig, out: str | Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to ``out`` (parent folders created), close it; returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
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
