"""The command as a new user meets it: every help text printed as written (units in brackets too), the measurement
names listed, --version, ``python -m contactkit``, a short summary by default and the full JSON with --json,
progress from every measurement, and one clear line for ``results`` outside a source checkout."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import click
import pytest
import typer
from typer.testing import CliRunner

import contactkit
from contactkit.cli import app
from contactkit.eval import harness, store

runner = CliRunner()
WIDE = {"terminal_width": 400, "max_content_width": 400}
"""Help on one line per option, so that a bracketed text is never wrapped."""
BRACKETS = re.compile(r"\[[^\[\]]+\]")


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append(((*path, name), command))
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _help_texts(command: click.Command) -> list[str]:
    return [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]


def test_some_help_text_has_units_in_brackets():
    assert sum(len(BRACKETS.findall(text)) for _, c in COMMANDS for text in _help_texts(c)) >= 5


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_help_prints_every_bracketed_text_as_written(path, command):
    r = runner.invoke(app, [*path, "--help"], **WIDE)
    assert r.exit_code == 0, r.output
    shown = " ".join(r.output.split())
    for text in _help_texts(command):
        for bracket in BRACKETS.findall(text):
            assert " ".join(bracket.split()) in shown, f"{' '.join(path)} --help lost {bracket!r}"


@pytest.mark.parametrize(("command", "names"), [("benchmark", harness.BENCHMARKS), ("experiment", harness.EXPERIMENTS)])
def test_measurement_help_lists_the_names(command, names):
    r = runner.invoke(app, [command, "--help"], **WIDE)
    assert r.exit_code == 0 and all(name in r.output for name in names), r.output


def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"contactkit {contactkit.__version__}\n"


def test_python_dash_m_contactkit_is_the_command():
    run = subprocess.run([sys.executable, "-m", "contactkit", "--version"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout == f"contactkit {contactkit.__version__}\n", run.stderr


FAKE_MEASUREMENT = '''
from contactkit.eval import progress


def run(quick, seed, device):
    with progress.task("cases", total=2) as advance:
        advance()
        advance()
    return {"speed_m_per_s": 2.5, "sink_installed": progress._SINK.get() is not None,
            "cases": [{"case": "a", "err_m": 0.125}, {"case": "b", "err_m": 0.25}], "series": list(range(100))}
'''


@pytest.fixture
def fake_benchmark(tmp_path, monkeypatch):
    """A benchmark ``fake`` whose module reports progress and says whether a progress sink was installed."""
    folder = tmp_path / "modules"
    folder.mkdir()
    (folder / "contactkit_test_fake_measurement.py").write_text(FAKE_MEASUREMENT)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setitem(harness.BENCHMARKS, "fake", "contactkit_test_fake_measurement")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_summary_by_default_with_progress_installed(fake_benchmark):
    r = runner.invoke(app, ["benchmark", "fake", "--quick"], **WIDE)
    assert r.exit_code == 0, r.output
    assert "speed_m_per_s" in r.output and "2.5" in r.output and "0.125" in r.output
    assert "sink_installed" in r.output and "True" in r.output
    assert "{" not in r.output and "99" not in r.output  # no JSON, no long series
    assert "--json" in r.output and "not stored in docs/results (--quick)" in r.output
    assert sorted(p.name for p in fake_benchmark.iterdir()) == ["modules"]


def test_json_dash_prints_the_full_result_only(fake_benchmark):
    r = runner.invoke(app, ["benchmark", "fake", "--quick", "--json", "-"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["series"] == list(range(100)) and result["provenance"]["not_stored"] == ["--quick", "--json"]
    assert sorted(p.name for p in fake_benchmark.iterdir()) == ["modules"]


def test_json_file_gets_the_full_result_and_the_summary_names_it(fake_benchmark):
    r = runner.invoke(app, ["benchmark", "fake", "--json", "out.json"], **WIDE)
    assert r.exit_code == 0, r.output
    assert json.loads((fake_benchmark / "out.json").read_text())["speed_m_per_s"] == 2.5
    assert "benchmark fake: full result in out.json" in r.output


@pytest.mark.parametrize("module", sorted({**harness.BENCHMARKS, **harness.EXPERIMENTS}.values()))
def test_every_measurement_reports_progress(module):
    source = open(importlib.util.find_spec(module).origin, encoding="utf-8").read()
    assert re.search(r"progress\.(task|track)\(", source), f"{module} reports no progress"


def test_results_outside_a_source_checkout_is_one_clear_line(tmp_path, monkeypatch):
    def no_checkout():
        raise contactkit.errors.ResultStoreError("contactkit is imported from /site-packages/contactkit")

    monkeypatch.setattr(store, "source_root", no_checkout)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["results"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith("error: contactkit results: no source checkout") and "--results-dir" in r.output
    assert list(tmp_path.iterdir()) == []


def test_progress_counts_read_done_of_total_or_done_alone():
    from contactkit.cli._app import CountColumn, RichProgressSink, progress

    display = progress()
    sink = RichProgressSink(display)
    unknown, known = sink.start("settings tried", None), sink.start("[episodes]", 5)
    column = CountColumn()
    assert str(column.render(display.tasks[0])) == ""
    sink.advance(unknown, 3)
    sink.advance(known, 2)
    assert [str(column.render(t)) for t in display.tasks] == ["3", "2/5"]
    assert display.tasks[1].description == "\\[episodes]"  # escaped: shown as written, not as markup
    sink.finish(known)
    assert [t.id for t in display.tasks] == [unknown]
