"""Small parametric scenes for the differentiable-step tests: boxes, a tetrahedral tip, a pillar and a table.

``theta`` has four entries, one of each kind the paper's ``θ`` covers (§III): the tool's in-hand x offset (pose of
the object), the tool's height (shape of the object), the pillar's x position (pose of the environment) and the
pillar's height (shape of the environment). Pieces that a parameter does not move have a zero basis for it.
"""

from __future__ import annotations

import numpy as np

from contactkit.engine.diff.features import ParamPiece, param_piece
from contactkit.engine.diff.step import DiffScene
from contactkit.geometry import hull_piece

N_PARAMS = 4
TOOL_X, TOOL_HEIGHT, PILLAR_X, PILLAR_HEIGHT = range(N_PARAMS)
PILLAR_TOP = 0.02
"""Height of the pillar's top face at θ = 0 [m]."""


def box_vertices(lo, hi) -> np.ndarray:
    """The 8 corners of the axis-aligned box ``[lo, hi]`` [m]."""
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], dtype=float)


def piece(vertices, name: str, basis_fn=None) -> ParamPiece:
    """Convex hull of ``vertices`` with the basis ``basis_fn(vertices) -> (4, V, 3)`` (zero if None)."""
    hull = hull_piece(np.asarray(vertices, dtype=float), name)
    basis = None if basis_fn is None else basis_fn(hull.vertices)
    return param_piece(hull, basis, N_PARAMS, name)


def tool_box(half=(0.02, 0.02), height=0.02) -> ParamPiece:
    """A box hanging below the tool frame (top face at z = 0), moved by TOOL_X and lengthened by TOOL_HEIGHT."""

    def basis(v):
        out = np.zeros((N_PARAMS, len(v), 3))
        out[TOOL_X, :, 0] = 1.0
        out[TOOL_HEIGHT, v[:, 2] < -height / 2, 2] = -1.0
        return out

    return piece(box_vertices([-half[0], -half[1], -height], [half[0], half[1], 0.0]), "tool-box", basis)


def tool_tip(depth=0.02, half=0.01) -> ParamPiece:
    """An inverted square pyramid whose tip is ``depth`` below the tool origin (a single-point contact)."""
    verts = [[0.0, 0.0, -depth]] + [[sx * half, sy * half, 0.0] for sx in (-1, 1) for sy in (-1, 1)]

    def basis(v):
        out = np.zeros((N_PARAMS, len(v), 3))
        out[TOOL_X, :, 0] = 1.0
        out[TOOL_HEIGHT, v[:, 2] < -depth / 2, 2] = -1.0
        return out

    return piece(verts, "tool-tip", basis)


def pillar(half=0.015) -> ParamPiece:
    """A square pillar on the table, top face at :data:`PILLAR_TOP`, moved by PILLAR_X, raised by PILLAR_HEIGHT."""

    def basis(v):
        out = np.zeros((N_PARAMS, len(v), 3))
        out[PILLAR_X, :, 0] = 1.0
        out[PILLAR_HEIGHT, v[:, 2] > PILLAR_TOP / 2, 2] = 1.0
        return out

    return piece(box_vertices([-half, -half, 0.0], [half, half, PILLAR_TOP]), "pillar", basis)


def table() -> ParamPiece:
    """The table: a box whose top face is z = 0 (no parameter moves it)."""
    return piece(box_vertices([-0.2, -0.2, -0.02], [0.2, 0.2, 0.0]), "table")


def scene(tool: ParamPiece, env: tuple[ParamPiece, ...], *, stiffness=(500.0, 15.0), damping=(30.0, 0.1),
          mass=0.4, gravity=9.81, com=(0.0, 0.0, -0.01)) -> DiffScene:
    """A DiffScene of ``tool`` against ``env`` with friction 0.5 and isotropic impedance gains."""
    inertia = np.diag([2e-4, 2e-4, 1e-4])
    return DiffScene((tool,), env, np.full(len(env), 0.5), mass, np.array(com), inertia, 2e-4,
                     np.array([stiffness[0]] * 3 + [stiffness[1]] * 3), np.array([damping[0]] * 3 + [damping[1]] * 3),
                     gravity=gravity)
