"""Figures of the pushing experiment (:mod:`contactkit.eval.exp_pushing`): Fig. 5 (training curve), Fig. 6
(trajectory and angle tracking, desired / PD-only / RL-assisted) and Fig. 8 (per-step force and torque tracking
error, model vs "real", cube under the constant profile)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from contactkit.control.icr import ProfileKind
from contactkit.pushing.scene import ObjectKind

COLORS = {"desired": "tab:green", "pd": "tab:blue", "rl": "tab:red"}
"""The paper's colours (Fig. 6: green desired, blue PD-only, red RL-assisted)."""
FIG6_PANELS = ((ObjectKind.CUBE, ProfileKind.CONSTANT, "xy"), (ObjectKind.CUBE, ProfileKind.CONSTANT, "angle"),
               (ObjectKind.WEDGE, ProfileKind.TRAPEZOIDAL, "angle"), (ObjectKind.WEDGE, ProfileKind.CHIRP, "angle"))
"""Fig. 6 (a)–(d): case and what is drawn (its first feasible goal, "real" world)."""


def _fig5(curve_path: Path, path: Path) -> bool:
    """Fig. 5: per-episode mean absolute normal / tangential force (left) and torque (right) errors in training."""
    import matplotlib.pyplot as plt

    if not curve_path.is_file():
        return False
    errors = np.asarray(json.loads(curve_path.read_text())["errors"], dtype=np.float64).reshape(-1, 3)
    episodes = np.arange(1, len(errors) + 1)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(episodes, errors[:, 0], ".", ms=3, label="normal force")
    ax.plot(episodes, errors[:, 1], ".", ms=3, label="tangential force")
    ax.set_xlabel("episode")
    ax.set_ylabel("mean |error| [N]")
    right = ax.twinx()
    right.plot(episodes, errors[:, 2], ".", ms=3, color="tab:purple", label="torque")
    right.set_ylabel("mean |torque error| [N m]")
    fig.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _fig6(per: dict, path: Path) -> bool:
    """Fig. 6: desired, PD-only and RL-assisted object trajectories of one goal per panel ("real" world)."""
    import matplotlib.pyplot as plt

    from contactkit.eval.exp_pushing import Controller, WorldKind

    fig, axes = plt.subplots(1, len(FIG6_PANELS), figsize=(3.4 * len(FIG6_PANELS), 3.2))
    drawn = False
    for ax, (obj, profile, what) in zip(axes, FIG6_PANELS, strict=True):
        ax.set_title(f"{obj.value}, {profile.value}", fontsize=9)
        runs = {c: per.get((obj, profile), {}).get((c, WorldKind.REAL), []) for c in Controller}
        if not all(runs.values()):
            continue
        drawn = True
        first = {c: runs[c][0] for c in Controller}
        des = first[Controller.PD]["desired"]
        t = np.arange(1, len(des) + 1) * 0.01
        if what == "xy":
            ax.plot(des[:, 0], des[:, 1], color=COLORS["desired"], label="desired")
            for c in Controller:
                ax.plot(first[c]["pose"][:, 0], first[c]["pose"][:, 1], color=COLORS[c.value], label=c.value)
            ax.set_xlabel("x [m]")
            ax.set_ylabel("y [m]")
            ax.axis("equal")
        else:
            ax.plot(t, des[:, 2], color=COLORS["desired"], label="desired")
            for c in Controller:
                pose = first[c]["pose"]
                ax.plot(t[:len(pose)], pose[:, 2], color=COLORS[c.value], label=c.value)
            ax.set_xlabel("t [s]")
            ax.set_ylabel("yaw [rad]")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn


def _stack_mean(series: list[np.ndarray]) -> np.ndarray:
    """Per-step mean of series of unequal length (shorter ones end early)."""
    n = max(len(s) for s in series)
    pad = np.full((len(series), n), np.nan)
    for i, s in enumerate(series):
        pad[i, :len(s)] = s
    return np.nanmean(pad, axis=0)


def _fig8(per: dict, path: Path) -> bool:
    """Fig. 8: cube, constant profile: mean over goals of the per-step planar force and torque errors."""
    import matplotlib.pyplot as plt

    from contactkit.eval.exp_pushing import Controller, WorldKind

    runs = per.get((ObjectKind.CUBE, ProfileKind.CONSTANT), {})
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    drawn = False
    for (c, w), results in runs.items():
        done = [r for r in results if "force_err" in r and len(r["force_err"])]
        if not done:
            continue
        drawn = True
        style = "-" if w is WorldKind.SIM else "--"
        for ax, key in zip(axes, ("force_err", "torque_err"), strict=True):
            m = _stack_mean([r[key] for r in done])
            ax.plot(np.arange(1, len(m) + 1) * 0.01, m, style, color=COLORS[c.value], lw=0.8,
                    label=f"{'PD-only' if c is Controller.PD else 'RL-assisted'}, {w.value}")
    axes[0].set_ylabel("planar force error [N]")
    axes[1].set_ylabel("torque error [N m]")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn


def plot_pushing(result: dict, per: dict, model_dir: Path, out: Path) -> list[str]:
    """Write Figs. 5, 6 and 8 into ``out``; returns the files written (Fig. 5 needs the actor folder's
    ``training_curve.json``)."""
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (("fig5_training.png", lambda p: _fig5(model_dir / "training_curve.json", p)),
                       ("fig6_tracking.png", lambda p: _fig6(per, p)),
                       ("fig8_force_torque.png", lambda p: _fig8(per, p))):
        if draw(out / name):
            written.append(str(out / name))
    return written
