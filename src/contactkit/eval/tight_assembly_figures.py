"""Figures, bar checks and markdown table of the tight-assembly experiment
(:mod:`contactkit.eval.exp_tight_assembly`): like the data-driven simulation paper's Fig. 8 (penetration with and
without the C-space model), Fig. 9 (one-step contact force), Fig. 10 (complete simulation), Fig. 11 (time per
stage), Fig. 14 (generalisation) and Fig. 19 (the robustness run's contact force). matplotlib, Agg backend.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from contactkit.assembly.task import SIM_DT

RMSE_RATIO_BAR = 0.1
"""Issue 17's bar: ours' one-step force RMSE at most this fraction of K-means/PGS's."""
MS_BAR = {"peg-in-hole": 3.2, "bolting": 5.6}
"""Issue 17's bar: ms per 10 ms step on one core (the paper's own figures, §V-D), compared with the
thread-CPU ``ms_per_step``."""
COLORS = {"reference": "k", "ours": "tab:red", "kmeans_pgs": "tab:blue", "no_cspace": "tab:gray",
          "mujoco_default": "tab:green", "mujoco_fastest": "tab:olive"}
LABELS = {"reference": "reference", "ours": "ours", "kmeans_pgs": "K-means/PGS", "no_cspace": "ours, N-space only",
          "mujoco_default": "MuJoCo default", "mujoco_fastest": "MuJoCo fastest"}


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def bars(result: dict) -> dict:
    """The issue's bar per task and for the robustness run (None where a number is missing)."""
    out = {}
    for name, e in result["tasks"].items():
        ours, km = e.get("ours_force_rmse_N"), e.get("kmeans_pgs_force_rmse_N")
        pen, pen0 = e.get("max_penetration_m"), e.get("max_penetration_no_cspace_m")
        out[name] = {
            "rmse_ratio": ours / km if _finite(ours) and _finite(km) and km > 0 else None,
            "rmse_ratio_met": bool(ours <= RMSE_RATIO_BAR * km) if _finite(ours) and _finite(km) else None,
            "ms_per_step_met": bool(e["ms_per_step"] <= MS_BAR[name]) if _finite(e.get("ms_per_step")) else None,
            "cspace_lowers_penetration": bool(pen < pen0) if _finite(pen) and _finite(pen0) else None,
        }
    r = result.get("robustness") or {}
    if r.get("nan") is not None:
        out["robustness"] = {"no_nan": not r["nan"], "energy_not_growing": bool(r["energy_growth"] <= 0.0),
                             "penetration_within_clearance": bool(r["max_penetration_m"] <= r["clearance_m"])}
    return out


def _num(x, fmt: str = ".3g") -> str:
    return format(x, fmt) if _finite(x) else "–"


def markdown_table(result: dict, paper: dict) -> str:
    """Per task: one-step RMSE (ours, K-means/PGS, MuJoCo), complete-simulation RMSE, penetration with/without
    C-space and ms per step, with the paper's numbers; then the generalisation pairs and the robustness run."""
    lines = ["| task | ours RMSE [N] | K-means/PGS [N] | MuJoCo default [N] | MuJoCo fastest [N] | complete sim [N] "
             "| max pen. [µm] | no C-space [µm] | CPU ms/step |", "|---|" + "---:|" * 8]
    for name, e in result["tasks"].items():
        pp = paper.get(name, {})
        pen = [_num(e.get(k) * 1e6 if _finite(e.get(k)) else None, ".1f")
               for k in ("max_penetration_m", "max_penetration_no_cspace_m")]
        lines.append(f"| {name} | {_num(e.get('ours_force_rmse_N'))} ({pp.get('ours_force_rmse_N')}) | "
                     f"{_num(e.get('kmeans_pgs_force_rmse_N'))} ({pp.get('kmeans_pgs_force_rmse_N')}) | "
                     f"{_num(e.get('mujoco_force_rmse_N'))} | {_num(e.get('mujoco_fastest_force_rmse_N'))} | "
                     f"{_num(e.get('complete_sim_force_rmse_N'))} ({pp.get('complete_sim_force_rmse_N')}) | "
                     f"{pen[0]} | {pen[1]} | {_num(e.get('ms_per_step'))} ({pp.get('ms_per_step')}) |")
    lines += ["", "In parentheses: the paper's figures (§V-C, §V-D). RMSE of the 3-D contact force over test rows. "
                  "CPU ms/step: thread-CPU time per 10 ms step of ours (one core, the issue's bar); wall clock: "
              + ", ".join(f"{n} {_num(e.get('ms_per_step_wall'))} ms" for n, e in result["tasks"].items()) + "."]
    for name, e in result["tasks"].items():
        if "mujoco_complete_sim_force_rmse_N" in e:
            why = e.get("mujoco_complete_sim_failure")
            lines.append(f"MuJoCo complete simulation, {name}: {_num(e['mujoco_complete_sim_force_rmse_N'])} N"
                         + (f" (failed: {why})" if why else "") + ".")
        for key in ("mujoco_force_rmse_N_failure", "mujoco_fastest_force_rmse_N_failure"):
            if e.get(key):
                lines.append(f"{key.split('_force')[0]}, {name}: {e[key]}.")
    gen = result.get("generalization") or []
    if gen:
        lines += ["", "| pair | D [mm] | p [mm] | ours [N] | K-means/PGS [N] |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {g['name']} | {g['diameter_mm']:g} | {g['pitch_mm']:g} | {_num(g['ours_force_rmse_N'])} | "
                  f"{_num(g['kmeans_pgs_force_rmse_N'])} |" for g in gen]
    r = result.get("robustness") or {}
    if r.get("nan") is not None:
        lines += ["", f"Robustness: {r['sim_s']:g} s simulated, NaN {r['nan']}, max penetration "
                      f"{_num(r['max_penetration_m'] * 1e6, '.1f')} µm (clearance {r['clearance_m'] * 1e6:.0f} µm), "
                      f"energy growth {_num(r['energy_growth'])} J."]
    if result.get("missing"):
        lines += ["", "Missing: " + "; ".join(result["missing"])]
    return "\n".join(lines) + "\n"


