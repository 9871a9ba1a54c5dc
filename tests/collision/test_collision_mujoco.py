"""Differential test: each piece pair's closest contact agrees with MuJoCo's mj_geomDistance on the same pieces."""

import mujoco
import numpy as np
import pytest

from contactkit.collision import CollisionWorld, labelled_contacts
from contactkit.mujoco import MujocoWorld
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

MUJOCO_DISTANCE_TOL = 1e-8
"""MuJoCo's convex distance (its own GJK/EPA) agrees with the pair's smallest contact distance to this [m]."""
MUJOCO_NORMAL_TOL = 1e-5
"""The direction of MuJoCo's closest points agrees with the pair normal to this (per component)."""
MARGIN = 2e-3


@pytest.mark.parametrize(
    ("offset", "rotvec", "n_walls"),
    [
        ([3e-4, 2e-4, 0.005], [0.002, -0.003, 0.1], 6),  # separated from every wall, slightly tilted
        ([1.2e-3, 0.0, 0.005], [0.0, 0.0, 0.0], 5),  # 0.2 mm into the +x wall, the -x wall 2.2 mm away
    ],
)
def test_pair_distances_match_mujoco(offset, rotvec, n_walls):
    scene = peg_in_hole("hexagon", 1e-3)
    pos, quat = scene.target_pos + offset, rotvec_to_quat(np.array(rotvec))
    lc = labelled_contacts(CollisionWorld(scene), pos, quat, MARGIN)
    mj = MujocoWorld(scene)
    mj.set_state(BodyState.at_rest(pos, quat))
    tool_geom = int(np.flatnonzero(mj.tool_geoms)[0])
    pairs = sorted(set(zip(lc.env_body.tolist(), lc.env_piece.tolist(), strict=True)))
    assert len(pairs) == n_walls  # the walls within the margin
    for body, piece in pairs:
        geom = mujoco.mj_name2id(mj.model, mujoco.mjtObj.mjOBJ_GEOM, f"static{body}_piece{piece}")
        fromto = np.zeros(6)
        expected = mujoco.mj_geomDistance(mj.model, mj.data, geom, tool_geom, 0.05, fromto)
        mine = (lc.env_body == body) & (lc.env_piece == piece)
        closest = np.argmin(np.where(mine, lc.contacts.distances, np.inf))
        assert lc.contacts.distances[closest] == pytest.approx(expected, abs=MUJOCO_DISTANCE_TOL)
        direction = (fromto[3:] - fromto[:3]) / expected  # env → tool, flipped when penetrating
        assert np.abs(direction / np.linalg.norm(direction) - lc.contacts.normals[closest]).max() <= MUJOCO_NORMAL_TOL
    assert (lc.contacts.distances.min() < 0) == (offset[0] > 1e-3)
