"""The four placement tasks: valid convex geometry over the θ ranges, goals that put the object where it belongs,
and reproducible test cases (the policy's tests are in test_placement_policy.py)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.geometry.validate import check_solid, is_convex
from contactkit.rotations import quat_to_mat
from contactkit.tasks.placement import (
    CASE_MAX_SIGMA,
    CASE_MIN_NORM,
    WORLD,
    TaskName,
    bottom_normal,
    diff_scene,
    goal_pose,
    make_task,
    release_error,
    sample_cases,
    start_pose,
    task_scene,
)

TASKS = [t.value for t in TaskName]


@pytest.mark.parametrize("name", TASKS)
def test_pieces_are_convex_solids_over_the_case_range(name):
    task = make_task(name)
    extreme = CASE_MAX_SIGMA * task.init_std
    for theta in (extreme, -extreme, extreme * [1, -1, 1][: task.n_params], np.zeros(task.n_params)):
        for piece in (*task.tool_pieces, *task.env_pieces):
            mesh = piece.piece(theta)
            _, _, volume = check_solid(mesh.vertices, mesh.faces, piece.name)
            assert volume > 0 and is_convex(mesh.vertices, mesh.faces)


@pytest.mark.parametrize("name", TASKS)
def test_goal_pose_puts_the_object_on_its_goal(name):
    task = make_task(name)
    for theta in sample_cases(task, 3, np.random.default_rng(1)):
        pos, quat = goal_pose(task, theta)
        assert release_error(task, pos, quat, theta) == pytest.approx(0.0, abs=1e-9)
        if task.angle_error:  # the cube's bottom face lies flat: its outward normal points down
            np.testing.assert_allclose(quat_to_mat(quat) @ bottom_normal(task, theta), [0, 0, -1], atol=1e-12)
        start, _ = start_pose(task)
        assert start[2] - goal_pose(task, np.zeros(task.n_params))[0][2] == pytest.approx(task.lift)


def test_scene_and_model_share_the_geometry():
    task = make_task("cup-saucer")
    theta = np.array([3e-3, -2e-3, 1e-3])
    scene = task_scene(task, theta)
    for static, piece in zip(scene.statics, task.env_pieces, strict=True):
        np.testing.assert_array_equal(static.part.pieces[0].vertices, piece.vertices(theta))
    np.testing.assert_array_equal(scene.tool.part.pieces[0].vertices, task.tool_pieces[0].vertices(theta))
    model = diff_scene(task)
    assert model.n_params == 3 and model.mass == pytest.approx(scene.tool.mass)
    assert model.armature == WORLD.wrist_armature


def test_cases_are_drawn_from_the_perception_noise_and_reproducible():
    for name in TASKS:
        task = make_task(name)
        cases = sample_cases(task, 10, np.random.default_rng(7))
        np.testing.assert_array_equal(cases, sample_cases(task, 10, np.random.default_rng(7)))
        z = cases / task.init_std
        assert np.all(np.abs(z) <= CASE_MAX_SIGMA) and np.all(np.linalg.norm(z, axis=1) >= CASE_MIN_NORM)
        if task.angle_error:
            assert np.all(np.abs(cases[:, 1] - cases[:, 0]) >= 1.5e-3)


def test_bad_names_and_geometries_are_refused():
    with pytest.raises(InvalidInputError, match="unknown placement task"):
        make_task("stack")
    with pytest.raises(InvalidInputError, match="θ must be 2 finite"):
        goal_pose(make_task("shape"), [0.0, np.nan])
