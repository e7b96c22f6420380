"""The exact periodic embedding (pinnspec.models._periodic): gamma against its formula, periodicity of the
value and derivatives at the box ends, nested autograd against the forward engine, derivatives against
central finite differences, the trunk's parameters, and dtype round trips.  Everything in float64."""

import copy
import math
import pickle

import pytest
import torch
from torch import nn

from pinnspec.compiler import DerivativePlan
from pinnspec.forward import forward_values, supports
from pinnspec.models import fourier_mlp, mlp, modified_mlp, pirate_net
from pinnspec.models._layers import TENSOR_OPS
from pinnspec.models._periodic import OpaquePeriodicEmbedding, PeriodicEmbedding

F64 = torch.float64
X_PERIODIC = ((0, -1.0, 2.0),)  # x on [-1, 1]; t (column 1) not periodic
XY_PERIODIC = ((1, -1.0, 2.0), (0, 0.25, 1.5))  # x on [0.25, 1.75], y on [-1, 1]; t (column 2) not

INNERS = {
    "mlp": mlp(width=16, depth=3),
    "fourier_mlp": fourier_mlp(width=12, depth=2, features=6, fourier=1.0),
    "modified_mlp": modified_mlp(width=12, depth=2),
    "pirate_net": pirate_net(width=10, blocks=1, features=5),
}


def build(name, in_dim=2, periodic=X_PERIODIC, n_out=2, seed=0):
    """The wrapped trunk, its parameters moved off their initial values (generic derivatives)."""
    inner = INNERS[name].build(in_dim + len(periodic), n_out, generator=torch.Generator().manual_seed(seed), dtype=F64)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in inner.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g, dtype=F64))
    return PeriodicEmbedding(inner, in_dim, periodic)


def gamma(x, periodic):
    """The documented embedding, straight from the formula."""
    columns = sorted(periodic)
    kept = [x[:, c] for c in range(x.shape[1]) if c not in {c for c, _, _ in columns}]
    pairs = []
    for c, lo, period in columns:
        theta = 2 * math.pi * (x[:, c] - lo) / period
        pairs += [torch.cos(theta), torch.sin(theta)]
    return torch.stack(kept + pairs, dim=1)


def all_needs(d, n_out, max_order=2):
    mis = [()] + [(i,) for i in range(d)] + [(i, j) for i in range(d) for j in range(i, d)]
    return {(f, mi) for f in range(n_out) for mi in mis if len(mi) <= max_order}


def plan_for(d, n_out):
    return DerivativePlan.build(all_needs(d, n_out), tuple(f"u{f}" for f in range(n_out)),
                                tuple(f"x{i}" for i in range(d)))


def both_engines(model, x, n_out):
    """(nested autograd on model(x), the forward engine), each {(field, multi-index): [N]}."""
    plan = plan_for(x.shape[1], n_out)
    xg = x.clone().requires_grad_(True)
    return plan.evaluate(model(xg), xg), forward_values(model, plan, x)


def ends(n, d, column, lo, period, seed=5):
    """Random points twice: column ``column`` at lo, then at lo + period (the other columns shared)."""
    x = torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64) * 2 - 1
    left, right = x.clone(), x.clone()
    left[:, column], right[:, column] = lo, lo + period
    return torch.cat([left, right])


def interior(n, d, seed=7):
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64) * 2 - 1


@pytest.mark.parametrize("name", INNERS)
@pytest.mark.parametrize("in_dim, periodic", [(2, X_PERIODIC), (3, XY_PERIODIC)])
def test_periodic_in_value_and_derivatives_and_engine_equals_autograd(name, in_dim, periodic):
    model = build(name, in_dim, periodic)
    assert supports(model)
    for column, lo, period in periodic:
        n = 6
        x = torch.cat([ends(n, in_dim, column, lo, period), interior(5, in_dim)])
        autograd, engine = both_engines(model, x, 2)
        assert autograd.keys() == engine.keys()
        for key, value in autograd.items():
            torch.testing.assert_close(engine[key], value, rtol=0, atol=1e-10, msg=str(key))
            scale = 1 + value[:2 * n].abs().max().item()
            for got in (value, engine[key]):  # the same at both ends, to rounding
                assert (got[:n] - got[n:2 * n]).abs().max().item() <= 1e-12 * scale, key


