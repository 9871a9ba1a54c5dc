"""Issue 20's first bar, all by the command line in a temporary directory: ``contactkit scene mesh`` from a
non-convex OBJ slot and an OBJ tool → ``collect --scene`` → ``train`` (2 steps) → ``evaluate`` →
``experiment mpc-insertion --scene --quick`` on that scene. And ``contactkit scene``'s other commands and its
refusals (bad meshes of the catalog, bad parameters) as one ``error:`` line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.data.reader import open_dataset
from contactkit.geometry import load_mesh, peg, save_obj, slot
from contactkit.rotations import rotvec_to_quat
from contactkit.scene import load_scene

CLEARANCE, DEPTH = 2e-3, 0.025
BAD_MESHES = Path(__file__).parent / "data" / "meshes"


def _ok(runner: CliRunner, argv: list[str]) -> str:
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, f"{argv}: {result.output}"
    return result.output


def _refused(runner: CliRunner, argv: list[str], *words: str) -> str:
    result = runner.invoke(app, argv)
    out = " ".join(result.output.split())
    assert result.exit_code == 2 and out.startswith("error: ") and "Traceback" not in out, f"{argv}: {out}"
    assert all(w in out for w in words), f"{argv}: {out}"
    return out


@pytest.fixture(scope="module")
def user_parts(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A user's parts as OBJ files: the library's square slot (non-convex) and its peg; and a CoACD cache."""
    root = tmp_path_factory.mktemp("parts")
    s = slot("square", 0.01, CLEARANCE, DEPTH)
    p = peg("square", 0.01, 0.06)
    return save_obj(root / "tool.obj", p.vertices, p.faces), save_obj(root / "slot.obj", s.vertices, s.faces), \
        root / "coacd"


def test_own_parts_end_to_end_by_cli(user_parts, tmp_path):
    tool, slot_file, cache = user_parts
    assert not load_mesh(slot_file).meta["convex"]  # the slot needs the convex decomposition
    runner = CliRunner()
    scene_file, data, run = tmp_path / "scene.json", tmp_path / "d.h5", tmp_path / "run"
    _ok(runner, ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(scene_file),
                 "--coacd-cache", str(cache)])
    scene = load_scene(scene_file)
    built = slot("square", 0.01, CLEARANCE, DEPTH)
    slot_body = scene.statics[1]
    assert len(slot_body.part.pieces) > 1 and len(scene.tool.part.pieces) == 1
    assert scene.meta["depth"] == pytest.approx(DEPTH, rel=1e-9)
    assert scene.meta["hole_apothem"] == pytest.approx(built.meta["hole_apothem"], rel=1e-6)
    assert scene.target_pos[2] == pytest.approx(slot_body.pos[2] + 0.0, abs=1e-12)  # the hole's floor

    _ok(runner, ["collect", "--out", str(data), "--scene", str(scene_file), "--episodes", "3", "--steps", "30"])
    with open_dataset(data) as ds:
        assert len(ds) == 3 and json.loads(ds.meta.scene) == json.loads(scene_file.read_text())
    _ok(runner, ["train", "--data", str(data), "--out", str(run), "--steps", "2"])
    assert (run / "best.safetensors").is_file()
    out = _ok(runner, ["evaluate", "--model", str(run), "--data", str(data), "--baseline", "none", "--horizon", "10",
                       "--segments", "4", "--transitions", "50", "--json", str(tmp_path / "eval.json")])
    assert json.loads((tmp_path / "eval.json").read_text())["rows"], out

    result = tmp_path / "mpc.json"
    _ok(runner, ["experiment", "mpc-insertion", "--scene", str(scene_file), "--quick", "--models", "ground-truth",
                 "--json", str(result)])
    r = json.loads(result.read_text())
    assert r["task"]["scene"]["name"] == scene.name and r["partial"]
    gt = r["models"]["ground-truth"]
    assert gt["episodes"] == 1 and list(gt["per_shape"]) == ["scene"]
    episode = gt["per_episode"][0]  # one short quick episode: whether it succeeds is chance (not asserted)
    assert 1 <= episode["steps"] <= r["budget"]["max_steps"] and np.isfinite(episode["final_distance_mm"])
    assert gt["success_rate"] == float(episode["success"])
    assert any("--scene" in reason for reason in r["provenance"]["not_stored"])


