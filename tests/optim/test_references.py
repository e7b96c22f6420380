"""Each optimizer, used with surgery `none` and no alignment, equals its reference
implementation: theta <- theta - lr * u reproduces reference.step() for >= 20 steps."""

import math

import pytest
import torch

from pinnspec.optim import (SGD, SOAP, AdaHessian, Adam, AdamW, MomentumSGD, ParamLayout, RMSProp, SophiaG,
                            hutchinson_diagonal)

SHAPES = [(5, 3), (5,), (2, 5), (2,)]
STEPS = 25


def directions(n, numel, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(numel, generator=gen, dtype=dtype) for _ in range(n)]


def run_ours(optimizer, theta0, sequence, hessians=None):
    theta = theta0.clone()
    state = optimizer.init(theta, SHAPES)
    trajectory = []
    for t, a in enumerate(sequence):
        hessian = None if hessians is None else hessians[t]
        u, state = optimizer.propose(a, state, params=theta, hessian=hessian)
        theta = theta - optimizer.lr * u
        trajectory.append(theta.clone())
    return trajectory


def run_reference(make, theta0, sequence, before_step=None, step_kwargs=None):
    layout = ParamLayout(tuple(SHAPES))
    params = [torch.nn.Parameter(p.clone()) for p in layout.split(theta0)]
    opt = make(params)
    trajectory = []
    for t, a in enumerate(sequence):
        if before_step is not None:
            before_step(opt, params, t)
        for p, g in zip(params, layout.split(a)):
            p.grad = g.clone()
        opt.step(**(step_kwargs(t) if step_kwargs else {}))
        trajectory.append(layout.join([p.detach() for p in params]))
    return trajectory


def assert_same(ours, reference, rtol=1e-10, atol=1e-12):
    for t, (x, y) in enumerate(zip(ours, reference)):
        torch.testing.assert_close(x, y, rtol=rtol, atol=atol, msg=lambda m: f"step {t + 1}: {m}")


@pytest.fixture
def theta0():
    return directions(1, ParamLayout(tuple(SHAPES)).numel, seed=123)[0]


def numel():
    return ParamLayout(tuple(SHAPES)).numel


