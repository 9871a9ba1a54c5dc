"""The physics-based rows of ``prediction-accuracy`` and the commands behind them: a residual over a backbone
(``contactkit train --model residual``) and a MuJoCo world calibrated to the logs (``contactkit calibrate``).

:func:`fit_residual` and :func:`fit_calibration` read dataset files, check them against the model world
(:func:`contactkit.data.logged.load_logged`), fit, and write a checkpoint (with its training record beside it) or a
world file (with its calibration record beside it); the CLI and the experiment call the same functions, so a stored
row and a user's command do the same work.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.calibration import CalibrationBudget, calibrate, param_names
from contactkit.calibration.controller import apply_controller
from contactkit.data.logged import load_logged
from contactkit.files import write_atomic
from contactkit.model import ActionMode
from contactkit.models.residual import (
    Backbone,
    ResidualCheckpoint,
    ResidualTrainConfig,
    make_backbone,
    save_residual,
    train_residual,
)
from contactkit.physics import WorldParams
from contactkit.scene import Scene

__all__ = ["CALIBRATION_QUICK", "RESIDUAL_QUICK", "CalibrateJob", "ResidualJob", "calibrated_scene_path",
           "fit_calibration", "fit_residual",
           "run_calibrate_job", "run_residual_job"]

RESIDUAL_QUICK = ResidualTrainConfig(hidden=32, members=2, one_step_iters=20, batch=32, rollout_iters=2,
                                     rollout_batch=4, rollout_steps=2)
"""A residual that trains in seconds (tests, ``--quick``): its numbers say nothing."""
CALIBRATION_QUICK = CalibrationBudget(coarse=2, local=3, segments=4, horizon=5)
"""A calibration that runs in seconds (tests, ``--quick``)."""
RECORD_SUFFIX = ".record.json"
"""The training or calibration record is written beside the checkpoint or world file with this suffix."""


class _Backbones:
    """``scene -> ContactModel``: one backbone per distinct scene (by JSON text), built on first use."""

    def __init__(self, kind: Backbone, world: WorldParams, mode: ActionMode):
        self.kind, self.world, self.mode, self.cache = kind, world, mode, {}

    def __call__(self, scene: Scene):
        key = scene.to_json()
        if key not in self.cache:
            self.cache[key] = make_backbone(self.kind, scene, self.world, self.mode)
        return self.cache[key]


def fit_residual(train: Sequence[str | Path], val: Sequence[str | Path], backbone: Backbone | str,
                 world: WorldParams, config: ResidualTrainConfig, out: str | Path, scene: Scene | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> tuple[Path, dict]:
    """Train a residual over ``backbone`` in ``world`` on the ``train`` files (``val`` calibrates the gate) and write
    ``out`` (a safetensors checkpoint) and ``out`` + :data:`RECORD_SUFFIX`.

    Raises:
        DatasetError: a file of another action mode or control period than the others and ``world``, NaN, no scene.
        InvalidInputError: a world the backbone cannot simulate statelessly (latency, compliance, filter).
    """
    backbone = Backbone(backbone)
    logs = load_logged(train, scene, control_dt=world.control_dt)
    held = load_logged(val, scene, control_dt=world.control_dt, action_mode=logs.action_mode)
    backbones = _Backbones(backbone, world, logs.action_mode)
    net, record = train_residual(logs.episodes, held.episodes, backbones, config, progress)
    tasks = sorted({str(ep.scene.meta.get("task", "")) for ep in logs.episodes})
    names = tuple(sorted({ep.scene.name for ep in logs.episodes}))
    ckpt = ResidualCheckpoint(None, net.config, {}, backbone.value, world, logs.action_mode, world.control_dt,
                              tasks[0] if len(tasks) == 1 else "", names,
                              {**record.as_dict(), "sources": [list(s) for s in logs.sources]})
    path = save_residual(out, net, ckpt)
    write_atomic(str(path) + RECORD_SUFFIX, json.dumps(ckpt.train_state, indent=1) + "\n")
    return path, ckpt.train_state


def fit_calibration(data: Sequence[str | Path], held_out: Sequence[str | Path], world: WorldParams, params: str,
                    budget: CalibrationBudget, out: str | Path, seed: int = 0, scene: Scene | None = None,
                    progress: Callable[[str, int, int], None] | None = None) -> tuple[Path, dict]:
    """Calibrate ``world`` to the ``data`` files (``held_out`` reports the fit) and write the world file ``out``
    (every command takes it as ``--world``/``--model-world``) and its record ``out`` + :data:`RECORD_SUFFIX`; with
    controller parameters, also the logs' scene with the calibrated controller (:func:`calibrated_scene_path`,
    named in the record's ``scene``)."""
    logs = load_logged(data, scene, control_dt=world.control_dt)
    held = load_logged(held_out, scene, control_dt=world.control_dt, action_mode=logs.action_mode)
    result = calibrate(logs.episodes, held.episodes, world, param_names(params), logs.action_mode, budget,
                       np.random.default_rng(seed), progress)
    text = {"description": f"MuJoCo calibrated to {len(logs.episodes)} logged episodes (contactkit calibrate, "
                           f"--params {params}; Act-FIGNet paper App. V-D)", **result.world.to_dict()}
    path = write_atomic(out, json.dumps(text, indent=1) + "\n")
    record = {**result.as_dict(), "sources": [list(s) for s in logs.sources], "params_set": params, "seed": seed}
    if result.controller:  # the scene's controller was calibrated too: the logs' scene with it, beside the world
        first = logs.episodes[0].scene
        fitted = dataclasses.replace(first, controller=apply_controller(first.controller, result.controller))
        record["scene"] = str(write_atomic(calibrated_scene_path(path), fitted.to_json() + "\n"))
    write_atomic(str(path) + RECORD_SUFFIX, json.dumps(record, indent=1) + "\n")
    return Path(path), record


