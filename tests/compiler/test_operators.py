"""Linear operators: which derivatives the compiler reads as one combination, and that the
kernels and losses stay the same values."""

import pytest
import torch

import pinnspec
from pinnspec.compiler._operators import forward_rows
from pinnspec.compiler import LinearOperator
from pinnspec.models import mlp

HEAD = "problem p\nspace x in [0, 1]\nspace y in [0, 1]\ntime t in [0, 1]\nfield u\nfield v\nparam k = 0.5\n"


def compile_equations(*equations: str):
    body = "".join(f"equation e{i}: {eq}\n" for i, eq in enumerate(equations))
    counts = ", ".join(f"e{i} 64" for i in range(len(equations)))  # equal counts: one shared point set
    return pinnspec.compile(pinnspec.loads(HEAD + body + f"points {counts}\n"))


def interior_needs(problem) -> str:
    return problem.describe_plan().splitlines()[2].strip()


# (equations on the interior, the plan's needs there, forward rows per hidden layer)
CASES = [
    # Burgers: u_t and u_xx enter only as u_t - nu u_xx; u_x stays (u u_x, and u_xx's chain rule)
    (["u_t + u*u_x - 0.01*u_xx = 0"], "needs: u, u_x, (u_t - 0.01*u_xx)", 2),
    # the heat equation in 2-D: one row instead of five
    (["u_t = 0.1*(u_xx + u_yy)"], "needs: (u_t - 0.1*u_xx - 0.1*u_yy)", 3),
    # one scale per residual: 2 u_t - 2 u_xx is the same operator as u_t - u_xx
    (["u_t - u_xx = 0", "2*u_t - 2*u_xx + v = 0"], "needs: (u_t - u_xx), v", 2),
    # different ratios in two residuals: no operator
    (["u_t - u_xx = 0", "u_t - 2*u_xx + v = 0"], "needs: u_t, u_xx, v", 3),
    # a derivative used non-linearly somewhere stays plain; the rest still combine
    (["u_t - u_xx - u_yy = 0", "u_xx*v = 0"], "needs: u_xx, (u_t - u_yy), v", 4),
    # a trainable coefficient is not constant: plain values
    (["u_t - k*u_xx - k*u_yy = 0"], "needs: u_t, u_xx, u_yy", 5),
    # a coordinate in the coefficient: plain values
    (["u_t - x*u_xx = 0"], "needs: u_t, u_xx", 3),
    # one term is not a combination
    (["u_t + u*u_x = 0"], "needs: u, u_x, u_t", 2),
    # no row saved (u_x is carried for u_xx anyway): plain values
    (["u_x + u_xx = 0"], "needs: u_x, u_xx", 2),
    # two fields with the same operator share its row
    (["u_t - u_xx = 0", "v_t - v_xx = 0"], "needs: (u_t - u_xx), (v_t - v_xx)", 2),
    # the other equation of a system may use a combined field's first derivative plainly
    (["u_t - u_xx - u_yy + v*u_x = 0", "u_x + v_y = 0"], "needs: u_x, (u_t - u_xx - u_yy), v, v_y", 3),
]


@pytest.mark.parametrize("equations,needs,rows", CASES, ids=[c[1] for c in CASES])
def test_operators_table(equations, needs, rows):
    problem = compile_equations(*equations)
    assert interior_needs(problem) == needs
    plan = problem.plans[0]
    plain = {mi for _, mi in plan.needs if mi and not isinstance(mi, LinearOperator)}
    assert forward_rows(plain, plan.operators) == rows


def test_operator_kernel_and_losses_equal_the_plain_ones():
    """The operator changes what a kernel reads, not what it returns: residuals through the
    nested-autograd plan (which sums the operator's terms) equal the symbolic ones elsewhere
    (tests/compiler/test_residuals.py); here the scale of a residual and the forward engine."""
    problem = compile_equations("3*u_t + u*u_x - 0.3*u_xx = 0")
    source = problem.kernel_source
    assert "def residual_e0(u, u_x, Lu):\n    # Lu = u_t - 0.1*u_xx\n    return (3*Lu + u*u_x,)" in source
    model = mlp(width=8, depth=3).build(3, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    points = problem.sample(0, dtype=torch.float64)
    x = points.sets[0].x
    (u, u_x, u_t, u_xx) = _plain_derivatives(model, x)
    expected = ((3 * u_t + u * u_x - 0.3 * u_xx) ** 2).mean()
    for engine in ("autograd", "forward"):
        problem.engine = engine
        got = problem.losses(model, points).conditions["e0"]
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


def _plain_derivatives(model, x):
    u = model(x)[:, 0]
    (g,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g[:, 0].sum(), x, create_graph=True)
    return u, g[:, 0], g[:, 2], gg[:, 0]


def test_verify_reads_the_terms_of_an_operator():
    # verify splits residuals into additive terms, which read u_t and u_xx one by one
    problem = pinnspec.compile(pinnspec.loads(
        "problem h\nspace x in [0, 1]\ntime t in [0, 1]\nfield u\n"
        "equation heat: u_t = 0.5*u_xx\nexact u = exp(-0.5*t)*sin(x)\npoints heat 50\n"))
    assert interior_needs(problem) == "needs: (u_t - 0.5*u_xx)"
    from pinnspec.compiler._verify import verify

    (check,) = [c for c in verify(problem) if c.name == "heat"]
    assert check.passed and check.rms < 1e-12


@pytest.mark.parametrize("spec,forward", [("burgers", True), ("schrodinger", False), ("beltrami", True)])
def test_auto_engine_uses_forward_rows_where_an_operator_is(spec, forward, monkeypatch):
    """engine = auto: the forward engine on a set with an operator (measured faster), nested autograd
    for plain second derivatives."""
    from pathlib import Path

    from pinnspec.compiler import _problem

    calls = []
    real = _problem.forward_values
    monkeypatch.setattr(_problem, "forward_values",
                        lambda model, plan, x, **kw: calls.append(plan) or real(model, plan, x, **kw))
    problem = pinnspec.compile(Path(__file__).resolve().parents[2] / "specs" / f"{spec}.pinn")
    assert problem.engine == "auto"
    model = mlp(width=8, depth=2).build(problem.dim, len(problem.fields), generator=torch.Generator().manual_seed(0),
                                        dtype=torch.float64)
    problem.losses(model, problem.sample(0, dtype=torch.float64))
    assert (problem.plans[0] in calls) is forward
