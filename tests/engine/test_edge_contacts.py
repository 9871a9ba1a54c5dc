"""Edge contacts (issue 34 part 6): edge–face and edge–edge contacts between convex pieces, and the end-of-step
penetration check on the pieces' geometry.

Oracles: a box's edge (45° about y) across a narrow beam — no vertex of either inside the other — has its contacts
analytically at the beam's top edges, normal +z, depth the press; two boxes' edges crossed at right angles touch at
one point along their common normal. The engine then holds the pressed edge within the slop with the contact force
balancing the controller's push, and refuses a state that hides an edge inside a static.
"""

import numpy as np
import pytest

from contactkit.collision import CollisionWorld
from contactkit.engine import EngineWorld
from contactkit.engine._kernels_contacts import node_contacts
from contactkit.engine._kernels_edges import edge_contacts, segment_minimum
from contactkit.engine._kernels_geometry import contact_geometry, raw_capacity
from contactkit.engine.world import MAX_PENETRATION
from contactkit.errors import InvalidInputError
from contactkit.geometry import box, mass_properties
from contactkit.model import ActionMode
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool
from contactkit.state import BodyState

from ._world_scenes import min_gap

TOOL_SIZE = (0.04, 0.06, 0.04)
"""The tool box [m]; turned 45° about y its lowest feature is an edge along y, ``HALF_DIAG`` below its centre."""
HALF_DIAG = 0.02 * np.sqrt(2.0)
BEAM_WIDTH = 0.02
"""The beam's width along y [m]: the tool's 60 mm edge overhangs it on both sides."""
PRESS = 1e-4
"""How deep the posed tool's edge is in the beam [m]."""
GEOMETRY_TOL = 1e-12
"""Analytic contact depths, points and normals hold to rounding [m]."""
SLOP_TOL = 5e-6
"""The pressed edge stays within this of the beam's surface [m] (projection slop 1 µm, margin 20 µm)."""
FORCE_RTOL = 0.02
"""The mean contact force balances the controller's push and the weight to this fraction."""
TOOL_QUAT = rotvec_to_quat(np.array([0.0, np.pi / 4, 0.0]))


def _scene(beam_size, beam_rotvec=(0.0, 0.0, 0.0), beam_z=None) -> Scene:
    part = box(TOOL_SIZE, name="tool-box")
    props = mass_properties(part, mass=0.5)
    tool = Tool(part, props.mass, props.com, props.inertia, 0.4, (0.0, 0.0, HALF_DIAG + 0.005), TOOL_QUAT)
    z = -beam_size[2] / 2 if beam_z is None else beam_z
    beam = StaticBody(box(beam_size, name="beam"), pos=(0.0, 0.0, z),
                      quat=rotvec_to_quat(np.array(beam_rotvec, dtype=float)), friction=0.4)
    return Scene("edge-on-beam", tool, (beam,), ImpedanceGains(), workspace_lo=(-0.2, -0.2, -0.2),
                 workspace_hi=(0.2, 0.2, 0.2))


def _beam_scene() -> Scene:
    return _scene((0.1, BEAM_WIDTH, 0.02))


def _crossed_scene() -> Scene:
    """A second box turned 45° about x: its top edge runs along x at z = 0, under the tool's edge along y."""
    return _scene((0.1, 0.04, 0.04), beam_rotvec=(np.pi / 4, 0.0, 0.0), beam_z=-HALF_DIAG)


def _contacts(scene, pos, quat, margin=0.0):
    """Node rows and edge rows ``(K, 9)`` of the tool at a pose (all edges)."""
    geo = contact_geometry(CollisionWorld(scene), 2e-3)
    out = np.zeros((raw_capacity(geo), 9))
    rot = quat_to_mat(quat)
    com, still = pos + rot @ scene.tool.com, np.zeros((2, 6))
    k = node_contacts(geo, rot, pos, still, com, margin, 0.0, 0.0,
                      np.full((len(geo.tool_verts), len(geo.env.info)), -1, np.int64),
                      np.full((len(geo.env_verts), len(geo.tool.info)), -1, np.int64), out)
    n = edge_contacts(geo, rot, pos, still, com, margin, 0.0, 0.0, True,
                      np.full((len(geo.edges.env), len(geo.tool.info)), -1, np.int64),
                      np.full((len(geo.edges.tool), len(geo.env.info)), -1, np.int64), out, k)
    return out[:k].copy(), out[k:n].copy()


