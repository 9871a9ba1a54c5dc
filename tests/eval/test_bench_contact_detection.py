"""Benchmark contact-detection (tight-tolerance paper Table I): its pose sampling (feasible poses inside the
clearance, penetrating ones clearly penetrating, the nut's free play on its thread) and quick runs of ``run``:
on small parts with an untrained network (every key, sane values, COAL agrees with the exact gap), and with the
committed networks of the paper's parts (both detectors agree with the exact gap where it is clear)."""

import math
from pathlib import Path

import numpy as np
import pytest

from contactkit.depth import Coordinates, DepthNet, default_setup, make_frame, save_depth_net
from contactkit.eval import bench_contact_detection as bench
from contactkit.eval import contact_detection_poses as poses
from contactkit.geometry import Shape, matching_slot, mesh_sha256, peg
from contactkit.geometry.fasteners import bolt, nut
from contactkit.rotations import quat_to_mat

KEYS = {"learned_ms_mean", "learned_ms_max", "coal_ms_mean", "coal_ms_max", "speedup", "depth_max_err_m",
        "depth_rms_err_m", "n_triangles"}


def _small_pair():
    p = peg(Shape.CIRCLE, 0.01, 0.02, circle_segments=48)
    return matching_slot(p, 1e-4, 0.012), p


def _small_fasteners():
    b = bolt(0.012, 0.00175, 0.012, segments=32)
    return b, nut(0.012, 0.00175, 4e-4, 0.006, 0.02, segments=32)


def test_tilted_pose_puts_the_axis_through_both_offsets():
    u_lo, u_hi = np.array([2e-5, -1e-5]), np.array([-3e-5, 2e-5])
    pos, quat = poses.tilted_pose(u_lo, u_hi, 0.01, 0.0, 0.03, 0.4, 0.7)
    axis = quat_to_mat(quat)[:, 2]
    assert np.linalg.norm(quat) == pytest.approx(1.0)
    np.testing.assert_allclose(pos, [*u_lo, 0.01], atol=1e-15)  # the section at s_lo = 0 is the origin
    along = np.array([*u_hi, 0.04]) - pos
    np.testing.assert_allclose(np.cross(axis, along), 0.0, atol=1e-15)  # (u_hi, z + s_hi) is on the axis
    assert axis[2] > 0 and np.ptp(quat_to_mat(quat) @ quat_to_mat(quat).T - np.eye(3)) < 1e-12


def test_insertion_poses_are_feasible_or_clearly_penetrating():
    hole, p = _small_pair()
    got = poses.insertion_poses(hole, p, depth=0.012, clearance=1e-4, n=24, penetrating_share=0.25,
                                rng=np.random.default_rng(1))
    assert got.penetrating.sum() == 6
    assert np.all(got.gap[~got.penetrating] >= -poses.FEASIBLE_PENETRATION_M)
    assert np.all(got.gap[got.penetrating] < -0.5 * poses.PENETRATION_RANGE_M[0])
    tips = got.pos[:, 2]
    assert tips.min() > -poses.PENETRATION_RANGE_M[1] - 1e-3 and tips.max() <= 0.012 + 0.01 + 1e-3
    lateral = np.linalg.norm(got.pos[~got.penetrating, :2], axis=1)
    assert lateral.max() <= 1e-4 + 1e-12  # the tip section stays within the clearance
    again = poses.insertion_poses(hole, p, depth=0.012, clearance=1e-4, n=24, penetrating_share=0.25,
                                  rng=np.random.default_rng(1))
    np.testing.assert_array_equal(again.pos, got.pos)


def test_nut_free_play_matches_the_thread_geometry():
    """The nut's thread is the bolt's pushed out by play/2: the flanks (30° off radial) are play/4 apart along
    their normal, so the nut moves play/4 / cos 30° along the axis each way before touching."""
    b, m = _small_fasteners()
    down, up = poses.free_play(b, m, 2 * 0.00175, 0.5 * 0.00175)
    expected = 1e-4 / math.cos(math.radians(30.0))
    assert down == pytest.approx(expected, rel=0.03)
    assert up == pytest.approx(expected, rel=0.03)


def _untrained(part, frame, path: Path) -> Path:
    """A network with random weights over ``part``'s domain (times and keys only; its depth is meaningless)."""
    setup = default_setup(part, frame)
    rng = np.random.default_rng(0)
    k = len(setup.feature_lo)
    weights = (rng.normal(size=(64, k)), np.zeros(64), 0.1 * rng.normal(size=(64, 64)), np.zeros(64),
               0.1 * rng.normal(size=(1, 64)), np.zeros(1))
    net = DepthNet(part.name, mesh_sha256(part.vertices, part.faces), Coordinates(frame.coordinates), frame.origin,
                   frame.axis, frame.ref, frame.pitch, frame.handedness, setup.feature_lo, setup.feature_hi,
                   setup.depth_scale, weights, {})
    return save_depth_net(net, path)


