"""Force distribution and contact placement (pushing paper eqs 9–13): the contact forces sum to the required
wrench, respect the friction cone and stay on the face; the exact NNLS optimum matches a brute-force search over
pusher placements; infeasible problems are reported, never NaN; ground friction and eq 11 have closed forms."""

import numpy as np
import pytest
from scipy.optimize import nnls

from contactkit.control.force_distribution import (
    FORCE_REGULARISATION,
    DistributionStatus,
    InfeasibleDistributionError,
    PushedFace,
    TwoTipPusher,
    admissible_centres,
    box_face,
    box_object,
    distribute_forces,
    distribute_trajectory,
    ground_friction_wrench,
    polygon_face,
    polygon_object,
    require_feasible,
    required_wrench,
)
from contactkit.control.icr import AngularProfile, ProfileKind, icr_acceleration, icr_trajectory

WEDGE_FACE = box_face(0.0425, 0.070)  # the 140 mm side of the 140 × 85 mm wedge footprint
PUSHER = TwoTipPusher()  # tips 104 mm apart
MU = 0.5


def contact_wrench(d, face):
    """Σ r_i × F_i and Σ F_i from the contact points and forces, body frame (independent of the solver)."""
    F = d.f_n[:, None] * face.e_n + d.f_t[:, None] * face.e_t
    tau = d.points[:, 0] * F[:, 1] - d.points[:, 1] * F[:, 0]
    return np.concatenate([F.sum(0), [tau.sum()]])


def objective(face, b, t, f_n, f_t):
    F = f_n[:, None] * face.e_n + f_t[:, None] * face.e_t
    pts = face.offset * face.e_n + t[:, None] * face.e_t
    w = np.concatenate([F.sum(0), [(pts[:, 0] * F[:, 1] - pts[:, 1] * F[:, 0]).sum()]])
    r = np.concatenate([np.stack([face.e_n, face.e_t]) @ (b[:2] - w[:2]), [b[2] - w[2]]])
    return r @ r + FORCE_REGULARISATION * (f_n @ f_n + f_t @ f_t)


def brute_force(face, pusher, b, mu, n_grid=801):
    """Best objective over a grid of pusher centres, each solved with the placement fixed (cone edges, NNLS)."""
    lo, hi = admissible_centres(face, pusher)
    best = (np.inf, None)
    R = np.stack([face.e_n, face.e_t])
    bf = np.concatenate([R @ b[:2], b[2:]])
    for tc in np.linspace(lo, hi, n_grid):
        t = tc + np.array([-0.5, 0.5]) * pusher.spacing
        cols, E = [], np.zeros((4, 4))
        for j, (i, s) in enumerate([(0, 1), (0, -1), (1, 1), (1, -1)]):
            cols.append([1.0, s * mu, face.offset * s * mu - t[i]])
            E[2 * i, j], E[2 * i + 1, j] = 1.0, s * mu
        A = np.vstack([np.array(cols).T, np.sqrt(FORCE_REGULARISATION) * E])
        z, _ = nnls(A, np.concatenate([bf, np.zeros(4)]))
        f = E @ z
        val = objective(face, b, t, f[0::2], f[1::2])
        if val < best[0]:
            best = (val, tc)
    return best


def test_forces_sum_to_the_wrench_respect_the_cone_and_stay_on_the_face():
    rng = np.random.default_rng(0)
    n_ok = 0
    for _ in range(200):
        b = np.array([rng.uniform(0.2, 3.0), rng.uniform(-0.8, 0.8), rng.uniform(-0.05, 0.05)])
        d = distribute_forces(b, WEDGE_FACE, PUSHER, MU)
        assert np.isfinite(d.f_n).all() and np.isfinite(d.f_t).all()
        assert (d.f_n >= 0).all() and (np.abs(d.f_t) <= MU * d.f_n + 1e-12).all()
        assert d.t[1] - d.t[0] == pytest.approx(PUSHER.spacing)
        assert WEDGE_FACE.t_min - 1e-12 <= d.t[0] and d.t[1] <= WEDGE_FACE.t_max + 1e-12
        np.testing.assert_allclose(contact_wrench(d, WEDGE_FACE), d.wrench, atol=1e-12)
        np.testing.assert_allclose(d.tau_z.sum(), d.wrench[2], atol=1e-12)
        if d.feasible:
            n_ok += 1
            np.testing.assert_allclose(contact_wrench(d, WEDGE_FACE), b, atol=1e-6)
        else:
            assert np.linalg.norm(d.residual) > 1e-6
    assert n_ok > 100


