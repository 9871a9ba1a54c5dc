"""Estimating uncertain geometry ``θ`` from F/T readings with the differentiable step (placement paper §V, §VI-C).

* :func:`residual` — eqs 9–10: one-step predictions ``y_{t'+1} = f(x_{t'}, u_{t'}; θ)`` from the measured states and
  the applied references of the last ``H`` steps, compared with the measured readings (a weighted squared error).
* :func:`descend` — §V-A: gradient descent on ``r_t(θ)`` from the previous estimate (``iterations`` steps, each
  scaled by a running maximum of the gradient's magnitude per parameter, so a step never exceeds ``step`` [m]; a step
  that raises ``r_t`` is undone and the next one halved).
* :func:`window_steps` — which transitions ``r_t`` compares: the last ``H``, optionally after the last touches before
  them (a departure from eq 10 for policies that touch in bursts; measured by the placement experiment).
* :class:`Belief`, :func:`init_belief`, :func:`update_belief`, :func:`best_estimate` — §V-B, eq 11: ``N`` estimates with
  their costs; every one descends, and the one acted on is the least costly by costs accumulated over time
  (:func:`least_cost`; the incumbent among ties). Estimates that predict no contact while contact is measured are
  re-drawn from the initial distribution (:class:`Restart`) instead of re-evaluated, within the same rollout budget.
  Both depart from §V-B as written (``DescentConfig(evidence_decay=0)`` and no ``restart`` recover it); the placement
  experiment measures both (its ``ours-eq11`` row).
* :class:`Particles`, :func:`pf_update` — the particle-filter baseline (§VI-C, eq 12): Gaussian random-walk
  prediction, weights ``exp(-β c)``, low-variance (systematic) resampling.
* :func:`triggered` — the trigger-based heuristic's test (§VI-C).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from contactkit.engine.diff.step import DiffScene, StepConfig, diff_step
from contactkit.errors import InvalidInputError
from contactkit.estimation.resampling import normalize_log_weights, systematic_resample

HORIZON = 5
"""History length ``H`` of the paper (§VI-A)."""

INITIAL_COST = 1.0
"""The arbitrary positive cost ``c_0`` of a fresh estimate (eq 11)."""

FORCE_SCALE = 1.0
"""Force error that costs 1 [N]."""

TORQUE_SCALE = 0.02
"""Torque error that costs 1 [N·m] (a force error of 1 N at 20 mm)."""

MEASURED_CONTACT = 0.1
"""A window whose largest measured force exceeds this [N] saw contact (the reference world's F/T readings are
noise-free; a real sensor's noise floor goes here)."""

PREDICTED_CONTACT = 1e-9
"""An estimate whose predicted forces all stay below this [N] predicts no contact over the window: its residual is
flat there (no contact impulse depends on ``θ``) and descent cannot move it."""

TIE_RTOL = 0.1
"""Costs within this fraction of the least cost tie, and among tied estimates the one acted on is kept (§V-B's
minimum, with ties broken toward the incumbent): with no contact in the window every estimate that predicts none costs
exactly the same, and a parameter that the window's contacts do not involve (the far wall of ``shape`` while one
corner touches) changes the cost by well under this, so the choice would otherwise flip between hypotheses on noise
(a 10 % cost ratio is a ~5 % force error)."""


TIE_ATOL = 0.01
"""Costs within this of the least cost also tie (a 0.1 N force error over the window): when the window holds only a
light touch every estimate's cost is near zero and a relative tolerance alone would switch hypotheses on differences
below any F/T sensor's resolution."""


@dataclass(frozen=True)
class History:
    """The transitions ``r_t`` compares (the last ``H``, or :func:`window_steps`): measured tool states, applied
    references and measured readings (numpy).

    Attributes:
        pos: ``(H, 3)`` [m]. quat: ``(H, 4)``. lin_vel: ``(H, 3)`` [m/s]. ang_vel: ``(H, 3)`` [rad/s] (world frame).
        target_pos: ``(H, 3)`` [m] and target_quat: ``(H, 4)``: the reference poses ``u_{t'}``.
        wrench: ``(H, 6)`` F/T readings ``y_{t'+1}`` measured after each step, sensor frame [N, N·m].
    """

    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray
    target_pos: np.ndarray
    target_quat: np.ndarray
    wrench: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.pos)
        shapes = {"pos": 3, "quat": 4, "lin_vel": 3, "ang_vel": 3, "target_pos": 3, "target_quat": 4, "wrench": 6}
        for name, width in shapes.items():
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (n, width) or not np.all(np.isfinite(value)):
                raise InvalidInputError(f"history.{name} must be a finite ({n}, {width}) array, got {value.shape}")
            object.__setattr__(self, name, value)

    @property
    def length(self) -> int:
        """Number of transitions."""
        return len(self.pos)

    def last(self, horizon: int) -> History:
        """The last ``horizon`` transitions."""
        return History(*(getattr(self, f.name)[-horizon:] for f in dataclasses.fields(self)))


