"""Rendered rollouts: MuJoCo draws the tool where the episode puts it, F/T arrows and contact points appear where
they should, videos hold every frame, and what cannot be written here is refused before any rendering."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types

import numpy as np
import pytest
from PIL import Image

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.report import render as render_module
from contactkit.report.render import (
    FORCE_RGBA,
    HISTORY,
    EpisodeRenderer,
    RenderConfig,
    RenderError,
    check_video_path,
    episode_frames,
    gl_context,
    predicted_episode,
    write_video,
)
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

SMALL = RenderConfig(width=120, height=90, stride=3)
"""Small panels: the tests look at pixel counts, not at the picture."""
RED_MIN, OTHER_MAX = 180, 80
"""A pixel is "arrow red" when its red channel is at least RED_MIN and green and blue at most OTHER_MAX."""


def _renders() -> None:
    try:
        context, _ = gl_context(8, 8)
        context.free()
    except RenderError as exc:
        pytest.skip(f"no off-screen OpenGL here ({exc}); apt install libegl1 or libosmesa6")


def _red(image: np.ndarray) -> int:
    r, g, b = (image[..., i].astype(int) for i in range(3))
    return int(np.sum((r >= RED_MIN) & (g <= OTHER_MAX) & (b <= OTHER_MAX)))


def test_force_arrow_is_drawn_and_grows_with_the_force():
    _renders()
    scene = peg_in_hole("square", 1e-3)
    pose = (np.asarray(scene.tool.init_pos), np.array([1.0, 0.0, 0.0, 0.0]))
    with EpisodeRenderer(scene, RenderConfig(width=160, height=120)) as r:
        none = _red(r.frame(*pose, None))
        small = _red(r.frame(*pose, np.array([2.0, 0, 0, 0, 0, 0])))
        large = _red(r.frame(*pose, np.array([5.0, 0, 0, 0, 0, 0])))
    assert FORCE_RGBA[0] > FORCE_RGBA[1]
    assert none == 0 < small < large


def test_contact_points_only_where_the_tool_touches():
    _renders()
    scene = peg_in_hole("square", 1e-3)
    with EpisodeRenderer(scene, SMALL) as r:
        in_air = r.contacts(np.asarray(scene.tool.init_pos), np.array([1.0, 0, 0, 0]))
        on_floor = r.contacts(np.asarray(scene.target_pos) - [0, 0, 1e-4], np.array([1.0, 0, 0, 0]))
    assert in_air.shape == (0, 3)
    assert on_floor.shape[0] > 0
    assert np.allclose(on_floor[:, 2], scene.target_pos[2], atol=1e-3)


def test_frames_follow_the_tool_and_the_prediction_sits_beside(dataset):
    _renders()
    _, episode, scene = dataset
    frames = episode_frames(scene, episode, SMALL)
    assert frames.shape == (len(range(0, episode.pos.shape[0], SMALL.stride)), SMALL.height, SMALL.width, 3)
    assert frames.dtype == np.uint8 and frames.std() > 10
    assert np.array_equal(episode_frames(scene, episode, SMALL), frames)  # the demo's videos repeat
    moved = dataclasses.replace(episode, pos=episode.pos + [0.03, 0.0, 0.0])
    both = episode_frames(scene, episode, SMALL, predicted=moved)
    assert both.shape[2] == 2 * SMALL.width
    assert np.array_equal(both[:, :, :SMALL.width], frames)
    assert not np.array_equal(both[:, :, SMALL.width:], frames)


class _Hold:
    """A contact model that predicts no motion and a constant reading."""

    def step(self, window: BodyState, action):
        last = BodyState(window.pos[..., -1, :], window.quat[..., -1, :], 0 * window.lin_vel[..., -1, :],
                         0 * window.ang_vel[..., -1, :])
        return last, np.full((*np.shape(action)[:-1], 6), 7.0)


def test_predicted_episode_starts_from_the_recorded_history(dataset):
    _, episode, _ = dataset
    pred = predicted_episode(episode, _Hold(), ActionMode.POSE_DELTA)
    t0 = HISTORY - 1
    assert pred.pos.shape == episode.pos.shape and pred.wrench.shape == episode.wrench.shape
    assert np.array_equal(pred.pos[:t0 + 1], episode.pos[:t0 + 1])
    assert np.allclose(pred.pos[t0:], episode.pos[t0])
    assert np.array_equal(pred.wrench[:t0], episode.wrench[:t0]) and np.all(pred.wrench[t0:] == 7.0)


def test_gif_and_png_frames_hold_every_frame(tmp_path):
    frames = np.random.default_rng(0).integers(0, 255, (5, 8, 10, 3), dtype=np.uint8)
    gif = write_video(frames, tmp_path / "v.gif", fps=10.0)
    with Image.open(gif) as im:
        assert im.n_frames == 5 and im.size == (10, 8) and im.info["duration"] == 100
    folder = write_video(frames, tmp_path / "frames", fps=10.0)
    pngs = sorted(folder.glob("frame_*.png"))
    assert len(pngs) == 5
    assert np.array_equal(np.asarray(Image.open(pngs[2]).convert("RGB")), frames[2])


def test_unwritable_videos_are_refused_up_front(tmp_path, monkeypatch):
    with pytest.raises(InvalidInputError, match="'.avi' is not a video"):
        check_video_path(tmp_path / "v.avi")
    monkeypatch.setattr(render_module.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # the optional extra absent
    with pytest.raises(RenderError, match="ffmpeg"):
        check_video_path(tmp_path / "v.mp4")


def test_mp4_through_the_optional_extras_ffmpeg(tmp_path, monkeypatch):
    """No ffmpeg on PATH: imageio-ffmpeg's binary is used when the extra is installed."""
    monkeypatch.setattr(render_module.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", types.SimpleNamespace(get_ffmpeg_exe=lambda: "/opt/ff"))
    assert render_module.ffmpeg_executable() == "/opt/ff"
    assert check_video_path(tmp_path / "v.mp4") == tmp_path / "v.mp4"


@pytest.mark.skipif(render_module.ffmpeg_executable() is None, reason="no ffmpeg here: apt install ffmpeg, or "
                    "pip install contactkit[video]")
def test_mp4_holds_every_frame(tmp_path):
    frames = np.random.default_rng(0).integers(0, 255, (6, 16, 20, 3), dtype=np.uint8)
    out = write_video(frames, tmp_path / "v.mp4", fps=5.0)
    probe = subprocess.run([render_module.ffmpeg_executable(), "-hide_banner", "-i", str(out)], capture_output=True,
                           text=True)
    assert "Video: h264" in probe.stderr or "Video: mpeg4" in probe.stderr
    assert "Duration: 00:00:01.20" in probe.stderr


def test_an_unknown_gl_backend_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "nosuchgl")
    with pytest.raises(RenderError, match="nosuchgl"):
        gl_context(8, 8)


def test_render_command_writes_a_gif(dataset, tmp_path):
    _renders()
    from typer.testing import CliRunner

    from contactkit.cli import app

    path, episode, _ = dataset
    out = tmp_path / "ep.gif"
    run = CliRunner().invoke(app, ["render", str(path), "--episode", "0", "-o", str(out), "--stride", "4",
                                   "--width", "80", "--height", "60"])
    assert run.exit_code == 0, run.output
    with Image.open(out) as im:
        assert im.n_frames == len(range(0, episode.pos.shape[0], 4)) and im.size == (80, 60)
    bad = CliRunner().invoke(app, ["render", str(path), "--episode", "5", "-o", str(tmp_path / "x.gif")])
    assert bad.exit_code == 2 and "out of range" in bad.output
