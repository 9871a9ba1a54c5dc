"""docs/robot-logs.md runs: its mapping file and CSV log import through the CLI to the values the page works out
by hand, and its Python snippet runs on them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.data import open_dataset
from contactkit.model import ActionMode

DOC = Path(__file__).resolve().parents[2] / "docs" / "robot-logs.md"
EXACT = 1e-12


def _block(lang: str) -> str:
    """The first fenced block of ``lang`` in the page."""
    return re.search(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)[1]


def test_the_pages_mapping_and_log_import_to_the_hand_values(tmp_path):
    (tmp_path / "lab.yaml").write_text(_block("yaml"))
    (tmp_path / "run1.csv").write_text(_block("csv"))
    out = tmp_path / "logs.h5"
    r = CliRunner().invoke(app, ["import", "csv", str(tmp_path / "run1.csv"), "--mapping", str(tmp_path / "lab.yaml"),
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    with open_dataset(out) as ds:
        ep = ds.episode(0)
        assert ds.meta.action_mode is ActionMode.POSE_DELTA and ds.meta.control_dt == 0.02
    assert ep.n_steps == 2 and np.array_equal(ep.time, [0.0, 0.02, 0.04])
    assert np.allclose(ep.pos[0], [0.4, 0.1, 0.45], rtol=0, atol=EXACT)
    assert np.allclose(ep.lin_vel, [0.1, 0, 0], rtol=0, atol=EXACT) and not ep.ang_vel.any()
    assert np.allclose(ep.wrench, [0.5, 0, -2, 0, 0, -0.01], rtol=0, atol=EXACT)
    assert np.allclose(ep.command[0], [0, 0, -0.01, 0, 0, 0], rtol=0, atol=EXACT)


def test_the_pages_python_snippet_runs(tmp_path, monkeypatch):
    (tmp_path / "lab.yaml").write_text(_block("yaml"))
    (tmp_path / "run1.csv").write_text(_block("csv"))
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(_block("python"), str(DOC), "exec"), scope)  # noqa: S102 - the page's own example
    assert scope["W"].shape == (2, 19) and scope["Y"].shape == (2, 6)
