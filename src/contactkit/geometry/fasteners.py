"""Threaded bolts and hexagon nuts with the ISO 68-1 basic profile (data-driven simulation paper §V-A: the
M48 x 5 bolting task with 0.4 mm of play; §V-E, Table II: the ten generalisation pairs).

Frames: a bolt's origin is the centre of its flat bottom face (it stands fixed on the table), axis +z, its
top at ``z = length`` with a 45-degree chamfer down to ``D1 / 2 - p / 16`` so a nut can start. A nut's
origin is the centre of its bottom face, axis +z, top at ``z = thickness``; its hexagon has its flats facing
``+-x`` (the :func:`contactkit.geometry.prism.polygon` orientation, corners at 30 + 60 k degrees).
Nominal pose: the nut frame equal to the bolt frame translated by ``k p`` along z (any whole number of
pitches), or more generally rotated by ``a`` about z and raised by ``k p + handedness p a / 2 pi``: there the
nut's thread is the bolt's, pushed radially outwards by ``play / 2``, so the two never touch and the
normal gap is ``play / 2`` on crests and roots and ``play / 4`` on the flanks (a radial shift meets a
flank, 30 degrees off radial, at ``sin 30``).

Meshes: radial height fields over ``segments`` columns per turn (:mod:`contactkit.geometry.threads`):
every profile corner is a vertex, and the thread region is exactly invariant under the discrete screw
``(theta + 2 pi / N, z + handedness p / N)``. The faceting is the chord sagitta ``r (1 - cos(pi / N))``:
7.2 µm for the bolt and 7.3 µm for the nut's bore at the default ``N = 128`` (M48) — the helical depth
network sees the mesh as a function of ``(r, cos phi, sin phi, z)``, and its accuracy bar is 40 µm
(0.2 x the 0.2 mm radial play), so the faceting must stay well under it; ``N = 64`` (29 µm) would not.
Cost: a thread takes ``8 N`` triangles per turn (two per column for each of the four profile segments), so
the default 60 mm bolt (12 turns) has 13,580 triangles and the 38 mm nut 8,320, more than the paper's
5,008 and 4,696: the paper's counts at these lengths imply ~50 columns per turn, whose sagitta (~45 µm)
exceeds the accuracy bar. Shorter parts (``length``/``thickness``) bring the counts down proportionally.
Ends: at the flat end faces (the bolt's bottom, the nut's two faces) the rim also passes through the points
where the profile's corner rows cross the end plane between columns, so it is the ideal cut, kinks included
(without them the rim's chords would cut the corners and bring the nut's rim ~17 µm closer to the bolt).
The bolt's chamfer zone is meshed as three stacked tubes split at the heights where the cone meets the crest
circle and the root circle (those circles are rims through the corners), and edges follow the lines where the
cone cuts the flanks. Measured (``igl.signed_distance`` of 200,000 random points of the ideal surface to the
M48 mesh): thread region 0 to +7.2 µm (the sagitta; the mesh lies inside), chamfer zone -19.5 to +21 µm
(near the root circle, where the cone-flank kink ends between two columns).

Convex pieces: none (``pieces=()``, ``meta["convex_pieces_missing"] = True``); a thread is not a union of a
few exact convex solids, so the decomposition is left to CoACD (``contactkit.geometry.decompose``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.part import Part
from contactkit.geometry.prism import Shape, cap_faces, check_positive, polygon, side_faces
from contactkit.geometry.threads import ThreadProfile, check_handedness, helical_tube, stack_tubes
from contactkit.geometry.threads import thread_profile as thread_profile

M48_DIAMETER = 0.048
"""Nominal diameter of the paper's bolt and nut [m] (KS B 0201 / ISO M48)."""

M48_PITCH = 0.005
"""Pitch of the paper's M48 thread [m]."""

PAPER_PLAY = 0.0004
"""Diametral play between bolt and nut [m] (the paper's 0.4 mm bolting tolerance): the nut's profile is the
bolt's shifted radially out by ``play / 2``."""

M48_NUT_ACROSS_FLATS = 0.075
"""Across-flats width of the M48 hexagon nut [m] (ISO 4032)."""

M48_NUT_THICKNESS = 0.038
"""Thickness of the M48 hexagon nut [m] (ISO 4032)."""

M48_BOLT_LENGTH = 0.06
"""Length of the bolt [m] (the paper does not give it): the 38 mm nut has ~19 mm (3.8 turns) of full
engagement travel below the chamfer."""

DEFAULT_THREAD_SEGMENTS = 128
"""Columns per turn of a thread mesh (sagitta 7.1 µm at r = 24 mm; module docstring)."""