@pytest.mark.parametrize("b", [[1.0, 0.1, 0.01], [1.0, 0.0, 0.06], [1.0, 0.7, -0.02], [0.5, -0.4, 0.03]])
def test_matches_brute_force_over_placements(b):
    b = np.array(b)
    d = distribute_forces(b, WEDGE_FACE, PUSHER, MU)
    val = objective(WEDGE_FACE, b, d.t, d.f_n, d.f_t)
    best, tc = brute_force(WEDGE_FACE, PUSHER, b, MU)
    assert val <= best + 1e-12  # never worse than any grid placement
    assert val >= best - 1e-6 * max(best, 1e-6)  # and the grid comes close to it
    if best > 1e-4:  # a strictly infeasible case: the optimal placement is unique, the grid finds it
        assert d.centre == pytest.approx(tc, abs=2 * 0.036 / 800)


def test_balanced_split_when_the_placement_allows_it():
    b = np.array([1.0, 0.1, 0.01])
    d = distribute_forces(b, WEDGE_FACE, PUSHER, MU)
    np.testing.assert_allclose(d.f_n, [0.5, 0.5], atol=1e-6)
    # torque balance: n0 Σ F_t − t_c Σ F_n = τ  →  t_c = −(τ + 0.0425 · 0.1)
    assert d.centre == pytest.approx(-(0.01 + 0.0425 * 0.1), abs=1e-6)


def test_rotated_face_and_mirror_give_the_same_forces():
    b = np.array([1.2, 0.3, 0.02])
    base = distribute_forces(b, WEDGE_FACE, PUSHER, MU)
    a = 0.7
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    face = PushedFace(a, WEDGE_FACE.offset, WEDGE_FACE.t_min, WEDGE_FACE.t_max)
    d = distribute_forces(np.concatenate([rot @ b[:2], b[2:]]), face, PUSHER, MU)
    np.testing.assert_allclose(d.f_n, base.f_n, atol=1e-9)
    np.testing.assert_allclose(d.f_t, base.f_t, atol=1e-9)
    mirror = distribute_forces(b * [1, -1, -1], WEDGE_FACE, PUSHER, MU)
    np.testing.assert_allclose(mirror.f_n, base.f_n[::-1], atol=1e-9)
    np.testing.assert_allclose(mirror.f_t, -base.f_t[::-1], atol=1e-9)
    assert mirror.centre == pytest.approx(-base.centre, abs=1e-9)


def test_infeasible_problems_are_reported_not_nan():
    cube = box_face(0.044, 0.044)  # 88 mm face, narrower than the 104 mm tip spacing
    assert admissible_centres(cube, PUSHER) is None
    d = distribute_forces([1.0, 0.0, 0.0], cube, PUSHER, MU)
    assert d.status is DistributionStatus.EMPTY_ADMISSIBLE_SET and not d.feasible
    assert (d.f_n == 0).all() and np.isfinite(d.residual).all()
    with pytest.raises(InfeasibleDistributionError, match="empty_admissible_set"):
        require_feasible(d)
    pull = distribute_forces([-1.0, 0.0, 0.0], WEDGE_FACE, PUSHER, MU)
    assert pull.status is DistributionStatus.WRENCH_UNREACHABLE
    np.testing.assert_allclose(pull.f_n, 0, atol=1e-12)
    side = distribute_forces([1.0, 2.0, 0.0], WEDGE_FACE, PUSHER, MU)  # needs |F_t| > μ F_n
    assert side.status is DistributionStatus.WRENCH_UNREACHABLE
    np.testing.assert_allclose(side.f_t, MU * side.f_n, atol=1e-9)
    assert np.isfinite(side.f_n).all() and side.f_n.sum() > 0
    assert require_feasible(distribute_forces([1.0, 0.0, 0.0], WEDGE_FACE, PUSHER, MU)).feasible


