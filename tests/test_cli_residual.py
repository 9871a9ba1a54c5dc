"""``contactkit train --model residual`` and ``contactkit calibrate`` from the command line: files every command
takes, and one-line errors (exit 2, nothing written) for bad input."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.data.collect import CollectSpec, collect
from contactkit.models.residual import load_residual
from contactkit.physics import load_world

runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-residual")
    target = load_world("target")
    collect(CollectSpec(policy="contact-spline", episodes=2, steps=30, seed=3, world=target), str(root / "train.h5"))
    collect(CollectSpec(policy="contact-spline", episodes=1, steps=30, seed=4, world=target), str(root / "val.h5"))
    slow = dataclasses.replace(load_world("nominal"), n_substeps=50)
    collect(CollectSpec(episodes=1, steps=10, seed=5, world=slow), str(root / "slow.h5"))
    return root


def test_train_residual_writes_a_checkpoint_over_a_calibrated_world(data, tmp_path):
    world = tmp_path / "cal.json"
    r = runner.invoke(app, ["calibrate", "--data", str(data / "train.h5"), "--held-out", str(data / "val.h5"),
                            "--out", str(world), "--coarse", "2", "--local", "3", "--segments", "4", "--horizon", "4"])
    assert r.exit_code == 0, r.output
    assert "held-out" in r.output and json.loads(world.read_text())["tool_mass"] > 0
    load_world(str(world))  # every command takes it
    out = tmp_path / "res"
    r = runner.invoke(app, ["train", "--model", "residual", "--data", str(data / "train.h5"), "--val",
                            str(data / "val.h5"), "--out", str(out), "--model-world", str(world), "--steps", "12"])
    assert r.exit_code == 0, r.output
    _, ckpt = load_residual(out / "residual.safetensors")
    assert ckpt.backbone == "mujoco" and ckpt.backbone_world == load_world(str(world))
    assert (out / "residual.safetensors.record.json").is_file()


def test_calibrating_the_controller_writes_the_scene_beside_the_world(data, tmp_path):
    from contactkit.scene import load_scene

    world = tmp_path / "cal.json"
    r = runner.invoke(app, ["calibrate", "--data", str(data / "train.h5"), "--held-out", str(data / "val.h5"),
                            "--out", str(world), "--params", "controller_stiffness_scale,tcp_offset_z", "--coarse",
                            "2", "--local", "3", "--segments", "4", "--horizon", "4"])
    assert r.exit_code == 0, r.output
    scene = load_scene(tmp_path / "cal.scene.json")  # every command takes it as --scene
    record = json.loads((tmp_path / "cal.json.record.json").read_text())
    assert set(record["controller"]) == {"controller_stiffness_scale", "tcp_offset_z"}
    assert scene.controller.tcp_offset[2] == pytest.approx(record["controller"]["tcp_offset_z"])
    assert "cal.scene.json" in "".join(r.output.split())  # the console wraps long lines


@pytest.mark.parametrize("args, match", [
    (["--backbone", "bullet"], "--backbone 'bullet'"),
    (["--model-world", "target"], "command_latency_substeps"),
    (["--data", "/dev/zero"], "/dev/zero' is not a regular file"),
    (["--data", "{slow}"], "slow.h5: control period"),
])
def test_train_residual_bad_input_is_one_line(data, tmp_path, args, match):
    base = {"--data": str(data / "train.h5"), "--val": str(data / "val.h5"), "--out": str(tmp_path / "out")}
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v.format(slow=data / "slow.h5")
    argv = ["train", "--model", "residual", "--steps", "4"] + [x for kv in base.items() for x in kv]
    r = runner.invoke(app, argv)
    assert r.exit_code == 2, r.output
    assert match in " ".join(r.output.split()) and "Traceback" not in r.output
    assert not (tmp_path / "out" / "residual.safetensors").exists()


def test_calibrate_needs_held_out_logs(data, tmp_path):
    r = runner.invoke(app, ["calibrate", "--data", str(data / "train.h5"), "--out", str(tmp_path / "w.json")])
    assert r.exit_code == 2 and "--held-out" in r.output
    assert not (tmp_path / "w.json").exists()