def window_steps(forces: np.ndarray, horizon: int = HORIZON, memory: int = 0) -> np.ndarray:
    """Indices (ascending) of the transitions that ``r_t`` compares (eq 10): the last ``horizon`` of ``T``, after the
    last ``memory`` earlier ones whose measured force ``forces (T,)`` [N] exceeds :data:`MEASURED_CONTACT`.

    ``memory = 0`` is eq 10 as written (the last ``H`` steps). The paper's placements press continuously, so its
    window always holds contact; a policy that lifts off to realign (:func:`~contactkit.tasks.placement_policy.policy`)
    touches in bursts of a few steps, and a window of the last ``H`` steps alone then forgets each touch within
    ``H`` steps: estimates that explain only the latest touch (a ring seen from another side, a pillar edge on the
    other side) win. Each step's prediction starts from its measured state (eq 9), so the steps need not be
    consecutive.
    """
    forces = np.asarray(forces, dtype=np.float64)
    if forces.ndim != 1 or horizon < 1 or memory < 0:
        raise InvalidInputError(f"window_steps: forces must be (T,), horizon >= 1 and memory >= 0; got shape "
                                f"{forces.shape}, horizon={horizon}, memory={memory}")
    start = max(len(forces) - horizon, 0)
    earlier = np.flatnonzero(forces[:start] > MEASURED_CONTACT)
    return np.concatenate([earlier[max(len(earlier) - memory, 0):], np.arange(start, len(forces))])


@dataclass(frozen=True)
class WrenchModel:
    """The differentiable model (eq 1) and the residual's weights.

    Attributes:
        scene: the tool, environment and controller. step: its settings (``dt`` = the control period).
        force_scale: [N] and torque_scale: [N·m]: the errors that cost 1 (eq 10's distance ``r``).
    """

    scene: DiffScene
    step: StepConfig = StepConfig()
    force_scale: float = FORCE_SCALE
    torque_scale: float = TORQUE_SCALE


