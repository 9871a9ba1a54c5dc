"""Convex decomposition of a non-convex part with CoACD, cached on disk, with a report of its error.

Collision detection (COAL, MuJoCo) handles unions of convex pieces only; a part read from a mesh file that is
not convex (a slot, a nut, a connector housing) has no pieces until it is decomposed here (issue 16, part 1;
the tight-tolerance paper's §III-A baseline "decompose the mesh into convex parts"). CoACD (Wei et al. 2022,
``coacd.run_coacd``) cuts the solid along planes chosen by a tree search until every part's concavity is below
``threshold``; each part's convex hull becomes a :class:`ConvexPiece` (part frame).

A convex part needs no search: its one piece is its hull, and CoACD is not run.

Cache: one JSON file per (mesh, settings, CoACD version) under ``cache_dir``, named by the SHA-256 of
``mesh_sha256(part.vertices, part.faces)``, the settings and the CoACD version; written atomically (a temporary
file renamed into place). A cache entry is used only when it parses, names the same mesh hash and settings, and
every piece passes :func:`validate_part` (a closed convex solid); anything else is ignored and rebuilt. No pickle.

Error report (:class:`DecompositionReport`), estimated with ``settings.n_samples`` points drawn by a generator
seeded with ``settings.seed``:

- ``volume_error``: ``vol(U Δ M) / vol(M)``, ``U`` the union of pieces and ``M`` the solid, by Monte-Carlo
  over their common bounding box (inside ``M``: libigl's fast winding number > 1/2; inside ``U``: inside the
  half-spaces of some piece);
- ``hausdorff`` [m]: two-sided Hausdorff distance between the mesh surface and the boundary of ``U``, over
  points sampled on both (area-weighted) and their vertices. Surface points of ``U``: piece-surface samples
  that lie inside no other piece, nor within ``GAP_RTOL`` of the extent outside one (a sliver between pieces
  inside the solid is no boundary); their distance to the mesh is exact (libigl). Mesh points outside ``U``:
  exact distance to the nearest piece; mesh points inside ``U`` by at most the sliver width: their depth in
  the deepest piece; deeper ones: distance to the nearest ``U`` sample (an upper bound: sample spacing and the
  seams dropped as slivers add to it; the exact value lies between ``max_protrusion`` and it);
- ``max_protrusion`` [m]: how far ``U`` sticks out of the solid at most (signed distance of the ``U`` samples,
  positive outside): what a decomposition takes off a fit's clearance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part, mesh_sha256
from contactkit.geometry.signed_distance import signed_distance
from contactkit.geometry.validate import (
    check_self_intersections,
    hull_piece,
    is_convex,
    signed_volume,
    validate_part,
)

CACHE_FORMAT = 1
"""Version of the cache files' layout; part of the cache key."""

INSIDE_RTOL = 1e-9
"""A point is strictly inside a piece when it lies this fraction of the part's extent inside every face plane."""

GAP_RTOL = 1e-3
"""A gap between pieces narrower than this fraction of the part's extent counts as closed: the two sides of such
a gap (CoACD's cuts leave slivers of tens of µm between pieces, inside the solid) are not the union's boundary."""

BOX_PAD_RTOL = 1e-3
"""The Monte-Carlo box is the bounding box of the mesh and pieces, grown by this fraction of the extent."""

CHUNK = 4096
"""Points per block in the half-space tests (bounds memory to CHUNK x faces x pieces)."""


class PreprocessMode(Enum):
    """CoACD's manifold preprocessing. ``OFF`` (default): the part is already a checked closed manifold, and
    preprocessing would remesh it through a voxel grid (``preprocess_resolution``), moving the surface by a voxel;
    ``ON``: always remesh; ``AUTO``: remesh only when CoACD finds the mesh non-manifold."""

    OFF = "off"
    ON = "on"
    AUTO = "auto"


