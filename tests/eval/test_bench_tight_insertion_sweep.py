"""The sweep that finds tight-insertion's MuJoCo peer: selection, early exit and coarse-then-refine order,
against hand-made tables and a fake simulator whose pass/fail rule is known."""

import math

import pytest

from contactkit.eval import tight_insertion_sweep as peer

BOUND = peer.PENETRATION_BOUND


def _row(name, wall, cpu, depth, passed=4, error=None):
    return {"setting": {"name": name}, "stage": "coarse", "cases_passed": passed, "cases_total": 4,
            "failed_case": None if passed == 4 else "offset", "error": error, "max_penetration_m": depth,
            "wall_s_per_sim_s": wall, "cpu_s_per_sim_s": cpu}


TABLE = [
    _row("too-deep", wall=0.05, cpu=0.05, depth=1.2e-5),           # cheapest, but 12 µm
    _row("three-of-four", wall=0.06, cpu=0.06, depth=2e-6, passed=3),  # stopped at its 4th case
    _row("diverged", wall=0.07, cpu=0.07, depth=0.0, passed=0, error="SimulationDiverged: step 3"),
    _row("slow", wall=0.40, cpu=0.10, depth=1e-6),
    _row("at-bound", wall=0.20, cpu=0.20, depth=BOUND),             # exactly 10 µm meets "≤ 10 µm"
    _row("fast", wall=0.12, cpu=0.30, depth=9.9e-6),
]


def test_fastest_within_picks_the_cheapest_row_that_meets_the_bound():
    assert peer.fastest_within(TABLE)["setting"] == {"name": "fast"}
    assert peer.fastest_within(TABLE, cost="cpu_s_per_sim_s")["setting"] == {"name": "slow"}
    assert peer.fastest_within(TABLE, bound=1.5e-6)["setting"] == {"name": "slow"}  # a tighter bound


def test_fastest_within_is_none_when_no_row_meets_the_bound():
    assert peer.fastest_within(TABLE[:3]) is None
    assert peer.fastest_within([]) is None
    found = peer.summary(TABLE[:3], ["offset", "held-tilt", "aligned", "tilted-start"], quick=False)
    assert found["mujoco_fastest_within_10um"] is None and found["mujoco_fastest_within_10um_by_cpu_time"] is None
    assert "none of the 3 tried settings" in found["mujoco_fastest_within_10um_note"]
    assert found["peer_sweep"]["met_bound"] == 0 and found["peer_sweep"]["rows"] == TABLE[:3]


class FakeSimulator:
    """A simulator whose penetration is ``500 µm · timestep/10 ms`` (a setting meets 10 µm from 0.2 ms
    down), times the time constant in units of two steps, times 0.9 with the hard solimp, lowered tenfold by
    pyramidal cones with noslip; every case costs ``n_substeps`` ms per simulated second; ``calls`` records
    what ran."""

    def __init__(self):
        self.calls = []

    def depth(self, s: peer.MujocoSetting) -> float:
        p = s.params
        soft = 1.0 if p.cone == "elliptic" or s.noslip_iterations == 0 else 0.1
        softness = p.solref[0] / p.timestep / 2.0 * (0.9 if p.solimp == peer.SOLIMPS["hard"] else 1.0)
        return 500e-6 * p.timestep / 0.01 * soft * softness

    def __call__(self, setting, case, stop_above):
        self.calls.append((setting, case, stop_above))
        depth = self.depth(setting)
        return {"inserted": True, "max_wall_penetration_m": depth, "max_floor_penetration_m": 0.0,
                "wall_s": 1e-3 * setting.params.n_substeps, "cpu_s": 0.5e-3 * setting.params.n_substeps,
                "simulated_s": 1.0, "error": None}


CASES = ("offset", "held-tilt", "aligned", "tilted-start")


def test_sweep_case_labels_clearance_and_load_case():
    from contactkit.eval.bench_tight_insertion import LoadCase

    assert peer.SweepCase(6.5e-5, LoadCase.HELD_TILT).value == "0.065 mm held-tilt"


def test_try_setting_stops_at_the_first_failing_case_and_costs_what_ran():
    fake = FakeSimulator()
    deep = peer.make_setting(2)  # 5 ms: 250 µm
    row = peer.try_setting(deep, CASES, fake, "coarse")
    assert [c for _, c, _ in fake.calls] == ["offset"] and fake.calls[0][2] == BOUND
    assert row["cases_passed"] == 0 and row["failed_case"] == "offset"
    assert row["max_penetration_m"] == pytest.approx(250e-6)
    assert not peer.row_meets_bound(row)
    fine = peer.try_setting(peer.make_setting(80), CASES, fake, "coarse")  # 0.125 ms: 6.25 µm
    assert fine["cases_passed"] == 4 and peer.row_meets_bound(fine)
    assert fine["wall_s_per_sim_s"] == pytest.approx(0.08) and fine["cpu_s_per_sim_s"] == pytest.approx(0.04)


