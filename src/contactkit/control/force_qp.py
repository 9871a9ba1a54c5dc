"""Force-minimising impedance commands from a linear F/T model (LML paper, eq 19).

Given the learned model ``ŷ = G w`` (eq 2) with the features of eq 18,
``w = vcat(r, vec(R), r_des, φ, 1)``, the predicted wrench is affine in the command
``u = (r_des, φ)``: ``ŷ = G_u u + c`` with ``G_u = G[:, 12:18]`` and
``c = G[:, :12] vcat(r, vec(R)) + G[:, 18]``. Eq 19 chooses the command

    minimise_u  ‖S ŷ‖² + λ ‖r_des − r_ref‖² + μ ‖φ‖²
    subject to  ‖r_des − r‖∞ ≤ Δr,  ‖φ‖∞ ≤ Δφ,

with ``S = diag(1, 1, 0, 1, 1, 1)`` (every force and torque except the insertion force), ``Δr = 1 cm``
and ``Δφ = 3°``. In the paper ``r_ref = r``; here ``r_ref = r + offset`` with ``offset = 0`` by
default, so that a task may keep a nominal insertion push inside the regulariser (S leaves the
insertion axis free, so eq 19 alone never asks the plug to move along it).

Two solvers: :func:`solve_force_qp` (OSQP, warm started from the previous solution) and
:func:`solve_force_clip`, the paper's cheaper variant (solve without the bounds in closed form,
then clip the command to them). Both are pure functions of ``(G, w, config)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import osqp
from scipy import sparse

from contactkit.errors import ContactkitError, InvalidInputError

POSE_FEATURE_DIM = 3 + 9 + 3 + 3 + 1
"""n_w of the LML paper's eq 18 features (position, vec(R), commanded position, axis-angle command, bias);
equal to :data:`contactkit.models.linear.features.POSE_FEATURE_DIM` (a test checks it)."""

STATE_SLICE = slice(0, 12)
"""Entries of the eq-18 feature vector that describe the tool pose: ``r`` (3) and ``vec(R)`` (9)."""
COMMAND_SLICE = slice(12, 18)
"""Entries of the eq-18 feature vector that hold the command ``u = (r_des, φ)``."""
BIAS_INDEX = 18
"""Index of the constant 1 in the eq-18 feature vector."""
N_U = 6
"""Length of the command ``u = (r_des [m], φ [rad])``."""

PAPER_SELECTION = (1.0, 1.0, 0.0, 1.0, 1.0, 1.0)
"""Diagonal of eq 19's ``S``: penalise fx, fy, tx, ty, tz, not the insertion force fz."""
PAPER_MAX_POS_DEV = 0.01
"""Eq 19's bound on ``‖r − r_des‖∞`` [m]."""
PAPER_MAX_ROT = float(np.deg2rad(3.0))
"""Eq 19's bound on ``‖φ‖∞`` [rad]."""

OSQP_EPS = 1e-9
"""Absolute and relative tolerance of OSQP's residuals (the problem is 6-D: solve it tightly)."""
OSQP_MAX_ITER = 10_000
"""Iteration limit of OSQP."""
ACTIVE_TOL = 1e-9
"""A bound counts as active when the command lies within this distance of it [m or rad]."""


