"""``train compile = on``: the torch.compile'd losses equal the eager ones; fallbacks say why.

Each compile takes seconds on CPU, so the specs here are few and small: one per
kind of point set the compiled unit handles (a pool, periodic pairs, a union of
faces with per-face normals, observed data with a trainable param)."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.engine import Trainer, UpdateChain, loss_gradients
from pinnspec.engine._compiled import FusedGradients
from pinnspec.engine._execute import TwoGraphs
from pinnspec.lang._overrides import apply_overrides

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "engine" / "data" / "tiny.pinn"


def _spec(path, **settings):
    """The spec in float64 on the CPU; every step takes the strategy's full step (G at every step: the tiny
    spec's plain chain would sum between validations, tests/engine/test_summed_steps.py)."""
    spec = pinnspec.load(path)
    return apply_overrides(spec, {"device": "cpu", "dtype": "float64", "diagnostics": "every", **settings})


def _eager_losses_and_gradients(trainer):
    points = trainer.points.at(0)
    losses = trainer.problem.losses(trainer.model, points, trainer.params, trainer.grouping.name,
                                    engine=trainer.plan.engine)
    return losses, loss_gradients(losses.task_list, trainer.theta)  # [m, p]


@pytest.mark.parametrize("path", [pytest.param(ROOT / "specs" / "burgers.pinn", marks=pytest.mark.inductor),
                                  ROOT / "specs" / "schrodinger.pinn",
                                  ROOT / "examples" / "poisson2d_mixed" / "poisson2d_mixed.pinn",
                                  ROOT / "examples" / "inverse_heat" / "inverse_heat.pinn"])
