"""Acceptance ratios of the ``prediction-accuracy`` experiment (Act-FIGNet paper §IV-A, Table II).

Act-FIGNet is compared with nominal MuJoCo on the random-spline test set of the target world:

- position: 100-step rollout RMSE ratio ``rmse_pos(act) / rmse_pos(mujoco-nominal)`` ≤ :data:`BAR_POS_RATIO`
  (paper: 0.39);
- force against the *clean* readings of the test set's noise-free twin: ``force_err_clean(act) /
  force_err_clean(mujoco-nominal)`` ≤ :data:`BAR_FORCE_CLEAN_RATIO` (paper: 0.28). Against the recorded (noisy)
  readings both errors share the sensor noise's floor (0.495 N for the target world), so the recorded ratio
  keeps the older, stricter :data:`BAR_FORCE_RATIO` and is reported, not the bar, wherever a clean twin exists.
"""

from __future__ import annotations

__all__ = ["BAR_FORCE_CLEAN_RATIO", "BAR_FORCE_RATIO", "BAR_POS_RATIO", "bar"]

BAR_POS_RATIO = 0.5
"""Act-FIGNet's 100-step position RMSE at most this fraction of nominal MuJoCo's (issues 5 and 19)."""
BAR_FORCE_RATIO = 0.33
"""Issue 5: Act-FIGNet's one-step force error against the recorded readings at most this fraction of nominal
MuJoCo's (used as the force bar only where the test set has no clean twin)."""
BAR_FORCE_CLEAN_RATIO = 0.5
"""Issue 19: Act-FIGNet's one-step force error against the clean readings at most this fraction of nominal
MuJoCo's."""


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def bar(rows: list[dict], policy: str) -> dict:
    """Acceptance ratios of the result ``rows`` on ``policy``'s test set.

    Args:
        rows: one dict per (model, policy) with ``rmse_pos_mm`` [mm], ``force_err_N``/``torque_err_Nm`` [N, N·m]
            against the recorded readings and ``force_err_clean_N``/``torque_err_clean_Nm`` against the clean twin
            (None without one); models ``act-fignet``, ``fignet-plus``, ``mujoco-nominal``,
            ``mujoco-nominal-wrench`` and ``mujoco-target-oracle`` must be present for ``policy``.
        policy: the test set the bar is read on (the training policy, random-spline).

    Returns:
        The ratios, the floors the target world's own model reaches, and the pass flags: ``pos_ok``, ``force_ok``
        (recorded, :data:`BAR_FORCE_RATIO`), ``force_clean_ok`` (clean, :data:`BAR_FORCE_CLEAN_RATIO`; None without
        a twin), ``force_bar_ok`` (the clean one where it exists), and whether Act-FIGNet's F/T errors are below
        FIGNet+'s.
    """
    by = {r["model"]: r for r in rows if r["policy"] == policy}
    act, fig, mj = by["act-fignet"], by["fignet-plus"], by["mujoco-nominal"]
    pos_ratio = act["rmse_pos_mm"] / mj["rmse_pos_mm"]
    force_ratio = act["force_err_N"] / mj["force_err_N"]
    clean_ratio = _ratio(act["force_err_clean_N"], mj["force_err_clean_N"])
    lower_ft = act["force_err_N"] < fig["force_err_N"] and act["torque_err_Nm"] < fig["torque_err_Nm"]
    lower_clean = None if clean_ratio is None else bool(
        act["force_err_clean_N"] < fig["force_err_clean_N"] and act["torque_err_clean_Nm"] < fig["torque_err_clean_Nm"])
    force_clean_ok = None if clean_ratio is None else bool(clean_ratio <= BAR_FORCE_CLEAN_RATIO)
    return {
        "pos_ratio_vs_mujoco_nominal": pos_ratio,
        "force_ratio_vs_mujoco_nominal": force_ratio,
        "force_clean_ratio_vs_mujoco_nominal": clean_ratio,
        "pos_ratio_vs_mujoco_nominal_wrench": act["rmse_pos_mm"] / by["mujoco-nominal-wrench"]["rmse_pos_mm"],
        "force_floor_N": by["mujoco-target-oracle"]["force_err_N"],
        "force_clean_floor_N": by["mujoco-target-oracle"]["force_err_clean_N"],
        "pos_ok": bool(pos_ratio <= BAR_POS_RATIO),
        "force_ok": bool(force_ratio <= BAR_FORCE_RATIO),
        "force_clean_ok": force_clean_ok,
        "force_bar_readings": "recorded" if clean_ratio is None else "clean",
        "force_bar_ok": bool(force_ratio <= BAR_FORCE_RATIO) if clean_ratio is None else force_clean_ok,
        "ft_lower_than_fignet_plus": bool(lower_ft),
        "ft_clean_lower_than_fignet_plus": lower_clean,
    }


