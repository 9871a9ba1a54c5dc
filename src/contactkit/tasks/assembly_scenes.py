"""The tight-tolerance parts of the data-driven simulation paper (§V-A) as ordinary contactkit scenes.

So ``contactkit collect``, every :class:`~contactkit.model.ContactModel` (the engine's, MuJoCo's, the learned ones),
the MPC and the particle filter can be pointed at a tight peg or a nut on its bolt (issue 17, part 6). The
``contactkit.assembly`` package describes the same parts as an ``AssemblyTask`` for the paper's own simulator; this
module sits below it (layer ``tasks``) and builds the scenes from :mod:`contactkit.geometry` directly.

World frame: the static part's frame (hole floor / bolt foot at the origin, axis +z). Tool frame = the moving
part's mesh frame (peg: tip centre, axis +z; nut: bottom face centre, axis +z); the F/T sensor sits at the tool
origin. Densities: aluminium 2700 kg/m³ (peg), steel 7850 kg/m³ (nut); masses from the meshes
(:func:`contactkit.geometry.mass_properties`).

Contact geometry. The static part carries its learned depth network (``depth_model``, tight-tolerance paper
§III-A): the engine collides the tool's mesh vertices with the network inside its domain and the convex pieces
elsewhere; MuJoCo sees convex pieces only.

* Peg and hole: both have exact convex pieces already (the peg is convex; the hole is ``n + 1`` exact wedges), so
  no CoACD is run.
* Nut: CoACD (:func:`contactkit.geometry.decompose`) with :data:`NUT_DECOMPOSITION`. Measured on the M48 nut (one
  run on the shared 2-core machine): 12 pieces in 5.6 s, volume error 7.6 %, Hausdorff 4.3 mm, max protrusion
  2.4 mm (the hulls fill the nut's thread grooves, as every coarse hull of a thread does), and no piece vertex
  nearer the axis than 21.487 mm = the nut's minor (crest) radius 21.494 mm - 7 µm: the bore cylinder the
  bolt's core occupies (r <= 21.294 mm) stays free. The engine never collides the nut's pieces with the bolt
  inside the network's domain, so their protrusion into the grooves matters only to MuJoCo (which then has no
  play at all: the paper's point about open simulators and tight fits).
* Bolt: :class:`BoltPieces`. ``EXACT`` (default): one 32-gon rod inside the thread's root (r = minor radius −
  0.1 mm), an exact subset of the solid, for the engine's pieces path and tunnelling guard; instant. ``COACD``
  (what MuJoCo needs to see a thread at all): :data:`NUT_DECOMPOSITION` on the bolt, measured 4 pieces in
  36.5 s, volume error 10.9 %, max protrusion 1.9 mm, reaching r = 24.0 mm (the crest): the grooves are filled.

Measured through ``contactkit collect`` (gravity off, default impedance gains, shared 2-core machine):

* Engine, bolting, screw policy: 2 × 30 steps in 10 s; the nut advanced 5.017 and 5.026 mm per turn (pitch 5 mm),
  at most 51 µm off the axis. Tight peg, tight spline: ~1.4 s per control step (5,120 peg nodes × 25 sub-steps
  through the hole's network) and ~11 s to build the world (641 hole pieces); 31-33 µm lateral over 2 × 15 steps.
* MuJoCo, bolting with CoACD pieces on both parts: the overlapping hulls eject the nut within the first control
  step of holding still (from z = 55 mm to the bolt's top at 60.2 mm, 2.2 mm sideways); screwed, it then spins on
  top of the bolt without advancing. Tight peg (exact pieces): 41-49 µm lateral in a 32.5 µm clearance, i.e. the
  soft contacts let the wall be penetrated by 10-16 µm.
"""

from __future__ import annotations

import dataclasses
import math
from enum import Enum
from functools import lru_cache
from pathlib import Path

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry import DecompositionSettings, decompose, mass_properties
from contactkit.geometry.assembly_parts import paper_hole, paper_peg
from contactkit.geometry.fasteners import (
    GENERALISATION_PAIRS,
    M48_BOLT_LENGTH,
    M48_DIAMETER,
    M48_PITCH,
    bolt,
    fastener_pair,
    nut,
    screw_pose,
)
from contactkit.geometry.part import Part
from contactkit.geometry.validate import hull_piece
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool

