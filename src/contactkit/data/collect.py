"""Collect trajectories: run a policy in a simulated world and append episodes to an HDF5 dataset.

Every episode draws its randomness from ``numpy.random.default_rng([seed, episode])``, so a collection
that was interrupted and resumed writes exactly the episodes an uninterrupted run would have written.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from contactkit.control.policies import make_policy
from contactkit.data.parallel import RayPool, check_reachable, uses_ray
from contactkit.data.reader import open_dataset
from contactkit.data.schema import DatasetMeta, Episode
from contactkit.data.writer import DatasetWriter
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.model import World
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.rotations import quat_mul, rotvec_to_quat
from contactkit.scene import Scene
from contactkit.state import BodyState, stack_states
from contactkit.tasks.scenes import peg_in_hole, random_training_scene

TASKS = ("peg-in-hole", "random-scene", "tight-peg-in-hole", "bolting")
BACKENDS = ("mujoco", "engine")
TIGHT_TASKS = ("tight-peg-in-hole", "bolting")
"""The data-driven simulation paper's parts (:mod:`contactkit.tasks.assembly_scenes`): one scene for all episodes,
started engaged, so no random start offset or tilt by default (a 4 mm offset would put the peg in the wall)."""
MAX_EPISODE_STEPS = 1_000_000
"""Most control steps per episode: 14 hours at 20 Hz, at least 0.25 GB of rows held in memory until the episode is
committed (an episode is written whole); a longer one is a typo (issue 35: 1e11 steps asked for 559 GiB)."""
DEFAULT_START = {"start_xy": 0.004, "start_tilt": 0.02}
"""Random start of the other tasks: half-range of the xy offset [m], std of the tilt [rad]."""


@dataclass(frozen=True)
class CollectSpec:
    """What to collect.

    Attributes:
        task: ``"peg-in-hole"`` (one scene for all episodes), ``"random-scene"`` (a new paper-0
            training scene per episode), ``"tight-peg-in-hole"`` or ``"bolting"`` (the data-driven simulation
            paper's parts, :data:`TIGHT_TASKS`).
        shape, clearance, slot_shape: peg-in-hole geometry (shape names, radial clearance [m]).
        policy: policy name (:class:`~contactkit.control.policies.PolicyName`).
        episodes: number of episodes; steps: control steps per episode.
        seed: base seed (≥ 0).
        world: physics parameters.
        backend: simulator name.
        start_xy: half-range of the uniform random xy offset of the start pose [m]; None: the task's default
            (:data:`DEFAULT_START`, 0 for :data:`TIGHT_TASKS`).
        start_tilt: std of the random start tilt about x and y [rad]; None: as ``start_xy``.
        diameter, pitch: the bolting pair [m] (None: M48×5; else a Table II pair).
        coacd_cache: folder of CoACD's disk cache for the nut's (and a MuJoCo bolt's) convex pieces; None: none.
        fixed_scene: a scene to collect on instead of the task's built-in one (e.g. ``contactkit scene``'s file,
            :func:`contactkit.scene.load_scene`); only with ``task="peg-in-hole"``, whose random start it keeps.
    """

    task: str = "peg-in-hole"
    shape: str = "hexagon"
    clearance: float = 1e-3
    slot_shape: str | None = None
    policy: str = "random-spline"
    episodes: int = 20
    steps: int = 400
    seed: int = 0
    world: WorldParams = field(default_factory=WorldParams)
    backend: str = "mujoco"
    start_xy: float | None = None
    start_tilt: float | None = None
    diameter: float | None = None
    pitch: float | None = None
    coacd_cache: str | None = None
    fixed_scene: Scene | None = None

    def __post_init__(self):
        for name, default in DEFAULT_START.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, 0.0 if self.task in TIGHT_TASKS else default)
        if self.task not in TASKS:
            raise InvalidInputError(f"unknown task {self.task!r}; valid: {list(TASKS)}")
        if self.backend not in BACKENDS:
            raise InvalidInputError(f"unknown backend {self.backend!r}; valid: {list(BACKENDS)}")
        if self.episodes < 1 or self.steps < 1:
            raise InvalidInputError(f"episodes and steps must be >= 1, got {self.episodes}, {self.steps}")
        if self.steps > MAX_EPISODE_STEPS:
            raise InvalidInputError(f"steps {self.steps} per episode is more than {MAX_EPISODE_STEPS:,} (14 h at "
                                    "20 Hz, held in memory until the episode is written): split it into episodes")
        if self.task != "bolting" and (self.diameter is not None or self.pitch is not None):
            raise InvalidInputError(f"diameter and pitch choose a bolting pair; task {self.task!r} has none "
                                    f"(got diameter={self.diameter!r}, pitch={self.pitch!r})")
        if self.seed < 0:
            raise InvalidInputError(f"seed must be >= 0, got {self.seed}")
        if self.fixed_scene is not None and (self.task != "peg-in-hole" or not isinstance(self.fixed_scene, Scene)):
            raise InvalidInputError(f"a given scene replaces the peg-in-hole task's scene; got task {self.task!r} "
                                    f"and a {type(self.fixed_scene).__name__}")
        make_policy(self.policy, self.steps)  # validates the name

    def scene(self, rng: np.random.Generator | None = None) -> Scene:
        """The episode's scene: fixed for peg-in-hole and the tight tasks, drawn from ``rng`` for random scenes.
        A bolting scene for MuJoCo gets CoACD pieces on the bolt (MuJoCo sees nothing else of the thread)."""
        if self.task in TIGHT_TASKS:
            from contactkit.tasks.assembly_scenes import BoltPieces, bolting_scene, tight_peg_scene

            if self.task == "tight-peg-in-hole":
                return tight_peg_scene()
            pieces = BoltPieces.COACD if self.backend == "mujoco" else BoltPieces.EXACT
            return bolting_scene(self.diameter, self.pitch, bolt_pieces=pieces, cache_dir=self.coacd_cache)
        if self.fixed_scene is not None:
            return self.fixed_scene
        if self.task == "random-scene":
            if rng is None:
                raise InvalidInputError("random-scene needs a generator")
            return random_training_scene(rng)
        return peg_in_hole(self.shape, self.clearance, slot_shape=self.slot_shape)


def make_world(backend: str, scene: Scene, params: WorldParams, rng: np.random.Generator):
    """A simulator for ``scene``: ``"mujoco"`` → :class:`MujocoWorld`, ``"engine"`` → contactkit's own
    :class:`~contactkit.engine.world.EngineWorld` (default engine settings)."""
    if backend == "mujoco":
        return MujocoWorld(scene, params, rng=rng)
    if backend == "engine":
        from contactkit.engine.world import EngineWorld  # imported here: the engine loads only when used

        return EngineWorld(scene, params, rng=rng)
    raise InvalidInputError(f"unknown backend {backend!r}; valid: {list(BACKENDS)}")


def random_start(scene: Scene, rng: np.random.Generator, start_xy: float, start_tilt: float) -> BodyState:
    """The scene's start pose, shifted by U(±start_xy) in x, y and tilted by N(0, start_tilt) about x, y."""
    offset = np.array([*rng.uniform(-start_xy, start_xy, size=2), 0.0])
    tilt = np.array([*rng.normal(0.0, start_tilt, size=2), 0.0])
    quat = quat_mul(rotvec_to_quat(tilt), scene.tool.init_quat)
    return BodyState.at_rest(scene.tool.init_pos + offset, quat)


def run_episode(
    world: World, policy, steps: int, start: BodyState, rng: np.random.Generator, seed: int | None = None
) -> Episode:
    """Roll ``policy`` for ``steps`` control steps from ``start`` in ``world`` (any :class:`~contactkit.model.World`:
    MuJoCo, the engine, or your own); returns the Episode. Warns (:class:`~contactkit.control.clipping.CommandsClipped`)
    with the fraction of steps in which the scene controller's limits clipped a command."""
    from contactkit.control.clipping import ClipTally

    tally = ClipTally()
    state = world.reset(start)
    policy.reset(world.scene, state, rng)
    states, actions, commands, wrenches = [state], [], [], []
    reading = np.zeros(6)
    for t in range(steps):
        command = policy.act(t, state, reading)
        result = world.step(command, policy.mode)
        state, reading = result.state, result.wrench
        tally.add(getattr(result, "clipped", frozenset()))
        states.append(state)
        actions.append(result.applied)
        commands.append(command)
        wrenches.append(reading)
    tally.warn(f"episode of seed {seed} ({world.scene.name})")
    time = np.arange(steps + 1) * world.params.control_dt
    return Episode.from_states(
        time, stack_states(states), np.array(actions), np.array(commands), np.array(wrenches), seed
    )


def dataset_meta(spec: CollectSpec) -> DatasetMeta:
    """Per-file attributes of a collection (the scene is the first episode's for random scenes)."""
    policy = make_policy(spec.policy, spec.steps)
    scene = spec.scene(np.random.default_rng([spec.seed, 0, 1]))
    policy_json = {
        **policy.params(),
        "task": spec.task,
        "start_xy": spec.start_xy,
        "start_tilt": spec.start_tilt,
    }
    if spec.task == "bolting":
        policy_json |= {"diameter": spec.diameter, "pitch": spec.pitch}
    return DatasetMeta(
        scene=scene.to_json(),
        world=spec.world.to_json(),
        policy=json.dumps(policy_json),
        seed=spec.seed,
        action_mode=policy.mode,
        control_dt=spec.world.control_dt,
        backend=spec.backend,
    )


def collect_episode(spec: CollectSpec, episode: int) -> Episode:
    """Episode number ``episode`` of ``spec``: a pure function of the two (its generator is
    ``default_rng([spec.seed, episode])``, its scene's ``default_rng([spec.seed, episode, 1])``), so any process
    or machine computes the same episode."""
    rng = np.random.default_rng([spec.seed, episode])
    scene = spec.scene(np.random.default_rng([spec.seed, episode, 1]))
    world = make_world(spec.backend, scene, spec.world, rng)
    start = random_start(scene, rng, spec.start_xy, spec.start_tilt)
    ep = run_episode(world, make_policy(spec.policy, spec.steps), spec.steps, start, rng, seed=spec.seed)
    if spec.task == "random-scene":
        ep = dataclasses.replace(ep, scene=scene.to_json())
    return ep


def _episode_job(job: tuple[CollectSpec, int]) -> Episode:
    """:func:`collect_episode` of a ``(spec, episode)`` job (a Ray task)."""
    return collect_episode(*job)


def collect(spec: CollectSpec, out: str, progress: Callable[[int, int], None] | None = None, workers: int = 1,
            ray_address: str | None = None) -> int:
    """Collect ``spec.episodes`` episodes into ``out``, resuming after the last committed one.

    With ``workers > 1`` or a ``ray_address`` the episodes run as Ray tasks (:class:`~contactkit.data.parallel.RayPool`)
    and this process alone writes them, in episode order; each episode is :func:`collect_episode` of its index,
    so the file holds the same episodes, bit for bit, as a serial run (``docs/scale.md``).

    Args:
        spec: what to collect.
        out: HDF5 path; an existing dataset with the same meta is resumed, a different one refused.
        progress: called as ``progress(done, total)`` after each committed episode.
        workers: episodes running at a time (1 and no ``ray_address``: in this process, no Ray).
        ray_address: a running Ray cluster (``HOST:PORT``, ``auto``); None: a local instance of ``workers`` CPUs.

    Returns:
        Number of episodes written by this call. A call that fails before committing its first episode to a file it
        created removes that file (and the folders it made for it): a refused run leaves nothing behind.
    """
    parallel = uses_ray(workers, ray_address)
    if ray_address is not None:
        check_reachable(ray_address)  # before OUT is created
    written = 0
    created = _missing_folders(Path(out).parent)
    fresh = not Path(out).exists()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    try:
        with DatasetWriter(out, meta=dataset_meta(spec), resume=True) as writer:
            if progress:
                progress(writer.n_committed, spec.episodes)
            todo = range(writer.n_committed, spec.episodes)
            with RayPool(workers, ray_address) if parallel and todo else nullcontext() as pool:
                episodes = (pool.imap(_episode_job, [(spec, k) for k in todo]) if pool is not None
                            else (collect_episode(spec, k) for k in todo))
                for episode, ep in zip(todo, episodes, strict=True):
                    writer.append_episode(ep)
                    written += 1
                    if progress:
                        progress(episode + 1, spec.episodes)
    except BaseException:
        if fresh and written == 0:  # a refused run (a world that cannot be built, a first episode that diverged)
            _remove_unwritten(Path(out), created)  # leaves nothing that a corrected command would have to resume
        raise
    return written


def _missing_folders(folder: Path) -> list[Path]:
    """The folders from ``folder`` up that do not exist yet (deepest first): what ``mkdir(parents=True)`` creates."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_unwritten(out: Path, created: list[Path]) -> None:
    """Remove the dataset ``out`` this run created without committing an episode, and the folders it created for
    it (when empty); a failure to remove is ignored (the original error is what the user needs)."""
    try:
        out.unlink(missing_ok=True)
        for folder in created:
            folder.rmdir()
    except OSError:
        pass


def set_aside_if_stale(path: str | Path, meta: DatasetMeta) -> Path | None:
    """Rename the dataset at ``path`` to ``NAME.stale-<n>.h5`` beside it when it was written with another ``meta``
    (or cannot be read), so that a regenerating pipeline (the demo) collects afresh where :func:`collect` would
    refuse to resume; nothing written is lost. Returns the new name, or None when the file is absent or matches."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        with open_dataset(path) as ds:
            if not ds.meta.mismatched_keys(meta):
                return None
    except ContactkitError:
        pass
    n = 1
    while (aside := path.with_name(f"{path.stem}.stale-{n}{path.suffix}")).exists():
        n += 1
    path.rename(aside)
    return aside
