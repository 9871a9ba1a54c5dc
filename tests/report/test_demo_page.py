"""The demo page (``make demo``) shows a rendered insertion: the GIF is written, referenced and embedded, and loads in
a browser; the page is made by the same code as ``contactkit report``."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from contactkit import demo
from contactkit.report import render
from contactkit.report.html import write_report
from contactkit.report.render import RenderError, gl_context, render_gif
from contactkit.tasks.scenes import peg_in_hole

SHORT_TRIAL = 24
"""Control steps of the test's spiral trial (the demo's are 240): enough frames for an animation."""


def _png(path):
    Image.fromarray(np.full((20, 30, 3), 200, dtype=np.uint8)).save(path)
    return path.name


def _summary(out, row: dict) -> dict:
    return {"touch": {"episodes": 1, "steps": SHORT_TRIAL, "dataset": "x"},
            "learn": {"train_iters": 1, "horizon": 1, "rows": [], "figures": [_png(out / "predict.png")],
                      "pos_ratio_vs_nominal": 0.5},
            "insertion": [row],
            "estimate": {"theta_gt_mm": [1.0, -2.0, 0.5], "rows": [], "figures": [_png(out / "placement.png")]},
            "wall_s": {}}


def test_demo_page_embeds_a_rendered_insertion(tmp_path, chromium_check):
    try:
        gl_context(8, 8)[0].free()
    except RenderError:
        pytest.skip("no off-screen OpenGL here: apt install libegl1 or libosmesa6")
    scene = peg_in_hole("square", 1e-3)
    episode, row = demo.spiral_trial(scene, np.random.default_rng(0), steps=SHORT_TRIAL)
    logged = []
    video = render_gif(scene, episode, tmp_path, "square-in-square", logged.append, stem="spiral",
                       config=demo.ROLLOUT_VIDEO)
    assert video == "spiral_square-in-square.gif" and logged == []
    with Image.open(tmp_path / video) as im:
        assert im.n_frames == len(range(0, SHORT_TRIAL + 1, demo.ROLLOUT_VIDEO.stride))
    _png(tmp_path / "touch_episode0.png")
    row = {"tool": "square", "slot": "square", **row, "figure": _png(tmp_path / "spiral_square-in-square.png"),
           "video": video}
    sections = demo.report_sections(_summary(tmp_path, row))
    insert = next(s for s in sections if s["title"].startswith("3. Insert"))
    assert insert["figures"][0] == video
    page = write_report(tmp_path, "contactkit demo", sections)
    text = page.read_text(encoding="utf-8")
    assert f"alt='{video}'" in text and "src='data:image/gif;base64," in text
    check = chromium_check(page)
    assert video in [i["alt"] for i in check["images"]]
    assert all(i["ok"] for i in check["images"]) and check["overflowing"] == []


def test_no_gl_means_no_video_and_a_logged_reason(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise RenderError("no off-screen OpenGL context (test)")

    monkeypatch.setattr(render, "episode_frames", refuse)
    scene = peg_in_hole("square", 1e-3)
    episode, _ = demo.spiral_trial(scene, np.random.default_rng(0), steps=4)
    logged = []
    assert render_gif(scene, episode, tmp_path, "x", logged.append) is None
    assert len(logged) == 1 and "no off-screen OpenGL" in logged[0]
    assert not list(tmp_path.glob("*.gif"))


def test_report_appends_the_demo_sections(tmp_path):
    """``contactkit report --demo DIR`` adds the demo page's sections (figures resolved in DIR) to the report."""
    import json

    from typer.testing import CliRunner

    from contactkit.cli import app

    demo_dir, results = tmp_path / "demo", tmp_path / "results"
    demo_dir.mkdir()
    results.mkdir()
    _png(demo_dir / "touch_episode0.png")
    row = {"tool": "square", "slot": "square", "offset_mm": [2.0, 1.0], "contact_s": 1.0, "search_s": 2.0,
           "tip_height_mm": -0.1, "inserted": True, "figure": _png(demo_dir / "spiral.png"), "video": None}
    (demo_dir / "summary.json").write_text(json.dumps(_summary(demo_dir, row)))
    out = tmp_path / "report.html"
    run = CliRunner().invoke(app, ["report", "--results", str(results), "--demo", str(demo_dir), "-o", str(out)])
    assert run.exit_code == 0, run.output
    text = out.read_text(encoding="utf-8")
    assert "demo: 3. Insert" in text and text.count("src='data:image/png;base64,") == 4
    missing = CliRunner().invoke(app, ["report", "--results", str(results), "--demo", str(tmp_path), "-o", str(out)])
    assert missing.exit_code == 2 and "summary.json" in missing.output


PLACEMENT_STEPS = 4
"""Control steps of the test's traced placement (the demo's run 50)."""


def test_placement_rollout_is_rendered_and_shown_first(tmp_path):
    try:
        gl_context(8, 8)[0].free()
    except RenderError:
        pytest.skip("no off-screen OpenGL here: apt install libegl1 or libosmesa6")
    from contactkit.tasks.placement import make_task, sample_cases

    theta = sample_cases(make_task(demo.ESTIMATE_TASK), 1, np.random.default_rng(0))[0]
    video = demo._placement_rollout(tmp_path, 0, theta, print, steps=PLACEMENT_STEPS)
    assert video == f"placement_ours-{demo.ESTIMATE_TASK}.gif"
    with Image.open(tmp_path / video) as im:
        assert im.n_frames == PLACEMENT_STEPS + 1
    summary = _summary(tmp_path, {"tool": "s", "slot": "s", "offset_mm": [1.0, 1.0], "search_s": None,
                                  "tip_height_mm": 1.0, "inserted": False, "figure": "x.png", "video": None})
    summary["estimate"]["video"] = video
    estimate = next(s for s in demo.report_sections(summary) if s["title"].startswith("4. Estimate"))
    assert estimate["figures"][0] == video