def _save(fig, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _norm(w) -> np.ndarray:
    return np.linalg.norm(np.asarray(w, np.float64)[:, :3], axis=1)


def _per_task(traces: dict, kind: str, draw, title: str, ylabel: str, path: Path) -> str | None:
    import matplotlib.pyplot as plt

    names = [key[0] for key in traces if isinstance(key, tuple) and key[1] == kind]
    if not names:
        return None
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 2.6 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        draw(ax, traces[(name, kind)])
        ax.set_title(f"{name}: {title}", fontsize=9)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _fig8(ax, tr) -> None:
    for key in ("no_cspace", "ours"):
        pen = tr[key]["pen"][:, 1] * 1e6
        t = np.flatnonzero(np.isfinite(pen))
        ax.plot(t * SIM_DT, pen[t], color=COLORS[key], label=LABELS[key])
    ax.set_xlabel("time [s]")


def _fig9(ax, tr) -> None:
    x = np.arange(len(tr["reference"]))
    for key in ("reference", "kmeans_pgs", "ours"):
        ax.plot(x, _norm(tr[key]), color=COLORS[key], label=LABELS[key], lw=1)
    for key in ("mujoco_default", "mujoco_fastest"):
        if key in tr:
            ax.plot(tr[f"{key}_rows"], _norm(tr[key]), "o", ms=3, color=COLORS[key], label=LABELS[key])
    ax.set_xlabel("test row")


def _fig10(ax, tr) -> None:
    t = np.arange(len(tr["reference"])) * SIM_DT
    ax.plot(t, _norm(tr["reference"]), color="k", label="reference")
    for key in ("kmeans_pgs", "ours"):
        ax.plot(t, _norm(tr[key]["wrench"]), color=COLORS[key], label=LABELS[key], lw=1)
    if "mujoco_default" in tr:
        ax.plot(t, _norm(tr["mujoco_default"]), color=COLORS["mujoco_default"], label=LABELS["mujoco_default"], lw=1)
    ax.set_xlabel("time [s]")


def _fig11(result: dict, path: Path) -> str | None:
    import matplotlib.pyplot as plt

    tasks = [(n, e["ms_per_stage"]) for n, e in result["tasks"].items() if e.get("ms_per_stage")]
    if not tasks:
        return None
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for i, (name, stages) in enumerate(tasks):
        bottom = 0.0
        for j, (stage, ms) in enumerate(stages.items()):
            ax.bar(i, ms, bottom=bottom, color=f"C{j}", label=stage if i == 0 else None)
            bottom += ms
        ax.plot([i - 0.4, i + 0.4], [MS_BAR[name]] * 2, "k--", lw=1)
    ax.set_xticks(range(len(tasks)), [n for n, _ in tasks])
    ax.set_ylabel("thread-CPU ms per 10 ms step\n(dashed: paper)")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _fig14(result: dict, path: Path) -> str | None:
    import matplotlib.pyplot as plt

    gen = result.get("generalization") or []
    if not gen:
        return None
    fig, ax = plt.subplots(figsize=(7, 3))
    x = np.arange(len(gen))
    ax.bar(x - 0.2, [g["kmeans_pgs_force_rmse_N"] for g in gen], 0.4, color=COLORS["kmeans_pgs"],
           label=LABELS["kmeans_pgs"])
    ax.bar(x + 0.2, [g["ours_force_rmse_N"] for g in gen], 0.4, color=COLORS["ours"], label=LABELS["ours"])
    ax.set_xticks(x, [f"M{g['diameter_mm']:g}x{g['pitch_mm']:g}" for g in gen], rotation=30, fontsize=7)
    ax.set_ylabel("force RMSE [N]")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _fig19(traces: dict, path: Path) -> str | None:
    import matplotlib.pyplot as plt

    tr = traces.get("robustness")
    if tr is None:
        return None
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 4.4), sharex=True)
    t = np.arange(len(tr["force"])) * SIM_DT
    ax.plot(t, tr["force"], color=COLORS["ours"], lw=0.7)
    ax.set_ylabel("|contact force| [N]")
    ax.set_title("robustness: random commands on the nut", fontsize=9)
    pen = np.asarray(tr["penetration"]).reshape(-1, 2)
    ax2.plot(pen[:, 0], pen[:, 1] * 1e6, color="k", lw=0.7)
    ax2.set_ylabel("max penetration [µm]")
    ax2.set_xlabel("time [s]")
    return _save(fig, path)


def plot_tight_assembly(result: dict, traces: dict, folder: Path) -> list[str]:
    """Write the figures into ``folder`` (created); returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    folder.mkdir(parents=True, exist_ok=True)
    out = [_per_task(traces, "complete", _fig8, "mean penetration of the nodes in contact (Fig. 8)", "µm",
                     folder / "fig8_penetration.png"),
           _per_task(traces, "one_step", _fig9, "one-step contact force (Fig. 9)", "|f| [N]",
                     folder / "fig9_one_step_force.png"),
           _per_task(traces, "complete", _fig10, "complete simulation (Figs. 10, 12)", "|f| [N]",
                     folder / "fig10_complete_force.png"),
           _fig11(result, folder / "fig11_stage_times.png"), _fig14(result, folder / "fig14_generalization.png"),
           _fig19(traces, folder / "fig19_robustness.png")]
    return [name for name in out if name is not None]
