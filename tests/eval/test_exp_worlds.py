"""Experiments take the world that acts as reality (``--world``) and the one their models assume
(``--model-world``), preset names or JSON files, defaulting to the stored results' pairing (issue 20 part 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.errors import InvalidInputError
from contactkit.eval import exp_pf_tracking
from contactkit.eval.exp_pf_tracking import TrackingBudget
from contactkit.eval.worlds import STORED_MODEL_WORLD, STORED_TRUTH_WORLD, world_pair
from contactkit.physics import WorldParams, load_world

runner = CliRunner()


def _lab_world(path, **changes) -> dict:
    """A user's world file: the stored target world with a rotated, offset sensor and an absolute tool mass."""
    data = {**load_world("target-parametric").to_dict(), "ft_mount_quat": [0.0, 0.0, 0.0, 1.0],
            "ft_mount_pos": [0.0, 0.0, 0.005], "mass_scale": 1.0, "tool_mass": 0.33,
            "command_latency_substeps": 5, "description": "my lab", **changes}
    path.write_text(json.dumps(data))
    return data


def test_pf_tracking_runs_on_a_world_file_by_cli(tmp_path, monkeypatch):
    """The bar's command: ``contactkit experiment pf-tracking --world A.json --model-world nominal --quick``."""
    monkeypatch.setattr(exp_pf_tracking, "QUICK_BUDGET", TrackingBudget(episodes=1, steps=8, calibration_episodes=1))
    world_file, out = tmp_path / "A.json", tmp_path / "r.json"
    data = _lab_world(world_file)
    result = runner.invoke(app, ["experiment", "pf-tracking", "--world", str(world_file), "--model-world", "nominal",
                                 "--quick", "--models", "ground-truth", "--json", str(out)])
    assert result.exit_code == 0, result.output
    setup = json.loads(out.read_text())["setup"]
    assert setup["truth_world"] == str(world_file) and setup["model_world"] == "nominal"
    data.pop("description")
    assert WorldParams.from_dict(setup["worlds"]["truth"]) == WorldParams.from_dict(data)
    assert WorldParams.from_dict(setup["worlds"]["model"]) == load_world("nominal")


def test_defaults_are_the_stored_pairing():
    pair = world_pair(None, None, "here")
    assert (pair.truth_name, pair.model_name) == (STORED_TRUTH_WORLD, STORED_MODEL_WORLD)
    assert pair.truth == load_world("target-parametric") and pair.model == load_world("nominal")
    assert pair.setup()["truth_world"] == "target-parametric"


def test_worlds_that_step_at_other_rates_are_refused(tmp_path):
    path = tmp_path / "slow.json"
    _lab_world(path, n_substeps=50)
    with pytest.raises(InvalidInputError, match="here: --world .*slow.json steps every 0.1 s"):
        world_pair(str(path), "nominal", "here")
    with pytest.raises(InvalidInputError, match="neither a preset"):
        world_pair("no-such-lab", None, "here")


def test_a_model_world_the_models_cannot_represent_is_a_clear_error(tmp_path):
    """Planning models are Markov in the tool state: a model world with latency is refused by name, not a trace."""
    path = tmp_path / "B.json"
    _lab_world(path)
    result = runner.invoke(app, ["experiment", "pf-tracking", "--model-world", str(path), "--quick",
                                 "--models", "ground-truth"])
    assert result.exit_code != 0
    assert "does not model command_latency_substeps" in result.output
    assert "Traceback" not in result.output