@dataclass(frozen=True)
class DecompositionSettings:
    """CoACD parameters (``help(coacd.run_coacd)``) and the report's sampling.

    Attributes:
        threshold: concavity at which a part is no longer cut, as a fraction of the part's bounding-box
            diagonal, in (0, 1] (CoACD default 0.05; 0.02 keeps slots and nuts within a few µm of the mesh).
        max_convex_hull: merge down to at most this many pieces; ``None``: no limit.
        resolution: surface samples CoACD uses to measure concavity (> 0).
        preprocess: :class:`PreprocessMode`; preprocess_resolution: its voxel grid (> 0).
        mcts_nodes, mcts_iterations, mcts_max_depth: the cut search (CoACD defaults 20, 150, 3).
        merge: merge pieces whose union stays within ``threshold``.
        max_ch_vertex: most vertices of a piece's hull.
        seed: CoACD's random seed, and the report sampler's.
        n_samples: points per sample set of the report (> 0).
    """

    threshold: float = 0.02
    max_convex_hull: int | None = None
    resolution: int = 2000
    preprocess: PreprocessMode = PreprocessMode.OFF
    preprocess_resolution: int = 50
    mcts_nodes: int = 20
    mcts_iterations: int = 150
    mcts_max_depth: int = 3
    merge: bool = True
    max_ch_vertex: int = 256
    seed: int = 0
    n_samples: int = 20000

    def __post_init__(self):
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not (0.0 < t <= 1.0):
            raise InvalidInputError(f"DecompositionSettings.threshold must be in (0, 1], got {t!r}")
        try:
            object.__setattr__(self, "preprocess", PreprocessMode(self.preprocess))
        except ValueError:
            raise InvalidInputError(f"DecompositionSettings.preprocess must be one of "
                                    f"{[m.value for m in PreprocessMode]}, got {self.preprocess!r}") from None
        for name in ("resolution", "preprocess_resolution", "mcts_nodes", "mcts_iterations", "mcts_max_depth",
                     "max_ch_vertex", "n_samples", "max_convex_hull", "seed"):
            v = getattr(self, name)
            if v is None and name == "max_convex_hull":
                continue
            lowest = 0 if name == "seed" else (4 if name == "max_ch_vertex" else 1)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lowest:
                raise InvalidInputError(f"DecompositionSettings.{name} must be an integer >= {lowest}, got {v!r}")
            object.__setattr__(self, name, int(v))
        if not isinstance(self.merge, bool):
            raise InvalidInputError(f"DecompositionSettings.merge must be a bool, got {self.merge!r}")

    def to_dict(self) -> dict:
        """JSON-compatible form (the cache key hashes it)."""
        return dataclasses.asdict(self) | {"preprocess": self.preprocess.value}


@dataclass(frozen=True)
class DecompositionReport:
    """What :func:`decompose` did and how far its pieces are from the mesh (module docstring).

    Attributes:
        method: ``"coacd"``, or ``"convex-hull"`` for a convex part.
        n_pieces: number of convex pieces.
        volume_error: ``vol(U Δ M) / vol(M)`` (Monte-Carlo estimate; dimensionless).
        hausdorff: two-sided Hausdorff distance between the mesh surface and the union's boundary [m].
        max_protrusion: largest distance by which the union sticks out of the solid [m] (>= 0).
        seconds: wall time of the decomposition and its report [s] (when it was computed, not read from cache).
        cached: whether the pieces came from the cache.
        mesh_sha256: :func:`mesh_sha256` of the decomposed mesh.
    """

    method: str
    n_pieces: int
    volume_error: float
    hausdorff: float
    max_protrusion: float
    seconds: float
    cached: bool
    mesh_sha256: str

    def to_dict(self) -> dict:
        """JSON-compatible form."""
        return dataclasses.asdict(self)


def decompose(
    part: Part,
    settings: DecompositionSettings | None = None,
    *,
    cache_dir: Path | str | None = None,
) -> tuple[Part, DecompositionReport]:
    """The part with its convex pieces replaced by a convex decomposition of its mesh.

    Args:
        part: a closed, outward, valid solid (:func:`validate_part`) whose surface does not pass through
            itself (:func:`check_self_intersections`); vertices in the part frame [m]. Its existing pieces are
            ignored.
        settings: CoACD parameters and the report's sampling (:class:`DecompositionSettings`); ``None``: defaults.
        cache_dir: folder of cached decompositions (created if missing); ``None``: no cache. The command line
            uses ``~/.cache/contactkit/coacd``.

    Returns:
        ``(part with pieces (ConvexPiece, ...) in the part frame, DecompositionReport)``; the part's meta gains
        ``convex_pieces_missing: False`` and ``decomposition`` (method, settings, n_pieces, mesh_sha256).

    Raises:
        GeometryError: the part is not a valid solid or is self-intersecting, CoACD fails, or gives no piece
            with volume.
        InvalidInputError: settings of the wrong type.
    """
    settings = DecompositionSettings() if settings is None else settings
    if not isinstance(settings, DecompositionSettings):
        raise InvalidInputError(f"settings must be a DecompositionSettings, got {type(settings).__name__}")
    validate_part(part)
    label = f"part {part.name!r}"
    check_self_intersections(part.vertices, part.faces, label)
    digest = mesh_sha256(part.vertices, part.faces)
    path = None if cache_dir is None else Path(cache_dir).expanduser() / f"{_cache_key(digest, settings)}.json"
    hit = _read_cache(path, part, digest, settings) if path is not None else None
    if hit is not None:
        pieces, report = hit
    else:
        start = time.perf_counter()
        if is_convex(part.vertices, part.faces, label):
            method, pieces = "convex-hull", (hull_piece(part.vertices, label),)
        else:
            method, pieces = "coacd", _run_coacd(part, settings, label)
        errors = _errors(part, pieces, np.random.default_rng(settings.seed), settings.n_samples)
        report = DecompositionReport(method, len(pieces), *errors, seconds=time.perf_counter() - start,
                                     cached=False, mesh_sha256=digest)
        if path is not None:
            _write_cache(path, digest, settings, pieces, report)
    meta = dict(part.meta) | {
        "convex_pieces_missing": False,
        "decomposition": {"method": report.method, "settings": settings.to_dict(), "n_pieces": report.n_pieces,
                          "mesh_sha256": digest},
    }
    return dataclasses.replace(part, pieces=tuple(pieces), meta=meta), report


