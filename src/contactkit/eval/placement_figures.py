"""Figures of the placement experiment (:mod:`contactkit.eval.exp_placement`): Fig. 4 (release error per task and
method) and Figs. 5–7 (estimates over time of ours and the particle filter)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactkit.eval.exp_placement import Method

METHOD_COLORS = {Method.OURS.value: "tab:blue", Method.PARTICLE_FILTER.value: "tab:orange",
                 Method.HEURISTIC.value: "tab:gray", Method.OURS_EQ11.value: "tab:cyan"}


def _fig4(result: dict, path: Path) -> None:
    """Fig. 4: mean release error and its 95 % interval per task and method."""
    import matplotlib.pyplot as plt

    names = list(result["tasks"])
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        entry = result["tasks"][name]
        shown = [m for m in Method if m.value in entry]
        for k, method in enumerate(shown):
            e = entry[method.value]
            ax.bar(k, e["mean"], color=METHOD_COLORS[method.value], label=method.value)
            ax.errorbar(k, e["mean"], yerr=[[e["mean"] - e["ci95"][0]], [e["ci95"][1] - e["mean"]]], color="k",
                        capsize=4)
        ax.set_xticks(range(len(shown)), [m.value for m in shown], rotation=20, fontsize=8)
        ax.set_title(name)
        ax.set_ylabel(f"error at release [{entry['unit']}]")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _traces(task: str, names: list[str], runs: dict, case_label: Callable[[int], str], path: Path) -> None:
    """Figs. 5–7: estimates over time of ours and the particle filter (all particles thin) on the case where the
    two differ most at release, with the ground truth dashed; ``case_label(k)`` names the ``k``-th case."""
    import matplotlib.pyplot as plt

    ours, pf = runs[Method.OURS.value], runs[Method.PARTICLE_FILTER.value]
    case = int(np.argmax([p.error - o.error for o, p in zip(ours, pf, strict=True)]))
    n_params = ours[case].estimates.shape[1]
    fig, axes = plt.subplots(n_params, 2, figsize=(8, 2.2 * n_params), squeeze=False, sharex=True)
    for col, (label, episode) in enumerate(((Method.OURS.value, ours[case]), (Method.PARTICLE_FILTER.value,
                                                                              pf[case]))):
        steps = np.arange(len(episode.estimates))
        for j in range(n_params):
            ax = axes[j, col]
            if episode.particles.size:
                ax.plot(steps, 1e3 * episode.particles[:, :, j], color="0.8", lw=0.5)
            ax.plot(steps, 1e3 * episode.estimates[:, j], color=METHOD_COLORS[label], lw=1.5, label="estimate")
            ax.axhline(1e3 * episode.theta_gt[j], color="k", ls="--", lw=1, label="ground truth")
            ax.set_ylabel(f"{names[j]} [mm]")
            if j == 0:
                ax.set_title(f"{task}: {label}, {case_label(case)}, error {episode.error:.2f}")
        axes[-1, col].set_xlabel("timestep")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_placement(result: dict, episodes: dict, out: Path) -> list[str]:
    """Write ``fig4_release_error.png`` and ``traces_TASK.png`` into ``out``; returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    names = ["fig4_release_error.png"]
    _fig4(result, out / names[0])
    seeds, n = result["seeds"], result["config"]["n_cases"]

    def case_label(k: int) -> str:  # the k-th of the pooled cases: seed seeds[k // n], that seed's case k % n
        return f"seed {seeds[k // n]}, case #{k % n}"

    for task in result["tasks"]:
        runs = {m.value: episodes[(task, m.value)] for m in (Method.OURS, Method.PARTICLE_FILTER)}
        names.append(f"traces_{task}.png")
        _traces(task, result["tasks"][task]["params"], runs, case_label, out / names[-1])
    return names
