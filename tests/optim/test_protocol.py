"""The proposal-form protocol: no mutation, layouts, metrics, registry, checkpoints."""

import math

import pytest
import torch

from pinnspec.optim import (SOAP, AdaHessian, Adam, ParamLayout, SophiaG, flat_shapes, make)
from pinnspec.registry import OPTIMIZERS, UnknownNameError

NAMES = ["sgd", "msgd", "rmsprop", "adam", "adamw", "sophiag", "adahessian", "soap"]
SHAPES = [(3, 4), (3,), (2, 3, 2), (1,)]


def test_registry_and_defaults():
    assert set(NAMES) <= set(OPTIMIZERS.names())
    assert OPTIMIZERS.entry("adam").parameters() == {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    assert OPTIMIZERS.entry("adamw").parameters()["weight_decay"] == 1e-2
    assert OPTIMIZERS.entry("sophiag").parameters() == {
        "lr": 1e-4, "beta1": 0.965, "beta2": 0.99, "rho": 0.04, "bs": 5120, "weight_decay": 0.1,
        "eps": 1e-15, "hessian_every": 10}
    assert OPTIMIZERS.entry("adahessian").parameters()["eps"] == 1e-4
    soap = OPTIMIZERS.entry("soap").parameters()
    assert (soap["lr"], soap["beta1"], soap["beta2"], soap["precondition_frequency"]) == (3e-3, 0.95, 0.95, 10)
    with pytest.raises(UnknownNameError, match="did you mean 'rmsprop'"):
        make("rmsprob")
    assert make("adam", lr=0.5).lr == 0.5


def same_tree(x, y):
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and torch.equal(x, y)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(same_tree(a, b) for a, b in zip(x, y))
    return x == y


def all_optimizers():
    return [make(name) for name in NAMES]


@pytest.mark.parametrize("optimizer", all_optimizers(), ids=NAMES)
def test_propose_does_not_touch_the_given_state(optimizer):
    layout = ParamLayout(tuple(SHAPES))
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(layout.numel, generator=gen)
    state = optimizer.init(theta, SHAPES)
    for _ in range(4):
        a = torch.randn(layout.numel, generator=gen)
        hessian = torch.rand(layout.numel, generator=gen) if optimizer.hessian_due(state) else None
        before = optimizer.state_dict(state)
        u, tentative = optimizer.propose(a, state, params=theta, hessian=hessian)
        after = optimizer.state_dict(state)
        for key in before:
            assert same_tree(before[key], after[key]), key
        assert u.shape == a.shape and u.dtype == a.dtype and torch.isfinite(u).all()
        metric = optimizer.metric(tentative)
        assert metric is None or (metric.shape == a.shape and (metric > 0).all())
        state = tentative


def test_adam_metric_is_torch_adams_denominator():
    theta = torch.randn(7, dtype=torch.float64)
    param = torch.nn.Parameter(theta.clone())
    reference = torch.optim.Adam([param])
    opt = Adam()
    state = opt.init(theta)
    for seed in range(5):
        a = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        param.grad = a.clone()
        reference.step()
        _, state = opt.propose(a, state)
    v = reference.state[param]["exp_avg_sq"]
    torch.testing.assert_close(opt.metric(state), v.sqrt() / math.sqrt(1 - 0.999 ** 5) + 1e-8)


def test_layout():
    layout = ParamLayout.of(SHAPES, 12 + 3 + 12 + 1)
    flat = torch.arange(28.0)
    parts = layout.split(flat)
    assert [tuple(p.shape) for p in parts] == SHAPES
    assert torch.equal(layout.join(parts), flat)
    rows = torch.stack([flat, -flat])
    assert torch.equal(layout.join(layout.split(rows), lead=1), rows)
    with pytest.raises(ValueError, match="hold"):
        ParamLayout.of([(2, 2)], 5)
    assert flat_shapes(torch.nn.Linear(3, 2).parameters()) == [(2, 3), (2,)]


def test_soap_rotates_matrices_and_keeps_vectors():
    opt = SOAP(weight_decay=0.0)
    layout = ParamLayout(tuple(SHAPES))
    gen = torch.Generator().manual_seed(1)
    theta = torch.randn(layout.numel, generator=gen, dtype=torch.float64)
    state = opt.init(theta, SHAPES)
    for _ in range(3):
        _, state = opt.propose(torch.randn(layout.numel, generator=gen, dtype=torch.float64), state)
    x = torch.randn(layout.numel, generator=gen, dtype=torch.float64)
    rotated = opt.to_basis(x, state)
    torch.testing.assert_close(opt.from_basis(rotated, state), x)
    torch.testing.assert_close(rotated.norm(), x.norm())
    assert torch.equal(layout.split(rotated)[1], layout.split(x)[1])  # 1-D: Adam coordinates
    assert not torch.allclose(layout.split(rotated)[0], layout.split(x)[0])


def test_state_dict_rejects_foreign_keys():
    opt = AdaHessian()
    with pytest.raises(KeyError, match="needs keys"):
        opt.load_state_dict({"step": 0})
    with pytest.raises(TypeError):
        opt.state_dict(SophiaG().init(torch.zeros(3)))
