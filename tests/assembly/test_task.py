"""The tight-tolerance tasks: parts, mass properties, nodes and networks fit together."""

import numpy as np
import pytest

from contactkit.assembly import AssemblyKind, assembly_task, bolting_task, peg_in_hole_task
from contactkit.errors import InvalidInputError


def test_peg_in_hole_task_matches_the_paper_fit():
    task = peg_in_hole_task()
    assert task.kind is AssemblyKind.PEG_IN_HOLE
    assert task.clearance == pytest.approx(32.5e-6, abs=1e-9)  # (50.035 - 49.97) / 2 mm
    # aluminium cylinder Ø 49.97 mm: mass = ρ V within the chamfer and faceting
    length = float(np.ptp(task.tool.vertices[:, 2]))
    assert task.body.mass == pytest.approx(2700 * np.pi * 0.024985**2 * length, rel=0.02)
    assert task.nodes.shape[1] == 3 and len(task.nodes) == len(np.unique(task.tool.vertices, axis=0))
    assert task.depth_net is not None and task.depth_net.mesh_sha256


def test_bolting_task_and_a_table_ii_pair():
    task = bolting_task()
    assert task.pitch == pytest.approx(5e-3) and task.clearance == pytest.approx(0.2e-3)
    other = bolting_task(0.039, 0.004)
    assert other.name == "M39x4" and other.depth_net is None  # the M48 network does not fit an M39 bolt
    assert other.body.mass < task.body.mass


def test_unknown_task_and_missing_network_are_named():
    with pytest.raises(InvalidInputError, match="unknown assembly task"):
        assembly_task("screwing")
    with pytest.raises(InvalidInputError, match="not found"):
        peg_in_hole_task(depth_net="no/such/net.safetensors")
