"""Residual-model checkpoints: one safetensors file (weights, normalisation and gate buffers), never a pickle.

The header metadata holds JSON strings: ``format``, ``format_version``, ``net_config`` (:class:`NetConfig`),
``backbone`` (its kind and every parameter of the world it simulates: a correction learned over one backbone is
wrong over another), ``action_mode``, ``control_dt`` [s], ``task`` (the scenes' task, e.g. ``peg-in-hole``),
``scenes`` (names of the training scenes, for the model card) and ``train_state`` (losses, budget, seed).
Loading checks the file without trusting it (:func:`contactkit.files.read_safetensors`) and every key before a
tensor is built; :func:`check_compatible` refuses a checkpoint used over another backbone, world, action mode,
control period or task, each with a one-line :class:`~contactkit.errors.CheckpointError`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import safetensors.torch

from contactkit.errors import CheckpointError
from contactkit.files import read_safetensors, write_atomic
from contactkit.model import ActionMode
from contactkit.models.residual.network import NetConfig, ResidualNet
from contactkit.physics import WorldParams

__all__ = ["FORMAT", "FORMAT_VERSION", "ResidualCheckpoint", "check_compatible", "load_residual", "save_residual"]

FORMAT = "contactkit.residual"
FORMAT_VERSION = 1
MAX_FILE_BYTES = 64 * 2**20
"""Largest accepted residual checkpoint [bytes]; five 2 × 128 members are about 0.5 MB."""
CONTROL_DT_REL_TOL = 1e-9
"""Relative tolerance of a checkpoint's control period against the scene's world."""


@dataclass(frozen=True)
class ResidualCheckpoint:
    """What a residual checkpoint holds.

    Attributes:
        path: the file it was read from (None before saving).
        config: the ensemble's sizes; state: its ``state_dict`` (CPU tensors).
        backbone: ``"mujoco"`` or ``"engine"``; backbone_world: the world the backbone simulates.
        action_mode: what the commands mean; control_dt: control period [s]; task: the scenes' task name.
        scenes: names of the training scenes; train_state: JSON-compatible training record.
    """

    path: Path | None
    config: NetConfig
    state: dict
    backbone: str
    backbone_world: WorldParams
    action_mode: ActionMode
    control_dt: float
    task: str
    scenes: tuple[str, ...]
    train_state: dict


def save_residual(path: str | Path, net: ResidualNet, ckpt: ResidualCheckpoint) -> Path:
    """Write ``net``'s weights and ``ckpt``'s description to ``path`` atomically; returns the path."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    meta = {"format": FORMAT, "format_version": str(FORMAT_VERSION), "net_config": json.dumps(asdict(ckpt.config)),
            "backbone": json.dumps({"kind": ckpt.backbone, "world": ckpt.backbone_world.to_dict()}),
            "action_mode": ckpt.action_mode.value, "control_dt": repr(float(ckpt.control_dt)), "task": ckpt.task,
            "scenes": json.dumps(list(ckpt.scenes)), "train_state": json.dumps(ckpt.train_state)}
    return write_atomic(path, safetensors.torch.save(tensors, metadata=meta))


def _json(path: Path, meta: dict, key: str):
    try:
        return json.loads(meta[key])
    except (KeyError, TypeError, json.JSONDecodeError, RecursionError):
        raise CheckpointError(f"{path}: residual checkpoint metadata {key!r} is missing or not JSON") from None


def _description(path: Path, meta: dict) -> dict:
    """The checked metadata fields of a residual checkpoint (CheckpointError naming the file otherwise)."""
    if meta.get("format") != FORMAT or meta.get("format_version") != str(FORMAT_VERSION):
        raise CheckpointError(f"{path}: not a contactkit residual checkpoint (format {meta.get('format')!r} "
                              f"version {meta.get('format_version')!r}; expected {FORMAT!r} {FORMAT_VERSION})")
    try:
        config = NetConfig(**_json(path, meta, "net_config"))
        backbone = _json(path, meta, "backbone")
        world = WorldParams.from_dict(backbone["world"])
        kind = str(backbone["kind"])
        mode = ActionMode(meta.get("action_mode"))
        dt = float(meta.get("control_dt", "nan"))
        scenes = tuple(str(s) for s in _json(path, meta, "scenes"))
    except CheckpointError:
        raise
    except Exception as exc:  # noqa: BLE001 — any malformed field is one error naming the file
        raise CheckpointError(f"{path}: residual checkpoint metadata is malformed ({exc})") from None
    if kind not in ("mujoco", "engine") or not (math.isfinite(dt) and dt > 0):
        raise CheckpointError(f"{path}: backbone {kind!r} or control_dt {dt!r} is not valid")
    return {"config": config, "backbone": kind, "backbone_world": world, "action_mode": mode, "control_dt": dt,
            "task": str(meta.get("task", "")), "scenes": scenes, "train_state": _json(path, meta, "train_state")}


def load_residual(path: str | Path) -> tuple[ResidualNet, ResidualCheckpoint]:
    """The network (eval mode, CPU) and description of the checkpoint at ``path``.

    Raises:
        CheckpointError: a file that is missing, not safetensors, truncated, foreign, or whose tensors do not fit
            its configuration — one line naming the file.
    """
    path = Path(path)
    data, header = read_safetensors(path, MAX_FILE_BYTES, lambda problem: CheckpointError(f"{path}: {problem}"))
    desc = _description(path, header.get("__metadata__") or {})
    try:
        tensors = safetensors.torch.load(data)
    except Exception as exc:  # noqa: BLE001 — safetensors raises several types for a corrupt payload
        raise CheckpointError(f"{path}: tensors cannot be read ({exc})") from None
    net = ResidualNet(desc["config"])
    state = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    expected = net.state_dict()
    if set(state) != set(expected) or any(state[k].shape != expected[k].shape for k in expected):
        raise CheckpointError(f"{path}: its tensors do not match its net_config {desc['config']}")
    net.load_state_dict({k: v.to(expected[k].dtype) for k, v in state.items()})
    net.eval()
    return net, ResidualCheckpoint(path, state=state, **desc)


def check_compatible(ckpt: ResidualCheckpoint, backbone: str, world: WorldParams, action_mode: ActionMode,
                     task: str) -> None:
    """Refuse a checkpoint used over another ``backbone`` kind or ``world``, ``action_mode`` or ``task``.

    Raises:
        CheckpointError: one line naming the file and what differs.
    """
    where = ckpt.path or "residual checkpoint"
    if backbone != ckpt.backbone:
        raise CheckpointError(f"{where} corrects the {ckpt.backbone} backbone, not {backbone}: use --backbone "
                              f"{ckpt.backbone} or train a residual over {backbone}")
    if world != ckpt.backbone_world:
        diff = sorted(k for k, v in world.to_dict().items() if ckpt.backbone_world.to_dict().get(k) != v)
        raise CheckpointError(f"{where} was trained over a backbone world that differs in {diff}; its correction "
                              "does not apply to this one")
    if ActionMode(action_mode) is not ckpt.action_mode:
        raise CheckpointError(f"{where} takes {ckpt.action_mode.value!r} commands, not "
                              f"{ActionMode(action_mode).value!r}")
    if not math.isclose(world.control_dt, ckpt.control_dt, rel_tol=CONTROL_DT_REL_TOL):
        raise CheckpointError(f"{where} predicts {ckpt.control_dt:g} s steps, the world steps {world.control_dt:g} s")
    if ckpt.task and task != ckpt.task:
        raise CheckpointError(f"{where} was trained on {ckpt.task!r} scenes, not {task!r}")