def test_scene_peg_and_connector_write_loadable_scenes(tmp_path):
    runner = CliRunner()
    _ok(runner, ["scene", "peg", "--out", str(tmp_path / "p.json"), "--shape", "7-gon", "--clearance", "0.001",
                 "--chamfer", "0.001", "--chamfer-angle", "30", "--slot-chamfer", "0.003"])
    s = load_scene(tmp_path / "p.json")
    assert s.tool.part.meta["shape"] == "7-gon" and s.statics[1].part.meta["chamfer"] == 0.003
    _ok(runner, ["scene", "connector", "--out", str(tmp_path / "c.json"), "--clearance", "0.0003", "--offset",
                 "0.001,-0.0005", "--tilt", "1,-2", "--yaw", "3"])
    c = load_scene(tmp_path / "c.json")
    assert c.meta["clearance"] == 0.0003 and c.meta["socket_pos"][:2] == [0.001, -0.0005]
    np.testing.assert_allclose(c.statics[0].quat, rotvec_to_quat(np.radians([1.0, -2.0, 3.0])), atol=1e-15)
    assert "meta.task" in _ok(runner, ["scene", "info", str(tmp_path / "c.json")])


@pytest.mark.parametrize("name", sorted(p.name for p in BAD_MESHES.glob("*.obj")))
def test_scene_mesh_refuses_bad_meshes_in_one_line(name, user_parts, tmp_path):
    tool, slot_file, cache = user_parts
    bad = BAD_MESHES / name
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["scene", "mesh", "--tool", str(tool), "--slot", str(bad), "--out", str(out),
                                      "--coacd-cache", str(cache)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and text.startswith("error: ") and "Traceback" not in text, text
    assert name in text and not out.exists()  # the valid cube/needle/L are refused for having no hole on the axis


@pytest.mark.parametrize(("argv", "words"), [
    (["scene", "peg", "--shape", "2-gon"], ["2-gon"]),
    (["scene", "peg", "--clearance", "-1"], ["clearance"]),
    (["scene", "peg", "--slot-chamfer", "0.03"], ["chamfer"]),
    (["scene", "peg", "--chamfer", "0.001", "--chamfer-angle", "95"], ["chamfer angle"]),
    (["scene", "connector", "--friction", "0"], ["friction"]),
    (["scene", "connector", "--offset", "1"], ["--offset"]),
    (["scene", "connector", "--tilt", "1,nan"], ["--tilt"]),
])
def test_scene_parameters_are_checked(argv, words, tmp_path):
    _refused(CliRunner(), [*argv, "--out", str(tmp_path / "s.json")], *words)


def test_scene_mesh_options_and_scene_files_are_checked(user_parts, tmp_path):
    tool, slot_file, cache = user_parts
    runner = CliRunner()
    base = ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(tmp_path / "s.json"),
            "--coacd-cache", str(cache)]
    _refused(runner, [*base, "--units", "furlong"], "furlong")
    _refused(runner, [*base, "--tool-origin", "middle"], "--tool-origin")
    _refused(runner, [*base, "--hole-xy", "0.5,0.5"], "misses the part")
    _refused(runner, ["scene", "info", str(slot_file)], str(slot_file))
    _refused(runner, ["collect", "--out", str(tmp_path / "d.h5"), "--scene", str(tmp_path / "none.json")],
             "none.json")
    _refused(runner, ["collect", "--out", str(tmp_path / "d.h5"), "--scene", str(slot_file), "--shape", "square"],
             "--shape")


def test_benchmark_collect_runs_on_a_scene_file(tmp_path):
    runner = CliRunner()
    scene_file = tmp_path / "p.json"
    _ok(runner, ["scene", "peg", "--out", str(scene_file), "--shape", "5-gon"])
    out = _ok(runner, ["benchmark", "collect", "--quick", "--scene", str(scene_file),
                       "--json", str(tmp_path / "b.json")])
    r = json.loads((tmp_path / "b.json").read_text())
    assert r["scene"] == load_scene(scene_file).name and r["collect_steps_per_s"] > 0
    assert "--scene" in " ".join(out.split())  # not stored: a narrowed run


