"""Peg-in-hole against the quasi-static analysis of a compliantly supported rigid peg (Whitney, "Quasi-static
assembly of compliantly supported rigid parts", J. Dyn. Sys. Meas. Control 104, 1982).

A round peg (diameter ``d``, a fine polygon with a face normal in the tilt plane) enters a hole of diameter
``D`` tilted by ``θ`` about y; the wrist (the impedance controller, its compliance centre at the peg tip)
holds the tilt with stiffness ``K_r``, pulls laterally with ``K_x`` and pushes down with ``F_z``.
Whitney's planar analysis, exact in ``θ`` here:

* two-point contact: the tip corner on one wall and the rim on the opposite side at ``ℓ`` along the peg's
  side, with ``ℓ sin θ + d cos θ = D`` (so it begins at ``ℓ₂ = (D - d cos θ₀)/sin θ₀``);
* going deeper in two-point contact straightens the peg, and sliding needs
  ``F_z ≥ μN_A + N_B (sin θ + μ cos θ)`` with the contact forces from the lateral and moment balance
  (:func:`insertion_force`); the peg stalls at the first ``ℓ`` where the push falls short;
* outcome: *slides in* when no stall occurs before the bottom; a stall *wedges* when ``ℓ/D < μ`` (the two
  friction cones contain the line between the contacts: equilibrium holds under any load) and *jams*
  otherwise (it is the force ratio that holds the peg).

The engine's outcome and stall depth must match on a grid of tilt, clearance and friction. (A rigid model
cannot store the elastic squeeze of a real wedge: pushed harder, the engine's wedged peg slides on, as a
rigid-body solution allows; the analysis' wedge region is where that is not the only solution.)
"""

import math

import numpy as np
import pytest

from contactkit.engine.params import EngineParams
from contactkit.engine.world import EngineWorld
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat
from contactkit.scene import ImpedanceGains
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

RADIUS = 0.01
"""Peg apothem [m] (d = 20 mm)."""
DEPTH = 0.03
K_X = 400.0
"""Lateral (and axial) stiffness of the wrist [N/m]."""
SIDES = 64
SLOP = 1e-7
"""The engine's position-projection slop in these runs [m]: ``ℓ`` moves by ``δD / sin θ`` for a clearance
error ``δD``, so the default 1 µm would blur the two-point depth by up to 0.1 mm at 1°."""
TWO_POINT_TOL = 4.0 * SLOP
"""The stiff-wrist stall matches the two-point geometry once ``D`` is allowed this error [m] (the penetration
the projection leaves at the two contacts)."""
CORNER_FACTOR = 1.0 / math.cos(math.pi / SIDES) ** 2
"""Two-point contact may fall on the polygons' corners, ``π/N`` off the tilt plane, where peg and hole are
wider by ``1/cos(π/N)`` and the tilt seen is ``θ cos(π/N)``: ``ℓ`` grows by up to this factor (0.24 % at 64
sides; the engine's rim contacts sit on those corners)."""
STALL_DEPTH_RTOL = 0.05
"""Stall depths agree with the planar analysis to 5 %: the polygonal peg meets each wall with a chord of
corners rather than one point (measured 1–4 %, the engine deeper)."""
INSERTED_TOL = 1e-4
"""A peg within this of the floor [m] slid in."""


def contact_angle(length: float, d: float, big_d: float) -> float:
    """Tilt [rad] of two-point contact at ``ℓ = length``: the root of ``ℓ sin θ + d cos θ = D``."""
    return math.asin(big_d / math.hypot(length, d)) - math.atan2(d, length)


def insertion_force(length, theta0, d, big_d, mu, k_rot):
    """Push [N] needed to slide on in two-point contact at ``ℓ = length`` (planar quasi-statics), and ``θ``.

    Tip corner A on the wall (normal force ``N_A``, friction ``μN_A`` up), rim B on the peg's side (``N_B``
    normal to the side, ``μN_B`` along it); the wrist's lateral force ``F_x = K_x (D/2 - (d/2) cos θ)`` and
    moment ``M = K_r (θ₀ - θ)`` act at the tip centre:
    ``N_A = N_B (cos θ - μ sin θ) - F_x``, ``M = N_B (ℓ + μ r) - r N_A (sin θ + μ cos θ)``,
    ``F_z = μ N_A + N_B (sin θ + μ cos θ)``. Returns ``inf`` where a contact force would be negative.
    """
    r = d / 2
    theta = contact_angle(length, d, big_d)
    s, c = math.sin(theta), math.cos(theta)
    f_x = K_X * (big_d / 2 - r * c)
    n_b = (k_rot * (theta0 - theta) - r * (s + mu * c) * f_x) / (length + mu * r - r * (s + mu * c) * (c - mu * s))
    n_a = n_b * (c - mu * s) - f_x
    if n_a < 0.0 or n_b < 0.0:
        return -math.inf, theta
    return mu * n_a + n_b * (s + mu * c), theta


