"""Experiment tight-assembly (issue 17 part 5): its measures, and the quick path's JSON keys."""

import math

import numpy as np
import pytest

from contactkit.assembly import reference_data
from contactkit.assembly.coupling import default_gains
from contactkit.assembly.task import bolting_task, peg_in_hole_task
from contactkit.errors import InvalidInputError
from contactkit.eval import exp_tight_assembly as exp
from contactkit.eval.paper_quotes import paper_values
from contactkit.eval.tight_assembly_figures import bars, markdown_table
from contactkit.state import BodyState

TASK_KEYS = ("ours_force_rmse_N", "kmeans_pgs_force_rmse_N", "mujoco_force_rmse_N", "complete_sim_force_rmse_N",
             "max_penetration_m", "max_penetration_no_cspace_m", "ms_per_step", "ms_per_stage")
"""The per-task JSON keys issue 17 lists."""
GEN_KEYS = ("diameter_mm", "pitch_mm", "ours_force_rmse_N", "kmeans_pgs_force_rmse_N")
ROBUST_KEYS = ("sim_s", "max_penetration_m", "energy_growth", "nan")


def test_force_rmse_is_the_rms_of_the_force_error_and_leaves_failed_rows_out():
    ref = np.zeros((4, 6))
    sim = np.tile([3.0, 4.0, 0.0, 9.0, 9.0, 9.0], (4, 1))  # torques are not part of the force error
    assert exp.force_rmse(sim, ref) == (5.0, 0)
    sim[1] = np.nan
    assert exp.force_rmse(sim, ref) == (5.0, 1)
    rmse, failed = exp.force_rmse(np.full((2, 6), np.nan), np.zeros((2, 6)))
    assert math.isnan(rmse) and failed == 2


def test_energy_is_the_coupling_spring_plus_kinetic():
    task = peg_in_hole_task(depth_net=None)
    gains = default_gains(task)
    q = np.array([1.0, 0.0, 0.0, 0.0])
    at = BodyState.at_rest([0.0, 0.0, 0.01])
    assert exp.energy(task, gains, at, at.pos, q) == 0.0
    moved = BodyState(at.pos, q, np.array([0.1, 0.0, 0.0]), np.zeros(3))
    e = exp.energy(task, gains, moved, at.pos + [0.0, 0.0, 2e-3], q)
    assert e == pytest.approx(0.5 * task.body.mass * 0.01 + 0.5 * gains.stiffness * 4e-6, rel=1e-12)


def test_penetration_of_the_nodes_is_zero_when_free_and_the_push_depth_when_pushed():
    task = peg_in_hole_task(depth_net=None)
    assert exp.penetration(task, BodyState.at_rest([0.0, 0.0, 0.01])) == (0.0, 0.0)
    deepest, mean = exp.penetration(task, BodyState.at_rest([0.0, 0.0, -1e-4]))  # tip face 0.1 mm into the floor
    assert deepest == pytest.approx(1e-4, rel=1e-6) and 0.0 < mean <= deepest * (1 + 1e-12)


def test_random_commands_are_unit_reproducible_and_stay_on_the_thread():
    pitch, z0, turns = 5e-3, 5e-3, 2.0
    a = exp.random_commands(pitch, 3000, np.random.default_rng(1), z0, turns)
    b = exp.random_commands(pitch, 3000, np.random.default_rng(1), z0, turns)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(np.linalg.norm(a[1], axis=1), 1.0, atol=1e-12)
    assert np.abs(a[0][:, :2]).max() < 10 * exp.ROBUST_OFFSET  # around the bolt's axis
    z = a[0][:, 2]  # the screwed height plus the OU offset (5 sigma)
    assert z.min() > z0 - 5 * exp.ROBUST_OFFSET and z.max() < z0 + turns * pitch + 5 * exp.ROBUST_OFFSET
    assert np.ptp(z) > pitch  # 30 s of random turning covers more than one turn


def test_config_refuses_unknown_tasks_and_settings():
    with pytest.raises(InvalidInputError, match="unknown tasks"):
        exp.TightAssemblyConfig(tasks=("gear",))
    with pytest.raises(InvalidInputError, match="MuJoCo"):
        exp.TightAssemblyConfig(mujoco=("slowest",))


def test_bars_and_table_of_a_result():
    entry = dict.fromkeys(TASK_KEYS, 1.0) | {"ours_force_rmse_N": 0.5, "kmeans_pgs_force_rmse_N": 10.0,
                                             "max_penetration_m": 1e-6, "max_penetration_no_cspace_m": 2e-5,
                                             "ms_per_step": 4.0, "ms_per_stage": {"detection": 4.0}}
    result = {"tasks": {"peg-in-hole": entry}, "generalization": [],
              "robustness": {"sim_s": 1.0, "max_penetration_m": 1e-5, "energy_growth": -0.1, "nan": False,
                             "clearance_m": 2e-4}}
    b = bars(result)
    assert b["peg-in-hole"] == {"rmse_ratio": 0.05, "rmse_ratio_met": True, "ms_per_step_met": False,
                                "cspace_lowers_penetration": True}
    assert b["robustness"] == {"no_nan": True, "energy_not_growing": True, "penetration_within_clearance": True}
    assert "| peg-in-hole | 0.5 (1.37)" in markdown_table(result, paper_values(exp.PAPER)["tasks"])