def test_pf_tracking_runs_on_a_scene_file(user_parts, tmp_path):
    """pf-tracking's spiral search and filter on the user's parts (a short budget; the filter's accuracy is
    tests/eval's business): the scene is the file's, and the run is narrowed (not stored)."""
    from contactkit.eval import exp_pf_tracking

    tool, slot_file, cache = user_parts
    scene_file = tmp_path / "s.json"
    _ok(CliRunner(), ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(scene_file),
                      "--coacd-cache", str(cache)])
    r = exp_pf_tracking.run(quick=True, budget=exp_pf_tracking.TrackingBudget(1, 30, 1), scene=str(scene_file),
                            models=("ground-truth",))
    assert r["setup"]["scene"] == load_scene(scene_file).name and r["setup"]["scene_file"] == str(scene_file)
    assert np.isfinite(r["final_pos_err_mm"]["pf-known-init"])
    assert exp_pf_tracking.narrowing({"scene": str(scene_file)}) == [f"--scene {scene_file}"]


def test_prediction_accuracy_collects_on_a_scene_file(tmp_path):
    runner = CliRunner()
    scene_file, result = tmp_path / "p.json", tmp_path / "pa.json"
    _ok(runner, ["scene", "peg", "--out", str(scene_file), "--shape", "square", "--clearance", "0.002"])
    out = _ok(runner, ["experiment", "prediction-accuracy", "--quick", "--scene", str(scene_file), "--json",
                       str(result)])
    r = json.loads(result.read_text())
    assert r["scene"] == {"file": str(scene_file), "name": load_scene(scene_file).name}
    assert {row["model"] for row in r["rows"]} >= {"act-fignet", "mujoco-nominal"}
    assert "--scene" in " ".join(out.split())


CATALOG = sorted(p for p in (Path(__file__).parent / "data").glob("*/*") if p.is_file() and p.parent.name in
                 ("files", "meshes"))
"""The bad-input catalog's copies (tests/test_badinputs.py): no file of it is a scene."""


@pytest.mark.parametrize("path", CATALOG, ids=lambda p: p.name)
def test_scene_files_from_the_bad_input_catalog_are_refused_in_one_line(path, tmp_path):
    runner = CliRunner()
    for argv in (["collect", "--out", str(tmp_path / "d.h5"), "--scene", str(path), "--episodes", "1"],
                 ["scene", "info", str(path)],
                 ["experiment", "mpc-insertion", "--quick", "--scene", str(path)]):
        _refused(runner, argv, str(path))
    assert not (tmp_path / "d.h5").exists()


def test_scene_mesh_reads_stl_and_ply_in_millimetres(user_parts, tmp_path):
    """The same parts as STL (tool) and PLY (slot) files in millimetres give the OBJ scene's hole and goal."""
    import trimesh

    tool, slot_file, cache = user_parts
    for src, dst in ((tool, tmp_path / "tool.stl"), (slot_file, tmp_path / "slot.ply")):
        part = load_mesh(src)
        trimesh.Trimesh(part.vertices * 1e3, part.faces, process=False).export(dst)
    runner = CliRunner()
    _ok(runner, ["scene", "mesh", "--tool", str(tmp_path / "tool.stl"), "--slot", str(tmp_path / "slot.ply"),
                 "--units", "mm", "--out", str(tmp_path / "mm.json"), "--coacd-cache", str(cache)])
    _ok(runner, ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(tmp_path / "m.json"),
                 "--coacd-cache", str(cache)])
    mm, m = load_scene(tmp_path / "mm.json"), load_scene(tmp_path / "m.json")
    np.testing.assert_allclose(mm.target_pos, m.target_pos, atol=1e-9)
    np.testing.assert_allclose(mm.tool.init_pos, m.tool.init_pos, atol=1e-9)
    for key in ("depth", "hole_apothem", "slot_top_z"):
        assert mm.meta[key] == pytest.approx(m.meta[key], rel=1e-6), key
    assert mm.tool.mass == m.tool.mass and len(mm.statics[1].part.pieces) > 1


def test_replan_benchmark_times_on_a_scene_file(tmp_path):
    from contactkit.eval import bench_replan
    from contactkit.eval.exp_mpc_insertion import InsertionBudget

    scene_file = tmp_path / "p.json"
    _ok(CliRunner(), ["scene", "peg", "--out", str(scene_file), "--shape", "square", "--clearance", "0.002"])
    tiny = InsertionBudget(("square",), episodes_per_pairing=1, max_steps=6, horizon=3, population=4, iterations=1,
                           replan_every=3, models=("ground-truth",))
    r = bench_replan.run(quick=True, budget=tiny, scene=str(scene_file))
    assert r["pairings"] == ["scene"] and {p["pairing"] for p in r["points"]} == {"scene"}
    assert r["models"]["ground-truth"]["replans"] == len(r["points"]) >= 1


