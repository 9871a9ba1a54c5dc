"""The MuJoCo peer of benchmark ``tight-insertion``, found by a sweep rather than picked by hand.

A MuJoCo setting (:class:`MujocoSetting`) is a time step (``CONTROL_DT / n_substeps``), a contact softness
(solref time constant, a multiple of the time step since MuJoCo clamps it to at least two steps; solimp), the
friction cone, ``impratio`` and ``noslip_iterations``. A setting *meets the bound* when, in every case of the run (the
four load cases at every clearance; ``--quick``: at the smallest), the peg is inserted, neither wall nor floor
is penetrated by more than :data:`PENETRATION_BOUND` (the engine's bound) and MuJoCo raised no error. Its cost
is the wall-clock time of the simulator's ``step`` per simulated second, measured in the benchmark's process.

The sweep (:func:`sweep`) keeps it affordable:

1. *coarse*: for each time step from the cheapest (10 ms) to the most expensive, each softness
   (:data:`TIMECONST_STEPS` × :data:`SOLIMPS`), MuJoCo's other options at the project's defaults; the cases
   run hardest first and a setting stops at its first failing case (an episode stops as soon as its
   penetration exceeds the bound). The coarse pass stops at the first time step where a setting meets the bound.
2. *refine* (full runs only): at that time step and at the next cheaper one, the softness that went furthest
   there (most cases passed, then least penetration) with every combination of :data:`CONES`,
   :data:`IMPRATIOS` and :data:`NOSLIP_ITERATIONS`.

Every tried setting is a row (:func:`try_setting`) with its largest penetration, how many cases it passed and
its cost; :func:`fastest_within` picks the cheapest row that meets the bound, or None.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

from contactkit.physics import WorldParams

PENETRATION_BOUND = 10e-6
"""Largest wall or floor penetration [m] a setting may reach in any load case: the engine's bound (10 µm)."""
CONTROL_DT = 0.01
"""Control period [s] of the benchmark; a time step is ``CONTROL_DT / n_substeps``."""
SUBSTEPS = (1, 2, 4, 5, 10, 20, 40, 80)
"""Physics steps per control step, cheapest first: time steps 10, 5, 2.5, 2, 1, 0.5, 0.25, 0.125 ms."""
QUICK_SUBSTEPS = (2, 10, 20, 40)
"""The reduced coarse pass of ``--quick`` (no refinement)."""
TIMECONST_STEPS = (2.0, 4.0)
"""solref time constants in time steps (2 is the stiffest MuJoCo allows)."""
SOLREF_DAMPRATIO = 1.0
SOLIMPS = {"default": (0.9, 0.95, 0.001, 0.5, 2.0), "hard": (0.99, 0.999, 0.001, 0.5, 2.0)}
"""solimp ``(dmin, dmax, width [m], midpoint, power)`` tried: MuJoCo's default and a harder impedance."""
CONES = ("elliptic", "pyramidal")
IMPRATIOS = (1.0, 10.0)
NOSLIP_ITERATIONS = (0, 10)
"""The coarse pass uses the first of each (the project's and MuJoCo's defaults)."""


@dataclasses.dataclass(frozen=True)
class MujocoSetting:
    """One MuJoCo configuration of the benchmark: world parameters plus ``noslip_iterations``, which
    :class:`~contactkit.physics.WorldParams` does not carry (set on the model after it is built)."""

    params: WorldParams
    noslip_iterations: int = 0

    def to_dict(self) -> dict:
        """The swept fields, JSON-compatible: timestep [s], n_substeps, solref, solimp, cone, impratio,
        noslip_iterations."""
        p = self.params
        return {"timestep": p.timestep, "n_substeps": p.n_substeps, "solref": list(p.solref),
                "solimp": list(p.solimp), "cone": p.cone, "impratio": p.impratio,
                "noslip_iterations": self.noslip_iterations}


def make_setting(n_substeps: int, timeconst_steps: float = TIMECONST_STEPS[0], solimp: str = "default",
                 cone: str = CONES[0], impratio: float = IMPRATIOS[0],
                 noslip_iterations: int = NOSLIP_ITERATIONS[0]) -> MujocoSetting:
    """The setting with time step ``CONTROL_DT / n_substeps`` [s], solref ``(timeconst_steps · timestep,
    SOLREF_DAMPRATIO)``, ``SOLIMPS[solimp]`` and the other options as given."""
    dt = CONTROL_DT / n_substeps
    params = WorldParams(timestep=dt, n_substeps=n_substeps, solref=(timeconst_steps * dt, SOLREF_DAMPRATIO),
                         solimp=SOLIMPS[solimp], cone=cone, impratio=impratio)
    return MujocoSetting(params, noslip_iterations)


