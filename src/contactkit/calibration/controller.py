"""The scene controller's fields a calibration may identify: its stiffness, its damping ratio and the tool centre
point (TCP) its spring acts on (issue 31 part 3: "the scene's controller describes a real cell ... calibrate can
identify them").

They belong to the scene (:class:`~contactkit.gains.ImpedanceGains`), not to the world, so a calibration carries them
as a dict of values applied to each log's scene (:func:`apply_controller`). Bounds are what a cell's Cartesian
impedance controller plausibly differs from the scene's nominal one by, not a window around any one cell:

* a stiffness scale of 0.25–4 on the scene's translational and rotational stiffness together (a cobot's Cartesian
  impedance is set within about a decade; the scene's gains are the user's nominal ones);
* a damping ratio of 0.2–2 (under- to over-damped settings of such controllers);
* a TCP within ±0.2 m of the tool origin on each axis (tool flanges to tool tips: centimetres to tens of
  centimetres; the scene's own bound is 2 m).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from contactkit.gains import ImpedanceGains

__all__ = ["CONTROLLER", "apply_controller", "controller_values"]

CONTROLLER = ("controller_stiffness_scale", "controller_damping_ratio", "tcp_offset_x", "tcp_offset_y", "tcp_offset_z")
"""The controller parameters (:data:`~contactkit.calibration.space.PARAMS` holds their bounds)."""


def controller_values(gains: ImpedanceGains) -> dict[str, float]:
    """The controller parameters of ``gains`` as a calibration starts from them: stiffness scale 1 (relative to the
    log's scene), the damping ratio (1 where the scene gives damping values), the TCP [m, tool frame]."""
    x, y, z = (float(v) for v in np.asarray(gains.tcp_offset, dtype=np.float64))
    ratio = float(gains.damping_ratio) if gains.damping_pos is None else 1.0
    return {"controller_stiffness_scale": 1.0, "controller_damping_ratio": ratio, "tcp_offset_x": x,
            "tcp_offset_y": y, "tcp_offset_z": z}


def apply_controller(gains: ImpedanceGains, values: dict[str, float]) -> ImpedanceGains:
    """``gains`` with the calibrated ``values`` (any subset of :data:`CONTROLLER`): stiffness scaled, damping from
    the ratio (damping values dropped), the TCP set."""
    if not values:
        return gains
    scale = float(values.get("controller_stiffness_scale", 1.0))
    tcp = np.asarray(gains.tcp_offset, dtype=np.float64).copy()
    for i, axis in enumerate("xyz"):
        tcp[i] = float(values.get(f"tcp_offset_{axis}", tcp[i]))
    changes = {"stiffness_pos": np.asarray(gains.stiffness_pos) * scale,
               "stiffness_rot": np.asarray(gains.stiffness_rot) * scale, "tcp_offset": tcp}
    if "controller_damping_ratio" in values:
        changes.update(damping_ratio=float(values["controller_damping_ratio"]), damping_pos=None, damping_rot=None)
    return dataclasses.replace(gains, **changes)
