"""The ``contactkit`` command: collect, inspect, plot, train, evaluate, benchmark, run experiments, regenerate
results, run the demo. One module per group of commands; importing them registers the commands on :data:`app`
in the order ``contactkit --help`` lists them."""

from contactkit.cli import (  # noqa: F401  (registers the commands)
    assembly,
    data,
    importing,
    learn,
    learn_depth,
    measure,
    pushing,
    residual,
    scene,
    visual,
)
from contactkit.cli._app import app

__all__ = ["app"]