def coarse_grid(n_substeps: int) -> list[MujocoSetting]:
    """The coarse pass's settings at one time step: every softness (time constant × solimp)."""
    return [make_setting(n_substeps, tc, name) for tc, name in itertools.product(TIMECONST_STEPS, SOLIMPS)]


def refine_grid(n_substeps: int, timeconst_steps: float, solimp: str) -> list[MujocoSetting]:
    """One softness at one time step with every combination of cone, impratio and noslip iterations."""
    combos = itertools.product(CONES, IMPRATIOS, NOSLIP_ITERATIONS)
    return [make_setting(n_substeps, timeconst_steps, solimp, *combo) for combo in combos]


def _softness(row: dict) -> tuple[float, str]:
    """``(timeconst_steps, solimp name)`` of a row's setting."""
    s = row["setting"]
    name = next(k for k, v in SOLIMPS.items() if list(v) == s["solimp"])
    return round(s["solref"][0] / s["timestep"], 6), name


def furthest(rows: Sequence[dict]) -> dict:
    """The row that went furthest: most cases passed, then least penetration (the first on a tie)."""
    return min(rows, key=lambda row: (-row["cases_passed"], row["max_penetration_m"]))


@dataclasses.dataclass(frozen=True)
class SweepCase:
    """One case of the sweep: load case ``load`` (an enum) at radial clearance ``clearance`` [m]."""

    clearance: float
    load: object

    @property
    def value(self) -> str:
        """Its label, e.g. ``"0.065 mm offset"``."""
        return f"{self.clearance * 1e3:g} mm {getattr(self.load, 'value', self.load)}"


Evaluate = Callable[[MujocoSetting, object, float], dict]
"""``evaluate(setting, case, stop_above) -> case record``: one episode (a :class:`SweepCase`) that stops once
its penetration exceeds ``stop_above`` [m]. The record holds ``inserted``, ``max_wall_penetration_m``,
``max_floor_penetration_m``, ``wall_s``, ``cpu_s`` (time in ``step``), ``simulated_s`` and ``error`` (None,
or the message of a :class:`~contactkit.errors.ContactkitError`)."""


def case_meets_bound(record: dict, bound: float = PENETRATION_BOUND) -> bool:
    """Whether one case record is inserted, error-free and within ``bound`` [m] on wall and floor."""
    depth = max(record["max_wall_penetration_m"], record["max_floor_penetration_m"])
    return record["error"] is None and record["inserted"] and depth <= bound


def try_setting(setting: MujocoSetting, cases: Sequence, evaluate: Evaluate, stage: str,
                bound: float = PENETRATION_BOUND) -> dict:
    """Run ``cases`` in order until one fails (:func:`case_meets_bound`); the sweep's row of ``setting``.

    The row: ``setting`` (:meth:`MujocoSetting.to_dict`), ``stage``, ``cases_passed``, ``cases_total``,
    ``failed_case`` (the case's label or None), ``error``, ``max_penetration_m`` (largest wall or floor
    depth over the cases run [m]) and the cost over the cases run: ``wall_s_per_sim_s`` and
    ``cpu_s_per_sim_s`` (seconds in ``step`` per simulated second; None when nothing was simulated).
    """
    passed, depth, wall, cpu, simulated, failed, error = 0, 0.0, 0.0, 0.0, 0.0, None, None
    for case in cases:
        record = evaluate(setting, case, bound)
        depth = max(depth, record["max_wall_penetration_m"], record["max_floor_penetration_m"])
        wall, cpu, simulated = wall + record["wall_s"], cpu + record["cpu_s"], simulated + record["simulated_s"]
        if not case_meets_bound(record, bound):
            failed, error = getattr(case, "value", str(case)), record["error"]
            break
        passed += 1
    ran = simulated > 0.0
    return {"setting": setting.to_dict(), "stage": stage, "cases_passed": passed, "cases_total": len(cases),
            "failed_case": failed, "error": error, "max_penetration_m": depth,
            "wall_s_per_sim_s": wall / simulated if ran else None, "cpu_s_per_sim_s": cpu / simulated if ran else None}


def row_meets_bound(row: dict, bound: float = PENETRATION_BOUND) -> bool:
    """Whether a sweep row passed every case within ``bound`` [m]."""
    return (row["error"] is None and row["cases_passed"] == row["cases_total"] > 0
            and row["max_penetration_m"] <= bound)


def fastest_within(rows: Sequence[dict], bound: float = PENETRATION_BOUND,
                   cost: str = "wall_s_per_sim_s") -> dict | None:
    """The row of least ``cost`` among those that meet ``bound`` [m] (:func:`row_meets_bound`); the first
    such row on a tie; None when no row meets it."""
    within = [row for row in rows if row_meets_bound(row, bound)]
    return min(within, key=lambda row: row[cost]) if within else None