ALUMINIUM_DENSITY = 2700.0
"""[kg/m³] the paper's peg (§V-A)."""
STEEL_DENSITY = 7850.0
"""[kg/m³] the nut."""
PEG_FRICTION = 0.3
"""Aluminium on aluminium, dry (handbook; the paper's identified μ is not printed)."""
THREAD_FRICTION = 0.15
"""Steel thread on steel thread, lightly oiled (handbook; the paper's identified μ is not printed)."""
REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository root (where ``models/`` lies in a source checkout)."""
HOLE_NET = Path("models/depth-paper-hole/hole.safetensors")
"""Committed depth network of the paper's hole, relative to the repository root."""
BOLT_NET = Path("models/depth-m48-bolt/pieces/bolt.json")
"""Committed depth network of the M48×5 bolt, relative to the repository root: a piecewise set of three networks
(:class:`contactkit.depth.DepthNetSet`: cut bottom, thread, chamfered top; models/depth-m48-bolt/pieces/README.md)."""
PEG_ENGAGED = 2e-3
"""[m] how far the peg's tip starts below the hole's opening (the 0.5 mm chamfer and 1.5 mm of full section)."""
PEG_MIN_ENGAGED = 1e-3
"""[m] the tight peg's workspace ends this far below the opening (0.5 mm of full section in the bore, past the
0.5 mm chamfer): the policies' workspace spring keeps the peg in the bore (a random spline lifted it until only
the chamfer was in, and it wandered 0.5 mm sideways)."""
PEG_WORKSPACE_XY = 1e-3
"""[m] half-width of the tight peg's workspace in x and y (the bore allows 32.5 µm)."""
NUT_ENGAGED_TURNS = 1.0
"""Pitches of thread the nut starts screwed onto the bolt's top (issue 17: "screwed onto the first pitch")."""
CORE_GAP = 1e-4
"""[m] the EXACT bolt piece's radius stays this far inside the thread's minor radius."""
NUT_DECOMPOSITION = DecompositionSettings(threshold=0.1, resolution=500, mcts_iterations=20, mcts_nodes=10,
                                          max_convex_hull=24, n_samples=2000)
"""CoACD settings of the nut (and of a ``COACD`` bolt): coarse, seconds not minutes (module docstring)."""


class BoltPieces(str, Enum):
    """Convex pieces of the bolt (module docstring): ``EXACT`` core rod, or ``COACD`` (for MuJoCo)."""

    EXACT = "exact"
    COACD = "coacd"


def _resolve(path: str | Path) -> Path:
    """``path`` as given when it exists, else relative to :data:`REPO_ROOT`."""
    p = Path(path)
    return p if p.is_file() or p.is_absolute() else REPO_ROOT / p


def _check_net(path: str | Path, what: str, how: str) -> str:
    p = _resolve(path)
    if not p.is_file():
        raise InvalidInputError(f"{what}: depth network {str(p)!r} not found; train one with `{how}` and pass its "
                                f"path as depth_model")
    return str(p)


def _tool(part: Part, density: float, friction: float, pos, quat) -> Tool:
    props = mass_properties(part, density=density)
    return Tool(part, props.mass, props.com, props.inertia, friction, pos, quat)


