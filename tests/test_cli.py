"""The `contactkit` command: collect → info → plot, and clear errors for bad input."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from contactkit.cli import app

BAD = Path(__file__).parent / "data" / "files"
runner = CliRunner()


def test_collect_info_plot(tmp_path):
    out = tmp_path / "d.h5"
    r = runner.invoke(app, ["collect", "--out", str(out), "--episodes", "2", "--steps", "20", "--world", "target"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["info", str(out)])
    assert r.exit_code == 0 and "episodes" in r.output and "peg-in-hole" in r.output
    png = tmp_path / "fig.png"
    r = runner.invoke(app, ["plot", str(out), "--out", str(png), "--episode", "1"])
    assert r.exit_code == 0 and png.stat().st_size > 10_000


def test_unknown_shape_is_a_clear_error_and_writes_nothing(tmp_path):
    out = tmp_path / "d.h5"
    r = runner.invoke(app, ["collect", "--out", str(out), "--shape", "octagon", "--episodes", "1"])
    assert r.exit_code == 2 and "octagon" in r.output and "hexagon" in r.output
    assert not out.exists()


def test_info_on_bad_files_names_the_problem(tmp_path):
    for name in ("zero_bytes.h5", "random_bytes.h5", "truncated.h5", "unrelated_valid.h5"):
        target = tmp_path / name
        shutil.copy(BAD / name, target)
        r = runner.invoke(app, ["info", str(target)])
        assert r.exit_code == 2, (name, r.output)
        assert "error" in r.output and name in r.output
        assert "Traceback" not in r.output


def test_benchmark_unknown_name_lists_known():
    r = runner.invoke(app, ["benchmark", "warp-drive", "--quick"])
    assert r.exit_code == 2 and "collect" in r.output


def test_results_regenerates_markdown(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "x.json").write_text(json.dumps({"name": "x", "kind": "benchmark", "speed": 2.5,
                                                "provenance": {"command": "contactkit benchmark x", "seed": 0}}))
    out = tmp_path / "R.md"
    r = runner.invoke(app, ["results", "--results-dir", str(results), "--out", str(out)])
    assert r.exit_code == 0
    assert "contactkit benchmark x" in out.read_text() and "2.5" in out.read_text()
