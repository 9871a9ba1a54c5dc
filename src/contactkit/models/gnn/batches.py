"""Training batches of Act-FIGNet (paper §III-D): windows → augmented graph batches, in worker processes if asked.

Building a batch (sampling windows, rotating the world, adding noise, finding the face-interaction edges) runs in
numpy on the CPU and costs more than a GPU's optimisation step on it. The batch of optimisation step ``k`` is drawn
from its own generator ``default_rng([seed, k])``, so batches can be built ahead, in any order, by any number of
worker processes: a run gives the same batches with 0 or ``N`` workers, and a resumed run the same as an
uninterrupted one.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.kinematics import StepSpec, prepare_scene
from contactkit.models.gnn.samples import Batch, make_batch, prepare_window, random_rotation
from contactkit.scene import Scene

PREFETCH_PER_WORKER = 2
"""Batches each worker builds ahead of the optimiser."""

START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
"""How workers start: forked where the platform can (no re-import, the windows inherited, as torch's DataLoader
does; workers touch neither CUDA nor the parent's threads, they only build CPU batches), else spawned."""


class Windows:
    """Windows of one or several scenes, turned into samples on demand.

    Args:
        windows: indexable window dicts (:mod:`.samples`); an ``action_mode`` attribute, when present, must suit
            ``mode``.
        scene: the scene of the windows, or a sequence indexed by their ``scene_index``.
        step: control period and gravity of the data.
        mode: the model's action mode.
        previous: the model also reads the previous step's action (``GraphConfig.previous_command``).
    """

    def __init__(self, windows, scene: Scene | Sequence[Scene], step: StepSpec, mode: ActionMode,
                 previous: bool = False):
        self.windows, self.mode, self.previous = windows, ActionMode(mode), bool(previous)
        data_mode = getattr(windows, "action_mode", None)
        if self.mode is ActionMode.POSE_DELTA and data_mode is not None and ActionMode(data_mode) != self.mode:
            raise InvalidInputError(f"a {self.mode.value} model needs pose-delta commands, but the windows were "
                                    f"recorded with {ActionMode(data_mode).value} commands; train a "
                                    f"{ActionMode.WRENCH.value} model (GraphConfig.action_mode) on them")
        scenes = [scene] if isinstance(scene, Scene) else list(scene)
        self.arrays = [prepare_scene(s, step) for s in scenes]

    def __len__(self) -> int:
        return len(self.windows)

    def get(self, i: int):
        """Scene arrays and ``(inputs, targets)`` of window ``i``."""
        w = self.windows[int(i)]
        k = int(w["scene_index"]) if "scene_index" in w else 0
        if not 0 <= k < len(self.arrays):
            raise InvalidInputError(f"window {i} names scene_index {k}, but {len(self.arrays)} scene(s) were given")
        return self.arrays[k], prepare_window(self.arrays[k], w, self.mode, self.previous)


def step_generator(seed: int, step: int) -> np.random.Generator:
    """The generator of optimisation step ``step``'s batch (windows, rotations, noise)."""
    return np.random.default_rng([int(seed), int(step)])


def sample_batch(data: Windows, config, step: int) -> Batch:
    """The CPU batch of optimisation step ``step`` under ``config`` (a :class:`.train.TrainConfig`): ``batch_size``
    windows drawn uniformly with replacement, each rotated (``config.rotation``) and noised (``noise_std``)."""
    rng = step_generator(config.seed, step)
    items = []
    for i in rng.integers(0, len(data), config.batch_size):
        arrays, (inputs, targets) = data.get(i)
        items.append((arrays, inputs, targets, random_rotation(rng, config.rotation.value)))
    return make_batch(items, config.model.graph, config.noise_std, rng)


_WORKER: dict = {}


def _init_worker(data: Windows, config) -> None:
    torch.set_num_threads(1)
    _WORKER.update(data=data, config=config)


def _worker_batch(step: int) -> Batch:
    return sample_batch(_WORKER["data"], _WORKER["config"], step)


class BatchSource:
    """Batches of consecutive optimisation steps, built in the calling process (``workers`` 0) or ahead of time in
    ``workers`` processes (:data:`START_METHOD`); use as a context manager (it shuts the workers down).

    Args:
        data: the training windows. config: the training config. workers: processes building batches (>= 0).
    """

    def __init__(self, data: Windows, config, workers: int = 0):
        if not (isinstance(workers, int) and workers >= 0):
            raise InvalidInputError(f"batch workers must be an integer >= 0, got {workers!r}")
        self.data, self.config, self.workers = data, config, workers
        self._pool: ProcessPoolExecutor | None = None
        self._queue: deque[tuple[int, Future]] = deque()
        self._next = 0

    def __enter__(self) -> BatchSource:
        if self.workers > 0:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(START_METHOD),
                                             initializer=_init_worker, initargs=(self.data, self.config))
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            for _, future in self._queue:
                future.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def batch(self, step: int) -> Batch:
        """The CPU batch of optimisation step ``step`` (the steps must be asked for in increasing order)."""
        if self._pool is None:
            return sample_batch(self.data, self.config, step)
        if not self._queue or self._queue[0][0] != step:
            for _, future in self._queue:
                future.cancel()
            self._queue.clear()
            self._next = step
        while len(self._queue) < PREFETCH_PER_WORKER * self.workers:
            self._queue.append((self._next, self._pool.submit(_worker_batch, self._next)))
            self._next += 1
        return self._queue.popleft()[1].result()
