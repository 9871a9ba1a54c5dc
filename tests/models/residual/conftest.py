"""Small logs for the residual's tests: a few short episodes of the hexagonal peg, collected once per session."""

import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.physics import load_world


@pytest.fixture(scope="session")
def residual_logs(tmp_path_factory):
    """``{name: path}``: ``target-train``/``target-val`` (contact-spline, the target world), ``nominal`` (random-spline,
    the nominal world: the MuJoCo backbone's own), ``target-random`` (random-spline, the target world: mostly free)."""
    root = tmp_path_factory.mktemp("residual-logs")
    specs = {"target-train": ("contact-spline", "target", 3, 11), "target-val": ("contact-spline", "target", 1, 12),
             "nominal": ("random-spline", "nominal", 2, 13), "target-random": ("random-spline", "target", 2, 14)}
    out = {}
    for name, (policy, world, episodes, seed) in specs.items():
        out[name] = str(root / f"{name}.h5")
        collect(CollectSpec(policy=policy, episodes=episodes, steps=40, seed=seed, world=load_world(world)), out[name])
    return out