def test_compiled_losses_and_gradients_equal_the_eager_ones(path):
    """What the trainer's step takes: every set's losses and its share of G in one compiled graph (each of
    these specs' sets feeds one task; a set that feeds two:
    test_a_set_that_feeds_two_tasks_is_one_graph_with_the_eager_gradients)."""
    trainer = Trainer(_spec(path, compile="on", engine="auto", grouping="three" if "poisson" not in str(path)
                            else "two", model="mlp(width = 8, depth = 2)"))
    assert trainer.plan.mode == "default"
    eager_losses, eager_G = _eager_losses_and_gradients(trainer)
    assert eager_G.abs().max() > 0
    compiled_losses, compiled_G = trainer.execution.compiled_losses().losses_and_gradients(
        trainer.points.at(0), trainer.params, trainer.grouping.name, trainer.theta_flat())
    torch.testing.assert_close(compiled_losses.tasks, eager_losses.tasks, rtol=1e-10, atol=1e-14)
    for name, value in eager_losses.conditions.items():
        torch.testing.assert_close(compiled_losses.conditions[name], value, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(compiled_G, eager_G, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("stack", ["on", "sets"])
@pytest.mark.parametrize("compiled", [False, True])
def test_stacked_kernels_give_the_losses_and_gradients_of_per_row_products(compiled, stack, schrodinger_four):
    """``stack = on`` (what ``auto`` takes on CUDA): one product per hidden layer over the value and every
    derivative row, and the interior set's two tasks (Schroedinger ``four``) pulled back in one vmapped pass;
    ``sets``: also one network pass over every set (periodic partners included) and the four tasks pulled back
    in one vmapped pass.  Run by `FusedGradients` eagerly and compiled: the losses and G of the eager step with
    ``stack = off``."""
    path, small = schrodinger_four, "mlp(width = 8, depth = 3)"
    stacked = Trainer(_spec(path, grouping="four", stack=stack, model=small, compile="on" if compiled else "off"))
    assert stacked.problem.stacked("cpu") and f"stack = {stack}" in stacked.execution.describe()
    points = stacked.points.at(0)
    if compiled:
        losses, G = stacked.execution.compiled_losses().losses_and_gradients(points, stacked.params, "four",
                                                                            stacked.theta_flat())
        tasks = losses.tasks
    else:
        fused = FusedGradients(stacked.problem, stacked.model, stacked.params, "four")
        tasks, _, G = fused(stacked.theta_flat(), *fused.inputs(points))
    plain = Trainer(_spec(path, grouping="four", stack="off", model=small))
    assert not plain.problem.stacked("cpu")
    plain_losses, plain_G = _eager_losses_and_gradients(plain)
    torch.testing.assert_close(tasks, plain_losses.tasks.detach(), rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(G, plain_G, rtol=1e-8, atol=1e-12)
    assert G.shape[0] == 4 and (G.norm(dim=1) > 0).all()


@pytest.mark.parametrize("stack", ["off", "on", "sets"])
@pytest.mark.parametrize("path, grouping", [(ROOT / "specs" / "burgers.pinn", "two"),
                                            (ROOT / "examples" / "inverse_heat" / "inverse_heat.pinn", "three"),
                                            (ROOT / "examples" / "annulus" / "annulus.pinn", "default"),
                                            ("schrodinger four", "four"), ("burgers without ic", "nb")])
def test_fused_gradients_equal_one_backward_pass_per_task_without_compiling(path, grouping, stack, schrodinger_four,
                                                                             tmp_path):
    """`FusedGradients` run eagerly: the losses and G of m separate backward passes, with ``stack = off`` (each
    set's sums through torch.func.vjp, pulled back per task), ``on`` (a set's tasks pulled back in one vmapped
    pass) and ``sets`` (one pass over every set, the m tasks pulled back in one vmapped pass).  Burgers ``two``
    pools two sets into one task (a row of G is the sum of two sets' rows); inverse_heat has a trainable param
    and observed data; the annulus a Neumann condition on a curved rim (the points' outward normals are an
    input); Schroedinger ``four`` a set that feeds two tasks and periodic partners; Burgers ``nb`` a set (ic)
    that feeds no task (its loss is reported, not trained)."""
    if path == "schrodinger four":
        path = schrodinger_four
    elif path == "burgers without ic":
        path = tmp_path / "burgers.pinn"
        path.write_text((ROOT / "specs" / "burgers.pinn").read_text() + "\ngrouping nb = [N, B]\n")
    trainer = Trainer(_spec(path, grouping=grouping, stack=stack, model="mlp(width = 8, depth = 2)"))
    points = trainer.points.at(0)
    fused = FusedGradients(trainer.problem, trainer.model, trainer.params, grouping)
    tasks, conditions, G = fused(trainer.theta_flat(), *fused.inputs(points))
    eager_losses, eager_G = _eager_losses_and_gradients(trainer)
    torch.testing.assert_close(tasks, eager_losses.tasks.detach(), rtol=1e-12, atol=1e-15)
    for name, value in fused.losses(tasks, conditions).conditions.items():
        torch.testing.assert_close(value, eager_losses.conditions[name].detach(), rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(G, eager_G, rtol=1e-10, atol=1e-14)
    assert (G.norm(dim=1) > 0).all() and G.shape == (trainer.grouping.m, sum(trainer.numels))


def test_one_pass_over_every_set_is_as_accurate_in_float32():
    """``stack = sets`` reduces each weight's gradient over every set's points and rows at once; in float32 its G
    (PINNacle's Burgers1d-C at full size: 5 x 100 tanh, 12,288 points) is as far from the float64 G as the
    per-set, per-row G of ``stack = off`` (both near 4e-7)."""
    path = ROOT / "benchmarks" / "pinnacle" / "cases" / "burgers1d.pinn"

    def gradients(dtype, stack, weights=None):
        trainer = Trainer(_spec(path, dtype=dtype, stack=stack))
        if weights is not None:
            with torch.no_grad():
                for mine, given in zip(trainer.model.parameters(), weights):
                    mine.copy_(given)
        fused = FusedGradients(trainer.problem, trainer.model, trainer.params, trainer.grouping.name)
        return fused(trainer.theta_flat(), *fused.inputs(trainer.points.at(0)))[2].double(), trainer.model

    truth, model = gradients("float64", "off")
    weights = list(model.parameters())
    errors = {stack: ((gradients("float32", stack, weights)[0] - truth).norm() / truth.norm()).item()
              for stack in ("off", "sets")}
    assert 1e-8 < errors["off"] < 2e-6 and errors["sets"] <= 1.5 * errors["off"] + 1e-7, errors


def test_task_coefficients_are_the_weights_over_the_divisors(tmp_path):
    """A task's loss is linear in its conditions' sums: weight / count for a condition, weight / (the pool's
    points) for each condition of a pool; a condition no task uses has no coefficient."""
    path = tmp_path / "weighted.pinn"
    path.write_text((ROOT / "specs" / "burgers.pinn").read_text() + "\nloss W = 3*burgers + 0.5*pool(walls, ic)\n"
                    "grouping weighted = [W]\ngrouping pde = [N]\n")
    problem = pinnspec.compile(path)
    counts = {"burgers": 100, "ic": 30, "walls": 10}
    assert problem.task_coefficients(counts, "weighted") == ({"burgers": 3 / 100, "ic": 0.5 / 40,
                                                              "walls": 0.5 / 40},)
    assert problem.task_coefficients(counts, "pde") == ({"burgers": 1 / 100},)
    sums = {"burgers": torch.tensor(2.0), "ic": torch.tensor(5.0), "walls": torch.tensor(7.0)}
    (coefficients,) = problem.task_coefficients(counts, "weighted")
    assert problem.losses_from_sums(sums, counts, "weighted").tasks.item() == pytest.approx(
        sum(c * sums[name].item() for name, c in coefficients.items()), rel=1e-7)
    assert problem.tasks_of_sets("weighted") == ((0,), (0,), (0,)) and problem.tasks_of_sets("pde") == ((0,), (), ())


def test_a_compiled_run_follows_the_eager_run():
    eager = Trainer(_spec(TINY, epochs=8))
    compiled = Trainer(_spec(TINY, epochs=8, compile="on"))
    assert eager.plan.mode is None and compiled.plan.mode == "default"
    a, b = eager.run(), compiled.run()
    assert a.epochs_done == b.epochs_done == 8
    for x, y in zip(eager.theta, compiled.theta):
        torch.testing.assert_close(y, x, rtol=1e-7, atol=1e-10)
    assert abs(a.rel_l2 - b.rel_l2) <= 1e-7 * a.rel_l2
    assert compiled.execution.current == "one graph"  # what the next check counts
    assert (a.execution, b.execution) == ("eager", "one graph")  # result.json says how the steps ran
    launches = _launches_outside_compiled_graphs(lambda: compiled.step(7))
    # 12 on torch 2.13 (sampling's copies, theta flattened, the host's values, apply): 15 with the losses and
    # the chain compiled apart, 45 with the losses assembled eagerly
    assert sum(launches.values()) <= 16, launches


@pytest.mark.parametrize("surgery, steps_on_device", [pytest.param("config", False, marks=pytest.mark.inductor),
                                                      ("config", True), ("mconfig", False), ("mconfig", True)])
def test_the_one_graph_step_equals_the_eager_step_at_every_step_count(surgery, steps_on_device):
    """Losses, G and surgery -> proposal -> GUA -> checks as one compiled graph: the same rows and weights
    as the eager steps, and one graph for every step count (the optimizer's, and MConFIG's own), whether
    the counts are symbolic ints or device tensors (what CUDA graphs take; here on the CPU)."""
    eager = Trainer(_spec(TINY, epochs=6, surgery=surgery))
    compiled = Trainer(_spec(TINY, epochs=6, surgery=surgery, compile="on"))
    assert compiled.execution.current == "one graph" and not compiled.execution.strategy.steps_on_device
    if steps_on_device:
        compiled.execution.install(compiled.execution.one_graph(steps_on_device=True))
    for epoch in range(6):
        with torch._dynamo.config.patch(error_on_recompile=epoch > 0):
            b = compiled.step(epoch)
        a = eager.step(epoch)
        assert a.keys() == b.keys()
        for key, value in a.items():
            assert b[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert compiled.execution.current == "one graph" and compiled.chain_state.optimizer.step == 6
    assert type(compiled.chain_state.optimizer.step) is int  # the host's ints, also with the device's copies
    if surgery == "mconfig":
        assert type(compiled.chain_state.surgery.step) is int and compiled.chain_state.surgery.step == 6
    if steps_on_device:
        assert {name: float(step) for name, step in compiled.execution.strategy.device_steps.items()} == (
            {"surgery": 6.0, "optimizer": 6.0} if surgery == "mconfig" else {"optimizer": 6.0})
    for x, y in zip(eager.theta, compiled.theta):
        torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("strategy", ["one graph", "one graph, steps on the device", "two graphs"])
def test_compiled_steps_with_task_weights_follow_the_eager_steps(strategy):
    """``weights gradnorm``: the weights enter the compiled step as a tensor argument (changed between steps
    by the host's cadence, without a recompile) and come back as the caller's tensor, never a graph's
    buffer; rows, weights and parameters equal the eager run's."""
    settings = dict(epochs=6, surgery="config", weights="gradnorm(every = 2, alpha = 0.5)")
    eager = Trainer(_spec(TINY, **settings))
    compiled = Trainer(_spec(TINY, **settings, compile="on"))
    if strategy == "two graphs":
        compiled.execution.install(TwoGraphs(compiled.execution.ctx, compiled.execution.compiled_losses(),
                                             compile_chain=True))
    elif strategy != "one graph":
        compiled.execution.install(compiled.execution.one_graph(steps_on_device=True))
    for epoch in range(6):
        with torch._dynamo.config.patch(error_on_recompile=epoch > 0):
            before = compiled.chain_state.weights
            b = compiled.step(epoch)
        a = eager.step(epoch)
        assert a.keys() == b.keys() and "weight2" in b
        for key, value in a.items():
            assert b[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        assert compiled.chain_state.weights is not before if epoch % 2 == 0 else compiled.chain_state.weights is before
    assert compiled.execution.current == strategy.split(",")[0]
    torch.testing.assert_close(compiled.chain_state.weights, eager.chain_state.weights, rtol=1e-9, atol=0)
    for x, y in zip(eager.theta, compiled.theta):
        torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-12)


def test_a_cuda_graph_that_cannot_be_recorded_falls_back_to_two_graphs(capsys):
    """With its step counts on the device (CUDA graphs), a RuntimeError in the one-graph step's first calls
    (an op a CUDA graph cannot hold fails its capture) is a notice and the losses and chain compiled apart;
    once recorded, a RuntimeError is the run's own and propagates."""
    eager = Trainer(_spec(TINY, epochs=6))
    trainer = Trainer(_spec(TINY, epochs=6, compile="on"))
    trainer.execution.install(trainer.execution.one_graph(steps_on_device=True))

    def capture_fails(*args):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    trainer.step(0)  # warm-up call
    trainer.execution.strategy.compiled = capture_fails
    for epoch in range(1, 6):
        trainer.step(epoch)
    for epoch in range(6):
        eager.step(epoch)
    assert trainer.execution.current == "two graphs"  # the losses and the chain compiled apart
    assert "pinnspec: compile = on: the step's CUDA graph cannot be recorded (CUDA error: operation not " \
           "permitted when stream is capturing); the losses and the update chain compile apart" in capsys.readouterr().err
    for x, y in zip(eager.theta, trainer.theta):
        torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-12)
    recorded = trainer.execution.one_graph(steps_on_device=True)
    recorded.calls, recorded.compiled = 3, capture_fails
    trainer.execution.install(recorded)
    with pytest.raises(RuntimeError, match="stream is capturing"):
        trainer.step(6)


#: aten ops that make a view or a constant, not a kernel launch
_NO_LAUNCH = {"detach", "reshape", "view", "view_as", "select", "slice", "unsqueeze", "squeeze", "split",
              "split_with_sizes", "unbind", "as_strided", "expand", "t", "transpose", "permute", "alias",
              "lift_fresh", "resolve_conj", "resolve_neg", "_reshape_alias", "empty", "empty_strided"}


def _launches_outside_compiled_graphs(run):
    """aten op -> count, over one call of ``run``, for the top-level ops outside torch.compile'd
    regions that launch a kernel: on a GPU each costs the host a launch (~5 us), so a compiled step
    keeps them few (the task losses inside the loss graph, G by one stack, theta by one
    _foreach_add_).  Seen on the CPU through torch.profiler."""
    from collections import Counter

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    counts = Counter()
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        parent, top = event.cpu_parent, True
        while parent is not None and top:
            top = not (parent.name.startswith("aten::") or "Compiled" in parent.name)
            parent = parent.cpu_parent
        name = event.name.removeprefix("aten::")
        if top and name not in _NO_LAUNCH:
            counts[name] += 1
    return counts


def test_a_set_that_feeds_two_tasks_is_one_graph_with_the_eager_gradients(schrodinger_four):
    """Schroedinger's two equations share one interior point set: with each in a task of its own (``four``)
    the set's pullback is taken once per task inside the one graph, and the compiled losses and G are the
    eager ones."""
    path = schrodinger_four
    problem = pinnspec.compile(path)
    assert problem.tasks_of_sets("three") == ((0,), (2,), (1,))  # sets: interior, initial, periodic pairs
    assert problem.tasks_of_sets("four") == ((0, 1), (3,), (2,))
    assert problem.tasks_of_sets("two") == ((0,), (1,), (1,))
    trainer = Trainer(_spec(path, compile="on", grouping="four", model="mlp(width = 8, depth = 2)"))
    assert trainer.execution.current == "one graph"
    points = trainer.points.at(0)
    losses, G = trainer.execution.compiled_losses().losses_and_gradients(points, trainer.params, "four",
                                                                          trainer.theta_flat())
    eager = trainer.problem.losses(trainer.model, points, trainer.params, "four", engine=trainer.plan.engine)
    torch.testing.assert_close(losses.tasks, eager.tasks, rtol=1e-10, atol=1e-14)
    for name, value in eager.conditions.items():
        torch.testing.assert_close(losses.conditions[name], value, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(G, loss_gradients(eager.task_list, trainer.theta), rtol=1e-8, atol=1e-12)
    assert G.shape[0] == 4 and (G.norm(dim=1) > 0).all()


@pytest.mark.inductor
@pytest.mark.parametrize("surgery", ["pcgrad", "config"])
def test_the_compiled_graphs_go_into_aotautograds_cache(surgery):
    """The compiled tanh is an autograd.Function, which AOTAutograd's on-disk cache leaves out unless
    told otherwise (pinnspec._compiling.aot_cacheable): the graph is looked up (a hit or a miss
    that is then saved), never bypassed, so a new process does not trace and partition it again.
    PCGrad: the loss graph alone (its chain stays eager); ConFIG: the one-graph step."""
    from torch._dynamo.utils import counters

    if not hasattr(torch._functorch.config, "autograd_cache_allow_custom_autograd_functions"):
        pytest.skip("this torch has no switch for custom autograd.Functions in AOTAutograd's cache")
    trainer = Trainer(_spec(TINY, compile="on", epochs=2, surgery=surgery))
    assert (trainer.execution.current == "one graph") == (surgery == "config")
    before = dict(counters["aot_autograd"])
    trainer.step(0)
    delta = {k: v - before.get(k, 0) for k, v in counters["aot_autograd"].items()}
    assert delta.get("autograd_cache_bypass", 0) == 0, delta
    assert delta.get("autograd_cache_hit", 0) + delta.get("autograd_cache_miss", 0) >= 1, delta


def test_each_compiled_unit_compiles_once():
    """The derivative programs are built before tracing: no unit is compiled a second time.
    (PCGrad draws task orders, so its update chain stays eager: only the loss units compile.)"""
    trainer = Trainer(_spec(ROOT / "specs" / "burgers.pinn", compile="on", model="mlp(width = 8, depth = 2)",
                            epochs=3, surgery="pcgrad"))
    assert trainer.execution.current == "losses compiled, chain eager"
    with torch._dynamo.config.patch(error_on_recompile=True):
        for epoch in range(3):
            trainer.step(epoch)


@pytest.mark.parametrize("surgery, optimizer", [("config", "adam"), ("mconfig", "sgd"), ("none", "adamw"),
                                                ("config", "adahessian(hessian_every = 2)")])
def test_the_compiled_update_chain_equals_the_eager_one(surgery, optimizer):
    """surgery -> proposal -> GUA -> checks, compiled: the same p, states and checks as eager, on the
    same inputs, and one graph for every step count."""
    trainer = Trainer(_spec(TINY, compile="on", surgery=surgery, optimizer=optimizer, align="gua", epochs=8))
    assert "two graphs" in [c.name for c in trainer.plan.candidates]
    chain = TwoGraphs(trainer.execution.ctx, trainer.execution.compiled_losses(), compile_chain=True).chain
    for epoch in range(5):
        points = trainer.points.at(epoch)
        hessian_due = trainer.chain.hessian_due(trainer.chain_state)
        # eager losses: this test is about the chain (the loss graphs have tests of their own)
        losses = trainer.problem.losses(trainer.model, points, trainer.params, trainer.grouping.name,
                                        engine=trainer.plan.engine)
        G = loss_gradients(losses.task_list, trainer.theta, retain_graph=hessian_due)
        hessian = None
        if hessian_due:
            from pinnspec.optim import hutchinson_diagonal

            hessian = hutchinson_diagonal(sum(losses.task_list), trainer.theta,
                                          generator=torch.Generator().manual_seed(epoch))
        theta = trainer.theta_flat()
        # variants: AdaHessian with and without an estimate
        with torch._dynamo.config.patch(error_on_recompile=epoch >= 3):
            compiled = chain(G, theta, hessian, trainer.chain_state.surgery, trainer.chain_state.optimizer)
        eager = trainer.chain.update(G, theta, trainer.chain_state, hessian=hessian)
        for a, b in zip(_tensors(compiled), _tensors(eager)):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
        trainer._apply(1e-3, eager.p)
        trainer.chain_state = eager.state


def _tensors(tree):
    """Every tensor of a nested tuple / list / dataclass, in order."""
    import dataclasses

    if isinstance(tree, torch.Tensor):
        yield tree
    elif dataclasses.is_dataclass(tree):
        for f in dataclasses.fields(tree):
            yield from _tensors(getattr(tree, f.name))
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _tensors(item)


def test_losses_that_do_not_compile_train_eagerly(capsys):
    """A failed compile (no C++ compiler on a laptop, say) is a notice, not a traceback: the step
    is done again eagerly, with the same result."""
    eager = Trainer(_spec(TINY, epochs=3))
    trainer = Trainer(_spec(TINY, compile="on", epochs=3))

    def no_compiler(*args):
        raise torch._dynamo.exc.TorchDynamoException("InvalidCxxCompiler: No working C++ compiler found")

    compiled = trainer.execution.compiled_losses()
    compiled.units = {index: no_compiler for index in compiled.units}
    compiled.fused_unit = trainer.execution.strategy.compiled = no_compiler
    for epoch in range(3):
        a, b = eager.step(epoch), trainer.step(epoch)
        assert a["loss"] == b["loss"]
    assert trainer.execution.current == "eager"
    err = capsys.readouterr().err
    reason = "(InvalidCxxCompiler: No working C++ compiler found)"
    assert err.count(f"pinnspec: compile = on: the step does not compile as one graph {reason}; the losses and "
                     "the update chain compile apart") == 1
    assert err.count(f"pinnspec: compile = on: the losses do not compile {reason}; training eagerly") == 1


def test_an_update_chain_that_does_not_compile_runs_eagerly(capsys, monkeypatch):
    eager = Trainer(_spec(TINY, epochs=3))
    trainer = Trainer(_spec(TINY, compile="on", epochs=3))
    upgrad = Trainer(_spec(TINY, compile="on", surgery="upgrad"))  # a host decision inside
    assert upgrad.execution.current == "losses compiled, chain eager"

    update = UpdateChain.update

    def with_a_host_decision(chain, G, *args, **kwargs):
        if float(G.abs().sum()) < 0:  # a tensor read on the host: a graph break
            G = -G
        return update(chain, G, *args, **kwargs)

    monkeypatch.setattr(UpdateChain, "update", with_a_host_decision)  # what every step calls
    for epoch in range(3):
        a, b = eager.step(epoch), trainer.step(epoch)
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-9)
    assert trainer.execution.current == "losses compiled, chain eager"  # the losses still compile
    err = capsys.readouterr().err
    assert err.count("the step does not compile as one graph (") == 1
    assert "the update chain (none(), adam(" in err and "does not compile (" in err and "it runs eagerly" in err


@pytest.mark.parametrize("settings, notice", [
    ({"engine": "autograd"}, "needs the forward engine"),
    ({"optimizer": "sophiag(hessian_every = 2)"}, "Hessian-estimate steps of this optimizer run eagerly"),
])
def test_compile_fallbacks_print_one_line_saying_why(settings, notice, capsys):
    trainer = Trainer(_spec(TINY, compile="on", epochs=3, **settings))
    err = capsys.readouterr().err
    assert err.count("pinnspec: compile = on") == 1 and notice in err
    assert trainer.run().status == "completed"  # the steps with a Hessian estimate ran eagerly


def test_compile_is_off_by_default():
    trainer = Trainer(_spec(TINY, epochs=1))
    assert trainer.plan.mode is None and trainer.execution.current == "eager"


def test_a_compiled_run_resumes_bit_for_bit(tmp_path):
    """Stopped after epoch 4 (as by Ctrl-C) and resumed in a new trainer, whose one-graph step compiles
    afresh: the same weights and errors as the uninterrupted compiled run, bit for bit."""
    from pinnspec.engine import load_run

    whole = Trainer(_spec(TINY, epochs=8, compile="on"), out=str(tmp_path / "whole"))
    whole.run()
    first = Trainer(_spec(TINY, epochs=8, compile="on", checkpoint_every=5), out=str(tmp_path / "split"))
    step = first.step

    def interrupted_after_five(epoch):
        row = step(epoch)
        first._stop_requested = epoch == 4
        return row

    first.step = interrupted_after_five
    assert first.run().status == "interrupted" and first.run_state.epoch == 5
    resumed = load_run(str(tmp_path / "split"))
    assert resumed.run_state.epoch == 5 and resumed.execution.current == "one graph"
    result = resumed.run()
    assert result.epochs_done == 8 and resumed.execution.current == "one graph"
    assert result.rel_l2 == whole.result().rel_l2
    assert all(torch.equal(a, b) for a, b in zip(whole.theta, resumed.theta))
    assert resumed.run_state.history == whole.run_state.history


def test_a_compiled_run_that_diverges_names_the_loss_and_keeps_the_checkpoint(tmp_path):
    """The one-graph step's divergence: the host's one fetch finds the non-finite task, the message names
    it and the epoch, theta keeps its last finite values, the checkpoint its last good epoch."""
    trainer = Trainer(_spec(TINY, epochs=12, compile="on", checkpoint_every=5), out=str(tmp_path))
    assert trainer.execution.current == "one graph"
    sample = trainer.points.draw
    walls = trainer.problem.point_plan.set_index("walls")

    def poisoned(epoch, block=None):  # a NaN point on the walls from epoch index 7 on: the 8th epoch
        points = sample(epoch, block)
        if epoch >= 7:
            points.sets[walls].x.data[0, 0] = float("nan")
        return points

    trainer.points.draw = poisoned
    result = trainer.run()
    assert result.status == "diverged" and trainer.execution.current == "one graph"
    assert result.message.startswith("training diverged at epoch 8: the loss of task 1 'B' (condition walls)")
    assert all(torch.isfinite(t).all() for t in trainer.theta)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["epoch"] == 5
