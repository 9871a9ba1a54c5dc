"""Scenes for the engine-world tests: a box tool over the table, a peg in its slot, and their helpers."""

from __future__ import annotations

import numpy as np

from contactkit.collision import CollisionWorld, labelled_contacts
from contactkit.geometry import box, mass_properties
from contactkit.scene import ImpedanceGains, Scene, Tool
from contactkit.tasks.scenes import table

G = 9.81
BOX_SIZE = (0.08, 0.06, 0.03)
"""Full extents of the test box [m]."""


def box_scene(mass: float = 1.0, friction: float = 0.4, gravity_compensation: bool = False,
              sensor_quat=(1.0, 0.0, 0.0, 0.0), height: float = 0.01) -> Scene:
    """A box tool (frame at its centre) ``height`` [m] above the table top ``z = 0``."""
    part = box(BOX_SIZE, name="tool-box")
    props = mass_properties(part, mass=mass)
    tool = Tool(part, props.mass, props.com, props.inertia, friction, (0.0, 0.0, BOX_SIZE[2] / 2 + height),
                sensor_quat=sensor_quat)
    return Scene("box-on-table", tool, (table(friction),),
                 ImpedanceGains(gravity_compensation=gravity_compensation),
                 workspace_lo=(-0.2, -0.2, -0.01), workspace_hi=(0.2, 0.2, 0.2))


def min_gap(scene: Scene, pos, quat) -> float:
    """Smallest signed distance [m] of the tool to the environment by COAL (independent of the engine)."""
    found = labelled_contacts(CollisionWorld(scene), np.asarray(pos, float), np.asarray(quat, float), 1e-3)
    return float(found.contacts.distances.min()) if found.contacts.count else np.inf
