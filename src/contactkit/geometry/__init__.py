"""Parametric parts (pegs, slots, boxes) as watertight meshes with exact dimensions and convex pieces;
mesh files, validation, and mass properties. Conventions: :mod:`contactkit.geometry.prism`.

Public builders: :func:`peg` (any regular polygon or circle, tip chamfer by length and angle), :func:`slot` and
:func:`matching_slot` (a hole sized for a peg with a clearance, entry chamfer), :func:`cup` (a slot of any convex
hole section); a user's mesh file as a part with convex pieces: :func:`load_part`; a slot's hole read from its
mesh: :func:`probe_hole`. Connector plugs and sockets: :mod:`contactkit.tasks.connector`."""

from contactkit.geometry.assembly_parts import paper_hole, paper_peg
from contactkit.geometry.boxes import box
from contactkit.geometry.decompose import DecompositionReport, DecompositionSettings, PreprocessMode, decompose
from contactkit.geometry.decomposition_error import decomposition_errors
from contactkit.geometry.fasteners import (
    GENERALISATION_PAIRS,
    FastenerSpec,
    bolt,
    fastener_pair,
    nut,
    screw_pose,
)
from contactkit.geometry.holes import HoleFacts, probe_hole
from contactkit.geometry.mass import MassProperties, mass_properties
from contactkit.geometry.mesh_io import load_mesh, read_obj, save_obj, weld
from contactkit.geometry.part import ConvexPiece, Part, mesh_sha256
from contactkit.geometry.prism import (
    DEFAULT_CHAMFER_ANGLE,
    DEFAULT_PEG_CIRCLE_SEGMENTS,
    Shape,
    apothem,
    face_normals,
    n_sides,
    parse_shape,
    peg,
    polygon,
    section,
    section_name,
)
from contactkit.geometry.signed_distance import SignMethod, signed_distance
from contactkit.geometry.slots import (
    DEFAULT_SLOT_CIRCLE_SEGMENTS,
    cup,
    hole_apothem,
    matching_slot,
    offset_convex,
    slot,
)
from contactkit.geometry.threads import ThreadProfile, thread_profile
from contactkit.geometry.user_parts import LENGTH_UNITS, load_part
from contactkit.geometry.validate import hull_piece, is_convex, signed_volume, validate_part

__all__ = [
    "DEFAULT_CHAMFER_ANGLE",
    "DEFAULT_PEG_CIRCLE_SEGMENTS",
    "DEFAULT_SLOT_CIRCLE_SEGMENTS",
    "GENERALISATION_PAIRS",
    "LENGTH_UNITS",
    "ConvexPiece",
    "DecompositionReport",
    "DecompositionSettings",
    "FastenerSpec",
    "HoleFacts",
    "MassProperties",
    "Part",
    "PreprocessMode",
    "Shape",
    "SignMethod",
    "ThreadProfile",
    "apothem",
    "bolt",
    "box",
    "cup",
    "decompose",
    "decomposition_errors",
    "face_normals",
    "fastener_pair",
    "hole_apothem",
    "hull_piece",
    "is_convex",
    "load_mesh",
    "load_part",
    "mass_properties",
    "matching_slot",
    "mesh_sha256",
    "n_sides",
    "nut",
    "offset_convex",
    "paper_hole",
    "paper_peg",
    "parse_shape",
    "peg",
    "polygon",
    "probe_hole",
    "read_obj",
    "save_obj",
    "screw_pose",
    "section",
    "section_name",
    "signed_distance",
    "signed_volume",
    "slot",
    "thread_profile",
    "validate_part",
    "weld",
]
