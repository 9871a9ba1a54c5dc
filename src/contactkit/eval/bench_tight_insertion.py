"""Benchmark ``tight-insertion``: a 50 mm round peg into holes of 1, 0.3 and 0.065 mm radial clearance
(the tight-tolerance paper's peg-in-hole: 0.065 mm), under the same impedance controller, in the engine and in
MuJoCo with its default settings and with the fastest setting found to meet the engine's penetration bound
(``mujoco-fastest-within-10um``, :mod:`contactkit.eval.tight_insertion_sweep`), in the same run.

Load cases (all start with the tip 1 mm inside the hole, centred; the position target then descends at
``DESCENT_SPEED`` to ``PRESS`` below the floor and holds for ``HOLD_S``):

* ``aligned`` — peg and target on the hole axis, upright;
* ``tilted-start`` — the peg starts tilted ``TILT`` about y, the wrist pulls it upright;
* ``held-tilt`` — the wrist holds the tilt, so the hole must straighten the peg;
* ``offset`` — the position target is ``OFFSET`` off the axis, so the peg presses on one wall all the way.

Penetration is measured independently of every simulator's contact query, from the geometry
(:class:`HoleGauge`): points densely sampled on the peg's edges against the hole's faces and floor, and
points sampled on the hole's rim against the peg's faces. Speed is the wall-clock time
(``time.perf_counter``) of the simulator's ``step`` per simulated second, with its CPU time
(``time.process_time``) per 10 ms control step beside it, on one core.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import time

import numpy as np

from contactkit.engine.params import EngineParams
from contactkit.engine.world import EngineWorld
from contactkit.errors import ContactkitError
from contactkit.eval import progress
from contactkit.eval import tight_insertion_sweep as peer
from contactkit.geometry import face_normals
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.rotations import quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

PEG_RADIUS = 0.025
"""Apothem of the peg's polygon [m] (a 50 mm peg)."""
PEG_LENGTH = 0.06
HOLE_DEPTH = 0.025
SEGMENTS = 128
"""Sides of the peg and hole polygons: the polygon's sagitta, 7.5 µm, is below the smallest clearance."""
CLEARANCES = (1e-3, 3e-4, 6.5e-5)
"""Radial clearances [m] of the full run; ``--quick`` runs the last only."""
TILT = math.radians(0.5)
OFFSET = 1e-3
START_DEPTH = 1e-3
"""The tip starts this far inside the hole [m]."""
DESCENT_SPEED = 0.02
"""Speed of the position target [m/s]."""
PRESS = 5e-3
"""The target ends this far below the hole floor [m] (pressing with ``K·PRESS``)."""
HOLD_S = 0.5
"""Seconds held at the end; the F/T fz standard deviation is taken over them."""
INSERTED_TOL = 5e-4
"""A peg whose tip ends within this of the floor [m] is inserted."""
CONTROL_DT = peer.CONTROL_DT
EDGE_SAMPLES = 8
"""Points sampled per polygon edge of the peg and of the hole rim (besides the corners)."""
AXIAL_PITCH = 5e-4
"""Spacing [m] of the points sampled along the peg's side edges."""

BACKENDS = {
    "engine": WorldParams(timestep=0.002, n_substeps=5),
    "mujoco-default": WorldParams(timestep=0.002, n_substeps=5),
}
"""World parameters of the fixed backends (10 ms control steps); the engine picks its own steps within.
The third backend, :data:`FASTEST`, is the setting the run's sweep finds."""
FASTEST = "mujoco-fastest-within-10um"
"""Name of the backend row of the fastest MuJoCo setting within ``peer.PENETRATION_BOUND``."""
RATIO_KEY = "speed_ratio_engine_vs_mujoco_fastest_within_10um"
"""JSON key of the wall time per simulated second of :data:`FASTEST` ÷ the engine's (null if none is found)."""


class LoadCase(enum.Enum):
    """How the wrist loads the peg (module docstring)."""

    ALIGNED = "aligned"
    TILTED_START = "tilted-start"
    HELD_TILT = "held-tilt"
    OFFSET = "offset"


