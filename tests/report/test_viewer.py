"""The interactive 3-D page: what it is given (meshes, poses, arrows, contacts) is right, and in a real browser it
draws, scrubs to another time and draws something else, inside the window."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.report.render import HISTORY, ContactProbe, RenderConfig
from contactkit.report.viewer import subdivide, track, viewer_html, viewer_payload
from contactkit.rotations import quat_to_mat
from contactkit.tasks.scenes import peg_in_hole


def _area(v, f) -> float:
    v, f = np.asarray(v), np.asarray(f)
    return float(0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum())


def test_subdivide_keeps_the_surface_and_bounds_every_edge():
    v = np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 1.0, 0], [0, 1.0, 0]])
    f = np.array([[0, 1, 2], [0, 2, 3]])
    v2, f2 = subdivide(v, f, 0.3)
    edges = np.linalg.norm(v2[f2] - v2[np.roll(f2, 1, axis=1)], axis=2)
    assert edges.max() <= 0.3 and len(f2) > len(f)
    assert _area(v2, f2) == pytest.approx(_area(v, f))
    assert np.array_equal(v2[:4], v)
    v3, f3 = subdivide(v, f, 10.0)  # nothing to split
    assert len(v3) == 4 and set(map(tuple, f3.tolist())) == set(map(tuple, f.tolist()))


def test_track_puts_the_arrows_at_the_sensor_in_the_world_frame(dataset):
    _, episode, scene = dataset
    config = RenderConfig(force_m_per_N=0.01, arrow_max_m=1.0)
    t = track(scene, episode, ContactProbe(scene), config)
    k = 5
    q = episode.quat[k] / np.linalg.norm(episode.quat[k])
    rot = quat_to_mat(q)
    origin = episode.pos[k] + rot @ scene.tool.sensor_pos
    assert np.allclose(t["origin"][k], origin, atol=1e-6)
    expected = origin + rot @ quat_to_mat(scene.tool.sensor_quat) @ episode.wrench[k - 1, :3] * 0.01
    assert np.allclose(t["force"][k], expected, atol=1e-6)
    assert np.allclose(t["force"][0], t["origin"][0])  # no reading before the first step
    assert len(t["contacts"]) == episode.pos.shape[0]


def test_contacts_appear_on_the_slot_floor_only():
    scene = peg_in_hole("square", 1e-3)
    probe = ContactProbe(scene)
    assert probe.points(np.asarray(scene.tool.init_pos), np.array([1.0, 0, 0, 0])).shape == (0, 3)
    assert probe.points(np.asarray(scene.target_pos) - [0, 0, 1e-4], np.array([1.0, 0, 0, 0])).shape[0] > 0


def test_payload_refuses_a_prediction_of_another_length(dataset):
    _, episode, scene = dataset
    short = type(episode)(*(getattr(episode, f)[:5] for f in ("time", "pos", "quat", "lin_vel", "ang_vel")),
                          episode.action[:4], episode.command[:4], episode.wrench[:4])
    with pytest.raises(InvalidInputError, match="states"):
        viewer_payload(scene, episode, predicted=short)


def test_page_embeds_json_that_cannot_close_its_script(dataset):
    _, episode, scene = dataset
    payload = viewer_payload(scene, episode)
    payload["scene"] = "</script><b>x"
    page = viewer_html(payload, "t")
    data = re.search(r"<script type='application/json' id='data'>(.*?)</script>", page, re.DOTALL).group(1)
    assert json.loads(data)["scene"] == "</script><b>x"


def test_page_draws_and_scrubs_in_chromium(dataset, tmp_path, chromium_check):
    path, episode, scene = dataset
    from typer.testing import CliRunner

    from contactkit.cli import app

    out = tmp_path / "view.html"
    run = CliRunner().invoke(app, ["view", str(path), "--episode", "0", "-o", str(out)])
    assert run.exit_code == 0, run.output
    check = chromium_check(out)
    extra = check["extra"]
    assert extra["frames"] == episode.pos.shape[0]
    assert extra["first"]["pixels"] > 1000 and extra["last"]["pixels"] > 1000
    assert extra["first"]["hash"] != extra["last"]["hash"]  # the tool moved between the first and the last state
    assert extra["label_first"].startswith("t 0.00 s") and f"{episode.time[-1]:.2f} s" in extra["label_last"]
    assert check["overflowing"] == [] and check["scroll_width"] <= check["viewport"]
    bad = CliRunner().invoke(app, ["view", str(path), "--episode", "3", "-o", str(tmp_path / "x.html")])
    assert bad.exit_code == 2 and "out of range" in bad.output


CHECKPOINT = Path(__file__).resolve().parents[2] / "models" / "act-fignet-hexagon-target"
"""A committed Act-FIGNet (hexagonal peg, target world): its prediction of a short episode takes about a second."""


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the committed Act-FIGNet checkpoint is absent")
def test_view_and_render_with_a_checkpoint_show_the_prediction(dataset, tmp_path):
    path, episode, _ = dataset
    from PIL import Image
    from typer.testing import CliRunner

    from contactkit.cli import app

    out = tmp_path / "view.html"
    run = CliRunner().invoke(app, ["view", str(path), "-o", str(out), "--checkpoint", str(CHECKPOINT)])
    assert run.exit_code == 0, run.output
    data = re.search(r"<script type='application/json' id='data'>(.*?)</script>", out.read_text(), re.DOTALL)
    payload = json.loads(data.group(1))
    measured, predicted = np.asarray(payload["measured"]["pos"]), np.asarray(payload["predicted"]["pos"])
    assert predicted.shape == measured.shape == episode.pos.shape
    assert np.allclose(predicted[:HISTORY], measured[:HISTORY])  # the model's history is the recording
    assert not np.allclose(predicted[HISTORY:], measured[HISTORY:])  # then it predicts on its own
    assert "best.safetensors" in payload["predicted_name"]
    gif = tmp_path / "both.gif"
    run = CliRunner().invoke(app, ["render", str(path), "-o", str(gif), "--checkpoint", str(CHECKPOINT),
                                   "--width", "80", "--height", "60", "--stride", "6"])
    if run.exit_code == 2 and "OpenGL" in run.output:
        pytest.skip(run.output)
    assert run.exit_code == 0, run.output
    with Image.open(gif) as im:
        assert im.size == (160, 60)


def test_a_diverged_prediction_is_refused_in_words(dataset):
    _, episode, scene = dataset
    payload = viewer_payload(scene, episode)
    payload["measured"]["pos"][3][0] = float("nan")
    with pytest.raises(InvalidInputError, match="NaN"):
        viewer_html(payload, "t")