@pytest.mark.parametrize("name", ["mlp", "modified_mlp"])
def test_derivatives_against_central_differences(name):
    model = build(name, 3, XY_PERIODIC, n_out=1)
    x = interior(4, 3, seed=11)
    _, engine = both_engines(model, x, 1)

    def u(shift):
        with torch.no_grad():
            return model(x + shift)[:, 0]

    def e(i, h):
        step = torch.zeros(3, dtype=F64)
        step[i] = h
        return step

    h1, h2 = 1e-5, 1e-4
    for i in range(3):
        torch.testing.assert_close(engine[(0, (i,))], (u(e(i, h1)) - u(e(i, -h1))) / (2 * h1), rtol=1e-7, atol=1e-8)
        for j in range(i, 3):
            fd = (u(e(i, h2) + e(j, h2)) - u(e(i, h2) - e(j, h2)) - u(e(j, h2) - e(i, h2))
                  + u(-e(i, h2) - e(j, h2))) / (4 * h2 * h2)
            torch.testing.assert_close(engine[(0, (i, j))], fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("in_dim, periodic", [(2, X_PERIODIC), (3, XY_PERIODIC)])
def test_embedding_order_width_and_formula(in_dim, periodic):
    model = build("mlp", in_dim, periodic)
    x = interior(9, in_dim)
    h = model.embed(TENSOR_OPS, x)
    assert model.embedded_dim == in_dim + len(periodic) == h.shape[1]
    assert model.inner.layers[0].in_features == model.embedded_dim
    torch.testing.assert_close(h, gamma(x, periodic), rtol=0, atol=1e-14)
    # the MLP path is MLP.forward on gamma, bit for bit
    assert torch.equal(model(x), model.inner(h))


def test_parameters_are_the_trunks_and_supports():
    for name in INNERS:
        model = build(name)
        assert [id(p) for p in model.parameters()] == [id(p) for p in model.inner.parameters()]
        assert list(model.state_dict()) == [f"inner.{k}" for k in model.inner.state_dict()]
        assert supports(model) and type(model) is PeriodicEmbedding
    sequential = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).to(F64)
    model = PeriodicEmbedding(sequential, 2, X_PERIODIC)
    assert isinstance(model, OpaquePeriodicEmbedding) and not supports(model)
    assert [id(p) for p in model.parameters()] == [id(p) for p in sequential.parameters()]
    x = ends(5, 2, 0, -1.0, 2.0)
    with torch.no_grad():
        u = model(x)
        torch.testing.assert_close(u, sequential(gamma(x, X_PERIODIC)), rtol=0, atol=1e-14)
        torch.testing.assert_close(u[:5], u[5:], rtol=0, atol=1e-13)
    with pytest.raises(TypeError):
        forward_values(model, plan_for(2, 1), x)


def test_copies_and_dtype_round_trips_keep_the_period_exact():
    model = build("mlp")
    x = ends(6, 2, 0, -1.0, 2.0)
    expected = model(x)
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert type(copied) is PeriodicEmbedding and torch.equal(copied(x), expected)
    model.float().double()  # 2 pi / L rounded once in float64 again, not a float32 value widened
    assert model.angle_weight.dtype == F64 and model.angle_weight[0, 0].item() == math.pi
    u = model(x)
    torch.testing.assert_close(u[:6], u[6:], rtol=0, atol=1e-12)
    opaque = PeriodicEmbedding(nn.Sequential(nn.Linear(3, 1)), 2, X_PERIODIC)
    assert type(copy.deepcopy(opaque)) is OpaquePeriodicEmbedding


@pytest.mark.parametrize("periodic", [(), ((2, 0.0, 1.0),), ((0, 0.0, 1.0), (0, 1.0, 1.0)), ((0, 0.0, 0.0),)])
def test_bad_columns(periodic):
    with pytest.raises(ValueError):
        PeriodicEmbedding(nn.Linear(3, 1), 2, periodic)