def insertion_scene(clearance: float):
    """The 50 mm round peg above its hole with radial ``clearance`` [m] (default gains and friction)."""
    return peg_in_hole("circle", clearance, size=PEG_RADIUS, length=PEG_LENGTH, depth=HOLE_DEPTH,
                       circle_segments=SEGMENTS)


def geometric_clearance(scene, yaw_samples: int = 65) -> tuple[float, float]:
    """Radial clearance of the polygons, checked numerically: ``(aligned, worst over yaw)`` [m].

    The smallest gap between the peg polygon's corners and the hole polygon's faces, with the peg as built
    and turned about its axis over one polygon period (a fine polygon's corners stick out by its sagitta;
    an odd ``yaw_samples`` includes the half period, where a corner faces a face's middle).
    """
    meta, tool = scene.statics[1].part.meta, scene.tool.part
    corners = tool.vertices[np.isclose(tool.vertices[:, 2], 0.0)][:, :2]
    corners = corners[np.linalg.norm(corners, axis=1) > 0.5 * PEG_RADIUS]
    normals = face_normals(meta["n_sides"])
    gaps = []
    for yaw in np.linspace(0.0, 2.0 * np.pi / meta["n_sides"], yaw_samples):
        c, s = np.cos(yaw), np.sin(yaw)
        turned = corners @ np.array([[c, s], [-s, c]])
        gaps.append(meta["hole_apothem"] - float((turned @ normals.T).max()))
    return gaps[0], min(gaps)


def _polygon_support(xy: np.ndarray, n: int) -> np.ndarray:
    """``max_k n_k·p`` ``(P,)`` over the face normals ``n_k`` at angles ``2πk/n`` of a regular polygon: the
    nearest normal's, ``|p| cos δ`` with ``δ`` the angle from ``p`` to it."""
    angle = np.arctan2(xy[:, 1], xy[:, 0])
    step = 2.0 * np.pi / n
    delta = angle - step * np.round(angle / step)
    return np.hypot(xy[:, 0], xy[:, 1]) * np.cos(delta)


class HoleGauge:
    """Penetration of the peg into the hole's walls and floor, from the geometry alone (module docstring).

    Peg points: the tip polygon with ``EDGE_SAMPLES`` points per edge, and the side edges every
    ``AXIAL_PITCH``. Rim points: the hole's top polygon with ``EDGE_SAMPLES`` points per edge. The depth of a
    peg point in the wall is how far it lies outside the hole polygon (between floor and top), in the floor how
    far below the floor; a rim point's depth is its distance to the peg's surface when inside the peg.
    """

    def __init__(self, scene):
        meta = scene.statics[1].part.meta
        self.n = int(meta["n_sides"])
        self.apothem = float(meta["hole_apothem"])
        self.floor = float(scene.target_pos[2])
        self.top = float(scene.meta["slot_top_z"])
        between = np.linspace(0.0, 1.0, EDGE_SAMPLES + 2)[:-1]
        peg_corners = _corners(PEG_RADIUS, self.n)
        tip = _edge_points(peg_corners, between)
        heights = np.linspace(0.0, PEG_LENGTH, int(round(PEG_LENGTH / AXIAL_PITCH)) + 1)
        sides = np.concatenate([np.column_stack([peg_corners, np.full(self.n, z)]) for z in heights])
        self.peg_points = np.concatenate([np.column_stack([tip, np.zeros(len(tip))]), sides])
        rim = _edge_points(_corners(self.apothem, self.n), between)
        self.rim = np.column_stack([rim, np.full(len(rim), self.top)])

    def penetration(self, pos: np.ndarray, quat: np.ndarray) -> tuple[float, float]:
        """``(wall, floor)`` penetration depth [m] (0 when clear) of the peg at the pose ``pos, quat``."""
        rot = quat_to_mat(quat)
        pts = self.peg_points @ rot.T + pos
        radial = _polygon_support(pts[:, :2], self.n) - self.apothem
        inside_height = (pts[:, 2] > self.floor) & (pts[:, 2] < self.top)
        wall = float(np.max(np.where(inside_height, radial, 0.0), initial=0.0))
        floor = float(np.max(self.floor - pts[:, 2], initial=0.0))
        local = (self.rim - pos) @ rot
        side = _polygon_support(local[:, :2], self.n) - PEG_RADIUS
        depth = np.minimum(-side, np.minimum(local[:, 2], PEG_LENGTH - local[:, 2]))
        rim = float(np.max(np.where(depth > 0.0, depth, 0.0), initial=0.0))
        return max(wall, rim), floor


