"""The differentiable step: closed forms of a pressed, a sliding, a free and an impacting tool, eq 8, invariance to
a turn of the whole scene about the vertical, and finite gradients while contact is made and broken."""

import numpy as np
import pytest
import torch

from contactkit.engine.diff.step import StepConfig, diff_step
from contactkit.errors import InvalidInputError
from contactkit.rotations import rotvec_to_quat

from ._scenes import N_PARAMS, PILLAR_HEIGHT, piece, scene, table, tool_tip

EXACT = StepConfig(cfm=1e-10)
"""A nearly rigid contact (single contacts are not redundant, so no regularisation is needed)."""


def run(s, cfg, pos, vel=(0.0, 0.0, 0.0), target=None, quat=(1.0, 0.0, 0.0, 0.0), theta=None):
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=float))[None]  # noqa: E731
    theta = t(np.zeros(N_PARAMS)) if theta is None else theta
    target = pos if target is None else target
    return diff_step(s, cfg, t(pos), t(quat), t(vel), t([0.0, 0.0, 0.0]), t(target), t(quat), theta)


def test_pressed_tip_reads_the_spring_force():
    s = scene(tool_tip(), (table(),), gravity=0.0)
    depth = 4e-3
    out = run(s, EXACT, [0.0, 0.0, 0.02], target=[0.0, 0.0, 0.02 - depth])
    np.testing.assert_allclose(out.wrench[0].detach().numpy(), [0, 0, 500.0 * depth, 0, 0, 0], atol=1e-7)
    assert out.pos[0, 2].item() == pytest.approx(0.02, abs=1e-12) and out.lcp_ok.all()


def test_sliding_tip_obeys_the_friction_bound():
    s = scene(tool_tip(), (table(),), gravity=0.0)
    out = run(s, EXACT, [0.0, 0.0, 0.02], target=[0.03, 0.0, 0.016])
    f = out.wrench[0].detach().numpy()
    assert f[2] > 0.5 and f[0] == pytest.approx(-0.5 * f[2], rel=1e-9)  # box friction along t1 = x: |f_x| = μ f_z
    assert out.lin_vel[0, 0].item() > 0.0  # and the tip slides


def test_free_step_is_the_implicit_spring_update():
    s = scene(tool_tip(), (table(),), gravity=0.0, com=(0.0, 0.0, 0.0))
    out = run(s, EXACT, [0.0, 0.0, 0.1], vel=[0.0, 0.0, 0.05], target=[0.0, 0.0, 0.09])
    m, k, d, h = 0.4, 500.0, 30.0, EXACT.dt
    v = (m * 0.05 + h * k * -0.01) / (m + h * d + h * h * k)
    assert out.lin_vel[0, 2].item() == pytest.approx(v, rel=1e-12)
    assert out.pos[0, 2].item() == pytest.approx(0.1 + h * v, rel=1e-12)
    assert torch.all(out.wrench == 0.0) and out.toi.item() == 1.0


def test_impact_splits_the_step_at_the_time_of_impact_and_eq8_is_its_gradient():
    floor = piece(np.array([[-0.05, -0.05, 0.0], [0.05, -0.05, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, -0.01]]), "floor",
                  _raise_with_pillar_height)
    s = scene(tool_tip(), (floor,),
              stiffness=(0.0, 0.0), damping=(0.0, 0.0), gravity=0.0, com=(0.0, 0.0, -0.005))
    speed, gap = 0.05, 1e-3
    theta = torch.zeros((1, N_PARAMS), dtype=torch.float64, requires_grad=True)
    out = run(s, EXACT, [0.0, 0.0, 0.02 + gap], vel=[0.0, 0.0, -speed], theta=theta)
    assert out.toi.item() == pytest.approx(gap / (EXACT.dt * speed), rel=1e-12)
    # inelastic stop on the floor: the impulse m·v over the step, the tool at rest where it touched
    assert out.wrench[0, 2].item() == pytest.approx(0.4 * speed / EXACT.dt, rel=1e-6)
    assert out.pos[0, 2].item() == pytest.approx(0.02, abs=1e-9) and abs(out.lin_vel[0, 2].item()) < 1e-8
    # eq 8: ∂toi/∂θ = n·(∂p_env/∂θ - ∂p_tool/∂θ)/(Δ · v_n): raising the floor by h brings the impact earlier
    grad = torch.autograd.grad(out.toi.sum(), theta)[0][0].numpy()
    assert grad[PILLAR_HEIGHT] == pytest.approx(-1.0 / (EXACT.dt * speed), rel=1e-9)
    assert grad[1] == pytest.approx(-1.0 / (EXACT.dt * speed), rel=1e-9)  # a longer tip: the same


