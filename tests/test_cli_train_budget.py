"""`contactkit train --time-budget-s`, `--workers` and `--from-checkpoint` on tiny data."""

import shutil

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.models.gnn import load_checkpoint

runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-train-budget")
    for name, seed in (("train", 1), ("val", 2)):
        r = runner.invoke(app, ["collect", "--out", str(root / f"{name}.h5"), "--episodes", "2", "--steps", "10",
                                "--world", "target", "--seed", str(seed), "--policy", "contact-spline"])
        assert r.exit_code == 0, r.output
    return root


def test_budget_stops_and_a_checkpoint_continues_elsewhere(data, tmp_path):
    base = ["train", "--data", str(data / "train.h5"), "--val", str(data / "val.h5"), "--steps", "4"]
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "a"), "--time-budget-s", "1e-9", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "done at step 1 (time budget spent" in r.output
    saved = tmp_path / "saved.safetensors"
    shutil.copy(tmp_path / "a" / "last.safetensors", saved)
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "b"), "--from-checkpoint", str(saved)])
    assert r.exit_code == 0, r.output
    assert load_checkpoint(tmp_path / "b" / "last.safetensors").train_state["step"] == 4
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "b"), "--from-checkpoint", str(saved)])
    assert r.exit_code != 0 and "already holds a run" in r.output
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "c"), "--from-checkpoint", str(data / "val.h5")])
    assert r.exit_code != 0 and "Traceback" not in r.output