def sweep(cases: Sequence, evaluate: Evaluate, quick: bool, bound: float = PENETRATION_BOUND,
          progress: Callable[[dict], None] | None = None) -> list[dict]:
    """The coarse pass, then (unless ``quick``) the refinement (module docstring); every tried row, in order.

    ``cases`` are the cases, hardest first; ``progress`` (optional) is called with each new row.
    """
    substeps = QUICK_SUBSTEPS if quick else SUBSTEPS
    rows: list[dict] = []

    def tried(setting: MujocoSetting, stage: str) -> None:
        if any(row["setting"] == setting.to_dict() for row in rows):
            return
        rows.append(try_setting(setting, cases, evaluate, stage, bound))
        if progress is not None:
            progress(rows[-1])

    found = None
    for index, n in enumerate(substeps):
        for setting in coarse_grid(n):
            tried(setting, "coarse")
        if any(row_meets_bound(row, bound) for row in rows):
            found = index
            break
    if found is None or quick:
        return rows
    for n in substeps[max(found - 1, 0):found + 1]:
        coarse = [row for row in rows if row["setting"]["n_substeps"] == n]
        for setting in refine_grid(n, *_softness(furthest(coarse))):
            tried(setting, "refine")
    return rows


def setting_from_dict(d: dict) -> MujocoSetting:
    """The setting of a row's ``setting`` (:meth:`MujocoSetting.to_dict`; other world parameters default)."""
    params = WorldParams(timestep=d["timestep"], n_substeps=d["n_substeps"], solref=tuple(d["solref"]),
                         solimp=tuple(d["solimp"]), cone=d["cone"], impratio=d["impratio"])
    return MujocoSetting(params, int(d["noslip_iterations"]))


def summary(rows: Sequence[dict], cases: Sequence, quick: bool, bound: float = PENETRATION_BOUND) -> dict:
    """The sweep's part of the benchmark's JSON: ``peer_sweep`` (bound [m], case order, every row)
    and ``mujoco_fastest_within_10um`` (the chosen row's setting, or None with ``..._note`` saying so), plus the
    choice had the cost been CPU time (``..._by_cpu_time``), as a check on a loaded machine."""
    chosen, by_cpu = fastest_within(rows, bound), fastest_within(rows, bound, cost="cpu_s_per_sim_s")
    met = sum(row_meets_bound(row, bound) for row in rows)
    note = (f"fastest (wall time per simulated second) of {met} of {len(rows)} tried settings that met the bound"
            if chosen else f"none of the {len(rows)} tried settings met the {bound * 1e6:g} µm bound in all "
                           f"{len(cases)} cases: no peer, no ratio")
    return {
        "peer_sweep": {"bound_m": bound, "quick": quick,
                       "case_order": [getattr(c, "value", str(c)) for c in cases],
                       "substeps": list(QUICK_SUBSTEPS if quick else SUBSTEPS), "tried": len(rows),
                       "met_bound": met, "rows": list(rows)},
        "mujoco_fastest_within_10um": None if chosen is None else chosen["setting"],
        "mujoco_fastest_within_10um_note": note,
        "mujoco_fastest_within_10um_by_cpu_time": None if by_cpu is None else by_cpu["setting"],
    }


def _cost(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def markdown(result: dict) -> str:
    """A markdown table of the sweep's rows in ``result["peer_sweep"]`` (the chosen one marked), or ""."""
    sweep_part = result.get("peer_sweep")
    if not sweep_part:
        return ""
    chosen = result.get("mujoco_fastest_within_10um")
    lines = ["", f"MuJoCo settings tried (cases in the order {', '.join(sweep_part['case_order'])}; "
                 f"a setting stops at the first case over "
                 f"{sweep_part['bound_m'] * 1e6:g} µm): {result.get('mujoco_fastest_within_10um_note', '')}", "",
             "| stage | dt [ms] | solref tc [ms] | solimp dmin, dmax | cone | impratio | noslip | cases passed "
             "| failed at | max pen. [µm] | wall s / sim s | CPU s / sim s | chosen |",
             "|---|---:|---:|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for row in sweep_part["rows"]:
        s = row["setting"]
        lines.append(
            f"| {row['stage']} | {s['timestep'] * 1e3:g} | {s['solref'][0] * 1e3:g} | {s['solimp'][0]:g}, "
            f"{s['solimp'][1]:g} | {s['cone']} | {s['impratio']:g} | {s['noslip_iterations']} | "
            f"{row['cases_passed']}/{row['cases_total']} | {row['failed_case'] or ''} | "
            f"{row['max_penetration_m'] * 1e6:.1f} | "
            f"{_cost(row['wall_s_per_sim_s'])} | {_cost(row['cpu_s_per_sim_s'])} | {'yes' if s == chosen else ''} |")
    return "\n".join(lines) + "\n"
