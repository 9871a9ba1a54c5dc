"""A checkpoint written before the processor was split into per-type blocks (format version 1) still loads.

``data/legacy_v1_act_fignet.safetensors`` was written by ``save_checkpoint`` at commit 1fc42cf (MLPs named
``layers.<l>.edge.<type>.<i>.*``): a tiny Act-FIGNet (latent 8, 1 hidden layer, 2 steps, weights from seed 3)
with normalisers fitted to the batch below and one Adam step; ``train_state['parameter_order']`` holds that
code's ``named_parameters()`` order. ``data/legacy_v1_act_fignet_outputs.safetensors`` holds that model's
outputs on the batch, computed by the same code.
"""

from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from contactkit.model import ActionMode
from contactkit.models.gnn.checkpoint import (
    FORMAT_VERSION,
    load_checkpoint,
    restore_model,
    restore_optimizer,
    save_checkpoint,
    upgrade_state_names,
)
from contactkit.models.gnn.kinematics import prepare_scene
from contactkit.models.gnn.samples import make_batch, prepare_window

from ._gnn_synthetic import STEP, box_scene, make_windows

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "legacy_v1_act_fignet.safetensors"
TOL = {"atol": 1e-6, "rtol": 1e-5}


@pytest.fixture(scope="module")
def legacy():
    ckpt = load_checkpoint(LEGACY)
    arrays = prepare_scene(box_scene(), STEP)
    windows = make_windows(np.random.default_rng(0), 2, 2)
    items = [(arrays, *prepare_window(arrays, w, ActionMode.WRENCH), None) for w in windows]
    return ckpt, make_batch(items, ckpt.model_config.graph), safetensors.torch.load_file(
        str(DATA / "legacy_v1_act_fignet_outputs.safetensors"))


def test_version_1_checkpoint_predicts_as_before(legacy):
    ckpt, batch, expected = legacy
    with torch.no_grad():
        accel, wrench = restore_model(ckpt)(batch.graph)
    torch.testing.assert_close(accel, expected["accel"], **TOL)
    torch.testing.assert_close(wrench, expected["wrench"], **TOL)


def test_parameter_order_and_optimizer_state_survive(legacy):
    ckpt, _, _ = legacy
    model = restore_model(ckpt)
    old_order = ckpt.train_state["parameter_order"]
    assert any(".edge.om.0." in k for k in old_order)  # the fixture really is of the old layout
    assert list(upgrade_state_names(dict.fromkeys(old_order), 1)) == [k for k, _ in model.named_parameters()]
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    restore_optimizer(ckpt, opt)
    assert len(opt.state) == len(ckpt.optimizer_state["state"]) > 0
    for p, state in opt.state.items():  # parameters the loss reached; others have no state
        assert state["exp_avg"].shape == p.shape


def test_resaved_checkpoint_is_current_version_and_equal(legacy, tmp_path):
    ckpt, batch, expected = legacy
    path = save_checkpoint(tmp_path / "new.safetensors", restore_model(ckpt), ckpt.step_spec)
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        header = fh.read(n).decode()
    assert f'"format_version":"{FORMAT_VERSION}"' in header.replace(" ", "") and FORMAT_VERSION == 2
    again = load_checkpoint(path)
    assert any(".edge.face.mlp." in k for k in again.model_state)
    with torch.no_grad():
        accel, _ = restore_model(again)(batch.graph)
    torch.testing.assert_close(accel, expected["accel"], **TOL)


def test_renaming_touches_only_version_1_processor_mlps():
    names = ["layers.0.edge.om.0.weight", "layers.12.node.mesh.3.bias", "encoders.mesh.0.weight",
             "norm.mesh_x.count", "layers.1.edge.face.mlp.0.weight"]
    assert list(upgrade_state_names(dict.fromkeys(names), 1)) == [
        "layers.0.edge.om.mlp.0.weight", "layers.12.node.mesh.mlp.3.bias", "encoders.mesh.0.weight",
        "norm.mesh_x.count", "layers.1.edge.face.mlp.0.weight"]
    assert list(upgrade_state_names(dict.fromkeys(names), 2)) == names
