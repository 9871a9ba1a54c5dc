"""`contactkit train --ddp`: bad process counts and --ddp with batch --workers are refused before any data is read
(the data path does not exist), torchrun's environment is recognised. Training itself on two processes is tested in
tests/models/gnn/test_gnn_ddp.py."""

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.models.gnn.ddp import launched_by_torchrun

runner = CliRunner()


@pytest.mark.parametrize("extra", [["--ddp", "0"], ["--ddp", "2", "--workers", "1"]])
def test_bad_ddp_options_are_one_clear_line(tmp_path, extra):
    r = runner.invoke(app, ["train", "--data", str(tmp_path / "none.h5"), "--out", str(tmp_path / "out"), *extra])
    assert r.exit_code == 2 and "--ddp" in r.output and "Traceback" not in r.output, r.output


def test_torchrun_environment_is_recognised(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not launched_by_torchrun()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not launched_by_torchrun()
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert launched_by_torchrun()