@dataclass(frozen=True)
class ForceQPConfig:
    """Weights and bounds of eq 19.

    Attributes:
        selection: ``(6,)`` diagonal of ``S`` (dimensionless weights on fx, fy, fz, tx, ty, tz).
        lam: ``λ`` [N²/m² when S weights forces], weight on ``‖r_des − r_ref‖²``; a scalar as in the
            paper or ``(3,)`` per world axis.
        mu: ``μ`` [N²/rad²], weight on ``‖φ‖²``.
        max_pos_dev: ``Δr`` [m], bound on ``‖r_des − r‖∞``.
        max_rot: ``Δφ`` [rad], bound on ``‖φ‖∞``.
    """

    selection: tuple[float, ...] = PAPER_SELECTION
    lam: float | tuple[float, float, float] = 1e4
    mu: float = 1.0
    max_pos_dev: float = PAPER_MAX_POS_DEV
    max_rot: float = PAPER_MAX_ROT

    def __post_init__(self):
        sel = np.asarray(self.selection, dtype=np.float64)
        lam = np.broadcast_to(np.asarray(self.lam, dtype=np.float64), (3,))
        if sel.shape != (6,) or not np.isfinite(sel).all() or (sel < 0).any():
            raise InvalidInputError(f"selection must be 6 finite weights >= 0, got {self.selection!r}")
        if not np.isfinite(lam).all() or (lam <= 0).any() or not (np.isfinite(self.mu) and self.mu > 0):
            raise InvalidInputError(f"lam and mu must be finite and > 0, got lam={self.lam!r}, mu={self.mu!r}")
        for name in ("max_pos_dev", "max_rot"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise InvalidInputError(f"{name} must be finite and > 0, got {v!r}")

    @property
    def weights(self) -> np.ndarray:
        """``(6,)`` diagonal ``Λ = diag(λ, λ, λ, μ, μ, μ)`` of the command regulariser."""
        return np.concatenate([np.broadcast_to(np.asarray(self.lam, dtype=np.float64), (3,)),
                               np.full(3, float(self.mu))])


@dataclass(frozen=True)
class ForceQPSolution:
    """One solved command.

    Attributes:
        r_des: ``(3,)`` commanded position [m, world]. phi: ``(3,)`` commanded axis-angle [rad, tool frame].
        u: ``(6,)`` ``(r_des, φ)``. dual: ``(6,)`` multipliers of the bounds ``lo ≤ u ≤ hi``
            (positive at an upper bound, negative at a lower one; zeros for the clip variant).
        y_pred: ``(6,)`` predicted F/T reading ``G w(u)`` [N, N·m, sensor frame]. cost: objective of eq 19.
        active: ``(6,)`` which bounds hold with equality. status: solver status text.
        iterations: solver iterations (0 for the closed form).
    """

    r_des: np.ndarray
    phi: np.ndarray
    u: np.ndarray
    dual: np.ndarray
    y_pred: np.ndarray
    cost: float
    active: np.ndarray
    status: str
    iterations: int


def qp_terms(G, w, config: ForceQPConfig, offset=None):
    """Eq 19 as ``min ½ uᵀ H u + gᵀ u`` subject to ``lo ≤ u ≤ hi``.

    Args:
        G: ``(6, 19)`` model ``G̃`` [wrench per feature unit] (eq 2, features of eq 18).
        w: ``(19,)`` current features; only the pose entries ``r``, ``vec(R)`` (and the bias) are read.
        config: weights and bounds. offset: ``(3,)`` [m], ``r_ref = r + offset`` (default 0: eq 19).

    Returns:
        ``(H (6, 6) SPD, g (6,), lo (6,), hi (6,), y0 (6,))`` with ``H = 2 (G_uᵀ SᵀS G_u + Λ)``,
        ``g = 2 (G_uᵀ SᵀS c − Λ u_ref)``, ``u_ref = (r + offset, 0)`` and ``y0 = c`` the prediction at ``u = 0``.
    """
    G = np.asarray(G, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if G.shape != (6, POSE_FEATURE_DIM) or w.shape != (POSE_FEATURE_DIM,):
        raise InvalidInputError(f"force QP expects G (6, {POSE_FEATURE_DIM}) and w ({POSE_FEATURE_DIM},), "
                                f"got {G.shape} and {w.shape}")
    if not (np.isfinite(G).all() and np.isfinite(w).all()):
        raise InvalidInputError("force QP: G or w contains NaN or Inf")
    off = np.zeros(3) if offset is None else np.asarray(offset, dtype=np.float64)
    if off.shape != (3,) or not np.isfinite(off).all():
        raise InvalidInputError(f"offset must be 3 finite numbers [m], got {offset!r}")
    r = w[0:3]
    G_u = G[:, COMMAND_SLICE]
    y0 = G[:, STATE_SLICE] @ w[STATE_SLICE] + G[:, BIAS_INDEX] * w[BIAS_INDEX]
    s2 = np.asarray(config.selection, dtype=np.float64) ** 2
    lam = config.weights
    u_ref = np.concatenate([r + off, np.zeros(3)])
    H = 2.0 * (G_u.T @ (s2[:, None] * G_u) + np.diag(lam))
    g = 2.0 * (G_u.T @ (s2 * y0) - lam * u_ref)
    bound = np.concatenate([np.full(3, config.max_pos_dev), np.full(3, config.max_rot)])
    centre = np.concatenate([r, np.zeros(3)])
    return 0.5 * (H + H.T), g, centre - bound, centre + bound, y0


def _solution(G, y0, H, g, u, dual, lo, hi, status: str, iterations: int) -> ForceQPSolution:
    y = y0 + np.asarray(G, dtype=np.float64)[:, COMMAND_SLICE] @ u
    active = (u <= lo + ACTIVE_TOL) | (u >= hi - ACTIVE_TOL)
    cost = float(0.5 * u @ H @ u + g @ u)
    return ForceQPSolution(u[:3].copy(), u[3:].copy(), u, dual, y, cost, active, status, iterations)


def solve_force_qp(
    G, w, config: ForceQPConfig | None = None, *, offset=None, warm: ForceQPSolution | None = None
) -> ForceQPSolution:
    """Eq 19 solved with OSQP (tolerance ``OSQP_EPS``), warm started from ``warm`` (e.g. the previous control step).

    Args:
        G: ``(6, 19)`` linear F/T model (eq 2). w: ``(19,)`` current eq-18 features.
        config: weights and bounds (default: the paper's S and bounds). offset: see :func:`qp_terms`.
        warm: a previous solution whose ``u`` and ``dual`` seed OSQP.

    Returns:
        :class:`ForceQPSolution` (``cost`` omits the constant ``‖S c‖² + λ‖u_ref‖²``).

    Raises:
        InvalidInputError: bad shapes or non-finite input. ContactkitError: OSQP did not solve the problem.
    """
    config = config or ForceQPConfig()
    H, g, lo, hi, y0 = qp_terms(G, w, config, offset)
    solver = osqp.OSQP()
    solver.setup(sparse.csc_matrix(np.triu(H)), g, sparse.identity(N_U, format="csc"), lo, hi, verbose=False,
                 eps_abs=OSQP_EPS, eps_rel=OSQP_EPS, max_iter=OSQP_MAX_ITER, polishing=False, warm_starting=True)
    if warm is not None:
        solver.warm_start(x=warm.u, y=warm.dual)
    res = solver.solve(raise_error=False)
    status = str(res.info.status)
    if res.info.status_val != osqp.SolverStatus.OSQP_SOLVED or not np.isfinite(res.x).all():
        raise ContactkitError(f"force QP (eq 19): OSQP returned status {status!r}")
    u = np.clip(res.x, lo, hi)
    return _solution(G, y0, H, g, u, np.asarray(res.y, dtype=np.float64), lo, hi, status, int(res.info.iter))


def solve_force_clip(G, w, config: ForceQPConfig | None = None, *, offset=None) -> ForceQPSolution:
    """The paper's cheap variant of eq 19: the unconstrained minimiser ``u* = −H⁻¹ g``, clipped to the bounds.

    Equals :func:`solve_force_qp` whenever ``u*`` lies inside the bounds; otherwise it is feasible but
    may be sub-optimal. Arguments and return as :func:`solve_force_qp` (``dual`` is zero).
    """
    config = config or ForceQPConfig()
    H, g, lo, hi, y0 = qp_terms(G, w, config, offset)
    u = np.clip(np.linalg.solve(H, -g), lo, hi)
    return _solution(G, y0, H, g, u, np.zeros(N_U), lo, hi, "clipped", 0)
