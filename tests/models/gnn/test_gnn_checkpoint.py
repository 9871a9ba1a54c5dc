"""Checkpoints: round trip, resumable optimizer state, and refusal of corrupt, foreign or mismatched files."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from contactkit.errors import CheckpointError
from contactkit.model import ActionMode
from contactkit.models.gnn.checkpoint import (
    load_checkpoint,
    restore_model,
    restore_optimizer,
    rng_from_json,
    rng_state_to_json,
    save_checkpoint,
)
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import StepSpec, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.samples import make_batch, prepare_window
from contactkit.models.gnn.train import TrainConfig, loss_terms

from ._gnn_synthetic import STEP, box_scene, make_windows

DATA = Path(__file__).parent / "data"
CFG = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH),
                  latent_dim=16, hidden_dim=16, mlp_layers=1,
                  message_passing_steps=2)


@pytest.fixture(scope="module")
def batch():
    arrays = prepare_scene(box_scene(), STEP)
    windows = make_windows(np.random.default_rng(0), 2, 2)
    return make_batch([(arrays, *prepare_window(arrays, w, ActionMode.WRENCH), None) for w in windows], CFG.graph)


def _trained(batch, steps=3):
    model = EncodeProcessDecode(CFG, torch.Generator().manual_seed(0))
    model.update_normalizers(batch.graph, batch.accel, batch.wrench)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    for _ in range(steps):
        opt.zero_grad()
        loss_terms(model, batch, TrainConfig(CFG))["loss"].backward()
        opt.step()
    return model, opt


def test_round_trip_restores_weights_normalisers_and_optimizer(tmp_path, batch):
    model, opt = _trained(batch)
    rng = np.random.default_rng(5)
    rng.normal(size=3)
    path = save_checkpoint(tmp_path / "m.safetensors", model, STEP, opt, {"step": 3, "rng": rng_state_to_json(rng)})
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]  # no temporary file left behind
    ckpt = load_checkpoint(path, expected_config=CFG)
    assert ckpt.model_config == CFG and ckpt.step_spec == STEP and ckpt.train_state["step"] == 3
    restored = restore_model(ckpt)
    with torch.no_grad():
        for a, b in zip(model(batch.graph), restored(batch.graph), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert rng_from_json(ckpt.train_state["rng"]).normal() == rng.normal()
    # resuming: one more step from either copy gives the same weights
    opt2 = torch.optim.Adam(restored.parameters(), lr=1e-3, foreach=True)
    restore_optimizer(ckpt, opt2)
    for m, o in ((model, opt), (restored, opt2)):
        o.zero_grad()
        loss_terms(m, batch, TrainConfig(CFG))["loss"].backward()
        o.step()
    for p, q in zip(model.parameters(), restored.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_contact_model_from_checkpoint(tmp_path, batch):
    model, _ = _trained(batch, 1)
    step = StepSpec(0.02, (0.0, 0.0, -9.81))
    path = save_checkpoint(tmp_path / "m.safetensors", model, step)
    wrapper = GnnContactModel.from_checkpoint(path, box_scene(), action_mode=ActionMode.WRENCH)
    assert wrapper.control_dt == 0.02 and wrapper.history == 3


@pytest.mark.parametrize("name", ["random_bytes.safetensors", "header_length_lies.safetensors",
                                  "huge_shape_header.safetensors", "truncated_payload.safetensors"])
def test_bad_input_files_are_refused(name):
    with pytest.raises(CheckpointError, match=name):
        load_checkpoint(DATA / name)


def test_pickle_is_never_run(tmp_path, capfd):
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        load_checkpoint(DATA / "code_running.pt")
    assert "ran code" not in capfd.readouterr().out


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(tmp_path / "nothing.safetensors")
    (tmp_path / "empty.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="shorter than"):
        load_checkpoint(tmp_path / "empty.safetensors")


def test_foreign_safetensors_is_refused(tmp_path):
    path = tmp_path / "foreign.safetensors"
    safetensors.torch.save_file({"w": torch.zeros(3)}, path, metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="foreign"):
        load_checkpoint(path)


def test_truncated_own_checkpoint_is_refused(tmp_path, batch):
    model, opt = _trained(batch, 1)
    path = save_checkpoint(tmp_path / "m.safetensors", model, STEP, opt)
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) - 3):
        (tmp_path / "cut.safetensors").write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="cut.safetensors"):
            load_checkpoint(tmp_path / "cut.safetensors")


def test_mismatched_config_is_refused(tmp_path, batch):
    model, _ = _trained(batch, 1)
    path = save_checkpoint(tmp_path / "m.safetensors", model, STEP)
    other = replace(CFG, latent_dim=32)
    with pytest.raises(CheckpointError, match="latent_dim is 16, expected 32"):
        load_checkpoint(path, expected_config=other)
    with pytest.raises(CheckpointError, match="no optimizer state"):
        restore_optimizer(load_checkpoint(path), torch.optim.Adam(model.parameters()))


def _rewrite(src: Path, dst: Path, edit) -> Path:
    with safetensors.safe_open(src, "pt") as fh:
        meta = dict(fh.metadata())
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    edit(meta, tensors)
    safetensors.torch.save_file(tensors, dst, metadata=meta)
    return dst


def test_tampered_contents_are_refused(tmp_path, batch):
    model, _ = _trained(batch, 1)
    src = save_checkpoint(tmp_path / "m.safetensors", model, STEP)
    name = next(iter(model.state_dict()))

    def wrong_shape(meta, t):
        t[f"model.{name}"] = torch.zeros(2, 2)

    def missing(meta, t):
        del t[f"model.{name}"]

    def nan(meta, t):
        t[f"model.{name}"] = torch.full_like(t[f"model.{name}"], float("nan"))

    def future(meta, t):
        meta["format_version"] = "99"

    def bad_config(meta, t):
        meta["model_config"] = json.dumps({"latent_dim": 3})

    cases = [(wrong_shape, "the model needs"), (missing, "missing"), (nan, "NaN"), (future, "format version"),
             (bad_config, "invalid model configuration")]
    for edit, message in cases:
        path = _rewrite(src, tmp_path / f"{edit.__name__}.safetensors", edit)
        with pytest.raises(CheckpointError, match=message):
            restore_model(load_checkpoint(path))


def test_overwrite_is_atomic(tmp_path, batch, monkeypatch):
    """A write that fails before the final rename leaves the previous checkpoint intact and no debris."""
    model, _ = _trained(batch, 1)
    path = save_checkpoint(tmp_path / "m.safetensors", model, STEP)
    before = path.read_bytes()

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("contactkit.files.os.replace", failing_replace)
    newer, _ = _trained(batch, 3)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, newer, STEP)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]
