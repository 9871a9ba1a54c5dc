"""Hand-made contact sets for the engine tests: analytic box-on-plane corners, random small problems.

No collision detection is involved: contact points, normals and distances follow from the box pose
and the plane in closed form, so the tests exercise solver + integrator end to end.
"""

from __future__ import annotations

import numpy as np

from contactkit.engine.reference import (
    Contacts,
    RigidBody,
    build_problem,
    build_problem_general,
    contact_frames,
    free_velocity,
)
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState

CORNER_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)


def box_body(mass: float, half_extents, com=(0.0, 0.0, 0.0)) -> RigidBody:
    """A solid box of ``mass`` [kg] and ``half_extents`` (3,) [m], body frame at the box centre + ``com``."""
    a, b, c = np.asarray(half_extents, dtype=np.float64)
    inertia = mass / 3.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return RigidBody(mass, inertia, np.asarray(com, dtype=np.float64))


def box_corners(half_extents, state: BodyState, com=(0.0, 0.0, 0.0)) -> np.ndarray:
    """World positions ``(8, 3)`` of the box corners (box centre at ``pos + R·com``)."""
    rot = quat_to_mat(state.quat)
    centre = state.pos + rot @ np.asarray(com, dtype=np.float64)
    return centre + (CORNER_SIGNS * np.asarray(half_extents)) @ rot.T


def plane_contacts(corners, normal, offset, mu, margin=1e-3, tangent=None) -> Contacts:
    """Corner contacts against the plane ``{x: n·x = offset}`` (environment below, ``n`` up into the tool).

    Every corner with signed distance ``n·x - offset ≤ margin`` becomes a contact at the corner.
    """
    normal = np.asarray(normal, dtype=np.float64)
    d = corners @ normal - offset
    keep = d <= margin
    k = int(keep.sum())
    tangents = None if tangent is None else np.tile(np.asarray(tangent, dtype=np.float64), (k, 1))
    return Contacts(corners[keep], np.tile(normal, (k, 1)), d[keep], np.full(k, float(mu)), tangents)


def incline(theta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plane normal, down-slope unit tangent, and box orientation quaternion for an incline of ``theta``."""
    rot_q = rotvec_to_quat(np.array([0.0, -theta, 0.0]))
    rot = quat_to_mat(rot_q)
    return rot[:, 2], -rot[:, 0], rot_q


def resting_box_on_incline(theta: float, half_extents, mass: float = 1.0):
    """Body and state of a box resting with its bottom face on the incline through the origin."""
    normal, _, quat = incline(theta)
    body = box_body(mass, half_extents)
    state = BodyState.at_rest(normal * half_extents[2], quat)
    return body, state


def random_body(rng: np.random.Generator) -> RigidBody:
    """A box-like body with random mass, size and centre of mass."""
    mass = rng.uniform(0.2, 3.0)
    return box_body(mass, rng.uniform(0.02, 0.2, 3), rng.normal(0.0, 0.01, 3))


def random_state(rng: np.random.Generator, speed: float = 1.0) -> BodyState:
    """A random pose and twist."""
    q = rng.normal(size=4)
    return BodyState(
        rng.normal(0.0, 0.1, 3), q / np.linalg.norm(q), rng.normal(0.0, speed, 3), rng.normal(0.0, speed, 3)
    )


def random_contacts(rng: np.random.Generator, body: RigidBody, state: BodyState, k: int, mu: float) -> Contacts:
    """``k`` random contacts near the body, normals pointing roughly against the body velocity."""
    rot = quat_to_mat(state.quat)
    centre = state.pos + rot @ body.com_body
    points = centre + rng.normal(0.0, 0.1, (k, 3))
    normals = rng.normal(size=(k, 3)) + 2.0 * np.asarray([0.0, 0.0, 1.0])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return Contacts(points, normals, rng.uniform(-1e-4, 1e-4, k), np.full(k, mu))


def random_problem(rng: np.random.Generator, k: int, mu: float, dt: float = 1e-3):
    """A random floating-body problem with ``k`` contacts and a body driven into them."""
    body = random_body(rng)
    state = random_state(rng)
    contacts = random_contacts(rng, body, state, k, mu)
    if k:
        state = state.replace(lin_vel=state.lin_vel - 2.0 * contacts.normals.mean(axis=0))
    v_free = free_velocity(body, state, dt)
    return build_problem(contacts, body, state, v_free, dt)


def well_posed_problem(rng: np.random.Generator, k: int, mu: float, dt: float = 1e-3):
    """A floating box with ``k ≤ 2`` contacts at random points of its surface: ``W`` positive definite.

    The normals point roughly along +z (the environment below), the body moves down into them.
    """
    half = rng.uniform(0.03, 0.1, 3)
    body = box_body(rng.uniform(0.5, 2.0), half)
    q = rng.normal(size=4)
    state = BodyState(rng.normal(0.0, 0.1, 3), q / np.linalg.norm(q), np.zeros(3), rng.normal(0.0, 0.5, 3))
    rot = quat_to_mat(state.quat)
    local = rng.uniform(-1.0, 1.0, (k, 3)) * half
    axis = rng.integers(0, 3, k)
    local[np.arange(k), axis] = np.sign(local[np.arange(k), axis]) * half[axis]  # on a face
    normals = rng.normal(0.0, 0.3, (k, 3)) + np.array([0.0, 0.0, 1.0])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    state = state.replace(lin_vel=np.array([rng.normal(0.0, 0.5), rng.normal(0.0, 0.5), -1.0]))
    contacts = Contacts(state.pos + local @ rot.T, normals, np.zeros(k), np.full(k, float(mu)))
    v_free = free_velocity(body, state, dt, gravity=np.array([0.0, 0.0, -9.81]))
    return build_problem(contacts, body, state, v_free, dt)


def general_problem(rng: np.random.Generator, k: int, mu: float, extra_dof: int = 2, dt: float = 1e-3):
    """A problem of the general ``n``-DoF form (an arm-like system) with ``n = 3k + extra_dof``.

    Random point Jacobians of full row rank and a random SPD inverse mass make ``W`` positive definite,
    so impulses are unique for small ``μ``. Free contact velocities are mostly approaching.
    """
    n = 3 * k + extra_dof
    jac = rng.normal(size=(k, 3, n))
    a = rng.normal(size=(n, n))
    m_inv = a @ a.T / n + 0.2 * np.eye(n)
    points = rng.normal(0.0, 0.1, (k, 3))
    normals = rng.normal(0.0, 0.3, (k, 3)) + np.array([0.0, 0.0, 1.0])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    frames = contact_frames(normals)
    # Choose v_free so that the free contact velocity is b = J v_free with approaching normals.
    j_stack = np.einsum("kab,kbn->kan", frames, jac).reshape(3 * k, n)
    b = rng.normal(0.0, 1.0, (k, 3))
    b[:, 0] = -np.abs(b[:, 0]) * np.where(rng.uniform(size=k) < 0.85, 1.0, -1.0)
    v_free = np.linalg.lstsq(j_stack, b.reshape(-1), rcond=None)[0]
    return build_problem_general(points, frames, jac, m_inv, v_free, np.full(k, float(mu)), dt)
