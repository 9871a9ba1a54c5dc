"""Which worlds an experiment runs in: the one that acts as reality (``world``) and the one its planning and
estimation models assume (``model_world``), each a preset name or a WorldParams JSON file
(:func:`contactkit.physics.load_world`; ``contactkit experiment NAME --world A.json --model-world nominal``).

Every experiment defaults to its pairing of the stored results, so a run without these options reproduces them:
reality is ``target-parametric`` (the target world before issue 19 added a real cell's latency, compliance and
sensor filter to ``target``) and the models assume ``nominal``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass

from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams, load_world

STORED_TRUTH_WORLD = "target-parametric"
"""The world that acted as reality in the stored results (docs/results): the default ``world``."""
STORED_MODEL_WORLD = "nominal"
"""The world the stored results' models assumed: the default ``model_world``."""
CONTROL_DT_REL_TOL = 1e-9
"""Relative tolerance of the two worlds' control periods (a model steps as often as reality)."""


@dataclass(frozen=True)
class WorldPair:
    """The two worlds of a run: names as given (preset or path) and their parameters."""

    truth_name: str
    truth: WorldParams
    model_name: str
    model: WorldParams

    def setup(self) -> dict:
        """JSON-ready record of both worlds (names and every parameter), for a result's ``setup``."""
        return {"truth_world": self.truth_name, "model_world": self.model_name,
                "worlds": {"truth": self.truth.to_dict(), "model": self.model.to_dict()}}


def world_pair(world: str | None, model_world: str | None, where: str,
               default_world: str = STORED_TRUTH_WORLD, default_model_world: str = STORED_MODEL_WORLD,
               same_period: bool = True) -> WorldPair:
    """Load ``world`` (reality) and ``model_world`` (what models assume), None meaning the defaults.

    Args:
        world, model_world: preset names or JSON paths, or None.
        where: the experiment's name, for errors.
        default_world, default_model_world: the experiment's stored pairing.
        same_period: require equal control periods ``timestep · n_substeps`` [s] (a model predicts one of
            reality's control steps per step).

    Raises:
        InvalidInputError: a world that cannot be loaded (naming it), or control periods that differ.
    """
    truth_name, model_name = world or default_world, model_world or default_model_world
    truth, model = load_world(truth_name), load_world(model_name)
    if same_period and not math.isclose(truth.control_dt, model.control_dt, rel_tol=CONTROL_DT_REL_TOL):
        raise InvalidInputError(
            f"{where}: --world {truth_name} steps every {truth.control_dt:g} s but --model-world {model_name} every "
            f"{model.control_dt:g} s; the models predict one control step of reality each: give both the same "
            "timestep * n_substeps")
    return WorldPair(str(truth_name), truth, str(model_name), model)


def without_unmodelled_effects(params: WorldParams) -> WorldParams:
    """``params`` with its command latency, flange–tool compliance and sensor filter off: the part of a real cell
    that a model stepping from a recorded tool state alone can replay (those effects hold state of their own)."""
    return dataclasses.replace(params, command_latency_substeps=0, compliance_stiffness=(0.0,) * 6,
                               compliance_damping=(0.0,) * 6, ft_filter_hz=0.0)


def world_digest(params: WorldParams) -> str:
    """A short hash [12 hex digits] of every parameter of ``params``: names work folders of data collected in it."""
    return hashlib.sha256(params.to_json().encode()).hexdigest()[:12]
