"""Sections (a)–(c) of the tight-assembly experiment (:mod:`contactkit.eval.exp_tight_assembly`): the one-step
contact force from recorded test rows (Fig. 9), complete simulations from each test trajectory's start (Figs. 8,
10, 12) and the time per step by stage (Fig. 11, thread-CPU time: the cost on one core).
"""

from __future__ import annotations

import math

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.eval.tight_assembly_pipeline import (
    Pipeline,
    TightAssemblyConfig,
    _configs,
    _row,
    force_rmse,
    sample_rows,
)


def one_step(p: Pipeline, episodes: list, config: TightAssemblyConfig, rng: np.random.Generator,
             mujoco: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """(a) The one-step contact force of ours, K-means/PGS and MuJoCo from recorded test rows (Fig. 9).

    Returns ``(numbers, traces)``: RMSEs [N] and failures; traces hold the reference and simulated forces."""
    from contactkit.assembly import mujoco_baseline as mjb
    from contactkit.assembly.simulator import step

    nc, pgs = _configs()
    rows = sample_rows(episodes, config.eval_steps, rng)
    ref, ours, km = (np.zeros((len(rows), 6)) for _ in range(3))
    for i, (e, t) in enumerate(rows):
        state, sp_pos, sp_quat, ref[i] = _row(episodes[e], t, p.setpoint_quat)
        ours[i] = step(p.task, state, sp_pos, sp_quat, p.gains, p.ours, nc, p.cspace).wrench
        km[i] = step(p.task, state, sp_pos, sp_quat, p.gains, p.kmeans, pgs, None).wrench
    out = {"ours_force_rmse_N": force_rmse(ours, ref)[0], "kmeans_pgs_force_rmse_N": force_rmse(km, ref)[0],
           "one_step_rows": len(rows)}
    traces = {"rows": rows, "reference": ref, "ours": ours, "kmeans_pgs": km}
    for name in mujoco:
        n = min(config.mujoco_steps if name == "default" else config.mujoco_fastest_steps, len(rows))
        settings = mjb.DEFAULTS if name == "default" else mjb.FASTEST
        key = "mujoco_force_rmse_N" if name == "default" else "mujoco_fastest_force_rmse_N"
        if n == 0:
            out[key], out[f"{key}_failure"] = math.nan, "not run: no rows in this budget"
            continue
        sub = np.unique(np.linspace(0, len(rows) - 1, n).round().astype(int))
        try:
            steps = [mjb.mujoco_step(p.task, *_row(episodes[rows[i][0]], rows[i][1], p.setpoint_quat)[:3], p.gains,
                                     settings) for i in sub]
        except Exception as exc:  # CoACD or MuJoCo's compiler: the baseline could not be built
            out[key], out[f"{key}_failure"] = math.nan, f"{type(exc).__name__}: {str(exc)[:300]}"
            continue
        sim = np.array([s.wrench for s in steps])
        out[key], failed = force_rmse(sim, ref[sub])
        out[f"{key}_failures"] = failed
        tag = key.replace("_force_rmse_N", "")  # ours and K-means on MuJoCo's rows too: like for like
        out[f"{tag}_rows"] = len(sub)
        out[f"{tag}_rows_ours_force_rmse_N"] = force_rmse(ours[sub], ref[sub])[0]
        out[f"{tag}_rows_kmeans_pgs_force_rmse_N"] = force_rmse(km[sub], ref[sub])[0]
        reasons = [s.failure for s in steps if s.failure]
        if reasons:
            out[f"{key}_failure"] = reasons[0]
        out[f"{key.replace('force_rmse_N', 'ms_per_step_wall')}"] = 1e3 * float(np.mean([s.seconds for s in steps]))
        traces[f"mujoco_{name}"], traces[f"mujoco_{name}_rows"] = sim, sub
    return out, traces


def penetration(task, state) -> tuple[float, float]:
    """``(max, mean)`` penetration [m] of the tool's nodes into the static part (exact signed distance of its
    mesh); the mean is over the nodes that penetrate (0 when none do) — Fig. 8's ``|d_mean|``."""
    from contactkit.geometry.signed_distance import signed_distance
    from contactkit.rotations import quat_to_mat

    world = task.nodes @ quat_to_mat(np.asarray(state.quat, np.float64)).T + np.asarray(state.pos, np.float64)
    d = signed_distance(task.static, world)
    inside = -d[d < 0]
    return (float(inside.max()), float(inside.mean())) if len(inside) else (0.0, 0.0)


def _rollout(p: Pipeline, episode, n: int, clustering, config, cspace, every: int) -> dict:
    """One simulation of ``episode``'s first ``n`` setpoints from its initial state: wrenches ``(n, 6)``, (max,
    mean) penetration ``(n, 2)`` every ``every`` steps (NaN between), wall and thread-CPU seconds per stage
    ``(n, 4)``."""
    from contactkit.assembly.simulator import STAGES, simulate
    from contactkit.state import BodyState

    initial = BodyState(episode.pos[0], episode.quat[0], episode.lin_vel[0], episode.ang_vel[0])
    steps = simulate(p.task, initial, episode.action[:n, :3], p.setpoint_quat(episode.action[:n]), p.gains,
                     clustering, config, cspace)
    pen = np.array([penetration(p.task, s.state) if k % every == 0 else (np.nan, np.nan)
                    for k, s in enumerate(steps)])
    return {"wrench": np.array([s.wrench for s in steps]), "pen": pen,
            "stage_s": np.array([[s.stage_s[k] for k in STAGES] for s in steps]),
            "stage_cpu_s": np.array([[s.stage_cpu_s[k] for k in STAGES] for s in steps])}


def mujoco_complete(p: Pipeline, episode, n: int) -> tuple[dict, np.ndarray]:
    """MuJoCo (default settings) from a test trajectory's start under its first ``n`` setpoints (Fig. 12): force
    RMSE against the reference, its failure if any, and the wrenches."""
    from contactkit.assembly import mujoco_baseline as mjb
    from contactkit.state import BodyState

    initial = BodyState(episode.pos[0], episode.quat[0], episode.lin_vel[0], episode.ang_vel[0])
    try:
        run = mjb.mujoco_simulate(p.task, initial, episode.action[:n, :3], p.setpoint_quat(episode.action[:n]),
                                  p.gains, mjb.DEFAULTS)
    except Exception as exc:  # CoACD or MuJoCo's compiler: the baseline could not be built
        return {"mujoco_complete_sim_force_rmse_N": math.nan,
                "mujoco_complete_sim_failure": f"{type(exc).__name__}: {str(exc)[:300]}"}, np.full((n, 6), np.nan)
    return {"mujoco_complete_sim_force_rmse_N": force_rmse(run.wrenches, episode.wrench[:n])[0],
            "mujoco_complete_sim_failure": run.failure}, run.wrenches


TIMING_NOTE = ("ms_per_step, ms_per_stage: thread-CPU time (time.thread_time) per 10 ms step of ours in the "
               "complete simulations, mean over steps, after a few untimed steps that compile the numba kernels: "
               "the cost on one core; ms_per_step_wall, ms_per_stage_wall: "
               "wall-clock time of the same steps (includes other processes' share of a loaded machine); "
               "mujoco[_fastest]_ms_per_step_wall: MuJoCo's wall time per one-step row")
"""What the ``timing`` key of a task says about its time keys."""


def step_times(cpu_s: np.ndarray, wall_s: np.ndarray) -> dict:
    """Time per 10 ms step (Fig. 11) from per-step stage times ``(T, 4)`` [s] (stages
    :data:`~contactkit.assembly.simulator.STAGES`) of thread CPU (``SimStep.stage_cpu_s``) and wall clock
    (``SimStep.stage_s``): ``ms_per_step`` / ``ms_per_stage`` the CPU mean [ms] (the issue's bar is per CPU core),
    ``ms_per_step_median``, ``ms_per_step_wall`` / ``ms_per_stage_wall`` the wall mean, and ``timing``
    (:data:`TIMING_NOTE`)."""
    from contactkit.assembly.simulator import STAGES

    cpu, wall = np.asarray(cpu_s, np.float64) * 1e3, np.asarray(wall_s, np.float64) * 1e3
    if cpu.ndim != 2 or cpu.shape[1] != len(STAGES) or cpu.shape != wall.shape or len(cpu) == 0:
        raise InvalidInputError(f"step_times needs (T >= 1, {len(STAGES)}) CPU and wall stage times, got "
                                f"{cpu.shape} and {wall.shape}")
    return {"ms_per_step": float(cpu.sum(axis=1).mean()),
            "ms_per_stage": {s: float(v) for s, v in zip(STAGES, cpu.mean(axis=0), strict=True)},
            "ms_per_step_median": float(np.median(cpu.sum(axis=1))),
            "ms_per_step_wall": float(wall.sum(axis=1).mean()),
            "ms_per_stage_wall": {s: float(v) for s, v in zip(STAGES, wall.mean(axis=0), strict=True)},
            "timing": TIMING_NOTE}


def _warm_up(p: Pipeline, episode, config) -> None:
    """A few steps of ours from ``episode``'s start, not timed and thrown away: a cold checkout compiles (or loads
    from numba's cache) kernels the one-step comparison did not call inside the first timed step (measured: the
    peg's quick-run mean 3.9 ms per step cold against 2.9 warm). The simulation is deterministic and keeps no
    state between calls, so the timed rollouts are unchanged."""
    from contactkit.assembly.simulator import simulate
    from contactkit.assembly.timing import WARMUP_STEPS
    from contactkit.state import BodyState

    n = min(WARMUP_STEPS, episode.n_steps)
    initial = BodyState(episode.pos[0], episode.quat[0], episode.lin_vel[0], episode.ang_vel[0])
    simulate(p.task, initial, episode.action[:n, :3], p.setpoint_quat(episode.action[:n]), p.gains, p.ours, config,
             p.cspace)


def complete(p: Pipeline, config: TightAssemblyConfig, mujoco: bool = False) -> tuple[dict, dict]:
    """(b, c) Complete simulations of the first test trajectories under their recorded setpoints: ours with and
    without the C-space model, and K-means/PGS; force RMSE, penetration (Fig. 8, 10) and stage times (Fig. 11);
    with ``mujoco``, MuJoCo at its defaults on the first trajectory (Fig. 12)."""
    nc, pgs = _configs()
    _warm_up(p, p.test[0], nc)
    runs = {"ours": [], "no_cspace": [], "kmeans_pgs": []}
    refs = []
    for episode in p.test[:config.complete_trajectories]:
        n = min(episode.n_steps, config.complete_steps)
        refs.append(episode.wrench[:n])
        every = config.penetration_every
        runs["ours"].append(_rollout(p, episode, n, p.ours, nc, p.cspace, every))
        runs["no_cspace"].append(_rollout(p, episode, n, p.ours, nc, None, every))
        runs["kmeans_pgs"].append(_rollout(p, episode, n, p.kmeans, pgs, None, every))
    ref = np.concatenate(refs)
    fields = ("wrench", "pen", "stage_s", "stage_cpu_s")
    cat = {k: {f: np.concatenate([r[f] for r in v]) for f in fields} for k, v in runs.items()}
    out = {"complete_sim_force_rmse_N": force_rmse(cat["ours"]["wrench"], ref)[0],
           "complete_sim_kmeans_pgs_force_rmse_N": force_rmse(cat["kmeans_pgs"]["wrench"], ref)[0],
           "max_penetration_m": float(np.nanmax(cat["ours"]["pen"][:, 0])),
           "max_penetration_no_cspace_m": float(np.nanmax(cat["no_cspace"]["pen"][:, 0])),
           "mean_penetration_m": float(np.nanmean(cat["ours"]["pen"][:, 1])),
           "mean_penetration_no_cspace_m": float(np.nanmean(cat["no_cspace"]["pen"][:, 1])),
           "max_penetration_kmeans_pgs_m": float(np.nanmax(cat["kmeans_pgs"]["pen"][:, 0])),
           **step_times(cat["ours"]["stage_cpu_s"], cat["ours"]["stage_s"]),
           "complete_sim_steps": len(ref), "complete_sim_trajectories": len(refs)}
    traces = {"reference": refs[0], **{k: {f: v[0][f] for f in ("wrench", "pen")} for k, v in runs.items()}}
    if mujoco:
        numbers, traces["mujoco_default"] = mujoco_complete(p, p.test[0], len(refs[0]))
        out.update(numbers)
    return out, traces

