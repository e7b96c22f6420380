"""The execution plan: which strategies a spec's step may run by, in which order and why; the demotion
by failed part; the update chain's declared capabilities against what its stages do."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.catalog import BUILTINS
from pinnspec.engine import Trainer, UpdateChain, plan_execution
from pinnspec.engine import build_model
from pinnspec.lang._overrides import apply_overrides
from pinnspec.optim import Optimizer
from pinnspec.registry import OPTIMIZERS, SURGERY

ROOT = Path(__file__).resolve().parents[2]
BURGERS = ROOT / "specs" / "burgers.pinn"


def _plan(path, *, device="cpu", distributed=False, **settings):
    spec = apply_overrides(pinnspec.load(path), {"device": "cpu", **settings})
    problem = pinnspec.compile(spec)
    grouping = spec.ir.grouping()
    model = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float32)
    return plan_execution(problem, model, UpdateChain.from_training(spec.ir.training), grouping=grouping.name,
                          num_losses=grouping.m, device=torch.device(device), distributed=distributed)


def _names(plan):
    return [c.name for c in plan.candidates]


@pytest.mark.parametrize("settings, device, distributed, expected, not_taken", [
    ({}, "cpu", False, ["eager"], "compile = off"),
    ({"compile": "on"}, "cpu", False, ["one graph", "two graphs", "losses compiled, chain eager", "eager"], None),
    # graphs on the CPU is on: no CUDA graph to record
    ({"compile": "graphs"}, "cpu", False, ["one graph", "two graphs", "losses compiled, chain eager", "eager"], None),
    ({"compile": "graphs"}, "cuda", False,
     ["one CUDA graph", "two graphs", "losses compiled, chain eager", "eager"], None),
    # ConFIG for m = 3 solves its m x m system without waiting for the device: one CUDA graph too
    ({"compile": "graphs", "grouping": "three"}, "cuda", False,
     ["one CUDA graph", "two graphs", "losses compiled, chain eager", "eager"], None),
    # AdaHessian's Hessian estimate (a host decision from the step count): the chain compiles apart
    ({"compile": "graphs", "optimizer": "adahessian", "align": "none"}, "cuda", False,
     ["two graphs", "losses compiled, chain eager", "eager"], "needs Hessian estimates"),
    ({"compile": "on", "surgery": "pcgrad"}, "cpu", False, ["losses compiled, chain eager", "eager"],
     "the update chain does not compile"),
    ({"compile": "on"}, "cpu", True, ["two graphs", "losses compiled, chain eager", "eager"], "data-parallel"),
    ({"compile": "on", "engine": "autograd"}, "cpu", False, ["eager"], "needs the forward engine"),
])
def test_the_plan_orders_the_strategies_and_says_why(settings, device, distributed, expected, not_taken):
    plan = _plan(BURGERS, device=device, distributed=distributed, **settings)
    assert _names(plan) == expected
    if not_taken:
        assert any(not_taken in why for _, why in plan.not_taken), plan.not_taken
    assert plan.describe().count("\n  ") >= len(expected)


def test_a_set_that_feeds_two_tasks_is_one_graph_and_a_networks_own_loss_term_is_not(schrodinger_four):
    spec = pinnspec.load(schrodinger_four)
    recovering = {"model": "adaptive_mlp(width = 8, depth = 2, slope_recovery = 1)"}  # its slopes' loss term
    for settings, first in [({}, "one graph"), (recovering, "two graphs")]:
        changed = apply_overrides(spec, {"device": "cpu", "compile": "on", "grouping": "four", **settings})
        problem = pinnspec.compile(changed)
        model = build_model(changed, problem, device=torch.device("cpu"), dtype=torch.float32)
        plan = plan_execution(problem, model, UpdateChain.from_training(changed.ir.training), grouping="four",
                              num_losses=4, device=torch.device("cpu"))
        assert _names(plan)[0] == first, settings
    assert any("adds its own loss term" in why for _, why in plan.not_taken)
    assert "one graph per point set" in plan.candidates[0].reason


@pytest.mark.parametrize("stack", ["on", "sets"])
def test_the_plan_says_an_eager_step_does_not_take_stack_sets(stack):
    """``stack = sets`` is a form of the compiled step; an eager step stacks the rows only, as ``on`` does."""
    for compile_setting in ["off", "on"]:
        plan = _plan(BURGERS, compile=compile_setting, stack=stack)
        eager = next(c for c in plan.candidates if c.name == "eager")
        assert f"stack = {stack}" in plan.header
        assert ("sets: compiled steps only" in eager.reason) == (stack == "sets")
        assert all("compiled steps only" not in c.reason for c in plan.candidates if c.name != "eager")


@pytest.mark.parametrize("part, after", [("step", "two graphs"), ("chain", "losses compiled, chain eager"),
                                         ("losses", "eager")])
def test_a_failed_part_demotes_to_the_next_candidate_without_it(part, after):
    trainer = Trainer(apply_overrides(pinnspec.load(BURGERS), {"device": "cpu", "compile": "on", "epochs": 2}))
    assert trainer.execution.current == "one graph"
    trainer.execution._demote(part)
    assert trainer.execution.current == after
    assert "<- runs now" in trainer.execution.describe().splitlines()[
        _names(trainer.plan).index(after) + 1]


@pytest.mark.parametrize("name", sorted(BUILTINS["optimizer"]))
def test_uses_hessian_is_declared_by_exactly_the_optimizers_with_a_hessian_schedule(name):
    optimizer = OPTIMIZERS.get(name)()
    assert optimizer.uses_hessian == (type(optimizer).hessian_due is not Optimizer.hessian_due)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "gradnorm"])
@pytest.mark.parametrize("name", sorted(n for n in BUILTINS["surgery"] if SURGERY.get(n).compiles))
def test_a_chain_that_compiles_traces_into_one_graph(name, weighted):
    """`compiles` is a promise: every surgery method that declares it (with Adam and GUA, which compile, and
    with or without the weights stage) traces into one graph with fullgraph=True, on random G."""
    from pinnspec.align import GUA
    from pinnspec.engine._weights import GradNorm, NoWeights
    from pinnspec.optim import Adam

    chain = UpdateChain(SURGERY.get(name)(), Adam(), GUA(), GradNorm() if weighted else NoWeights())
    assert chain.compiles
    torch._dynamo.reset()
    generator = torch.Generator().manual_seed(0)
    G = torch.randn(3, 40, generator=generator, dtype=torch.float64)
    theta = torch.randn(40, generator=generator, dtype=torch.float64)
    state = chain.init(theta, [(40,)], 3)
    if weighted:
        state = state._replace(weights=torch.tensor([0.5, 2.0, 1.5], dtype=torch.float64))

    def step(G, theta, surgery_state, optimizer_state, weights):
        return chain.update(G, theta, type(state)(surgery_state, optimizer_state, weights))

    compiled = torch.compile(step, fullgraph=True, backend="eager", dynamic=True)
    out = compiled(G, theta, *state)
    eager = chain.update(G, theta, state)
    torch.testing.assert_close(out.p, eager.p, rtol=1e-12, atol=1e-14)


def test_data_parallel_shards_keep_each_points_normal():
    """The ranks' shards of a domain-boundary set, put back together, are the whole set, normals included
    (a Neumann condition on a curved rim reads them)."""
    import numpy as np

    from pinnspec.engine._parallel import shard

    problem = pinnspec.compile(ROOT / "examples" / "annulus" / "annulus.pinn")
    sets = problem.point_plan.sample(0, 0)
    rim = next(s for s in sets if s.normals is not None)
    parts = [shard(rim, rank, 3) for rank in range(3)]
    assert all(total == len(rim.x) for _, total in parts)
    assert np.array_equal(np.concatenate([part.x for part, _ in parts]), rim.x)
    assert np.array_equal(np.concatenate([part.normals for part, _ in parts]), rim.normals)
