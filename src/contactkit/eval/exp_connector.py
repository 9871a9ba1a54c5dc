"""Connector-insertion experiment (LML paper §5, Figs 3 and 5): a scripted insertion against the
online linear F/T model (LML, eq 18 features) driving the force-minimising controller of eq 19.

One trial (socket variant, sampled misalignment), all in the MuJoCo reference world:

0. **Tare** (with ``tare=free-space``; off by default, so stored results are unchanged): the plug holds still at
   its start pose in free space for ``TARE_STEPS`` control steps, and every later reading has the mean of those
   readings subtracted (:mod:`contactkit.control.tare`), as a user zeroes a real sensor before a task.
1. **Scripted insertion.** The impedance target descends straight along the nominal socket axis at
   ``approach_speed`` to ``push`` below the nominal seated pose, upright; it then holds there.
2. **Baseline.** The scripted command is held for ``window_s`` more seconds (the scripted run).
3. **Calibration** (from the state at the end of step 1). For ``calib_s`` seconds the target moves
   around the scripted one: a sum of sines per axis of position (``calib_pos_amp``) and attitude
   (``calib_rot_amp``), random phases, tapered in and out; then ``heldout_s`` more seconds of the same
   excitation are logged but not learned from. LML (Algorithm 1, ``LinearForceModel.fit``) learns
   ``y ≈ G w`` on the first part; the held-out part gives the fit error.
4. **Control.** From the end of calibration, eq 19 picks ``(r_des, φ)`` every control step for
   ``window_s`` seconds, once solved with OSQP (warm started) and once (from the same state) by the
   paper's solve-unconstrained-then-clip variant. The position regulariser is centred ``push`` below
   the plug (``offset = (0, 0, −push)``) so the controller keeps the scripted insertion force.

Metrics per socket variant (``n_trials`` misalignments each):

* ``force_reduction = 1 − F̄_qp / F̄_scripted``, where ``F̄`` is the mean over trials and over the
  ``window_s`` seconds of a run of the lateral force magnitude ``‖(fx, fy)‖`` measured by the F/T
  sensor (sensor frame): for the controller, the steps after it takes over; for the scripted run, the
  hold steps after the scripted approach. ``clip_force_reduction`` likewise for the clip variant.
* ``success_rate`` / ``clip_success_rate`` / ``baseline_success_rate``: fraction of trials whose plug
  is seated at the end of the run: front face within ``SEATED_TOL`` of the seated height in the
  actual socket frame.
* ``fit_err_N`` / ``fit_err_Nm``: root mean square over held-out samples, axes and trials of the
  predicted minus measured force [N] / torque [N·m].
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from contactkit.control.force_qp import ForceQPConfig, solve_force_clip, solve_force_qp
from contactkit.control.tare import TARE_STEPS, TaredWorld, TareMode, tare_world
from contactkit.errors import InvalidInputError
from contactkit.eval import paper_quotes, progress
from contactkit.model import ActionMode
from contactkit.models.linear import LinearForceModel, PoseCommandFeatures, attitude_error
from contactkit.mujoco import MujocoWorld
from contactkit.physics import WorldParams, load_world
from contactkit.report.plots import save_figure
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.tasks.connector import (
    SOCKET_VARIANTS,
    ConnectorGeometry,
    MisalignmentRange,
    SocketVariant,
    connector_insertion,
    insertion_depth,
    sample_misalignment,
)

PAPER = paper_quotes.CONNECTOR_INSERTION
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

SEATED_TOL = 5e-4
"""A plug is seated when its front face is within this height [m] of the seated height."""

SNAPSHOT_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION
"""MuJoCo state saved to branch a trial (positions, velocities, mocap targets, applied forces, warm start)."""

FEATURES = PoseCommandFeatures()
"""Eq 18 feature map, n_w = 19."""


def _prior_weights() -> np.ndarray:
    """Prior weights ``b`` of eq 16 per feature (whitened units): weak on pose and command entries
    (varied by millimetres and degrees), firmer on ``vec(R)`` and the bias (nearly constant, collinear)."""
    return np.concatenate([np.full(3, 1e-4), np.full(9, 1e-2), np.full(6, 1e-4), [1e-2]])


@dataclass(frozen=True)
class ExperimentConfig:
    """Durations [s], excitation, physics and controller of the experiment (module docstring)."""

    n_trials: int = 20
    approach_speed: float = 0.012
    insert_s: float = 2.5
    push: float = 0.002
    window_s: float = 3.0
    calib_s: float = 10.0
    heldout_s: float = 2.0
    taper_s: float = 0.5
    calib_pos_amp: tuple[float, float, float] = (0.003, 0.003, 0.0015)
    calib_rot_amp: float = float(np.deg2rad(3.0))
    calib_freqs: tuple[float, ...] = (0.13, 0.19, 0.23, 0.29, 0.37, 0.43)
    misalignment: MisalignmentRange = field(default_factory=MisalignmentRange)
    world: WorldParams = field(default_factory=lambda: WorldParams(
        timestep=0.005, n_substeps=10, solref=(0.01, 1.0), ft_noise_std=(0.1, 0.1, 0.1, 0.003, 0.003, 0.003)))
    qp: ForceQPConfig = field(default_factory=ForceQPConfig)
    tare: TareMode = TareMode.NONE

    def steps(self, seconds: float) -> int:
        """Control steps in ``seconds``."""
        return max(1, int(round(seconds / self.world.control_dt)))


QUICK = ExperimentConfig(n_trials=2)
"""``--quick``: every socket, two trials each."""
FULL = ExperimentConfig(n_trials=20)
"""Full run: every socket, 20 trials each."""


@dataclass(frozen=True)
class Trial:
    """Logs of one trial: lateral force ``‖(fx, fy)‖`` per control step [N] of each run, success flags,
    held-out errors, and the calibration log ``(time, measured, predicted)`` for Fig. 3."""

    lateral: dict[str, np.ndarray]
    seated: dict[str, bool]
    heldout_err: np.ndarray
    calib: tuple[np.ndarray, np.ndarray, np.ndarray]
    n_calib: int
    qp_ms: float


# ---- world helpers -----------------------------------------------------------------------------
def _snapshot(world: MujocoWorld) -> np.ndarray:
    buf = np.empty(mujoco.mj_stateSize(world.model, SNAPSHOT_SPEC))
    mujoco.mj_getState(world.model, world.data, buf, SNAPSHOT_SPEC)
    return buf


def _restore(world: MujocoWorld, snap: np.ndarray) -> None:
    mujoco.mj_setState(world.model, world.data, snap, SNAPSHOT_SPEC)
    mujoco.mj_forward(world.model, world.data)


def _pose(world: MujocoWorld) -> tuple[np.ndarray, np.ndarray]:
    st = world.state()
    return st.pos, quat_to_mat(st.quat)


def _act(world: MujocoWorld, r: np.ndarray, R: np.ndarray, r_des: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Send the absolute command ``(r_des [m, world], φ [rad, tool frame])`` as a pose delta; the reading."""
    return world.step(np.concatenate([r_des - r, R @ phi]), ActionMode.POSE_DELTA).wrench


