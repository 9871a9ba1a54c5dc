"""docs/scenes.md stays true: in a temporary directory (HOME there too, so the CoACD cache is not the user's), with
a tool.obj and a slot.obj written from the library's parts, every ``contactkit`` line of its console blocks runs
(in document order) and exits 0, and its Python block runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.geometry import peg, save_obj, slot
from contactkit.scene import load_scene

DOC = Path(__file__).resolve().parents[1] / "docs" / "scenes.md"
BLOCK = re.compile(r"```(console|python)\n(.*?)```", re.DOTALL)


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == kind]


def test_the_doc_has_commands_and_code():
    commands = [line for block in _blocks("console") for line in block.splitlines() if line.startswith("contactkit")]
    assert any(c.startswith("contactkit scene mesh") for c in commands) and len(_blocks("python")) == 1
    assert any("mpc-insertion" in c for c in commands)


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    p, s = peg("square", 0.01, 0.06), slot("square", 0.01, 2e-3, 0.025)
    save_obj("tool.obj", p.vertices, p.faces)
    save_obj("slot.obj", s.vertices, s.faces)
    return tmp_path


def test_console_lines_run(workdir):
    runner = CliRunner()
    for block in _blocks("console"):
        for line in block.splitlines():
            if not line.startswith("contactkit "):
                continue
            result = runner.invoke(app, shlex.split(line)[1:])
            assert result.exit_code == 0, f"{line}: {result.output}"
    assert load_scene("my_scene.json").meta["task"] == "peg-in-hole"
    assert (workdir / ".cache" / "contactkit" / "coacd").is_dir()  # the default cache, under this test's HOME
    assert Path("my_mpc.json").is_file()


def test_python_block_runs(workdir, capsys):
    (code,) = _blocks("python")
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_scenes"})
    out = capsys.readouterr().out
    assert "convex pieces, out of the mesh by up to" in out and "25.0 mm deep" in out and "from the hole's floor" in out
    assert load_scene("my_scene.json").tool.part.name == "tool_mm"
