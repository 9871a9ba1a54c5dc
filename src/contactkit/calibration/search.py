"""Identify a MuJoCo world from logs, the way the Act-FIGNet paper calibrated its baseline (App. V-D).

Stage 1 fits the free-space parameters (mass, inertia, damping, armature) on free-space segments; stage 2 fits those
and the constraint solver's (solref, solimp) on contact segments with the F/T error added. Each stage is a coarse
search — a scrambled Sobol sample of the unit cube plus the starting world — whose best :data:`TOP_STARTS` points
start a bounded local optimiser. The paper used BFGS; its finite-difference gradients are unreliable on MuJoCo's
non-smooth contact replays, so the local step here is scipy's Nelder–Mead on the unit cube (bounds enforced by the
map, :mod:`contactkit.calibration.space`) — a stated departure. Contact flags and sensor offsets come from the
starting world's predictions at the recorded states (:mod:`contactkit.models.residual.transitions`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.stats import qmc

from contactkit.calibration.controller import controller_values
from contactkit.calibration.objective import FitError, Segments, fit_error, split_segments
from contactkit.calibration.space import current, from_unit, to_unit, unit_value, value_unit, world_and_controller
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.residual.contact_model import Backbone, make_backbone
from contactkit.models.residual.transitions import LoggedEpisode, build_transitions
from contactkit.physics import WorldParams

__all__ = ["CalibrationBudget", "CalibrationResult", "FREE_N", "TOP_STARTS", "calibrate"]

TOP_STARTS = 3
"""Coarse-search points that start a local optimisation (the paper: the top five of its grid)."""
FREE_N = 1e-9
"""A step is in contact when the starting world predicts a force above this [N] from the recorded state."""


@dataclass(frozen=True)
class CalibrationBudget:
    """Sizes: ``coarse`` Sobol points and ``local`` Nelder–Mead evaluations per start, per stage; ``segments`` of
    ``horizon`` steps per kind (free, contact) for the fit and for the held-out report."""

    coarse: int = 32
    local: int = 60
    segments: int = 48
    horizon: int = 10


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated world and what the fit measured (JSON-ready through :meth:`as_dict`)."""

    world: WorldParams
    params: tuple[str, ...]
    values: dict
    stages: list
    held_out: dict
    evaluations: int
    controller: dict = dataclasses.field(default_factory=dict)
    """Calibrated scene-controller values (:func:`~contactkit.calibration.controller.apply_controller` turns a
    scene's controller into the calibrated one); empty when none were calibrated."""

    def as_dict(self) -> dict:
        """JSON-ready record (world parameters, fitted values, per-stage losses, held-out errors, controller)."""
        return {"world": self.world.to_dict(), "params": list(self.params), "values": self.values,
                "stages": self.stages, "held_out": self.held_out, "evaluations": self.evaluations,
                "controller": self.controller}


def _segments(episodes: Sequence[LoggedEpisode], base: WorldParams, mode: ActionMode, budget: CalibrationBudget,
              rng: np.random.Generator) -> tuple[Segments, Segments]:
    cache: dict[str, object] = {}

    def backbones(scene):
        key = scene.to_json()
        if key not in cache:
            cache[key] = make_backbone(Backbone.MUJOCO, scene, base, mode)
        return cache[key]

    rows, offsets = build_transitions(episodes, backbones)
    contact = [np.zeros(len(ep.commands), dtype=bool) for ep in episodes]
    touching = np.linalg.norm(rows.backbone_wrench[:, :3], axis=-1) > FREE_N
    for e, t, c in zip(rows.episode, rows.step, touching, strict=True):
        contact[int(e)][int(t)] = c
    return split_segments(episodes, offsets, contact, budget.horizon, budget.segments, mode, rng)


