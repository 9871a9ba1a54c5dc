"""The planning models of the MPC experiments: MuJoCo ("ground-truth"), Act-FIGNet from a checkpoint and the
contactkit engine, each a :class:`~contactkit.model.ContactModel` built for a scene, or missing with a reason.

Shared by ``mpc-insertion``, ``pf-tracking`` and ``benchmark replan`` (Act-FIGNet paper §IV-A: the same agent plans
with each model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contactkit.engine.params import EngineParams
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.model import ActionMode, ContactModel
from contactkit.physics import WorldParams
from contactkit.scene import Scene

__all__ = [
    "CHECKPOINT_MODELS",
    "MODEL_FACTORIES",
    "OPT_IN_MODELS",
    "PLANNING_ENGINE",
    "RESIDUAL_CHECKPOINT",
    "TRUTH_MODELS",
    "InsertionBudget",
    "ModelUnavailable",
    "act_fignet_checkpoint",
    "build_models",
    "known_models",
    "residual_checkpoint",
]

PLANNING_ENGINE = EngineParams(max_step=5e-3, max_iterations=20, max_contacts=24, max_initial_penetration=5e-3)
"""Engine settings of the "engine" planning model: 5 ms engine steps (10 per 50 ms control step), at most 20
solver sweeps and 24 contacts per step, and observed states up to 5 mm deep in the slot's geometry are
accepted (projected out by the first step): MuJoCo's soft contacts, seen in the engine's node-contact
geometry, go deeper than the default 1 mm allows. Chosen for planning speed over the defaults (2.5 ms, 60
sweeps, 48 contacts) after a one-off comparison of random downward rollouts against MuJoCo that no command
of the repo reproduces; what the full run reports is the replan time and success with these settings."""


@dataclass(frozen=True)
class InsertionBudget:
    """How much of the experiment to run.

    Attributes:
        pairings: keys of :data:`INSERTION_PAIRINGS` to evaluate.
        episodes_per_pairing: episodes per pairing (Act-FIGNet paper: 10 per tool shape).
        max_steps: control steps per episode (Act-FIGNet paper: 150).
        horizon, population, iterations, replan_every: iCEM settings (Table IV: 50, 20, 5, 5).
        n_threads: rollout threads of the ground-truth (MuJoCo) and engine planning models (0: calling thread).
        checkpoint: Act-FIGNet checkpoint to plan with (None: Act-FIGNet is listed as missing).
        models: names of :data:`MODEL_FACTORIES` to run (None: all); the others are listed as missing.
    """

    pairings: tuple[str, ...]
    episodes_per_pairing: int
    max_steps: int
    horizon: int = 50
    population: int = 20
    iterations: int = 5
    replan_every: int = 5
    n_threads: int = 0
    checkpoint: str | None = None
    models: tuple[str, ...] | None = None


class ModelUnavailable(ContactkitError):
    """A planning model that cannot be built here; the message says why."""


ModelFactory = Callable[[Scene, WorldParams, InsertionBudget, str], ContactModel]


def _ground_truth(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str) -> ContactModel:
    """MuJoCo in ``params``, batched from tool states (a world with hidden state is refused by name; as the truth of
    :func:`build_models` such a world gets the :class:`~contactkit.mujoco.oracle.WorldOracle` instead)."""
    from contactkit.mujoco.model import MujocoContactModel

    return MujocoContactModel(scene, params, ActionMode.POSE_DELTA, n_threads=budget.n_threads)


def _truth_oracle(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str) -> ContactModel:
    """The ground truth of a world with hidden state (latency, compliance, filter:
    :meth:`~contactkit.physics.WorldParams.unmodelled_effects`): the :class:`~contactkit.mujoco.oracle.WorldOracle`,
    which the experiment must make follow the environment's world (it plans from nothing else)."""
    from contactkit.mujoco.oracle import WorldOracle

    return WorldOracle(scene, params, ActionMode.POSE_DELTA, n_threads=budget.n_threads)


def _check_protocol(model, name: str) -> ContactModel:
    """Refuse a model that does not implement the ContactModel protocol."""
    missing = [a for a in ("action_mode", "history", "control_dt") if not hasattr(model, a)]
    if missing:
        raise ModelUnavailable(f"{name} does not implement the ContactModel protocol yet (lacks {missing})")
    return model


def act_fignet_checkpoint(budget: InsertionBudget) -> Path:
    """The checkpoint the "act-fignet" model loads: ``budget.checkpoint`` (``--checkpoint``). There is no
    default: a checkpoint picked up from the working directory would make a run that no clean checkout repeats
    (and that the harness refuses to store), so the model is listed as missing instead.

    Raises:
        ModelUnavailable: no checkpoint was given, or the given file does not exist.
    """
    if budget.checkpoint is None:
        raise ModelUnavailable("no --checkpoint given: Act-FIGNet runs only from a checkpoint you name "
                               "(e.g. models/act-fignet-hexagon-target/best.safetensors, or contactkit train's output)")
    path = Path(budget.checkpoint)
    if not path.is_file():
        raise ModelUnavailable(f"no Act-FIGNet checkpoint at {path}")
    return path