def test_scene_peg_takes_the_controllers_gains_and_turns_the_polygon(tmp_path):
    """Issue 35 part 8: the gains land in the scene's controller; --yaw-deg turns the tool, its target and the slot
    together (the peg still fits: test_yawed_peg_inserts_as_the_unturned_one); unit-less angle flags keep working
    as aliases of the -deg ones."""
    import math

    from contactkit.scene import ImpedanceGains

    runner = CliRunner()
    out = tmp_path / "p.json"
    _ok(runner, ["scene", "peg", "--out", str(out), "--shape", "square", "--yaw-deg", "30", "--stiffness-pos", "800",
                 "--stiffness-rot", "6", "--damping-ratio", "0.7", "--max-force", "20", "--max-torque", "1.5"])
    scene = load_scene(out)
    c = scene.controller
    assert c.stiffness_pos.tolist() == [800.0] * 3 and c.stiffness_rot.tolist() == [6.0] * 3
    assert (c.damping_ratio, c.max_force, c.max_torque) == (0.7, 20.0, 1.5)
    assert c.max_pos_step == ImpedanceGains().max_pos_step  # what was not given keeps its default
    turn = rotvec_to_quat(np.array([0.0, 0.0, math.radians(30)]))
    for quat in (scene.tool.init_quat, scene.target_quat, scene.statics[1].quat):
        np.testing.assert_allclose(quat, turn, atol=1e-15)
    assert scene.meta["yaw"] == math.radians(30) and "yaw 30 deg" in scene.name
    plain, alias = tmp_path / "plain.json", tmp_path / "alias.json"
    _ok(runner, ["scene", "peg", "--out", str(plain), "--chamfer", "0.002", "--chamfer-angle-deg", "30"])
    _ok(runner, ["scene", "peg", "--out", str(alias), "--chamfer", "0.002", "--chamfer-angle", "30"])
    assert plain.read_bytes() == alias.read_bytes()
    default = tmp_path / "default.json"
    _ok(runner, ["scene", "peg", "--out", str(default)])
    from contactkit.tasks import peg_in_hole
    assert default.read_text() == peg_in_hole().to_json()  # no gains, no yaw: the library's scene, bit for bit


@pytest.mark.parametrize("argv, message", [
    (["--yaw-deg", "inf"], "--yaw-deg must be finite [deg], got inf"),
    (["--max-force", "-1"], "--max-force must be finite and >= 0, got -1.0"),
    (["--stiffness-pos", "nan"], "--stiffness-pos must be finite and >= 0, got nan"),
    (["--chamfer", "0.002", "--chamfer-angle-deg", "inf"], "--chamfer-angle-deg must be finite [deg], got inf"),
])
def test_scene_peg_refuses_bad_gains_and_angles_in_one_line(argv, message, tmp_path):
    out = tmp_path / "p.json"
    r = CliRunner().invoke(app, ["scene", "peg", "--out", str(out), *argv])
    assert r.exit_code == 2 and r.output.strip() == f"error: {message}", r.output
    assert not out.exists()


def test_scene_peg_takes_a_real_cells_tcp_damping_values_and_step_limits(tmp_path):
    """Issue 31 part 3: the TCP offset, damping as values and the pose-step limits land in the scene's controller."""
    from contactkit.scene import load_scene

    out = tmp_path / "cell.json"
    _ok(CliRunner(), ["scene", "peg", "--out", str(out), "--tcp-offset", "0,0,0.12", "--damping-pos", "30",
                      "--damping-rot", "0.4", "--max-pos-step", "0.08", "--max-rot-step", "0.5"])
    c = load_scene(out).controller
    assert c.tcp_offset.tolist() == [0.0, 0.0, 0.12] and c.damping_pos.tolist() == [30.0] * 3
    assert c.damping_rot.tolist() == [0.4] * 3 and (c.max_pos_step, c.max_rot_step) == (0.08, 0.5)