def test_a_setting_that_never_ran_has_no_cost_and_is_tabulated():
    def refused(setting, case, stop_above):
        return {"inserted": False, "max_wall_penetration_m": 0.0, "max_floor_penetration_m": 0.0, "wall_s": 0.0,
                "cpu_s": 0.0, "simulated_s": 0.0, "error": "InvalidInputError: time step too large"}

    row = peer.try_setting(peer.make_setting(1), CASES, refused, "coarse")
    assert row["wall_s_per_sim_s"] is None and row["error"].startswith("InvalidInputError")
    assert not peer.row_meets_bound(row) and peer.fastest_within([row]) is None
    table = peer.markdown(peer.summary([row], CASES, quick=True))
    assert "| 0/4 | offset | 0.0 | — | — |  |" in table


def test_a_case_must_be_inserted_and_error_free():
    ok = {"inserted": True, "max_wall_penetration_m": 1e-6, "max_floor_penetration_m": 2e-6, "error": None}
    assert peer.case_meets_bound(ok)
    assert not peer.case_meets_bound(dict(ok, inserted=False))
    assert not peer.case_meets_bound(dict(ok, error="SimulationDiverged"))
    assert not peer.case_meets_bound(dict(ok, max_floor_penetration_m=1.1e-5))


def test_sweep_goes_cheapest_first_then_refines_around_the_first_passing_step():
    fake = FakeSimulator()
    rows = peer.sweep(CASES, fake, quick=False)
    coarse = [r for r in rows if r["stage"] == "coarse"]
    per_step = len(peer.TIMECONST_STEPS) * len(peer.SOLIMPS)
    # coarse: 10 .. 0.25 ms fail (0.25 ms: 11.25 µm at best), 0.125 ms passes (5.6 µm); then it stops
    assert [r["setting"]["n_substeps"] for r in coarse] == [n for n in peer.SUBSTEPS for _ in range(per_step)]
    refined = [r["setting"] for r in rows if r["stage"] == "refine"]
    assert {s["n_substeps"] for s in refined} == {40, 80}  # the first passing step and the next cheaper one
    # around the softness that went furthest there: two steps, the hard solimp
    assert all(s["solimp"] == list(peer.SOLIMPS["hard"]) for s in refined)
    assert all(s["solref"][0] == pytest.approx(2.0 * s["timestep"]) for s in refined)
    combos = len(peer.CONES) * len(peer.IMPRATIOS) * len(peer.NOSLIP_ITERATIONS)
    assert len(refined) == 2 * (combos - 1)  # the coarse setting among the combinations is not run again
    chosen = peer.fastest_within(rows)
    # at 0.25 ms a pyramidal cone with noslip gives 1.1 µm: cheaper (40 ms/s) than any 0.125 ms setting
    assert chosen["setting"]["n_substeps"] == 40 and chosen["setting"]["cone"] == "pyramidal"
    assert chosen["setting"]["noslip_iterations"] > 0 and chosen["stage"] == "refine"


def test_furthest_is_most_cases_then_least_penetration():
    rows = [_row("a", 1, 1, 5e-6, passed=1), _row("b", 1, 1, 9e-6, passed=2), _row("c", 1, 1, 3e-6, passed=2)]
    assert peer.furthest(rows)["setting"] == {"name": "c"}


def test_quick_sweep_is_the_reduced_coarse_pass():
    rows = peer.sweep(CASES, FakeSimulator(), quick=True)
    assert {r["stage"] for r in rows} == {"coarse"}
    per_step = len(peer.TIMECONST_STEPS) * len(peer.SOLIMPS)
    assert [r["setting"]["n_substeps"] for r in rows] == [n for n in peer.QUICK_SUBSTEPS for _ in range(per_step)]
    assert peer.fastest_within(rows) is None  # the fake needs 0.125 ms, which the quick pass does not try


def test_setting_round_trips_through_its_row():
    s = peer.make_setting(20, timeconst_steps=4.0, solimp="hard", cone="pyramidal", impratio=10.0,
                          noslip_iterations=10)
    back = peer.setting_from_dict(s.to_dict())
    assert back == s and math.isclose(back.params.timestep, 5e-4) and back.params.solref == (2e-3, 1.0)