def test_ground_friction_closed_forms():
    m, mu, g, a = 0.3, 0.4, 9.81, 0.044
    obj = box_object(m, a, a, n=64)
    v = np.array([[0.03, -0.04, 0.0]])
    np.testing.assert_allclose(ground_friction_wrench(obj, mu, v, gravity=g)[0],
                               [-mu * m * g * 0.6, mu * m * g * 0.8, 0.0], atol=1e-12)
    # spin about the centre of a square: τ = −μ m g · mean distance = −μ m g a (√2 + ln(1 + √2))/3
    tau = ground_friction_wrench(obj, mu, [[0.0, 0.0, 2.0]], gravity=g)[0]
    np.testing.assert_allclose(tau[:2], 0, atol=1e-12)
    assert tau[2] == pytest.approx(-mu * m * g * a * (np.sqrt(2) + np.log(1 + np.sqrt(2))) / 3, rel=1e-3)
    # at rest: friction opposes the impending motion (the acceleration field)
    rest = ground_friction_wrench(obj, mu, [[0.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]], gravity=g)[0]
    np.testing.assert_allclose(rest, [-mu * m * g, 0.0, 0.0], atol=1e-12)


def test_required_wrench_on_a_frictionless_arc_is_the_centripetal_force():
    obj = box_object(0.35, 0.07, 0.0425)
    start, goal = np.array([0.0, 0.0, 0.0]), np.array([0.15, 0.05, 0.8])
    prof = AngularProfile(ProfileKind.CONSTANT)
    poses, tw = icr_trajectory(start, goal, prof, 2.0, 0.01)
    acc = icr_acceleration(start, goal, prof, 2.0, 0.01)
    b = required_wrench(obj, 0.0, poses, tw, acc)
    from contactkit.control.icr import icr_arc
    arc = icr_arc(start, goal)
    w = 0.8 / 2.0
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    f_world = np.stack([c * b[:, 0] - s * b[:, 1], s * b[:, 0] + c * b[:, 1]], -1)
    np.testing.assert_allclose(f_world, -obj.mass * w**2 * (poses[:, :2] - arc.centre), atol=1e-12)
    np.testing.assert_allclose(b[:, 2], 0, atol=1e-15)


def test_trajectory_distribution_of_a_wedge_push():
    obj = box_object(0.35, 0.0425, 0.07)
    start, goal = np.array([0.0, 0.0, 0.0]), np.array([0.15, 0.02, 0.3])
    prof = AngularProfile(ProfileKind.TRAPEZOIDAL)
    poses, tw = icr_trajectory(start, goal, prof, 4.0, 0.05)
    b = required_wrench(obj, 0.3, poses, tw, icr_acceleration(start, goal, prof, 4.0, 0.05))
    dists = distribute_trajectory(b, WEDGE_FACE, PUSHER, MU)
    assert len(dists) == len(poses)
    for d, bb in zip(dists, b, strict=True):
        assert np.isfinite(d.f_n).all()
        if d.feasible:
            np.testing.assert_allclose(contact_wrench(d, WEDGE_FACE), bb, atol=1e-6)


def test_polygon_helpers_match_the_box_and_the_triangle():
    a, b = 0.044, 0.03
    box = np.array([[-a, -b], [a, -b], [a, b], [-a, b]])
    face = polygon_face(box, 3)  # the -x face, pushed along +x
    ref = box_face(a, b)
    np.testing.assert_allclose([face.normal_angle, face.offset, face.t_min, face.t_max],
                               [ref.normal_angle, ref.offset, ref.t_min, ref.t_max], atol=1e-15)
    tri = np.array([[0.0, 0.0], [0.14, 0.0], [0.0, 0.085]])
    tri = tri - tri.mean(0)
    obj = polygon_object(0.35, 0.35 * (0.14**2 + 0.085**2) / 18, tri, n=60)
    # pressure centre = centroid, to a quarter of the 2.3 mm grid cell (staircase boundary)
    np.testing.assert_allclose(obj.patch_weights @ obj.patch, 0, atol=0.14 / 60 / 4)
    assert len(obj.patch) == pytest.approx(60 * 60 / 2, rel=0.05)
    # each face of the triangle: normal points inward (the centroid is on the inner side) and spans the edge
    for k in range(3):
        f = polygon_face(tri, k)
        assert f.offset < 0 and (f.t_max - f.t_min) == pytest.approx(np.linalg.norm(tri[(k + 1) % 3] - tri[k]))
    with pytest.raises(Exception, match="counter-clockwise"):
        polygon_face(tri[::-1], 0)