@pytest.mark.parametrize("argv, message", [
    (["--tcp-offset", "0,0"], "--tcp-offset must be three numbers 'x,y,z', got '0,0'"),
    (["--tcp-offset", "0,0,inf"], "--tcp-offset must be finite, got '0,0,inf'"),
    (["--damping-pos", "30"], "controller.damping_pos is given without controller.damping_rot"),
    (["--damping-pos", "30", "--damping-rot", "1", "--damping-ratio", "0.7"], "are exclusive"),
])
def test_scene_peg_refuses_a_bad_controller_in_one_line(argv, message, tmp_path):
    out = tmp_path / "p.json"
    r = CliRunner().invoke(app, ["scene", "peg", "--out", str(out), *argv])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not out.exists()


def test_scene_mesh_warns_or_with_strict_refuses_pieces_off_the_mesh(user_parts, tmp_path):
    """CoACD at threshold 1 gives the square slot one piece, its hull, which fills the hole: the pieces stick 11.6 mm
    out of the mesh, far beyond 0.2 x the 2 mm clearance (issue 34 part 4); the default threshold stays within it."""
    from contactkit.tasks.mesh_checks import PIECE_DEVIATION_FRACTION

    tool, slot_file, cache = user_parts
    runner, out = CliRunner(), tmp_path / "s.json"
    base = ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(out),
            "--coacd-cache", str(cache)]
    text = " ".join(_ok(runner, base).split())
    assert "warning" not in text and "clearance: 2.000 mm" in text
    slot_line = text[text.index("slot: "):]
    assert slot_line.split("they stick out of the mesh by up to ")[1].startswith("0.0")  # 29 µm here
    text = " ".join(_ok(runner, [*base, "--threshold", "1"]).split())
    assert f"more than {PIECE_DEVIATION_FRACTION:g} x the 2.000 mm clearance (0.400 mm)" in text, text
    assert "warning: slot: the convex pieces stick out of the mesh by 11." in text and out.is_file()
    out.unlink()
    _refused(runner, [*base, "--threshold", "1", "--strict"], "stick out of the mesh by 11.", "--strict")
    assert not out.exists()
    help_text = " ".join(_ok(runner, ["scene", "mesh", "--help"]).split())
    assert f"{PIECE_DEVIATION_FRACTION:g} x the measured clearance" in help_text


def test_scene_mesh_warns_or_with_strict_refuses_a_part_in_the_wrong_units(user_parts, tmp_path):
    tool, slot_file, cache = user_parts
    mm = tmp_path / "tool_mm.obj"
    part = load_mesh(tool)
    save_obj(mm, part.vertices * 1e3, part.faces)  # millimetre CAD
    runner, out = CliRunner(), tmp_path / "s.json"
    base = ["scene", "mesh", "--tool", str(mm), "--slot", str(slot_file), "--out", str(out),
            "--coacd-cache", str(cache)]
    _refused(runner, [*base, "--strict"], f"--tool '{mm}' is 60 m across (read in m)", "--units mm (0.06 m)")
    assert not out.exists()
    text = " ".join(_ok(runner, base).split())  # without --strict: written, with the warning
    assert f"warning: --tool '{mm}' is 60 m across" in text and out.is_file()


def test_scene_mesh_attaches_a_depth_network_trained_on_the_slot_and_refuses_another(user_parts, tmp_path):
    from contactkit.depth import TrainConfig, default_setup, make_frame, save_depth_net, train_depth_net
    from contactkit.engine.depth_contacts import scene_depth_nets

    tool, slot_file, cache = user_parts
    config = TrainConfig(samples=500, steps=2, batch=64)
    nets = {}
    for what, path in (("slot", slot_file), ("tool", tool)):
        part = load_mesh(path)
        net = train_depth_net(part, default_setup(part, make_frame("cartesian")), config)
        nets[what] = save_depth_net(net, tmp_path / f"{what}.safetensors")
    runner, out = CliRunner(), tmp_path / "s.json"
    base = ["scene", "mesh", "--tool", str(tool), "--slot", str(slot_file), "--out", str(out),
            "--coacd-cache", str(cache)]
    _ok(runner, [*base, "--depth", str(nets["slot"])])
    scene = load_scene(out)
    assert scene.statics[1].depth_model == str(nets["slot"].resolve()) and scene.statics[0].depth_model is None
    assert list(scene_depth_nets(scene)) == [1]  # the engine loads it, checked against the slot's mesh
    out.unlink()
    _refused(runner, [*base, "--depth", str(nets["tool"])], "--depth", "trained on mesh", "slot")
    _refused(runner, [*base, "--depth", str(tmp_path / "none.safetensors")], "--depth", "none.safetensors")
    assert not out.exists()
