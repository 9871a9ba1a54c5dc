"""Object trajectory planning about the instantaneous centre of rotation (ICR) (pushing paper §II-B1, §III).

A planar pose is ``(x, y, θ)`` [m, m, rad] of the object's centre of mass in the world (table) frame. Two poses
are joined by the unique rigid motion that rotates the object by ``Δθ = θ_goal − θ_start`` about a fixed centre
``c`` (the ICR): the centre of mass moves on a circular arc through start and goal, and the object turns
with it. With ``Δθ = 0`` the centre is at infinity and the arc becomes the straight segment (pure
translation, :attr:`ArcMode.TRANSLATION`). ``Δθ`` is taken as given (not wrapped): the caller chooses the branch.

The arc is written in a form that is exact and smooth through ``Δθ → 0``: with the progress ``s ∈ [0, 1]``
(fraction of the rotation done),

    p(s)   = p0 + [sin(sΔθ/2) / sin(Δθ/2)] R((s−1)Δθ/2) (p1 − p0)
    dp/ds  = R((s − ½)Δθ) (p1 − p0) / sinc(Δθ/2π)
    d²p/ds² = Δθ Jz dp/ds,   Jz = [[0, −1], [1, 0]],

which equals ``c + R(sΔθ)(p0 − c)`` with ``(I − R(Δθ)) c = p1 − R(Δθ) p0`` when ``Δθ ≠ 0``.
The timing comes from an angular-velocity profile (§III): constant, trapezoidal (accelerate, cruise,
decelerate) or chirp (a rotation rate that oscillates with rising frequency); ``ω(t) = ṡ(t) Δθ``.
The paper gives no numbers for the trapezoid ramps or the chirp; the defaults of :class:`AngularProfile` are ours.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from scipy.special import fresnel

from contactkit.errors import InvalidInputError

TRANSLATION_TOL = 1e-9
"""``|Δθ|`` [rad] at or below which the motion is reported as pure translation (no finite ICR)."""
MAX_ROTATION = np.pi
"""Largest ``|Δθ|`` [rad] a single ICR arc may turn; larger turns are refused (wrap the goal angle first)."""
TIME_GRID_TOL = 1e-9
"""Relative tolerance for ``duration`` to be a whole number of ``dt`` steps."""


class ArcMode(enum.Enum):
    """Shape of the ICR path of the centre of mass."""

    ROTATION = "rotation"
    """A circular arc about a finite ICR (``Δθ ≠ 0``)."""
    TRANSLATION = "translation"
    """The straight segment (``Δθ = 0``; ICR at infinity)."""


class ProfileKind(enum.Enum):
    """Angular-velocity profile along the arc (§III)."""

    CONSTANT = "constant"
    TRAPEZOIDAL = "trapezoidal"
    CHIRP = "chirp"


@dataclass(frozen=True)
class AngularProfile:
    """Timing of the progress ``s(t)`` along the arc; ``ω(t) = ṡ(t) Δθ`` (§III).

    Attributes:
        kind: which profile.
        ramp_fraction: trapezoid only, acceleration (and deceleration) time as a fraction of the duration, (0, ½].
        chirp_amplitude: chirp only, relative oscillation ``A`` of the rate: ``ω ∝ 1 + A sin ψ(t)``, [0, 1) so the
            rotation never reverses.
        chirp_f0, chirp_f1: chirp only, instantaneous oscillation frequency [Hz] at ``t = 0`` and at the end
            (linear chirp, ``0 ≤ f0 ≤ f1``).
    """

    kind: ProfileKind = ProfileKind.CONSTANT
    ramp_fraction: float = 0.25
    chirp_amplitude: float = 0.5
    chirp_f0: float = 0.05
    chirp_f1: float = 0.5

    def __post_init__(self):
        if not isinstance(self.kind, ProfileKind):
            raise InvalidInputError(f"profile kind must be a ProfileKind, got {self.kind!r}")
        if not (np.isfinite(self.ramp_fraction) and 0.0 < self.ramp_fraction <= 0.5):
            raise InvalidInputError(f"ramp_fraction must lie in (0, 0.5], got {self.ramp_fraction!r}")
        if not (np.isfinite(self.chirp_amplitude) and 0.0 <= self.chirp_amplitude < 1.0):
            raise InvalidInputError(f"chirp_amplitude must lie in [0, 1), got {self.chirp_amplitude!r}")
        if not (np.isfinite(self.chirp_f0) and np.isfinite(self.chirp_f1) and 0.0 <= self.chirp_f0 <= self.chirp_f1):
            raise InvalidInputError(f"chirp frequencies must satisfy 0 <= f0 <= f1 [Hz], got "
                                    f"f0={self.chirp_f0!r}, f1={self.chirp_f1!r}")


@dataclass(frozen=True)
class IcrArc:
    """The unique ICR motion from ``start`` to ``goal``.

    Attributes:
        start, goal: ``(3,)`` poses ``(x [m], y [m], θ [rad])``, world frame.
        delta_theta: ``Δθ`` [rad]. mode: rotation or translation.
        centre: ``(2,)`` ICR [m, world] in rotation mode; ``None`` in translation mode.
        radius: distance of the centre of mass from the ICR [m]; ``inf`` in translation mode.
        length: path length of the centre of mass [m] (``radius |Δθ|``, or the chord).
    """

    start: np.ndarray
    goal: np.ndarray
    delta_theta: float
    mode: ArcMode
    centre: np.ndarray | None
    radius: float
    length: float


@dataclass(frozen=True)
class PlanarWorkspace:
    """Axis-aligned box of admissible object positions [m, world] and the largest single turn [rad]."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float
    max_rotation: float = MAX_ROTATION

    def __post_init__(self):
        vals = (self.x_min, self.x_max, self.y_min, self.y_max, self.max_rotation)
        if not np.isfinite(vals).all() or self.x_min >= self.x_max or self.y_min >= self.y_max \
                or not 0.0 < self.max_rotation <= MAX_ROTATION:
            raise InvalidInputError(f"workspace needs finite x_min < x_max, y_min < y_max and "
                                    f"0 < max_rotation <= pi, got {vals!r}")


