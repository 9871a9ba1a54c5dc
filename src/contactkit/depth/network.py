"""A trained depth network and its queries (tight-tolerance paper §III-A; architecture §V-B).

``d(x)`` is the signed distance [m] of a point ``x`` (part frame) to the static part's surface, positive
outside (a gap), negative inside (penetration); the contact normal is ``n = ∂d/∂x`` (autograd), pointing out of
the static part. The network: ``x̂ = 2 (f − feature_lo)/(feature_hi − feature_lo) − 1`` of the features ``f``
(:mod:`contactkit.depth.coordinates`), ``h1 = relu(W0 x̂ + b0)`` (64), ``h2 = relu(W1 h1 + b1)`` (64),
``d = depth_scale · tanh(W2 h2 + b2)``. Points whose features leave ``[feature_lo, feature_hi]`` (the padded
domain) are far: depth ``+inf``, normal 0.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
import torch

from contactkit.depth.coordinates import Coordinates, SymmetryFrame, features_numpy, features_torch
from contactkit.devices import check_device
from contactkit.errors import InvalidInputError
from contactkit.geometry.signed_distance import check_points
from contactkit.rotations.numpy import quat_to_mat

HIDDEN = 64
"""Width of both hidden layers (paper §V-B)."""
QUERY_DTYPE = torch.float32
"""dtype of the MLP in :func:`query` (features and the input scaling are float64)."""
QUAT_NORM_TOL = 1e-6
"""Allowed |‖q‖ − 1| of a pose quaternion."""


@dataclass(frozen=True, eq=False)
class DepthNet:
    """A learned signed-distance network of one part (module docstring).

    Attributes:
        part_name: the part it was trained on; mesh_sha256: :func:`contactkit.geometry.mesh_sha256` of its mesh.
        coordinates, origin, axis, ref, pitch, handedness: the feature frame (:class:`SymmetryFrame`), part frame.
        feature_lo, feature_hi: ``(k,)`` float64, the padded domain in feature space.
        depth_scale: output scale [m] (``|d| < depth_scale``).
        weights: ``(W0 (64,k), b0 (64,), W1 (64,64), b1 (64,), W2 (1,64), b2 (1,))`` float64.
        meta: JSON-compatible training facts (samples, steps, seed, band, accuracy [µm], train time).
    """

    part_name: str
    mesh_sha256: str
    coordinates: Coordinates
    origin: np.ndarray
    axis: np.ndarray
    ref: np.ndarray
    pitch: float
    handedness: int
    feature_lo: np.ndarray
    feature_hi: np.ndarray
    depth_scale: float
    weights: tuple[np.ndarray, ...]
    meta: dict = field(default_factory=dict)

    @property
    def frame(self) -> SymmetryFrame:
        """The feature frame."""
        return SymmetryFrame(self.coordinates, self.origin, self.axis, self.ref, self.pitch, self.handedness)

    @property
    def pieces(self) -> tuple[DepthNet, ...]:
        """``(self,)``: a single network is a piecewise set of one (as :attr:`DepthNetSet.pieces`)."""
        return (self,)


@dataclass(frozen=True)
class NodeContacts:
    """Contacts of a moving part's nodes against a static part's depth network (world frame).

    Attributes:
        node_index: ``(M,)`` int64 indices into the nodes given to :func:`detect`.
        points: ``(M, 3)`` the nodes' world positions [m].
        normals: ``(M, 3)`` unit world normals out of the static part.
        depth: ``(M,)`` signed distance [m] (negative = penetration).
    """

    node_index: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    depth: np.ndarray


FRAME_TOL = 1e-12
"""Largest difference of the pieces' frames (origin [m], axis, ref, pitch [m]) within one :class:`DepthNetSet`."""


