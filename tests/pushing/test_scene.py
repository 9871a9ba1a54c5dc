"""The pushing scene (pushing paper Table II) and its MJCF: loads, steps, cited masses and limits."""

import mujoco
import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.scene import (
    N_ARM_JOINTS,
    OBJECT_BODY,
    ObjectKind,
    PushScene,
    build_mjcf,
    object_inertia_z,
    object_polygon,
)

# Cited in assets/kinova_gen2_7dof.xml: base [K2], shoulder [K2], arm halves [K3], forearm [K2],
# spherical wrists [K3], flange (chosen).
CITED_LINK_MASSES = (0.46784, 0.7477, 0.8447, 0.8447, 0.6763, 0.463, 0.463, 0.10)


@pytest.mark.parametrize("kind", list(ObjectKind))
def test_mjcf_loads_steps_and_matches_table_ii(kind):
    scene = PushScene.for_object(kind)
    model = mujoco.MjModel.from_xml_string(build_mjcf(scene))
    data = mujoco.MjData(model)
    data.qpos[:N_ARM_JOINTS] = scene.home_q
    for _ in range(20):
        mujoco.mj_step(model, data)
    assert np.all(np.isfinite(data.qpos))
    assert model.body_mass[model.body(OBJECT_BODY).id] == pytest.approx({"cube": 0.300, "wedge": 0.350}[kind.value])
    assert model.body_mass[model.body("pusher").id] == pytest.approx({"cube": 0.030, "wedge": 0.040}[kind.value])
    assert scene.object_size == {"cube": (0.088,) * 3, "wedge": (0.140, 0.085, 0.080)}[kind.value]
    # I_z of the hybrid model equals MuJoCo's (from the box / the wedge mesh) about the vertical axis.
    inertia = model.body_inertia[model.body(OBJECT_BODY).id]
    assert np.min(np.abs(inertia - object_inertia_z(scene))) < 1e-9


def test_arm_mass_links_and_torque_limits_match_citations():
    model = mujoco.MjModel.from_xml_string(build_mjcf(PushScene(), with_object=False))
    arm_bodies = ["arm_base"] + [f"link{i}" for i in range(1, 8)]
    masses = [model.body_mass[model.body(name).id] for name in arm_bodies]
    assert masses == pytest.approx(CITED_LINK_MASSES)
    assert sum(masses) == pytest.approx(4.60724)
    assert model.njnt == N_ARM_JOINTS and all(model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    assert model.actuator_ctrlrange[:, 1] == pytest.approx([30.5] * 4 + [6.8] * 3)
    # DH lengths of the Kinova user guide: D1 = 0.2755, D2 + D3 = 0.41, D4 = 0.2073, D5 + D6 = 0.2075, D7 = 0.16.
    data = mujoco.MjData(model)
    data.qpos[:] = [0, np.pi, 0, np.pi, 0, np.pi, 0]  # candle: arm straight up
    mujoco.mj_kinematics(model, data)
    height = data.xpos[model.body("end_effector").id][2]
    assert height == pytest.approx(0.2755 + 0.41 + 0.2073 + 0.2075 + 0.16, abs=1e-9)


def test_polygon_is_ccw_about_the_centre_of_mass():
    for kind in ObjectKind:
        poly = object_polygon(PushScene.for_object(kind))
        area2 = np.sum(poly[:, 0] * np.roll(poly[:, 1], -1) - np.roll(poly[:, 0], -1) * poly[:, 1])
        assert area2 > 0.0
        assert np.abs(poly.mean(axis=0)).max() < 1e-12


@pytest.mark.parametrize("bad", [dict(object_mass=-1.0), dict(mu_ground=float("nan")), dict(home_q=(0.0,) * 6),
                                 dict(object_kind="cube"), dict(dt=0.0)])
def test_bad_scene_is_refused(bad):
    with pytest.raises(InvalidInputError):
        PushScene(**bad)
