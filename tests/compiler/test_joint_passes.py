"""Joint residual passes (`CompiledProblem.passes`, `residuals(joint=True)`): the point sets a pool joins are
evaluated by one network pass with their derivative plans' union; oracle: the residuals set by set, in float64."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.bench._peers import SPEC
from pinnspec.compiler import compile_spec
from pinnspec.engine import build_model
from pinnspec.lang import apply_overrides, loads

ROOT = Path(__file__).resolve().parents[2]


def _problem(spec):
    spec = apply_overrides(spec, {"dtype": "float64"})
    problem = compile_spec(spec)
    model = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float64)
    params = problem.init_params(device="cpu", dtype=torch.float64)
    return problem, model, params, problem.sample(0, dtype=torch.float64)


@pytest.mark.parametrize("spec", [pytest.param(loads(SPEC), id="deepxde-burgers-pooled-pde"),
                                  pytest.param(pinnspec.load(ROOT / "specs" / "burgers.pinn"), id="burgers-pool-walls-ic"),
                                  pytest.param(pinnspec.load(ROOT / "examples" / "advection_periodic" /
                                                             "advection_periodic.pinn"), id="periodic")])
@pytest.mark.parametrize("engine", ["forward", "autograd"])
def test_joint_passes_give_the_residuals_set_by_set(spec, engine):
    problem, model, params, points = _problem(apply_overrides(spec, {"engine": engine}))
    apart = problem.residuals(model, points, params)
    joint = problem.residuals(model, points, params, joint=True)
    assert joint.keys() == apart.keys()
    for name in apart:
        torch.testing.assert_close(joint[name], apart[name], rtol=1e-12, atol=1e-12)


def test_the_passes_join_the_sets_of_a_pool():
    problem = compile_spec(loads(SPEC))
    assert [indices for indices, _ in problem.passes] == [(0, 1, 2)]  # the PDE pooled over every set
    burgers = compile_spec(pinnspec.load(ROOT / "specs" / "burgers.pinn"))  # [N, pool(walls, ic)]
    assert [indices for indices, _ in burgers.passes] == [(0,), (1, 2)]
    (_, plan), = problem.passes
    assert plan.needs == problem.union_plan.needs
