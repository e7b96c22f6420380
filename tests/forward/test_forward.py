"""The forward derivative engine against nested autograd (the derivative plan).

Every comparison is in float64 unless stated: the engine's values equal
``plan.evaluate(model(x), x)`` for every multi-index up to order 4, and the
parameter gradients of losses built from them equal autograd's.
"""

import copy
import functools
import itertools
from pathlib import Path

import pytest
import torch
from torch import nn

import pinnspec
from pinnspec.compiler import DerivativePlan
from pinnspec.compiler import _derivatives as plan_module
from pinnspec.compiler import LinearOperator
from pinnspec.forward import LAYOUTS, activation_derivatives, closure, faa_di_bruno, forward_values, propagate, supports
from pinnspec.models import MLP, mlp

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(ROOT.glob("specs/*.pinn")) + sorted(ROOT.glob("examples/*/*.pinn"))
ACTIVATIONS = ("tanh", "sin", "silu", "gelu")
F64 = torch.float64


def make_model(d, n_out, width, depth, activation, seed=0, dtype=F64):
    model = mlp(width=width, depth=depth, activation=activation).build(
        d, n_out, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    with torch.no_grad():  # non-zero biases, so that every derivative is generic
        g = torch.Generator().manual_seed(seed + 1)
        for layer in model.layers:
            layer.bias.copy_(0.3 * torch.randn(layer.bias.shape, generator=g, dtype=dtype))
    return model


def all_needs(d, n_fields, max_order=4):
    return {(f, mi) for f in range(n_fields) for k in range(max_order + 1)
            for mi in itertools.combinations_with_replacement(range(d), k)}


def make_plan(needs, d, n_fields):
    return DerivativePlan.build(set(needs), tuple(f"u{i}" for i in range(n_fields)), tuple(f"x{i}" for i in range(d)))


def points(n, d, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, d, generator=g, dtype=dtype) * 2 - 1).requires_grad_(True)


def weighted_loss(values):
    """A scalar mixing every value non-linearly (so every derivative feeds the gradient)."""
    total = 0
    for i, v in enumerate(values.values()):
        total = total + (1 + 0.1 * i) * (v.square().mean() + 0.5 * v.mean())
    return total


# ---------------------------------------------------------------- the pieces

@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_derivatives_match_autograd(name):
    z = torch.linspace(-4, 4, 41, dtype=F64, requires_grad=True)
    fn = MLP(1, 1, 1, 1, name).activation
    order = 6
    ours = activation_derivatives(name, z, order)
    current = fn(z)
    for m in range(order + 1):
        torch.testing.assert_close(ours[m], current, rtol=1e-10, atol=1e-10, msg=f"{name}^({m})")
        (current,) = torch.autograd.grad(current.sum(), z, create_graph=True)


def test_faa_di_bruno_counts():
    # the coefficients of a multi-index of order k sum to the Bell number of k
    for k, bell in enumerate([1, 1, 2, 5, 15, 52], start=0):
        if k:
            assert sum(c for _, _, c in faa_di_bruno((0,) * k)) == bell
            assert sum(c for _, _, c in faa_di_bruno(tuple(range(k)))) == bell  # all distinct: one term each
            assert len(faa_di_bruno(tuple(range(k)))) == bell
    assert faa_di_bruno((0, 0)) == ((1, ((0, 0),), 1), (2, ((0,), (0,)), 1))
    assert closure([(0, 0, 1)]) == ((0,), (1,), (0, 0), (0, 1), (0, 0, 1))
    assert closure([(0, 0), (1, 1)]) == ((0,), (1,), (0, 0), (1, 1))


# ---------------------------------------------------------------- values and gradients

ARCHITECTURES = [(8, 1, 1), (16, 3, 2), (5, 4, 3)]  # (width, depth, fields)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_every_derivative_to_order_4(activation, d):
    n = 6 if d == 5 else 9
    for a, (width, depth, fields) in enumerate(ARCHITECTURES):
        if d == 5 and a == 1:
            depth = 2  # keeps the 56 nested autograd calls of order 4 in 5-D quick
        model = make_model(d, fields, width, depth, activation, seed=10 * d + a)
        plan = make_plan(all_needs(d, fields), d, fields)
        x = points(n, d, seed=a)
        expected = plan.evaluate(model(x), x)
        for layout in LAYOUTS:
            got = forward_values(model, plan, x, layout=layout)
            assert list(got) == list(expected)
            for key in expected:
                assert got[key].shape == (n,)
                torch.testing.assert_close(got[key], expected[key], rtol=1e-10, atol=1e-10, msg=f"{layout} {key}")