@dataclass(frozen=True, eq=False)
class DepthNetSet:
    """A piecewise network of one part: pieces (:class:`DepthNet`) of the same part and feature frame whose axial
    windows ``[feature_lo[-1], feature_hi[-1]]`` follow each other without overlapping (they may touch; a point
    on a shared end is answered by the lower piece). Each piece is the paper's §V-B network on a shorter stretch
    of the axis: a thread's chamfered top, where the distance stops depending on the helical phase, is a
    different function from the thread below it, and one 2 × 64 network fitted to both leaves 100 µm errors there
    (models/depth-m48-bolt/README.md). Made by ``contactkit learn depth --z-range`` per piece and
    ``contactkit learn depth-set``; loaded by :func:`contactkit.depth.load_depth_nets`.

    Raises:
        InvalidInputError: no pieces; pieces of different parts, meshes, coordinates or frames; more than one
            piece in cartesian coordinates; windows that overlap.
    """

    pieces: tuple[DepthNet, ...]

    def __post_init__(self) -> None:
        pieces = tuple(sorted(self.pieces, key=lambda n: float(n.feature_lo[-1])))
        if not pieces:
            raise InvalidInputError("a DepthNetSet needs at least one piece")
        first = pieces[0]
        for net in pieces[1:]:
            if (net.part_name, net.mesh_sha256, net.coordinates) != (first.part_name, first.mesh_sha256,
                                                                      first.coordinates):
                raise InvalidInputError(f"depth net pieces of {first.part_name!r} ({first.coordinates.value}) and "
                                        f"{net.part_name!r} ({net.coordinates.value}) do not make one set")
            gaps = [np.abs(np.asarray(getattr(net, k), float) - np.asarray(getattr(first, k), float)).max()
                    for k in ("origin", "axis", "ref", "pitch", "handedness")]
            if max(gaps) > FRAME_TOL:
                raise InvalidInputError("depth net pieces have different feature frames (origin, axis, ref, pitch "
                                        "or handedness)")
        if len(pieces) > 1 and first.coordinates is Coordinates.CARTESIAN:
            raise InvalidInputError("pieces of a DepthNetSet split the axis: cylindrical or helical coordinates")
        for lower, upper in zip(pieces, pieces[1:], strict=False):
            if float(upper.feature_lo[-1]) < float(lower.feature_hi[-1]):
                raise InvalidInputError(f"depth net pieces overlap along the axis: [{lower.feature_lo[-1]:g}, "
                                        f"{lower.feature_hi[-1]:g}] and [{upper.feature_lo[-1]:g}, "
                                        f"{upper.feature_hi[-1]:g}] m")
        object.__setattr__(self, "pieces", pieces)

    @property
    def part_name(self) -> str:
        """The part's name (all pieces')."""
        return self.pieces[0].part_name

    @property
    def mesh_sha256(self) -> str:
        """The sha256 of the part's mesh (all pieces')."""
        return self.pieces[0].mesh_sha256

    @property
    def coordinates(self) -> Coordinates:
        """The pieces' coordinates."""
        return self.pieces[0].coordinates

    @property
    def meta(self) -> dict:
        """The piece's meta for a set of one piece; else ``{"pieces": [each piece's meta with its axial window
        "z_window_m" [m]]}`` (JSON-compatible)."""
        if len(self.pieces) == 1:
            return self.pieces[0].meta
        return {"pieces": [{**net.meta, "z_window_m": [float(net.feature_lo[-1]), float(net.feature_hi[-1])]}
                           for net in self.pieces]}


def features(net: DepthNet, points: np.ndarray) -> np.ndarray:
    """``(N, k)`` float64 features of ``(N, 3)`` part-frame points [m] (:mod:`contactkit.depth.coordinates`).

    Raises:
        InvalidInputError: points not ``(N, 3)`` or holding NaN/Inf.
    """
    return features_numpy(net.frame, check_points(points))


def mlp(weights, x_hat: torch.Tensor, depth_scale: float) -> torch.Tensor:
    """``(N,)`` network output [m] for ``(N, k)`` scaled inputs; ``weights`` are tensors in x_hat's dtype."""
    w0, b0, w1, b1, w2, b2 = weights
    h = torch.relu(x_hat @ w0.T + b0)
    h = torch.relu(h @ w1.T + b1)
    return depth_scale * torch.tanh(h @ w2.T + b2)[:, 0]


_CACHE: dict[tuple[int, str], tuple[weakref.ref, tuple[torch.Tensor, ...]]] = {}


