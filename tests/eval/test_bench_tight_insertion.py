"""Benchmark tight-insertion: its geometry checks, its penetration gauge, and a tiny smoke run of ``run``."""

import math

import numpy as np
import pytest

from contactkit.eval import bench_tight_insertion as bench
from contactkit.eval import tight_insertion_sweep as peer

CASE_KEYS = {"backend", "clearance_m", "load_case", "inserted", "final_depth_m", "max_wall_penetration_m",
             "max_floor_penetration_m", "fz_std_hold_N", "ms_per_control_step", "stopped_early", "wall_s_per_sim_s",
             "simulated_s"}


def test_geometric_clearance_is_checked_numerically():
    aligned, worst = bench.geometric_clearance(bench.insertion_scene(6.5e-5))
    sagitta = bench.PEG_RADIUS * (1.0 / math.cos(math.pi / bench.SEGMENTS) - 1.0)
    assert aligned == pytest.approx(6.5e-5, abs=1e-12)
    assert worst == pytest.approx(6.5e-5 - sagitta, abs=1e-9)  # a corner turned onto a face's middle
    assert worst > 0.5 * 6.5e-5  # the fine polygon keeps most of the clearance at any yaw


@pytest.mark.parametrize(
    "offset, rotvec, wall, floor",
    [
        ([0.0, 0.0, 0.01], [0.0, 0.0, 0.0], 0.0, 0.0),  # centred, 10 mm up: clear
        ([7e-5, 0.0, 0.01], [0.0, 0.0, 0.0], 5e-6, 0.0),  # 5 µm into the +x wall
        ([0.0, 0.0, -3e-6], [0.0, 0.0, 0.0], 0.0, 3e-6),  # 3 µm into the floor
    ],
)
def test_gauge_measures_known_penetrations(offset, rotvec, wall, floor):
    scene = bench.insertion_scene(6.5e-5)
    gauge = bench.HoleGauge(scene)
    from contactkit.rotations import rotvec_to_quat

    got = gauge.penetration(scene.target_pos + np.array(offset), rotvec_to_quat(np.array(rotvec)))
    assert got == pytest.approx((wall, floor), abs=1e-9)


def test_gauge_sees_a_tilted_peg_cross_the_rim():
    """Tilted about y with the tip centred 5 mm down, the peg's side reaches beyond the hole at the rim."""
    scene = bench.insertion_scene(6.5e-5)
    from contactkit.rotations import rotvec_to_quat

    theta = 0.03
    wall, _ = bench.HoleGauge(scene).penetration(scene.target_pos + [0.0, 0.0, bench.HOLE_DEPTH - 5e-3],
                                                 rotvec_to_quat(np.array([0.0, theta, 0.0])))
    # at the rim, 5 mm up the peg's side, its +x face sits 5 mm·tan θ + r (1/cos θ - 1) out: minus the clearance
    expected = 5e-3 * math.tan(theta) + bench.PEG_RADIUS * (1.0 / math.cos(theta) - 1.0) - 6.5e-5
    assert wall == pytest.approx(expected, rel=0.02)


def _tiny(monkeypatch, substeps):
    monkeypatch.setattr(bench, "HOLE_DEPTH", 0.004)
    monkeypatch.setattr(bench, "SEGMENTS", 48)  # 48 wall pieces rather than 128: MuJoCo stays quick in a smoke run
    monkeypatch.setattr(bench, "HOLD_S", 0.03)
    monkeypatch.setattr(peer, "QUICK_SUBSTEPS", substeps)
    monkeypatch.setattr(peer, "SOLIMPS", {"default": peer.SOLIMPS["default"]})
    monkeypatch.setattr(peer, "TIMECONST_STEPS", (2.0,))
    return bench.run(quick=True, seed=0, device="cpu")


