"""Contact features of convex parts as torch functions of the tool pose ``q`` and the geometry ``θ`` (§IV-B, eq 4).

The placement paper (Li et al.) §IV-D needs ``∂p/∂θ`` and ``∂n/∂θ`` of every contact feature; the paper
asks the user for a derivative callback per URDF. Here no callback is written: a convex piece's vertices are an
affine function of ``θ`` (:class:`ParamPiece`: ``V(θ) = V₀ + Σ_j θ_j B_j``, which covers in-hand translations,
environment placement and shape dimensions such as wall heights), its face planes follow from its vertices in
closed form (Newell's normal), and each contact is a closed-form construction over a *feature pair* chosen by a
non-differentiable numpy query (:mod:`contactkit.engine.diff.query`). torch autograd then differentiates the
contact points, normals and gaps with respect to ``q`` and ``θ``.

Feature pairs (normal source × point construction), with ``n`` the unit normal from the environment into the tool:

* normal: an environment face's outward normal (``ENV_FACE``), minus a tool face's outward normal
  (``TOOL_FACE``), or the normalised cross product of a tool edge and an environment edge (``EDGE_CROSS``);
* point: a tool vertex ``v`` and the gap to an environment face plane ``m·x = o`` along ``n``,
  ``d = (m·v - o)/(m·n)`` (``TOOL_VERTEX``); an environment vertex ``w`` and the gap to a tool face plane,
  ``d = (o - m·w)/(m·n)``, contact point ``w + d n`` (``ENV_VERTEX``); or the points of a tool edge and an
  environment edge that are aligned along ``n`` (``CROSSING``: edge crossings of two touching faces, and the closest
  points of two crossed edges), ``d = n·(p_T - p_E)``.

The contact point is always on the tool's surface (the engine's convention, :mod:`contactkit.engine.reference.problem`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import ConvexHull

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry.part import ConvexPiece
from contactkit.rotations.torch import quat_to_mat

COPLANAR_RTOL = 1e-9
"""Triangles whose planes agree to this (normal dot and offset relative to the piece's extent) form one face."""

SAFE_DENOMINATOR = 1e-12
"""Denominators of the point constructions are kept at least this far from zero (inactive branches only)."""


class NormalKind(enum.IntEnum):
    """Where a contact's normal comes from."""

    ENV_FACE = 0
    TOOL_FACE = 1
    EDGE_CROSS = 2


class PointKind(enum.IntEnum):
    """How a contact's point and gap are constructed."""

    TOOL_VERTEX = 0
    ENV_VERTEX = 1
    CROSSING = 2


@dataclass(frozen=True, eq=False)
class ParamPiece:
    """A convex piece whose vertices are affine in the geometric parameter ``θ`` ``(P,)``.

    Attributes:
        name: what error messages call the piece.
        base: ``(V, 3)`` vertices at ``θ = 0`` [m] (tool frame for tool pieces, world frame for environment pieces).
        basis: ``(P, V, 3)`` vertex displacement per unit of each parameter [m per parameter unit].
        loops: ``(F, L)`` vertex indices of each polygonal face, counter-clockwise seen from outside, padded by
            repeating the face's last vertex.
        loop_len: ``(F,)`` number of vertices of each face.
        edges: ``(E, 2)`` vertex indices of the piece's edges (each once).
    """

    name: str
    base: np.ndarray
    basis: np.ndarray
    loops: np.ndarray
    loop_len: np.ndarray
    edges: np.ndarray

    @property
    def n_params(self) -> int:
        """Number of geometric parameters ``P``."""
        return int(self.basis.shape[0])

    def vertices(self, theta: np.ndarray) -> np.ndarray:
        """Vertices ``(*B, V, 3)`` [m] at ``θ (*B, P)`` (numpy)."""
        theta = np.asarray(theta, dtype=np.float64)
        return self.base + np.einsum("...p,pvk->...vk", theta, self.basis)

    def vertices_torch(self, theta: torch.Tensor) -> torch.Tensor:
        """Vertices ``(B, V, 3)`` [m] at ``θ (B, P)`` (torch, differentiable in ``θ``)."""
        base = torch.as_tensor(self.base, dtype=theta.dtype)
        basis = torch.as_tensor(self.basis, dtype=theta.dtype)
        return base + torch.einsum("bp,pvk->bvk", theta, basis)

    def piece(self, theta: np.ndarray) -> ConvexPiece:
        """The :class:`ConvexPiece` (triangulated faces) at ``θ (P,)`` — what MuJoCo and COAL are given."""
        verts = self.vertices(theta)
        tris = []
        for loop, n in zip(self.loops, self.loop_len, strict=True):
            tris.extend((loop[0], loop[i], loop[i + 1]) for i in range(1, int(n) - 1))
        return ConvexPiece(verts, np.asarray(tris, dtype=np.int64))


def _face_groups(vertices: np.ndarray, faces: np.ndarray, label: str) -> list[tuple[np.ndarray, float, list[int]]]:
    """Triangles grouped by plane: ``[(normal (3,), offset, vertex ids)]``."""
    extent = float(np.ptp(vertices, axis=0).max())
    groups: list[tuple[np.ndarray, float, list[int]]] = []
    for tri in faces:
        a, b, c = vertices[tri]
        normal = np.cross(b - a, c - a)
        length = np.linalg.norm(normal)
        if length <= COPLANAR_RTOL * extent**2:
            raise GeometryError(f"{label}: a face has zero area")
        normal = normal / length
        offset = float(normal @ a)
        for g_normal, g_offset, ids in groups:
            if g_normal @ normal > 1.0 - COPLANAR_RTOL and abs(g_offset - offset) <= COPLANAR_RTOL * extent:
                ids.extend(int(i) for i in tri)
                break
        else:
            groups.append((normal, offset, [int(i) for i in tri]))
    return groups


def _ordered_loop(vertices: np.ndarray, normal: np.ndarray, ids: list[int]) -> np.ndarray:
    """The corners of one planar convex face, counter-clockwise about its outward ``normal`` (no collinear points)."""
    ids = np.unique(ids)
    pts = vertices[ids]
    u = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(normal, u)
    flat = np.column_stack([(pts - pts.mean(0)) @ u, (pts - pts.mean(0)) @ w])
    hull = ConvexHull(flat)
    return ids[hull.vertices]  # scipy orders 2-D hull vertices counter-clockwise in (u, w), i.e. about +normal


def param_piece(piece: ConvexPiece, basis: np.ndarray | None = None, n_params: int = 0,
                name: str = "piece") -> ParamPiece:
    """A :class:`ParamPiece` from a convex piece at ``θ = 0`` and its vertex basis ``(P, V, 3)`` (zeros if None).

    Coplanar triangles are merged into polygonal faces; the basis must keep every face planar (the task builders
    move whole faces rigidly or along their plane), which is checked at ``θ = ±1 mm`` per parameter.

    Raises:
        GeometryError: a degenerate face, or a basis that bends a face out of its plane.
        InvalidInputError: a basis of the wrong shape.
    """
    vertices = np.asarray(piece.vertices, dtype=np.float64)
    basis = np.zeros((n_params, len(vertices), 3)) if basis is None else np.array(basis, dtype=np.float64)
    if basis.ndim != 3 or basis.shape[1:] != vertices.shape:
        raise InvalidInputError(f"{name}: basis must have shape (P, {len(vertices)}, 3), got {basis.shape}")
    groups = _face_groups(vertices, np.asarray(piece.faces), name)
    loops = [_ordered_loop(vertices, normal, ids) for normal, _, ids in groups]
    width = max(len(loop) for loop in loops)
    padded = np.array([np.concatenate([loop, np.full(width - len(loop), loop[-1])]) for loop in loops], dtype=np.int64)
    edges = {tuple(sorted((int(loop[i]), int(loop[(i + 1) % len(loop)])))) for loop in loops for i in range(len(loop))}
    out = ParamPiece(name, vertices, basis, padded, np.array([len(x) for x in loops]), np.array(sorted(edges)))
    for j in range(out.n_params):
        for step in (-1e-3, 1e-3):
            theta = np.zeros(out.n_params)
            theta[j] = step
            planes = face_planes_np(out.vertices(theta)[None], out.loops, out.loop_len)[0]
            verts = out.vertices(theta)[out.loops]
            if np.abs(np.einsum("flk,fk->fl", verts, planes[:, :3]) - planes[:, 3:]).max() > 1e-9:
                raise GeometryError(f"{name}: parameter {j} bends a face out of its plane")
    return out


def face_planes_np(vertices: np.ndarray, loops: np.ndarray, loop_len: np.ndarray) -> np.ndarray:
    """Face planes ``(B, F, 4)`` rows ``(m, o)``, ``{x: m·x ≤ o}`` outside-out, of vertices ``(B, V, 3)`` (Newell)."""
    pts = vertices[:, loops]  # (B, F, L, 3)
    mask = np.arange(loops.shape[1])[None, :] < loop_len[:, None]
    centre = (pts * mask[None, :, :, None]).sum(2) / loop_len[None, :, None]
    rel = pts - centre[:, :, None]
    normal = np.cross(rel, np.roll(rel, -1, axis=2)).sum(2)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    return np.concatenate([normal, (normal * centre).sum(-1, keepdims=True)], axis=-1)


def face_planes_torch(vertices: torch.Tensor, loops: np.ndarray, loop_len: np.ndarray) -> torch.Tensor:
    """Torch version of :func:`face_planes_np`: planes ``(B, F, 4)`` of vertices ``(B, V, 3)``, differentiable."""
    idx = torch.as_tensor(loops)
    pts = vertices[:, idx]
    mask = torch.as_tensor(np.arange(loops.shape[1])[None, :] < loop_len[:, None], dtype=vertices.dtype)
    centre = (pts * mask[None, :, :, None]).sum(2) / torch.as_tensor(loop_len, dtype=vertices.dtype)[None, :, None]
    rel = pts - centre[:, :, None]
    normal = torch.linalg.cross(rel, torch.roll(rel, -1, dims=2)).sum(2)
    normal = normal / torch.linalg.vector_norm(normal, dim=-1, keepdim=True)
    return torch.cat([normal, (normal * centre).sum(-1, keepdim=True)], dim=-1)


@dataclass(frozen=True)
class FeatureIndex:
    """Padded feature pairs of ``B`` problems, ``K`` slots each (from :func:`contactkit.engine.diff.query.query_batch`).

    Vertex, face and edge indices refer to the concatenated tool (or environment) pieces of a
    :class:`~contactkit.engine.diff.step.DiffScene`. All arrays are ``(B, K)`` int64 unless noted.

    Attributes:
        mask: ``(B, K)`` bool, real contacts.
        normal_kind: :class:`NormalKind` values. normal_face: face id (tool or environment) of a face normal.
        tool_edge, env_edge: ``(B, K, 2)`` vertex ids of the edges of ``EDGE_CROSS`` normals and ``CROSSING`` points.
        sign: ``(B, K)`` float, ``±1`` orientation of an ``EDGE_CROSS`` normal relative to ``e_T × e_E``.
        point_kind: :class:`PointKind` values. vertex: tool or environment vertex id of a vertex point.
        plane_face: environment face (``TOOL_VERTEX``) or tool face (``ENV_VERTEX``) whose plane the gap is taken to.
        env_piece: environment piece of each contact (its friction).
    """

    mask: np.ndarray
    normal_kind: np.ndarray
    normal_face: np.ndarray
    tool_edge: np.ndarray
    env_edge: np.ndarray
    sign: np.ndarray
    point_kind: np.ndarray
    vertex: np.ndarray
    plane_face: np.ndarray
    env_piece: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """``(B, K)``."""
        return tuple(self.mask.shape)


def _gather(x: torch.Tensor, idx: np.ndarray) -> torch.Tensor:
    """``x[b, idx[b, k]]`` for ``x (B, N, C)`` and ``idx (B, K)`` → ``(B, K, C)``."""
    i = torch.as_tensor(idx, dtype=torch.long)
    return torch.gather(x, 1, i[..., None].expand(*i.shape, x.shape[-1]))


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum(-1)


def _safe(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x.abs() > SAFE_DENOMINATOR, x, torch.ones_like(x))


def world_tool_vertices(tool_vertices: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
    """Tool vertices ``(B, V, 3)`` (tool frame [m]) at the pose ``pos (B, 3)`` [m], ``quat (B, 4)``: ``R v + p``."""
    return tool_vertices @ quat_to_mat(quat).transpose(-1, -2) + pos[:, None, :]


def contact_features(
    index: FeatureIndex, tool_verts: torch.Tensor, tool_planes: torch.Tensor, env_verts: torch.Tensor,
    env_planes: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Contact points, normals and gaps of ``B`` problems as differentiable functions of world geometry (eq 4).

    Args:
        index: the feature pairs (``K`` slots per problem).
        tool_verts: ``(B, Vt, 3)`` world tool vertices [m] (a function of ``q`` and ``θ``).
        tool_planes: ``(B, Ft, 4)`` world tool face planes ``(m, o)`` (:func:`face_planes_torch` of ``tool_verts``).
        env_verts: ``(B, Ve, 3)`` world environment vertices [m]. env_planes: ``(B, Fe, 4)`` their face planes.

    Returns:
        ``points (B, K, 3)`` [m] on the tool surface, ``normals (B, K, 3)`` unit, environment → tool, and
        ``gaps (B, K)`` [m] signed (< 0: penetration), all world frame; padded slots hold finite dummies.
    """
    ta, tb = _gather(tool_verts, index.tool_edge[..., 0]), _gather(tool_verts, index.tool_edge[..., 1])
    ea, eb = _gather(env_verts, index.env_edge[..., 0]), _gather(env_verts, index.env_edge[..., 1])
    kind_n = torch.as_tensor(index.normal_kind)[..., None]
    env_face = _gather(env_planes, np.where(index.normal_kind == NormalKind.ENV_FACE, index.normal_face, 0))[..., :3]
    tool_ids = np.where(index.normal_kind == NormalKind.TOOL_FACE, index.normal_face, 0)
    tool_face = -_gather(tool_planes, tool_ids)[..., :3]
    cross = torch.linalg.cross(tb - ta, eb - ea)
    cross_len = torch.sqrt((cross * cross).sum(-1, keepdim=True).clamp_min(SAFE_DENOMINATOR**2))
    cross = torch.as_tensor(index.sign, dtype=cross.dtype)[..., None] * cross / cross_len
    normal = torch.where(kind_n == NormalKind.ENV_FACE, env_face, torch.where(kind_n == NormalKind.TOOL_FACE, tool_face,
                                                                               cross))
    # TOOL_VERTEX: a tool vertex, gap to an environment plane along n.
    is_tv, is_ev = index.point_kind == PointKind.TOOL_VERTEX, index.point_kind == PointKind.ENV_VERTEX
    v = _gather(tool_verts, np.where(is_tv, index.vertex, 0))
    plane_e = _gather(env_planes, np.where(is_tv, index.plane_face, 0))
    gap_tv = (_dot(plane_e[..., :3], v) - plane_e[..., 3]) / _safe(_dot(plane_e[..., :3], normal))
    # ENV_VERTEX: an environment vertex, gap to a tool plane along n; the contact point is on the tool plane.
    w = _gather(env_verts, np.where(is_ev, index.vertex, 0))
    plane_t = _gather(tool_planes, np.where(is_ev, index.plane_face, 0))
    gap_ev = (plane_t[..., 3] - _dot(plane_t[..., :3], w)) / _safe(_dot(plane_t[..., :3], normal))
    # CROSSING: the points of the tool edge and the environment edge aligned along n.
    k_env = torch.linalg.cross(eb - ea, normal)
    s = _dot(k_env, ea - ta) / _safe(_dot(k_env, tb - ta))
    k_tool = torch.linalg.cross(tb - ta, normal)
    r = _dot(k_tool, ta - ea) / _safe(_dot(k_tool, eb - ea))
    p_tool = ta + s[..., None] * (tb - ta)
    gap_cr = _dot(normal, p_tool - (ea + r[..., None] * (eb - ea)))
    kind_p = torch.as_tensor(index.point_kind)
    gap = torch.where(kind_p == PointKind.TOOL_VERTEX, gap_tv,
                      torch.where(kind_p == PointKind.ENV_VERTEX, gap_ev, gap_cr))
    point = torch.where(kind_p[..., None] == PointKind.TOOL_VERTEX, v,
                        torch.where(kind_p[..., None] == PointKind.ENV_VERTEX, w + gap_ev[..., None] * normal, p_tool))
    live = torch.as_tensor(index.mask)
    return point * live[..., None], torch.where(live[..., None], normal, normal.new_tensor([0.0, 0.0, 1.0])), gap * live