ISO_DIAMETER_RANGE_M = (1e-3, 0.3)
"""Nominal diameters of ISO 261 metric threads [m], M1 to M300: a diameter outside is not a metric thread (most
often millimetres given for metres: 48 for an M48's 0.048)."""

ISO_PITCH_RANGE_M = (2e-4, 6e-3)
"""Pitches of ISO 261 metric threads [m], from 0.2 mm (M1 fine) to 6 mm (M64 coarse and the largest fine)."""

CHAMFER_BELOW_ROOT = 1.0 / 16.0
"""The bolt's top chamfer ends this fraction of the pitch inside the minor radius ``D1 / 2``."""


@dataclass(frozen=True)
class FastenerSpec:
    """One bolt/nut pair of Table II. Attributes: ``name`` (e.g. ``"narrow-47.2"``), ``group``
    (``"narrow"`` or ``"broad"``), ``diameter`` and ``pitch`` [m]."""

    name: str
    group: str
    diameter: float
    pitch: float


GENERALISATION_PAIRS = tuple(
    FastenerSpec(f"{g}-{d:g}", g, d / 1000.0, p / 1000.0)
    for g, d, p in (
        ("narrow", 47.2, 5.0), ("narrow", 47.6, 5.0), ("narrow", 48.5, 5.0), ("narrow", 49.0, 5.0),
        ("broad", 39.0, 4.0), ("broad", 42.0, 4.5), ("broad", 45.0, 4.5), ("broad", 52.0, 5.0),
        ("broad", 56.0, 5.5), ("broad", 60.0, 5.5),
    )
)
"""The ten generalisation pairs of the paper's Table II (narrow group at p = 5 mm; broad group)."""


def _sagitta(radius: float, n: int) -> float:
    return radius * (1.0 - math.cos(math.pi / n))


def _check_segments(segments: int) -> int:
    if isinstance(segments, bool) or not isinstance(segments, (int, np.integer)) or not 16 <= segments <= 4096:
        raise InvalidInputError(f"segments (columns per turn) must be an int in [16, 4096], got {segments!r}")
    return int(segments)


def _thread_meta(kind: str, prof: ThreadProfile, n: int, hand: int, faces: np.ndarray) -> dict:
    return {
        "kind": kind, "D": prof.diameter, "p": prof.pitch, "H": prof.height, "D1": prof.minor_diameter,
        "D2": prof.pitch_diameter, "handedness": hand, "handedness_name": "right" if hand == 1 else "left",
        "segments_per_turn": n, "n_triangles": int(len(faces)),
        "major_radius": prof.diameter / 2.0 + prof.radial_offset,
        "minor_radius": prof.minor_diameter / 2.0 + prof.radial_offset,
        "sagitta": _sagitta(prof.diameter / 2.0 + prof.radial_offset, n), "convex_pieces_missing": True,
    }


def bolt(
    diameter: float = M48_DIAMETER,
    pitch: float = M48_PITCH,
    length: float = M48_BOLT_LENGTH,
    *,
    segments: int = DEFAULT_THREAD_SEGMENTS,
    handedness: int = 1,
    name: str | None = None,
) -> Part:
    """A fully threaded rod with the ISO 68-1 external thread (paper §V-A), chamfered at the top.

    Frame (module docstring): bottom centre at the origin, axis +z. The surface is ``r = min(R(u), c(z))``
    with ``R`` the basic profile (:func:`contactkit.geometry.threads.thread_profile`), phase
    ``u = (z - handedness p theta / 2 pi) mod p`` and the 45-degree chamfer cone
    ``c(z) = D1 / 2 - p / 16 + (length - z)``.

    Args:
        diameter: major diameter ``D`` [m]; pitch: ``p`` [m]; length: [m], at least ``2 p`` plus the chamfer.
        segments: columns per turn ``N``; handedness: +1 right-hand (the default, ISO), -1 left-hand.
        name: part name; default ``"bolt(M<D in mm>x<p in mm>)"``, with ``-LH`` for a left-hand thread.

    Returns:
        :class:`Part` with no convex pieces; ``meta`` holds kind ``"bolt"``, D, p, H, D1, D2, play (0),
        handedness, length, chamfer_top_radius, chamfer_start_z, segments_per_turn, n_triangles,
        major/minor radius, sagitta, convex_pieces_missing.

    Raises:
        InvalidInputError: non-positive sizes, a bolt too short for its chamfer, bad segments or handedness.
    """
    prof = thread_profile(diameter, pitch)
    length = check_positive("bolt length", length)
    n, hand = _check_segments(segments), check_handedness(handedness)
    r_top = prof.minor_diameter / 2.0 - CHAMFER_BELOW_ROOT * prof.pitch
    z_ch = length - (prof.diameter / 2.0 - r_top)
    if z_ch < 2.0 * prof.pitch:
        raise InvalidInputError(f"bolt length {length:g} m is too short: the thread below the chamfer must span "
                                f">= 2 pitches, i.e. length >= {2 * prof.pitch + length - z_ch:g} m")
    z_root = length - (prof.minor_diameter / 2.0 - r_top)  # the cone meets the root circle
    clip = lambda z: r_top + (length - z)  # noqa: E731
    tube = stack_tubes([helical_tube(prof, n, z_a, z_b, handedness=hand, clip=clip)
                        for z_a, z_b in ((0.0, z_ch), (z_ch, z_root), (z_root, length))])
    nv = len(tube.vertices)
    verts = np.concatenate([tube.vertices, [[0.0, 0.0, 0.0], [0.0, 0.0, length]]])
    faces = np.concatenate([
        tube.faces, cap_faces(tube.bottom, nv, up=False), cap_faces(tube.top, nv + 1, up=True),
    ])
    meta = _thread_meta("bolt", prof, n, hand, faces)
    meta.update({"play": 0.0, "length": length, "chamfer_top_radius": r_top, "chamfer_start_z": z_ch})
    label = name or f"bolt(M{prof.diameter * 1e3:g}x{prof.pitch * 1e3:g}{'' if hand == 1 else '-LH'})"
    return Part(label, verts.astype(np.float64), faces.astype(np.int64), (), meta)


