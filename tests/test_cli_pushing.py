"""`contactkit learn pushing` end to end on short episodes: actor, card, curve and model card agree; bad options."""

import hashlib
import json
import re

import numpy as np
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.cli.pushing import curve_blocks
from contactkit.pushing.residual import load_residual

runner = CliRunner()


def test_learn_pushing_writes_actor_card_and_curve(tmp_path):
    out = tmp_path / "actor"
    r = runner.invoke(app, ["learn", "pushing", "--out", str(out), "--steps", "120", "--episode-steps", "40",
                            "--seed", "3", "--train-freq", "2", "--snapshot-every", "2"])
    assert r.exit_code == 0, r.output
    policy = load_residual(out / "residual.safetensors")
    training = policy.card["training"]
    assert training["steps"] == 120 and training["episodes"] == 3 and training["episode_steps"] == 40
    curve = json.loads((out / "training_curve.json").read_text())
    assert len(curve["returns"]) == len(curve["errors"]) == 3 and np.isfinite(curve["errors"]).all()
    card = (out / "README.md").read_text()
    digest = re.search(r"sha256 `([0-9a-f]{64})`", card).group(1)
    assert digest == hashlib.sha256((out / "residual.safetensors").read_bytes()).hexdigest()
    assert "--episode-steps 40" in card and "| 1–3 |" in card
    assert "zero residual" in card and "first 5000 updates" in card and "actor learning rate 0.001" in card
    assert "--snapshot-every 2" in card and "of the plan's mean pusher speed" in card and "eq17+pose" in card
    snaps = sorted((out / "snapshots").glob("*.safetensors"))
    assert [p.name for p in snaps] == ["episode-00002.safetensors"]
    assert load_residual(snaps[0]).card["training"]["snapshot_episode"] == 2


def test_learn_pushing_refuses_bad_options(tmp_path):
    (tmp_path / "file").write_text("x")
    for args in (["--steps", "0"], ["--episode-steps", "1"], ["--wall-limit", "-1"], ["--reward", "eq18"],
                 ["--envs", "0"]):
        r = runner.invoke(app, ["learn", "pushing", "--out", str(tmp_path / "o"), *args])
        assert r.exit_code == 2 and "error:" in r.output, (args, r.output)
    r = runner.invoke(app, ["learn", "pushing", "--out", str(tmp_path / "file")])
    assert r.exit_code == 2 and "--out" in r.output


def test_curve_blocks_are_block_means():
    """Oracle: block means of a known curve, the last block shorter."""
    errors = np.arange(15, dtype=np.float64).reshape(5, 3)
    returns = np.array([-1.0, -2.0, -3.0, -4.0, -5.0])
    rows = curve_blocks(errors, returns, block=2)
    assert [r["episodes"] for r in rows] == [[1, 2], [3, 4], [5, 5]]
    assert [r["return"] for r in rows] == [-1.5, -3.5, -5.0]
    assert [r["torque_Nm"] for r in rows] == [3.5, 9.5, 14.0]


def test_pushing_select_scores_actors_and_the_pd(tmp_path):
    """Two actors and the PD alone on short validation episodes: a zero actor scores exactly as the PD; the JSON
    names the lowest score; a bad actor file is refused before any episode."""
    from contactkit.pushing import controller as ctl
    from contactkit.pushing.residual import ResidualPolicy, save_residual

    rng = np.random.default_rng(0)
    hidden = (rng.normal(size=(8, ctl.OBS_DIM)), rng.normal(size=8))
    zero = save_residual(ResidualPolicy(hidden + (np.zeros((3, 8)), np.zeros(3)), {}), tmp_path / "zero.safetensors")
    push = save_residual(ResidualPolicy(hidden + (np.zeros((3, 8)), np.array([3.0, 0.0, 0.0])), {}),
                         tmp_path / "push.safetensors")
    out = tmp_path / "scores.json"
    r = runner.invoke(app, ["learn", "pushing-select", str(zero), str(push), "--per-case", "1", "--duration", "0.3",
                            "--json", str(out)])
    assert r.exit_code == 0, r.output
    got = json.loads(out.read_text())
    scores = got["scores"]
    assert got["draws"] == 6 and set(scores) == {"PD alone", str(zero), str(push)}
    assert scores["PD alone"] == scores[str(zero)]
    assert got["best"] == min(scores, key=lambda n: scores[n]["score_pct"]) and "(best)" in r.output
    (tmp_path / "bad.safetensors").write_bytes(b"not a file")
    r = runner.invoke(app, ["learn", "pushing-select", str(tmp_path / "bad.safetensors")])
    assert r.exit_code == 2 and "residual actor" in r.output
