"""Act-FIGNet / FIGNet+ with the previous command among the action features, trained on tared labels.

``data/act_fignet_hexagon_target_outputs.safetensors`` holds a 4-step rollout of 6 windows over the hexagonal slot
by the committed ``models/act-fignet-hexagon-target/best.safetensors``, computed by the code of commit b298a00
(before ``GraphConfig.previous_command`` existed) with one torch thread: the checkpoint must keep predicting it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.training import training_data
from contactkit.model import ActionMode
from contactkit.models.gnn import GnnContactModel, load_checkpoint
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.train import TrainConfig, train
from contactkit.physics import load_world
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

from ._gnn_synthetic import STEP, box_scene, flight_trajectory

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "models" / "act-fignet-hexagon-target" / "best.safetensors"
REFERENCE = Path(__file__).parent / "data" / "act_fignet_hexagon_target_outputs.safetensors"


@pytest.mark.skipif(not COMMITTED.is_file(), reason="the committed Act-FIGNet checkpoint is absent")
def test_committed_checkpoint_without_the_flag_predicts_as_before():
    torch.set_num_threads(1)
    ref = {k: v.numpy() for k, v in safetensors.torch.load_file(str(REFERENCE)).items()}
    assert load_checkpoint(COMMITTED).model_config.graph.previous_command is False
    model = GnnContactModel.from_checkpoint(COMMITTED, peg_in_hole("hexagon", 1e-3))
    model.prime(np.full((6, 6), 0.01))  # a primed or remembered command changes nothing without the flag
    states, readings = model.rollout(BodyState.from_array(ref["windows"]), ref["actions"])
    np.testing.assert_allclose(states.as_array(), ref["states"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(readings, ref["readings"], rtol=0, atol=1e-12)


def _model(previous: bool, variant=ModelVariant.ACT_FIGNET) -> GnnContactModel:
    cfg = ModelConfig(GraphConfig(variant, 3, 0.01, ActionMode.WRENCH, previous), latent_dim=16, hidden_dim=16,
                      mlp_layers=1, message_passing_steps=2)
    return GnnContactModel(EncodeProcessDecode(cfg, generator=torch.Generator().manual_seed(0)), box_scene(), STEP)


def _histories(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.stack([flight_trajectory(rng, 3)[0][:3] for _ in range(n)])


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_continued_rollout_reads_the_remembered_command_a_fresh_history_holds_the_current(variant):
    model = _model(True, variant)
    rng = np.random.default_rng(4)
    hist = _histories(3)
    first, second = rng.normal(0, 2.0, (3, 6)), rng.normal(0, 2.0, (3, 6))
    nxt, _ = model.step(BodyState.from_array(hist), first)
    moved = np.concatenate([hist[:, 1:], nxt.as_array()[:, None]], axis=1)
    moved[1, -1, 0] += 1e-9  # element 1's history no longer ends at the returned state
    cont_state, cont_reading = model.step(BodyState.from_array(moved), second)

    def fresh(previous):
        other = _model(True, variant)
        other.prime(previous)
        return other.step(BodyState.from_array(moved), second)

    told_state, told_reading = fresh(np.stack([first[0], second[1], first[2]]))
    np.testing.assert_array_equal(cont_state.as_array(), told_state.as_array())
    np.testing.assert_array_equal(cont_reading, told_reading)
    held_state, _ = fresh(second)  # what the continued elements would read without the memory
    assert not np.allclose(cont_state.as_array()[[0, 2]], held_state.as_array()[[0, 2]], rtol=0, atol=1e-9)
    unprimed = _model(True, variant).step(BodyState.from_array(moved), second)[0]
    np.testing.assert_array_equal(unprimed.as_array(), held_state.as_array())  # fallback: the current command


def test_training_smoke_with_tared_labels_and_the_previous_command(tmp_path):
    path = tmp_path / "d.h5"
    collect(CollectSpec(episodes=2, steps=12, seed=1, world=load_world("target")), str(path))
    data = training_data(path, tare=True)
    assert data.windows.labels["tared"] is True and "prev_command" in data.windows[0]
    model = ModelConfig(GraphConfig(ModelVariant.FIGNET_PLUS, previous_command=True), latent_dim=8, hidden_dim=8,
                        mlp_layers=1, message_passing_steps=1)
    config = TrainConfig(model, batch_size=2, num_steps=3, norm_accumulation_steps=2, val_every=3,
                         checkpoint_every=3, log_every=1, val_max_windows=2)
    result = train(config, data.windows, data.windows, tmp_path / "run", scene=data.scenes, step=data.step)
    assert result.step == 3 and np.isfinite(result.losses).all()
    ckpt = load_checkpoint(result.last_checkpoint)
    assert ckpt.model_config.graph.previous_command is True
    assert ckpt.train_state["labels"] == data.windows.labels
    gnn = GnnContactModel.from_checkpoint(result.last_checkpoint, data.scenes[0])
    hist = BodyState.from_array(data.windows[0]["history"].double().numpy()[None])
    state, reading = gnn.step(hist, data.windows[0]["command"].double().numpy()[None])
    assert np.all(np.isfinite(state.as_array())) and reading.shape == (1, 6)


def test_a_run_saved_before_the_flag_existed_resumes(tmp_path):
    """A checkpoint whose stored configs lack ``previous_command`` reads it as False, and its run continues."""
    import json

    from safetensors import safe_open

    from ._gnn_synthetic import make_windows

    cfg = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH), latent_dim=8, hidden_dim=8,
                      mlp_layers=1, message_passing_steps=1)
    config = TrainConfig(cfg, batch_size=2, num_steps=2, norm_accumulation_steps=1, val_every=2, checkpoint_every=2,
                         log_every=1, val_max_windows=2)
    windows = make_windows(np.random.default_rng(0), 2, 2)
    last = train(config, windows, windows, tmp_path, scene=box_scene(), step=STEP).last_checkpoint
    with safe_open(str(last), "pt") as f:
        meta, tensors = dict(f.metadata()), {k: f.get_tensor(k) for k in f.keys()}
    model_config, state = json.loads(meta["model_config"]), json.loads(meta["train_state"])
    del model_config["graph"]["previous_command"], state["config"]["model"]["graph"]["previous_command"]
    meta.update(model_config=json.dumps(model_config), train_state=json.dumps(state))
    safetensors.torch.save_file(tensors, str(last), metadata=meta)
    assert load_checkpoint(last).model_config == cfg
    result = train(TrainConfig(**{**config.__dict__, "num_steps": 3}), windows, windows, tmp_path, scene=box_scene(),
                   step=STEP)
    assert result.step == 3 and len(result.losses) == 1
