"""The end-of-step penetration check in numba (:meth:`contactkit.engine.world.EngineWorld.step`): the deepest
contact of the tool at a pose over every vertex, node and edge of the pieces, in one compiled call.

A pose whose tool and environment pieces are all :func:`._kernels_pairs.pieces_apart` by 0 — a face plane of one
with the whole of the other beyond it — has no vertex or edge contact at or below a zero gap, so without depth
networks (which answer for their own statics) the check ends there; otherwise the vertices and nodes
(:func:`._kernels_contacts.node_contacts`) and every edge (:func:`._kernels_edges.edge_contacts`, which rejects
the apart pairs itself) are collided with a zero margin, as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from contactkit.engine._kernels_contacts import node_contacts
from contactkit.engine._kernels_edges import edge_contacts
from contactkit.engine._kernels_pairs import any_touching
from contactkit.engine.layout import ROW_DISTANCE, ROW_KEY


@njit(cache=True)
def deepest_contact(geo, rot, pos, com, cache_tool, cache_env, cache_env_edges, cache_tool_edges, cache_pairs, out):
    """The smallest gap [m] of the tool at a pose and its contact's key (``(inf, -1)`` when nothing touches).

    Args:
        geo: :class:`~._kernels_geometry.ContactGeometry`. rot: ``(3, 3)`` tool → world; pos: ``(3,)`` the tool
            origin [m]; com: ``(3,)`` the world centre of mass [m].
        cache_tool, cache_env: :func:`._kernels_contacts.node_contacts`' separating-plane caches;
            cache_env_edges, cache_tool_edges, cache_pairs (a :class:`~._kernels_pairs.PairCache`):
            :func:`._kernels_edges.edge_contacts`' (all updated). out: ``(N ≥ raw_capacity, ROW_WIDTH)`` scratch.
    """
    if geo.depth.kind.shape[0] == 0 and not any_touching(geo, rot, pos, 0.0, np.empty(3), np.empty(3), cache_pairs):
        return np.inf, -1.0
    still = np.zeros((2, 6))
    k = node_contacts(geo, rot, pos, still, com, 0.0, 0.0, 0.0, cache_tool, cache_env, out)
    k = edge_contacts(geo, rot, pos, still, com, 0.0, 0.0, 0.0, True, cache_env_edges, cache_tool_edges, out, k,
                      cache_pairs)
    if k == 0:
        return np.inf, -1.0
    best = 0
    for i in range(1, k):
        if out[i, ROW_DISTANCE] < out[best, ROW_DISTANCE]:
            best = i
    return out[best, ROW_DISTANCE], out[best, ROW_KEY]
