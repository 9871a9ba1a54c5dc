"""Convex decomposition of a non-convex part with CoACD, cached on disk, with a report of its error.

Collision detection (COAL, MuJoCo) handles unions of convex pieces only; a part read from a mesh file that is
not convex (a slot, a nut, a connector housing) has no pieces until it is decomposed here (issue 16, part 1;
the tight-tolerance paper's §III-A baseline "decompose the mesh into convex parts"). CoACD (Wei et al. 2022,
``coacd.run_coacd``) cuts the solid along planes chosen by a tree search until every part's concavity is below
``threshold``; each part's convex hull becomes a :class:`ConvexPiece` (part frame).

A convex part needs no search: its one piece is its hull, and CoACD is not run.

Cache: one JSON file per (mesh, settings, CoACD version) under ``cache_dir``, named by the SHA-256 of
``mesh_sha256(part.vertices, part.faces)``, the settings and the CoACD version; written atomically (a temporary
file renamed into place). A cache entry is used only when it parses, names the same mesh hash and settings, every
piece passes :func:`validate_part` (a closed convex solid) and lies within the part's bounding box (to
``CACHE_BOX_RTOL``); anything else is ignored and rebuilt. No pickle.

Error report (:class:`DecompositionReport`): :mod:`contactkit.geometry.decomposition_error`, with
``settings.n_samples`` points drawn by a generator seeded with ``settings.seed``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.files import read_bounded, write_atomic
from contactkit.geometry.decomposition_error import decomposition_errors
from contactkit.geometry.part import ConvexPiece, Part, mesh_sha256
from contactkit.geometry.validate import (
    check_self_intersections,
    hull_piece,
    is_convex,
    signed_volume,
    validate_part,
)

CACHE_FORMAT = 1
"""Version of the cache files' layout; part of the cache key."""

CACHE_BOX_RTOL = 1e-3
"""A cached piece reaching beyond the part's bounding box by more than this fraction of its extent is not
trusted (CoACD's hulls are spanned by points of the part)."""

DEFAULT_CACHE_DIR = Path("~/.cache/contactkit/coacd")
"""Where the command line keeps decompositions (``decompose`` itself caches only where it is told to)."""

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
        threshold: CoACD's concavity threshold, in its normalised units (the part scaled to a unit box), in
            (0, 1]: a piece is cut again while its concavity exceeds it (CoACD's default 0.05). Measured at 0.02:
            the square ``slot()`` sticks out 24 µm into its hole, hexagonal and 64-gon holes 0.55-0.7 mm, a hex
            nut's 24-gon bore 0.24 mm; 0.01 halves or better at 2-4x the time. A fit whose clearance is below
            :attr:`DecompositionReport.max_protrusion` jams on the pieces.
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
    """What :func:`decompose` did and how far its pieces are from the mesh
    (:mod:`contactkit.geometry.decomposition_error`).

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
    """The part with its convex pieces replaced by a convex decomposition of its mesh (issue 16, part 1: the pieces
    MuJoCo and COAL collide; the tight-tolerance paper's §III-A convex-decomposition baseline).

    Args:
        part: a closed, outward, valid solid (:func:`validate_part`) whose surface does not pass through
            itself (:func:`check_self_intersections`); vertices in the part frame [m]. Its existing pieces are
            ignored.
        settings: CoACD parameters and the report's sampling (:class:`DecompositionSettings`); ``None``: defaults.
        cache_dir: folder of cached decompositions (created if missing; ``~`` expanded); ``None``: no cache. The
            command line uses :data:`DEFAULT_CACHE_DIR`.

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
        errors = decomposition_errors(part, pieces, np.random.default_rng(settings.seed), settings.n_samples)
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


MAX_CACHE_ENTRY_BYTES = 256 * 2**20
"""Largest decomposition cache entry read [bytes] (as a mesh file's limit: the pieces hold fewer vertices than the
mesh); a larger entry, or one that is not a regular file, is ignored and rebuilt."""


def _cache_key(digest: str, settings: DecompositionSettings) -> str:
    key = {"format": CACHE_FORMAT, "mesh_sha256": digest, "settings": settings.to_dict(), "coacd": _coacd_version()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _read_cache(path: Path, part: Part, digest: str, settings: DecompositionSettings):
    """``(pieces, report)`` from a valid cache entry for this mesh and settings; ``None`` for anything else."""
    try:
        d = json.loads(read_bounded(path, MAX_CACHE_ENTRY_BYTES, GeometryError).decode("utf-8"))
        if d["format"] != CACHE_FORMAT or d["mesh_sha256"] != digest or d["settings"] != settings.to_dict():
            return None
        pieces = tuple(ConvexPiece.from_dict(p) for p in d["pieces"])
        validate_part(dataclasses.replace(part, pieces=pieces))
        r = d["report"]
        report = DecompositionReport(str(r["method"]), len(pieces), float(r["volume_error"]), float(r["hausdorff"]),
                                     float(r["max_protrusion"]), float(r["seconds"]), True, digest)
        lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
        margin = CACHE_BOX_RTOL * float((hi - lo).max())
        outside = any(((p.vertices < lo - margin) | (p.vertices > hi + margin)).any() for p in pieces)
        if r["n_pieces"] != len(pieces) or not pieces or outside:
            return None
        return pieces, report
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        return None  # missing, unreadable, corrupt or foreign: rebuilt (GeometryError is a ValueError)


def _write_cache(path: Path, digest: str, settings: DecompositionSettings, pieces, report) -> None:
    """Write the entry atomically (temporary file in the same folder, then rename); a failure to write is not
    an error (the decomposition is still returned), and leaves no partial file."""
    d = {"format": CACHE_FORMAT, "mesh_sha256": digest, "settings": settings.to_dict(),
         "coacd": _coacd_version(), "pieces": [p.to_dict() for p in pieces], "report": report.to_dict()}
    try:
        write_atomic(path, json.dumps(d))
    except OSError:
        pass