def _raise_with_pillar_height(v):
    out = np.zeros((N_PARAMS, len(v), 3))
    out[PILLAR_HEIGHT, :, 2] = 1.0
    return out


def test_reading_is_invariant_to_turning_the_scene_about_the_vertical():
    angle = 0.7
    turn = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1.0]])
    corners = np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.2, 0.2) for z in (-0.02, 0.0)])
    straight = scene(tool_tip(), (piece(corners, "table"),), gravity=0.0)
    turned = scene(tool_tip(), (piece(corners @ turn.T, "table"),), gravity=0.0)
    q0 = rotvec_to_quat(np.array([0.02, -0.01, 0.0]))
    q1 = rotvec_to_quat(np.array([0.0, 0.0, angle]))
    from contactkit.rotations import quat_mul

    pos = np.array([0.003, -0.002, 0.0199])
    a = run(straight, StepConfig(), pos, target=pos + [0.0005, 0.0, -0.004], quat=q0)
    b = run(turned, StepConfig(), turn @ pos, target=turn @ (pos + [0.0005, 0.0, -0.004]), quat=quat_mul(q1, q0))
    assert a.wrench[0, 2].item() > 0.5
    np.testing.assert_allclose(b.wrench.detach().numpy(), a.wrench.detach().numpy(), atol=1e-10)


@pytest.mark.parametrize("speed", [0.0, 0.02])
def test_gradients_stay_finite_while_contact_is_made_and_broken(speed):
    s = scene(tool_tip(), (table(),))
    for lift in np.linspace(-5e-4, 1.5e-3, 9):
        theta = torch.zeros((1, N_PARAMS), dtype=torch.float64, requires_grad=True)
        pos = torch.tensor([[0.001, 0.0, 0.02 + lift]], requires_grad=True)
        t = lambda x: torch.as_tensor(np.asarray(x, dtype=float))[None]  # noqa: E731
        out = diff_step(s, StepConfig(), pos, t([1.0, 0, 0, 0]), t([0.0, 0.0, -speed]), t([0.0, 0.0, 0.0]),
                        t([0.001, 0.0, 0.016]), t([1.0, 0, 0, 0]), theta)
        grads = torch.autograd.grad(out.wrench.sum() + out.pos.sum(), (theta, pos))
        assert all(torch.isfinite(g).all() for g in grads) and torch.isfinite(out.wrench).all()


def test_theta_of_the_wrong_size_is_refused():
    s = scene(tool_tip(), (table(),))
    with pytest.raises(InvalidInputError, match="theta"):
        run(s, StepConfig(), [0.0, 0.0, 0.1], theta=torch.zeros((1, 2), dtype=torch.float64))


def test_a_problem_does_not_depend_on_the_rest_of_its_batch():
    """The speculative margin is each problem's own: a tip at rest 1.5 mm above the table keeps its (empty) feature
    pairs, structure and outputs whether it is stepped alone or beside a tip falling at 1 m/s."""
    s = scene(tool_tip(), (table(),))
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=float))  # noqa: E731
    quat, zero = t([[1.0, 0, 0, 0]] * 2), t([[0.0, 0.0, 0.0]] * 2)
    pos, vel = t([[0.0, 0.0, 0.0215], [0.05, 0.0, 0.03]]), t([[0.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    both = diff_step(s, StepConfig(), pos, quat, vel, zero, pos, quat, torch.zeros((2, N_PARAMS), dtype=torch.float64))
    alone = diff_step(s, StepConfig(), pos[:1], quat[:1], vel[:1], zero[:1], pos[:1], quat[:1],
                      torch.zeros((1, N_PARAMS), dtype=torch.float64))
    assert both.n_contacts[1] > 0 and both.n_contacts[0] == alone.n_contacts[0] == 0
    assert both.structure[0] == alone.structure[0]
    for a, b in ((both.wrench, alone.wrench), (both.pos, alone.pos), (both.lin_vel, alone.lin_vel)):
        np.testing.assert_array_equal(a[:1].numpy(), b.numpy())
