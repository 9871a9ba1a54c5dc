"""The `contactkit` command: collect → info → plot, and clear errors for bad input."""

import json
import shutil
from pathlib import Path

import pytest
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
    r = runner.invoke(app, ["collect", "--out", str(out), "--shape", "blob", "--episodes", "1"])
    assert r.exit_code == 2 and "blob" in r.output and "hexagon" in r.output
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


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "d.h5"
    r = runner.invoke(app, ["collect", "--out", str(out), "--episodes", "2", "--steps", "5"])
    assert r.exit_code == 0, r.output
    return out


def test_info_prints_units_in_brackets(dataset):
    r = runner.invoke(app, ["info", str(dataset)])
    assert r.exit_code == 0 and "control dt [s]" in r.output, r.output


def test_plot_refuses_an_episode_out_of_range(dataset, tmp_path):
    for episode in ("-1", "2"):
        r = runner.invoke(app, ["plot", str(dataset), "--out", str(tmp_path / "f.png"), "--episode", episode])
        assert r.exit_code == 2 and f"--episode {episode} is out of range" in r.output and "0 .. 1" in r.output
    assert not (tmp_path / "f.png").exists()


def test_plot_prints_the_file_it_wrote(dataset, tmp_path):
    r = runner.invoke(app, ["plot", str(dataset), "--out", str(tmp_path), "--episode", "1"])
    written = tmp_path / "d-episode1.png"
    assert r.exit_code == 0 and r.output.strip() == f"wrote {written}" and written.stat().st_size > 10_000
    r = runner.invoke(app, ["plot", str(dataset), "--out", str(tmp_path / "fig")])
    assert r.exit_code == 0 and r.output.strip() == f"wrote {tmp_path / 'fig.png'}"
    assert (tmp_path / "fig.png").is_file() and not (tmp_path / "fig").exists()
    r = runner.invoke(app, ["plot", str(dataset), "--out", str(tmp_path / "fig.xyz")])
    assert r.exit_code == 2 and "'.xyz' is not an image format" in r.output


def test_resume_mismatch_names_only_what_differs(dataset, tmp_path):
    out = tmp_path / "d.h5"
    shutil.copy(dataset, out)
    r = runner.invoke(app, ["collect", "--out", str(out), "--episodes", "2", "--steps", "5", "--clearance", "0.0005"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and len(r.output) < 1500, r.output
    assert "meta differs in ['scene']" in r.output and "scene.name: " in r.output and "0.5 mm" in r.output


@pytest.mark.parametrize("argv", [["train", "--data", "missing.h5", "--out", "run"],
                                  ["evaluate", "--model", "missing", "--data", "missing.h5"],
                                  ["benchmark", "collect", "--quick"], ["experiment", "pf-tracking", "--quick"]],
                         ids=lambda a: a[0])
def test_an_unknown_device_is_refused_before_any_work(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, [*argv, "--device", "quantum"])
    assert r.exit_code == 2 and r.output.startswith("error: device 'quantum' is not a torch device"), r.output
    assert list(tmp_path.iterdir()) == []


def test_results_needs_a_folder(tmp_path):
    r = runner.invoke(app, ["results", "--results-dir", str(tmp_path / "none"), "--out", str(tmp_path / "R.md")])
    assert r.exit_code == 2 and "is not a folder" in r.output and not (tmp_path / "R.md").exists()


def test_an_error_message_is_one_line_of_plain_text(tmp_path):
    weird = tmp_path / "[/bold] x\nb"  # rich markup prints as it is, a line break as a space
    r = runner.invoke(app, ["info", str(weird)])
    assert r.exit_code == 2 and r.output == f"error: {weird}: no such dataset file\n".replace("x\nb", "x b")


@pytest.mark.parametrize("argv", [["collect", "--out", "adir"], ["collect", "--out", "afile/d.h5"],
                                  ["evaluate", "--model", "m", "--data", "d.h5", "--json", "adir"],
                                  ["benchmark", "lml", "--quick", "--json", "adir"],
                                  ["experiment", "placement", "--quick", "--plots", "afile"],
                                  ["results", "--results-dir", "adir", "--out", "adir"], ["demo", "--out", "afile"]],
                         ids=lambda a: f"{a[0]} {a[-2]}")
def test_an_output_of_the_wrong_kind_is_refused_before_any_work(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine")
    (tmp_path / "adir").mkdir()
    r = runner.invoke(app, argv)
    assert r.exit_code == 2 and r.output.startswith(f"error: {argv[-2]} '{argv[-1]}'"), r.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["adir", "afile"]