def _annulus_faces(
    inner: np.ndarray, inner_angle: np.ndarray, outer: np.ndarray, outer_angle: np.ndarray, up: bool
) -> np.ndarray:
    """Triangles between an inner ring (angles increasing in ``[0, 2 pi)``, starting at 0) and an outer convex
    ring (both counter-clockwise); each inner vertex joins the outer vertex nearest in angle. Normal +z if
    ``up``."""
    n, m = len(inner), len(outer)
    a_in = np.append(inner_angle, 2.0 * math.pi)
    ang = np.mod(outer_angle, 2.0 * math.pi)
    shifted = np.where(ang == 0.0, 0.0, ang - 2.0 * math.pi)  # in (-2 pi, 0]
    j0 = int(np.argmax(shifted))  # the outer vertex at or just before angle 0
    order = (j0 + np.arange(m + 1)) % m
    a_out = shifted[j0] + np.append(np.mod(ang[order[:-1]] - ang[j0], 2.0 * math.pi), 2.0 * math.pi)
    ii, oo = np.append(inner, inner[0]), outer[order]
    tris, i, j = [], 0, 0
    while i < n or j < m:
        if j == m or (i < n and a_in[i + 1] <= 0.5 * (a_out[j] + a_out[j + 1])):
            tris.append((ii[i], oo[j], ii[i + 1]))
            i += 1
        else:
            tris.append((ii[i], oo[j], oo[j + 1]))
            j += 1
    f = np.asarray(tris, dtype=np.int64)
    return f if up else f[:, [0, 2, 1]]


def nut(
    diameter: float = M48_DIAMETER,
    pitch: float = M48_PITCH,
    play: float = PAPER_PLAY,
    thickness: float = M48_NUT_THICKNESS,
    across_flats: float = M48_NUT_ACROSS_FLATS,
    *,
    segments: int = DEFAULT_THREAD_SEGMENTS,
    handedness: int = 1,
    name: str | None = None,
) -> Part:
    """A hexagon nut with the ISO 68-1 internal thread shifted radially out by ``play / 2`` (paper §V-A).

    Frame and nominal pose on a :func:`bolt`: module docstring. The bore is ``r = R(u) + play / 2`` (same
    profile and phase as the bolt), the outside a regular hexagon of ``across_flats`` from ``z = 0`` to
    ``thickness``; the end faces are flat annuli (no countersink: the bolt's chamfer starts the nut).

    Args:
        diameter, pitch: of the mating bolt [m]; play: diametral play [m], > 0; thickness, across_flats: [m]
            (``across_flats > 1.05 (diameter + play)``). segments, handedness, name: as in :func:`bolt`.

    Returns:
        :class:`Part` with no convex pieces; ``meta`` holds kind ``"nut"``, D, p, H, D1, D2, play, handedness,
        thickness (also as length), across_flats, segments_per_turn, n_triangles, major/minor radius of the
        bore (the bolt's plus ``play / 2``), sagitta, convex_pieces_missing.

    Raises:
        InvalidInputError: non-positive sizes, a hexagon too small for the bore, bad segments or handedness.
    """
    play = check_positive("nut play", play)
    prof = thread_profile(diameter, pitch, radial_offset=play / 2.0)
    thickness = check_positive("nut thickness", thickness)
    across_flats = check_positive("nut across_flats", across_flats)
    if across_flats <= 1.05 * (prof.diameter + play):
        raise InvalidInputError(f"nut across_flats {across_flats:g} m must exceed 1.05 x (diameter + play) = "
                                f"{1.05 * (prof.diameter + play):g} m")
    n, hand = _check_segments(segments), check_handedness(handedness)
    tube = helical_tube(prof, n, 0.0, thickness, handedness=hand, outward=False)
    nv = len(tube.vertices)
    hexagon = polygon(Shape.HEXAGON, across_flats / 2.0)
    verts = np.concatenate([tube.vertices, np.column_stack([hexagon, np.zeros(6)]),
                            np.column_stack([hexagon, np.full(6, thickness)])])
    hb, ht = nv + np.arange(6), nv + 6 + np.arange(6)
    hex_angle = np.arctan2(hexagon[:, 1], hexagon[:, 0])
    faces = np.concatenate([
        tube.faces, side_faces(hb, ht),
        _annulus_faces(tube.bottom, tube.bottom_angle, hb, hex_angle, up=False),
        _annulus_faces(tube.top, tube.top_angle, ht, hex_angle, up=True),
    ])
    meta = _thread_meta("nut", prof, n, hand, faces)
    meta.update({"play": play, "thickness": thickness, "length": thickness, "across_flats": across_flats})
    label = name or f"nut(M{prof.diameter * 1e3:g}x{prof.pitch * 1e3:g}{'' if hand == 1 else '-LH'})"
    return Part(label, verts.astype(np.float64), faces.astype(np.int64), (), meta)