def _stage(names: tuple[str, ...], start: WorldParams, start_ctrl: dict, seg: Segments, with_ft: bool,
           budget: CalibrationBudget, rng: np.random.Generator, count: list[int],
           progress: Callable[[int, int], None]) -> tuple[WorldParams, dict, dict]:
    """One stage: coarse Sobol search then Nelder–Mead from the best points; returns the best world, the best
    controller values (:mod:`contactkit.calibration.controller`) and a record."""
    scene = seg.episodes[0].scene
    total = budget.coarse + 1 + TOP_STARTS * budget.local
    world_names, ctrl_names = world_and_controller(names)
    n_world = len(world_names)

    def candidate(u: np.ndarray) -> tuple[WorldParams, dict]:
        u = np.clip(u, 0, 1)
        ctrl = {**start_ctrl, **{n: unit_value(n, float(x), scene) for n, x in zip(ctrl_names, u[n_world:],
                                                                                     strict=True)}}
        return from_unit(start, scene, world_names, u[:n_world]), ctrl

    def loss(u: np.ndarray) -> float:
        count[0] += 1
        progress(min(count[0], total), total)
        world, ctrl = candidate(u)
        return fit_error(world, seg, with_ft, ctrl).loss

    u0 = np.concatenate([to_unit(start, scene, world_names),
                         [value_unit(n, start_ctrl[n], scene) for n in ctrl_names]])
    points = np.vstack([u0, qmc.Sobol(len(names), seed=rng).random(budget.coarse)])
    losses = np.array([loss(u) for u in points])
    best_u, best = u0, losses[0]
    for k in np.argsort(losses)[:TOP_STARTS]:
        res = minimize(loss, points[k], method="Nelder-Mead",
                       options={"maxfev": budget.local, "xatol": 1e-3, "fatol": 1e-4, "initial_simplex": _simplex(
                           points[k])})
        if res.fun < best:
            best_u, best = np.clip(res.x, 0, 1), float(res.fun)
    world, ctrl = candidate(best_u)
    return world, ctrl, {"params": list(names), "with_ft": with_ft, "segments": len(seg.rows),
                         "evaluations": count[0], "start_loss": float(losses[0]),
                         "coarse_best_loss": float(losses.min()), "loss": float(best)}


def _simplex(u: np.ndarray, step: float = 0.1) -> np.ndarray:
    """A Nelder–Mead start simplex of edge ``step`` in the unit cube around ``u`` (pointing inwards)."""
    pts = [u]
    for i in range(len(u)):
        p = u.copy()
        p[i] = p[i] + step if p[i] + step <= 1 else p[i] - step
        pts.append(p)
    return np.array(pts)


def calibrate(episodes: Sequence[LoggedEpisode], held_out: Sequence[LoggedEpisode], base: WorldParams,
              stages: tuple[tuple[str, ...], tuple[str, ...]], mode: ActionMode, budget: CalibrationBudget,
              rng: np.random.Generator, progress: Callable[[str, int, int], None] | None = None) -> CalibrationResult:
    """Calibrate ``base`` to ``episodes`` (free-space stage on ``stages[0]``, contact stage on ``stages[1]``).

    Args:
        episodes: logs to fit; held_out: logs to report the fit on (never fitted).
        base: the starting world (a world with latency, compliance or a sensor filter is refused: the contact
            flags of the segments come from replaying it statelessly; the ``full`` set adds those fields to a
            world without them); stages: parameter names per stage (stage 1 may be empty);
        mode: what the logs' commands mean; budget: sizes; rng: the segment draw and the Sobol scramble.
        progress: ``progress(stage, done, total)``.

    Raises:
        InvalidInputError: ``base`` has unmodelled effects, or the logs have no contact segment for stage 2.
    """
    if base.unmodelled_effects():
        raise InvalidInputError(f"calibrate starts from a world MuJoCo replays from the tool state alone; "
                                f"{base.unmodelled_effects()} are on in the given --world")
    report = progress or (lambda *_: None)
    free, touching = _segments(episodes, base, mode, budget, rng)
    if not len(touching.rows):
        raise InvalidInputError("the logs have no segment with contact: the solver parameters cannot be fitted")
    count, records, world = [0], [], base
    ctrl = {n: v for n, v in controller_values(episodes[0].scene.controller).items()
            if n in world_and_controller(stages[1])[1]}
    for k, (names, seg, with_ft) in enumerate(((stages[0], free, False), (stages[1], touching, True))):
        if not names or not len(seg.rows):
            continue
        count[0] = 0
        world, ctrl, rec = _stage(names, world, ctrl, seg, with_ft, budget, rng, count,
                                  lambda d, n, k=k: report(f"calibrate stage {k + 1}", d, n))
        records.append(rec)
    hf, ht = _segments(held_out, base, mode, budget, rng)
    held = {name: {"start": _errors(base, {}, s, ft), "calibrated": _errors(world, ctrl, s, ft)}
            for name, s, ft in (("free", hf, False), ("contact", ht, True)) if len(s.rows)}
    world_values = current(world, episodes[0].scene)
    values = {n: ctrl[n] if n in ctrl else world_values[n] for n in stages[1]}
    return CalibrationResult(world, stages[1], values, records, held, sum(r["evaluations"] for r in records), ctrl)


def _errors(world: WorldParams, ctrl: dict, seg: Segments, with_ft: bool) -> dict:
    e: FitError = fit_error(world, seg, with_ft, ctrl)
    return {**e.as_dict(), "segments": len(seg.rows)}
