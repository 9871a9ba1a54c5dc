"""Experiment ``tight-assembly``: data-driven simulation of tight-tolerance assembly (data-driven simulation paper
§V, Figs. 8–11, 14; issue 17 part 5).

Per task (the paper's peg-in-hole at 32.5 µm radial clearance and M48×5 bolting at 0.2 mm,
:mod:`contactkit.assembly.task`): reference data of the high-fidelity simulation (the stand-in for the paper's
measured wrenches, :mod:`contactkit.assembly.reference_data`), split 70/30 by trajectory; the clustering networks
fitted by CMA-ES on the training split (eq 7, :mod:`contactkit.assembly.cma_fit`); the C-space model ``h(q)`` (§IV,
:mod:`contactkit.assembly.cspace`); then on the test split:

a. one-step contact-force RMSE (Fig. 9): ours (learned clustering, Algorithm 1 with the C-space row), K-means
   (Mc = 12) with box-friction PGS, and MuJoCo on the same parts (:mod:`contactkit.assembly.mujoco_baseline`, at
   its defaults and at the tight-insertion benchmark's fastest setting), each from the recorded state under the
   recorded setpoint;
b. complete simulation from each test trajectory's initial state under its recorded setpoints (Fig. 10): force
   RMSE, and the exact penetration of the tool's nodes with and without the C-space model (Fig. 8);
c. time per 10 ms step by stage (Fig. 11), one thread (torch and numba), in thread-CPU time (the cost on one core,
   the issue's bar; wall time under ``*_wall``);
d. generalisation (Fig. 14): the M48 clustering networks applied unchanged to the Table II pairs, each with its
   own depth network and C-space model (trained here: purely kinematic, §V-E) and its own reference data;
e. robustness (§V-F stand-in): ``robustness_s`` simulated seconds of random arbitrary commands on the nut.

Force RMSE: ``sqrt(mean_t |f_sim,t − f_ref,t|²)`` over the three force components [N] (the contact force of a
step is the mean over its 10 ms). Steps where a simulator failed (MuJoCo's NaN) are left out and counted.
Energy (e): the tool's kinetic energy plus the coupling springs' ``½k|e|² + ½k_r|φ|²``; a setpoint's jump adds
energy through the coupling (the operator's work); ``energy_growth`` [J] is the sum over steps of the change
within each step (the simulator's own contribution: ≤ 0 for a passive simulation).

Time: ``ms_per_step`` and ``ms_per_stage`` are thread-CPU milliseconds (``SimStep.stage_cpu_s``), mean over the
complete simulations' steps of ours; ``ms_per_step_wall`` / ``ms_per_stage_wall`` the wall clock of the same steps
(about twice the CPU time on the shared 2-core machine); each task's ``timing`` says so.

Reference data are cached (:mod:`contactkit.eval.tight_assembly_reference`): the full run keeps them in
:data:`~contactkit.eval.tight_assembly_reference.CACHE_DIR` (``--reference-dir`` replaces it) and reuses a file
only when task meshes, seed, rows, trajectory length and reference code all match (a mismatched file is refused);
each task's ``reference`` names the file and how many episodes were read and simulated.

JSON: ``tasks.{peg-in-hole,bolting}.{ours_force_rmse_N, kmeans_pgs_force_rmse_N, mujoco_force_rmse_N,
complete_sim_force_rmse_N, max_penetration_m, max_penetration_no_cspace_m, ms_per_step, ms_per_stage}`` (and more),
``generalization[].{diameter_mm, pitch_mm, ours_force_rmse_N, kmeans_pgs_force_rmse_N}``,
``robustness.{sim_s, max_penetration_m, energy_growth, nan}``, ``checkpoints`` (the committed depth networks of the
two static parts, hashed into the provenance by the harness). A piece of the pipeline that is missing is named in
``missing`` and its numbers are None (the result is then ``partial``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactkit.assembly.reference_data import TRAJECTORY_ROWS
from contactkit.eval import paper_quotes, progress
from contactkit.eval.tight_assembly_generalization import generalization, pair_depth_net
from contactkit.eval.tight_assembly_pipeline import (
    TASKS,
    Missing,
    Pipeline,
    TightAssemblyConfig,
    force_rmse,
    prepare,
    sample_rows,
)
from contactkit.eval.tight_assembly_reference import CACHE_DIR
from contactkit.eval.tight_assembly_robustness import (
    ROBUST_OFFSET,
    ROBUST_SPIN,
    ROBUST_TAU,
    ROBUST_TILT,
    energy,
    random_commands,
    robustness,
)
from contactkit.eval.tight_assembly_sim import TIMING_NOTE, complete, one_step, penetration, step_times

__all__ = ["FULL", "PAPER", "QUICK", "ROBUST_OFFSET", "ROBUST_SPIN", "ROBUST_TAU", "ROBUST_TILT", "TASKS",
           "TIMING_NOTE", "Missing", "Pipeline", "TightAssemblyConfig", "complete", "energy", "force_rmse",
           "generalization", "markdown", "narrowing", "one_step", "pair_depth_net", "penetration", "prepare",
           "random_commands", "robustness", "run", "run_experiment", "sample_rows", "step_times"]

PAPER = paper_quotes.TIGHT_ASSEMBLY
"""The paper's figures (§V-C, §V-D) beside ours, in the report and the markdown table
(:mod:`contactkit.eval.paper_quotes`)."""


FULL = TightAssemblyConfig(reference_dir=CACHE_DIR, complete_steps=TRAJECTORY_ROWS)
"""The full run (not run in full yet). ``complete_steps`` is a whole test trajectory (the reference trajectories have
``TRAJECTORY_ROWS`` = 200 rows; 600 asked for more than there is). Estimated wall time on the loaded shared 2-core
machine (wall ≈ 2× thread-CPU there), from the unit costs measured: reference data 25 min (peg) + 11 min (nut) for
20k rows and ~0.5 min per pair (1000 rows) — 0 when cached; CMA-ES 481 evaluations × 300 rows × ~10 ms per one-step
row ≈ 25 min per task; C-space 20k samples (~3 min to label) + 6000 steps, ~3.5 min per model × 12 models ≈ 40 min;
one-step comparison (3000 rows × 2 simulators per task, 1000 per pair) ≈ 6 min; MuJoCo ≈ 20 min (the nut's fastest
setting ~40 s per row × 20, CoACD once); complete simulations (6 × 200 steps × 3 simulators, exact penetration
8 ms peg / 22 ms nut per step) ≈ 4 min; ten pair depth networks (20k Adam steps at ~35 ms, as the committed M48
net's 60k in 2103 s) ≈ 12 min each, 2 h; robustness 60k steps × (~10 ms step + 22 ms exact penetration) ≈ 35 min.
Total ≈ 5.5 h, ≈ 4.8 h with the reference data cached."""
QUICK = TightAssemblyConfig(reference_steps=90, trajectory_rows=30, cma_generations=2, cma_population=4, cma_steps=8,
                            cspace_samples=300, cspace_steps=100, eval_steps=10, mujoco_steps=3, mujoco=("default",),
                            mujoco_tasks=("peg-in-hole",), complete_trajectories=1, complete_steps=10,
                            penetration_every=5, pairs=1, pair_reference_steps=30, depth_steps=200, robustness_s=0.3)
"""``--quick``: the whole pipeline on tiny budgets (< 2 min; its numbers show that it runs, not how well)."""


def _section(missing: list[str], fn, *args):
    """``fn(*args)``, or None with the missing module recorded in ``missing``."""
    try:
        return fn(*args)
    except Missing as exc:
        missing.append(str(exc))
        return None


def _task_entry(name: str, config: TightAssemblyConfig, rng, progress, missing, traces) -> tuple[dict, object]:
    from contactkit.assembly.task import assembly_task

    start = time.perf_counter()
    entry = dict.fromkeys(("ours_force_rmse_N", "kmeans_pgs_force_rmse_N", "mujoco_force_rmse_N",
                           "complete_sim_force_rmse_N", "max_penetration_m", "max_penetration_no_cspace_m",
                           "ms_per_step", "ms_per_stage"))
    p = _section(missing, prepare, assembly_task(name), config, rng)
    if p is None:
        return entry, None
    progress(f"{name}: {sum(e.n_steps for e in p.train)} training / {sum(e.n_steps for e in p.test)} test rows, "
             f"clustering fitted")
    mujoco = config.mujoco if name in config.mujoco_tasks else ()
    numbers, traces[(name, "one_step")] = one_step(p, p.test, config, rng, mujoco)
    entry.update(numbers)
    if not mujoco:
        entry["mujoco_force_rmse_N_failure"] = "not run: MuJoCo is run on " + (", ".join(config.mujoco_tasks) or
                                                                              "no task") + " in this budget"
    progress(f"{name}: one-step RMSE ours {entry['ours_force_rmse_N']:.3g} N, K-means/PGS "
             f"{entry['kmeans_pgs_force_rmse_N']:.3g} N, MuJoCo {entry.get('mujoco_force_rmse_N')}")
    numbers, traces[(name, "complete")] = complete(p, config, "default" in mujoco)
    entry.update(numbers, fit=p.fit, reference=p.reference, seconds=time.perf_counter() - start,
                 train_rows=sum(e.n_steps for e in p.train), test_rows=sum(e.n_steps for e in p.test))
    progress(f"{name}: complete RMSE {entry['complete_sim_force_rmse_N']:.3g} N, {entry['ms_per_step']:.3g} ms/step")
    return entry, p


def run_experiment(config: TightAssemblyConfig, seed: int = 0, plots: str | Path | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    """Sections (a)–(e) of the module docstring on one thread (torch and numba); figures in ``plots``."""
    import numba
    import torch

    progress = progress or (lambda _msg: None)
    threads, nthreads = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(1)
    numba.set_num_threads(1)
    result, missing, traces, pipes = {"tasks": {}}, [], {}, {}
    try:
        for name in config.tasks:
            result["tasks"][name], pipes[name] = _task_entry(name, config, np.random.default_rng(
                [seed, TASKS.index(name)]), progress, missing, traces)
        bolt = pipes.get("bolting")
        result["generalization"], result["robustness"] = [], dict.fromkeys(("sim_s", "max_penetration_m",
                                                                             "energy_growth", "nan"))
        if bolt is not None:
            result["generalization"] = _section(missing, generalization, bolt, config,
                                                np.random.default_rng([seed, 2]), progress) or []
            result["robustness"], traces["robustness"] = robustness(bolt, config, np.random.default_rng([seed, 3]))
            progress(f"robustness: {result['robustness']}")
    finally:
        torch.set_num_threads(threads)
        numba.set_num_threads(nthreads)
    from contactkit.assembly.task import DEFAULT_NETS

    result["checkpoints"] = [str(DEFAULT_NETS[name]) for name in config.tasks]  # the committed depth networks
    result["missing"] = sorted(set(missing))
    result["partial"] = bool(missing) or any(t not in config.tasks for t in TASKS)
    result["config"] = dataclasses.asdict(config)
    from contactkit.eval.tight_assembly_figures import bars, plot_tight_assembly

    result["bars"] = bars(result)
    if plots is not None:
        result["figures"] = plot_tight_assembly(result, traces, Path(plots))
    return result


def markdown(result: dict) -> str:
    """The experiment's table (:func:`contactkit.eval.tight_assembly_figures.markdown_table`)."""
    from contactkit.eval.tight_assembly_figures import markdown_table

    return markdown_table(result, paper_quotes.paper_values(PAPER)["tasks"])


def narrowing(options: dict) -> list[str]:
    """Why ``options`` narrow a run (:func:`contactkit.eval.store.narrowing`): ``reference_dir`` does not (where
    the checked reference cache lives: the rows are the same, :mod:`contactkit.eval.tight_assembly_reference`);
    ``config`` does."""
    return [f"--{k} {v}" for k, v in options.items() if k != "reference_dir" and v is not None]


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        config: TightAssemblyConfig | None = None, reference_dir: str | None = None) -> dict:
    """Harness entry point: the quick or full budget (``config`` replaces it, for tests). ``reference_dir``
    replaces the budget's reference cache folder (the full run's default :data:`CACHE_DIR`, the quick run's none).
    CPU only (float64)."""
    del device
    config = config or (QUICK if quick else FULL)
    if reference_dir is not None:
        config = dataclasses.replace(config, reference_dir=str(reference_dir))
    with progress.task("tight-assembly stages done") as advance:  # one step per progress message of the run
        return run_experiment(config, seed, plots, progress=lambda _message: advance())
