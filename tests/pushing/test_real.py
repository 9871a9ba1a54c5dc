"""The MuJoCo "real" pushing world (issue 18 part 7): its hidden parameters are applied and it pushes."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.arm import Arm, pd_from_ee_velocity
from contactkit.pushing.real import RealPushWorld, RealWorldParams
from contactkit.pushing.scene import OBJECT_BODY, TIP_GEOMS, ObjectKind, PushScene


@pytest.mark.parametrize("kind", list(ObjectKind))
def test_real_world_applies_its_hidden_parameters(kind):
    scene, params = PushScene.for_object(kind), RealWorldParams()
    world = RealPushWorld(scene, params)
    m = world.model
    assert m.body_mass[m.body(OBJECT_BODY).id] == pytest.approx(scene.object_mass * params.object_mass_scale)
    assert m.geom_friction[m.geom(TIP_GEOMS[0]).id, 0] == pytest.approx(scene.mu_contact * params.mu_contact_scale)
    nominal = Arm(scene).damping
    assert m.dof_damping[:7] == pytest.approx(nominal * params.damping_scale)
    assert m.opt.timestep == pytest.approx(scene.dt / params.substeps)


def test_real_world_push_moves_the_cube_with_bounded_forces():
    scene = PushScene.for_object(ObjectKind.CUBE)
    world, arm = RealPushWorld(scene), Arm(scene)
    touched = False
    for _ in range(60):
        s = world.state
        pd = pd_from_ee_velocity(arm, s.q, np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0]), scene.dt, 400.0, 20.0)
        step = world.step_pd(pd, arm.bias(s.q, np.zeros(7)))
        assert np.all(np.isfinite(step.contact_force)) and np.all(np.abs(step.torque) <= world.torque_limit + 1e-12)
        assert np.all(step.contact_force[:, 0] >= -1e-9)  # tips only push
        touched |= bool(step.in_contact.any())
    assert touched and world.state.obj_pose[0] > scene.object_pose[0] + 5e-3


def test_untouched_object_stays_put():
    scene = PushScene.for_object(ObjectKind.WEDGE, object_pose=(0.75, 0.2, 0.3))
    world, arm = RealPushWorld(scene), Arm(scene)
    for _ in range(20):
        step = world.step(arm.bias(world.state.q, world.state.qd))
    assert not step.in_contact.any()
    assert np.abs(world.state.obj_pose - scene.object_pose).max() < 1e-4


@pytest.mark.parametrize("bad", [dict(mu_ground_scale=0.0), dict(substeps=0), dict(armature=-1.0)])
def test_bad_params_are_refused(bad):
    with pytest.raises(InvalidInputError):
        RealWorldParams(**bad)