def _pose(p, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (3,) or not np.isfinite(p).all():
        raise InvalidInputError(f"{name} pose must be 3 finite numbers (x [m], y [m], theta [rad]), got {p!r}")
    return p


def _rot(angle) -> np.ndarray:
    """``(..., 2, 2)`` rotation matrices of ``angle`` [rad]."""
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def icr_arc(start, goal, workspace: PlanarWorkspace | None = None) -> IcrArc:
    """The ICR arc from ``start`` to ``goal`` (§II-B1).

    Args:
        start, goal: ``(3,)`` poses ``(x [m], y [m], θ [rad])`` of the centre of mass, world frame.
        workspace: if given, start and goal must lie in it and ``|Δθ| ≤ workspace.max_rotation``.

    Returns:
        :class:`IcrArc`; the centre solves ``(I − R(Δθ)) c = p1 − R(Δθ) p0``.

    Raises:
        InvalidInputError: non-finite poses, ``|Δθ| > MAX_ROTATION``, or a pose outside ``workspace``.
    """
    p0, p1 = _pose(start, "start"), _pose(goal, "goal")
    dth = float(p1[2] - p0[2])
    limit = MAX_ROTATION if workspace is None else workspace.max_rotation
    if abs(dth) > limit:
        raise InvalidInputError(f"goal turns the object by {dth!r} rad, more than the {limit!r} rad one ICR arc "
                                f"may turn (wrap the goal angle or split the motion)")
    if workspace is not None:
        for name, p in (("start", p0), ("goal", p1)):
            _check_inside(workspace, p[None, :2], name)
    chord = float(np.hypot(*(p1[:2] - p0[:2])))
    if abs(dth) <= TRANSLATION_TOL:
        return IcrArc(p0, p1, dth, ArcMode.TRANSLATION, None, float("inf"), chord)
    R = _rot(dth)
    centre = np.linalg.solve(np.eye(2) - R, p1[:2] - R @ p0[:2])
    radius = float(np.hypot(*(p0[:2] - centre)))
    return IcrArc(p0, p1, dth, ArcMode.ROTATION, centre, radius, radius * abs(dth))


def _check_inside(ws: PlanarWorkspace, xy: np.ndarray, what: str) -> None:
    out = (xy[:, 0] < ws.x_min) | (xy[:, 0] > ws.x_max) | (xy[:, 1] < ws.y_min) | (xy[:, 1] > ws.y_max)
    if out.any():
        bad = xy[np.argmax(out)]
        raise InvalidInputError(f"{what} position {bad.tolist()!r} [m] lies outside the workspace "
                                f"x in [{ws.x_min}, {ws.x_max}], y in [{ws.y_min}, {ws.y_max}]")


def _chirp_integral(profile: AngularProfile, t: np.ndarray, duration: float) -> np.ndarray:
    """``F(t) = ∫₀ᵗ sin ψ(u) du`` with ``ψ(u) = 2π (f0 u + ½ k u²)``, ``k = (f1 − f0)/T`` (Fresnel integrals)."""
    f0, k = profile.chirp_f0, (profile.chirp_f1 - profile.chirp_f0) / duration
    if k == 0.0:
        return t.copy() * 0.0 if f0 == 0.0 else (1.0 - np.cos(2 * np.pi * f0 * t)) / (2 * np.pi * f0)
    beta = np.pi * f0 * f0 / k
    z0, z = np.sqrt(2 * k) * f0 / k, np.sqrt(2 * k) * (t + f0 / k)
    s0, c0 = fresnel(z0)
    s1, c1 = fresnel(z)
    return (np.cos(beta) * (s1 - s0) - np.sin(beta) * (c1 - c0)) / np.sqrt(2 * k)


def profile_progress(profile: AngularProfile, t, duration: float):
    """Progress along the arc and its derivatives at times ``t`` (§III).

    Args:
        profile: the angular-velocity profile. t: ``(T,)`` times [s], clipped to ``[0, duration]``.
        duration: total time [s] > 0.

    Returns:
        ``(s, ṡ [1/s], s̈ [1/s²])``, each ``(T,)``, with ``s(0) = 0``, ``s(duration) = 1`` and ``ṡ ≥ 0``. Where
        ``s̈`` jumps (trapezoid corners) it is the right limit, the motion from ``t`` on: at the end of a
        trapezoid the object is at rest and stays there (``s̈ = 0``).
    """
    if not (np.isfinite(duration) and duration > 0):
        raise InvalidInputError(f"duration must be finite and > 0 [s], got {duration!r}")
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, duration)
    T = float(duration)
    if profile.kind is ProfileKind.CONSTANT:
        return t / T, np.full_like(t, 1.0 / T), np.zeros_like(t)
    if profile.kind is ProfileKind.TRAPEZOIDAL:
        ta = profile.ramp_fraction * T
        vmax = 1.0 / (T - ta)
        a = vmax / ta
        rise, fall = t < ta, t >= T - ta
        cruise = 0.5 * a * ta**2 + vmax * (t - ta)
        s = np.where(rise, 0.5 * a * t**2, np.where(fall, 1.0 - 0.5 * a * (T - t) ** 2, cruise))
        sd = np.where(rise, a * t, np.where(fall, a * (T - t), vmax))
        sdd = np.where(rise, a, np.where(fall & (t < T), -a, 0.0))
        return s, sd, sdd
    A, f0, k = profile.chirp_amplitude, profile.chirp_f0, (profile.chirp_f1 - profile.chirp_f0) / T
    norm = T + A * float(_chirp_integral(profile, np.array(T), T))
    psi = 2 * np.pi * (f0 * t + 0.5 * k * t**2)
    s = (t + A * _chirp_integral(profile, t, T)) / norm
    return s, (1.0 + A * np.sin(psi)) / norm, A * np.cos(psi) * 2 * np.pi * (f0 + k * t) / norm


