"""COAL-backed collision queries: contacts between the tool's convex pieces and the static environment.

:class:`CollisionWorld` builds the COAL objects of a scene once; :func:`contacts` returns, for one tool
pose and a margin, the multi-point contact manifold (points on the tool, normals from the environment into
the tool, signed distances, friction) as a :class:`Contacts` set (:mod:`contactkit.collision.contact_set`),
the form every engine solver takes.
The manifold rule is documented in :mod:`contactkit.collision.manifold`.
"""

from contactkit.collision.coal_shapes import CoalPiece, coal_piece, face_planes, placed_piece
from contactkit.collision.contact_set import Contacts, contact_frames
from contactkit.collision.contacts import (
    CollisionWorld,
    LabelledContacts,
    candidate_pairs,
    contacts,
    contacts_batch,
    labelled_contacts,
)
from contactkit.collision.manifold import PairPatch, surface_gaps

__all__ = [
    "CoalPiece",
    "CollisionWorld",
    "Contacts",
    "LabelledContacts",
    "PairPatch",
    "candidate_pairs",
    "coal_piece",
    "contact_frames",
    "contacts",
    "contacts_batch",
    "face_planes",
    "labelled_contacts",
    "placed_piece",
    "surface_gaps",
]