def _seated(world: MujocoWorld, geometry: ConnectorGeometry) -> bool:
    st = world.state()
    height, _, _ = insertion_depth(world.scene, st.pos, st.quat)
    return bool(abs(height - geometry.seated_height) <= SEATED_TOL)


# ---- the runs ----------------------------------------------------------------------------------
def scripted(world: MujocoWorld, cfg: ExperimentConfig, goal: np.ndarray, n_steps: int, t0: float = 0.0):
    """Straight scripted insertion: target descends at ``approach_speed`` to ``goal`` (3,) [m, world],
    upright; returns the lateral force per step (n_steps,) [N]."""
    start = np.asarray(world.scene.meta["start_pos"])
    out = np.empty(n_steps)
    for k in range(n_steps):
        r, R = _pose(world)
        t = t0 + (k + 1) * cfg.world.control_dt
        r_des = np.array([goal[0], goal[1], max(goal[2], start[2] - cfg.approach_speed * t)])
        y = _act(world, r, R, r_des, attitude_error(R, np.eye(3)))
        out[k] = np.hypot(y[0], y[1])
    return out


def calibrate(world: MujocoWorld, cfg: ExperimentConfig, goal: np.ndarray, rng: np.random.Generator):
    """Calibration excitation around the scripted command ``goal`` (3,) [m]; returns features
    ``W (N, 19)`` and readings ``Y (N, 6)`` [N, N·m, sensor frame] (pose at the start of each step)."""
    n = cfg.steps(cfg.calib_s + cfg.heldout_s)
    dt = cfg.world.control_dt
    t = dt * np.arange(1, n + 1)
    freqs = rng.permutation(np.asarray(cfg.calib_freqs))
    phase = rng.uniform(0.0, 2 * np.pi, size=6)
    envelope = np.clip(np.minimum(t, t[-1] - t) / cfg.taper_s, 0.0, 1.0)
    wave = envelope[:, None] * np.sin(2 * np.pi * freqs * t[:, None] + phase)
    amp = np.concatenate([np.asarray(cfg.calib_pos_amp), np.full(3, cfg.calib_rot_amp)])
    wave = wave * amp
    W, Y = np.empty((n, FEATURES.dim)), np.empty((n, 6))
    for k in range(n):
        r, R = _pose(world)
        r_des = goal + wave[k, :3]
        phi = attitude_error(R, quat_to_mat(rotvec_to_quat(wave[k, 3:])))
        Y[k] = _act(world, r, R, r_des, phi)
        W[k] = FEATURES(r, R, r_des, phi)
    return W, Y