@pytest.mark.parametrize("case", ["sgd", "msgd", "rmsprop", "adam", "adamw"])
def test_torch_optim(case, theta0):
    ours, make = {
        "sgd": (SGD(lr=0.1), lambda ps: torch.optim.SGD(ps, lr=0.1)),
        "msgd": (MomentumSGD(lr=0.05, momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9)),
        "rmsprop": (RMSProp(lr=1e-2, alpha=0.99, eps=1e-8),
                    lambda ps: torch.optim.RMSprop(ps, lr=1e-2, alpha=0.99, eps=1e-8)),
        "adam": (Adam(), lambda ps: torch.optim.Adam(ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8)),
        "adamw": (AdamW(lr=1e-2, weight_decay=0.1),
                  lambda ps: torch.optim.AdamW(ps, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
    }[case]
    sequence = directions(STEPS, numel(), seed=1)
    assert_same(run_ours(ours, theta0, sequence), run_reference(make, theta0, sequence))


def test_adam_float32(theta0):
    sequence = directions(STEPS, numel(), seed=2, dtype=torch.float32)
    theta = theta0.float()
    ref = run_reference(lambda ps: torch.optim.Adam(ps), theta, sequence)
    assert_same(run_ours(Adam(), theta, sequence), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_soap_pytorch_optimizer(weight_decay, theta0):
    po = pytest.importorskip("pytorch_optimizer")
    sequence = directions(STEPS, numel(), seed=3)
    ours = SOAP(lr=3e-3, weight_decay=weight_decay, precondition_frequency=4)
    ref = run_reference(lambda ps: po.SOAP(ps, lr=3e-3, betas=(0.95, 0.95), weight_decay=weight_decay,
                                           precondition_frequency=4, eps=1e-8), theta0, sequence)
    if weight_decay == 0:
        assert_same(run_ours(ours, theta0, sequence), ref, rtol=1e-9, atol=1e-11)
    else:
        # the reference decays theta after its step: a difference of lr^2 * lambda * step per step
        assert_same(run_ours(ours, theta0, sequence), ref, rtol=0, atol=STEPS * 3e-3 ** 2 * weight_decay * 10)


def test_soap_first_step_is_zero_and_1d_parameters_get_adam(theta0):
    opt = SOAP(weight_decay=0.0)
    state = opt.init(theta0, SHAPES)
    a = directions(1, numel(), seed=4)[0]
    u, state = opt.propose(a, state, params=theta0)
    assert torch.equal(u, torch.zeros_like(u))
    u, state = opt.propose(a, state, params=theta0)
    # the 1-D parameters are not rotated: their coordinates are Adam's (k = 1: m_hat = a, v_hat = a^2)
    layout = ParamLayout(tuple(SHAPES))
    bias = layout.split(u)[1]
    expected = layout.split(a)[1] / (layout.split(a)[1].abs() + 1e-8 / math.sqrt(1 - 0.95))
    torch.testing.assert_close(bias, expected)


def test_sophiag_sophia_opt(theta0):
    sophia_opt = pytest.importorskip("sophia_opt")
    sequence = directions(STEPS, numel(), seed=5)
    roots = directions(STEPS, numel(), seed=6)  # h_hat = r^2 >= 0: the estimate sophia-opt can take
    opt = SophiaG(lr=1e-2)  # lr raised so that the steps are visible; other settings the defaults
    hessians = [r * r if t % opt.hessian_every == 0 else None for t, r in enumerate(roots)]
    layout = ParamLayout(tuple(SHAPES))

    def before_step(ref, params, t):
        if hessians[t] is not None:
            for p, r in zip(params, layout.split(roots[t])):
                p.grad = r.clone()
            ref.update_hessian()

    ref = run_reference(lambda ps: sophia_opt.SophiaG(ps, lr=1e-2, betas=(0.965, 0.99), rho=0.04,
                                                      weight_decay=0.1),
                        theta0, sequence, before_step=before_step, step_kwargs=lambda t: {"bs": 5120})
    assert_same(run_ours(opt, theta0, sequence, hessians), ref)


def _hutchinson_estimates(n, seed):
    """Real Hutchinson estimates (they can be negative) on a small tanh model."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 3, generator=gen, dtype=torch.float64)
    layout = ParamLayout(tuple(SHAPES))
    estimates = []
    for _ in range(n):
        theta = torch.randn(layout.numel, generator=gen, dtype=torch.float64)
        params = [p.requires_grad_() for p in layout.split(theta.clone())]
        W1, b1, W2, b2 = params
        loss = ((torch.tanh(x @ W1.T + b1) @ W2.T + b2) ** 2).mean()
        estimates.append(hutchinson_diagonal(loss, params, generator=gen))
    return estimates


def test_sophiag_against_sophiah_with_hutchinson(theta0):
    """gamma = rho * bs = 1 and clip 1: SophiaG's map is pytorch-optimizer's SophiaH
    (p = 1), including negative Hutchinson estimates (both then clip to sign(m))."""
    po = pytest.importorskip("pytorch_optimizer")
    sequence = directions(STEPS, numel(), seed=7)
    estimates = _hutchinson_estimates(STEPS, seed=8)
    assert any((h < 0).any() for h in estimates)
    opt = SophiaG(lr=1e-2, rho=1.0, bs=1, weight_decay=0.0, eps=1e-12, hessian_every=3)
    hessians = [h if t % 3 == 0 else None for t, h in enumerate(estimates)]
    layout = ParamLayout(tuple(SHAPES))
    ref = run_reference(lambda ps: po.SophiaH(ps, lr=1e-2, betas=(0.965, 0.99), p=1.0, eps=1e-12,
                                              update_period=3, weight_decay=0.0),
                        theta0, sequence,
                        step_kwargs=lambda t: {} if hessians[t] is None else
                        {"hessian": [h.clone() for h in layout.split(hessians[t])]})
    assert_same(run_ours(opt, theta0, sequence, hessians), ref, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adahessian_pytorch_optimizer(weight_decay, theta0):
    po = pytest.importorskip("pytorch_optimizer")
    sequence = directions(STEPS, numel(), seed=9)
    estimates = _hutchinson_estimates(STEPS, seed=10)
    layout = ParamLayout(tuple(SHAPES))
    opt = AdaHessian(lr=0.05, weight_decay=weight_decay)
    ref = run_reference(lambda ps: po.AdaHessian(ps, lr=0.05, betas=(0.9, 0.999), eps=1e-4,
                                                 weight_decay=weight_decay, hessian_power=1.0),
                        theta0, sequence,
                        step_kwargs=lambda t: {"hessian": [h.clone() for h in layout.split(estimates[t])]})
    assert_same(run_ours(opt, theta0, sequence, estimates), ref)


def test_hessian_is_required_when_due(theta0):
    opt = AdaHessian()
    state = opt.init(theta0, SHAPES)
    assert opt.hessian_due(state)
    with pytest.raises(ValueError, match="Hessian estimate is due"):
        opt.propose(theta0, state, params=theta0)
    sophia = SophiaG(hessian_every=10)
    state = sophia.init(theta0)
    due = []
    for _ in range(21):
        due.append(sophia.hessian_due(state))
        _, state = sophia.propose(theta0, state, params=theta0, hessian=theta0.abs() if due[-1] else None)
    assert [i for i, d in enumerate(due) if d] == [0, 10, 20]


def test_hutchinson_matches_dense_hessian():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, generator=gen, dtype=torch.float64)
    W = torch.randn(2, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    c = torch.randn(2, generator=gen, dtype=torch.float64, requires_grad=True)

    def loss_of(W, c):
        return (torch.tanh(x @ W.T + c) ** 2).sum()

    estimate = hutchinson_diagonal(loss_of(W, c), [W, c], generator=torch.Generator().manual_seed(42), samples=3)
    H = torch.autograd.functional.hessian(lambda flat: loss_of(flat[:6].reshape(2, 3), flat[6:]),
                                          torch.cat([W.detach().reshape(-1), c.detach()]))
    replay = torch.Generator().manual_seed(42)
    expected = torch.zeros(8, dtype=torch.float64)
    for _ in range(3):
        z = torch.cat([(torch.randint(0, 2, (2, 3), generator=replay) * 2 - 1).reshape(-1),
                       torch.randint(0, 2, (2,), generator=replay) * 2 - 1]).double()
        expected += z * (H @ z) / 3
    torch.testing.assert_close(estimate, expected)
    # unbiased: the average over many samples approaches diag(H)
    many = hutchinson_diagonal(loss_of(W, c), [W, c], generator=torch.Generator().manual_seed(1), samples=4000)
    torch.testing.assert_close(many, H.diagonal(), atol=0.1 * H.abs().max().item(), rtol=0)


def test_weight_decay_needs_params(theta0):
    opt = AdamW()
    state = opt.init(theta0)
    with pytest.raises(ValueError, match="params=theta"):
        opt.propose(theta0, state)