def screw_pose(pitch: float, angle: float, *, z0: float = 0.0, handedness: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Pose of a nut frame in its bolt's frame after screwing it by ``angle`` [rad] (counter-clockwise seen from
    +z; for a right-hand thread that raises it) from height ``z0`` [m] with no turn.

    With ``z0`` a whole number of pitches this is the nominal fit of the module docstring: the nut's thread is
    the bolt's pushed out by ``play / 2``. Returns ``(position (3,) [m], quaternion (4,) w, x, y, z)``:
    rotation ``angle`` about +z, translation ``z0 + handedness pitch angle / 2 pi`` along +z.
    """
    pitch = check_positive("pitch", pitch)
    hand = check_handedness(handedness)
    a, z0 = float(angle), float(z0)
    if not (math.isfinite(a) and math.isfinite(z0)):
        raise InvalidInputError(f"screw_pose: angle {angle!r} and z0 {z0!r} must be finite")
    pos = np.array([0.0, 0.0, z0 + hand * pitch * a / (2.0 * math.pi)])
    return pos, np.array([math.cos(a / 2.0), 0.0, 0.0, math.sin(a / 2.0)])


def fastener_pair(
    diameter: float, pitch: float, play: float = PAPER_PLAY, *, segments: int = DEFAULT_THREAD_SEGMENTS
) -> tuple[Part, Part]:
    """``(bolt, nut)`` of one Table II pair (paper §V-E): right-hand, ``play`` [m] as for the M48 pair.

    Sizes scale linearly with ``diameter / 48 mm`` from the nominal M48 pair: bolt length 60 mm, nut
    thickness 38 mm and across flats 75 mm (so an M39 nut is 60.9 mm across flats and 30.9 mm thick; ISO 4032
    gives 60 and 31). The pitch is the pair's own.
    """
    check_thread_size(diameter, pitch)
    s = check_positive("diameter", diameter) / M48_DIAMETER
    b = bolt(diameter, pitch, M48_BOLT_LENGTH * s, segments=segments)
    nt = nut(diameter, pitch, play, M48_NUT_THICKNESS * s, M48_NUT_ACROSS_FLATS * s, segments=segments)
    return b, nt


def check_thread_size(diameter: float, pitch: float) -> None:
    """Refuse a thread ``diameter`` or ``pitch`` [m] outside ISO 261 (:data:`ISO_DIAMETER_RANGE_M`,
    :data:`ISO_PITCH_RANGE_M`): InvalidInputError naming the value, the range and, when the value read as millimetres
    would fit, the value in metres to give instead."""
    for label, value, (lo, hi) in (("diameter", diameter, ISO_DIAMETER_RANGE_M),
                                   ("pitch", pitch, ISO_PITCH_RANGE_M)):
        v = check_positive(label, value)
        if not lo <= v <= hi:
            hint = f"; if {v:g} is millimetres, give {v * 1e-3:g} [m]" if lo <= v * 1e-3 <= hi else ""
            raise InvalidInputError(f"thread {label} {v:g} m is outside ISO 261 metric threads ({lo:g} to {hi:g} m)"
                                    f"{hint}")