def control(world: MujocoWorld, cfg: ExperimentConfig, G: np.ndarray, n_steps: int, use_qp: bool):
    """Eq 19 every control step (OSQP if ``use_qp`` else unconstrained-then-clip) with the model ``G``
    (6, 19); returns the lateral force per step (n_steps,) [N] and the mean solve time [ms]."""
    out, warm, spent = np.empty(n_steps), None, 0.0
    offset = np.array([0.0, 0.0, -cfg.push])
    for k in range(n_steps):
        r, R = _pose(world)
        w = FEATURES(r, R, r, np.zeros(3))
        tic = time.perf_counter()
        if use_qp:
            warm = solve_force_qp(G, w, cfg.qp, offset=offset, warm=warm)
            sol = warm
        else:
            sol = solve_force_clip(G, w, cfg.qp, offset=offset)
        spent += time.perf_counter() - tic
        y = _act(world, r, R, sol.r_des, sol.phi)
        out[k] = np.hypot(y[0], y[1])
    return out, 1e3 * spent / n_steps


def run_trial(variant: SocketVariant, cfg: ExperimentConfig, seed_seq: list[int]) -> Trial:
    """One misaligned trial of ``variant`` (module docstring, steps 1–4); randomness from ``seed_seq``."""
    rng = np.random.default_rng(seed_seq)
    geometry = ConnectorGeometry()
    scene = connector_insertion(variant, sample_misalignment(rng, cfg.misalignment), geometry=geometry)
    world = MujocoWorld(scene, cfg.world, np.random.default_rng([*seed_seq, 1]))
    if TareMode(cfg.tare) is TareMode.FREE_SPACE:  # zero the sensor at the start pose, in free space
        world = TaredWorld(world, tare_world(world, TARE_STEPS))
    goal = np.array([0.0, 0.0, geometry.seated_height - cfg.push])
    window = cfg.steps(cfg.window_s)
    scripted(world, cfg, goal, cfg.steps(cfg.insert_s))
    inserted = _snapshot(world)
    lateral = {"scripted": scripted(world, cfg, goal, window, t0=cfg.insert_s)}
    seated = {"scripted": _seated(world, geometry)}
    _restore(world, inserted)
    W, Y = calibrate(world, cfg, goal, rng)
    n_cal = cfg.steps(cfg.calib_s)
    noise = np.asarray(cfg.world.ft_noise_std)
    R_cov = np.diag(np.maximum(noise, 1e-3 * noise.max(initial=1.0)) ** 2) if noise.any() else None
    model = LinearForceModel.fit(W[:n_cal], Y[:n_cal], R=R_cov, b=_prior_weights())
    G = model.G.numpy()
    predicted = W @ G.T
    calibrated = _snapshot(world)
    qp_ms = 0.0
    for name in ("qp", "clip"):
        _restore(world, calibrated)
        lateral[name], ms = control(world, cfg, G, window, use_qp=name == "qp")
        qp_ms = ms if name == "qp" else qp_ms
        seated[name] = _seated(world, geometry)
    t = cfg.world.control_dt * np.arange(1, len(Y) + 1)
    return Trial(lateral, seated, predicted[n_cal:] - Y[n_cal:], (t, Y, predicted), n_cal, qp_ms)