def _run_coacd(part: Part, s: DecompositionSettings, label: str) -> tuple[ConvexPiece, ...]:
    """CoACD's parts as convex hulls, silently (its log level set to errors); degenerate (flat) hulls dropped."""
    import coacd

    coacd.set_log_level("error")
    try:
        out = coacd.run_coacd(
            coacd.Mesh(np.ascontiguousarray(part.vertices, np.float64), np.ascontiguousarray(part.faces, np.int64)),
            threshold=float(s.threshold), max_convex_hull=-1 if s.max_convex_hull is None else s.max_convex_hull,
            preprocess_mode=s.preprocess.value, preprocess_resolution=s.preprocess_resolution,
            resolution=s.resolution, mcts_nodes=s.mcts_nodes, mcts_iterations=s.mcts_iterations,
            mcts_max_depth=s.mcts_max_depth, merge=s.merge, max_ch_vertex=s.max_ch_vertex, seed=s.seed,
        )
    except Exception as e:  # a third-party C++ library: any failure means "cannot decompose"
        raise GeometryError(f"{label}: CoACD failed ({type(e).__name__}: {str(e)[:200]})") from None
    pieces = []
    for verts, _ in out:
        try:
            piece = hull_piece(np.asarray(verts, dtype=np.float64), label)
        except GeometryError:
            continue  # a flat hull has no volume: nothing of the solid is lost
        if signed_volume(piece.vertices, piece.faces) > 0:
            pieces.append(piece)
    if not pieces:
        raise GeometryError(f"{label}: CoACD gave no convex piece with volume")
    return tuple(pieces)


# ---- cache --------------------------------------------------------------------------------------------------
def _coacd_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("coacd")
    except PackageNotFoundError:
        return "unknown"