RESIDUAL_POS_RATIO = 0.3
"""The residual's 100-step position RMSE at most this fraction of nominal MuJoCo's (issue 31)."""
RESIDUAL_FORCE_CLEAN_RATIO = 0.5
"""The residual's one-step force error against the clean readings at most this fraction of nominal MuJoCo's."""
RESIDUAL_BACKBONES = {"residual-mujoco": "mujoco-nominal", "residual-engine": "engine-nominal"}
"""Each residual row and the row of its backbone alone."""


def _residual_case(by: dict, model: str) -> dict:
    """Ratios and flags of one residual row against nominal MuJoCo and the calibrated world on one test set."""
    res, mj, cal = by.get(model), by["mujoco-nominal"], by.get("mujoco-calibrated")
    if res is None:
        return {}
    pos, force = res["rmse_pos_mm"] / mj["rmse_pos_mm"], _ratio(res["force_err_clean_N"], mj["force_err_clean_N"])
    below_cal = None if cal is None else bool(
        res["rmse_pos_mm"] < cal["rmse_pos_mm"] and res["force_err_clean_N"] is not None
        and res["force_err_clean_N"] < cal["force_err_clean_N"])
    return {"pos_ratio_vs_mujoco_nominal": pos, "force_clean_ratio_vs_mujoco_nominal": force,
            "pos_ok": bool(pos <= RESIDUAL_POS_RATIO),
            "force_clean_ok": None if force is None else bool(force <= RESIDUAL_FORCE_CLEAN_RATIO),
            "below_mujoco_calibrated": below_cal}


def residual_bar(rows: list[dict], held_out: list[dict], policy: str, ood: tuple[str, ...]) -> dict:
    """Issue 31's bar for the residual rows (``residual-mujoco``, ``residual-engine``).

    Args:
        rows: the data world's rows (keys of :func:`contactkit.eval.predict_eval.report_row`);
        held_out: rows on the held-out worlds, each with ``world``;
        policy: the main test set's policy; ood: the out-of-distribution policies.

    Returns:
        per residual: ratios against nominal MuJoCo on ``policy`` (bars :data:`RESIDUAL_POS_RATIO`,
        :data:`RESIDUAL_FORCE_CLEAN_RATIO`), whether it is below ``mujoco-calibrated`` in both, whether its position
        error is below nominal's under each OOD policy, and whether on each held-out world its position error is at
        most its backbone's (:data:`RESIDUAL_BACKBONES`).
    """
    by_policy: dict[str, dict] = {}
    for r in rows:
        by_policy.setdefault(r["policy"], {})[r["model"]] = r
    out = {}
    for model, backbone in RESIDUAL_BACKBONES.items():
        case = _residual_case(by_policy.get(policy, {}), model)
        if not case:
            continue
        case["ood_pos_below_nominal"] = {
            p: bool(by_policy[p][model]["rmse_pos_mm"] < by_policy[p]["mujoco-nominal"]["rmse_pos_mm"])
            for p in ood if model in by_policy.get(p, {})}
        held = {}
        for world in sorted({r["world"] for r in held_out}):
            w = {r["model"]: r for r in held_out if r["world"] == world}
            if model in w and backbone in w:
                held[world] = {"pos_mm": w[model]["rmse_pos_mm"], "backbone_pos_mm": w[backbone]["rmse_pos_mm"],
                               "not_worse": bool(w[model]["rmse_pos_mm"] <= w[backbone]["rmse_pos_mm"])}
        case["held_out"] = held
        out[model] = case
    return out
