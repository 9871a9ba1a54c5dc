"""The planner's fast path: one batched graph of a population from the scene's cached static structures
(:mod:`contactkit.models.gnn.population`) and the split first layer of the edge MLPs. Oracle: the general
per-window constructor (:func:`build_graphs`) and the concatenating first layer, on random tool states in and
above a slot (free space and contact)."""

from dataclasses import fields

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn import population as population_module
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.graph import Graph, GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import StepSpec
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig, split_first_layer
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

STEP = StepSpec(0.05)
OUT_RTOL = 1e-6
"""Predictions of the two paths agree to this fraction of their largest magnitude (float32 rounding only)."""


def _model(variant: ModelVariant, scene, previous: bool = False) -> GnnContactModel:
    cfg = ModelConfig(GraphConfig(variant, 3, 0.01, ActionMode.WRENCH, previous), latent_dim=16, hidden_dim=16,
                      mlp_layers=2, message_passing_steps=3)
    model = GnnContactModel(EncodeProcessDecode(cfg, generator=torch.Generator().manual_seed(1)), scene, STEP)
    windows, wrench = _windows(scene, np.random.default_rng(9), 16)  # feature statistics of this scene's graphs
    graph = model.input_graph(windows, wrench, fast=False, prev_wrench=-wrench if previous else None)
    gen = torch.Generator().manual_seed(2)
    model.model.update_normalizers(graph, 1e-4 * torch.randn(graph.tool_nodes.shape[0], 3, generator=gen),
                                   torch.randn(16, 6, generator=gen))
    return model