def test_tiny_run_finds_the_peer_and_reports_every_case_and_the_markdown_table(monkeypatch):
    """5 ms steps press the wall beyond 10 µm in the first (offset) case; 0.25 ms steps stay within it."""
    result = _tiny(monkeypatch, (2, 40))
    rows = result["peer_sweep"]["rows"]
    assert [r["setting"]["n_substeps"] for r in rows] == [2, 40]
    assert rows[0]["cases_passed"] == 0 and rows[0]["failed_case"] == "0.065 mm offset"
    assert rows[0]["max_penetration_m"] > peer.PENETRATION_BOUND
    assert rows[1]["cases_passed"] == 4 and rows[1]["max_penetration_m"] <= peer.PENETRATION_BOUND
    assert result["mujoco_fastest_within_10um"] == rows[1]["setting"]
    assert result["config"]["backends"][bench.FASTEST]["timestep"] == pytest.approx(2.5e-4)
    backends = ("engine", "mujoco-default", bench.FASTEST)
    assert len(result["cases"]) == len(backends) * len(bench.LoadCase)
    for case in result["cases"]:
        assert set(case) == CASE_KEYS and case["clearance_m"] == bench.CLEARANCES[-1] and not case["stopped_early"]
        assert np.isfinite(case["ms_per_control_step"]) and case["ms_per_control_step"] > 0.0
        assert case["wall_s_per_sim_s"] > 0.0
    engine = [c for c in result["cases"] if c["backend"] == "engine"]
    assert all(c["inserted"] and c["max_wall_penetration_m"] < 1e-5 for c in engine)
    wall = result["wall_s_per_sim_s_mean"]
    assert result[bench.RATIO_KEY] == pytest.approx(wall[bench.FASTEST] / wall["engine"])
    table = bench.markdown(result)
    assert table.count("\n| 0.065 ") == len(result["cases"]) and "held-tilt" in table and bench.FASTEST in table
    assert table.count("\n| coarse ") == len(rows) and "| yes |" in table
    assert "step_size_study" not in result  # the study belongs to full runs


def test_tiny_run_without_a_peer_says_so_and_has_no_ratio(monkeypatch):
    result = _tiny(monkeypatch, (2,))
    assert result["peer_sweep"]["met_bound"] == 0 and result["mujoco_fastest_within_10um"] is None
    assert bench.RATIO_KEY in result and result[bench.RATIO_KEY] is None
    assert {c["backend"] for c in result["cases"]} == {"engine", "mujoco-default"}
    assert "none of the 1 tried settings" in result["mujoco_fastest_within_10um_note"]
    assert "none (no setting met the bound)" in bench.markdown(result)


def test_sweep_case_stops_early_beyond_the_bound(monkeypatch):
    monkeypatch.setattr(bench, "SEGMENTS", 48)
    case = peer.SweepCase(bench.CLEARANCES[-1], bench.LoadCase.OFFSET)
    record = bench.sweep_case(peer.make_setting(2), case, peer.PENETRATION_BOUND)
    assert record["error"] is None and not record["inserted"] and record["stopped_early"]
    assert record["max_wall_penetration_m"] > peer.PENETRATION_BOUND
    assert 0.0 < record["simulated_s"] < 0.5 and record["wall_s"] > 0.0 and record["cpu_s"] >= 0.0


def test_step_size_study_rows_are_tabulated():
    row = {"max_step_s": 0.0025, "oscillator_energy_error": 0.34, "all_inserted": True,
           "max_wall_penetration_m": 1.1e-6, "max_floor_penetration_m": 6.6e-7, "max_fz_std_hold_N": 1e-5,
           "ms_per_control_step": 0.6}
    diverged = dict(row, max_step_s=0.01, oscillator_energy_error=None, all_inserted=False)
    table = bench.markdown({"cases": [], "step_size_study": [row, diverged]})
    assert "| 2.5 | 0.34 | yes | 1.1 | 0.66 | 0.6 |" in table and "| 10 | diverges | no |" in table


def test_only_the_cpu_is_supported():
    with pytest.raises(ValueError, match="CPU"):
        bench.run(quick=True, device="cuda")
