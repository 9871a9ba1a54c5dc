"""``contactkit demo`` (what ``make demo`` runs): the main story end to end on CPU, in minutes.

Now: touch (collect a peg-in-hole dataset in the target world), insert (spiral search in MuJoCo for
each tool shape, the unseen circle-in-square included), and write a report under ``out/demo/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactkit.control.policies import SpiralPolicy
from contactkit.data.collect import CollectSpec, collect, run_episode
from contactkit.data.reader import open_dataset
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.report.html import write_report
from contactkit.report.plots import plot_episode
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

SUCCESS_DISTANCE_M = 0.002
"""Paper 0 §IV-A: success when the tool tip is within 2 mm of the slot bottom."""
INSERTION_CASES = (
    ("triangle", None),
    ("square", None),
    ("hexagon", None),
    ("circle", None),
    ("circle", "square"),
)


def _touch(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    spec = CollectSpec(
        task="peg-in-hole",
        shape="hexagon",
        clearance=1e-3,
        policy="random-spline",
        episodes=8,
        steps=200,
        seed=seed,
        world=load_world("target"),
    )
    path = out / "data" / "touch.h5"
    started = time.perf_counter()
    collect(spec, str(path))
    with open_dataset(path) as ds:
        summary = ds.summary()
        episode = ds.episode(0)
    plot_episode(episode, out / "touch_episode0.png", title="random-spline touching, target world, episode 0")
    log(f"collected {summary['episodes']} episodes in {time.perf_counter() - started:.1f} s -> {path}")
    return {"dataset": str(path.relative_to(out)), "episodes": summary["episodes"], "steps": summary["steps"]}


def _insert(out: Path, seed: int, log: Callable[[str], None]) -> list[dict]:
    rows = []
    for shape, slot_shape in INSERTION_CASES:
        scene = peg_in_hole(shape, 1e-3, slot_shape=slot_shape)
        rng = np.random.default_rng([seed, len(rows)])
        start = BodyState.at_rest(scene.tool.init_pos + [*rng.uniform(-0.003, 0.003, size=2), 0.0])
        episode = run_episode(MujocoWorld(scene, load_world("nominal")), SpiralPolicy(), 120, start, rng)
        depth = float(episode.pos[-1, 2] - scene.target_pos[2])
        name = f"{shape}-in-{slot_shape or shape}"
        fig = f"spiral_{name}.png"
        plot_episode(episode, out / fig, title=f"spiral insertion: {name}, 1 mm clearance")
        rows.append(
            {
                "tool": shape,
                "slot": slot_shape or shape,
                "final_tip_height_mm": depth * 1e3,
                "inserted": bool(depth < SUCCESS_DISTANCE_M),
                "figure": fig,
            }
        )
        log(f"spiral insertion {name}: tip {depth * 1e3:.2f} mm above the bottom")
    return rows


def run_demo(out: str | Path = "out/demo", seed: int = 0, log: Callable[[str], None] = print) -> dict:
    """Run the demo and write ``out/index.html``, ``out/summary.json`` and the figures; returns the summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    touch = _touch(out, seed, log)
    insert = _insert(out, seed, log)
    summary = {"touch": touch, "insertion": insert, "wall_s": time.perf_counter() - started}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(
        out,
        "contactkit demo",
        [
            {
                "title": "1. Touch: learning data from contact",
                "text": f"{touch['episodes']} random-spline episodes ({touch['steps']} control steps) of a hexagonal "
                "peg around a 1 mm-clearance slot in the 'target' world (noisy, biased F/T).",
                "figures": ["touch_episode0.png"],
            },
            {
                "title": "2. Insert: spiral search in MuJoCo",
                "text": "Spiral search with a constant downward push, one trial per tool; the circle-in-square "
                "pairing is paper 0's unseen case.",
                "rows": [{k: v for k, v in r.items() if k != "figure"} for r in insert],
                "figures": [r["figure"] for r in insert],
            },
        ],
    )
    log(f"report: {out / 'index.html'} ({summary['wall_s']:.0f} s)")
    return summary
