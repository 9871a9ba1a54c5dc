"""The engine's numba depth-network kernel (:mod:`contactkit.engine._kernels_depthnet`) against the torch contract
(:func:`contactkit.depth.query`), and its contact rows.

Tolerances: the kernel runs the network in float64; :func:`contactkit.depth.query` runs the MLP in float32
(features and input scaling in float64). A float32 layer of 64 products carries a relative rounding error of
a few 1e-7 of the pre-activations' magnitude (measured on these nets: ≤ 1.8e-7 × depth_scale on the depth,
≤ 1.2e-6 on the unit normal), so the float32 comparison allows ten times that: ``DEPTH_TOL_F32`` × depth_scale
(absolute, since d crosses 0 at the surface, where a relative error means nothing) and ``NORMAL_TOL_F32``;
the same network evaluated by torch in float64 (:func:`contactkit.depth.network.mlp` on float64 weights,
autograd) must agree to round-off (``*_F64``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from contactkit.depth import save_depth_net
from contactkit.depth.coordinates import Coordinates, features_torch
from contactkit.depth.network import DepthNet, mlp, query
from contactkit.engine import EngineContactModel, EngineWorld
from contactkit.engine._kernels_depthnet import depth_at, depth_contacts
from contactkit.engine.depth_contacts import placed_depth_set
from contactkit.engine.layout import NORMAL_COLS, POINT_COLS, ROW_DISTANCE, ROW_FRICTION, ROW_WIDTH
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.geometry import mass_properties, mesh_sha256
from contactkit.geometry.assembly_parts import paper_hole, paper_peg
from contactkit.geometry.validate import hull_piece
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool
from contactkit.state import BodyState

DEPTH_TOL_F32 = 2e-6
"""|d_numba − d_torch32| / depth_scale (float32 MLP, see the module docstring)."""
NORMAL_TOL_F32 = 1e-5
"""|n_numba − n_torch32| (unit normals; a float32 gradient through two layers)."""
DEPTH_TOL_F64 = 1e-12
NORMAL_TOL_F64 = 1e-10


def random_net(coordinates: Coordinates, rng: np.random.Generator, hidden: int = 64) -> DepthNet:
    """A network with random weights on a domain of about 60 mm (a test object, not a part's distance)."""
    k = {Coordinates.CARTESIAN: 3, Coordinates.CYLINDRICAL: 2, Coordinates.HELICAL: 4}[coordinates]
    lo = {Coordinates.CARTESIAN: [-0.03, -0.03, -0.02], Coordinates.CYLINDRICAL: [0.0, -0.02],
          Coordinates.HELICAL: [0.0, -1.0, -1.0, -0.02]}[coordinates]
    hi = {Coordinates.CARTESIAN: [0.03, 0.03, 0.04], Coordinates.CYLINDRICAL: [0.03, 0.04],
          Coordinates.HELICAL: [0.03, 1.0, 1.0, 0.04]}[coordinates]
    shapes = [(hidden, k), (hidden,), (hidden, hidden), (hidden,), (1, hidden), (1,)]
    fan = [k, k, hidden, hidden, hidden, hidden]
    weights = tuple(rng.normal(size=s) / math.sqrt(f) for s, f in zip(shapes, fan, strict=True))
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    ref = np.cross(axis, rng.normal(size=3))
    ref /= np.linalg.norm(ref)
    return DepthNet(part_name="random", mesh_sha256="0" * 64, coordinates=coordinates,
                    origin=rng.normal(scale=0.005, size=3), axis=axis, ref=ref, pitch=0.005,
                    handedness=int(rng.choice([-1, 1])), feature_lo=np.array(lo, float), feature_hi=np.array(hi, float),
                    depth_scale=2e-3, weights=weights)


def torch64(net: DepthNet, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and unit normal of part-frame points by torch in float64 (autograd), ignoring the domain."""
    x = torch.as_tensor(points, dtype=torch.float64).requires_grad_(True)
    f = features_torch(net.frame, x)
    lo, hi = torch.as_tensor(net.feature_lo), torch.as_tensor(net.feature_hi)
    d = mlp(tuple(torch.as_tensor(w) for w in net.weights), 2 * (f - lo) / (hi - lo) - 1, net.depth_scale)
    (g,) = torch.autograd.grad(d.sum(), x)
    g = g.numpy()
    return d.detach().numpy(), g / np.linalg.norm(g, axis=1, keepdims=True)


@pytest.mark.parametrize("coordinates", list(Coordinates))
def test_kernel_equals_torch(coordinates):
    rng = np.random.default_rng(7)
    net = random_net(coordinates, rng)
    pos, quat = rng.normal(scale=0.05, size=3), rotvec_to_quat(rng.normal(size=3))
    rot = quat_to_mat(quat)
    local = net.origin + rng.uniform(-0.04, 0.04, size=(400, 3))
    world = pos + local @ rot.T
    ds = placed_depth_set([(net, pos, quat, 0.3)], np.zeros((1, 3)))
    depth, normal = np.empty(len(world)), np.empty((len(world), 3))
    depth_at(ds, 0, world, depth, normal)

    d32, n32 = query(net, local)
    far = ~np.isfinite(d32)
    assert 50 < far.sum() < 350, "the points must hit both the domain and outside it"
    np.testing.assert_array_equal(np.isfinite(depth), ~far)
    assert np.abs(depth[~far] - d32[~far]).max() <= DEPTH_TOL_F32 * net.depth_scale
    assert np.abs(normal[~far] - n32[~far] @ rot.T).max() <= NORMAL_TOL_F32
    assert np.all(normal[far] == 0.0)

    d64, n64 = torch64(net, local[~far])
    assert np.abs(depth[~far] - d64).max() <= DEPTH_TOL_F64 * net.depth_scale
    assert np.abs(normal[~far] - n64 @ rot.T).max() <= NORMAL_TOL_F64


def test_contact_rows_follow_the_margin_and_the_motion():
    """Rows: d, the unit world normal, the node's world position, friction; a node beyond the margin enters only
    when its closing speed along the normal can bring it within the margin during the look-ahead."""
    rng = np.random.default_rng(3)
    net = random_net(Coordinates.CYLINDRICAL, rng)
    nodes = net.origin + rng.uniform(-0.02, 0.02, size=(300, 3))
    ds = placed_depth_set([(net, np.zeros(3), np.array([1.0, 0, 0, 0]), 0.4)], nodes)
    depth, normal = np.empty(len(ds.nodes)), np.empty((len(ds.nodes), 3))
    depth_at(ds, 0, ds.nodes, depth, normal)
    out = np.zeros((len(ds.nodes), ROW_WIDTH))
    rot, pos, com = np.eye(3), np.zeros(3), np.zeros(3)
    margin = float(np.quantile(depth[np.isfinite(depth)], 0.3))
    still = np.zeros((2, 6))
    k = depth_contacts(ds, rot, pos, still, com, margin, 0.01, 0.0, out, 0)
    assert k == np.count_nonzero(depth <= margin) > 0
    rows = out[:k]
    chosen = np.flatnonzero(depth <= margin)
    np.testing.assert_allclose(rows[:, ROW_DISTANCE], depth[chosen])
    np.testing.assert_allclose(rows[:, NORMAL_COLS], normal[chosen])
    np.testing.assert_allclose(rows[:, POINT_COLS], ds.nodes[chosen])
    assert np.all(rows[:, ROW_FRICTION] == 0.4)
    moving = np.zeros((2, 6))
    moving[:, :3] = [0.0, 0.0, -1.0]  # 1 m/s down: closing wherever the normal has an upward part
    k2 = depth_contacts(ds, rot, pos, moving, com, margin, 0.01, 1.0, out, 0)
    closing = np.maximum(normal[:, 2], 0.0)
    expect = (depth <= margin) | (depth <= margin + 0.01 * closing)
    assert k2 == np.count_nonzero(expect & np.isfinite(depth)) > k


def cup_net(part, floor: float, hidden: int = 64, scale: float = 1.0) -> DepthNet:
    """A hand-built network of a blind hole (cylindrical): ``d(r, z) = min(R − r, z − floor)`` exactly (two ReLU
    units; tanh is linear to 1e-9 m at these depths with ``scale`` = 1 m), on ``r ≤ R + 2 mm``, ``z`` from 2 mm
    below the floor to 0.1 mm below the hole's top. R is the hole's radius; ``floor`` [m] where its floor is."""
    radius, top = part.meta["hole_apothem"], part.meta["depth"]
    lo, hi = np.array([0.0, floor - 2e-3]), np.array([radius + 2e-3, top - 1e-4])
    half = (hi - lo) / 2.0
    centre, big = lo + half, 1.0  # f = centre + half x̂; unit 0 = z − floor + big (> 0), unit 1 = z − floor + r − R
    w0, b0 = np.zeros((hidden, 2)), np.zeros(hidden)
    w0[0, 1], b0[0] = half[1], centre[1] - floor + big
    w0[1], b0[1] = half, centre[0] + centre[1] - floor - radius
    w1 = np.zeros((hidden, hidden))
    w1[0, 0] = w1[1, 1] = 1.0
    w2 = np.zeros((1, hidden))
    w2[0, :2] = 1.0 / scale, -1.0 / scale
    weights = (w0, b0, w1, np.zeros(hidden), w2, np.array([-big / scale]))
    return DepthNet("cup", mesh_sha256(part.vertices, part.faces), Coordinates.CYLINDRICAL, np.zeros(3),
                    np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), 0.0, 1, lo, hi, scale, weights)


def cup_scene(tmp_path, floor: float, height: float = 0.005) -> Scene:
    """The paper's peg ``height`` [m] above the paper hole's floor, the hole collided through :func:`cup_net`."""
    hole, peg = paper_hole(), paper_peg()
    path = save_depth_net(cup_net(hole, floor), tmp_path / "cup.safetensors")
    ring = np.radians(np.arange(0.0, 360.0, 360.0 / 64))
    disc = 0.024 * np.column_stack([np.cos(ring), np.sin(ring)])
    core = hull_piece(np.concatenate([np.column_stack([disc, np.full(64, z)]) for z in (1e-3, 0.06)]))
    peg = dataclasses.replace(peg, pieces=(core,))  # COAL refuses the 640-gon piece's cap fan
    props = mass_properties(peg, density=2700.0)
    tool = Tool(peg, props.mass, props.com, props.inertia, 0.3, (0.0, 0.0, height))
    return Scene("peg-in-cup", tool, (StaticBody(hole, friction=0.3, depth_model=str(path)),),
                 ImpedanceGains(gravity_compensation=False), workspace_lo=(-0.1, -0.1, -0.05),
                 workspace_hi=(0.1, 0.1, 0.2))


def test_a_depth_static_is_collided_through_its_network_only(tmp_path):
    """The network puts the floor 1 mm above the mesh's (and its convex pieces'): the dropped peg rests on the
    network's floor, to within the projection slop."""
    scene = cup_scene(tmp_path, floor=1e-3)
    world = EngineWorld(scene, WorldParams())
    for _ in range(3):
        state = world.step(np.zeros(6), ActionMode.WRENCH).state
    assert abs(state.pos[2] - 1e-3) < 2e-6
    assert world.stats["raw_contacts"] >= 640  # the tip face's ring (and centre) touch


def test_contact_model_steps_a_depth_scene_as_the_world(tmp_path):
    scene = cup_scene(tmp_path, floor=0.0)
    params = WorldParams()
    world = EngineWorld(scene, params)
    model = EngineContactModel(scene, params, action_mode=ActionMode.WRENCH, n_threads=2)
    start = world.state()
    history = BodyState(*(np.repeat(np.asarray(a)[None, None], 2, axis=0) for a in
                          (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    actions = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0, 0.0, 0.0]])
    states, _ = model.step(history, actions)
    for i in range(2):
        world.reset(start)
        expect = world.step(actions[i], ActionMode.WRENCH).state
        np.testing.assert_allclose(states.pos[i], expect.pos, rtol=0, atol=1e-12)
        np.testing.assert_allclose(states.quat[i], expect.quat, rtol=0, atol=1e-12)


def test_a_network_of_another_mesh_is_refused(tmp_path):
    scene = cup_scene(tmp_path, floor=0.0)
    static = scene.statics[0]
    net = dataclasses.replace(cup_net(static.part, 0.0), mesh_sha256="f" * 64)
    path = save_depth_net(net, tmp_path / "foreign.safetensors")
    foreign = dataclasses.replace(scene, statics=(dataclasses.replace(static, depth_model=str(path)),))
    with pytest.raises(CheckpointError, match="foreign.safetensors"):
        EngineWorld(foreign, WorldParams())


def test_a_start_deep_in_the_network_is_refused(tmp_path):
    """``max_initial_penetration`` (1 mm) is checked with the network's distance: the tip 1.5 mm below its floor."""
    scene = cup_scene(tmp_path, floor=3e-3)
    world = EngineWorld(scene, WorldParams())
    with pytest.raises(InvalidInputError, match="deep in the environment"):
        world.reset(BodyState.at_rest(np.array([0.0, 0.0, 1.5e-3]), np.array([1.0, 0.0, 0.0, 0.0])))
    world.reset(BodyState.at_rest(np.array([0.0, 0.0, 2.5e-3]), np.array([1.0, 0.0, 0.0, 0.0])))  # 0.5 mm: accepted


def test_a_piecewise_set_answers_each_node_once_from_the_piece_that_holds_it():
    """A two-piece :class:`~contactkit.depth.DepthNetSet` in the kernel: every node's row is the one its own piece
    gives alone, a node on the shared axial end is the lower piece's only, and ``inside_domain`` covers both."""
    from contactkit.depth import DepthNetSet
    from contactkit.engine._kernels_depthnet import inside_domain

    rng = np.random.default_rng(11)
    base = dataclasses.replace(random_net(Coordinates.HELICAL, rng), origin=np.zeros(3),
                               axis=np.array([0.0, 0.0, 1.0]), ref=np.array([1.0, 0.0, 0.0]))
    cut = 0.01
    lower = dataclasses.replace(base, feature_hi=np.array([0.03, 1.0, 1.0, cut]))
    upper = dataclasses.replace(random_net(Coordinates.HELICAL, rng), origin=np.zeros(3),
                                axis=np.array([0.0, 0.0, 1.0]), ref=np.array([1.0, 0.0, 0.0]),
                                handedness=base.handedness, feature_lo=np.array([0.0, -1.0, -1.0, cut]))
    nodes = np.column_stack([rng.uniform(-0.02, 0.02, 500), rng.uniform(-0.02, 0.02, 500),
                             rng.uniform(-0.025, 0.045, 500)])
    nodes[0] = [0.01, 0.005, cut]  # on the shared end
    rows = {}
    for name, net in (("set", DepthNetSet((upper, lower))), ("lower", lower), ("upper", upper)):
        ds = placed_depth_set([(net, np.zeros(3), np.array([1.0, 0, 0, 0]), 0.4)], nodes)
        out = np.zeros((len(ds.nodes), ROW_WIDTH))
        k = depth_contacts(ds, np.eye(3), np.zeros(3), np.zeros((2, 6)), np.zeros(3), 1.0, 0.0, 0.0, out, 0)
        rows[name] = out[:k]
        if name == "set":
            assert list(ds.next_net) == [1, -1] and list(ds.prev_net) == [-1, 0]
            inside = [inside_domain(ds, 0, *p) for p in ds.nodes]
    key = lambda r: np.round(r[:, POINT_COLS], 12).tolist()  # noqa: E731
    on_end = np.isclose(rows["upper"][:, POINT_COLS][:, 2], cut, atol=0.0)
    union = np.concatenate([rows["lower"], rows["upper"][~on_end]])
    order_set, order_union = np.lexsort(rows["set"][:, POINT_COLS].T), np.lexsort(union[:, POINT_COLS].T)
    np.testing.assert_array_equal(rows["set"][order_set, :ROW_FRICTION], union[order_union, :ROW_FRICTION])
    assert key(rows["set"]).count([0.01, 0.005, cut]) == 1
    z = ds.nodes[:, 2]
    assert np.array_equal(np.array(inside) & (np.abs(ds.nodes[:, 0]) < 0.02),
                          (z >= -0.02) & (z <= 0.04) & (np.abs(ds.nodes[:, 0]) < 0.02))
