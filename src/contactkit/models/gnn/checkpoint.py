"""Checkpoints of Act-FIGNet / FIGNet+ models: one safetensors file, never a pickle.

Layout: tensors ``model.<name>`` (weights and normalisation buffers), ``optim.<param>.<key>`` (optimizer
state, for resuming); the safetensors header metadata holds JSON strings: ``format``, ``format_version``,
``model_config`` (architecture and graph settings, the action mode included), ``step_spec`` (control
period and gravity the model was trained for), ``optimizer``
(param groups) and ``train_state`` (step, losses, random generator states). Writing is atomic (a
temporary file in the same folder, then ``os.replace``).

Loading validates the header before anything is allocated: a file that is not safetensors, is truncated,
claims more bytes than it has, is a foreign safetensors file, or does not match the expected model gets a
:class:`~contactkit.errors.CheckpointError` naming the file and the problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import safetensors.torch
import torch

from contactkit.devices import check_device
from contactkit.errors import CheckpointError, ContactkitError
from contactkit.files import read_bounded, write_atomic
from contactkit.model import ActionMode
from contactkit.models.gnn.kinematics import StepSpec
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig

FORMAT = "contactkit.gnn"
FORMAT_VERSION = 2
"""Version written. 2: processor blocks per edge/node type (``layers.<l>.edge.<type>.mlp.<i>.*``)."""
READABLE_VERSIONS = (1, 2)
"""Versions read; version 1 tensors are renamed by :func:`upgrade_state_names`."""
_V1_BLOCK_PARAM = re.compile(r"^(layers\.\d+\.(?:edge|node)\.[a-z]+)\.(\d+\.(?:weight|bias))$")
MAX_HEADER_BYTES = 64 * 2**20
"""Largest accepted safetensors header [bytes]."""
MAX_FILE_BYTES = 8 * 2**30
"""Largest accepted checkpoint [bytes]; a paper-size model with optimizer state is about 0.1 GB."""

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


@dataclass(frozen=True)
class Checkpoint:
    """Everything a checkpoint holds.

    Attributes:
        path: the file it was read from.
        model_config: architecture and graph settings.
        step_spec: control period [s] and gravity [m/s²] of the training data.
        model_state: ``state_dict`` of :class:`EncodeProcessDecode` (CPU tensors).
        optimizer_state: a torch optimizer ``state_dict``, or None when not saved.
        train_state: JSON-compatible training progress (empty when not saved).
    """

    path: Path
    model_config: ModelConfig
    step_spec: StepSpec
    model_state: dict[str, torch.Tensor]
    optimizer_state: dict | None
    train_state: dict


def save_checkpoint(
    path: str | Path,
    model: EncodeProcessDecode,
    step_spec: StepSpec,
    optimizer: torch.optim.Optimizer | None = None,
    train_state: dict | None = None,
) -> Path:
    """Write ``model`` (and optionally ``optimizer`` and ``train_state``) to ``path`` atomically."""
    path = Path(path)
    tensors = {f"model.{k}": v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    meta = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "model_config": json.dumps(model.config.to_dict()),
        "step_spec": json.dumps({"dt": step_spec.dt, "gravity": list(step_spec.gravity)}),
        "train_state": json.dumps(train_state or {}),
    }
    if optimizer is not None:
        meta["optimizer"] = json.dumps(_optimizer_tensors(optimizer.state_dict(), tensors))
    payload = safetensors.torch.save(tensors, metadata=meta)
    return write_atomic(path, payload)


def _optimizer_tensors(state: dict, tensors: dict[str, torch.Tensor]) -> dict:
    """Move tensor entries of an optimizer state_dict into ``tensors``; return the JSON remainder."""
    scalars: dict[str, dict] = {}
    for idx, entries in state["state"].items():
        for key, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{idx}.{key}"] = value.detach().cpu().contiguous().clone()
            else:
                scalars.setdefault(str(idx), {})[key] = value
    return {"param_groups": state["param_groups"], "scalars": scalars}


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {str(path)!r}: {problem}")


def _read_header(path: Path, data: bytes) -> dict:
    """Parse and check the safetensors header of ``data`` against the file size, without trusting it."""
    if len(data) < 8:
        raise _fail(path, f"not a safetensors file: {len(data)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(data[:8], "little")
    if n > MAX_HEADER_BYTES or n > len(data) - 8:
        raise _fail(path, f"not a safetensors file or truncated: header length field {n} exceeds the "
                    f"{len(data) - 8} bytes that follow it")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"not a safetensors file: header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _fail(path, "not a safetensors file: header is not a JSON object")
    payload = len(data) - 8 - n
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        _check_entry(path, name, spec, payload)
    return header


def _check_entry(path: Path, name: str, spec, payload: int) -> None:
    if not isinstance(spec, dict) or spec.get("dtype") not in _DTYPE_BYTES:
        raise _fail(path, f"tensor {name!r} has no supported dtype")
    shape, offsets = spec.get("shape"), spec.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
        raise _fail(path, f"tensor {name!r} has an invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
        raise _fail(path, f"tensor {name!r} has invalid data offsets {offsets!r}")
    numel = 1
    for s in shape:
        numel *= s
    begin, end = offsets
    if not 0 <= begin <= end <= payload:
        raise _fail(path, f"truncated: tensor {name!r} spans bytes {begin}..{end} of a {payload}-byte payload")
    if end - begin != numel * _DTYPE_BYTES[spec["dtype"]]:
        raise _fail(path, f"tensor {name!r} of shape {shape} needs {numel * _DTYPE_BYTES[spec['dtype']]} "
                    f"bytes but the header gives it {end - begin}")


def _meta_json(path: Path, meta: dict, key: str, required: bool = True):
    if key not in meta:
        if required:
            raise _fail(path, f"metadata lacks '{key}'")
        return None
    try:
        return json.loads(meta[key])
    except json.JSONDecodeError as exc:
        raise _fail(path, f"metadata '{key}' is not valid JSON ({exc})") from None


def load_checkpoint(path: str | Path, expected_config: ModelConfig | None = None,
                    action_mode: ActionMode | str | None = None) -> Checkpoint:
    """Read and validate a checkpoint written by :func:`save_checkpoint` (never unpickles anything).

    Args:
        path: the ``.safetensors`` file.
        expected_config: when given, the checkpoint's model config must equal it.
        action_mode: when given, the model must take this kind of action (``model_config.graph.action_mode``;
            a config without one reads as ``WRENCH``, see :meth:`ModelConfig.from_dict`).

    Raises:
        CheckpointError: missing, unreadable, not safetensors, truncated, foreign, of another format
            version, not matching ``expected_config`` or ``action_mode``, or holding non-finite weights.
    """
    path = Path(path)
    data = read_bounded(path, MAX_FILE_BYTES, lambda problem: _fail(path, problem))
    header = _read_header(path, data)
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _fail(path, f"foreign safetensors file, not a contactkit GNN checkpoint (format {found!r}, "
                    f"expected {FORMAT!r})")
    version = meta.get("format_version")
    if version not in {str(v) for v in READABLE_VERSIONS}:
        raise _fail(path, f"format version {version!r}, this contactkit reads {list(READABLE_VERSIONS)}")
    try:
        config = ModelConfig.from_dict(_meta_json(path, meta, "model_config"))
        spec_d = _meta_json(path, meta, "step_spec")
        step_spec = StepSpec(spec_d["dt"], tuple(spec_d["gravity"]))
    except (ContactkitError, KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"invalid model configuration in metadata ({exc})") from None
    if expected_config is not None and config != expected_config:
        raise _fail(path, f"model config mismatch: {_config_diff(config, expected_config)}")
    if action_mode is not None and config.graph.action_mode != ActionMode(action_mode):
        raise _fail(path, f"the model takes {config.graph.action_mode.value!r} actions, but "
                    f"{ActionMode(action_mode).value!r} actions were asked for")
    try:
        tensors = safetensors.torch.load(data)
    except Exception as exc:  # the header was checked; anything left is corruption in the payload
        raise _fail(path, f"corrupt tensor data ({exc})") from None
    model_state = upgrade_state_names({k[6:]: v for k, v in tensors.items() if k.startswith("model.")},
                                      int(version))
    for name, value in model_state.items():
        if value.is_floating_point() and not torch.isfinite(value).all():
            raise _fail(path, f"tensor {name!r} holds NaN or Inf")
    opt_meta = _meta_json(path, meta, "optimizer", required=False)
    return Checkpoint(path, config, step_spec, model_state, _optimizer_state(path, opt_meta, tensors),
                      _meta_json(path, meta, "train_state"))


def upgrade_state_names(state: dict[str, torch.Tensor], version: int) -> dict[str, torch.Tensor]:
    """Model tensor names of a checkpoint of format ``version`` renamed to this version's.

    Version 1 kept each processor MLP directly under its edge or node type (``layers.3.edge.om.0.weight``);
    version 2 wraps it in a block (``layers.3.edge.om.mlp.0.weight``). Values and the parameter order (hence
    the optimizer state, indexed by it) are unchanged.
    """
    if version >= 2:
        return dict(state)
    return {_V1_BLOCK_PARAM.sub(r"\1.mlp.\2", k): v for k, v in state.items()}


def _config_diff(found: ModelConfig, expected: ModelConfig) -> str:
    a, b = _flatten(found.to_dict()), _flatten(expected.to_dict())
    diffs = [f"{k} is {a.get(k)!r}, expected {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "; ".join(diffs)


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _optimizer_state(path: Path, opt_meta: dict | None, tensors: dict[str, torch.Tensor]) -> dict | None:
    if opt_meta is None:
        return None
    try:
        state: dict[int, dict] = {}
        for key, value in tensors.items():
            if key.startswith("optim."):
                _, idx, name = key.split(".", 2)
                state.setdefault(int(idx), {})[name] = value
        for idx, entries in opt_meta["scalars"].items():
            state.setdefault(int(idx), {}).update(entries)
        groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in opt_meta["param_groups"]]
    except (KeyError, ValueError, TypeError) as exc:
        raise _fail(path, f"optimizer state is malformed ({exc})") from None
    return {"state": state, "param_groups": groups}


def restore_model(ckpt: Checkpoint, device: torch.device | str = "cpu") -> EncodeProcessDecode:
    """Build the model of ``ckpt.model_config`` and load its weights and normalisers, strictly.

    Raises:
        CheckpointError: a tensor is missing, unexpected, or of the wrong shape (named).
        InvalidInputError: ``device`` is not usable here (:func:`check_device`).
    """
    check_device(device)
    model = EncodeProcessDecode(ckpt.model_config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(ckpt.model_state))
    unexpected = sorted(set(ckpt.model_state) - set(expected))
    if missing or unexpected:
        raise _fail(ckpt.path, f"tensors do not match the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for name, value in expected.items():
        got = ckpt.model_state[name]
        if got.shape != value.shape or got.dtype != value.dtype:
            raise _fail(ckpt.path, f"tensor {name!r} is {tuple(got.shape)} {got.dtype}, the model needs "
                        f"{tuple(value.shape)} {value.dtype}")
    model.load_state_dict(ckpt.model_state)
    return model.to(device)


def restore_optimizer(ckpt: Checkpoint, optimizer: torch.optim.Optimizer) -> None:
    """Load the saved optimizer state into ``optimizer`` (built over the restored model's parameters).

    Raises:
        CheckpointError: the checkpoint has no optimizer state, or it does not fit ``optimizer``.
    """
    if ckpt.optimizer_state is None:
        raise _fail(ckpt.path, "holds no optimizer state to resume from")
    try:
        optimizer.load_state_dict(ckpt.optimizer_state)
    except (ValueError, KeyError, RuntimeError) as exc:
        raise _fail(ckpt.path, f"optimizer state does not fit the optimizer ({exc})") from None


def rng_state_to_json(rng: np.random.Generator) -> dict:
    """JSON-compatible state of a numpy Generator (to store in ``train_state``)."""
    return rng.bit_generator.state


def rng_from_json(state: dict) -> np.random.Generator:
    """A numpy Generator restored from :func:`rng_state_to_json` output."""
    try:
        name = state["bit_generator"]
        if name not in _BIT_GENERATORS:
            raise ValueError(f"unknown bit generator {name!r}")
        bit_gen = getattr(np.random, name)()
        bit_gen.state = state
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise CheckpointError(f"saved random generator state is malformed ({exc})") from None
    return np.random.Generator(bit_gen)
