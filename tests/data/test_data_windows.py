"""TrajectoryWindows: each window is exactly (s_{t-h+1..t}, a_t, w_t, s_{t+1}); splits are disjoint."""

import numpy as np
import pytest
import torch

from contactkit.data.windows import TrajectoryWindows, split_by_episode
from contactkit.data.writer import DatasetWriter
from contactkit.errors import DatasetError, InvalidInputError


def _write(path, meta, episodes):
    with DatasetWriter(path, meta=meta) as w:
        for ep in episodes:
            w.append_episode(ep)
    return path


def _expected_windows(episodes, h):
    """All windows in order, built directly from the Episode arrays (float64)."""
    out = []
    for ep in episodes:
        states = ep.states().as_array()
        for t in range(h - 1, ep.n_steps):
            out.append((states[t - h + 1:t + 1], ep.action[t], ep.command[t], ep.wrench[t], states[t + 1]))
    return out


def _expected_previous(episodes, h):
    """``(prev_command, prev_action)`` of every window: step t-1's, step t's own at an episode's first step."""
    return [(ep.command[max(t - 1, 0)], ep.action[max(t - 1, 0)]) for ep in episodes for t in range(h - 1, ep.n_steps)]


@pytest.mark.parametrize("h", [1, 3, 5])
def test_windows_match_the_episodes(tmp_path, rng, make_episode, make_meta, h):
    eps = [make_episode(rng, T) for T in (6, 2, 9, 4)]
    ds = TrajectoryWindows(_write(tmp_path / "d.h5", make_meta(), eps), history=h)
    expected = _expected_windows(eps, h)
    previous = _expected_previous(eps, h)
    assert len(ds) == sum(max(0, ep.n_steps - h + 1) for ep in eps) == len(expected)
    for i, (hist, action, command, wrench, nxt) in enumerate(expected):
        item = ds[i]
        assert set(item) == {"history", "action", "command", "prev_command", "prev_action", "wrench", "next_state"}
        assert all(v.dtype == torch.float32 for v in item.values())
        assert item["history"].shape == (h, 13)
        assert torch.equal(item["history"], torch.from_numpy(hist).float())
        assert torch.equal(item["action"], torch.from_numpy(action).float())
        assert torch.equal(item["command"], torch.from_numpy(command).float())
        assert torch.equal(item["wrench"], torch.from_numpy(wrench).float())
        assert torch.equal(item["next_state"], torch.from_numpy(nxt).float())
        assert torch.equal(item["prev_command"], torch.from_numpy(previous[i][0]).float())
        assert torch.equal(item["prev_action"], torch.from_numpy(previous[i][1]).float())
    assert torch.equal(ds[-1]["next_state"], ds[len(ds) - 1]["next_state"])
    with pytest.raises(IndexError):
        ds[len(ds)]
    for j, ep in enumerate(eps):
        states, wrench = ds.episode_arrays(j)
        np.testing.assert_allclose(states, ep.states().as_array(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(wrench, ep.wrench, rtol=1e-6, atol=1e-6)
    assert ds.window_episode.tolist() == [j for j, ep in enumerate(eps) for _ in range(h - 1, ep.n_steps)]


def test_several_files_and_an_episode_subset(tmp_path, rng, make_episode, make_meta):
    eps = [make_episode(rng, T) for T in (4, 5, 3, 6, 7)]
    a = _write(tmp_path / "a.h5", make_meta(), eps[:2])
    b = _write(tmp_path / "b.h5", make_meta(seed=9), eps[2:])
    full = TrajectoryWindows([a, b])
    assert full.n_episodes == 5 and len(full) == len(_expected_windows(eps, 3))
    subset = TrajectoryWindows([a, b], episodes=np.array([4, 1]))
    expected = _expected_windows([eps[4], eps[1]], 3)
    assert len(subset) == len(expected)
    for i, (hist, _, _, wrench, _) in enumerate(expected):
        assert torch.equal(subset[i]["history"], torch.from_numpy(hist).float())
        assert torch.equal(subset[i]["wrench"], torch.from_numpy(wrench).float())


def test_arrays_are_loaded_once(tmp_path, rng, make_episode, make_meta):
    path = _write(tmp_path / "d.h5", make_meta(), [make_episode(rng, 5)])
    ds = TrajectoryWindows(path)
    first = ds[0]
    path.unlink()  # items no longer need the file
    assert torch.equal(ds[0]["history"], first["history"])
    ds[0]["history"].zero_()  # items are copies: the dataset is unchanged
    assert torch.equal(ds[0]["history"], first["history"])


def test_dataloader_batches(tmp_path, rng, make_episode, make_meta):
    ds = TrajectoryWindows(_write(tmp_path / "d.h5", make_meta(), [make_episode(rng, 10)]))
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))
    assert batch["history"].shape == (4, 3, 13) and batch["action"].shape == (4, 6)
    assert batch["next_state"].shape == (4, 13)


def test_files_with_different_action_modes_are_refused(tmp_path, rng, make_episode, make_meta):
    a = _write(tmp_path / "a.h5", make_meta(), [make_episode(rng, 4)])
    b = _write(tmp_path / "b.h5", make_meta(action_mode="pose-delta"), [make_episode(rng, 4)])
    with pytest.raises(DatasetError, match="action_mode"):
        TrajectoryWindows([a, b])


@pytest.mark.parametrize("kwargs,problem", [({"history": 0}, "history"),
                                            ({"episodes": [0, 5]}, r"\[0, 2\)"),
                                            ({"episodes": [1, 1]}, "repeated"),
                                            ({"episodes": [0.5]}, "ints")])
def test_bad_arguments(tmp_path, rng, make_episode, make_meta, kwargs, problem):
    path = _write(tmp_path / "d.h5", make_meta(), [make_episode(rng, 4), make_episode(rng, 4)])
    with pytest.raises(InvalidInputError, match=problem):
        TrajectoryWindows(path, **kwargs)


def test_corrupt_file_is_a_dataset_error(files_dir):
    with pytest.raises(DatasetError, match="not a contactkit dataset"):
        TrajectoryWindows(files_dir / "unrelated_valid.h5")


@pytest.mark.parametrize("n,fraction,n_val", [(10, 0.2, 2), (10, 0.0, 0), (3, 0.01, 1), (2, 0.9, 1)])
def test_split_by_episode_partitions(n, fraction, n_val):
    train, val = split_by_episode(n, fraction, np.random.default_rng(0))
    assert len(val) == n_val
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(n))
    assert not set(train.tolist()) & set(val.tolist())
    again = split_by_episode(n, fraction, np.random.default_rng(0))
    assert np.array_equal(again[0], train) and np.array_equal(again[1], val)


def test_split_depends_on_the_generator():
    splits = {tuple(split_by_episode(50, 0.2, np.random.default_rng(s))[1]) for s in range(5)}
    assert len(splits) > 1


@pytest.mark.parametrize("args,problem", [((10, 1.0), "val_fraction"), ((10, -0.1), "val_fraction"),
                                          ((0, 0.2), "n_episodes"), ((1, 0.5), "at least 2")])
def test_split_rejects_bad_arguments(args, problem):
    with pytest.raises(InvalidInputError, match=problem):
        split_by_episode(*args, np.random.default_rng(0))
    with pytest.raises(InvalidInputError, match="Generator"):
        split_by_episode(10, 0.2, 0)