def _predict(model: WrenchModel, history: History, thetas: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    n, h = thetas.shape[0], history.length
    rows = {k: torch.as_tensor(getattr(history, k)).repeat(n, 1) for k in
            ("pos", "quat", "lin_vel", "ang_vel", "target_pos", "target_quat")}
    out = diff_step(model.scene, model.step, rows["pos"], rows["quat"], rows["lin_vel"], rows["ang_vel"],
                    rows["target_pos"], rows["target_quat"], torch.repeat_interleave(thetas, h, dim=0))
    return out.wrench.reshape(n, h, 6), np.asarray(out.n_contacts).reshape(n, h).any(axis=1)


def predict_wrenches(model: WrenchModel, history: History, thetas: torch.Tensor) -> torch.Tensor:
    """Eq 9: predicted readings ``(N, H, 6)`` [N, N·m] of ``N`` geometries ``thetas (N, P)`` over the history."""
    return _predict(model, history, thetas)[0]


def _residual(model: WrenchModel, history: History, thetas: torch.Tensor) -> tuple[torch.Tensor, np.ndarray,
                                                                                   np.ndarray]:
    """``(r_t (N,), feature pairs in the margin (N,) bool, predicted contact force (N,) bool)``."""
    scale = torch.tensor([model.force_scale] * 3 + [model.torque_scale] * 3, dtype=torch.float64)
    wrench, near = _predict(model, history, thetas)
    error = (wrench - torch.as_tensor(history.wrench)) / scale
    force = wrench.detach()[..., :3].norm(dim=-1).amax(dim=-1).numpy() > PREDICTED_CONTACT
    return (error * error).sum(-1).mean(-1), near, force


def residual(model: WrenchModel, history: History, thetas: torch.Tensor) -> torch.Tensor:
    """Eq 10: ``r_t(θ) = mean_t' Σ_k ((y_k - y_k^gt) / s_k)²`` ``(N,)`` for ``thetas (N, P)`` (≥ 0, 0 iff equal)."""
    return _residual(model, history, thetas)[0]


@dataclass(frozen=True)
class DescentConfig:
    """Gradient descent on ``r_t`` (§V-A).

    Attributes:
        iterations: gradient steps per time step; with the final cost evaluation each estimate costs
            ``iterations + 1`` rollouts per step, so 4 gives 10 estimates the 50 rollouts of the 50-particle filter
            (the paper's equal budget, §VI-C).
        step: largest change of a parameter per gradient step [θ units, m].
        memory: decay per step of the running maximum of ``|∂r/∂θ_j|`` that scales the steps (AdaMax without momentum).
        floor: gradient magnitude [1/θ unit] that earns a full step; smaller gradients (of a residual that hardly
            depends on ``θ_j``) take proportionally smaller steps instead of being normalised up to full ones.
        evidence_decay: ``γ`` of the evidence ``e_t = γ e_{t-1} + c_t`` by which the estimate acted on is chosen
            (0: by ``c_t`` alone, eq 11 as written). The window holds ``H`` = 5 steps, and a light touch lasts
            about as long, so by ``c_t`` alone what one touch taught is gone at the next: a window without contact
            costs every estimate that predicts none the same, and the tail of a touch (forces of tenths of a newton)
            ranks estimates on differences below a sensor's resolution. Decay keeps the ranking through gaps (all
            costs there are equal) and weighs recent touches most. A re-drawn estimate (:func:`descend`'s
            ``restart``) inherits the evidence of the one it replaces.
    """

    iterations: int = 4
    step: float = 5e-4
    memory: float = 0.9
    floor: float = 2.0
    evidence_decay: float = 0.9


@dataclass(frozen=True)
class Belief:
    """Eq 11: ``N`` estimates ``thetas (N, P)`` with costs ``costs (N,)``, each one's gradient scale ``scale (N, P)``,
    the index ``chosen`` of the estimate acted on, and ``evidence (N,)``: each estimate's costs accumulated over time
    (:class:`DescentConfig` ``evidence_decay``; ``None``: none yet)."""

    thetas: np.ndarray
    costs: np.ndarray
    scale: np.ndarray
    chosen: int = 0
    evidence: np.ndarray | None = None


def init_belief(theta_init: np.ndarray, std: np.ndarray, n: int, rng: np.random.Generator) -> Belief:
    """``bel_0``: the initial guess and ``n - 1`` draws ``θ_init + ε``, ``ε ~ N(0, diag(std²))``; costs ``c_0``."""
    theta_init = np.asarray(theta_init, dtype=np.float64)
    if n < 1:
        raise InvalidInputError(f"a belief needs at least one estimate, got n={n}")
    noise = rng.normal(0.0, 1.0, (n, theta_init.size)) * np.asarray(std, dtype=np.float64)
    noise[0] = 0.0
    return Belief(theta_init + noise, np.full(n, INITIAL_COST), np.zeros((n, theta_init.size)))


@dataclass(frozen=True)
class Restart:
    """Where an estimate that the window cannot move is drawn anew: ``mean + ε``, ``ε ~ N(0, diag(std²))`` — the
    distribution ``bel_0`` was drawn from (§V-B's multiple initialisations).

    Attributes:
        mean: ``(P,)`` ``θ_init`` [θ units, m]. std: ``(P,)`` the perception noise [θ units, m].
    """

    mean: np.ndarray
    std: np.ndarray


def descend(model: WrenchModel, history: History, belief: Belief, config: DescentConfig = DescentConfig(),
            restart: Restart | None = None, rng: np.random.Generator | None = None) -> Belief:
    """§V-A for every estimate of ``belief``: ``config.iterations`` scaled gradient steps on ``r_t``; new costs.

    Each step is ``Δθ_j = -s · step · g_j / max(m_j, |g_j|, floor)`` with ``g = ∂r_t/∂θ`` (autograd through the step),
    ``m`` the decayed running maximum and ``s`` the backtracking factor (1, halved after each rejected step), so
    ``|Δθ_j| ≤ step``. A step is rejected, and undone, when the next evaluation of ``r_t`` (the forward pass of the
    next gradient, or the final cost evaluation) is higher: ``r_t`` rises steeply where the model's surfaces press into
    each other and is flat where they part (an open gap), so a full step past its minimum would land on the flat side
    and stay there. Rollouts per estimate: ``iterations + 1`` (the budget of §VI-C). Returns the estimates with
    ``r_t`` at them as costs.

    With ``restart`` (and ``rng``): while the window measured contact (:data:`MEASURED_CONTACT`), an estimate that
    predicts none (:data:`PREDICTED_CONTACT`) has ``∂r_t/∂θ = 0`` and would spend its rollouts re-evaluating the same
    point; instead its next evaluation is of a fresh draw from ``restart``, kept only if it costs less (the same
    acceptance test as a gradient step), so the budget is unchanged and the cost never rises.
    """
    if restart is not None and rng is None:
        raise InvalidInputError("descend: a restart distribution needs a random generator (rng)")
    thetas, scale = belief.thetas.copy(), belief.scale.copy()
    shrink = np.ones(len(thetas))
    measured = restart is not None and float(np.linalg.norm(history.wrench[:, :3], axis=1).max()) > MEASURED_CONTACT
    kept = None  # the last accepted estimates, their costs, gradients and whether they predict contact
    drawn = np.zeros(len(thetas), dtype=bool)
    for it in range(config.iterations + 1):
        last = it == config.iterations
        theta = torch.tensor(thetas, requires_grad=not last)
        cost, near, force = _residual(model, history, theta)
        costs = cost.detach().numpy()
        grad = np.zeros_like(thetas) if last or not near.any() else \
            torch.autograd.grad(cost.sum(), theta)[0].numpy()
        if kept is not None:
            worse = (costs > kept[1]) | (drawn & (costs >= kept[1]))  # a draw must cost strictly less
            thetas[worse], costs[worse], grad[worse], force[worse] = (k[worse] for k in kept)
            shrink[worse] *= 0.5
        if last or (kept is None and not near.any() and not measured):  # r_t is flat in θ everywhere
            break
        scale = np.maximum(config.memory * scale, np.abs(grad))
        kept = (thetas.copy(), costs.copy(), grad.copy(), force.copy())
        thetas = thetas - (shrink * config.step)[:, None] * grad / np.maximum(scale, config.floor)
        drawn = ~force & measured
        if drawn.any():
            thetas[drawn] = restart.mean + rng.normal(0.0, 1.0, (int(drawn.sum()), thetas.shape[1])) * restart.std
            scale[drawn], shrink[drawn] = 0.0, 1.0
    evidence = costs if belief.evidence is None else config.evidence_decay * belief.evidence + costs
    return Belief(thetas, costs, scale, least_cost(evidence, belief.chosen), evidence)


def least_cost(costs: np.ndarray, incumbent: int) -> int:
    """§V-B: the index of the estimate with the minimum cost in ``costs (N,)``; ``incumbent`` where it ties
    (:data:`TIE_RTOL`, :data:`TIE_ATOL`)."""
    best = int(np.argmin(costs))
    return incumbent if costs[incumbent] <= costs[best] * (1.0 + TIE_RTOL) + TIE_ATOL else best


def update_belief(model: WrenchModel, history: History, belief: Belief, config: DescentConfig = DescentConfig(),
                  restart: Restart | None = None, rng: np.random.Generator | None = None) -> Belief:
    """``bel_{t-1} → bel_t`` (§V-B): each estimate descends on the last ``H`` steps (:func:`descend`, with its
    ``restart`` of estimates the window cannot move); no history changes nothing."""
    return belief if history.length == 0 else descend(model, history, belief, config, restart, rng)


def best_estimate(belief: Belief) -> np.ndarray:
    """The estimate ``(P,)`` acted on (§V-B): the least costly (the incumbent among ties, :func:`least_cost`)."""
    return belief.thetas[belief.chosen].copy()


@dataclass(frozen=True)
class ParticleFilterConfig:
    """The particle-filter baseline (§VI-C).

    Attributes:
        n_particles: ``N`` (50 in the paper: as many rollouts per step as 10 estimates × 5 rollouts each).
        process_std: ``(P,)`` std of the random walk added in the prediction [θ units, m].
        beta: ``β`` of the weights ``exp(-β c)`` (eq 12).
    """

    n_particles: int = 50
    process_std: float | np.ndarray = 3e-4
    beta: float = 2.0


@dataclass(frozen=True)
class Particles:
    """Particles ``thetas (N, P)`` (equally weighted after resampling)."""

    thetas: np.ndarray


def init_particles(theta_init: np.ndarray, std: np.ndarray, config: ParticleFilterConfig,
                   rng: np.random.Generator) -> Particles:
    """``N`` particles ``θ_init + ε`` (the initial guess itself first), as :func:`init_belief`."""
    return Particles(init_belief(theta_init, std, config.n_particles, rng).thetas)


def pf_update(model: WrenchModel, history: History, particles: Particles, config: ParticleFilterConfig,
              rng: np.random.Generator) -> tuple[Particles, np.ndarray, np.ndarray]:
    """One particle-filter step: predict (random walk), weigh by ``exp(-β r_t(θ))``, estimate, resample.

    Returns:
        ``(particles after resampling, estimate (P,) = weighted mean before resampling, costs (N,))``. With an empty
        history the particles only diffuse and the weights are uniform.
    """
    thetas = particles.thetas + rng.normal(0.0, 1.0, particles.thetas.shape) * np.asarray(config.process_std)
    if history.length == 0:
        costs = np.zeros(len(thetas))
    else:
        with torch.no_grad():
            costs = residual(model, history, torch.tensor(thetas)).numpy()
    log_w = normalize_log_weights(-config.beta * costs)
    estimate = np.exp(log_w) @ thetas
    return Particles(thetas[systematic_resample(log_w, rng)]), estimate, costs


@dataclass(frozen=True)
class TriggerConfig:
    """The trigger heuristic (§VI-C): release once the measured contact force exceeds ``threshold`` [N]."""

    threshold: float = 1.0


def triggered(wrench: np.ndarray, config: TriggerConfig = TriggerConfig()) -> bool:
    """Whether the force of a reading ``(6,)`` [N, N·m] exceeds the threshold."""
    return bool(np.linalg.norm(np.asarray(wrench, dtype=np.float64)[:3]) > config.threshold)
