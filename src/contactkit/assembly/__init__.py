"""Data-driven simulation of tight-tolerance assembly (the data-driven simulation paper): the peg-in-hole and
bolting tasks, the high-fidelity reference data, learned contact clustering (§III-B), the C-space contact model
(§IV) and the simulator that combines them with the engine's block SOR and passive midpoint integration (§II).

Layer: above :mod:`contactkit.data` (it writes reference datasets) and below :mod:`contactkit.eval`.
"""

from contactkit.assembly.task import (
    DEFAULT_NETS,
    REFERENCE_DT,
    SIM_DT,
    AssemblyKind,
    AssemblyTask,
    assembly_task,
    bolting_task,
    peg_in_hole_task,
)

__all__ = [
    "DEFAULT_NETS",
    "REFERENCE_DT",
    "SIM_DT",
    "AssemblyKind",
    "AssemblyTask",
    "assembly_task",
    "bolting_task",
    "peg_in_hole_task",
]
