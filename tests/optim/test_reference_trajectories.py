"""Reference trajectories the other file leaves out (tests/optim/test_references.py has the helpers):
AdaHessian with a Hessian period > 1, and SOAP on a 3-D parameter tensor, each against
pytorch-optimizer for 25 steps, theta <- theta - lr * u against reference.step()."""

from dataclasses import replace

import pytest
import torch
from test_references import STEPS, _hutchinson_estimates, assert_same, directions, run_ours, run_reference

from pinnspec.optim import SOAP, AdaHessian, ParamLayout

LAYOUT = ParamLayout(tuple([(5, 3), (5,), (2, 5), (2,)]))  # test_references.SHAPES


@pytest.mark.parametrize("period, power, weight_decay", [(2, 1.0, 0.0), (3, 0.5, 0.01)])
def test_adahessian_with_a_hessian_period(period, power, weight_decay):
    """The Hessian EMA moves on steps 1, 1 + k, 1 + 2k, ... only (pytorch-optimizer's update_period): in
    between, the step divides by the last v.  Weight decay: pytorch-optimizer's decoupled theta (1 - lr
    lambda) is the proposal's lambda theta_t."""
    po = pytest.importorskip("pytorch_optimizer")
    theta0 = directions(1, LAYOUT.numel, seed=21)[0]
    sequence = directions(STEPS, LAYOUT.numel, seed=22)
    estimates = _hutchinson_estimates(STEPS, seed=23)
    ours = AdaHessian(lr=0.05, hessian_power=power, weight_decay=weight_decay, hessian_every=period)
    hessians = [h if t % period == 0 else None for t, h in enumerate(estimates)]
    state = ours.init(theta0, LAYOUT.shapes)
    due = [ours.hessian_due(replace(state, step=t)) for t in range(2 * period + 1)]
    assert due == [t % period == 0 for t in range(2 * period + 1)]
    reference = run_reference(lambda ps: po.AdaHessian(ps, lr=0.05, betas=(0.9, 0.999), eps=1e-4,
                                                       weight_decay=weight_decay, hessian_power=power,
                                                       update_period=period),
                              theta0, sequence,
                              step_kwargs=lambda t: {} if hessians[t] is None else
                              {"hessian": [h.clone() for h in LAYOUT.split(hessians[t])]})
    mine = run_ours(ours, theta0, sequence, hessians)
    assert_same(mine, reference)
    # the period matters: refreshing every step gives another trajectory
    every_step = run_ours(AdaHessian(lr=0.05, hessian_power=power, weight_decay=weight_decay), theta0, sequence,
                          estimates)
    assert not torch.allclose(every_step[-1], mine[-1], rtol=1e-6, atol=0)


@pytest.mark.parametrize("max_precondition_dim", [10000, 3])
def test_soap_on_a_3d_tensor(max_precondition_dim):
    """A 3-D parameter tensor gets one Shampoo statistic and basis per dimension (with
    max_precondition_dim = 3 its dimension of size 4 is not rotated), next to a 1-D and a 2-D one."""
    po = pytest.importorskip("pytorch_optimizer")
    shapes = [(3, 4, 2), (4,), (2, 3)]
    layout = ParamLayout(tuple(shapes))
    theta0 = directions(1, layout.numel, seed=24)[0]
    sequence = directions(STEPS, layout.numel, seed=25)
    ours = SOAP(lr=3e-3, weight_decay=0.0, precondition_frequency=3, max_precondition_dim=max_precondition_dim)
    state = ours.init(theta0, shapes)
    rotated = [L is not None for L in state.preconditioners[0]]
    assert rotated == [True, max_precondition_dim >= 4, True]
    params = [torch.nn.Parameter(p.clone()) for p in layout.split(theta0)]
    reference = po.SOAP(params, lr=3e-3, betas=(0.95, 0.95), weight_decay=0.0, precondition_frequency=3,
                        max_precondition_dim=max_precondition_dim, eps=1e-8)
    theta, mine, theirs = theta0.clone(), [], []
    for a in sequence:
        u, state = ours.propose(a, state, params=theta)
        theta = theta - ours.lr * u
        mine.append(theta)
        for p, g in zip(params, layout.split(a)):
            p.grad = g.clone()
        reference.step()
        theirs.append(layout.join([p.detach() for p in params]))
    assert_same(mine, theirs, rtol=1e-9, atol=1e-11)
    assert (mine[-1] - theta0).abs().max() > 10 * 3e-3  # it moved