def calibrated_scene_path(world_path: str | Path) -> Path:
    """Where :func:`fit_calibration` writes the scene with a calibrated controller: beside the world file,
    ``NAME.scene.json`` for ``NAME.json``."""
    p = Path(world_path)
    return p.with_name(f"{p.stem}.scene.json")


@dataclass(frozen=True)
class ResidualJob:
    """A residual to train in a worker: its row name, backbone, world, data, output and config."""

    name: str
    backbone: str
    world: WorldParams
    train: str
    val: str
    out: str
    config: ResidualTrainConfig


@dataclass(frozen=True)
class CalibrateJob:
    """A calibration to run in a worker: data, held-out data, starting world, parameter set, budget, output."""

    name: str
    train: str
    val: str
    world: WorldParams
    params: str
    budget: CalibrationBudget
    out: str
    seed: int


def run_residual_job(job: ResidualJob) -> dict:
    """Train one residual (a worker process); reuses ``job.out`` when it already exists (a resumed run)."""
    from contactkit.eval.workers import one_torch_thread

    one_torch_thread()
    record_path = Path(job.out + RECORD_SUFFIX)
    if Path(job.out).is_file() and record_path.is_file():
        record = json.loads(record_path.read_text())
    else:
        _, record = fit_residual([job.train], [job.val], job.backbone, job.world, job.config, job.out)
    return {"name": job.name, "kind": "residual", "checkpoint": job.out, "train_s": record["wall_s"],
            "final_val": record["val"]}


def run_calibrate_job(job: CalibrateJob) -> dict:
    """Calibrate one world (a worker process); reuses ``job.out`` when it already exists (a resumed run)."""
    record_path = Path(job.out + RECORD_SUFFIX)
    if Path(job.out).is_file() and record_path.is_file():
        record = json.loads(record_path.read_text())
    else:
        _, record = fit_calibration([job.train], [job.val], job.world, job.params, job.budget, job.out, job.seed)
    return {"name": job.name, "kind": "world", "checkpoint": job.out, "calibration": record}