def test_mpc_insertion_plans_with_the_model_world_and_acts_in_the_world(tmp_path, monkeypatch):
    """The environment gets ``world``, the planning models ``model_world`` (plan with nominal, act in my lab)."""
    from contactkit.eval import exp_mpc_insertion as exp
    from contactkit.tasks import peg_env

    seen = {"env": [], "model": []}
    env_init, build = peg_env.PegInsertionEnv.__init__, exp.build_models

    def spy_env(self, config, params=None, *args, **kwargs):
        seen["env"].append(params)
        env_init(self, config, params, *args, **kwargs)

    def spy_build(scene, params, *args, **kwargs):
        seen["model"].append(params)
        return build(scene, params, *args, **kwargs)

    monkeypatch.setattr(exp.PegInsertionEnv, "__init__", spy_env)
    monkeypatch.setattr(exp, "build_models", spy_build)
    path = tmp_path / "lab.json"
    _lab_world(path)
    budget = exp.InsertionBudget(("square",), episodes_per_pairing=1, max_steps=3, horizon=4, population=4,
                                 iterations=1, replan_every=3)
    result = exp.run(quick=True, budget=budget, models=("ground-truth",), world=str(path), model_world="nominal")
    assert seen["env"] == [load_world(str(path))] and seen["model"] == [load_world("nominal")]
    assert result["setup"]["truth_world"] == str(path) and result["setup"]["model_world"] == "nominal"
    default = exp.run(quick=True, budget=budget, models=("ground-truth",))
    assert default["setup"]["truth_world"] == default["setup"]["model_world"] == "nominal"


def test_placement_acts_in_the_world_and_estimates_with_the_model_world(tmp_path, monkeypatch):
    """The MuJoCo "real" world gets ``world``, the methods' differentiable model ``model_world``."""
    from contactkit.estimation.geometry_belief import ParticleFilterConfig
    from contactkit.eval import exp_placement as exp
    from contactkit.tasks.placement import WORLD

    seen = {"world": [], "model": []}
    world_init, diff_scene = exp.MujocoWorld.__init__, exp.diff_scene

    def spy_world(self, scene, params=None, *args, **kwargs):
        seen["world"].append(params)
        world_init(self, scene, params, *args, **kwargs)

    def spy_diff(task, params):
        seen["model"].append(params)
        return diff_scene(task, params)

    monkeypatch.setattr(exp.MujocoWorld, "__init__", spy_world)
    monkeypatch.setattr(exp, "diff_scene", spy_diff)
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({**WORLD.to_dict(), "friction_scale": 1.2, "ft_noise_std": [0.05] * 3 + [0.001] * 3}))
    tiny = exp.PlacementConfig(tasks=("shape",), methods=("ours",), n_cases=1, repeats=1, steps=3, n_estimates=2,
                               pf=ParticleFilterConfig(n_particles=4), workers=1)
    result = exp.run(quick=True, config=tiny, world=str(path), model_world="nominal")
    assert seen["world"] and all(p == load_world(str(path)) for p in seen["world"])
    assert seen["model"] and all(p == load_world("nominal") for p in seen["model"])
    assert result["config"]["worlds"]["truth"]["friction_scale"] == 1.2
    assert "worlds" not in exp.run(quick=True, config=tiny)["config"]  # the stored run's keys are unchanged


def test_connector_runs_in_the_world_and_refuses_a_model_world(tmp_path, monkeypatch):
    """The linear model is calibrated in the world itself: ``world`` replaces the trials' world, and the harness
    refuses ``--model-world`` by name."""
    from contactkit.eval import exp_connector as exp

    seen = []
    monkeypatch.setattr(exp, "run_experiment", lambda cfg, seed, plots=None: seen.append(cfg) or {})
    path = tmp_path / "lab.json"
    path.write_text(json.dumps({**exp.QUICK.world.to_dict(), "ft_bias": [0.5, -0.3, 0.2, 0.0, 0.0, 0.0]}))
    exp.run(quick=True, seed=0, device="cpu", world=str(path))
    exp.run(quick=True, seed=0, device="cpu")
    assert seen[0].world == load_world(str(path)) and seen[1].world == exp.QUICK.world
    result = runner.invoke(app, ["experiment", "connector-insertion", "--quick", "--model-world", "nominal"])
    assert result.exit_code != 0 and "model_world" in result.output
