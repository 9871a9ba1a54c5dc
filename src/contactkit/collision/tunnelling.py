"""Tunnelling: has the tool passed through a static body during one control step?

A push too hard for the contact (a soft MuJoCo contact, or any contact when the step is long) can carry the tool
through the table: it comes out below, falls for ever, and every later state is meaningless (a 1 kN push on the
0.3 kg peg ended 1.6 km below the table after 20 steps, in MuJoCo and in the engine). Both worlds ask
:func:`find_tunnel` after every control step, with the tool's pose at the start and at the end of the step.

Probes are material points of the tool: the centroid (vertex mean) of each of its convex pieces, which lies inside
the tool. A probe's path over the step is taken as the straight segment between its two positions — after the step
is cut into equal parts of at most :data:`MAX_SEGMENT_ANGLE` of rotation each (the pose interpolated linearly in
position and along the rotation's geodesic), so a spinning tool's probes follow their arcs, not the chord: a nut
turning 2 rad in one step on a bolt had the chord of its pieces' centroids cut the bolt's core. Then a static
convex piece ``{x : m·x ≤ o}`` (world frame) has been tunnelled through when

* the path starts and ends outside the piece but runs more than :data:`CHORD_TOL` inside it (it passed through), or
* the path ends inside the piece beyond its middle: deeper below the reference face than half the piece's
  thickness along that face's normal. The reference face is the one the path entered through, or, for a probe
  already inside at the start, the face nearest to it then. Past the middle a contact pushes the tool out of the
  far side; short of it the tool is (deeply) penetrating, which soft contacts allow.

A probe inside the tool cannot reach a static piece without the tool's surface penetrating by at least the
probe's depth in its own piece (several millimetres to centimetres for the tasks' parts), so a tool resting or
pressing on a surface is never taken for a tunnelled one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.collision.coal_shapes import PAD_PLANE_OFFSET, face_planes
from contactkit.rotations import mat_to_quat, quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat
from contactkit.scene import Scene

CHORD_TOL = 1e-3
"""A probe's path must run this far [m] through a static piece to count as passing through it (grazing an edge
does not)."""

MAX_SEGMENT_ANGLE = 0.1
"""Most rotation [rad] of one straight part of a probe's path: the chord of a 0.1 rad arc lies within
``r (1 − cos 0.05) ≈ 1.25e-3 r`` of it (44 µm at the 35 mm radius of an M48 nut's pieces), far below
:data:`CHORD_TOL`."""


@dataclass(frozen=True)
class TunnelGuard:
    """What :func:`find_tunnel` needs of a scene, built once per world by :meth:`of`.

    Attributes:
        probes: ``(N, 3)`` tool-frame probe points (centroids of the tool's convex pieces) [m].
        planes: ``(P, F, 4)`` face planes ``(m, o)`` of the static pieces, world frame, ``m·x ≤ o`` inside [m];
            padded with rows ``m = 0``, ``o = PAD_PLANE_OFFSET``.
        thickness: ``(P, F)`` extent of each piece along each face's inward normal [m] (``inf`` on padding rows).
        labels: ``P`` names of the pieces for messages, e.g. ``"static 0 'table' piece 0"``.
    """

    probes: np.ndarray
    planes: np.ndarray
    thickness: np.ndarray
    labels: tuple[str, ...]

    @staticmethod
    def of(scene: Scene) -> TunnelGuard:
        """The guard of ``scene``: its tool's probes and its statics' face planes at their world poses."""
        probes = np.array([piece.vertices.mean(axis=0) for piece in scene.tool.part.pieces], dtype=np.float64)
        planes, thickness, labels = [], [], []
        for b, body in enumerate(scene.statics):
            rot = quat_to_mat(body.quat)
            for p, piece in enumerate(body.part.pieces):
                label = f"static {b} '{body.part.name}' piece {p}"
                verts = piece.vertices @ rot.T + body.pos
                rows = face_planes(verts, piece.faces, label)
                planes.append(rows)
                thickness.append((rows[:, 3][:, None] - rows[:, :3] @ verts.T).max(axis=1))
                labels.append(label)
        width = max((len(rows) for rows in planes), default=1)
        stacked = np.zeros((len(planes), width, 4))
        stacked[:, :, 3] = PAD_PLANE_OFFSET
        thick = np.full((len(planes), width), np.inf)
        for i, (rows, t) in enumerate(zip(planes, thickness, strict=True)):
            stacked[i, : len(rows)], thick[i, : len(rows)] = rows, t
        return TunnelGuard(probes, stacked, thick, tuple(labels))


def _entry_interval(s0: np.ndarray, s1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parameters ``t_in, t_out`` ``(P, N)`` of the part of each segment inside each piece (``t_in ≥ t_out``: no
    part), and the index ``(P, N)`` of the face the segment enters through, from the separations ``s0, s1``
    ``(P, F, N)`` of its ends (``m·x − o``: positive outside)."""
    ds = s1 - s0
    with np.errstate(divide="ignore", invalid="ignore"):
        t_cross = np.where(ds != 0.0, -s0 / ds, 0.0)
    entering = np.where(ds < 0.0, t_cross, np.where((ds == 0.0) & (s0 > 0.0), np.inf, -np.inf))
    leaving = np.where(ds > 0.0, t_cross, np.inf)
    t_in = np.maximum(entering.max(axis=1), 0.0)
    t_out = np.minimum(leaving.min(axis=1), 1.0)
    return t_in, t_out, entering.argmax(axis=1)


def find_tunnel(guard: TunnelGuard, pos0, rot0, pos1, rot1) -> str | None:
    """How the tool tunnelled through a static piece between two poses, or ``None`` (module docstring).

    Args:
        guard: the scene's :class:`TunnelGuard`.
        pos0, rot0: ``(3,)`` position [m] and ``(3, 3)`` rotation matrix (tool to world) of the tool frame at
            the start of the step.
        pos1, rot1: the same at the end of the step.

    Returns:
        a one-line description naming the static piece and the tool probe, or ``None``.
    """
    if not len(guard.labels):
        return None
    seps, probes = _separations(guard, _path(pos0, rot0, pos1, rot1))
    if all(np.minimum(a, b).max(axis=1).min() > 0.0 for a, b in zip(seps[:-1], seps[1:], strict=True)):
        return None  # every part of the path has both ends outside one face of every piece: no contact
    parts = len(seps) - 1
    inside, first = np.zeros(seps[0][:, 0].shape), np.full(seps[0][:, 0].shape, np.inf)  # (P, N)
    for k in range(parts):
        t_in, t_out, _ = _entry_interval(seps[k], seps[k + 1])
        inside += np.maximum(t_out - t_in, 0.0) * np.linalg.norm(probes[k + 1] - probes[k], axis=1)
        first = np.where(np.isinf(first) & (t_out > t_in), (k + t_in) / parts, first)
    s0, s1 = seps[-2], seps[-1]
    _, _, entry = _entry_interval(s0, s1)
    out_start, out_end = seps[0].max(axis=1) > 0.0, s1.max(axis=1) > 0.0  # (P, N)
    through = out_start & out_end & (inside > CHORD_TOL)
    ref = np.where(s0.max(axis=1) > 0.0, entry, s0.argmax(axis=1))  # (P, N) reference face of the last part
    depth = -np.take_along_axis(s1, ref[:, None, :], axis=1)[:, 0]
    half = 0.5 * np.take_along_axis(guard.thickness, ref, axis=1)
    past_middle = ~out_end & (depth > half)
    hit = np.argwhere(through | past_middle)
    if not len(hit):
        return None
    piece, probe = (int(i) for i in hit[np.argmin(first[hit[:, 0], hit[:, 1]])])  # the first piece on the path
    if through[piece, probe]:
        how = f"passed through it ({inside[piece, probe] * 1e3:.3g} mm inside)"
    else:
        how = f"is {depth[piece, probe] * 1e3:.3g} mm inside it, past its middle"
    return f"the tool tunnelled into {guard.labels[piece]}: the centroid of tool piece {probe} {how}"


def _path(pos0, rot0, pos1, rot1) -> list[tuple[np.ndarray, np.ndarray]]:
    """Poses (position [m], rotation matrix) along the step: its two ends and, when it turns more than
    :data:`MAX_SEGMENT_ANGLE`, equally spaced poses between them (position linear, rotation along the geodesic)."""
    pos0, pos1 = np.asarray(pos0, dtype=np.float64), np.asarray(pos1, dtype=np.float64)
    rot0, rot1 = np.asarray(rot0, dtype=np.float64), np.asarray(rot1, dtype=np.float64)
    q0 = mat_to_quat(rot0)
    turn = quat_to_rotvec(quat_mul(quat_conj(q0), mat_to_quat(rot1)))
    parts = max(1, int(np.ceil(np.linalg.norm(turn) / MAX_SEGMENT_ANGLE)))
    middle = [(pos0 + t * (pos1 - pos0), quat_to_mat(quat_mul(q0, rotvec_to_quat(t * turn))))
              for t in np.arange(1, parts) / parts]
    return [(pos0, rot0), *middle, (pos1, rot1)]


def _separations(guard: TunnelGuard, poses) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per pose: the probes' separations ``m·x − o`` ``(P, F, N)`` from every static face (positive outside) and
    their world positions ``(N, 3)``."""
    normals, offsets = guard.planes[..., :3], guard.planes[..., 3:]
    probes = [pos + guard.probes @ rot.T for pos, rot in poses]
    return [normals @ p.T - offsets for p in probes], probes
