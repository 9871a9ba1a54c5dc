"""The residual as a planning model: built over its own backbone world only, batched over a population, and run only
when named."""

from dataclasses import replace

import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.eval import planning_models
from contactkit.eval.exp_mpc_insertion import QUICK_BUDGET
from contactkit.eval.prediction_models import RESIDUAL_QUICK, fit_residual
from contactkit.physics import load_world
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("planning-residual")
    for name, seed in (("train", 1), ("val", 2)):
        collect(CollectSpec(policy="contact-spline", episodes=2, steps=12, seed=seed, world=load_world("target")),
                str(root / f"{name}.h5"))
    path, _ = fit_residual([root / "train.h5"], [root / "val.h5"], "mujoco", load_world("nominal"), RESIDUAL_QUICK,
                           root / "r.safetensors")
    return path


def test_residual_plans_a_population_over_its_own_backbone_world(checkpoint, monkeypatch):
    monkeypatch.setattr(planning_models, "residual_checkpoint", lambda: checkpoint)
    scene = peg_in_hole("hexagon", 5e-3)
    model = planning_models.MODEL_FACTORIES["residual-mujoco"](scene, load_world("nominal"), QUICK_BUDGET, "cpu")
    start = BodyState.at_rest(scene.tool.init_pos, scene.tool.init_quat)
    history = BodyState.from_array(np.broadcast_to(start.as_array(), (20, 3, 13)).copy())
    actions = np.random.default_rng(0).uniform(-0.005, 0.005, (20, 6))
    nxt, wrench = model.step(history, actions)
    assert nxt.pos.shape == (20, 3) and np.isfinite(wrench).all()
    with pytest.raises(planning_models.ModelUnavailable, match="friction_scale"):
        planning_models.MODEL_FACTORIES["residual-mujoco"](scene, load_world("target-parametric"), QUICK_BUDGET,
                                                          "cpu")


def test_residual_is_planned_with_only_when_named(checkpoint, monkeypatch):
    monkeypatch.setattr(planning_models, "residual_checkpoint", lambda: checkpoint)
    scene = peg_in_hole("hexagon", 5e-3)
    budget = replace(QUICK_BUDGET, models=None)
    models, missing = planning_models.build_models(scene, load_world("nominal"), budget, "cpu")
    assert "residual-mujoco" not in models and all(m["model"] != "residual-mujoco" for m in missing)
    named = replace(QUICK_BUDGET, models=("residual-mujoco",))
    models, _ = planning_models.build_models(scene, load_world("nominal"), named, "cpu")
    assert set(models) == {"residual-mujoco"}