def test_segment_minimum_finds_the_kink_and_the_flat_range():
    # a slab |x| <= 1, z <= 0; the segment z = -0.5, x from -2 to 2
    planes = np.array([[0.0, 0.0, 1.0, 0.0], [-1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
    t_lo, t_hi, left, right, flat = segment_minimum(planes, 1, 3, -2.0, 0.0, -0.5, 4.0, 0.0, 0.0, 1e-3)
    assert (t_lo, t_hi, left, right, flat) == (0.5, 0.5, 1, 2, -1)  # the sides alone: a kink at x = 0
    t_lo, t_hi, left, right, flat = segment_minimum(planes, 0, 3, -2.0, 0.0, -0.5, 4.0, 0.0, 0.0, 1e-3)
    assert (left, right, flat) == (1, 2, 0)  # along the top from x = -0.5 to 0.5
    assert (t_lo, t_hi) == pytest.approx((0.375, 0.625), abs=1e-15)
    assert segment_minimum(planes, 0, 3, -2.0, 0.0, -0.5, 1.0, 0.0, 0.0, 1e-3)[:4] == (1.0, 1.0, 1, -1)  # end


def test_box_edge_across_a_beam_touches_at_the_beam_edges():
    scene = _beam_scene()
    pos = np.array([0.0, 0.0, HALF_DIAG - PRESS])
    nodes, edges = _contacts(scene, pos, TOOL_QUAT)
    assert len(nodes) == 0  # no vertex of either box inside the other: only edges can see this contact
    assert len(edges) >= 2
    np.testing.assert_allclose(edges[:, 0], -PRESS, atol=GEOMETRY_TOL)
    np.testing.assert_allclose(edges[:, 1:4], np.tile([0.0, 0.0, 1.0], (len(edges), 1)), atol=GEOMETRY_TOL)
    np.testing.assert_allclose(edges[:, 4], 0.0, atol=GEOMETRY_TOL)  # on the tool's edge line x = 0
    np.testing.assert_allclose(edges[:, 6], -PRESS, atol=GEOMETRY_TOL)  # the tool point, PRESS below the top
    assert np.abs(edges[:, 5]).max() == pytest.approx(BEAM_WIDTH / 2, abs=GEOMETRY_TOL)
    assert np.abs(edges[:, 5]).min() >= BEAM_WIDTH / 2 - PRESS - GEOMETRY_TOL  # within PRESS of the beam's edges
    assert edges[:, 5].min() < 0.0 < edges[:, 5].max()  # both sides of the beam
    _, apart = _contacts(scene, pos + [0.0, 0.0, 2 * PRESS], TOOL_QUAT)
    assert len(apart) == 0  # 0.1 mm above, with a zero margin: nothing


def test_crossed_box_edges_touch_at_one_point_along_the_common_normal():
    scene = _crossed_scene()
    for offset in (-PRESS, 3e-5):  # penetrating, and apart within the margin
        pos = np.array([0.002, -0.003, HALF_DIAG + offset])  # the crossing at (0.002, 0, 0): tool edge x = 0.002
        nodes, edges = _contacts(scene, pos, TOOL_QUAT, margin=1e-4)
        assert len(nodes) == 0
        assert len(edges) == 1
        np.testing.assert_allclose(edges[0, :7], [offset, 0.0, 0.0, 1.0, 0.002, 0.0, offset], atol=GEOMETRY_TOL)
        assert edges[0, 0] == pytest.approx(min_gap(scene, pos, TOOL_QUAT), abs=1e-9)  # COAL agrees


def test_engine_holds_a_box_edge_pressed_into_a_beam():
    scene = _beam_scene()
    world = EngineWorld(scene)
    world.reset()
    target = np.array([0.0, 0.0, HALF_DIAG - 0.004, 0.0, np.pi / 4, 0.0])  # the TCP's target 4 mm in the beam
    for _ in range(60):
        result = world.step(target, ActionMode.POSE_TARGET)
    state = result.state
    assert min_gap(scene, state.pos, state.quat) > -SLOP_TOL  # exact (COAL): not through the beam's top edges
    assert state.pos[2] == pytest.approx(HALF_DIAG, abs=SLOP_TOL)
    contacts, impulses = world.contacts()
    assert len(contacts.distances) >= 2
    force = np.einsum("ki,k->i", contacts.normals, impulses[:, 0]) / world.step_dt  # normal impulses only
    weight = np.array([0.0, 0.0, -scene.tool.mass * 9.81])
    assert force[2] > 1.0  # the controller's push [N] (the weight is compensated)
    np.testing.assert_allclose(force + result.applied[:3] + weight, 0.0, atol=FORCE_RTOL * force[2])


def test_a_state_hiding_an_edge_in_a_static_is_refused_or_flagged():
    scene = _crossed_scene()
    world = EngineWorld(scene)
    deep = BodyState.at_rest([0.0, 0.0, HALF_DIAG - 1.5e-3], TOOL_QUAT)  # crossing edges, 1.5 mm: no vertex inside
    with pytest.raises(InvalidInputError, match="1.5 mm|0.0015"):
        world.set_state(deep)
    middle = BodyState.at_rest([0.0, 0.0, HALF_DIAG - 5e-4], TOOL_QUAT)
    world.set_state(middle)  # within max_initial_penetration: accepted, and the check measures it
    problem = world._penetration(middle.pos, quat_to_mat(middle.quat))
    assert problem is not None and "static edge" in problem and "0.5 mm" in problem
    assert "MAX_PENETRATION" in problem and MAX_PENETRATION < 5e-4
    world.step(np.zeros(6), ActionMode.POSE_DELTA)  # the edge contact projects it out in one step
    assert min_gap(scene, world.state().pos, world.state().quat) > -SLOP_TOL


SLOT_CLEARANCE = 5e-4
"""The user scene's radial clearance [m] (issue 34)."""
SLOT_BAR = 5e-5
"""Issue 34's bar: the worst penetration over the episode, measured on the exact geometry [m]."""
SAMPLE_STEP = 1e-5
"""Spacing of the points sampled along every triangle edge of both bodies [m]: a segment's depth in a convex piece
is concave with slope at most 1, so the sampled worst is within this of the true worst."""


def _edge_points(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Points every :data:`SAMPLE_STEP` along every triangle edge of a mesh (its vertices included)."""
    pairs = np.unique(np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1), axis=0)
    out = [verts]
    for a, b in pairs:
        n = int(np.ceil(np.linalg.norm(verts[b] - verts[a]) / SAMPLE_STEP))
        out.append(verts[a] + np.linspace(0.0, 1.0, n + 1)[:, None] * (verts[b] - verts[a]))
    return np.concatenate(out)


def _depth_in(points: np.ndarray, verts: np.ndarray, faces: np.ndarray) -> float:
    """Deepest of ``points`` inside the convex mesh ``(verts, faces)`` [m] (0 when none is inside): the distance
    to the nearest face plane, exact for a convex piece."""
    normal = np.cross(verts[faces[:, 1]] - verts[faces[:, 0]], verts[faces[:, 2]] - verts[faces[:, 0]])
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    near = points[np.all((points > lo) & (points < hi), axis=1)]
    if not len(near):
        return 0.0
    value = near @ normal.T - np.einsum("ij,ij->i", normal, verts[faces[:, 0]])
    return float(max(0.0, -value.max(axis=1).min()))


@pytest.fixture(scope="module")
def slot_scene(tmp_path_factory):
    """A square peg over the issue's non-convex user slot: the slot read from OBJ and decomposed by CoACD."""
    import dataclasses

    from contactkit.geometry import DecompositionSettings, decompose, load_mesh, save_obj
    from contactkit.tasks import peg_in_hole

    scene = peg_in_hole("square", SLOT_CLEARANCE)
    table, slot = scene.statics
    path = save_obj(tmp_path_factory.mktemp("slot") / "slot.obj", slot.part.vertices, slot.part.faces)
    pieces, _ = decompose(load_mesh(path), DecompositionSettings(resolution=500, n_samples=5000))
    return dataclasses.replace(scene, statics=(table, dataclasses.replace(slot, part=pieces)))


def test_random_spline_in_a_decomposed_slot_keeps_edges_out(slot_scene):
    from contactkit.control.policies import RandomSplinePolicy, SplineConfig

    scene = slot_scene
    world = EngineWorld(scene)
    state = world.reset()
    policy = RandomSplinePolicy(SplineConfig(n_steps=100, pos_limit=(0.004, 0.004, 0.006), rot_limit=0.05))
    policy.reset(scene, state, np.random.default_rng(34))
    tool = [(p.vertices, p.faces, _edge_points(p.vertices, p.faces)) for p in scene.tool.part.pieces]
    statics = []
    for body in scene.statics:
        rot = quat_to_mat(body.quat)
        for p in body.part.pieces:
            v = p.vertices @ rot.T + body.pos
            points = _edge_points(v, p.faces)
            inside = np.all((points >= scene.workspace_lo) & (points <= scene.workspace_hi), axis=1)
            statics.append((v, p.faces, points[inside]))  # the table's far edges left out
    worst, touched, wrench = 0.0, 0, np.zeros(6)
    for t in range(100):
        result = world.step(policy.act(t, state, wrench), policy.mode)
        state, wrench = result.state, result.wrench
        rot = quat_to_mat(state.quat)
        for tv, tf, tp in tool:
            world_tool = tp @ rot.T + state.pos
            for sv, sf, sp in statics:
                worst = max(worst, _depth_in(world_tool, sv, sf), _depth_in((sp - state.pos) @ rot, tv, tf))
        touched += world.stats["contacts"] > 0
    assert touched >= 20  # the episode does press the peg on the slot
    assert worst <= SLOT_BAR, worst
