"""F/T sensing: contact impulses of one engine step → the wrench the environment exerts on the tool,
in the sensor frame, with the torque about the sensor origin (docs/architecture.md, "Conventions").

Contact ``i`` acts at the world point ``p_i`` with the impulse ``λ_i = (λ_n, λ_t1, λ_t2)`` [N·s] in its
frame (rows ``[n; t1; t2]``, :mod:`contactkit.engine.reference.problem`); over a step of ``h`` seconds its mean
force is ``f_i = frameᵢᵀ λ_i / h`` (tight-tolerance paper eq 1: ``Σ J_iᵀ f_i`` is the contact wrench, ``F_c`` after
Algorithm 1). With the sensor origin ``s`` and orientation ``R_s`` (world),

    F = R_sᵀ Σ f_i,        T = R_sᵀ Σ (p_i - s) × f_i.

The engine world averages this over the steps of a control period (the MuJoCo world averages its sensor
over its sub-steps the same way) and then adds the sensor's bias and noise (:func:`add_sensor_errors`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from contactkit.engine.layout import ROW_POINT
from contactkit.errors import InvalidInputError


@njit(cache=True)
def contact_ft(count, contacts, frames, impulses, h, sensor_origin, sensor_rot, out):
    """Add the mean F/T reading of one step's contact impulses to ``out (6,)`` (sensor frame).

    Args:
        count: number of contacts ``K``.
        contacts: ``(≥ K, ROW_WIDTH)`` contact rows (:mod:`contactkit.engine.layout`): the world points ``p_i`` [m].
        frames: ``(K, 3, 3)`` contact frames, rows ``[n; t1; t2]``, world.
        impulses: ``(K, 3)`` impulses in the contact frames [N·s].
        h: step [s] (> 0).
        sensor_origin: ``(3,)`` world position of the sensor origin [m].
        sensor_rot: ``(3, 3)`` sensor → world rotation.
        out: ``(6,)`` accumulator [N, N·m]: ``(F, T)`` of the module docstring is added.
    """
    force = np.zeros(3)
    torque = np.zeros(3)
    for i in range(count):
        f = frames[i].T @ impulses[i] / h
        fx, fy, fz = f[0], f[1], f[2]
        rx = contacts[i, ROW_POINT] - sensor_origin[0]
        ry = contacts[i, ROW_POINT + 1] - sensor_origin[1]
        rz = contacts[i, ROW_POINT + 2] - sensor_origin[2]
        force[0] += fx
        force[1] += fy
        force[2] += fz
        torque[0] += ry * fz - rz * fy
        torque[1] += rz * fx - rx * fz
        torque[2] += rx * fy - ry * fx
    for a in range(3):
        out[a] += sensor_rot[0, a] * force[0] + sensor_rot[1, a] * force[1] + sensor_rot[2, a] * force[2]
        out[3 + a] += sensor_rot[0, a] * torque[0] + sensor_rot[1, a] * torque[1] + sensor_rot[2, a] * torque[2]


def add_sensor_errors(reading: np.ndarray, bias, noise_std, rng: np.random.Generator | None) -> np.ndarray:
    """``reading + bias + N(0, noise_std)`` ``(6,)`` [N, N·m]: the F/T sensor's errors of ``WorldParams``.

    Args:
        reading: ``(6,)`` ideal reading. bias, noise_std: ``(6,)`` from ``WorldParams.ft_bias`` /
            ``ft_noise_std``. rng: the generator of the noise; required when any ``noise_std`` is non-zero.

    Raises:
        InvalidInputError: noise is requested without a generator.
    """
    out = np.asarray(reading, dtype=np.float64) + np.asarray(bias, dtype=np.float64)
    if any(noise_std):
        if rng is None:
            raise InvalidInputError("this world adds F/T noise: pass rng=np.random.default_rng(seed)")
        out = out + rng.normal(0.0, noise_std)
    return out
