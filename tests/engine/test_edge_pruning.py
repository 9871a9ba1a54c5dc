"""The edge kernels' pruning (issue 34 part 6, cost): the piece-pair rejection of ``_kernels_pairs`` and the side
window of ``_kernels_prism`` never change an answer.

Oracles, on the 64-sided peg over its hole (the pieces the engine's edge queries spend their time on): the bounding
volumes' support is at least every vertex's; a pair called apart — by a measured plane or by the travel bound since
— has every vertex of the other piece beyond that plane by more than the limit (exact, numpy), over a random walk of
poses; the envelope minimum on the window equals the one on all planes for random segments by the peg's side.
"""

import numpy as np
import pytest

from contactkit.collision import CollisionWorld
from contactkit.engine._kernels_edges import _envelope_minimum, segment_minimum
from contactkit.engine._kernels_geometry import INFO_MID, INFO_START, INFO_STOP, contact_geometry
from contactkit.engine._kernels_pairs import pair_cache, pieces_apart, support, track
from contactkit.engine._kernels_prism import WINDOW_CAPACITY, side_window
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.tasks import peg_in_hole

WALK_STEPS = 400
"""Poses of the random walk of the pair test."""
STEP_M, STEP_RAD = 1e-6, 2e-5
"""Standard deviation of a walk step: translation [m] per axis, rotation [rad] per axis."""


@pytest.fixture(scope="module")
def peg():
    """The circle peg-in-hole scene (64 sides, 50 µm clearance), its contact geometry and the pieces' vertices."""
    scene = peg_in_hole("circle", 5e-5, circle_segments=64)
    world = CollisionWorld(scene)
    geo = contact_geometry(world, 2e-3)
    tool_v = [world.tool_verts[t][world.tool_vmask[t]] for t in range(len(world.tool_pieces))]
    env_v = [world.env_verts[e][world.env_vmask[e]] for e in range(len(world.env_pieces))]
    return scene, geo, tool_v, env_v


def test_support_bounds_every_vertex(peg):
    _, geo, tool_v, env_v = peg
    rng = np.random.default_rng(0)
    for bounds, verts in ((geo.edges.tool_bounds, tool_v), (geo.edges.env_bounds, env_v)):
        for i, v in enumerate(verts):
            for n in rng.normal(size=(50, 3)):
                n /= np.linalg.norm(n)
                exact = float((v @ n).max())
                assert support(bounds, i, *n) >= exact - 1e-15
    # tight where it matters: along a side plane's normal the peg's bound exceeds it by the 64-gon's sagitta only
    side = geo.tool.planes[int(geo.tool.info[0, 1]), :3]
    circumradius = float(np.hypot(tool_v[0][:, 0], tool_v[0][:, 1]).max())
    sagitta = circumradius * (1.0 - np.cos(np.pi / 64))
    assert support(geo.edges.tool_bounds, 0, *side) - float((tool_v[0] @ side).max()) <= sagitta + 1e-9


def _exact_gap(geo, plane, t, p, rot, pos, tool_v, env_v):
    """Least distance [m] of the other piece's vertices beyond cached plane ``plane`` (pair cache encoding)."""
    if plane >= 0:
        m, o = geo.env.planes[plane, :3], geo.env.planes[plane, 3]
        return float(((tool_v[t] @ rot.T + pos) @ m - o).min())
    m, o = geo.tool.planes[-plane - 2, :3], geo.tool.planes[-plane - 2, 3]
    return float(((env_v[p] - pos) @ rot @ m - o).min())


def test_pairs_called_apart_are_apart_along_the_walk(peg):
    scene, geo, tool_v, env_v = peg
    cache = pair_cache(len(geo.env.info), len(geo.tool.info))
    rng = np.random.default_rng(34)
    pos = scene.target_pos + np.array([2e-5, 0.0, 0.025])  # the peg 25 mm into its hole
    rotvec = np.array([0.0, 1e-3, 0.0])
    apart = measured = 0
    for _ in range(WALK_STEPS):
        pos = pos + rng.normal(0.0, STEP_M, 3)
        rotvec = rotvec + rng.normal(0.0, STEP_RAD, 3)
        rot = quat_to_mat(rotvec_to_quat(rotvec))
        moved, turned = track(cache.motion, rot, pos)
        limit = float(rng.choice([0.0, 2e-5, 6e-5]))
        for p in range(len(geo.env.info)):
            before = cache.gap[p, 0, 1]
            if pieces_apart(geo.env, geo.tool, geo.edges.env_bounds, geo.edges.tool_bounds, 0, p, rot, pos, limit,
                            cache, moved, turned):
                apart += 1
                measured += cache.gap[p, 0, 1] != before
                assert _exact_gap(geo, cache.plane[p, 0], 0, p, rot, pos, tool_v, env_v) > limit
    assert apart > WALK_STEPS * 40  # most of the 66 pieces are rejected at each pose (the walls within the limit not)
    assert measured < apart / 4  # ... mostly by the travel bound alone


def _envelope(planes, x0, s, t):
    """``F(t)``: the largest plane value [m] at ``x0 + t s`` (all the peg's planes are external)."""
    return float((planes[:, :3] @ (x0 + t * s) - planes[:, 3]).max())


def test_side_window_keeps_the_envelope_minimum(peg):
    _, geo, _, _ = peg
    planes, info = geo.tool.planes, geo.tool.info
    lo, hi = geo.tool_lo[0], geo.tool_hi[0]
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    table, rows = np.empty((WINDOW_CAPACITY, 4)), np.empty(WINDOW_CAPACITY, np.int64)
    rng = np.random.default_rng(7)
    windowed = 0
    for _ in range(3000):
        angle, length = rng.uniform(-np.pi, np.pi), rng.uniform(1e-4, 4e-3)
        radius = half[0] * (1.0 + rng.normal(0.0, 0.02))
        x0 = centre + [radius * np.cos(angle), radius * np.sin(angle), rng.uniform(-1.2, 1.2) * half[2]]
        s = rng.normal(size=3)
        s *= length / np.linalg.norm(s)
        limit = float(rng.choice([0.0, 2e-5, 1e-4]))
        windowed += side_window(planes, info, 0, *x0, *s, table, rows)[0] > 0
        full = segment_minimum(planes, int(info[0, INFO_START]), int(info[0, INFO_MID]), *x0, *s, 1e-3 * length)
        window = _envelope_minimum(planes, info, 0, *x0, *s, 1e-3 * length, limit, table, rows)
        if _envelope(planes, x0, s, full[0]) <= limit:  # a contact: the same minimum, lines and range
            assert window == full
        else:  # none either way
            assert window == full or _envelope(planes, x0, s, window[0]) > limit
    assert windowed > 2500
    assert int(info[0, INFO_MID]) - int(info[0, INFO_START]) == 66 and int(info[0, INFO_STOP]) == 66