def _corners(apothem: float, n: int) -> np.ndarray:
    """``(n, 2)`` corners of the regular ``n``-gon of this apothem (the orientation of ``geometry.polygon``)."""
    angle = (2.0 * np.arange(n) + 1.0) * np.pi / n
    return apothem / np.cos(np.pi / n) * np.stack([np.cos(angle), np.sin(angle)], axis=1)


def _edge_points(corners: np.ndarray, between: np.ndarray) -> np.ndarray:
    """Points at fractions ``between`` along each edge of a closed polygon ``corners (n, 2)``."""
    nxt = np.roll(corners, -1, axis=0)
    points = corners[:, None, :] * (1.0 - between[None, :, None]) + nxt[:, None, :] * between[None, :, None]
    return points.reshape(-1, 2)


def _targets(case: LoadCase, scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start pose ``(pos, quat)`` and the target orientation of a load case."""
    top = scene.meta["slot_top_z"]
    start = np.array([0.0, 0.0, top - START_DEPTH])
    tilted = rotvec_to_quat(np.array([0.0, TILT, 0.0]))
    upright = np.array([1.0, 0.0, 0.0, 0.0])
    quat = tilted if case in (LoadCase.TILTED_START, LoadCase.HELD_TILT) else upright
    return start, quat, tilted if case is LoadCase.HELD_TILT else upright


def _world(backend: str, scene, engine: EngineParams | None, setting: peer.MujocoSetting | None):
    """The simulator of ``backend``: the engine under ``engine``, or MuJoCo under ``setting`` (default
    ``BACKENDS[backend]`` with no noslip iterations; ``noslip_iterations`` is set on the built model)."""
    if backend == "engine":
        return EngineWorld(scene, BACKENDS["engine"], engine=engine)
    setting = setting if setting is not None else peer.MujocoSetting(BACKENDS[backend])
    world = MujocoWorld(scene, setting.params)
    world.model.opt.noslip_iterations = setting.noslip_iterations
    return world


def run_case(backend: str, clearance: float, case: LoadCase, hold_s: float | None = None,
             engine: EngineParams | None = None, setting: peer.MujocoSetting | None = None,
             stop_above: float | None = None) -> dict:
    """One insertion: the per-case record of the benchmark (keys of the module's JSON).

    ``hold_s`` [s] defaults to ``HOLD_S``; ``engine`` overrides the engine's settings (default
    :class:`~contactkit.engine.params.EngineParams`), ``setting`` MuJoCo's (default ``BACKENDS[backend]``).
    ``stop_above`` [m], if given, ends the episode as soon as the wall or floor penetration exceeds it (the
    sweep's early exit): the record then has ``stopped_early`` and is not inserted. Times, of ``step`` alone:
    ``ms_per_control_step`` is CPU time, ``wall_s_per_sim_s`` wall-clock time per simulated second;
    ``simulated_s`` is the simulated time run [s].
    """
    scene = insertion_scene(clearance)
    world = _world(backend, scene, engine, setting)
    gauge = HoleGauge(scene)
    start, quat, target_quat = _targets(case, scene)
    state = world.reset(BodyState.at_rest(start, quat))
    bottom = scene.target_pos[2]
    offset = np.array([OFFSET if case is LoadCase.OFFSET else 0.0, 0.0, 0.0])
    descent = int(math.ceil((start[2] - bottom + PRESS) / (DESCENT_SPEED * CONTROL_DT)))
    total = descent + int(round((HOLD_S if hold_s is None else hold_s) / CONTROL_DT))
    wall = floor = cpu = clock = 0.0
    fz, steps, stopped = [], 0, False
    while steps < total and not stopped:
        z = max(start[2] - DESCENT_SPEED * CONTROL_DT * (steps + 1), bottom - PRESS)
        turn = quat_to_rotvec(quat_mul(target_quat, quat_conj(state.quat)))
        command = np.concatenate([np.array([0.0, 0.0, z]) + offset - state.pos, turn])
        began, began_wall = time.process_time(), time.perf_counter()
        result = world.step(command, ActionMode.POSE_DELTA)
        cpu, clock = cpu + time.process_time() - began, clock + time.perf_counter() - began_wall
        state = result.state
        w, f = gauge.penetration(np.asarray(state.pos), np.asarray(state.quat))
        wall, floor = max(wall, w), max(floor, f)
        if steps >= descent:
            fz.append(result.wrench[2])
        steps += 1
        stopped = stop_above is not None and max(wall, floor) > stop_above
    return {
        "backend": backend,
        "clearance_m": clearance,
        "load_case": case.value,
        "inserted": bool(not stopped and state.pos[2] - bottom <= INSERTED_TOL),
        "stopped_early": stopped,
        "final_depth_m": float(scene.meta["slot_top_z"] - state.pos[2]),
        "max_wall_penetration_m": wall,
        "max_floor_penetration_m": floor,
        "fz_std_hold_N": float(np.std(fz)) if fz else float("nan"),
        "ms_per_control_step": 1e3 * cpu / steps,
        "wall_s_per_sim_s": clock / (steps * CONTROL_DT),
        "simulated_s": steps * CONTROL_DT,
    }


def sweep_case(setting: peer.MujocoSetting, case: peer.SweepCase, stop_above: float) -> dict:
    """The sweep's evaluation (:data:`contactkit.eval.tight_insertion_sweep.Evaluate`) of MuJoCo under
    ``setting`` in one case; a :class:`ContactkitError` (a diverged or refused simulation) is a failed case
    whose ``error`` is its message."""
    try:
        r = run_case("mujoco-sweep", case.clearance, case.load, setting=setting, stop_above=stop_above)
    except ContactkitError as exc:
        return {"inserted": False, "max_wall_penetration_m": 0.0, "max_floor_penetration_m": 0.0,
                "wall_s": 0.0, "cpu_s": 0.0, "simulated_s": 0.0, "error": f"{type(exc).__name__}: {exc}"}
    return {**r, "wall_s": r["wall_s_per_sim_s"] * r["simulated_s"],
            "cpu_s": 1e-3 * r["ms_per_control_step"] * r["simulated_s"] / CONTROL_DT, "error": None}


def oscillator_energy_error(max_step: float, seconds: float = 1.0) -> float:
    """Largest relative energy error of the undamped wrist spring twisting the bare peg about its axis.

    No gravity, no armature, damping ratio 0: the stiffest mode of the benchmark's tool under the default
    gains, ``ω = sqrt(K_r / I_zz)`` ≈ 206 rad/s. The engine's explicit spring is stable for ``ω h < 2``; its
    energy error grows like ``(ω h)²``. Returns ``max |E(t) - E(0)| / E(0)`` over ``seconds`` of simulated time.
    """
    scene = insertion_scene(CLEARANCES[0])
    gains = dataclasses.replace(scene.controller, damping_ratio=0.0)
    scene = dataclasses.replace(scene, controller=gains)
    world = EngineWorld(scene, WorldParams(gravity=False, wrist_armature=0.0, timestep=0.002, n_substeps=5),
                        engine=EngineParams(max_step=max_step))
    angle, k_rot, izz = 0.02, float(gains.stiffness_rot[2]), float(scene.tool.inertia[2, 2])
    start = np.asarray(scene.tool.init_pos) + [0.0, 0.0, 0.05]
    state = world.reset(BodyState.at_rest(start, rotvec_to_quat(np.array([0.0, 0.0, angle]))))
    energy0, worst = 0.5 * k_rot * angle**2, 0.0
    for _ in range(int(round(seconds / CONTROL_DT))):  # the target stays upright: a pose delta back to it
        state = world.step(np.concatenate([start - state.pos, quat_to_rotvec(quat_conj(state.quat))]),
                           ActionMode.POSE_DELTA).state
        twist = quat_to_rotvec(np.asarray(state.quat))[2]
        energy = 0.5 * izz * float(state.ang_vel[2]) ** 2 + 0.5 * k_rot * twist**2
        if not np.isfinite(energy) or energy > 1e6 * energy0:
            return float("inf")
        worst = max(worst, abs(energy - energy0) / energy0)
    return worst


def step_size_study(max_steps=(0.01, 0.005, 0.0025, 0.00125)) -> list[dict]:
    """The measurements behind :data:`contactkit.engine.params.DEFAULT_MAX_STEP`: per engine step, the
    oscillator's energy error (:func:`oscillator_energy_error`) and, over the four 0.065 mm load cases, the
    largest wall and floor penetrations, the largest fz standard deviation in the hold and the mean CPU time."""
    rows = []
    for step in max_steps:
        engine = EngineParams(max_step=step)
        cases = [run_case("engine", CLEARANCES[-1], case, engine=engine) for case in LoadCase]
        energy_error = oscillator_energy_error(step)
        rows.append({  # a diverging spring's error is null (JSON has no infinity)
            "max_step_s": step, "oscillator_energy_error": energy_error if math.isfinite(energy_error) else None,
            "all_inserted": all(c["inserted"] for c in cases),
            "max_wall_penetration_m": max(c["max_wall_penetration_m"] for c in cases),
            "max_floor_penetration_m": max(c["max_floor_penetration_m"] for c in cases),
            "max_fz_std_hold_N": max(c["fz_std_hold_N"] for c in cases),
            "ms_per_control_step": float(np.mean([c["ms_per_control_step"] for c in cases])),
        })
    return rows


SWEEP_ORDER = (LoadCase.OFFSET, LoadCase.HELD_TILT, LoadCase.ALIGNED, LoadCase.TILTED_START)
"""Load cases of the sweep, hardest first (MuJoCo's deepest wall penetrations come first), so that a failing
setting stops early; the smallest clearance runs first."""


def _warm_up() -> None:
    """Load the engine's compiled kernels and MuJoCo before any timing (a one-off cost per process)."""
    for backend in ("engine", "mujoco-default"):
        run_case(backend, CLEARANCES[-1], LoadCase.ALIGNED, hold_s=0.0)


def _means(cases: list[dict], key: str) -> dict:
    """Mean of ``key`` over each backend's case records."""
    backends = dict.fromkeys(r["backend"] for r in cases)
    return {b: float(np.mean([r[key] for r in cases if r["backend"] == b])) for b in backends}


def run(quick: bool, seed: int = 0, device: str = "cpu") -> dict:
    """Sweep MuJoCo for :data:`FASTEST` (:mod:`~contactkit.eval.tight_insertion_sweep`; ``quick``: its reduced
    coarse pass), then every backend × clearance × load case (``quick``: the 0.065 mm clearance only); a full
    run adds the engine's :func:`step_size_study` under ``"step_size_study"``. The speed ratio
    (:data:`RATIO_KEY`) is of mean wall time per simulated second, :data:`FASTEST`'s ÷ the engine's.

    ``seed`` is recorded only (the benchmark draws no random numbers); ``device`` must be ``"cpu"`` (both
    simulators run on one CPU core).
    """
    if device != "cpu":
        raise ValueError(f"tight-insertion runs on the CPU only, got device {device!r}")
    _warm_up()
    clearances = CLEARANCES[-1:] if quick else CLEARANCES
    sweep_cases = [peer.SweepCase(c, case) for c in sorted(clearances) for case in SWEEP_ORDER]
    with progress.task("MuJoCo settings tried") as advance:
        rows = peer.sweep(sweep_cases, sweep_case, quick, progress=lambda row: advance())
    found = peer.summary(rows, sweep_cases, quick)
    settings = {b: peer.MujocoSetting(p) for b, p in BACKENDS.items() if b != "engine"}
    if found["mujoco_fastest_within_10um"] is not None:
        settings[FASTEST] = peer.setting_from_dict(found["mujoco_fastest_within_10um"])
    backends = ["engine", *settings]
    runs = [(b, c, case) for c in clearances for case in LoadCase for b in backends]
    cases = [run_case(b, c, case, setting=settings.get(b)) for b, c, case in progress.track(runs, "cases")]
    wall = _means(cases, "wall_s_per_sim_s")
    aligned, worst = geometric_clearance(insertion_scene(clearances[-1]))
    study = {} if quick else {"step_size_study": step_size_study()}
    config = {b: {**s.params.to_dict(), "noslip_iterations": s.noslip_iterations} for b, s in settings.items()}
    return {
        "config": {
            "peg_diameter_m": 2 * PEG_RADIUS, "peg_length_m": PEG_LENGTH, "hole_depth_m": HOLE_DEPTH,
            "polygon_sides": SEGMENTS, "clearances_m": list(clearances), "tilt_rad": TILT, "offset_m": OFFSET,
            "descent_speed_m_s": DESCENT_SPEED, "press_m": PRESS, "hold_s": HOLD_S, "control_dt_s": CONTROL_DT,
            "backends": {"engine": BACKENDS["engine"].to_dict(), **config}, "seed": seed,
            "smallest_clearance_checked_m": aligned, "smallest_clearance_any_yaw_m": worst,
        },
        "cases": cases,
        "ms_per_control_step_mean": _means(cases, "ms_per_control_step"),
        "wall_s_per_sim_s_mean": wall,
        "max_penetration_m": {b: max(max(r["max_wall_penetration_m"], r["max_floor_penetration_m"])
                                     for r in cases if r["backend"] == b) for b in backends},
        "speed_ratio_engine_vs_mujoco_default": wall["mujoco-default"] / wall["engine"],
        RATIO_KEY: wall[FASTEST] / wall["engine"] if FASTEST in wall else None,
        **found,
        **study,
    }


def markdown(result: dict) -> str:
    """A markdown table of ``result["cases"]`` (one row per backend, clearance and load case)."""
    lines = [
        "| clearance [mm] | load case | backend | inserted | final depth [mm] | wall pen. [µm] | floor pen. [µm] "
        "| fz std hold [N] | ms / control step | wall s / sim s |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["cases"]:
        lines.append(
            f"| {r['clearance_m'] * 1e3:g} | {r['load_case']} | {r['backend']} | {'yes' if r['inserted'] else 'no'} "
            f"| {r['final_depth_m'] * 1e3:.2f} | {r['max_wall_penetration_m'] * 1e6:.1f} "
            f"| {r['max_floor_penetration_m'] * 1e6:.1f} | {r['fz_std_hold_N']:.3g} | {r['ms_per_control_step']:.3g} "
            f"| {r['wall_s_per_sim_s']:.3g} |"
        )
    if RATIO_KEY in result:
        ratio = result[RATIO_KEY]
        lines += ["", f"Speed ratio engine vs {FASTEST} (mean wall time per simulated second of that setting ÷ "
                      f"the engine's): {'none (no setting met the bound)' if ratio is None else f'{ratio:.3g}'}"]
    lines.append(peer.markdown(result))
    study = result.get("step_size_study")
    _energy = lambda e: "diverges" if e is None else f"{e:.3g}"  # noqa: E731
    if study:
        lines += ["", "Engine step size (0.065 mm cases; spring energy error over 1 s, undamped):", "",
                  "| engine step [ms] | energy error | all inserted | wall pen. [µm] | floor pen. [µm] "
                  "| ms / control step |", "|---:|---:|---|---:|---:|---:|"]
        lines += [f"| {r['max_step_s'] * 1e3:g} | {_energy(r['oscillator_energy_error'])} | "
                  f"{'yes' if r['all_inserted'] else 'no'} | {r['max_wall_penetration_m'] * 1e6:.1f} | "
                  f"{r['max_floor_penetration_m'] * 1e6:.2f} | {r['ms_per_control_step']:.3g} |" for r in study]
    return "\n".join(lines) + "\n"