def tight_peg_scene(*, depth_model: str | Path = HOLE_NET, engaged: float = PEG_ENGAGED,
                    controller: ImpedanceGains | None = None) -> Scene:
    """The paper's aluminium peg Ø 49.97 mm in the Ø 50.035 mm blind hole (32.5 µm radial clearance, §V-A).

    Args:
        depth_model: the hole's depth network (default: the committed one, relative to the repository root).
        engaged: [m] depth of the peg's tip below the opening at the start, in ``[0, hole depth)``; the peg
            starts upright and centred (touching nothing).
        controller: impedance gains; default :class:`ImpedanceGains`.

    Returns:
        Scene: tool = peg (its exact convex piece, ρ = 2700 kg/m³), static = hole block at the origin with its
        exact pieces and ``depth_model``; ``target_pos`` the hole's floor centre (the origin); ``meta`` task
        ``"tight-peg-in-hole"``, clearance, depth (= ``axis_height``), hole_apothem.

    Raises:
        InvalidInputError: ``engaged`` out of range, or the network file missing.
    """
    peg, hole = paper_peg(), paper_hole()
    depth = float(hole.meta["depth"])
    if not (math.isfinite(engaged) and 0.0 <= engaged < depth):
        raise InvalidInputError(f"engaged must be in [0, {depth:g}) m, got {engaged!r}")
    net = _check_net(depth_model, "tight peg-in-hole", "contactkit learn depth --part paper-hole --out "
                     "models/depth-paper-hole")
    clearance = (hole.meta["diameter"] - peg.meta["diameter"]) / 2.0
    tool = _tool(peg, ALUMINIUM_DENSITY, PEG_FRICTION, (0.0, 0.0, depth - engaged), (1.0, 0.0, 0.0, 0.0))
    meta = {"task": "tight-peg-in-hole", "clearance": float(clearance), "depth": depth, "axis_height": depth,
            "axis_xy": [0.0, 0.0], "hole_apothem": float(hole.meta["hole_apothem"]), "slot_top_z": depth}
    return Scene(name="tight-peg-in-hole(paper, 32.5 um)", tool=tool,
                 statics=(StaticBody(hole, friction=PEG_FRICTION, depth_model=net),),
                 controller=controller or ImpedanceGains(), workspace_lo=(-PEG_WORKSPACE_XY, -PEG_WORKSPACE_XY, 0.0),
                 workspace_hi=(PEG_WORKSPACE_XY, PEG_WORKSPACE_XY, depth - PEG_MIN_ENGAGED), target_pos=(0.0, 0.0, 0.0),
                 meta=meta)


def core_piece(bolt_part: Part, sides: int = 32):
    """The bolt's EXACT convex piece: a ``sides``-gon rod of circumradius ``minor radius − CORE_GAP`` from the
    bolt's foot to where its top chamfer starts (inside the solid everywhere), bolt frame [m]."""
    radius = float(bolt_part.meta["minor_radius"]) - CORE_GAP
    angle = 2.0 * np.pi * np.arange(sides) / sides
    ring = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    top = float(bolt_part.meta["chamfer_start_z"])
    return hull_piece(np.concatenate([np.column_stack([ring, np.full(sides, z)]) for z in (0.0, top)]), "bolt core")


@lru_cache(maxsize=8)
def _fastener_parts(diameter: float, pitch: float, bolt_pieces: BoltPieces, settings: DecompositionSettings,
                    cache_dir: str | None) -> tuple[Part, Part]:
    """``(bolt, nut)`` with pieces; memoised in the process (CoACD takes seconds), and on disk in ``cache_dir``."""
    if diameter == M48_DIAMETER and pitch == M48_PITCH:
        b, n = bolt(), nut()
    else:
        b, n = fastener_pair(diameter, pitch)
    n, _ = decompose(n, settings, cache_dir=cache_dir)
    if bolt_pieces is BoltPieces.COACD:
        b, _ = decompose(b, settings, cache_dir=cache_dir)
    else:
        b = dataclasses.replace(b, pieces=(core_piece(b),), meta=dict(b.meta) | {"convex_pieces_missing": False})
    return b, n


def _pair(diameter: float | None, pitch: float | None) -> tuple[float, float, bool]:
    """``(diameter, pitch, is_m48)``; a pair must be M48×5 or one of Table II."""
    d = M48_DIAMETER if diameter is None else float(diameter)
    p = M48_PITCH if pitch is None else float(pitch)
    if math.isclose(d, M48_DIAMETER) and math.isclose(p, M48_PITCH):
        return M48_DIAMETER, M48_PITCH, True
    for spec in GENERALISATION_PAIRS:
        if math.isclose(d, spec.diameter) and math.isclose(p, spec.pitch):
            return spec.diameter, spec.pitch, False
    pairs = ", ".join(f"M{s.diameter * 1e3:g}x{s.pitch * 1e3:g}" for s in GENERALISATION_PAIRS)
    raise InvalidInputError(f"bolting pair diameter={d!r} m, pitch={p!r} m is neither M48x5 nor a Table II pair "
                            f"({pairs})")