def test_quick_run_on_small_parts_returns_every_key(tmp_path, monkeypatch):
    hole, p = _small_pair()
    b, m = _small_fasteners()
    hole_net = _untrained(hole, make_frame("cylindrical"), tmp_path / "hole.safetensors")
    bolt_net = _untrained(b, make_frame("helical", pitch=0.00175), tmp_path / "bolt.safetensors")

    def insertion(n, rng):
        return poses.insertion_poses(hole, p, depth=0.012, clearance=1e-4, n=n, penetrating_share=0.5, rng=rng)

    def screwing(n, rng):
        return poses.screwing_poses(b, m, z_start=2 * 0.00175, turns=1.5, pitch=0.00175, handedness=1,
                                    radial_play=2e-4, n=n, penetrating_share=0.5, rng=rng)

    small = [bench.Task("peg-in-hole", hole, p, 1e-4, hole_net, insertion),
             bench.Task("bolting", b, m, 2e-4, bolt_net, screwing)]
    monkeypatch.setattr(bench, "tasks", lambda hole_net=None, bolt_net=None: small)
    result = bench.run(quick=True, seed=3)
    assert set(result["tasks"]) == {"peg-in-hole", "bolting"}
    assert result["checkpoints"] == [str(hole_net), str(bolt_net)] and result["torch_threads"] == 1
    for name, r in result["tasks"].items():
        assert KEYS <= set(r), name
        assert r["learned_ms_mean"] > 0 and r["coal_ms_mean"] > 0 and r["learned_ms_max"] >= r["learned_ms_mean"]
        assert r["speedup"] == pytest.approx(r["coal_ms_mean"] / r["learned_ms_mean"])
        assert math.isfinite(r["depth_max_err_m"]) and 0 <= r["depth_rms_err_m"] <= r["depth_max_err_m"]
        assert r["n_poses"] == bench.POSES[True] and r["n_penetrating_poses"] == bench.POSES[True] // 2
        assert r["clear_contact_poses"] >= 1
        assert r["coal_agrees_on_clear"] == r["clear_contact_poses"] + r["clear_free_poses"], name
        assert r["meets_speedup_bar"] == (r["speedup"] >= 8.0)
        assert r["meets_bar"] == (r["meets_speedup_bar"] and r["meets_depth_bar"])
    table = bench.markdown(result)
    assert "peg-in-hole" in table and "bolting" in table and "×" in table


MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.slow
def test_quick_run_with_the_committed_networks():
    """The paper's parts and the committed networks: both detectors find contact at every clearly penetrating
    pose and none at every clearly free one, and every node in the ±0.5 mm band is inside the network's domain."""
    result = bench.run(quick=True, seed=0)
    for name, r in result["tasks"].items():
        assert KEYS <= set(r), name
        assert r["learned_ms_mean"] > 0 and r["coal_ms_mean"] > 0
        assert r["clear_contact_poses"] >= 1
        total = r["clear_contact_poses"] + r["clear_free_poses"]
        assert r["learned_agrees_on_clear"] == total and r["coal_agrees_on_clear"] == total, name
        assert r["band_nodes_missed"] == 0
        # a sanity bound, not the bar (0.2 x clearance: the stored full run reports it)
        assert math.isfinite(r["depth_max_err_m"]) and r["depth_max_err_m"] < r["radial_clearance_m"], name


def test_default_networks_are_the_committed_files_of_the_source_checkout(tmp_path, monkeypatch):
    from contactkit.eval.store import source_root

    monkeypatch.chdir(tmp_path)
    assert bench._net_path(None, "bolting") == source_root() / "models/depth-m48-bolt/pieces/bolt.json"
    monkeypatch.chdir(source_root())
    assert bench._net_path(None, "peg-in-hole") == Path("models/depth-paper-hole/hole.safetensors")
    assert bench._net_path("elsewhere/x.safetensors", "bolting") == Path("elsewhere/x.safetensors")


@pytest.mark.parametrize("hand", [1, -1])
def test_screwing_follows_the_thread(hand):
    """Without play the poses lie on geometry.fasteners.screw_pose's helix (turn a, rise hand·p·a/2π, up to
    whole turns), the nut never touches (gap: the flank gap play/4, less the faceting of 32 columns per turn when
    the columns do not line up), and the nut goes down as it turns."""
    from contactkit.geometry.fasteners import screw_pose

    pitch = 0.00175
    b = bolt(0.012, pitch, 0.012, segments=32, handedness=hand)
    m = nut(0.012, pitch, 4e-4, 0.006, 0.02, segments=32, handedness=hand)
    got = poses.screwing_poses(b, m, z_start=4 * pitch, turns=2.0, pitch=pitch, handedness=hand, radial_play=0.0,
                               n=8, penetrating_share=0.0, rng=np.random.default_rng(2))
    for pos, quat in zip(got.pos, got.quat, strict=True):
        a = 2.0 * math.atan2(quat[3], quat[0])
        ref_pos, ref_quat = screw_pose(pitch, a, z0=4 * pitch, handedness=hand)
        turns = (pos[2] - ref_pos[2]) / pitch
        assert turns == pytest.approx(round(turns), abs=1e-9) and round(turns) in (0, -1, -2)
        np.testing.assert_allclose(pos[:2], 0.0, atol=1e-15)
        np.testing.assert_allclose(quat_to_mat(quat), quat_to_mat(ref_quat), atol=1e-12)
    assert got.pos[:, 2].max() <= 4 * pitch and got.pos[:, 2].min() >= 2 * pitch
    assert np.all(got.gap <= 1.01e-4) and np.all(got.gap > 0.5e-4)  # below play/4 only by the coarse faceting
