"""Placement experiment, smoke run: one task, one case, a short episode and small beliefs. Checks the issue's keys
and their ranges, the gradient-check bar, the figures, and the confidence interval against its closed form."""

import dataclasses
import inspect
import json
import math

import numpy as np
import pytest
from scipy import stats

from contactkit.errors import InvalidInputError
from contactkit.estimation.geometry_belief import ParticleFilterConfig
from contactkit.eval import exp_placement
from contactkit.eval.exp_placement import Method, PlacementConfig, Stream, interval95, run_experiment, stream_key

TINY = PlacementConfig(tasks=("shape",), n_cases=1, repeats=1, steps=14, n_estimates=3,
                       pf=ParticleFilterConfig(n_particles=6), workers=1)


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    plots = tmp_path_factory.mktemp("plots")
    return run_experiment(TINY, seed=1, plots=str(plots)), plots


def test_result_has_the_issue_keys_in_range(tiny_result):
    result, _ = tiny_result
    entry = result["tasks"]["shape"]
    assert entry["unit"] == "deg" and len(entry["theta_gt"]) == 1
    for method in Method:
        e = entry[method.value]
        lo, hi = e["ci95"]
        assert math.isfinite(e["mean"]) and e["mean"] >= 0.0 and lo <= e["mean"] <= hi
        assert len(e["errors"]) == 1 and 0.0 <= e["errors"][0] < 45.0
    assert 0.0 <= result["gradcheck_max_rel_err"] <= 1e-4
    assert set(result["gradcheck"]) == {"shape/sticking"}  # one case: the quick set of checks
    assert all(c["finite"] and c["n_contacts"] > 0 for c in result["gradcheck"].values())
    assert all(c["switching"] == [] for c in result["gradcheck"].values())  # a generic point: no structure switch
    json.dumps(result)  # the harness writes it as JSON


def test_figures_are_written(tiny_result):
    result, plots = tiny_result
    assert sorted(result["figures"]) == ["fig4_release_error.png", "traces_shape.png"]
    assert all((plots / name).stat().st_size > 10_000 for name in result["figures"])


def test_markdown_tabulates_every_method_and_the_ordering(tiny_result):
    result, _ = tiny_result
    table = exp_placement.markdown(result)
    header, rule, row = table.splitlines()[:3]
    assert all(m.value in header for m in Method) and row.startswith("| shape | deg |")
    assert f"{result['tasks']['shape']['ours']['mean']:.3g} [" in row
    *_, ordering, lowest, _ = row.split("|")
    shape = result["tasks"]["shape"]
    assert ordering.strip() == str(result["ordering_holds"]["shape"])
    assert lowest.strip() == str(shape["ours"]["mean"] < min(shape["particle-filter"]["mean"],
                                                            shape["heuristic"]["mean"]))
    assert rule.count("|") == header.count("|")


def test_repeat_r_is_the_run_of_seed_plus_r_and_the_headline_pools_them():
    """The full run draws the protocol's cases once per seed: its repeat r equals the one-seed run of ``seed + r``
    (same hidden geometries, same episodes), and the headline mean pools the seeds' cases."""
    config = dataclasses.replace(TINY, methods=("ours", "particle-filter", "heuristic"))
    pooled = run_experiment(dataclasses.replace(config, repeats=2), seed=0)
    assert pooled["seeds"] == [0, 1] and pooled["config"]["repeats"] == 2
    for r, seed in enumerate(pooled["seeds"]):
        alone = run_experiment(config, seed=seed)["tasks"]["shape"]
        entry = pooled["tasks"]["shape"]
        assert entry["theta_gt"][r] == alone["theta_gt"][0]
        for method in config.methods:
            assert entry[method]["errors"][r] == alone[method]["errors"][0]
            assert entry[method]["seed_means"][r] == alone[method]["mean"]
    for method in config.methods:
        e = pooled["tasks"]["shape"][method]
        assert e["mean"] == pytest.approx(np.mean(e["seed_means"]))
    per_seed = pooled["ordering_holds_per_seed"]["shape"]
    assert len(per_seed) == 2 and all(isinstance(v, bool) for v in per_seed)
    table = exp_placement.markdown(pooled)
    assert "| shape | 0 |" in table and "| shape | 1 |" in table
    with pytest.raises(InvalidInputError, match="repeats"):
        run_experiment(dataclasses.replace(config, repeats=0))


def test_no_two_random_streams_of_the_experiment_coincide():
    """Cases, episodes and gradient checks draw from distinct streams (SeedSequence ignores trailing zeros: the
    cases of a task once shared the stream of its first case's first-method episode)."""
    keys = [stream_key(s, t, stream=Stream.CASES) for s in (0, 1) for t in range(4)]
    keys += [stream_key(s, t, m, c, stream=Stream.EPISODE) for s in (0, 1) for t in range(4) for m in range(len(Method))
             for c in range(10)]
    keys += [stream_key(s, stream=Stream.GRADCHECK) for s in (0, 1)]
    first = {int(np.random.default_rng(k).integers(2**63)) for k in keys}
    assert len(first) == len(keys)
    assert np.random.default_rng([0, 2]).integers(2**63) == np.random.default_rng([0, 2, 0, 0]).integers(2**63)


def test_interval_is_the_student_t_interval_of_the_mean():
    values = np.array([1.0, 2.0, 4.0, 7.0])
    half = stats.t.ppf(0.975, 3) * values.std(ddof=1) / 2.0
    assert interval95(values) == pytest.approx([3.5 - half, 3.5 + half])
    assert interval95(np.array([2.5])) == [2.5, 2.5]


def test_harness_entry_point_takes_plots():
    params = inspect.signature(exp_placement.run).parameters
    assert list(params)[:4] == ["quick", "seed", "device", "plots"] and params["plots"].default is None


def test_placement_is_serial_unless_workers_are_given(monkeypatch):
    """Issue 35 part 7: --quick (and the full run) start no Ray instance unless --workers is given."""
    from contactkit.eval import exp_placement

    ran = []
    monkeypatch.setattr(exp_placement, "run_experiment", lambda config, seed, plots, address: ran.append(
        config.workers))
    exp_placement.run(quick=True)
    exp_placement.run(quick=False)
    exp_placement.run(quick=True, workers=3)
    assert ran == [1, 1, 3]
