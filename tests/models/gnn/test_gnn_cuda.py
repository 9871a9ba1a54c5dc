"""The model on a CUDA device agrees with the CPU and trains there (skipped where there is no GPU)."""

import numpy as np
import pytest
import torch

from contactkit.model import ActionMode
from contactkit.models.gnn.checkpoint import load_checkpoint, restore_model
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.samples import make_batch, prepare_window
from contactkit.models.gnn.train import TrainConfig, train
from contactkit.state import BodyState

from ._gnn_synthetic import STEP, box_scene, flight_trajectory, make_windows

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA_TOL = 1e-4  # float32 reductions in another order
MODEL = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH),
                    latent_dim=32, hidden_dim=32, mlp_layers=2,
                    message_passing_steps=3)


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_cuda_forward_matches_cpu(variant):
    cfg = ModelConfig(GraphConfig(variant, 3, 0.01, ActionMode.WRENCH), latent_dim=32, hidden_dim=32, mlp_layers=2,
                      message_passing_steps=3)
    arrays = prepare_scene(box_scene(), STEP)
    windows = make_windows(np.random.default_rng(0), 3, 3)
    batch = make_batch([(arrays, *prepare_window(arrays, w, ActionMode.WRENCH), None) for w in windows], cfg.graph)
    model = EncodeProcessDecode(cfg, torch.Generator().manual_seed(0))
    model.update_normalizers(batch.graph, batch.accel, batch.wrench)
    with torch.no_grad():
        cpu = model(batch.graph)
        gpu = model.to("cuda")(batch.to("cuda").graph)
    for a, b in zip(cpu, gpu, strict=True):
        torch.testing.assert_close(b.cpu(), a, atol=CUDA_TOL, rtol=CUDA_TOL)


def test_train_on_cuda_and_step_anywhere(tmp_path):
    """Same seed, same batches: the first CUDA losses equal the CPU ones; the checkpoint steps on both."""
    rng = np.random.default_rng(1)
    config = TrainConfig(MODEL, batch_size=8, num_steps=5, val_every=5, checkpoint_every=5, log_every=5,
                         norm_accumulation_steps=2, seed=0)
    windows = make_windows(rng, 8, 8), make_windows(rng, 2, 2)
    result = train(config, *windows, tmp_path / "gpu", "cuda", scene=box_scene(), step=STEP)
    on_cpu = train(config, *windows, tmp_path / "cpu", "cpu", scene=box_scene(), step=STEP)
    np.testing.assert_allclose(result.losses[:3], on_cpu.losses[:3], rtol=1e-3)
    ckpt = load_checkpoint(result.last_checkpoint, expected_config=MODEL)
    history = BodyState.from_array(np.stack([flight_trajectory(rng, 3)[0][:3] for _ in range(4)]))
    action = rng.normal(size=(4, 6))
    s_cpu, w_cpu = GnnContactModel(restore_model(ckpt), box_scene(), ckpt.step_spec).step(history, action)
    s_gpu, w_gpu = GnnContactModel(restore_model(ckpt), box_scene(), ckpt.step_spec, "cuda").step(history, action)
    np.testing.assert_allclose(s_gpu.pos, s_cpu.pos, atol=1e-6)
    np.testing.assert_allclose(w_gpu, w_cpu, atol=1e-3 * (1 + np.abs(w_cpu).max()))