def _cache_key(digest: str, settings: DecompositionSettings) -> str:
    key = {"format": CACHE_FORMAT, "mesh_sha256": digest, "settings": settings.to_dict(), "coacd": _coacd_version()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _read_cache(path: Path, part: Part, digest: str, settings: DecompositionSettings):
    """``(pieces, report)`` from a valid cache entry for this mesh and settings; ``None`` for anything else."""
    try:
        d = json.loads(path.read_text())
        if d["format"] != CACHE_FORMAT or d["mesh_sha256"] != digest or d["settings"] != settings.to_dict():
            return None
        pieces = tuple(ConvexPiece.from_dict(p) for p in d["pieces"])
        validate_part(dataclasses.replace(part, pieces=pieces))
        r = d["report"]
        report = DecompositionReport(str(r["method"]), len(pieces), float(r["volume_error"]), float(r["hausdorff"]),
                                     float(r["max_protrusion"]), float(r["seconds"]), True, digest)
        if r["n_pieces"] != len(pieces) or not pieces:
            return None
        return pieces, report
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        return None  # missing, unreadable, corrupt or foreign: rebuilt (GeometryError is a ValueError)


def _write_cache(path: Path, digest: str, settings: DecompositionSettings, pieces, report) -> None:
    """Write the entry atomically (temporary file in the same folder, then rename); a failure to write is not
    an error (the decomposition is still returned), and leaves no partial file."""
    d = {"format": CACHE_FORMAT, "mesh_sha256": digest, "settings": settings.to_dict(),
         "coacd": _coacd_version(), "pieces": [p.to_dict() for p in pieces], "report": report.to_dict()}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as fh:
            tmp = fh.name
            json.dump(d, fh)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


# ---- error report -------------------------------------------------------------------------------------------
def _planes(piece: ConvexPiece) -> np.ndarray:
    """``(F, 4)`` face planes ``(n, o)`` of a convex piece, ``n·x <= o`` inside, ``|n| = 1``."""
    v, f = piece.vertices, piece.faces
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return np.column_stack([n, np.einsum("ij,ij->i", n, v[f[:, 0]])])


def _depth_in(points: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """``(N,)`` how far each point lies inside a convex piece: ``min_k (o_k - n_k·x)`` [m] (< 0 outside)."""
    out = np.empty(len(points))
    for i in range(0, len(points), CHUNK):
        p = points[i:i + CHUNK]
        out[i:i + CHUNK] = (planes[:, 3][None, :] - p @ planes[:, :3].T).min(axis=1)
    return out


def _surface_samples(v: np.ndarray, f: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, 3)`` points uniform over the area of triangles ``f`` of ``v``."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    k = rng.choice(len(f), size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    return (1 - s)[:, None] * a[k] + (s * (1 - r2))[:, None] * b[k] + (s * r2)[:, None] * c[k]


def decomposition_errors(
    part: Part, pieces: tuple[ConvexPiece, ...], rng: np.random.Generator, n_samples: int = 20000
) -> tuple[float, float, float]:
    """How far convex ``pieces`` are from the solid bounded by ``part``'s mesh (module docstring).

    Args:
        part: a closed outward mesh, part frame [m]; pieces: convex pieces in the same frame (non-empty);
        rng: the sampler; n_samples: points per sample set.

    Returns:
        ``(volume_error = vol(U Δ M)/vol(M), hausdorff [m], max_protrusion [m])``, ``U`` the union of the pieces.
    """
    if not pieces:
        raise GeometryError(f"part {part.name!r}: no convex pieces to measure")
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return _errors(part, tuple(pieces), rng, int(n_samples))


def _errors(part: Part, pieces, rng: np.random.Generator, n: int) -> tuple[float, float, float]:
    """``(volume_error, hausdorff [m], max_protrusion [m])`` of the module docstring."""
    import igl
    from scipy.spatial import cKDTree

    planes = [_planes(p) for p in pieces]
    allv = np.concatenate([part.vertices] + [p.vertices for p in pieces])
    lo, hi = allv.min(axis=0), allv.max(axis=0)
    extent = float((hi - lo).max())
    tol, gap = INSIDE_RTOL * extent, GAP_RTOL * extent
    # boundary of the union: piece-surface samples (and vertices) inside no other piece nor across a sliver
    union_pts = []
    per_piece = max(1, n // len(pieces))
    for i, p in enumerate(pieces):
        pts = np.concatenate([_surface_samples(p.vertices, p.faces, per_piece, rng), p.vertices])
        keep = np.ones(len(pts), dtype=bool)
        for j, pl in enumerate(planes):
            if j != i:
                keep &= _depth_in(pts, pl) <= -gap
        union_pts.append(pts[keep])
    u = np.concatenate(union_pts)
    d_u = signed_distance(part, u)
    # mesh surface samples: exact distance to the pieces when outside the union, else to the nearest union sample
    m = np.concatenate([_surface_samples(part.vertices, part.faces, n, rng), part.vertices])
    depth = np.max([_depth_in(m, pl) for pl in planes], axis=0)
    cat_v = np.concatenate([p.vertices for p in pieces])
    offsets = np.cumsum([0] + [len(p.vertices) for p in pieces[:-1]])
    cat_f = np.concatenate([p.faces + o for p, o in zip(pieces, offsets, strict=True)])
    d_m = np.abs(signed_distance((cat_v, cat_f), m))
    d_m[depth > tol] = depth[depth > tol]  # just inside: the depth in the deepest piece (a protrusion over p)
    deep = depth > gap
    if deep.any():
        d_m[deep] = cKDTree(u).query(m[deep])[0]
    hausdorff = float(max(np.abs(d_u).max(), d_m.max()))
    # volume: Monte-Carlo over the padded common bounding box
    pad = BOX_PAD_RTOL * extent
    q = lo - pad + rng.random((n, 3)) * (hi - lo + 2 * pad)
    in_m = igl.fast_winding_number(part.vertices, part.faces, q) > 0.5
    in_u = np.max([_depth_in(q, pl) for pl in planes], axis=0) > 0
    box = float(np.prod(hi - lo + 2 * pad))
    volume_error = box * float(np.mean(in_m != in_u)) / signed_volume(part.vertices, part.faces)
    return volume_error, hausdorff, max(0.0, float(d_u.max()))
