"""The residual ensemble: normalisation, per-member batches, and the gate (coverage and disagreement)."""

import torch

from contactkit.models.residual.network import GATE_FALLOFF, NetConfig, ResidualNet


def _net(seed=0):
    torch.manual_seed(seed)
    net = ResidualNet(NetConfig(4, 3, hidden=8, layers=2, members=3))
    x = torch.randn(200, 4)
    net.set_normalisation(x, torch.randn(200, 3) * 2 + 1)
    return net, x


def test_a_fresh_net_predicts_the_targets_mean_with_full_gate_inside_the_data():
    net, x = _net()
    corr, gate = net(x)
    torch.testing.assert_close(corr, net.out_mean.expand(200, 3))
    assert torch.all(gate == 1.0)


def test_coverage_gate_falls_to_zero_beyond_the_training_range():
    net, x = _net()
    far = net.in_mean + net.in_std * net.in_absmax * (GATE_FALLOFF + 0.1)
    corr, gate = net(far[None])
    assert float(gate) == 0.0 and torch.all(corr == 0)
    edge = net.in_mean + net.in_std * net.in_absmax * 0.99
    assert float(net(edge[None])[1]) == 1.0


def test_disagreement_gate_uses_the_calibrated_level():
    net, x = _net()
    with torch.no_grad():
        for w in net.weights:
            w.normal_()
    u = net.disagreement(x)
    net.u_cal.fill_(float(u.max()))
    assert torch.all(net(x)[1] == 1.0)
    net.u_cal.fill_(float(u.min()) / (GATE_FALLOFF + 1.0))
    assert torch.all(net(x)[1] == 0.0)


def test_each_member_reads_its_own_batch():
    net, x = _net()
    with torch.no_grad():
        net.weights[-1].normal_()
    per_member = torch.stack([x[:5], x[5:10], x[10:15]])
    out = net.members_normalised(per_member)
    for e in range(3):
        torch.testing.assert_close(out[e], net.members_normalised(per_member[e])[e])