# ---- metrics -----------------------------------------------------------------------------------
def summarise(variant: SocketVariant, trials: list[Trial], cfg: ExperimentConfig) -> dict:
    """Metrics of one socket variant over its trials (module docstring). ``lateral_force_noise_floor_N``
    is what a zero lateral force reads on average through the F/T noise: the Rayleigh mean
    ``σ √(π/2)``, ``σ`` the RMS of the fx and fy noise (exact when they are equal)."""
    def mean_lateral(run: str) -> float:
        return float(np.mean([t.lateral[run].mean() for t in trials]))

    def rate(run: str) -> float:
        return float(np.mean([t.seated[run] for t in trials]))

    err = np.concatenate([t.heldout_err for t in trials])
    noise_floor = float(np.sqrt(np.pi / 2 * np.mean(np.square(cfg.world.ft_noise_std[:2]))))
    f_script, f_qp, f_clip = mean_lateral("scripted"), mean_lateral("qp"), mean_lateral("clip")
    return {
        "socket": variant.name,
        "clearance_m": variant.clearance,
        "friction": variant.friction,
        "chamfer_m": variant.chamfer,
        "n_trials": len(trials),
        "force_reduction": 1.0 - f_qp / f_script,
        "clip_force_reduction": 1.0 - f_clip / f_script,
        "lateral_force_scripted_N": f_script,
        "lateral_force_qp_N": f_qp,
        "lateral_force_clip_N": f_clip,
        "success_rate": rate("qp"),
        "clip_success_rate": rate("clip"),
        "baseline_success_rate": rate("scripted"),
        "fit_err_N": float(np.sqrt(np.mean(err[:, :3] ** 2))),
        "fit_err_Nm": float(np.sqrt(np.mean(err[:, 3:] ** 2))),
        "lateral_force_noise_floor_N": noise_floor,
        "qp_solve_ms": float(np.mean([t.qp_ms for t in trials])),
    }


def run_experiment(
    cfg: ExperimentConfig, seed: int, variants: tuple[SocketVariant, ...] = SOCKET_VARIANTS, plots: str | None = None
) -> dict:
    """Run ``cfg.n_trials`` trials per socket variant; the ``{"sockets": [...]}`` result (and figures)."""
    if cfg.n_trials < 1 or not variants:
        raise InvalidInputError("the experiment needs at least one socket variant and one trial")
    sockets, logs = [], []
    with progress.task("trials", total=len(variants) * cfg.n_trials) as advance:
        for i, variant in enumerate(variants):
            trials = []
            for j in range(cfg.n_trials):
                trials.append(run_trial(variant, cfg, [seed, i, j]))
                advance()
            sockets.append(summarise(variant, trials, cfg))
            logs.append(trials)
    result = {
        "sockets": sockets,
        "mean_force_reduction": float(np.mean([s["force_reduction"] for s in sockets])),
        "config": _config_dict(cfg),
    }
    if plots is not None:
        result["plots"] = [
            str(plot_calibration(logs[0][0], Path(plots) / "fig3_calibration.png", variants[0].name)),
            str(plot_lateral_force(variants, logs, cfg, Path(plots) / "fig5_lateral_force.png")),
        ]
    return result