def arc_point(arc: IcrArc, s):
    """Centre-of-mass position and its first two ``s``-derivatives on the arc.

    Args:
        arc: the ICR arc. s: ``(T,)`` progress in [0, 1].

    Returns:
        ``(p (T, 2) [m], dp/ds (T, 2) [m], d²p/ds² (T, 2) [m])``, world frame (closed forms in the module doc).
    """
    s = np.asarray(s, dtype=np.float64)
    dth, p0, d = arc.delta_theta, arc.start[:2], arc.goal[:2] - arc.start[:2]
    ratio = s * np.sinc(s * dth / (2 * np.pi)) / np.sinc(dth / (2 * np.pi))
    p = p0 + ratio[:, None] * np.einsum("tij,j->ti", _rot((s - 1.0) * dth / 2), d)
    dp = np.einsum("tij,j->ti", _rot((s - 0.5) * dth), d) / np.sinc(dth / (2 * np.pi))
    ddp = dth * np.stack([-dp[:, 1], dp[:, 0]], -1)
    return p, dp, ddp


def _time_grid(duration: float, dt: float) -> np.ndarray:
    if not (np.isfinite(dt) and dt > 0 and np.isfinite(duration) and duration > 0):
        raise InvalidInputError(f"duration and dt must be finite and > 0 [s], got duration={duration!r}, dt={dt!r}")
    n = int(round(duration / dt))
    if n < 1 or abs(n * dt - duration) > TIME_GRID_TOL * duration:
        raise InvalidInputError(f"duration {duration!r} s must be a whole number (>= 1) of dt={dt!r} s steps")
    return np.arange(n + 1) * dt


