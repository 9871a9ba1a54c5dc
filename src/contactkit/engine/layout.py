"""The two flat array layouts the engine's numba kernels share, named in one place.

Numba reads module-level integers and slices as compile-time constants, so ``rows[i, ROW_KEY]`` compiles to
what ``rows[i, 8]`` did. (After changing a value here, delete ``src/contactkit/engine/__pycache__/*.nbi`` and
``*.nbc``: numba's cache of a kernel is keyed on the kernel's own file, see :mod:`._kernels_step`.)

**Contact row** ``(ROW_WIDTH,)`` float64: one node contact as :func:`._kernels_contacts.node_contacts` finds it
and every later stage reads it (reduction, problem rows, sensing, warm start). The reference engine holds the
same data as :class:`contactkit.collision.Contacts` (``distances``, ``normals``, ``points``, ``friction``).

* ``ROW_DISTANCE``: signed distance ``d`` [m] (negative: penetration);
* ``ROW_NORMAL`` … ``+2`` (:data:`NORMAL_COLS`): unit normal ``n``, world frame, from the environment into the tool;
* ``ROW_POINT`` … ``+2`` (:data:`POINT_COLS`): the contact point on the tool surface, world frame [m];
* ``ROW_FRICTION``: the environment piece's friction coefficient ``μ`` (before ``WorldParams.friction_scale``);
* ``ROW_KEY``: the feature key (source, vertex, piece) as a float, :data:`._kernels_contacts.KEY_SHIFT`.

**Kernel state** ``(STATE_SIZE,)`` float64 of the tool, in the coordinates of tight-tolerance paper eq 1
(``V = [v_com (world); ω (body)]``; :mod:`contactkit.engine.reference.body`): :data:`STATE_COM` the centre of mass
(world) [m], :data:`STATE_QUAT` the orientation ``(w, x, y, z)``, :data:`STATE_VEL` the centre of mass velocity
(world) [m/s], :data:`STATE_OMEGA` the angular velocity (body frame) [rad/s]; :data:`STATE_TWIST` is ``V``.
:func:`._kernels_dynamics.body_state` converts it to a :class:`~contactkit.state.BodyState` (tool origin, world).
"""

from __future__ import annotations

ROW_DISTANCE = 0
ROW_NORMAL = 1
ROW_POINT = 4
ROW_FRICTION = 7
ROW_KEY = 8
ROW_WIDTH = 9
NORMAL_COLS = slice(ROW_NORMAL, ROW_NORMAL + 3)
POINT_COLS = slice(ROW_POINT, ROW_POINT + 3)

STATE_COM = slice(0, 3)
STATE_QUAT = slice(3, 7)
STATE_VEL = slice(7, 10)
STATE_OMEGA = slice(10, 13)
STATE_TWIST = slice(7, 13)
STATE_SIZE = 13
