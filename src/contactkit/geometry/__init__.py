"""Parametric parts (pegs, slots, boxes) as watertight meshes with exact dimensions and convex pieces;
mesh files, validation, and mass properties. Conventions: :mod:`contactkit.geometry.prism`."""

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
from contactkit.geometry.mass import MassProperties, mass_properties
from contactkit.geometry.mesh_io import load_mesh, read_obj, save_obj, weld
from contactkit.geometry.part import ConvexPiece, Part, mesh_sha256
from contactkit.geometry.prism import (
    DEFAULT_PEG_CIRCLE_SEGMENTS,
    Shape,
    apothem,
    face_normals,
    n_sides,
    parse_shape,
    peg,
    polygon,
)
from contactkit.geometry.signed_distance import SignMethod, signed_distance
from contactkit.geometry.slots import DEFAULT_SLOT_CIRCLE_SEGMENTS, hole_apothem, matching_slot, slot
from contactkit.geometry.threads import ThreadProfile, thread_profile
from contactkit.geometry.validate import hull_piece, is_convex, signed_volume, validate_part

__all__ = [
    "DEFAULT_PEG_CIRCLE_SEGMENTS",
    "DEFAULT_SLOT_CIRCLE_SEGMENTS",
    "GENERALISATION_PAIRS",
    "ConvexPiece",
    "DecompositionReport",
    "DecompositionSettings",
    "FastenerSpec",
    "MassProperties",
    "Part",
    "PreprocessMode",
    "Shape",
    "SignMethod",
    "ThreadProfile",
    "apothem",
    "bolt",
    "box",
    "decompose",
    "decomposition_errors",
    "face_normals",
    "fastener_pair",
    "hole_apothem",
    "hull_piece",
    "is_convex",
    "load_mesh",
    "mass_properties",
    "matching_slot",
    "mesh_sha256",
    "n_sides",
    "nut",
    "paper_hole",
    "paper_peg",
    "parse_shape",
    "peg",
    "polygon",
    "read_obj",
    "save_obj",
    "screw_pose",
    "signed_distance",
    "signed_volume",
    "slot",
    "thread_profile",
    "validate_part",
    "weld",
]