TINY = exp.TightAssemblyConfig(reference_steps=60, trajectory_rows=30, cma_generations=1, cma_population=4,
                               cma_steps=4, cspace_samples=100, cspace_steps=20, eval_steps=3, mujoco_steps=1,
                               mujoco=("default",), mujoco_tasks=("peg-in-hole",), complete_trajectories=1,
                               complete_steps=3, penetration_every=2, pairs=1, pair_reference_steps=30, depth_steps=20,
                               robustness_s=0.02)
"""The smallest budget that runs every section."""


@pytest.mark.slow
def test_quick_path_produces_every_key(tmp_path):
    result = exp.run(quick=True, seed=0, plots=str(tmp_path), config=TINY)
    assert set(result["tasks"]) == set(exp.TASKS)
    for entry in result["tasks"].values():
        assert set(TASK_KEYS) <= set(entry)
    assert set(ROBUST_KEYS) <= set(result["robustness"])
    assert result["missing"] == [] and result["partial"] is False
    for name, entry in result["tasks"].items():
        for key in TASK_KEYS[:-1]:  # a number, or MuJoCo's row None/NaN with the reason
            value = entry[key]
            assert (value is not None and math.isfinite(value)) or (
                key == "mujoco_force_rmse_N" and entry.get("mujoco_force_rmse_N_failure")), (name, key, value)
        assert set(entry["ms_per_stage"]) == {"detection", "clustering", "solving", "integration"}
    assert len(result["generalization"]) == 1 and set(GEN_KEYS) <= set(result["generalization"][0])
    assert result["robustness"]["nan"] in (True, False)
    assert "fig11_stage_times.png" in result["figures"]
    assert (tmp_path / "fig11_stage_times.png").is_file()


def test_bolting_task_of_a_pair_has_no_committed_net():
    assert bolting_task(0.039, 0.004).depth_net is None  # the experiment trains one per pair (§V-E)


def test_step_times_are_thread_cpu_and_wall_is_its_own_key():
    cpu = np.tile([1e-3, 2e-3, 0.5e-3, 0.5e-3], (5, 1))  # 4 ms of CPU per step
    wall = 10.0 * cpu  # a loaded machine: wall >> CPU
    t = exp.step_times(cpu, wall)
    assert t["ms_per_step"] == pytest.approx(4.0) and t["ms_per_step_median"] == pytest.approx(4.0)
    assert t["ms_per_stage"] == pytest.approx({"detection": 1.0, "clustering": 2.0, "solving": 0.5,
                                               "integration": 0.5})
    assert t["ms_per_step_wall"] == pytest.approx(40.0) and t["ms_per_stage_wall"]["clustering"] == pytest.approx(20.0)
    assert "thread-CPU" in t["timing"]
    with pytest.raises(InvalidInputError, match="stage times"):
        exp.step_times(cpu, wall[:, :3])


def test_complete_simulation_reports_cpu_time_of_steps_whose_wall_time_is_much_longer(monkeypatch):
    from types import SimpleNamespace

    from contactkit.assembly import simulator
    from contactkit.assembly.reference_data import setpoint_quat
    from contactkit.eval import tight_assembly_sim as sim

    stages = simulator.STAGES

    def fake_simulate(task, initial, pos, quat, gains, clustering, config, cspace=None, progress=None):
        return [SimpleNamespace(state=initial, wrench=np.zeros(6), stage_s=dict.fromkeys(stages, 0.1),
                                stage_cpu_s=dict.fromkeys(stages, 1e-3)) for _ in range(len(pos))]

    monkeypatch.setattr(simulator, "simulate", fake_simulate)
    monkeypatch.setattr(sim, "penetration", lambda task, state: (0.0, 0.0))
    n = 4
    at = BodyState.at_rest([0.0, 0.0, 0.01])
    episode = SimpleNamespace(n_steps=n, pos=np.tile(at.pos, (n + 1, 1)), quat=np.tile(at.quat, (n + 1, 1)),
                              lin_vel=np.zeros((n + 1, 3)), ang_vel=np.zeros((n + 1, 3)), action=np.zeros((n, 6)),
                              wrench=np.zeros((n, 6)))
    p = exp.Pipeline(None, None, [], [episode], None, None, None, setpoint_quat, {}, {})
    out, _ = exp.complete(p, TINY)
    assert out["ms_per_step"] == pytest.approx(4.0)  # 4 stages x 1 ms of CPU; the wall-clock sum would be 400 ms
    assert out["ms_per_step_wall"] == pytest.approx(400.0)
    assert out["ms_per_stage"] == pytest.approx(dict.fromkeys(stages, 1.0))
    assert out["complete_sim_steps"] == min(n, TINY.complete_steps)


def test_a_reference_dir_does_not_narrow_a_full_run_and_the_full_run_caches():
    assert exp.narrowing({"reference_dir": "/tmp/ref"}) == []
    assert exp.narrowing({"config": TINY}) != []
    assert exp.FULL.reference_dir is not None and exp.QUICK.reference_dir is None
    assert exp.FULL.complete_steps <= reference_data.TRAJECTORY_ROWS  # a test trajectory has no more rows
