"""scripts/gpu_train_actfignet.py end to end on CPU with tiny sizes: parallel collection, a budgeted training run,
evaluation against nominal MuJoCo, weights brought back in pieces, metrics."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_train_actfignet.py"


def test_one_command_collects_trains_evaluates_and_writes_the_weights(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    cmd = [sys.executable, str(SCRIPT), str(out), "--work", str(work), "--device", "cpu", "--config", "small",
           "--train-transitions", "60", "--steps-per-episode", "20", "--val-episodes", "1", "--test-episodes", "1",
           "--workers", "2", "--batch-workers", "1", "--total-s", "600", "--eval-reserve-s", "15", "--max-steps", "3",
           "--eval-horizon", "5", "--eval-segments", "2", "--eval-transitions", "10", "--return-bytes", "1000000"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"]["train_transitions"] == 60 and len(metrics["data"]["train"]) == 2
    assert metrics["data"]["world"]["ft_noise_std"] != [0.0] * 6  # the target world, recorded
    assert [h["step"] for h in metrics["training"]["val_history"]] == [3]
    rows = {r["model"]: r for r in metrics["evaluation"]}
    assert set(rows) == {"act-fignet", "mujoco-nominal"}
    for row in rows.values():
        assert np.isfinite([row["rmse_pos_mm"], row["force_err_N"], row["force_err_clean_N"]]).all()
    for name, info in metrics["checkpoints"].items():  # pieces of at most 1 MB join to the recorded file
        assert len(info["files"]) > 1 and all((out / f).stat().st_size <= 1_000_000 for f in info["files"])
        joined = b"".join((out / f).read_bytes() for f in info["files"])
        assert hashlib.sha256(joined).hexdigest() == info["sha256"] and info["step"] == 3, name
    assert (out / "log.txt").read_text().count("trained to step 3") == 1