def bolting_scene(diameter: float | None = None, pitch: float | None = None, *,
                  depth_model: str | Path | None = None, bolt_pieces: BoltPieces | str = BoltPieces.EXACT,
                  engaged_turns: float = NUT_ENGAGED_TURNS, decomposition: DecompositionSettings = NUT_DECOMPOSITION,
                  cache_dir: str | Path | None = None, controller: ImpedanceGains | None = None) -> Scene:
    """The steel nut screwed onto the top of its bolt (paper §V-A: M48×5, 0.4 mm play; or a Table II pair).

    Args:
        diameter, pitch: [m]; both None: M48×5; else a Table II pair (:data:`GENERALISATION_PAIRS`).
        depth_model: the bolt's depth network; None: the committed M48 one (a Table II pair has none committed:
            an error names how to train one).
        bolt_pieces: :class:`BoltPieces` (module docstring).
        engaged_turns: pitches of thread engaged at the start, in ``[0.5, bolt length / pitch − 1]``: the nut
            frame at ``z = length − engaged_turns · pitch`` on the helix
            (:func:`contactkit.geometry.fasteners.screw_pose`), centred in the play, touching nothing.
        decomposition: CoACD settings of the nut (and a ``COACD`` bolt); cache_dir: CoACD's disk cache (None:
            memoised in this process only).
        controller: impedance gains; default :class:`ImpedanceGains`.

    Returns:
        Scene: tool = nut (CoACD pieces, ρ = 7850 kg/m³, sensor at its origin), static = bolt at the origin with
        its pieces and ``depth_model``; ``meta`` task ``"bolting"``, pair, diameter, pitch, handedness, play,
        clearance (play / 2), axis_height (the bolt's top z), axis_xy, engaged_turns; ``target_pos`` = the nut
        frame screwed down to the bolt's foot (one pitch above it), ``target_quat`` the start orientation (held by
        the policies' upright correction; the yaw is the screw's business).

    Raises:
        InvalidInputError: an unknown pair, ``engaged_turns`` out of range, or no depth network.
    """
    d, p, m48 = _pair(diameter, pitch)
    name = f"M{d * 1e3:g}x{p * 1e3:g}"
    if depth_model is None:
        if not m48:
            raise InvalidInputError(
                f"bolting {name}: no committed depth network for this bolt (only M48x5's, {BOLT_NET}); export the "
                f"bolt mesh (contactkit.geometry.fasteners.fastener_pair({d:g}, {p:g})[0]) and train one with "
                f"`contactkit learn depth --part BOLT.stl --coordinates helical --out models/depth-{name}-bolt`, then "
                f"pass depth_model=")
        depth_model = BOLT_NET
    net = _check_net(depth_model, f"bolting {name}", "contactkit learn depth --part m48-bolt --coordinates helical "
                     "--out models/depth-m48-bolt")
    try:
        pieces = BoltPieces(bolt_pieces)
    except ValueError:
        raise InvalidInputError(f"bolt_pieces must be one of {[k.value for k in BoltPieces]}, "
                                f"got {bolt_pieces!r}") from None
    turns = M48_BOLT_LENGTH * d / M48_DIAMETER / p - 1.0  # fastener_pair's length scaling
    if not (math.isfinite(engaged_turns) and 0.5 <= engaged_turns <= turns):
        raise InvalidInputError(f"engaged_turns must be in [0.5, {turns:g}], got {engaged_turns!r}")
    b, n = _fastener_parts(d, p, pieces, decomposition, None if cache_dir is None else str(cache_dir))
    length, hand = float(b.meta["length"]), int(b.meta["handedness"])
    pos, quat = screw_pose(p, 2.0 * np.pi * hand * (length / p - engaged_turns), handedness=hand)
    target, _ = screw_pose(p, 2.0 * np.pi * hand * 1.0, handedness=hand)
    meta = {"task": "bolting", "pair": name, "diameter": d, "pitch": p, "handedness": hand,
            "play": float(n.meta["play"]), "clearance": float(n.meta["play"]) / 2.0, "axis_height": length,
            "axis_xy": [0.0, 0.0], "engaged_turns": float(engaged_turns), "bolt_pieces": pieces.value,
            "nut_pieces": len(n.pieces)}
    return Scene(name=f"bolting({name}, {pieces.value} bolt pieces)",
                 tool=_tool(n, STEEL_DENSITY, THREAD_FRICTION, pos, quat),
                 statics=(StaticBody(b, friction=THREAD_FRICTION, depth_model=net),),
                 controller=controller or ImpedanceGains(), workspace_lo=(-0.01, -0.01, -0.001),
                 workspace_hi=(0.01, 0.01, length + 0.06), target_pos=target, target_quat=quat, meta=meta)