def _act_fignet(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str) -> ContactModel:
    path = act_fignet_checkpoint(budget)
    try:
        from contactkit.models.gnn import GnnContactModel

        model = GnnContactModel.from_checkpoint(path, scene, device=device)
    except (ContactkitError, ImportError) as exc:
        raise ModelUnavailable(f"Act-FIGNet checkpoint {path} cannot plan pose deltas: "
                               f"{type(exc).__name__}: {exc}") from exc
    return _check_protocol(model, f"Act-FIGNet (GnnContactModel from {path})")


def _engine(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str) -> ContactModel:
    from contactkit.engine.model import EngineContactModel

    model = EngineContactModel(scene, params, ActionMode.POSE_DELTA, engine=PLANNING_ENGINE,
                               n_threads=budget.n_threads)
    return _check_protocol(model, "contactkit engine")


RESIDUAL_CHECKPOINT = Path("models/residual-mujoco-hexagon-target/residual.safetensors")
"""The committed residual over nominal MuJoCo (trained by the stored ``prediction-accuracy`` run on the target world),
relative to the source checkout."""


def residual_checkpoint() -> Path:
    """The committed residual checkpoint, found from the source checkout this package runs from (any working folder).

    Raises:
        ModelUnavailable: not a source checkout, or the file is missing.
    """
    from contactkit.eval.store import source_root

    try:
        path = source_root() / RESIDUAL_CHECKPOINT
    except ContactkitError as exc:
        raise ModelUnavailable(f"the committed residual is found from a source checkout: {exc}") from exc
    if not path.is_file():
        raise ModelUnavailable(f"no residual checkpoint at {path}")
    return path


def _residual(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str) -> ContactModel:
    """The committed residual over nominal MuJoCo; refused when the run's model world is not its backbone's."""
    from contactkit.models.residual import ResidualContactModel, check_compatible, load_residual, make_backbone

    path = residual_checkpoint()
    net, ckpt = load_residual(path)
    try:
        check_compatible(ckpt, ckpt.backbone, params, ActionMode.POSE_DELTA, str(scene.meta.get("task", "")))
    except ContactkitError as exc:
        raise ModelUnavailable(f"residual {path}: {exc}") from exc
    backbone = make_backbone(ckpt.backbone, scene, params, ActionMode.POSE_DELTA, n_threads=budget.n_threads)
    return _check_protocol(ResidualContactModel(net.to(device), backbone, scene), f"residual ({path})")


MODEL_FACTORIES: dict[str, ModelFactory] = {
    "ground-truth": _ground_truth,
    "act-fignet": _act_fignet,
    "engine": _engine,
    "residual-mujoco": _residual,
}
"""Planning models by name; each builds a ContactModel for a scene or raises :class:`ModelUnavailable`."""


def known_models(models) -> tuple[str, ...]:
    """``models`` as a tuple of names of :data:`MODEL_FACTORIES`.

    Raises:
        InvalidInputError: a name that is not one (the message lists the known ones).
    """
    unknown = sorted(set(models) - set(MODEL_FACTORIES))
    if unknown:
        raise InvalidInputError(f"unknown models {unknown}; available: {sorted(MODEL_FACTORIES)}")
    return tuple(models)


OPT_IN_MODELS = frozenset({"residual-mujoco"})
"""Models planned with only when named (``--models``); not in the default set (neither run nor listed missing): the
stored runs' default model sets predate them."""
CHECKPOINT_MODELS = frozenset({"act-fignet"})
"""Models of :data:`MODEL_FACTORIES` that run only from a checkpoint."""
TRUTH_MODELS = frozenset({"ground-truth"})
"""Models built in the world that acts as reality when :func:`build_models` is given one (``truth``): the
Act-FIGNet paper's ground-truth row plans with the simulator the episodes run in (§IV-A)."""


def build_models(scene: Scene, params: WorldParams, budget: InsertionBudget, device: str,
                 modes: tuple[ActionMode, ...] = (ActionMode.POSE_DELTA,), truth: WorldParams | None = None
                 ) -> tuple[dict[str, ContactModel], list[dict]]:
    """``({name: model}, [{"model": name, "reason": why}])``: the models that exist and those that do not.

    Every model assumes ``params`` (the model world) except those of :data:`TRUTH_MODELS`, which are built in
    ``truth`` (the world that acts as reality) when it is given — as a :class:`~contactkit.mujoco.oracle.WorldOracle`
    when that world has hidden state (the caller makes it follow the environment's world). A model whose
    ``action_mode`` is not in ``modes`` is missing (the MPC agent plans pose deltas, as the impedance-controlled
    tool of Act-FIGNet paper §IV-A takes them).
    """
    models, missing = {}, []
    for name, factory in MODEL_FACTORIES.items():
        if name in OPT_IN_MODELS and name not in (budget.models or ()):
            continue  # not part of the default set: neither run nor missing unless named
        if budget.models is not None and name not in budget.models:
            missing.append({"model": name, "reason": f"not run: this run's budget plans with {list(budget.models)}"})
            continue
        try:
            if truth is not None and name in TRUTH_MODELS:
                model = (_truth_oracle if truth.unmodelled_effects() else factory)(scene, truth, budget, device)
            else:
                model = factory(scene, params, budget, device)
            if ActionMode(model.action_mode) not in modes:
                raise ModelUnavailable(f"{name} takes {ActionMode(model.action_mode).value} actions, not one of "
                                       f"{[m.value for m in modes]}")
            models[name] = model
        except ModelUnavailable as exc:
            missing.append({"model": name, "reason": str(exc)})
    return models, missing