def icr_trajectory(start, goal, profile: AngularProfile, duration: float, dt: float,
                   workspace: PlanarWorkspace | None = None):
    """Poses and planar twists along the ICR arc, sampled at ``t = 0, dt, …, duration`` (§II-B1, §III).

    Args:
        start, goal: ``(3,)`` poses ``(x [m], y [m], θ [rad])``, world frame.
        profile: angular-velocity profile. duration: [s], a whole number of ``dt`` [s] steps.
        workspace: if given, every sampled position must lie inside it (and start, goal, ``|Δθ|`` as in
            :func:`icr_arc`).

    Returns:
        ``(poses (T, 3), twists (T, 3))`` with ``T = duration/dt + 1``; the twist is ``(ẋ, ẏ [m/s], ω [rad/s])``
        of the centre of mass in the world frame. ``poses[0] = start``, ``poses[-1] = goal``.

    Raises:
        InvalidInputError: bad poses or times, or a pose outside ``workspace``.
    """
    arc = icr_arc(start, goal, workspace)
    s, sd, _ = profile_progress(profile, _time_grid(duration, dt), duration)
    p, dp, _ = arc_point(arc, s)
    if workspace is not None:
        _check_inside(workspace, p, "trajectory")
    theta = arc.start[2] + s * arc.delta_theta
    poses = np.concatenate([p, theta[:, None]], -1)
    twists = np.concatenate([dp * sd[:, None], (sd * arc.delta_theta)[:, None]], -1)
    return poses, twists


def icr_acceleration(start, goal, profile: AngularProfile, duration: float, dt: float):
    """Planar accelerations ``(ẍ, ÿ [m/s²], ω̇ [rad/s²])`` of the centre of mass, world frame, ``(T, 3)``,
    on the same time grid as :func:`icr_trajectory` (``d²p/dt² = d²p/ds² ṡ² + dp/ds s̈``)."""
    arc = icr_arc(start, goal)
    s, sd, sdd = profile_progress(profile, _time_grid(duration, dt), duration)
    _, dp, ddp = arc_point(arc, s)
    acc = ddp * sd[:, None] ** 2 + dp * sdd[:, None]
    return np.concatenate([acc, (sdd * arc.delta_theta)[:, None]], -1)


def world_to_body(poses, vectors) -> np.ndarray:
    """Rotate planar twists or accelerations ``(T, 3)`` from the world frame into the object's body frame at
    ``poses`` ``(T, 3)`` (the angular component is unchanged). Body-frame acceleration here is the rotated
    world acceleration; eq 11's Coriolis term is added by the caller."""
    poses, vectors = np.asarray(poses, dtype=np.float64), np.asarray(vectors, dtype=np.float64)
    lin = np.einsum("tji,tj->ti", _rot(poses[:, 2]), vectors[:, :2])
    return np.concatenate([lin, vectors[:, 2:3]], -1)


def body_point_twist(poses, twists_w, point_b) -> np.ndarray:
    """Planar twist ``(ẋ, ẏ [m/s], ω [rad/s])``, world frame, of the point fixed at ``point_b`` ``(2,)`` [m, body
    frame] of an object moving with ``poses``, ``twists_w`` ``(T, 3)``: ``v_p = v + ω Jz R(θ) point_b`` — e.g. the
    nominal end-effector velocity that keeps a pusher on its planned contact (Algorithm 1's ``v_e^H``, open loop)."""
    poses, twists_w = np.asarray(poses, dtype=np.float64), np.asarray(twists_w, dtype=np.float64)
    point_b = np.asarray(point_b, dtype=np.float64)
    if poses.shape != twists_w.shape or poses.ndim != 2 or poses.shape[1] != 3 or point_b.shape != (2,):
        raise InvalidInputError(f"poses and twists must be (T, 3) and point (2,), got {poses.shape}, "
                                f"{twists_w.shape}, {point_b.shape}")
    r = np.einsum("tij,j->ti", _rot(poses[:, 2]), point_b)
    v = twists_w[:, :2] + twists_w[:, 2:3] * np.stack([-r[:, 1], r[:, 0]], -1)
    return np.concatenate([v, twists_w[:, 2:3]], -1)
