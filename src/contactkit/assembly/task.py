"""The two tight-tolerance tasks of the data-driven simulation paper (§V-A) as one frozen description.

An :class:`AssemblyTask` holds everything the reference simulation, the clustering networks, the C-space model and
the data-driven simulator share about a task: the moving part (the TOOL: peg or nut; its part frame is its body
frame), the static part (hole block or bolt, at the world origin with identity orientation), the tool's mass
properties, the friction coefficient, the tool's surface nodes (the mesh vertices: the paper's "original contact
nodes" candidates, §II) and the static part's learned depth network (§III-A).

World frame: z up, the static part's frame. The tool's pose is a :class:`contactkit.state.BodyState` of its body
frame (pos [m], quat wxyz); velocities are world-frame (lin_vel of the body-frame origin, ang_vel), as everywhere in
contactkit. Gravity is off in these tasks (the paper's robot compensates it, §V-A).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from contactkit.depth import DepthNet, DepthNetSet, load_depth_nets
from contactkit.engine.reference import RigidBody
from contactkit.errors import InvalidInputError
from contactkit.geometry.part import Part
from contactkit.tasks.assembly_scenes import BOLT_NET, HOLE_NET

ALUMINIUM_DENSITY = 2700.0
"""[kg/m³] the paper's peg and hole (§V-A)."""
STEEL_DENSITY = 7850.0
"""[kg/m³] the bolt and nut."""
PEG_FRICTION = 0.3
"""Aluminium on aluminium, dry: the paper identifies μ experimentally and does not print it; a handbook value."""
THREAD_FRICTION = 0.15
"""Steel thread on steel thread, lightly oiled (handbook value; the paper's identified μ is not printed)."""
REFERENCE_DT = 1e-3
"""[s] step of the high-fidelity reference simulation (issue 17, part 1)."""
SIM_DT = 1e-2
"""[s] step of the data-driven simulator (paper §V-D: 10 ms integration step)."""
DEFAULT_NETS = {"peg-in-hole": HOLE_NET, "bolting": BOLT_NET}
"""Committed depth networks of the static parts, relative to the repository root (the engine scenes' own,
:mod:`contactkit.tasks.assembly_scenes`)."""


class AssemblyKind(str, Enum):
    """Which of the paper's two tasks."""

    PEG_IN_HOLE = "peg-in-hole"
    BOLTING = "bolting"


@dataclass(frozen=True, eq=False)
class AssemblyTask:
    """Static description of one tight-tolerance task (module docstring).

    Attributes:
        kind: the task; name: a label (e.g. ``"M48x5"`` or ``"M39x4"`` for a Table II pair).
        tool: the moving part (peg or nut), vertices in its body frame [m].
        static: the static part (hole block or bolt), vertices in the world frame [m].
        body: the tool's mass properties (:class:`RigidBody`, COM in the body frame).
        friction: Coulomb μ between the parts.
        nodes: ``(N, 3)`` the tool's surface nodes, body frame [m] (its unique mesh vertices).
        depth_net: the static part's learned signed distance (§III-A) as a :class:`DepthNetSet` (a single
            :class:`DepthNet` given is made a set of one piece), or None where only the exact one is used.
        clearance: [m] radial clearance of the fit (peg: (D_hole − D_peg)/2; bolt: play/2).
        axis_height: [m] z of the static part's mating end (hole opening / bolt top), world frame.
        pitch: [m] thread pitch (bolting; 0 for the peg).
    """

    kind: AssemblyKind
    name: str
    tool: Part
    static: Part
    body: RigidBody
    friction: float
    nodes: np.ndarray
    depth_net: DepthNetSet | None
    clearance: float
    axis_height: float
    pitch: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.depth_net, DepthNet):
            object.__setattr__(self, "depth_net", DepthNetSet((self.depth_net,)))


