"""Reference datasets: rows are means of ten 1 ms steps, files round-trip, another task's file is refused."""

import numpy as np
import pytest

from contactkit.assembly import bolting_task, peg_in_hole_task
from contactkit.assembly import reference_data as rd
from contactkit.assembly.coupling import default_gains
from contactkit.assembly.reference import reference_step
from contactkit.assembly.trajectories import TrajectoryKind, random_trajectory
from contactkit.engine.reference import com_position
from contactkit.errors import DatasetError, InvalidInputError


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task(depth_net=None)


@pytest.fixture(scope="module")
def episodes(peg):
    old = rd.TRAJECTORY_ROWS
    rd.TRAJECTORY_ROWS = 3
    try:
        return rd.reference_dataset(peg, 8, np.random.default_rng(0))
    finally:
        rd.TRAJECTORY_ROWS = old


def test_rows_are_means_of_ten_reference_steps_about_the_row_com(peg):
    tr = random_trajectory(peg, TrajectoryKind.INSERT, 2, np.random.default_rng(4))
    gains = default_gains(peg)
    episode, stats = rd.run_trajectory(peg, tr, gains)
    state, warm = tr.initial, None
    for t in range(2):
        com_t = com_position(peg.body, state)
        force, torque = np.zeros(3), np.zeros(3)
        for _ in range(10):
            com_k = com_position(peg.body, state)
            step = reference_step(peg, state, tr.setpoint_pos[t], tr.setpoint_quat[t], gains, warm)
            force += step.wrench[:3] / 10
            torque += (step.wrench[3:] + np.cross(com_k - com_t, step.wrench[:3])) / 10
            state, warm = step.state, step.warm
        np.testing.assert_allclose(episode.wrench[t], np.concatenate([force, torque]), atol=1e-12)
        np.testing.assert_allclose(episode.pos[t + 1], state.pos, atol=1e-15)
    np.testing.assert_allclose(rd.setpoint_quat(episode.action), tr.setpoint_quat, atol=1e-12)
    assert episode.time[1] == pytest.approx(0.01) and stats.unconverged == 0


def test_plan_and_episodes(peg, episodes, monkeypatch):
    assert [e.n_steps for e in episodes] == [3, 3, 2]
    assert len({e.seed for e in episodes}) == 3
    monkeypatch.setattr(rd, "TRAJECTORY_ROWS", 3)
    plan = rd.episode_plan(peg, 8, np.random.default_rng(0))
    assert [p[0] for p in plan] == [TrajectoryKind.INSERT, TrajectoryKind.EXTRACT, TrajectoryKind.WIGGLE]


def test_dataset_round_trips_and_refuses_another_task(tmp_path, peg, episodes):
    path = tmp_path / "ref.h5"
    assert rd.write_reference(path, peg, episodes, seed=0) == 3
    back = rd.read_reference(path, peg)
    assert len(back) == 3
    for a, b in zip(episodes, back, strict=True):
        for key, value in a.arrays().items():
            np.testing.assert_array_equal(getattr(b, key), value)
        assert a.seed == b.seed
    assert rd.write_reference(path, peg, episodes[:1], seed=0) == 4  # appends
    with pytest.raises(DatasetError, match="task"):
        rd.read_reference(path, bolting_task(depth_net=None))


def test_split_is_by_trajectory(episodes):
    train, test = rd.split_episodes(episodes, 0.7)
    assert len(train) == 2 and len(test) == 1 and train + test == episodes
    train, test = rd.split_episodes(episodes, 0.7, np.random.default_rng(1))
    assert sorted(map(id, train + test)) == sorted(map(id, episodes)) and not set(map(id, train)) & set(map(id, test))
    with pytest.raises(InvalidInputError, match="train_fraction"):
        rd.split_episodes(episodes, 1.0)


def test_rows_balance_linear_momentum(peg):
    """m·Δv_com / dt = mean coupling force + mean contact force over every row (no other force acts), here with the
    peg pushed into the wall and the floor."""
    from contactkit.assembly.trajectories import Trajectory
    from contactkit.engine.reference import generalized_velocity
    from contactkit.state import BodyState

    n = 6
    sp = np.tile([1e-3, 0.0, -2e-3], (n, 1))
    tr = Trajectory(TrajectoryKind.INSERT, BodyState.at_rest([0.0, 0.0, 2e-4]), sp, np.tile([1.0, 0, 0, 0], (n, 1)))
    ep, _ = rd.run_trajectory(peg, tr, default_gains(peg))
    assert np.abs(ep.wrench[-1, :3]).max() > 10.0  # the floor and the wall push back
    states = ep.states()
    v = np.array([generalized_velocity(peg.body, states.index(i))[:3] for i in range(n + 1)])
    np.testing.assert_allclose(peg.body.mass * np.diff(v, axis=0) / 0.01, ep.command[:, :3] + ep.wrench[:, :3],
                               atol=1e-9 * np.abs(ep.wrench).max())