def _windows(scene, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` windows (n, 3, 13) from deep in the slot to 4 cm above it, tilted a little, and wrenches (n, 6)."""
    base = scene.target_pos + np.stack([rng.normal(0, 2e-3, n), rng.normal(0, 2e-3, n),
                                        np.linspace(0.0, 0.06, n)], axis=1)
    pos = base[:, None] + rng.normal(0, 3e-4, (n, 3, 3))
    quat = rotvec_to_quat(rng.normal(0, 0.03, (n, 1, 3)) + rng.normal(0, 2e-3, (n, 3, 3)))
    windows = np.concatenate([pos, quat, rng.normal(0, 0.05, (n, 3, 6))], axis=-1)
    return windows, rng.normal(0, 2.0, (n, 6))


def _assert_same_graph(a: Graph, b: Graph) -> None:
    assert a.num_graphs == b.num_graphs
    for f in fields(Graph):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, int):
            continue
        assert x.shape == y.shape, f.name
        if x.dtype == torch.int64:
            assert torch.equal(x, y), f"{f.name}: edges differ"
        else:
            torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-9, msg=f.name)


@pytest.mark.parametrize("previous", [False, True])
@pytest.mark.parametrize("variant", list(ModelVariant))
@pytest.mark.parametrize("shape", ["triangle", "hexagon"])
def test_population_graph_equals_the_per_window_graphs(variant, shape, previous):
    """Same edges in the same order (so identical as sets), same features and predictions, in and out of contact
    (with the previous action's channels too)."""
    scene = peg_in_hole(shape, 5e-3)
    model = _model(variant, scene, previous)
    windows, wrench = _windows(scene, np.random.default_rng(0), 24)
    prev = np.random.default_rng(1).normal(0, 2.0, wrench.shape) if previous else None
    fast = model.input_graph(windows, wrench, prev_wrench=prev)
    slow = model.input_graph(windows, wrench, fast=False, prev_wrench=prev)
    _assert_same_graph(fast, slow)
    per_graph = torch.bincount(slow.face_senders[:, 0] // model.population.num_mesh, minlength=24)
    assert (per_graph > 0).sum() >= 6 and (per_graph == 0).sum() >= 3  # contact and free space both covered
    (a_fast, w_fast), (a_slow, w_slow) = model.model.predict(fast), model.model.predict(slow)
    for x, y in ((a_fast, a_slow), (w_fast, w_slow)):
        assert torch.allclose(x, y, rtol=0, atol=OUT_RTOL * float(y.abs().max()))


def test_large_meshes_take_the_general_broad_phase(monkeypatch):
    """Above BRUTE_FORCE_PAIRS face pairs the fast path hands the face edges to the k-d tree constructor."""
    scene = peg_in_hole("square", 5e-3)
    model = _model(ModelVariant.ACT_FIGNET, scene)
    windows, wrench = _windows(scene, np.random.default_rng(1), 8)
    slow = model.input_graph(windows, wrench, fast=False)
    monkeypatch.setattr(population_module, "BRUTE_FORCE_PAIRS", 0)
    _assert_same_graph(model.input_graph(windows, wrench), slow)


def test_steps_use_the_fast_path_and_refuse_bad_quaternions():
    scene = peg_in_hole("square", 5e-3)
    model = _model(ModelVariant.ACT_FIGNET, scene)
    windows, wrench = _windows(scene, np.random.default_rng(2), 4)
    state, reading = model.step(BodyState.from_array(windows), wrench)
    assert state.pos.shape == (4, 3) and np.all(np.isfinite(reading))
    bad = windows.copy()
    bad[1, 2, 3:7] *= 1.01
    with pytest.raises(InvalidInputError, match="unit norm"):
        model.input_graph(bad, wrench)
    with pytest.raises(InvalidInputError, match="shape"):
        model.input_graph(windows[:, :2], wrench)


def test_split_first_layer_equals_the_concatenation():
    """Value and gradients of the split first layer equal those of Linear(cat([edge, gathered nodes...]))."""
    gen = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(4 + 6 * 5 + 3, 7)
    edge = torch.randn(40, 4, generator=gen, requires_grad=True)
    mesh = torch.randn(9, 5, generator=gen, requires_grad=True)
    other = torch.randn(3, 3, generator=gen, requires_grad=True)
    ids = torch.randint(0, 9, (40, 6), generator=gen)
    ids_other = torch.randint(0, 3, (40, 1), generator=gen)
    split = split_first_layer(lin, edge, [(mesh, ids), (other, ids_other)])
    ref = lin(torch.cat([edge, *(mesh[ids[:, k]] for k in range(6)), other[ids_other[:, 0]]], dim=-1))
    torch.testing.assert_close(split, ref, rtol=1e-5, atol=1e-6)
    g_split = torch.autograd.grad(split.square().sum(), (edge, mesh, other, lin.weight))
    g_ref = torch.autograd.grad(ref.square().sum(), (edge, mesh, other, lin.weight))
    for a, b in zip(g_split, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", ["square", "hexagon"])
def test_rollout_on_the_fast_path_equals_the_reference_path(monkeypatch, shape):
    """A short closed-loop rollout of a small population: predicted states and F/T readings of the fast path
    (population graph from cached static structures, untouched static bodies pruned) equal those of the full
    per-window reference graphs to 1e-6 of their magnitude, in and out of contact."""
    scene = peg_in_hole(shape, 5e-3)
    model = _model(ModelVariant.ACT_FIGNET, scene)
    windows, _ = _windows(scene, np.random.default_rng(4), 8)
    actions = np.random.default_rng(5).normal(0, 2.0, (8, 4, 6))
    build = GnnContactModel.input_graph
    rows = {True: [], False: []}

    def recorded(self, windows, wrench, fast=True, prune=False, prev_wrench=None):
        graph = build(self, windows, wrench, fast=fast, prune=prune, prev_wrench=prev_wrench)
        rows[fast].append((graph.mesh_x.shape[0], graph.face_x.shape[0]))
        return graph

    monkeypatch.setattr(GnnContactModel, "input_graph", recorded)
    fast_states, fast_readings = model.rollout(BodyState.from_array(windows), actions)
    monkeypatch.setattr(GnnContactModel, "input_graph",
                        lambda self, windows, wrench, fast=True, prune=False, prev_wrench=None:
                        recorded(self, windows, wrench, False, prev_wrench=prev_wrench))
    ref_states, ref_readings = model.rollout(BodyState.from_array(windows), actions)
    assert len(rows[False]) == 4 and min(faces for _, faces in rows[False]) > 0  # the reference ran, in contact
    assert all(n == 8 * model.population.num_mesh for n, _ in rows[False])
    assert all(f == r[1] and n < r[0] for (n, f), r in zip(rows[True], rows[False], strict=True))  # pruned rows
    fast, ref = fast_states.as_array(), ref_states.as_array()
    assert np.all(np.isfinite(ref)) and np.all(np.isfinite(ref_readings))
    for block in (slice(0, 3), slice(3, 7), slice(7, 10), slice(10, 13)):  # position, quaternion, velocities
        np.testing.assert_allclose(fast[..., block], ref[..., block], rtol=0,
                                   atol=OUT_RTOL * np.abs(ref[..., block]).max())
    np.testing.assert_allclose(fast_readings, ref_readings, rtol=0, atol=OUT_RTOL * np.abs(ref_readings).max())


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_pruning_untouched_bodies_keeps_the_predictions(variant):
    """Windows in free space keep only the tool's nodes, windows in the slot drop the table under it; the
    decoders' outputs equal those of the full graph, and a body is kept exactly when a face edge touches it."""
    scene = peg_in_hole("triangle", 5e-3)
    model = _model(variant, scene)
    windows, wrench = _windows(scene, np.random.default_rng(6), 24)
    full = model.input_graph(windows, wrench)
    pruned = model.input_graph(windows, wrench, prune=True)
    cache = model.population
    ends = torch.cat([full.face_senders.reshape(-1), full.face_receivers.reshape(-1)])
    touched = np.zeros((24, cache.num_objects), dtype=bool)
    touched[:, 0] = True
    touched[(ends // cache.num_mesh).numpy(), cache.mesh_obj[(ends % cache.num_mesh).numpy()]] = True
    body_sizes = np.bincount(cache.mesh_obj, minlength=cache.num_objects)
    assert pruned.mesh_x.shape[0] == int((touched * body_sizes).sum())
    assert pruned.object_x.shape[0] == int(touched.sum())
    assert (~touched[:, 1:]).all(axis=1).sum() >= 3 and (~touched[:, 1:]).any(axis=1).sum() > (~touched[:, 1:]).all(
        axis=1).sum()  # free windows, and windows touching one body only
    torch.testing.assert_close(pruned.face_x, full.face_x, rtol=0, atol=0)
    (a_p, w_p), (a_f, w_f) = model.model.predict(pruned), model.model.predict(full)
    for x, y in ((a_p, a_f), (w_p, w_f)):
        assert torch.allclose(x, y, rtol=0, atol=OUT_RTOL * float(y.abs().max()))


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_last_step_on_the_decoders_rows_equals_the_full_step(variant):
    """ProcessorLayer.tool_rows (the network's last step, only what the decoders read) equals the full step's
    tool mesh latents and readout edge latents, on windows in contact and in free space."""
    scene = peg_in_hole("hexagon", 5e-3)
    model = _model(variant, scene)
    windows, wrench = _windows(scene, np.random.default_rng(7), 12)
    g = model.input_graph(windows, wrench)
    assert g.face_x.shape[0] > 0
    net = model.model
    with torch.no_grad():
        lat = {key: net.encoders[key](net.norm[name](getattr(g, name))) for name, key in
               (("mesh_x", "mesh"), ("object_x", "object"), ("world_x", "world"), ("om_x", "om"), ("mo_x", "mo"),
                ("wm_x", "wm"), ("mw_x", "mw"), ("face_x", "face")) if name in net.inputs}
        for layer in net.layers[:-1]:
            lat = layer(lat, g)
        full = net.layers[-1](lat, g)
        mesh_tool, readout = net.layers[-1].tool_rows(lat, g)
    expected = (torch.cat([full["mw"][g.tool_mw_force], full["mw"][g.tool_mw_torque]])
                if variant is ModelVariant.ACT_FIGNET else full["om"][g.tool_om])
    for x, y in ((mesh_tool, full["mesh"][g.tool_nodes]), (readout, expected)):
        assert x.shape == y.shape
        torch.testing.assert_close(x, y, rtol=0, atol=OUT_RTOL * float(y.abs().max()))