def _body(part: Part, density: float) -> RigidBody:
    from contactkit.geometry.mass import mass_properties

    props = mass_properties(part, density=density)
    return RigidBody(props.mass, props.inertia, props.com, name=part.name)


def _nodes(part: Part) -> np.ndarray:
    nodes = np.unique(np.asarray(part.vertices, dtype=np.float64), axis=0)
    nodes.flags.writeable = False
    return nodes


def _net(path: str | Path | None, static: Part, kind: AssemblyKind) -> DepthNetSet | None:
    """The network file or piecewise set's manifest at ``path`` (:func:`contactkit.depth.load_depth_nets`)."""
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{kind.value}: depth network {str(p)!r} not found (train one with "
                                f"`contactkit learn depth`, or pass depth_net=None for exact distances only)")
    return load_depth_nets(p, static)


def peg_in_hole_task(*, depth_net: str | Path | None = DEFAULT_NETS["peg-in-hole"]) -> AssemblyTask:
    """The paper's aluminium peg Ø 49.97 mm in the Ø 50.035 mm blind hole (clearance 32.5 µm radial).

    The hole block's frame is the world frame (floor of the bore at z = 0, opening at z = its depth); the peg's
    body frame has its origin at the centre of its tip face, axis +z.
    """
    from contactkit.geometry.assembly_parts import paper_hole, paper_peg

    peg, hole = paper_peg(), paper_hole()
    clearance = (hole.meta["diameter"] - peg.meta["diameter"]) / 2
    return AssemblyTask(AssemblyKind.PEG_IN_HOLE, "paper", peg, hole, _body(peg, ALUMINIUM_DENSITY), PEG_FRICTION,
                        _nodes(peg), _net(depth_net, hole, AssemblyKind.PEG_IN_HOLE), clearance,
                        float(hole.meta["depth"]))


def bolting_task(diameter: float | None = None, pitch: float | None = None, *,
                 depth_net: str | Path | None = DEFAULT_NETS["bolting"]) -> AssemblyTask:
    """An ISO 68-1 bolt and nut with 0.4 mm of play (the paper's M48×5 by default; a Table II pair otherwise).

    The bolt's frame is the world frame (bottom centre at the origin, axis +z); the nut's body frame is the nut's
    part frame (:func:`contactkit.geometry.fasteners.nut`). A pair other than M48×5 needs its own depth network
    (``depth_net``): the committed one is the M48's, and loading it for another bolt is refused (mesh hash).
    """
    from contactkit.geometry.fasteners import M48_DIAMETER, M48_PITCH, bolt, fastener_pair, nut

    if diameter is None and pitch is None:
        b, n = bolt(), nut()
        name = "M48x5"
    else:
        d, p = diameter or M48_DIAMETER, pitch or M48_PITCH
        b, n = fastener_pair(d, p)
        name = f"M{d * 1e3:g}x{p * 1e3:g}"
        if depth_net == DEFAULT_NETS["bolting"]:
            depth_net = None
    return AssemblyTask(AssemblyKind.BOLTING, name, n, b, _body(n, STEEL_DENSITY), THREAD_FRICTION, _nodes(n),
                        _net(depth_net, b, AssemblyKind.BOLTING), float(n.meta.get("play", 4e-4)) / 2,
                        float(b.meta["length"]), float(b.meta["p"]))


def assembly_task(kind: AssemblyKind | str, **kwargs) -> AssemblyTask:
    """The task of ``kind`` (``"peg-in-hole"`` or ``"bolting"``); keyword arguments go to its constructor.

    Raises:
        InvalidInputError: an unknown kind.
    """
    try:
        kind = AssemblyKind(kind)
    except ValueError:
        raise InvalidInputError(f"unknown assembly task {kind!r}: one of {[k.value for k in AssemblyKind]}") from None
    return peg_in_hole_task(**kwargs) if kind is AssemblyKind.PEG_IN_HOLE else bolting_task(**kwargs)
