"""The insertion environment as gymnasium sees it: registered on ``import contactkit``, float32 spaces with finite
bounds that every observation lies in, off-screen rendering, a scene of the user's own without a pairing."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import contactkit
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState
from contactkit.tasks.peg_env import ObservationBounds, PegEnvConfig, PegInsertionEnv
from contactkit.tasks.scenes import peg_in_hole

ENV_ID = "contactkit/PegInsertion-v0"
ORANGE_MARGIN = 40
"""A pixel of the tool (orange in the MJCF, rgba 0.85 0.5 0.2) has red above blue by this much (8-bit) and
red > green > blue; the slot, table and background are grey or black."""


def _can_render() -> bool:
    """MuJoCo can make an off-screen context here: the backend it was imported with is EGL or OSMesa and its
    library exists, or there is a display."""
    backend = os.environ.get("MUJOCO_GL", "")
    library = {"egl": "EGL", "osmesa": "OSMesa"}.get(backend)
    if library is not None:
        return ctypes.util.find_library(library) is not None
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _tool_pixels(image: np.ndarray) -> int:
    r, g, b = np.moveaxis(image.astype(np.int64), -1, 0)
    return int(((r - b > ORANGE_MARGIN) & (r > g) & (g > b)).sum())


def test_make_builds_the_registered_env_with_float32_finite_spaces():
    assert ENV_ID in contactkit.GYM_ENVIRONMENTS and ENV_ID in gym.registry
    env = gym.make(ENV_ID, config=PegEnvConfig(pairing="square", max_steps=5))
    assert isinstance(env.unwrapped, PegInsertionEnv) and env.unwrapped.config.pairing == "square"
    for space in (env.observation_space, env.action_space):
        assert space.dtype == np.float32 and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        assert obs.dtype == np.float32 and env.observation_space.contains(obs)
        obs, *_ = env.step(rng.uniform(-1, 1, 6).astype(np.float32))
    env.close()


def test_make_with_the_module_prefix_needs_no_import_first():
    code = ("import gymnasium as gym; env = gym.make('contactkit:contactkit/PegInsertion-v0'); "
            "print(type(env.unwrapped).__name__, env.observation_space.dtype)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.split() == ["PegInsertionEnv", "float32"], run.stderr


@pytest.mark.skipif(not _can_render(), reason="no EGL or OSMesa library and no display: MuJoCo cannot render here")
def test_make_renders_an_image_of_the_tool():
    env = gym.make(ENV_ID, render_mode="rgb_array", render_size=(160, 120))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)  # with the render check
    env.reset(seed=0)
    image = env.render()
    assert image.shape == (120, 160, 3) and image.dtype == np.uint8
    assert _tool_pixels(image) > 50, "the tool should be in view above its slot"
    far = BodyState.at_rest([0.0, 0.0, 5.0])  # 5 m up: out of the camera's view
    env.reset(options={"state": far})
    assert _tool_pixels(env.render()) == 0
    env.close()


@pytest.mark.skipif(not _can_render(), reason="no EGL or OSMesa library and no display: MuJoCo cannot render here")
def test_an_env_driven_by_a_model_renders_the_same_picture_of_the_same_state():
    from contactkit.mujoco.model import MujocoContactModel

    config = PegEnvConfig(pairing="triangle")
    on_world = PegInsertionEnv(config, render_mode="rgb_array", render_size=(96, 72))
    on_model = PegInsertionEnv(config, dynamics=MujocoContactModel(config.scene()), render_mode="rgb_array",
                               render_size=(96, 72))
    on_world.reset(seed=2)
    on_model.reset(seed=2)
    np.testing.assert_array_equal(on_world.render(), on_model.render())
    on_world.close()
    on_model.close()


def test_render_needs_the_mode_and_a_reset():
    env = PegInsertionEnv()
    with pytest.raises(InvalidInputError, match="render_mode='rgb_array'"):
        env.render()
    with pytest.raises(InvalidInputError, match="reset"):
        PegInsertionEnv(render_mode="rgb_array").render()
    with pytest.raises(InvalidInputError, match="render_mode"):
        PegInsertionEnv(render_mode="human")


def test_a_scene_of_ones_own_needs_no_pairing(tmp_path):
    scene = peg_in_hole("pentagon", 3e-3)  # not one of the paper's pairings
    env = PegInsertionEnv(scene=scene)
    assert env.config.pairing is None and env.scene is scene
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and not info["success"]
    path = tmp_path / "pentagon.json"
    path.write_text(scene.to_json())
    made = gym.make(ENV_ID, scene=str(path))
    assert made.unwrapped.scene.to_json() == scene.to_json()
    with pytest.raises(InvalidInputError, match="names no scene"):
        PegEnvConfig(pairing=None).scene()


def test_a_bad_scene_file_is_named(tmp_path):
    with pytest.raises(InvalidInputError, match="scene file '.*missing.json'"):
        PegInsertionEnv(scene=tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"tool": 3}')
    with pytest.raises(InvalidInputError, match="scene file '.*bad.json'"):
        gym.make(ENV_ID, scene=str(bad))


def test_readings_beyond_the_bounds_saturate_and_say_so():
    """Tiny speed bounds: a moving tool's observed velocity sits exactly at the bound; float64 observations are
    the float32 ones to float32 precision."""
    bounds = ObservationBounds(speed=1e-4)
    env = PegInsertionEnv(PegEnvConfig(pairing="square", bounds=bounds))
    env64 = PegInsertionEnv(PegEnvConfig(pairing="square", bounds=bounds), observation_dtype=np.float64)
    obs, info = env.reset(seed=0)
    obs64, _ = env64.reset(seed=0)
    assert not info["saturated"] and obs64.dtype == np.float64
    action = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    obs, _, _, _, info = env.step(action)
    obs64, *_ = env64.step(action)
    assert info["saturated"] and obs[9] == np.float32(1e-4) and env.observation_space.contains(obs)
    assert env.state.lin_vel[2] > 1e-4
    np.testing.assert_array_equal(obs, obs64.astype(np.float32))
    with pytest.raises(InvalidInputError, match="ObservationBounds.force"):
        ObservationBounds(force=np.inf)
    for bad in (np.int32, "nonsense"):
        with pytest.raises(InvalidInputError, match="observation_dtype"):
            PegInsertionEnv(observation_dtype=bad)
    with pytest.raises(InvalidInputError, match="render_size"):
        PegInsertionEnv(render_size=(0, 10))


@pytest.mark.parametrize(("environ", "platform", "libraries", "expected"), [
    ({}, "linux", {"EGL", "OpenGL", "OSMesa"}, "egl"),
    ({}, "linux", {"EGL", "GL"}, "egl"),
    ({}, "linux", {"EGL", "OSMesa"}, "osmesa"),  # EGL without an OpenGL library: PyOpenGL cannot use it
    ({}, "linux", {"EGL"}, None),
    ({}, "linux", {"OSMesa"}, "osmesa"),
    ({}, "linux", set(), None),
    ({"MUJOCO_GL": "glfw"}, "linux", {"EGL", "GL"}, None),
    ({"DISPLAY": ":0"}, "linux", {"EGL", "GL"}, None),
    ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", {"EGL", "GL"}, None),
    ({}, "darwin", {"EGL", "GL"}, None),
])
def test_default_gl_backend(environ, platform, libraries, expected):
    found = {name: f"lib{name}.so" for name in libraries}
    assert contactkit.default_gl_backend(environ, platform, found.get) == expected
