"""``contactkit learn depth``: trains, saves, reports accuracy; refuses bad arguments before any work."""

import json
from pathlib import Path

from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.depth import load_depth_net
from contactkit.geometry import load_mesh

CUBE = Path(__file__).resolve().parents[1] / "data" / "meshes" / "valid_cube_10mm.obj"
runner = CliRunner()


def test_learn_depth_on_a_mesh_file(tmp_path):
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path), "--steps", "30"])
    assert r.exit_code == 0, r.output
    net = load_depth_net(tmp_path / "valid_cube_10mm.safetensors", load_mesh(CUBE))
    assert net.coordinates.value == "cartesian" and net.meta["steps"] == 30
    acc = json.loads((tmp_path / "accuracy.json").read_text())["accuracy"]
    assert acc["n"] > 0 and acc["max_um"] > 0
    assert "--steps 30" in net.meta["command"]
    card = (tmp_path / "README.md").read_text()
    assert net.mesh_sha256 in card and "--steps 30" in card and "max " in card


def test_learn_depth_refuses_bad_arguments(tmp_path):
    r = runner.invoke(app, ["learn", "depth", "--part", "no-such-part", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "no-such-part" in r.output
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path), "--coordinates", "polar"])
    assert r.exit_code == 2 and "polar" in r.output
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path), "--steps", "0"])
    assert r.exit_code == 2 and "steps must be >= 1, got 0" in r.output
    (tmp_path / "file").write_text("x")
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path / "file")])
    assert r.exit_code == 2 and "--out" in r.output


def test_learn_depth_warm_start_and_refinement_are_recorded(tmp_path):
    first = tmp_path / "first"
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(first), "--steps", "30"])
    assert r.exit_code == 0, r.output
    init = first / "valid_cube_10mm.safetensors"
    out = tmp_path / "refined"
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(out), "--steps", "0", "--init",
                            str(init), "--refine-steps", "5", "--refine-power", "4"])
    assert r.exit_code == 0, r.output
    net = load_depth_net(out / "valid_cube_10mm.safetensors", load_mesh(CUBE))
    assert f"--init {init}" in net.meta["command"] and "--refine-steps 5 --refine-power 4" in net.meta["command"]
    assert net.meta["init"]["steps"] == 30 and net.meta["refine_steps"] == 5
    card = (out / "README.md").read_text()
    assert "started from a network made by" in card and "5 full-batch float64 L-BFGS" in card
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(out), "--steps", "3",
                            "--mate-poses", "4"])
    assert r.exit_code == 2 and "mate_poses" in r.output
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(out), "--steps", "3",
                            "--adam-mate-poses", "4", "--adam-mate-nodes", "10"])
    assert r.exit_code == 2 and "adam_mate_poses 4" in r.output


def test_learn_depth_end_samples_are_recorded(tmp_path):
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path), "--steps", "3",
                            "--coordinates", "cylindrical", "--end-fraction", "0.25", "--end-span", "0.002"])
    assert r.exit_code == 0, r.output
    net = load_depth_net(tmp_path / "valid_cube_10mm.safetensors", load_mesh(CUBE))
    assert net.meta["end_fraction"] == 0.25 and net.meta["end_span"] == 0.002
    assert "--end-fraction 0.25 --end-span 0.002" in net.meta["command"]
    card = (tmp_path / "README.md").read_text()
    assert "0.25 of the near-surface samples lie within 0.002 m of the axial ends" in card


def test_learn_depth_few_steps_bound_the_whole_run_and_show_progress(tmp_path):
    """Issue 34 part 5: ``--part paper-hole --steps 50`` ran the preset's 200k samples and 1200 L-BFGS iterations
    (over 5 minutes); a few steps now scale both down with them, print the expected time and a progress bar."""
    import time

    t0 = time.perf_counter()
    r = runner.invoke(app, ["learn", "depth", "--part", "paper-hole", "--out", str(tmp_path), "--steps", "5"])
    wall = time.perf_counter() - t0
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "2000 samples, 5 Adam steps" in text and "0 L-BFGS iterations; expected about" in text, text
    assert "learn depth hole: Adam" in text and "5/5" in text  # the bar, at its end
    meta = json.loads((tmp_path / "accuracy.json").read_text())
    assert meta["steps"] == 5 and meta["n_samples"] <= 2000 and meta["refine_steps"] == 0
    assert meta["expected_s"] < 30 and wall < 120  # generous: two shared cores


def test_learn_depth_budget_fits_the_run_and_records_its_settings(tmp_path):
    r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path), "--budget", "8"])
    assert r.exit_code == 0, r.output
    net = load_depth_net(tmp_path / "valid_cube_10mm.safetensors", load_mesh(CUBE))
    m = net.meta
    assert m["budget_s"] == 8 and m["expected_s"] <= 8 and m["steps"] < 20_000 and m["samples"] < 200_000
    assert f"--steps {m['steps']}" in m["command"] and f"--samples {m['samples']}" in m["command"]
    assert "--refine-steps 0" in m["command"]  # the run repeats without the timing
    assert "scaled to fit a budget of 8 s" in (tmp_path / "README.md").read_text()
    for bad in ("0", "nan", "0.001"):
        r = runner.invoke(app, ["learn", "depth", "--part", str(CUBE), "--out", str(tmp_path / "x"), "--budget", bad])
        assert r.exit_code == 2 and "--budget" in r.output, r.output
