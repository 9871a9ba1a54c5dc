"""The committed depth networks (models/depth-*) against issue 16's accuracy bar — max |error| within ±0.5 mm of
the surface ≤ 0.2 × the radial clearance (hole 6.5 µm, bolt 40 µm). The default bolt network, a piecewise set
(cut bottom, thread, chamfered top), meets it everywhere measured: at the nut's nodes in the thread region
(13.4 µm), by the thread's ends (21.3 µm) and over the whole band (15.9 µm), rng 12. The single network it
replaced meets it in the thread region only (25.6 µm; ends 62.3, band 52.6 µm over its card's points), and the
hole is AT the bar at the peg's nodes, not under it: those asserts hold the measured shortfall so that it cannot
grow unnoticed; see the model cards. The hole's max at the peg's nodes: 5.2-7.0 µm over four pose samples, so its
test holds that measured bound, not the bar."""

from pathlib import Path

import numpy as np
import pytest

from contactkit.depth import accuracy, load_depth_net, load_depth_nets
from contactkit.depth.presets import nut_nodes_on_bolt, peg_nodes_in_hole
from contactkit.geometry import bolt, paper_hole

MODELS = Path(__file__).resolve().parents[2] / "models"
HOLE = MODELS / "depth-paper-hole" / "hole.safetensors"
BOLT = MODELS / "depth-m48-bolt" / "pieces" / "bolt.json"
"""The default bolt network: a piecewise set (cut bottom, thread, chamfered top; its README)."""
SINGLE = MODELS / "depth-m48-bolt" / "bolt.safetensors"
"""The single network it replaced (one 2 × 64 network over the whole thread)."""
HOLE_NODES_MEASURED = 7.2e-6
"""[m] bound on the hole net's max error at the peg's nodes (measured 6.36, 7.04, 5.15, 5.63 µm for pose samples
rng 11-14; the bar, 0.2 × the 32.5 µm radial clearance = 6.5 µm, is not met on every sample)."""
BOLT_BAR = 40e-6
"""[m] 0.2 × the M48 pair's 0.2 mm radial play."""
HOLE_BAND_MEASURED = 13e-6
"""[m] bound on the hole net's max error over the whole band (measured 10.8-12.1 µm over 10,000 points for rng
11-14, 12.6 µm over the model card's 20,000; the bar is not met there)."""
BOLT_BAND_MEASURED = 60e-6
"""[m] bound on the single bolt net's max error over the whole band (measured 52.6 µm; the bar is not met there)."""
BOLT_ENDS_MEASURED = 70e-6
"""[m] bound on the single bolt net at the nut's nodes by the thread's ends (measured 30-62 µm over pose samples;
bar not met there)."""
THREAD_FROM = 2e-3
"""[m] the thread region (where the bolt bar is met) starts this far above the bottom face ..."""
THREAD_BELOW_CHAMFER = 1e-3
"""[m] ... and ends this far below the start of the top chamfer."""


def test_hole_net_holds_its_measured_accuracy():
    hole = paper_hole()
    net = load_depth_net(HOLE, hole)
    rng = np.random.default_rng(11)
    nodes = accuracy(net, hole, rng, points=peg_nodes_in_hole(rng))
    band = accuracy(net, hole, rng, n=10_000)
    assert nodes["n"] > 1000 and nodes["n_far"] == 0
    assert nodes["max_um"] <= HOLE_NODES_MEASURED * 1e6, nodes
    assert band["max_um"] <= HOLE_BAND_MEASURED * 1e6, band


def _bolt_accuracy(path) -> tuple[dict, dict, dict]:
    """Accuracy of the bolt net at ``path``: at the nut's nodes in the thread region, at its nodes by the
    thread's ends, and over the ±0.5 mm band (pose and band samples from rng 12)."""
    part = bolt()
    net = load_depth_nets(path, part)
    rng = np.random.default_rng(12)
    points = nut_nodes_on_bolt(rng, part)
    thread = (points[:, 2] > THREAD_FROM) & (points[:, 2] < part.meta["chamfer_start_z"] - THREAD_BELOW_CHAMFER)
    nodes = accuracy(net, part, rng, points=points[thread])
    ends = accuracy(net, part, rng, points=points[~thread])
    return nodes, ends, accuracy(net, part, rng, n=10_000)


REFINED = MODELS / "depth-m48-bolt" / "refined" / "bolt.safetensors"
REFINED_ENDS_MEASURED = 45e-6
"""[m] bound on the refined bolt net's max error at the nut's nodes by the thread's ends (measured 36.3-44.3 µm
for pose samples rng 12-14; default net: 34.8-62.3)."""
REFINED_BAND_MEASURED = 85e-6
"""[m] bound on the refined bolt net's max error over the whole band (measured 80.6 µm over the model card's
20,000 points: worse than the default net's 52.6 µm, which is why it is not the default)."""


@pytest.mark.parametrize(("net", "ends_bound", "band_bound"), [
    (BOLT, BOLT_BAR, BOLT_BAR), (SINGLE, BOLT_ENDS_MEASURED, BOLT_BAND_MEASURED),
    (REFINED, REFINED_ENDS_MEASURED, REFINED_BAND_MEASURED)], ids=["default-set", "single", "refined"])
def test_bolt_nets_meet_the_bar_in_the_thread_region_and_hold_their_measured_accuracy(net, ends_bound, band_bound):
    nodes, ends, band = _bolt_accuracy(net)
    assert nodes["n"] > 1000 and nodes["n_far"] == 0 and ends["n"] > 500 and band["n"] > 5000
    assert nodes["max_um"] <= BOLT_BAR * 1e6, nodes
    assert ends["max_um"] <= ends_bound * 1e6, ends
    assert band["max_um"] <= band_bound * 1e6, band
