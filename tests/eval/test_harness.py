"""The measurement harness stores full runs (JSON, and the module's own markdown table) and RESULTS.md uses them."""

from __future__ import annotations

import json
import sys
import types

import pytest

from contactkit.errors import InvalidInputError
from contactkit.eval import harness
from contactkit.eval.results import refresh_tables, render_results

ROWS = [{"case": "a", "value": 1.5}, {"case": "b", "value": 2.5}]
ARGV = ["/venv/bin/contactkit", "benchmark", "fake-own"]
"""What ``sys.argv`` of a ``contactkit benchmark`` process looks like (a stored run needs one)."""


def _module(name: str, with_markdown: bool) -> types.ModuleType:
    module = types.ModuleType(name)

    def run(quick: bool, seed: int, device: str) -> dict:
        return {"rows": [dict(r, seed=seed, quick=quick) for r in ROWS], "total": sum(r["value"] for r in ROWS)}

    module.run = run
    if with_markdown:
        module.markdown = lambda result: "| case | twice |\n|---|---|\n" + "".join(
            f"| {r['case']} | {2 * r['value']:g} |\n" for r in result["rows"])
    return module


@pytest.fixture
def fake(monkeypatch):
    """Two registered benchmarks computed by a function: one with its own markdown table, one without."""
    for name, md in (("fake_own", True), ("fake_plain", False)):
        monkeypatch.setitem(sys.modules, f"_ck_test_{name}", _module(f"_ck_test_{name}", md))
        monkeypatch.setitem(harness.BENCHMARKS, name.replace("_", "-"), f"_ck_test_{name}")


def test_full_run_stores_json_and_the_modules_table(fake, tmp_path):
    results = tmp_path / "results"
    out = harness.run_measurement("benchmark", "fake-own", quick=False, seed=3, results_dir=results, argv=ARGV)
    assert out["total"] == 4.0 and out["provenance"]["seed"] == 3 and not out["provenance"]["quick"]
    assert out["stored"] == str(results / "fake-own.json")
    path = results / "fake-own.json"
    assert json.loads(path.read_text())["rows"] == out["rows"]
    assert path.with_suffix(".md").read_text().splitlines()[2:] == ["| a | 3 |", "| b | 5 |"]
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave nothing behind


def test_json_run_writes_its_file_and_its_table_only(fake, tmp_path):
    out = tmp_path / "out.json"
    result = harness.run_measurement("benchmark", "fake-own", quick=False, results_dir=tmp_path / "results",
                                     json_path=str(out), argv=ARGV)
    assert json.loads(out.read_text())["rows"] == result["rows"] and "stored" not in result
    assert out.with_suffix(".md").read_text().splitlines()[2:] == ["| a | 3 |", "| b | 5 |"]
    assert json.loads(out.read_text())["provenance"]["not_stored"] == ["--json"]
    assert not (tmp_path / "results").exists()


def test_quick_run_is_not_stored(fake, tmp_path):
    harness.run_measurement("benchmark", "fake-own", quick=True, results_dir=tmp_path, argv=ARGV)
    assert not list(tmp_path.iterdir())


def test_partial_run_goes_to_json_only(fake, tmp_path, monkeypatch):
    module = sys.modules["_ck_test_fake_own"]
    full_run = module.run
    monkeypatch.setattr(module, "run", lambda quick, seed, device: {**full_run(quick, seed, device), "partial": True})
    out = tmp_path / "out.json"
    harness.run_measurement("benchmark", "fake-own", quick=False, results_dir=tmp_path / "results", json_path=str(out),
                            argv=ARGV)
    assert json.loads(out.read_text())["partial"] and not (tmp_path / "results").exists()
    harness.run_measurement("benchmark", "fake-own", quick=False, results_dir=tmp_path / "results", argv=ARGV)
    assert not (tmp_path / "results").exists()  # without --json too


def test_results_page_uses_the_modules_table_else_the_generic_one(fake, tmp_path):
    for name in ("fake-own", "fake-plain"):
        harness.run_measurement("benchmark", name, quick=False, results_dir=tmp_path, argv=ARGV)
    page = render_results(tmp_path)
    own, plain = page.split("## benchmark `fake-plain`")[0], page.split("## benchmark `fake-plain`")[1]
    assert "| a | 3 |" in own and "| case | value |" not in own  # its own table replaces the generic one
    assert "| case | value | seed | quick |" in plain and "| total | 4 |" in plain


def test_stored_tables_follow_the_modules_table(fake, tmp_path, monkeypatch):
    for name in ("fake-own", "fake-plain"):
        harness.run_measurement("benchmark", name, quick=False, results_dir=tmp_path, argv=ARGV)
    table = tmp_path / "fake-own.md"
    table.write_text("stale\n")
    monkeypatch.setattr(sys.modules["_ck_test_fake_own"], "markdown", lambda result: f"{len(result['rows'])} rows\n")
    assert refresh_tables(tmp_path) == [table]  # the measurement without a table of its own gets none
    assert table.read_text() == "2 rows\n" and not (tmp_path / "fake-plain.md").exists()


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(InvalidInputError, match="tight-insertion"):
        harness.run_measurement("benchmark", "no-such-benchmark", quick=True)


def test_options_reach_the_run_that_takes_them_and_are_refused_elsewhere(monkeypatch):
    module = types.ModuleType("_ck_test_opts")
    module.run = lambda quick, seed, device, models=None: {"models": list(models)}
    monkeypatch.setitem(sys.modules, "_ck_test_opts", module)
    monkeypatch.setitem(harness.EXPERIMENTS, "fake-opts", "_ck_test_opts")
    out = harness.run_measurement("experiment", "fake-opts", quick=True, options={"models": ("a", "b"), "x": None})
    assert out["models"] == ["a", "b"]  # unset options (None) are dropped
    with pytest.raises(InvalidInputError, match="checkpoint"):
        harness.run_measurement("experiment", "fake-opts", quick=True, options={"checkpoint": "c.safetensors"})