def _param_grads(model, values, extra=()):
    params = list(model.parameters()) + list(extra)
    return torch.autograd.grad(weighted_loss(values), params, allow_unused=True)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_parameter_gradients(activation, d):
    fields = 2
    model = make_model(d, fields, 12, 3, activation, seed=d)
    max_order = 3 if d == 5 else 4
    plan = make_plan(all_needs(d, fields, max_order), d, fields)
    x = points(7, d, seed=d)
    ga = _param_grads(model, plan.evaluate(model(x), x))
    for layout in LAYOUTS:
        gb = _param_grads(model, forward_values(model, plan, x, layout=layout))
        for a, b in zip(ga, gb):
            torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12 * max(1.0, a.abs().max().item()))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_hessian_vector_products(activation):
    """The engine's graph stays differentiable: double backward through the loss (as the
    second-order optimizers do) equals autograd's."""
    d, fields = 2, 2
    model = make_model(d, fields, 10, 2, activation, seed=3)
    plan = make_plan({(0, ()), (0, (0,)), (1, (1,)), (0, (0, 0)), (1, (0, 1))}, d, fields)
    x = points(9, d)
    params = list(model.parameters())
    v = [torch.randn(p.shape, generator=torch.Generator().manual_seed(i), dtype=F64) for i, p in enumerate(params)]

    def hvp(values):
        grads = torch.autograd.grad(weighted_loss(values), params, create_graph=True)
        return torch.autograd.grad(sum((g * u).sum() for g, u in zip(grads, v)), params)

    expected = hvp(plan.evaluate(model(x), x))
    for layout in LAYOUTS:
        for a, b in zip(expected, hvp(forward_values(model, plan, x, layout=layout))):
            torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12)


def test_propagate_layouts_and_arguments():
    model = make_model(3, 2, 6, 2, "silu")
    x = points(5, 3)
    mis = ((0,), (2,), (0, 2), (1, 1, 2))
    u, rows = propagate(model, x, mis)
    u2, stack = propagate(model, x, mis, layout="stack")
    assert rows.shape == stack.shape == (4, 5, 2)
    torch.testing.assert_close(rows, stack, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(u, model(x), rtol=0, atol=0)
    assert propagate(model, x, ())[1] is None
    for bad in (((1,), (0,)), ((0,), (0,)), ((),), ((3,),)):
        with pytest.raises(ValueError):
            propagate(model, x, bad)
    with pytest.raises(ValueError, match="layout"):
        propagate(model, x, mis, layout="columns")


@pytest.mark.parametrize("needs", [
    {(0, ())},                                    # values only
    {(0, (0, 0)), (0, (1, 1)), (0, (2, 2))},      # a Laplacian: no mixed terms carried
    {(1, (0, 1, 1)), (0, (2,))},                  # a lone third derivative of one field
    {(0, (1, 1, 1, 1)), (1, ())},                 # a lone fourth derivative
])
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_sparse_needs_and_shallow_networks(needs, depth):
    model = make_model(3, 2, 10, depth, "tanh", seed=depth)
    plan = make_plan(needs, 3, 2)
    x = points(11, 3)
    expected = plan.evaluate(model(x), x)
    got = forward_values(model, plan, x)
    assert list(got) == list(expected)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=1e-10, atol=1e-10)
    if depth == 0 and all(len(mi) > 1 for _, mi in needs):  # an affine network: every value is 0
        assert not any(v.any() for v in got.values())
        return
    ga = _param_grads(model, expected)
    gb = _param_grads(model, got)
    for a, b in zip(ga, gb):
        if a is None:
            assert b is None or not b.any()
        else:
            torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12)


