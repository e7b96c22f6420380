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


def test_a_plain_loss_of_one_output_network_copies_no_column():
    """DeepXDE's Burgers losses (forward engine, one output): each derivative value and each residual column is a
    view ([N, 1] -> [N] -> [N, 1]), not a copy -- no select, slice or stack whose backward allocates and copies."""
    from torch.utils._python_dispatch import TorchDispatchMode

    problem, model, params, points = _problem(apply_overrides(loads(SPEC), {"engine": "forward"}))
    seen = []  # (op, the most elements of a tensor it reads)

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            sizes = [a.numel() for a in args if isinstance(a, torch.Tensor)]
            seen.append((func.overloadpacket.__name__, max(sizes, default=0)))
            return func(*args, **(kwargs or {}))

    with Ops():
        losses = problem.losses(model, points, params, joint=True)
        sum(losses.task_list).backward()
    assert ("tanh_backward", 2780 * 20) in seen  # the count saw the backward pass over the 2,780 points
    # no value sliced whole (the smallest set has 80 points), no kernel output stacked, no column of the 2,780
    # values selected (a coordinate column of a set's points and of the first layer's weight still is)
    copies = [(name, n) for name, n in seen
              if name == "stack" or (name == "slice_backward" and n >= 80) or (name == "select_backward" and n >= 2780)]
    assert copies == []
