"""Figures of the mpc-insertion experiment (:mod:`contactkit.eval.exp_mpc_insertion`): act-fignet Fig. 4a (success
and halfway rates per pairing and model) and Fig. 4b (eq-9 reward against control step)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contactkit.report.plots import save_figure

if TYPE_CHECKING:
    from contactkit.eval.exp_mpc_insertion import EpisodeRecord

__all__ = ["plot_reward_curves", "plot_success_rates"]


def plot_success_rates(result: dict, out: Path) -> Path:
    """Fig. 4a: per pairing and model, success rate (solid) over the halfway rate (shaded); dashed line:
    the ground truth's mean success rate. Writes ``out`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = result["models"]
    pairings = list(next(iter(models.values()))["per_shape"]) if models else []
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(9, 4))
    for k, (name, summary) in enumerate(models.items()):
        x = np.arange(len(pairings)) + (k - 0.5 * (len(models) - 1)) * width
        shapes = summary["per_shape"]
        color = f"C{k}"
        ax.bar(x, [shapes[p]["halfway_rate"] for p in pairings], width, color=color, alpha=0.3)
        ax.bar(x, [shapes[p]["success_rate"] for p in pairings], width, color=color, label=name)
    if "ground-truth" in models:
        ax.axhline(models["ground-truth"]["success_rate"], ls="--", color="k", lw=1, label="ground truth, mean")
    ax.set_xticks(np.arange(len(pairings)), pairings)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("success rate (shaded: halfway)")
    ax.legend(fontsize=8)
    return save_figure(fig, out)


def plot_reward_curves(records: dict[str, list[EpisodeRecord]], max_steps: int, out: Path) -> Path:
    """Fig. 4b: eq-9 reward against control step, median (line) and inter-quartile band per model, one
    panel per pairing. An episode that ended early on success keeps its last reward (the peg stays in)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairings = list(dict.fromkeys(r.pairing for recs in records.values() for r in recs))
    fig, axes = plt.subplots(1, max(1, len(pairings)), figsize=(3.2 * max(1, len(pairings)), 3.2),
                             sharey=True, squeeze=False)
    for ax, pairing in zip(axes[0], pairings, strict=False):
        for k, (name, recs) in enumerate(records.items()):
            curves = np.array([np.pad(r.rewards, (0, max_steps - len(r.rewards)), mode="edge")
                               for r in recs if r.pairing == pairing])
            steps = np.arange(1, max_steps + 1)
            lo, mid, hi = np.percentile(curves, [25, 50, 75], axis=0)
            ax.fill_between(steps, lo, hi, color=f"C{k}", alpha=0.25)
            ax.plot(steps, mid, color=f"C{k}", label=name)
        ax.set_title(pairing)
        ax.set_xlabel("control step")
    axes[0][0].set_ylabel("reward (eq 9)")
    axes[0][0].legend(fontsize=8)
    return save_figure(fig, out)