def test_float32_inputs_without_grad_and_first_order_graph():
    model = make_model(2, 1, 16, 3, "tanh", dtype=torch.float32)
    plan = make_plan({(0, ()), (0, (0,)), (0, (1,)), (0, (0, 0))}, 2, 1)
    x = points(50, 2, dtype=torch.float32)
    got = forward_values(model, plan, x.detach())  # the engine needs no grad on x
    expected = plan.evaluate(model(x), x)
    for key in expected:
        assert got[key].dtype == torch.float32
        torch.testing.assert_close(got[key], expected[key], rtol=1e-5, atol=1e-6)

    ours = set(_node_list(weighted_loss(got)))
    theirs = set(_node_list(weighted_loss(expected)))
    assert any("BackwardBackward" in n for n in theirs)  # nested autograd builds double-backward nodes
    assert not any("BackwardBackward" in n for n in ours)  # the forward engine does not


# ---------------------------------------------------------------- linear operators: one row each

OPERATORS = [
    LinearOperator((((1,), 1.0), ((0, 0), -0.3))),                              # u_t - nu u_xx (Burgers)
    LinearOperator((((0, 0), 1.0), ((1, 1), 1.0), ((2, 2), 1.0))),               # a Laplacian
    LinearOperator((((2,), 1.0), ((0,), 0.5), ((0, 1, 1), -2.0))),               # first and third order
    LinearOperator((((0, 1), 1.0), ((0, 0, 2), 0.25), ((1, 1, 2, 2), -0.5))),    # mixed, up to order 4
]
OPERATOR_NEEDS = [
    {(0, ()), (0, (0,)), (0, OPERATORS[0]), (1, OPERATORS[0])},   # one operator row read by two fields
    {(0, op) for op in OPERATORS} | {(1, (1, 2))},                 # every operator and a plain derivative
    {(1, OPERATORS[3]), (0, ())},                                  # an operator alone
]


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_operator_rows_match_autograd(activation, depth):
    """An operator row equals the sum of its terms by nested autograd, and so do parameter gradients."""
    model = make_model(3, 2, 9, depth, activation, seed=depth)
    x = points(8, 3, seed=depth)
    for needs in OPERATOR_NEEDS:
        plan = make_plan(needs, 3, 2)
        expected = plan.evaluate(model(x), x)
        expected_grads = _param_grads(model, expected)
        for layout in LAYOUTS:
            got = forward_values(model, plan, x, layout=layout)
            assert list(got) == list(expected)
            for key in expected:
                torch.testing.assert_close(got[key], expected[key], rtol=1e-10, atol=1e-10, msg=f"{layout} {key}")
            for a, b in zip(expected_grads, _param_grads(model, got)):
                if a is None:
                    assert b is None or not b.any()
                else:
                    torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12, msg=layout)


def test_an_operator_is_one_row_of_matrix_products():
    """Burgers' u, u_x, u_t - nu u_xx: 3 products per hidden layer, against 4 for u, u_x, u_t, u_xx."""
    model = make_model(2, 1, 16, 4, "tanh")
    x = points(10, 2)

    def products(needs):
        values = forward_values(model, make_plan(needs, 2, 1), x.detach())
        return sum(n in ("MmBackward0", "AddmmBackward0") for n in _node_list(weighted_loss(values)))

    plain = products({(0, ()), (0, (0,)), (0, (1,)), (0, (0, 0))})
    combined = products({(0, ()), (0, (0,)), (0, OPERATORS[0])})
    assert (plain, combined) == (4 * 3 + 4 + 1, 3 * 3 + 3 + 1)  # 3 hidden-to-hidden layers, the output, the input


def _node_list(t):
    seen, stack, names = set(), [t.grad_fn], []
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.append(type(fn).__name__)
        stack.extend(f for f, _ in fn.next_functions)
    return names


# ---------------------------------------------------------------- support

