"""EPD stack: normalisers, output shapes, permutation of batches, and overfitting a tiny dataset."""

import numpy as np
import pytest
import torch

from contactkit.model import ActionMode
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.normalize import STD_EPSILON, RunningNormalizer
from contactkit.models.gnn.samples import make_batch, prepare_window
from contactkit.models.gnn.train import TrainConfig, loss_terms

from ._gnn_synthetic import STEP, box_scene, make_windows

OVERFIT_FACTOR = 100.0
OVERFIT_MAX_STEPS = 400


def tiny_config(variant=ModelVariant.ACT_FIGNET) -> ModelConfig:
    return ModelConfig(GraphConfig(variant, 3, 0.01, ActionMode.WRENCH), latent_dim=32, hidden_dim=32, mlp_layers=2,
                       message_passing_steps=2)


@pytest.fixture(scope="module")
def data():
    arrays = prepare_scene(box_scene(), STEP)
    windows = make_windows(np.random.default_rng(0), 4, 4)
    return [(arrays, *prepare_window(arrays, w, ActionMode.WRENCH), None) for w in windows]


def test_normalizer_statistics_and_inverse():
    rng = np.random.default_rng(1)
    x = rng.normal([1.0, -2.0, 0.0], [0.5, 3.0, 0.0], (200, 3))
    norm = RunningNormalizer(3)
    t = torch.tensor(x, dtype=torch.float32)
    torch.testing.assert_close(norm(t), t)  # identity before any data
    norm.update(t[:120])
    norm.update(t[120:])
    xf = t.double().numpy()
    np.testing.assert_allclose(norm.mean().numpy(), xf.mean(0), rtol=1e-12)
    np.testing.assert_allclose(norm.std().numpy(), np.maximum(xf.std(0), STD_EPSILON), rtol=1e-9)
    y = norm(t)
    np.testing.assert_allclose(y[:, :2].double().mean(0).numpy(), 0.0, atol=1e-6)
    assert y[:, 2].abs().max() == 0  # a constant column maps to zero
    torch.testing.assert_close(norm.inverse(y), t)


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_output_shapes_and_batch_independence(data, variant):
    cfg = tiny_config(variant)
    model = EncodeProcessDecode(cfg, torch.Generator().manual_seed(0))
    batch = make_batch(data, cfg.graph)
    model.update_normalizers(batch.graph, batch.accel, batch.wrench)
    accel, wrench = model(batch.graph)
    assert accel.shape == (8 * 8, 3) and wrench.shape == (8, 6)
    # a graph's prediction does not depend on the other graphs of its batch
    single = make_batch(data[5:6], cfg.graph)
    a1, w1 = model(single.graph)
    torch.testing.assert_close(a1, accel[40:48], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w1, wrench[5:6], atol=1e-5, rtol=1e-5)


def test_same_generator_same_weights():
    a = EncodeProcessDecode(tiny_config(), torch.Generator().manual_seed(7))
    b = EncodeProcessDecode(tiny_config(), torch.Generator().manual_seed(7))
    c = EncodeProcessDecode(tiny_config(), torch.Generator().manual_seed(8))
    pa, pb, pc = (torch.cat([p.flatten() for p in m.parameters()]) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_tiny_model_overfits_tiny_dataset(data, variant):
    """Loss 8 on 8 fixed windows falls at least 100x (both variants)."""
    cfg = tiny_config(variant)
    train_cfg = TrainConfig(cfg)
    model = EncodeProcessDecode(cfg, torch.Generator().manual_seed(0))
    batch = make_batch(data, cfg.graph)
    model.update_normalizers(batch.graph, batch.accel, batch.wrench)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, foreach=True)
    first = last = None
    for _ in range(OVERFIT_MAX_STEPS):
        loss = loss_terms(model, batch, train_cfg)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = loss.item()
        first = first if first is not None else last
        if last < first / OVERFIT_FACTOR:
            break
    assert last < first / OVERFIT_FACTOR, f"loss fell only from {first:.3g} to {last:.3g}"
