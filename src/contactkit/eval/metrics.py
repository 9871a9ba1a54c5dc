"""Prediction-accuracy metrics of Act-FIGNet paper §IV-B.c (Table I, Fig. 9, Fig. 10, Table III): pure functions.

Definitions (``N`` rollouts of ``T`` steps, each starting from a recorded state ``s_0``; predicted
``p̂_t, q̂_t`` and true ``p_t, q_t`` tool poses at steps ``t = 1..T``):

* position error ``e_t = ‖p̂_t − p_t‖`` [m] (tool frame origin, world frame); orientation error
  ``θ_t = angle(q̂_t q_t⁻¹)`` [rad], the geodesic angle in ``[0, π]``.
* ``RMSE(T) = sqrt( (1/(N T)) Σ_n Σ_{t=1..T} e_{n,t}² )``: the root-mean-square error over whole predicted
  trajectories of ``T`` steps ("RMSE between predicted and ground-truth trajectories"); Fig. 9 plots it
  against ``T``, Table I quotes ``T = 100``. Orientation likewise with ``θ``.
* relative error (Table I "Rel.", §IV-B.c "dividing the absolute values with the accumulated state changes
  over the rollout"): ``RMSE(T) / RMS(T)`` with ``RMS(T) = sqrt( (1/(N T)) Σ Σ ‖p_t − p_0‖² )`` the RMS of
  the *true displacement from the rollout start* over the same samples (for orientation, the RMS of the
  true rotation angle from the start). We chose the displacement from the start over the path length: it
  is the same statistic as the numerator, so a model that predicts "the tool stays where it is" scores
  exactly 1 (100 %), whatever the motion. Both numerator and denominator are pooled over all rollouts
  before dividing (a mean of per-rollout ratios would be dominated by rollouts in which the tool hardly moves).
* one-step F/T error: the mean over transitions of the Euclidean norm of the force error ``‖f̂ − f‖`` [N]
  and of the torque error ``‖τ̂ − τ‖`` [N·m], both in the F/T sensor frame, torque about the sensor origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_conj, quat_mul
from contactkit.state import BodyState

__all__ = [
    "OneStepMetrics",
    "RolloutErrors",
    "RolloutMetrics",
    "concat_rollout_errors",
    "horizon_curve",
    "one_step_metrics",
    "rollout_errors",
    "rollout_metrics",
    "rotation_angle",
]


@dataclass(frozen=True)
class RolloutErrors:
    """Squared errors of ``N`` rollouts at each of their ``T`` steps, all ``(N, T)`` float64.

    Attributes:
        pos_sq: ``‖p̂_t − p_t‖²`` [m²].
        rot_sq: ``angle(q̂_t q_t⁻¹)²`` [rad²].
        disp_sq: ``‖p_t − p_0‖²``, the true displacement from the rollout start [m²].
        turn_sq: ``angle(q_t q_0⁻¹)²``, the true rotation from the rollout start [rad²].
    """

    pos_sq: np.ndarray
    rot_sq: np.ndarray
    disp_sq: np.ndarray
    turn_sq: np.ndarray

    @property
    def n_rollouts(self) -> int:
        """Number of rollouts ``N``."""
        return int(self.pos_sq.shape[0])

    @property
    def horizon(self) -> int:
        """Steps per rollout ``T``."""
        return int(self.pos_sq.shape[1])


@dataclass(frozen=True)
class RolloutMetrics:
    """Table I motion columns and the Fig. 9 curves.

    Attributes:
        horizon: ``T`` the scalars are computed at.
        rmse_pos_m: ``RMSE^pos(T)`` [m]; rel_pos: ``RMSE^pos(T) / RMS`` displacement (dimensionless).
        rmse_rot_rad: ``RMSE^rot(T)`` [rad]; rel_rot: ``RMSE^rot(T) / RMS`` rotation (dimensionless).
        pos_curve_m: ``(T,)`` ``RMSE^pos(k)`` for ``k = 1..T`` [m]; rot_curve_rad: the same for orientation [rad].
        n_rollouts: ``N``.
    """

    horizon: int
    rmse_pos_m: float
    rel_pos: float
    rmse_rot_rad: float
    rel_rot: float
    pos_curve_m: np.ndarray
    rot_curve_rad: np.ndarray
    n_rollouts: int


@dataclass(frozen=True)
class OneStepMetrics:
    """Table I F/T columns.

    Attributes:
        force_err_N: mean ``‖f̂ − f‖`` [N], sensor frame. torque_err_Nm: mean ``‖τ̂ − τ‖`` [N·m], sensor frame.
        n_transitions: number of transitions averaged.
    """

    force_err_N: float
    torque_err_Nm: float
    n_transitions: int


def rotation_angle(q_a: np.ndarray, q_b: np.ndarray) -> np.ndarray:
    """Geodesic angle ``(*B,)`` [rad] in ``[0, π]`` of ``q_a q_b⁻¹`` for ``(*B, 4)`` unit quaternions (w, x, y, z).

    Computed as ``2 atan2(‖v‖, |w|)`` of the relative quaternion, exact for small angles (``arccos`` of the
    dot product loses half the digits there). Sign-invariant: ``q`` and ``−q`` are the same rotation.
    """
    rel = quat_mul(np.asarray(q_a, dtype=np.float64), quat_conj(np.asarray(q_b, dtype=np.float64)))
    return 2.0 * np.arctan2(np.linalg.norm(rel[..., 1:], axis=-1), np.abs(rel[..., 0]))


def rollout_errors(predicted: BodyState, truth: BodyState, start: BodyState) -> RolloutErrors:
    """Squared errors of predicted rollouts against the recorded ones.

    Args:
        predicted: predicted states ``s_1 .. s_T``, fields ``(N, T, ...)``, world frame.
        truth: recorded states at the same steps, fields ``(N, T, ...)``.
        start: the recorded state ``s_0`` each rollout started from, fields ``(N, ...)``.

    Returns:
        :class:`RolloutErrors` with ``(N, T)`` arrays.

    Raises:
        InvalidInputError: mismatched shapes, NaN, or non-unit quaternions (named).
    """
    predicted, truth = predicted.validated("predicted"), truth.validated("truth")
    start = start.validated("start")
    if predicted.batch_shape != truth.batch_shape or len(truth.batch_shape) != 2:
        raise InvalidInputError(f"predicted and truth must both have batch shape (N, T); got "
                                f"{predicted.batch_shape} and {truth.batch_shape}")
    if start.batch_shape != truth.batch_shape[:1]:
        raise InvalidInputError(f"start must have batch shape {truth.batch_shape[:1]}, got {start.batch_shape}")
    return RolloutErrors(
        pos_sq=np.sum((predicted.pos - truth.pos) ** 2, axis=-1),
        rot_sq=rotation_angle(predicted.quat, truth.quat) ** 2,
        disp_sq=np.sum((truth.pos - start.pos[:, None, :]) ** 2, axis=-1),
        turn_sq=rotation_angle(truth.quat, start.quat[:, None, :]) ** 2,
    )


def concat_rollout_errors(parts: list[RolloutErrors]) -> RolloutErrors:
    """Pool the rollouts of several :class:`RolloutErrors` of equal horizon (e.g. one per scene)."""
    if not parts:
        raise InvalidInputError("concat_rollout_errors needs at least one part")
    horizons = {p.horizon for p in parts}
    if len(horizons) != 1:
        raise InvalidInputError(f"rollout errors of different horizons {sorted(horizons)} cannot be pooled")
    return RolloutErrors(*(np.concatenate([getattr(p, k) for p in parts]) for k in
                           ("pos_sq", "rot_sq", "disp_sq", "turn_sq")))


def horizon_curve(sq: np.ndarray) -> np.ndarray:
    """``RMSE(k)`` for ``k = 1..T`` ``(T,)`` from squared errors ``sq`` ``(N, T)`` (units of sqrt(sq)).

    ``RMSE(k) = sqrt( Σ_n Σ_{t ≤ k} sq[n, t] / (N k) )`` (Fig. 9).
    """
    sq = np.asarray(sq, dtype=np.float64)
    if sq.ndim != 2 or 0 in sq.shape:
        raise InvalidInputError(f"squared errors must have shape (N, T) with N, T >= 1, got {sq.shape}")
    return np.sqrt(np.cumsum(sq.mean(axis=0)) / np.arange(1, sq.shape[1] + 1))


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else float("nan")


def rollout_metrics(errors: RolloutErrors, horizon: int | None = None) -> RolloutMetrics:
    """Table I motion columns at ``horizon`` (default: the full ``T``) and the Fig. 9 curves.

    A relative error is NaN when the tool did not move (or turn) at all in any rollout (zero denominator).

    Raises:
        InvalidInputError: ``horizon`` outside ``1..T``.
    """
    horizon = errors.horizon if horizon is None else int(horizon)
    if not 1 <= horizon <= errors.horizon:
        raise InvalidInputError(f"horizon must lie in 1..{errors.horizon}, got {horizon}")
    pos_curve, rot_curve = horizon_curve(errors.pos_sq), horizon_curve(errors.rot_sq)
    disp = float(horizon_curve(errors.disp_sq)[horizon - 1])
    turn = float(horizon_curve(errors.turn_sq)[horizon - 1])
    pos, rot = float(pos_curve[horizon - 1]), float(rot_curve[horizon - 1])
    return RolloutMetrics(horizon, pos, _ratio(pos, disp), rot, _ratio(rot, turn), pos_curve[:horizon],
                          rot_curve[:horizon], errors.n_rollouts)


def one_step_metrics(predicted: np.ndarray, measured: np.ndarray) -> OneStepMetrics:
    """Mean force and torque error norms of one-step F/T predictions.

    Args:
        predicted, measured: ``(N, 6)`` wrenches ``(fx, fy, fz, tx, ty, tz)``, sensor frame, torque about the
            sensor origin [N, N·m].

    Raises:
        InvalidInputError: shapes differ or are not ``(N, 6)`` with ``N >= 1``, or values are not finite.
    """
    predicted = np.asarray(predicted, dtype=np.float64)
    measured = np.asarray(measured, dtype=np.float64)
    if predicted.shape != measured.shape or predicted.ndim != 2 or predicted.shape[1] != 6 or not len(predicted):
        raise InvalidInputError(f"F/T predictions and measurements must both be (N, 6) with N >= 1; got "
                                f"{predicted.shape} and {measured.shape}")
    if not (np.all(np.isfinite(predicted)) and np.all(np.isfinite(measured))):
        raise InvalidInputError("F/T predictions or measurements contain NaN or Inf")
    diff = predicted - measured
    return OneStepMetrics(float(np.linalg.norm(diff[:, :3], axis=-1).mean()),
                          float(np.linalg.norm(diff[:, 3:], axis=-1).mean()), int(len(diff)))
