"""The paper's numbers a measurement module quotes beside its own (its ``PAPER`` constant).

A measurement module that reproduces a paper's table or figure defines ``PAPER``: nested dicts that mirror the keys
of its result (a key ``NAME[field=value,...]`` picks the record of the list ``NAME`` whose fields have those values,
as text), whose leaves are :class:`Quote` — the number as the paper prints it, where it prints it, and the factor
that turns it into the unit of our key. The report (``contactkit report``) shows each beside our value of the same
key (:func:`contactkit.report.results_page.paper_rows`). Only numbers the paper states are quoted; a quantity that
the paper defines differently from ours is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COLLECT", "CONNECTOR_INSERTION", "CONTACT_DETECTION", "MPC_INSERTION", "PREDICTION_ACCURACY", "PUSHING",
           "REPLAN", "TIGHT_ASSEMBLY", "Quote", "paper_values"]


@dataclass(frozen=True)
class Quote:
    """One number of a paper, as printed.

    Attributes:
        value: the number as the paper prints it (in the paper's unit).
        source: where: the table, figure or section, the row and column, and the paper's unit where it is not ours.
        factor: ``value * factor`` is the number in the unit of our result key (e.g. 0.01 for a percentage beside
            our fraction, 0.1 for a column printed in 10⁻¹ N beside our newtons); 1 when the units are the same.
    """

    value: float
    source: str
    factor: float = 1.0

    @property
    def ours_units(self) -> float:
        """The number in the unit of our result key: ``value * factor``."""
        return float(self.value) * float(self.factor)


def paper_values(paper: dict) -> dict:
    """``paper`` (nested dicts of :class:`Quote`) with every quote replaced by its value in our units."""
    return {k: paper_values(v) if isinstance(v, dict) else v.ours_units if isinstance(v, Quote) else v
            for k, v in paper.items()}


def _table(rows: tuple, columns: tuple[tuple[str, float], ...], where: str, source: str) -> dict:
    """``{where.format(*row[:n]): {key: Quote}}`` for rows ``(*names, *numbers)`` of a table whose numeric
    columns are ``columns`` = ``((our key, factor), ...)``; the source names the table, the row and the column."""
    n = len(rows[0]) - len(columns)
    return {where.format(*row[:n]): {key: Quote(v, f"{source}, {' '.join(map(str, row[:n]))}, {key}", factor)
                                     for (key, factor), v in zip(columns, row[n:], strict=True)}
            for row in rows}


def _merge(a: dict, b: dict) -> dict:
    """``a`` and ``b`` merged key by key (nested dicts merged, ``b`` wins elsewhere)."""
    return {**a, **{k: _merge(a[k], v) if isinstance(a.get(k), dict) and isinstance(v, dict) else v
                    for k, v in b.items()}}


_ACT = "Act-FIGNet paper"
_TABLE_IV = f"{_ACT} Table IV (MPC agent parameters)"

PREDICTION_ACCURACY = {
    "rows[model=act-fignet,policy=random-spline]": {
        "rmse_pos_mm": Quote(3.18, f"{_ACT} Table I, Ours, RSME pos (T=100) Abs. (mm); real-world data"),
        "rmse_rot_deg": Quote(0.866, f"{_ACT} Table I, Ours, RSME rot (T=100) Abs. (deg); real-world data"),
        "force_err_N": Quote(0.663, f"{_ACT} Table I, Ours, one-step error Force (N); real-world data"),
        "torque_err_Nm": Quote(0.025, f"{_ACT} Table I, Ours, one-step error Torque (Nm); real-world data")},
    "rows[model=fignet-plus,policy=random-spline]": {
        "rmse_pos_mm": Quote(5.26, f"{_ACT} Table I, FIGNet+, RSME pos (T=100) Abs. (mm); real-world data"),
        "rmse_rot_deg": Quote(1.551, f"{_ACT} Table I, FIGNet+, RSME rot (T=100) Abs. (deg); real-world data"),
        "force_err_N": Quote(2.291, f"{_ACT} Table I, FIGNet+, one-step error Force (N); real-world data"),
        "torque_err_Nm": Quote(0.069, f"{_ACT} Table I, FIGNet+, one-step error Torque (Nm); real-world data")},
    "rows[model=mujoco-nominal,policy=random-spline]": {
        "rmse_pos_mm": Quote(8.08, f"{_ACT} Table I, MuJoCo (fitted), RSME pos (T=100) Abs. (mm); real-world data"),
        "rmse_rot_deg": Quote(1.837, f"{_ACT} Table I, MuJoCo (fitted), RSME rot (T=100) Abs. (deg); real-world data"),
        "force_err_N": Quote(2.349, f"{_ACT} Table I, MuJoCo (fitted), one-step error Force (N); real-world data"),
        "torque_err_Nm": Quote(0.086, f"{_ACT} Table I, MuJoCo (fitted), one-step error Torque (Nm); real-world data")},
}
"""Act-FIGNet paper Table I beside ``prediction-accuracy`` (ours: simulated data of the same setup). Left out: the
relative errors (the paper divides by the accumulated state change, ours by the RMS displacement), Table III (the
stored run on the target world trains no message-passing ablation: a third graph network did not fit its CPU hour
beside the residuals and the calibration; ``--workers``/``ablation`` budgets still run it) and Fig. 10 (numbers only
in the figure)."""

MPC_INSERTION = {
    "models": {
        "ground-truth": {"success_rate": Quote(85, f"{_ACT} §IV-A d), Fig. 4a: 'the 85% success rate of the ground "
                                                   "truth model' (MJX)", 0.01)},
        "act-fignet": {"success_rate": Quote(70, f"{_ACT} §IV-A d), Fig. 4a: 'an overall success rate of 70%'", 0.01),
                       "halfway_rate": Quote(90, f"{_ACT} §IV-A d): 'inserts the peg halfway in 90% of all trials'",
                                             0.01),
                       "per_shape": {"circle": {"success_rate": Quote(
                           70, f"{_ACT} §IV-A d): 'for the unseen circle tool shape ... a high success rate of 70%'",
                           0.01)}}}},
    "budget": {"horizon": Quote(50, f"{_TABLE_IV}, Horizon"), "population": Quote(20, f"{_TABLE_IV}, Samples"),
               "iterations": Quote(5, f"{_TABLE_IV}, Iterations"),
               "replan_every": Quote(5, f"{_TABLE_IV}, Replan freq.")},
}
"""Act-FIGNet paper §IV-A (Fig. 4a; the numbers its text states) and Table IV beside ``mpc-insertion``."""

REPLAN = {"agent": MPC_INSERTION["budget"]}
"""Act-FIGNet paper Table IV beside ``benchmark replan``'s agent (the paper states no replanning time)."""

COLLECT = {"steps_per_episode": Quote(400, f"{_ACT} §IV-A a): 'Each episode comprises 400 control steps'"),
           "substeps_per_step": Quote(25, f"{_ACT} §IV-A a): 'each subdivided into 25 simulation sub-steps'")}
"""Act-FIGNet paper §IV-A a) beside ``benchmark collect``'s episode (the paper states no collection speed in
simulation)."""

_TT = "tight-tolerance paper"
CONTACT_DETECTION = {"tasks": _merge(_table(
    (("peg-in-hole", 2.31, 0.28, 8.44, 0.58), ("bolting", 5.82, 0.28, 19.10, 0.72)),
    (("coal_ms_mean", 1.0), ("learned_ms_mean", 1.0), ("coal_ms_max", 1.0), ("learned_ms_max", 1.0)),
    "{}", f"{_TT} Table I (FCL for coal; Proposed for learned; ms)"), {
    "peg-in-hole": {"speedup": Quote(8.2, f"{_TT} §V-C: 'about 8.2 times faster for the peg-in-hole task'")},
    "bolting": {"speedup": Quote(21.1, f"{_TT} §V-C: '21.1 times faster for the bolting task than FCL'")}})}
"""Tight-tolerance paper Table I and §V-C beside ``benchmark contact-detection`` (ours: coal, FCL's successor)."""

_TT_ONE_STEP = f"{_TT} §V-C, Fig. 9: RMSE of the contact force (N), object-level simulation vs experiment"
_TT_COMPLETE = f"{_TT} §V-D, complete simulation"
TIGHT_ASSEMBLY = {"tasks": _merge(_table(
    (("peg-in-hole", 1.37, 16.27), ("bolting", 0.72, 5.28)),
    (("ours_force_rmse_N", 1.0), ("kmeans_pgs_force_rmse_N", 1.0)), "{}", _TT_ONE_STEP), _table(
    (("peg-in-hole", 1.63, 3.2), ("bolting", 1.01, 5.6)),
    (("complete_sim_force_rmse_N", 1.0), ("ms_per_step", 1.0)), "{}",
    f"{_TT_COMPLETE}: RMSE of the contact force (N) and average one-step computation time (ms, Fig. 11)"))}
"""Tight-tolerance paper §V-C and §V-D beside ``tight-assembly``."""

CONNECTOR_INSERTION = {"mean_force_reduction": Quote(
    80, "LML paper §5 (Fig. 5): forces 'dramatically reduced by over 80%' — a lower bound, on the Franka", 0.01)}
"""LML paper §5 beside ``connector-insertion`` (its Figs. 2, 3 and 5 state no other number in the text)."""

_PUSH = "pushing paper"
PUSHING = _merge(_table(
    (("cube", "constant", 22.3, 4.0, 14.5, 4.0), ("cube", "trapezoidal", 25.8, 4.2, 16.7, 4.8),
     ("cube", "chirp", 26.5, 4.8, 17.4, 5.2), ("wedge", "constant", 23.0, 4.2, 13.3, 5.5),
     ("wedge", "trapezoidal", 27.9, 4.5, 15.8, 4.8), ("wedge", "chirp", 29.6, 4.8, 18.7, 4.3)),
    (("pd_translation_err_pct", 1.0), ("rl_translation_err_pct", 1.0), ("pd_angle_err_pct", 1.0),
     ("rl_angle_err_pct", 1.0)),
    "cases[object={},profile={}]", f"{_PUSH} Table III (%, 50 real-world trials)"), _table(
        (("cube", "constant", 1.71, 1.85, 0.65, 0.73, 6.02, 6.34, 2.26, 2.52),
         ("cube", "trapezoidal", 1.88, 2.02, 0.72, 0.81, 6.67, 7.21, 2.62, 2.96),
         ("cube", "chirp", 2.05, 2.18, 0.78, 0.89, 7.44, 7.81, 2.93, 3.52),
         ("wedge", "constant", 1.95, 2.08, 0.74, 0.83, 6.51, 6.91, 2.47, 3.13),
         ("wedge", "trapezoidal", 2.12, 2.56, 0.81, 0.92, 7.14, 7.61, 2.18, 2.63),
         ("wedge", "chirp", 2.28, 2.43, 0.88, 0.94, 7.95, 8.33, 2.08, 2.48)),
        (("pd_force_err_N_sim", 0.1), ("pd_force_err_N_real", 0.1), ("rl_force_err_N_sim", 0.1),
         ("rl_force_err_N_real", 0.1), ("pd_torque_err_Nm_sim", 1e-3), ("pd_torque_err_Nm_real", 1e-3),
         ("rl_torque_err_Nm_sim", 1e-3), ("rl_torque_err_Nm_real", 1e-3)),
        "cases[object={},profile={}]", f"{_PUSH} Table IV (force in 10^-1 N, torque in 10^-3 Nm)"))
"""Pushing paper Tables III and IV beside ``pushing`` (the paper's "Trapezoid" rows are our ``trapezoidal``;
its "real" is a Kinova arm, ours a MuJoCo world)."""
