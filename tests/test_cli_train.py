"""`contactkit train` and `contactkit evaluate` end to end on tiny data, and their errors."""

import json

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.models.gnn import load_checkpoint
from contactkit.models.gnn.graph import ModelVariant

runner = CliRunner()
ROW_KEYS = {"model", "policy", "rmse_pos_mm", "rel_pos", "rmse_rot_deg", "rel_rot", "force_err_N", "torque_err_Nm"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-train")
    for name, seed in (("train", 1), ("val", 2)):
        r = runner.invoke(app, ["collect", "--out", str(root / f"{name}.h5"), "--episodes", "2", "--steps", "14",
                                "--world", "target", "--seed", str(seed)])
        assert r.exit_code == 0, r.output
    return root


def test_train_then_evaluate(data, tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--val", str(data / "val.h5"),
                            "--model", "fignet-plus", "--config", "small", "--steps", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "validation" in r.output and "done at step 3" in r.output
    ckpt = load_checkpoint(out / "best.safetensors")
    assert ckpt.model_config.graph.variant is ModelVariant.FIGNET_PLUS and ckpt.train_state["step"] == 3
    assert ckpt.model_config.latent_dim == 64  # the small preset
    assert ckpt.model_config.graph.previous_command is True and ckpt.train_state["labels"]["tared"] is True
    assert [h["step"] for h in json.loads((out / "val_history.json").read_text())] == [3]

    report = tmp_path / "eval.json"
    r = runner.invoke(app, ["evaluate", "--model", str(out), "--data", str(data / "val.h5"), "--json", str(report),
                            "--horizon", "5", "--segments", "3", "--transitions", "10"])
    assert r.exit_code == 0, r.output
    rows = json.loads(report.read_text())["rows"]
    assert [row["model"] for row in rows] == ["run", "mujoco-nominal"]
    for row in rows:
        assert ROW_KEYS <= set(row) and row["policy"] == "random-spline"
        assert row["rollouts"] == 3 and row["transitions"] == 10 and row["horizon"] == 5
        assert row["rmse_pos_mm"] > 0 and row["force_err_N"] > 0


def test_train_without_val_splits_episodes_and_resumes(data, tmp_path):
    out = tmp_path / "run"
    args = ["train", "--data", str(data / "train.h5"), "--out", str(out), "--steps", "1"]
    assert runner.invoke(app, args).exit_code == 0
    r = runner.invoke(app, [*args[:-1], "2"])
    assert r.exit_code == 0, r.output
    assert "12 training and 12 validation windows" in r.output  # one episode of 14 steps each
    assert load_checkpoint(out / "last.safetensors").train_state["step"] == 2
    assert [h["step"] for h in json.loads((out / "val_history.json").read_text())] == [1, 2]  # step 1's kept


def test_train_out_naming_a_file_fails_before_reading_any_data(tmp_path):
    taken = tmp_path / "taken"
    taken.write_bytes(b"mine")
    r = runner.invoke(app, ["train", "--data", str(tmp_path / "missing.h5"), "--out", str(taken)])
    assert r.exit_code == 2 and r.output.startswith(f"error: training output '{taken}' is an existing file")
    assert taken.read_bytes() == b"mine"


def test_several_val_files_and_the_collision_radius(data, tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--val", str(data / "val.h5"),
                            "--val", str(data / "train.h5"), "--steps", "1", "--collision-radius", "0.001",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "24 training and 48 validation windows" in r.output  # 2 episodes of 12 windows in each file
    assert load_checkpoint(out / "best.safetensors").model_config.graph.collision_radius == 0.001


def test_bad_arguments_are_clear_errors(data, tmp_path):
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--out", str(tmp_path), "--model", "gnn"])
    assert r.exit_code == 2 and "gnn" in r.output and "act-fignet" in r.output
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--out", str(tmp_path), "--config", "huge"])
    assert r.exit_code == 2 and "huge" in r.output
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--out", str(tmp_path),
                            "--collision-radius", "-1"])
    assert r.exit_code == 2 and "collision_radius" in r.output
    r = runner.invoke(app, ["evaluate", "--model", str(tmp_path / "none"), "--data", str(data / "val.h5")])
    assert r.exit_code == 2 and "No such file" in r.output and "Traceback" not in r.output


def test_augment_is_recorded_and_checked(data, tmp_path):
    """--augment picks the rotation augmentation (yaw by default) and is stored in the checkpoint's config."""
    from contactkit.models.gnn import load_checkpoint

    out = tmp_path / "yaw"
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--val", str(data / "val.h5"), "--out",
                            str(out), "--steps", "1"])
    assert r.exit_code == 0, r.output
    assert load_checkpoint(out / "last.safetensors").train_state["config"]["rotation"] == "yaw"
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--out", str(tmp_path / "x"), "--augment",
                            "spin"])
    assert r.exit_code == 2 and "--augment 'spin'" in r.output


def test_no_tare_and_no_previous_command(data, tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["train", "--data", str(data / "train.h5"), "--val", str(data / "val.h5"), "--steps", "1",
                            "--no-tare", "--no-previous-command", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ckpt = load_checkpoint(out / "last.safetensors")
    assert ckpt.model_config.graph.previous_command is False and ckpt.train_state["labels"] == {"tared": False}