# ---- figures -----------------------------------------------------------------------------------
WRENCH_LABELS = ("fx [N]", "fy [N]", "fz [N]", "tx [N·m]", "ty [N·m]", "tz [N·m]")


def plot_calibration(trial: Trial, out: Path, socket_name: str) -> Path:
    """Fig. 3: measured (solid) and predicted (dotted) F/T during calibration, held-out part shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, measured, predicted = trial.calib
    fig, axes = plt.subplots(6, 1, figsize=(9, 10), sharex=True)
    for i, ax in enumerate(axes):
        ax.plot(t, measured[:, i], "-", color="tab:blue", lw=1.0, label="measured")
        ax.plot(t, predicted[:, i], ":", color="tab:red", lw=1.6, label="LML prediction")
        ax.axvspan(t[trial.n_calib - 1], t[-1], color="0.85", zorder=0)
        ax.set_ylabel(WRENCH_LABELS[i])
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", ncol=2, fontsize=8)
    axes[-1].set_xlabel("calibration time [s] (shaded: held out)")
    fig.suptitle(f"Calibration, socket {socket_name}: F/T (sensor frame) measured vs predicted")
    return save_figure(fig, out)


def plot_lateral_force(variants, logs: list[list[Trial]], cfg: ExperimentConfig, out: Path) -> Path:
    """Fig. 5: lateral force ``‖(fx, fy)‖`` [N] against time for each socket, scripted hold vs eq-19
    control from the moment it takes over; thin lines are trials, thick lines their mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(4, len(variants))
    rows = -(-len(variants) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.8 * rows), sharey=True, squeeze=False)
    for ax, variant, trials in zip(axes.flat, variants, logs, strict=False):
        for run, color in (("scripted", "tab:gray"), ("qp", "tab:green"), ("clip", "tab:purple")):
            traces = np.stack([tr.lateral[run] for tr in trials])
            t = cfg.world.control_dt * np.arange(1, traces.shape[1] + 1)
            ax.plot(t, traces.T, color=color, lw=0.4, alpha=0.35)
            ax.plot(t, traces.mean(axis=0), color=color, lw=2.0, label=run)
        ax.set_title(variant.name, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(variants):]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=8)
    axes[0, 0].set_ylabel("lateral force [N]")
    axes[-1, 0].set_xlabel("time since takeover [s]")
    fig.suptitle("Lateral force on the plug: scripted insertion vs force-minimising control (eq 19)")
    return save_figure(fig, out)


def _config_dict(cfg: ExperimentConfig) -> dict:
    d = dataclasses.asdict(cfg)
    d["world"] = cfg.world.to_dict()
    return {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def run(quick: bool, seed: int, device: str, plots: str | None = None, world: str | None = None) -> dict:
    """Harness entry point (``contactkit experiment connector-insertion``). ``device`` is unused: MuJoCo,
    the LML fit (numpy fast path) and OSQP run on the CPU. ``world``: the world the trials run in (a preset name
    or WorldParams JSON path; default :attr:`ExperimentConfig.world`, as the stored run). There is no
    ``model_world``: the linear model is calibrated on data of the world itself, nothing assumes another."""
    del device
    cfg = QUICK if quick else FULL
    if world is not None:
        cfg = dataclasses.replace(cfg, world=load_world(world))
    return run_experiment(cfg, seed, plots=plots)
