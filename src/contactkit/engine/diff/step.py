"""Differentiable step of an impedance-controlled tool against a static environment (placement paper §IV, eqs 1, 5–8).

The end-effector and the grasped object form one floating rigid body (paper §IV-A) with twist ``ξ = [v; ω]`` (tool
origin velocity and angular velocity, world frame) and a constant spatial inertia ``M`` about the tool origin over a
step (§VI-B: "we approximate the operational-space inertia as a constant matrix"; Coriolis terms are dropped). The
action ``u`` is the impedance reference pose; the controller's spring ``K`` and damper ``D`` are integrated
implicitly (linearised about the step start), so one step ``Δ`` of the collision-free forward dynamics (eq 5) reads

    (M + Δ D + Δ² K) ξ⁺ = M ξ + Δ (K e(u, q) + g) + Jᵀ λ,        q⁺ = (p + Δ v⁺, exp(Δ ω⁺) ⊗ quat),

with ``e`` the pose error, ``g`` the gravity wrench left after the controller's weight compensation, and the contact
impulses ``λ`` from the box-friction LCP (:mod:`.lcp_grad`) on ``u = J ξ⁺ + bias`` (the engine's velocity-level
Signorini condition with a speculative bias ``d/h`` for open gaps, ``h`` the phase's length, and a Baumgarte term
``β d/Δ`` that pushes a penetration ``d < 0`` out, and a small regularisation of ``W``).

Why the Baumgarte term matters here: the estimators predict each reading from the *measured* state (eq 9), which may
penetrate the model's geometry when ``θ`` is wrong. A purely velocity-level contact would then read the same force
whatever the penetration, leaving ``∂y/∂θ = 0``; with ``β`` the predicted force grows with the penetration, and the
residual of eq 10 is smallest where the model's surfaces just touch the measured pose. Open gaps give gradients only
through the time of impact (within one step's travel), beyond which the residual is flat in ``θ`` (§V-B's reason
for a belief over several estimates).

Collision within a step (§IV-C): when a contact that is open at ``q_t`` would close during the step under the free
motion, the step is split at its time of impact ``toi = d / (Δ · clamp(-u_n, ε))`` (``u_n`` the free normal
velocity): eq 5 runs for ``toi·Δ`` and again from ``q_{t+toi}`` for ``(1 - toi)·Δ`` with the contact features
re-evaluated there. ``∂toi/∂θ`` is eq 8: ``∂d/∂θ = n·(∂p_T/∂θ - ∂p_E/∂θ)`` over the clamped approach speed.

The predicted F/T reading ``y_{t+1}`` is the mean contact wrench over the step, eq 7: the impulses of both phases
``Σ Jᵀλ / Δ``, with the torque about the sensor origin, expressed in the sensor frame (the MuJoCo world's reading).
Everything is a torch function of the state, the action and ``θ``; only the choice of feature pairs and of the LCP's
active set is discrete (:mod:`.query`, :mod:`.lcp_grad`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from contactkit.engine.diff.features import (
    FeatureIndex,
    ParamPiece,
    contact_features,
    face_planes_torch,
    world_tool_vertices,
)
from contactkit.engine.diff.lcp_grad import active_set_solve, solve_batch
from contactkit.engine.diff.query import query_batch
from contactkit.errors import InvalidInputError
from contactkit.rotations.torch import quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotate_by, skew


@dataclass(frozen=True, eq=False)
class DiffScene:
    """Static description the differentiable step reads (tool frame = end-effector frame).

    Attributes:
        tool_pieces: convex pieces of the grasped object, tool frame, affine in ``θ``.
        env_pieces: convex pieces of the environment, world frame, affine in ``θ``.
        env_friction: ``(E,)`` friction coefficient of contacts with each environment piece.
        mass: [kg]. com: ``(3,)`` centre of mass, tool frame [m]. inertia: ``(3, 3)`` about the COM, tool axes [kg·m²].
        armature: rotational inertia added about every axis (the wrist) [kg·m²].
        stiffness: ``(6,)`` impedance stiffness (translation [N/m], rotation [N·m/rad]), world axes.
        damping: ``(6,)`` impedance damping [N·s/m, N·m·s/rad].
        sensor_pos: ``(3,)`` F/T sensor origin, tool frame [m]. sensor_quat: ``(4,)`` sensor orientation in the tool.
        gravity: [m/s²] along -z acting at the COM (0 disables gravity).
        weight_compensated: the controller adds the weight as a force at the tool origin.
    """

    tool_pieces: tuple[ParamPiece, ...]
    env_pieces: tuple[ParamPiece, ...]
    env_friction: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    armature: float
    stiffness: np.ndarray
    damping: np.ndarray
    sensor_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    sensor_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    gravity: float = 9.81
    weight_compensated: bool = True

    def __post_init__(self) -> None:
        pieces = (*self.tool_pieces, *self.env_pieces)
        if not self.tool_pieces or not self.env_pieces:
            raise InvalidInputError("a DiffScene needs at least one tool piece and one environment piece")
        if len({p.n_params for p in pieces}) != 1:
            raise InvalidInputError(f"all pieces must share one θ size, got {[p.n_params for p in pieces]}")
        if len(self.env_friction) != len(self.env_pieces):
            raise InvalidInputError(f"env_friction needs {len(self.env_pieces)} values, got {len(self.env_friction)}")
        if not self.mass > 0:
            raise InvalidInputError(f"mass must be > 0 kg, got {self.mass}")

    @property
    def n_params(self) -> int:
        """Size ``P`` of the geometric parameter ``θ``."""
        return self.tool_pieces[0].n_params


@dataclass(frozen=True)
class StepConfig:
    """Settings of :func:`diff_step`.

    Attributes:
        dt: step ``Δ`` [s] (the control period).
        margin: contact margin [m]: feature pairs with a gap up to it, plus the farthest a tool point may travel in
            the step (the larger of its current and free-motion speeds times ``dt``), enter the LCP.
        erp: Baumgarte factor ``β``: the share of a penetration pushed out per step.
        cfm: regularisation of ``W`` relative to its largest diagonal entry: a contact compliance that makes the
            redundant impulses of coplanar contacts unique (1e-2 moves a tool by ~20 µm under 3 N per step).
        toi_min: a time of impact below this fraction of the step does not split it.
        approach_eps: ``ε`` of eq 8 [m/s]: the approach speed is clamped to at least this.
        split_at_impact: split the step at the time of impact (§IV-C); otherwise the speculative bias alone.
    """

    dt: float = 0.05
    margin: float = 1e-3
    erp: float = 0.2
    cfm: float = 1e-2
    toi_min: float = 1e-3
    approach_eps: float = 1e-4
    split_at_impact: bool = True


@dataclass(frozen=True)
class StepOutput:
    """Result of :func:`diff_step` for ``B`` problems (torch, float64).

    Attributes:
        pos, quat, lin_vel, ang_vel: the state after the step (``(B, 3)``, ``(B, 4)``, ``(B, 3)``, ``(B, 3)``).
        wrench: ``(B, 6)`` predicted F/T reading, sensor frame [N, N·m] (mean contact wrench, eq 7).
        toi: ``(B,)`` time of impact as a fraction of the step (1 where the step was not split).
        n_contacts: ``(B,)`` feature pairs in the margin (numpy). lcp_ok: ``(B,)`` the LCP checks passed (numpy).
        structure: ``(B,)`` object array of ``bytes``: the discrete choices the step made for each problem (the
            feature pairs, whether the step was split, each phase's LCP active set). The step is a smooth function of
            its inputs wherever this stays the same (:mod:`.gradcheck` compares derivatives within one structure).
    """

    pos: torch.Tensor
    quat: torch.Tensor
    lin_vel: torch.Tensor
    ang_vel: torch.Tensor
    wrench: torch.Tensor
    toi: torch.Tensor
    n_contacts: np.ndarray
    lcp_ok: np.ndarray
    structure: np.ndarray


def structure_signature(index: FeatureIndex, split: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per problem, ``bytes`` of its feature pairs (masked slots only), the split flag and both phases' active sets.

    Args:
        index: the step's feature pairs ``(B, K)``. split: ``(B,)`` bool. first, second: ``(B, 3K)`` row statuses of
            the phases (``first`` is ignored where ``split`` is False).
    """
    fields = [np.asarray(getattr(index, k)).reshape(index.mask.shape[0], index.mask.shape[1], -1)
              for k in index.__dataclass_fields__ if k != "mask"]
    table = np.concatenate([f.astype(np.int64) for f in fields], axis=-1)
    rows = np.repeat(index.mask, 3, axis=1)
    out = np.empty(len(split), dtype=object)
    for i in range(len(split)):
        parts = [table[i][index.mask[i]].tobytes(), bytes([int(split[i])]),
                 second[i][rows[i]].astype(np.int8).tobytes()]
        if split[i]:
            parts.append(first[i][rows[i]].astype(np.int8).tobytes())
        out[i] = b"|".join(parts)
    return out


def contact_frames_torch(normals: torch.Tensor) -> torch.Tensor:
    """Frames ``(B, K, 3, 3)`` rows ``[n; t1; t2]`` of :func:`contactkit.collision.contact_frames` (Duff basis)."""
    nx, ny, nz = normals.unbind(-1)
    sign = torch.where(nz >= 0.0, 1.0, -1.0).to(normals.dtype)
    a = -1.0 / (sign + nz)
    bxy = nx * ny * a
    t1 = torch.stack([1.0 + sign * nx * nx * a, sign * bxy, -sign * nx], dim=-1)
    return torch.stack([normals, t1, torch.linalg.cross(normals, t1)], dim=-2)


def spatial_inertia(scene: DiffScene, rot: torch.Tensor) -> torch.Tensor:
    """Inertia ``(B, 6, 6)`` of the tool about its origin for the twist ``[v; ω]`` (world): ``[[mI, -mS(c)], [mS(c),
    I_c - m S(c)²]]``, ``c = R·com``, ``I_c = R I Rᵀ + armature·I``."""
    m = scene.mass
    c = rot @ torch.as_tensor(scene.com, dtype=rot.dtype)
    s = skew(c)
    eye = torch.eye(3, dtype=rot.dtype).expand_as(rot)
    inertia = rot @ torch.as_tensor(scene.inertia, dtype=rot.dtype) @ rot.transpose(-1, -2) + scene.armature * eye
    top = torch.cat([m * eye, -m * s], dim=-1)
    return torch.cat([top, torch.cat([m * s, inertia - m * s @ s], dim=-1)], dim=-2)


def time_of_impact(gaps: torch.Tensor, approach: torch.Tensor, mask: torch.Tensor, dt: float,
                   eps: float) -> torch.Tensor:
    """Earliest time of impact ``(B,)`` as a fraction of the step (``inf`` if none): ``d / (Δ · clamp(-u_n, ε))``
    over the open contacts (``gaps (B, K)`` [m] > 0, ``approach (B, K)`` = ``-u_n`` [m/s]); eq 8 is its gradient."""
    toi = gaps / (dt * approach.clamp_min(eps))
    toi = torch.where(mask & (gaps > 0.0), toi, torch.full_like(toi, float("inf")))
    return toi.min(dim=1).values if toi.shape[1] else toi.new_full((toi.shape[0],), float("inf"))


def concatenated_loops(pieces: tuple[ParamPiece, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Face loops ``(F, L)`` of concatenated pieces in global vertex numbering (padded) and their lengths ``(F,)``."""
    width = max(p.loops.shape[1] for p in pieces)
    loops, lengths, v0 = [], [], 0
    for p in pieces:
        pad = np.repeat(p.loops[:, -1:], width - p.loops.shape[1], axis=1)
        loops.append(np.concatenate([p.loops, pad], axis=1) + v0)
        lengths.append(p.loop_len)
        v0 += len(p.base)
    return np.concatenate(loops), np.concatenate(lengths)


def _planes(pieces: tuple[ParamPiece, ...], verts: torch.Tensor) -> torch.Tensor:
    return face_planes_torch(verts, *concatenated_loops(pieces))


@dataclass(frozen=True)
class _Geometry:
    """One batch's θ-dependent geometry and feature pairs (internal)."""

    index: FeatureIndex
    tool_local: torch.Tensor
    tool_planes: torch.Tensor
    env_verts: torch.Tensor
    env_planes: torch.Tensor
    mu: torch.Tensor

    def take(self, rows: np.ndarray) -> _Geometry:
        fields = {k: getattr(self.index, k)[rows] for k in self.index.__dataclass_fields__}
        return _Geometry(FeatureIndex(**fields), self.tool_local[rows], self.tool_planes[rows], self.env_verts[rows],
                         self.env_planes[rows], self.mu[rows])


def world_planes(planes: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
    """Tool-frame face planes ``(B, F, 4)`` rows ``(m, o)`` placed at the pose: ``m_w = R m``, ``o_w = o + m_w·p``."""
    m = planes[..., :3] @ quat_to_mat(quat).transpose(-1, -2)
    return torch.cat([m, (planes[..., 3] + (m * pos[:, None]).sum(-1))[..., None]], dim=-1)


def _kinematics(scene: DiffScene, geo: _Geometry, pos: torch.Tensor, quat: torch.Tensor):
    """Contact points, normals, gaps and the contact-frame Jacobian ``(B, 3K, 6)`` at one pose."""
    tool_w = world_tool_vertices(geo.tool_local, pos, quat)
    points, normals, gaps = contact_features(geo.index, tool_w, world_planes(geo.tool_planes, pos, quat),
                                             geo.env_verts, geo.env_planes)
    frames = contact_frames_torch(normals)
    n_batch, k = gaps.shape
    eye = torch.eye(3, dtype=pos.dtype).expand(n_batch, k, 3, 3)
    point_jac = torch.cat([eye, -skew(points - pos[:, None])], dim=-1)
    return points, frames, gaps, (frames @ point_jac).reshape(n_batch, 3 * k, 6)


def _free_motion(scene: DiffScene, pos, quat, xi, target_pos, target_quat, dt: torch.Tensor):
    """``(M̃⁻¹ (B, 6, 6), ξ_free (B, 6))`` of the implicit impedance step of length ``dt (B,)``."""
    rot = quat_to_mat(quat)
    inertia = spatial_inertia(scene, rot)
    h = dt[:, None, None]
    stiff = torch.diag(torch.as_tensor(scene.stiffness, dtype=pos.dtype))
    damp = torch.diag(torch.as_tensor(scene.damping, dtype=pos.dtype))
    error = torch.cat([target_pos - pos, quat_to_rotvec(quat_mul(target_quat, quat_conj(quat)))], dim=-1)
    c = rot @ torch.as_tensor(scene.com, dtype=pos.dtype)
    weight = pos.new_tensor([0.0, 0.0, -scene.mass * scene.gravity]).expand_as(c)
    force = torch.zeros_like(weight) if scene.weight_compensated else weight
    gravity = torch.cat([force, torch.linalg.cross(c, weight)], dim=-1)
    m_inv = torch.linalg.inv(inertia + h * damp + h * h * stiff)
    rhs = (inertia @ xi[..., None])[..., 0] + dt[:, None] * ((stiff @ error[..., None])[..., 0] + gravity)
    return m_inv, (m_inv @ rhs[..., None])[..., 0]


def _phase(scene, cfg: StepConfig, geo: _Geometry, pos, quat, xi, target_pos, target_quat, dt: torch.Tensor):
    """One collision-free forward-dynamics call (eq 5) of length ``dt (B,)``: new pose, twist, impulse wrench."""
    m_inv, xi_free = _free_motion(scene, pos, quat, xi, target_pos, target_quat, dt)
    points, frames, gaps, jac = _kinematics(scene, geo, pos, quat)
    n_batch, k = gaps.shape
    live = torch.as_tensor(np.repeat(geo.index.mask, 3, axis=1))
    W = jac @ m_inv @ jac.transpose(-1, -2)
    eye = torch.eye(3 * k, dtype=pos.dtype).expand(n_batch, 3 * k, 3 * k)
    W = torch.where(live[:, :, None] & live[:, None, :], W, eye)
    scale = torch.where(live, torch.diagonal(W, dim1=-2, dim2=-1), 0.0).amax(-1)
    W = W + cfm_eye(cfg.cfm * torch.where(scale > 0.0, scale, 1.0), 3 * k)
    bias = torch.where(gaps > 0.0, gaps / dt[:, None], cfg.erp * gaps / cfg.dt)
    bias = torch.where(torch.as_tensor(geo.index.mask), bias, torch.ones_like(bias))
    b = (jac @ xi_free[..., None])[..., 0] + torch.stack([bias, torch.zeros_like(bias), torch.zeros_like(bias)],
                                                         -1).reshape(n_batch, 3 * k)
    b = torch.where(live, b, torch.where(torch.arange(3 * k) % 3 == 0, 1.0, 0.0).to(b.dtype))
    _, status, ok = solve_batch(W.detach().numpy(), b.detach().numpy(), geo.mu.detach().numpy())
    lam = active_set_solve(W, b, geo.mu, status)
    xi_next = xi_free + (m_inv @ (jac.transpose(-1, -2) @ lam[..., None]))[..., 0]
    new_pos = pos + dt[:, None] * xi_next[:, :3]
    new_quat = rotate_by(dt[:, None] * xi_next[:, 3:], quat)
    forces = (frames.transpose(-1, -2) @ lam.reshape(n_batch, k, 3)[..., None])[..., 0]
    sensor = pos + quat_to_mat(quat) @ torch.as_tensor(scene.sensor_pos, dtype=pos.dtype)
    impulse = torch.cat([forces.sum(1), torch.linalg.cross(points - sensor[:, None], forces).sum(1)], dim=-1)
    return new_pos, new_quat, xi_next, impulse, ok, status


def cfm_eye(scale: torch.Tensor, size: int) -> torch.Tensor:
    """``scale (B,)`` times the identity ``(B, size, size)``."""
    return scale[:, None, None] * torch.eye(size, dtype=scale.dtype)


def prepare_geometry(scene: DiffScene, cfg: StepConfig, pos, quat, theta: torch.Tensor,
                     travel: float | np.ndarray = 0.0) -> _Geometry:
    """θ-dependent vertices and the feature pairs at the step start (the numpy query of :mod:`.query`) within
    ``cfg.margin + travel`` [m] (``travel``, scalar or ``(B,)`` per problem: how far a tool point may move in the
    step, so that no contact that the step could close is missed; per problem, so that no problem's pairs depend
    on the others in the batch)."""
    tool_local = torch.cat([p.vertices_torch(theta) for p in scene.tool_pieces], dim=1)
    tool_planes = _planes(scene.tool_pieces, tool_local)
    env_verts = torch.cat([p.vertices_torch(theta) for p in scene.env_pieces], dim=1)
    env_planes = _planes(scene.env_pieces, env_verts)
    with torch.no_grad():
        index = query_batch(scene.tool_pieces, scene.env_pieces, world_tool_vertices(tool_local, pos, quat).numpy(),
                            world_planes(tool_planes, pos, quat).numpy(), env_verts.numpy(), env_planes.numpy(),
                            cfg.margin + travel)
    mu = torch.as_tensor(np.where(index.mask, np.asarray(scene.env_friction)[index.env_piece], 0.0), dtype=pos.dtype)
    return _Geometry(index, tool_local, tool_planes, env_verts, env_planes, mu)


def diff_step(
    scene: DiffScene, cfg: StepConfig, pos: torch.Tensor, quat: torch.Tensor, lin_vel: torch.Tensor,
    ang_vel: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor, theta: torch.Tensor,
) -> StepOutput:
    """One step ``x_{t+1}, y_{t+1} = f(x_t, u_t; θ)`` (eq 1) for ``B`` problems, differentiable in every input.

    Args:
        scene: the tool, environment, controller and sensor. cfg: :class:`StepConfig`.
        pos: ``(B, 3)`` tool origin [m, world]. quat: ``(B, 4)`` tool orientation (w, x, y, z).
        lin_vel: ``(B, 3)`` origin velocity [m/s, world]. ang_vel: ``(B, 3)`` angular velocity [rad/s, world].
        target_pos: ``(B, 3)`` impedance reference position [m]. target_quat: ``(B, 4)`` reference orientation.
        theta: ``(B, P)`` geometric parameters (units of the pieces' bases).

    Returns:
        :class:`StepOutput` (state after the step, predicted F/T reading in the sensor frame, time of impact).
    """
    if theta.ndim != 2 or theta.shape[1] != scene.n_params or pos.shape != (theta.shape[0], 3):
        raise InvalidInputError(f"diff_step needs pos (B, 3) and theta (B, {scene.n_params}); "
                                f"got {tuple(pos.shape)} and {tuple(theta.shape)}")
    n_batch = theta.shape[0]
    xi = torch.cat([lin_vel, ang_vel], dim=-1)
    full = torch.full((n_batch,), cfg.dt, dtype=pos.dtype)
    _, xi_free = _free_motion(scene, pos, quat, xi, target_pos, target_quat, full)
    with torch.no_grad():  # the farthest a tool point may move in the step (a speculative margin)
        reach = max(float(np.linalg.norm(p.base, axis=1).max()) for p in scene.tool_pieces)
        travel = cfg.dt * torch.maximum(xi[:, :3].norm(dim=-1) + xi[:, 3:].norm(dim=-1) * reach,
                                        xi_free[:, :3].norm(dim=-1) + xi_free[:, 3:].norm(dim=-1) * reach).numpy()
    geo = prepare_geometry(scene, cfg, pos, quat, theta, travel)
    toi = torch.ones(n_batch, dtype=pos.dtype)
    if cfg.split_at_impact and geo.index.mask.any():
        _, _, gaps, jac = _kinematics(scene, geo, pos, quat)
        approach = -(jac @ xi_free[..., None])[..., 0][:, ::3]
        toi = time_of_impact(gaps, approach, torch.as_tensor(geo.index.mask), cfg.dt, cfg.approach_eps)
        toi = torch.where(toi < 1.0, toi, torch.ones_like(toi))
    split_mask = (toi > cfg.toi_min) & (toi < 1.0)
    split = np.flatnonzero(split_mask.detach().numpy())
    impulse = torch.zeros((n_batch, 6), dtype=pos.dtype)
    ok = np.ones(n_batch, dtype=bool)
    first_status = np.zeros((n_batch, 3 * geo.index.mask.shape[1]), dtype=np.int64)
    start_pos, start_quat, start_xi, first = pos, quat, xi, torch.zeros(n_batch, dtype=pos.dtype)
    if split.size:
        rows = torch.as_tensor(split)
        p1, q1, xi1, imp1, ok1, first_status[split] = _phase(scene, cfg, geo.take(split), pos[rows], quat[rows],
                                                             xi[rows], target_pos[rows], target_quat[rows],
                                                             toi[rows] * cfg.dt)
        start_pos, start_quat, start_xi = (x.index_put((rows,), y) for x, y in ((pos, p1), (quat, q1), (xi, xi1)))
        impulse = impulse.index_put((rows,), imp1)
        first = first.index_put((rows,), toi[rows] * cfg.dt)
        ok[split] &= ok1
    p2, q2, xi2, imp2, ok2, second_status = _phase(scene, cfg, geo, start_pos, start_quat, start_xi, target_pos,
                                                   target_quat, full - first)
    rot_s = quat_to_mat(quat) @ quat_to_mat(torch.as_tensor(scene.sensor_quat, dtype=pos.dtype))
    mean = (impulse + imp2) / cfg.dt
    wrench = torch.cat([(rot_s.transpose(-1, -2) @ mean[:, :3, None])[..., 0],
                        (rot_s.transpose(-1, -2) @ mean[:, 3:, None])[..., 0]], dim=-1)
    toi = torch.where(split_mask, toi, torch.ones_like(toi))
    structure = structure_signature(geo.index, split_mask.detach().numpy(), first_status, second_status)
    return StepOutput(p2, q2, xi2[:, :3], xi2[:, 3:], wrench, toi, geo.index.mask.sum(1), ok & ok2, structure)