def predicted(theta0, clearance, mu, k_rot, push):
    """Whitney's outcome ``("slides in" | "jams" | "wedges", stall depth of the lowest corner [m] or None)``."""
    d, big_d = 2 * RADIUS, 2 * (RADIUS + clearance)
    start = (big_d - d * math.cos(theta0)) / math.sin(theta0)
    for length in np.linspace(start, DEPTH / math.cos(theta0), 20_000):
        force, theta = insertion_force(length, theta0, d, big_d, mu, k_rot)
        if force >= push:
            return ("wedges" if length / big_d < mu else "jams"), length * math.cos(theta)
    return "slides in", None


def simulate(theta0, clearance, mu, k_rot, push, steps=150):
    """The engine's outcome and final depth [m] of the lowest tip corner below the hole's top, and tilt."""
    gains = ImpedanceGains(stiffness_pos=np.full(3, K_X), stiffness_rot=np.full(3, k_rot), max_force=100.0,
                           max_torque=50.0)
    scene = peg_in_hole("circle", clearance, size=RADIUS, length=0.06, depth=DEPTH, circle_segments=SIDES,
                        friction=mu, controller=gains)
    world = EngineWorld(scene, WorldParams(gravity=False, timestep=0.002, n_substeps=5),
                        engine=EngineParams(correction_slop=SLOP))
    top, tilt = scene.meta["slot_top_z"], rotvec_to_quat(np.array([0.0, theta0, 0.0]))
    state = world.reset(BodyState.at_rest([0.0, 0.0, top - 5e-4 + RADIUS * math.sin(theta0)], tilt))
    for _ in range(steps):  # a target K_x⁻¹ F_z below the peg: a constant push F_z
        target = np.asarray(state.pos) - [0.0, 0.0, push / K_X]
        turn = quat_to_rotvec(quat_mul(tilt, quat_conj(state.quat)))
        state = world.step(np.concatenate([target - state.pos, turn]), ActionMode.POSE_DELTA).state
    theta = 2.0 * math.atan2(state.quat[2], state.quat[0])
    depth = top - (state.pos[2] - RADIUS * math.sin(theta))
    big_d = 2 * (RADIUS + clearance)
    if depth >= DEPTH - INSERTED_TOL:
        return "slides in", depth, theta
    return ("wedges" if depth / math.cos(theta) / big_d < mu else "jams"), depth, theta


@pytest.mark.parametrize(
    "theta_deg, clearance, mu",
    [(2.0, 1e-4, 0.3), (1.0, 1e-4, 0.3), (4.0, 3e-4, 0.6)],
)
def test_two_point_contact_begins_where_the_geometry_says(theta_deg, clearance, mu):
    """A stiff wrist keeps the tilt: the peg stops exactly where two-point contact begins, at its final tilt."""
    outcome, depth, theta = simulate(math.radians(theta_deg), clearance, mu, k_rot=200.0, push=5.0)
    assert outcome in ("jams", "wedges") and theta == pytest.approx(math.radians(theta_deg), rel=0.1)
    d, big_d = 2 * RADIUS, 2 * (RADIUS + clearance)
    low = (big_d - d * math.cos(theta)) / math.sin(theta) * math.cos(theta)
    high = (big_d + TWO_POINT_TOL - d * math.cos(theta)) / math.sin(theta) * math.cos(theta) * CORNER_FACTOR
    assert low <= depth <= high


@pytest.mark.parametrize(
    "theta_deg, clearance, mu, push, expected",
    [
        (2.0, 1e-4, 0.6, 2.0, "wedges"),  # ℓ/D ≈ 0.33 < μ
        (2.0, 1e-4, 0.2, 2.0, "jams"),  # ℓ/D ≈ 0.40 > μ
        (4.0, 3e-4, 0.3, 2.0, "jams"),
        (3.0, 2e-4, 0.5, 2.0, "wedges"),
        (2.0, 1e-4, 0.2, 20.0, "slides in"),  # pushed past the jamming force
        (1.0, 3e-4, 0.5, 2.0, "slides in"),  # ℓ₂ = 35 mm: no two-point contact in a 30 mm hole
    ],
)
def test_outcome_and_stall_depth_match_whitney(theta_deg, clearance, mu, push, expected):
    theta0 = math.radians(theta_deg)
    outcome, stall = predicted(theta0, clearance, mu, 4.0, push)
    assert outcome == expected  # the grid covers all three outcomes of the analysis
    got, depth, _ = simulate(theta0, clearance, mu, 4.0, push)
    assert got == outcome
    if stall is not None:
        assert depth == pytest.approx(stall, rel=STALL_DEPTH_RTOL)
