"""One placement traced for rendering (placement paper §VI, one case of ``experiment placement``): the MuJoCo
states and F/T readings of :func:`contactkit.eval.exp_placement.run_episode` as an :class:`Episode`, with the scene
they were drawn in (``make demo`` renders it)."""

from __future__ import annotations

import dataclasses

import numpy as np

from contactkit.data.schema import Episode
from contactkit.eval.exp_placement import Method, PlacementConfig, run_episode
from contactkit.scene import Scene
from contactkit.state import stack_states
from contactkit.tasks.placement import make_task, task_scene

__all__ = ["traced_placement"]


def traced_placement(task_name: str, theta_gt, rng: np.random.Generator, method: Method = Method.OURS,
                     steps: int | None = None) -> tuple[Scene, Episode]:
    """A placement of ``task_name`` with the true geometry ``theta_gt`` ``(P,)`` [m] by ``method``, traced.

    Args:
        task_name: a placement task (``shape``, ``pose``, ``env``, ``cup-saucer``).
        theta_gt: the true offsets of the task's parameters [m].
        rng: the episode's generator (F/T noise, the estimates' draws).
        method: the estimator (default the placement paper's).
        steps: control steps; default the experiment's.

    Returns:
        The MuJoCo scene holding ``theta_gt`` and the episode: ``steps + 1`` states (world frame) at the control
        period, the F/T reading [N, N·m] of each step in ``wrench`` (commands zero: not recorded).
    """
    config = PlacementConfig(tasks=(task_name,), workers=1)
    config = dataclasses.replace(config, steps=steps) if steps is not None else config
    task, trace = make_task(task_name), []
    theta_gt = np.asarray(theta_gt, dtype=np.float64)
    run_episode(task, method, theta_gt, config, rng, trace)
    states = stack_states([state for state, _ in trace])
    wrench = np.array([reading for _, reading in trace[1:]])
    time = np.arange(len(trace)) * config.world.control_dt
    episode = Episode.from_states(time, states, np.zeros_like(wrench), np.zeros_like(wrench), wrench)
    return task_scene(task, theta_gt), episode