def torch_weights(net: DepthNet, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """The network's weights as tensors on ``device`` (cached per network object, device and dtype)."""
    key = (id(net), f"{device}/{dtype}")
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is net:
        return hit[1]
    tensors = tuple(torch.as_tensor(w, dtype=dtype, device=device) for w in net.weights)
    _CACHE[key] = (weakref.ref(net, lambda _, k=key: _CACHE.pop(k, None)), tensors)
    return tensors


def query(net: DepthNet | DepthNetSet, points: np.ndarray, *,
          device: torch.device | str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Signed distance and contact normal of part-frame points, in one batched torch call per piece (paper §III-A).

    Args:
        net: the static part's network, or a :class:`DepthNetSet` (each point goes to the piece whose axial window
            holds it; the lower piece on a shared end).
        points: ``(N, 3)`` part-frame points [m].
        device: torch device of the evaluation ('cpu', 'cuda', ...).

    Returns:
        ``depth (N,)`` [m] (positive outside; ``+inf`` for far points, outside the padded domain) and
        ``normal (N, 3)`` = ∂d/∂x by autograd, part frame, normalised to unit length (0 for far points).

    Raises:
        InvalidInputError: points not ``(N, 3)`` or holding NaN/Inf; an unusable device.
    """
    p = check_points(points)
    dev = check_device(device)
    depth = np.full(len(p), np.inf)
    normal = np.zeros((len(p), 3))
    if isinstance(net, DepthNetSet):
        z = (p - net.pieces[0].origin) @ net.pieces[0].axis
        todo = np.ones(len(p), bool)
        for piece in net.pieces:
            mine = np.flatnonzero(todo & (z >= piece.feature_lo[-1]) & (z <= piece.feature_hi[-1]))
            depth[mine], normal[mine] = query(piece, p[mine], device=dev)
            todo[mine] = False
        return depth, normal
    if len(p) == 0:
        return depth, normal
    x = torch.as_tensor(p, dtype=torch.float64, device=dev).requires_grad_(True)
    f = features_torch(net.frame, x)
    lo = torch.as_tensor(net.feature_lo, dtype=torch.float64, device=dev)
    hi = torch.as_tensor(net.feature_hi, dtype=torch.float64, device=dev)
    inside = ((f >= lo) & (f <= hi)).all(dim=1)
    x_hat = (2 * (f - lo) / (hi - lo) - 1).to(QUERY_DTYPE)
    d = mlp(torch_weights(net, dev, QUERY_DTYPE), x_hat, net.depth_scale).to(torch.float64)
    (grad,) = torch.autograd.grad(d.sum(), x)
    keep = inside.cpu().numpy()
    g = grad.detach().cpu().numpy()[keep]
    depth[keep] = d.detach().cpu().numpy()[keep]
    normal[keep] = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300)
    return depth, normal


def _pose(name: str, pos, quat) -> tuple[np.ndarray, np.ndarray]:
    """``(R (3,3), p (3,))`` of a pose, checked finite with a unit wxyz quaternion."""
    p = np.asarray(pos, dtype=np.float64).reshape(-1)
    q = np.asarray(quat, dtype=np.float64).reshape(-1)
    if p.shape != (3,) or q.shape != (4,):
        raise InvalidInputError(f"{name} pose must be a (3,) position and a (4,) wxyz quaternion")
    if not (np.isfinite(p).all() and np.isfinite(q).all()):
        raise InvalidInputError(f"{name} pose holds NaN or Inf: pos {p.tolist()}, quat {q.tolist()}")
    if abs(np.linalg.norm(q) - 1) > QUAT_NORM_TOL:
        raise InvalidInputError(f"{name} quaternion {q.tolist()} is not unit (norm {np.linalg.norm(q):.9g})")
    return quat_to_mat(q), p


def domain_box(net: DepthNet | DepthNetSet) -> tuple[np.ndarray, np.ndarray]:
    """Part-frame axis-aligned box ``(lo (3,), hi (3,))`` [m] that holds the padded domain (of every piece)."""
    if isinstance(net, DepthNetSet):
        boxes = [domain_box(piece) for piece in net.pieces]
        return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
    lo, hi = net.feature_lo, net.feature_hi
    if net.coordinates is Coordinates.CARTESIAN:
        return net.origin + lo, net.origin + hi
    r_max, z_lo, z_hi = hi[0], lo[-1], hi[-1]
    ends = net.origin + np.outer([z_lo, z_hi], net.axis)
    half = r_max * np.sqrt(np.clip(1 - net.axis**2, 0, 1))  # a disk of radius r_max ⊥ axis
    return ends.min(axis=0) - half, ends.max(axis=0) + half


def detect(net: DepthNet | DepthNetSet, static_pos, static_quat, nodes: np.ndarray, tool_pos, tool_quat,
           margin: float, *, device: torch.device | str = "cpu") -> NodeContacts:
    """Node contacts of a moving part against a static part's network (paper §III-A, Fig. 3).

    Broad phase: the box of the tool's nodes (static frame) against the box of the padded domain, then the nodes
    inside that box; the candidates go through :func:`query` in one call.

    Args:
        net: the static part's network (or :class:`DepthNetSet`); static_pos (3,) [m], static_quat (4,) wxyz: its
            world pose.
        nodes: ``(N, 3)`` surface nodes of the tool, tool frame [m]; tool_pos, tool_quat: the tool's world pose.
        margin: [m] report nodes with signed distance ``d < margin``.
        device: torch device of the query.

    Returns:
        :class:`NodeContacts` in the world frame, nodes in increasing index order.

    Raises:
        InvalidInputError: NaN/Inf or non-unit pose, NaN nodes, a non-finite margin.
    """
    rs, ps = _pose("static", static_pos, static_quat)
    rt, pt = _pose("tool", tool_pos, tool_quat)
    n = check_points(nodes, "nodes")
    if not np.isfinite(margin):
        raise InvalidInputError(f"margin must be finite, got {margin!r}")
    world = n @ rt.T + pt
    local = (world - ps) @ rs  # R_sᵀ (x − p_s), row-wise
    lo, hi = domain_box(net)
    empty = NodeContacts(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    if len(local) == 0 or (local.max(axis=0) < lo).any() or (local.min(axis=0) > hi).any():
        return empty
    cand = np.flatnonzero(((local >= lo) & (local <= hi)).all(axis=1))
    if len(cand) == 0:
        return empty
    d, nrm = query(net, local[cand], device=device)
    hit = d < margin
    idx = cand[hit]
    return NodeContacts(idx.astype(np.int64), world[idx], nrm[hit] @ rs.T, d[hit])