def test_supports():
    assert supports(make_model(2, 1, 8, 2, "tanh"))
    for name in ACTIVATIONS:
        assert supports(make_model(2, 1, 8, 2, name))
    assert not supports(nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1)))
    assert not supports(lambda x: x)

    class Custom(MLP):
        def forward(self, x):
            return super().forward(x) * 2

    assert not supports(Custom(2, 1, 8, 2, "tanh"))
    odd = make_model(2, 1, 8, 2, "tanh")
    odd.activation = torch.sin  # name and function disagree
    assert not supports(odd)
    hooked = make_model(2, 1, 8, 2, "tanh")
    hooked.layers[1].register_forward_hook(lambda *a: None)
    assert not supports(hooked)
    with pytest.raises(TypeError, match="does not support"):
        forward_values(nn.Sequential(nn.Linear(2, 1)), make_plan({(0, ())}, 2, 1), points(3, 2))


# ---------------------------------------------------------------- whole losses of every spec

@functools.cache
def _compiled(path):
    """Each spec compiled once for its four cases (its kernels and points depend on neither dtype nor layout)."""
    return pinnspec.compile(path)


def _loss_grads(problem, model, pts, params, use_forward, monkeypatch, layout="rows"):
    if use_forward:
        monkeypatch.setattr(plan_module.DerivativePlan, "evaluate",
                            lambda self, outputs, x: forward_values(model, self, x, layout=layout))
    else:
        monkeypatch.undo()
    losses = problem.losses(model, pts, params)
    total = losses.tasks.sum()
    leaves = list(model.parameters()) + list(params.values())
    grads = torch.autograd.grad(total, leaves, allow_unused=True)
    flat = torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(leaves, grads)])
    return losses.tasks.detach(), flat


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float64, 1e-10)], ids=["f32", "f64"])
@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_spec_loss_gradients(path, dtype, tol, layout, monkeypatch):
    """The losses' parameter gradients by the forward engine (either layout of its hidden layers) equal
    nested autograd's; in float32 both are as far from the float64 truth."""
    problem = _compiled(path)
    model = mlp(width=16, depth=3).build(problem.dim, len(problem.fields),
                                         generator=torch.Generator().manual_seed(0), dtype=dtype)
    params = problem.init_params(dtype=dtype)
    pts = problem.sample(0, dtype=dtype)
    tasks_a, grad_a = _loss_grads(problem, model, pts, params, False, monkeypatch)
    tasks_b, grad_b = _loss_grads(problem, model, pts, params, True, monkeypatch, layout)
    assert torch.isfinite(grad_a).all()
    torch.testing.assert_close(tasks_b, tasks_a, rtol=tol, atol=0)
    relative = ((grad_b - grad_a).norm() / grad_a.norm()).item()
    if dtype == torch.float32:
        # both float32 paths sit ~1e-7..9e-7 from the float64 truth (summation order), so their
        # difference is float32 noise; also check that the forward engine is no less accurate
        model64 = copy.deepcopy(model).double()
        _, truth = _loss_grads(problem, model64, problem.sample(0, dtype=F64), problem.init_params(dtype=F64),
                               False, monkeypatch)
        error_a = ((grad_a.double() - truth).norm() / truth.norm()).item()
        error_b = ((grad_b.double() - truth).norm() / truth.norm()).item()
        assert error_b <= 1.5 * error_a + 1e-7, f"forward {error_b:.2e} vs autograd {error_a:.2e} from float64"
    assert relative <= tol, f"{path.name}: relative gradient difference {relative:.2e}"


def test_the_compiled_tanh_form_equals_torch_tanh():
    """Compiled graphs take tanh z = expm1(2z) / (expm1(2z) + 2) (faster under inductor): the same
    values to rounding over every scale, exact limits, no cancellation near 0."""
    from pinnspec.forward._activations import _tanh_by_expm1

    z = torch.cat([torch.randn(20_000, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * s
                   for s in (1e-12, 1e-6, 1.0, 10.0, 100.0)])
    exact = torch.tanh(z)
    assert float(((_tanh_by_expm1(z) - exact).abs() / exact.abs()).max()) < 2e-15
    limits = _tanh_by_expm1(torch.tensor([-float("inf"), -1e4, 0.0, 1e4, float("inf")], dtype=torch.float64))
    assert limits.tolist() == [-1.0, -1.0, 0.0, 1.0, 1.0]
    z32 = z.float()
    assert float(((_tanh_by_expm1(z32).double() - exact).abs() / exact.abs()).max()) < 4e-7
