"""The one off-screen OpenGL setup (contactkit.mujoco.render): the tool is drawn where its state says, with the
flange–tool compliance on or off; the context is made by ``MUJOCO_GL`` or EGL then OSMesa, or refused in words."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from contactkit.model import ActionMode
from contactkit.mujoco import MujocoWorld
from contactkit.mujoco.mjcf import TOOL_BODY
from contactkit.mujoco.render import RenderError, SceneRenderer, gl_context, pose_tool
from contactkit.physics import WorldParams
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

FREE = np.array([0.0, 0.0, 0.2])
"""A tool position [m] far above the slot: no contact."""
COMPLIANT = WorldParams(timestep=0.0005, n_substeps=100, compliance_stiffness=(2e4, 3e4, 5e4, 40.0, 40.0, 10.0),
                        compliance_damping=(60.0, 60.0, 60.0, 0.05, 0.05, 0.01), compliance_mass=0.1)


def _scene():
    return peg_in_hole("square")


def _can_render() -> bool:
    try:
        gl_context(8, 8)[0].free()
    except RenderError:
        return False
    return True


def _deflected_tool_state() -> tuple[MujocoWorld, BodyState]:
    """A compliant world after a sideways push in free space: the spring deflects, so the tool (the state) and the
    flange (the free joint's pose) are apart."""
    world = MujocoWorld(_scene(), COMPLIANT)
    world.reset(BodyState.at_rest(FREE))
    for _ in range(5):  # 4 N for 10 steps carried it 1.2 m out of the workspace, beyond the worlds' bound
        world.step(np.array([4.0, 0.0, 0.0, 0.0, 0.0, 0.0]), ActionMode.WRENCH)
    return world, world.state()


def test_the_tool_is_posed_at_its_state_with_compliance_on_or_off():
    world, state = _deflected_tool_state()
    assert np.linalg.norm(state.pos - world.data.qpos[0:3]) > 1e-6  # the flange is elsewhere: the test can fail
    for w in (world, MujocoWorld(_scene(), WorldParams())):
        data = mujoco.MjData(w.model)
        pose_tool(w, data, state)
        body = mujoco.mj_name2id(w.model, mujoco.mjtObj.mjOBJ_BODY, TOOL_BODY)
        np.testing.assert_allclose(data.xpos[body], state.pos, atol=1e-12)
        assert abs(float(np.dot(data.xquat[body], state.quat))) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.skipif(not _can_render(), reason="no off-screen OpenGL here (install libegl1 or libosmesa6)")
def test_a_compliant_and_a_rigid_world_draw_the_same_tool_at_the_same_state():
    world, state = _deflected_tool_state()
    rigid = MujocoWorld(_scene(), WorldParams())
    images = []
    for w in (world, rigid):
        renderer = SceneRenderer(w, 96, 72)
        images.append(renderer.render(state))
        renderer.close()
        renderer.close()  # idempotent
    assert images[0].shape == (72, 96, 3) and images[0].dtype == np.uint8
    assert images[0].std() > 0  # something is drawn
    np.testing.assert_array_equal(images[0], images[1])


def test_an_unknown_backend_is_refused_in_words(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "nosuchgl")
    with pytest.raises(RenderError, match="nosuchgl"):
        SceneRenderer(MujocoWorld(_scene(), WorldParams()), 8, 8)
