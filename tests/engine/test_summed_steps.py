"""Summed steps: a chain that needs G only through the weighted sum of its rows (surgery none, no alignment)
takes one backward pass of sum_i lambda_i L_i between validations (`UpdateChain.update_summed`), and forms G and
the conflict statistics at validation epochs (`train diagnostics = validation`, the default) or at every step
(`diagnostics = every`).  Oracle: the full step, G's rows summed by the chain, in float64."""

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Execution, Trainer, UpdateChain, describe_execution
from pinnspec.lang import apply_overrides, loads
from pinnspec.registry import ALIGN, OPTIMIZERS, SURGERY

TINY = Path(__file__).parent / "data" / "tiny.pinn"


def trainer(**overrides) -> Trainer:
    settings = {"dtype": "float64", "epochs": 25, **overrides}
    return Trainer(apply_overrides(loads(TINY.read_text(), filename=str(TINY)), settings))


@pytest.mark.parametrize("weights", [None, "ntk(every = 4, points = 64)"])
def test_summed_steps_move_theta_as_full_steps(weights):
    more = {"weights": weights} if weights else {}
    summed, full = trainer(**more), trainer(diagnostics="every", **more)
    assert summed.sums and not full.sums
    summed.run(), full.run()
    theta, reference = summed.theta_flat(), full.theta_flat()  # [p]
    assert float((theta - reference).abs().max() / reference.abs().max()) < 1e-13
    assert not torch.equal(theta, reference)  # another sum (one backward pass, not m): rounding differs


def test_the_conflict_statistics_are_those_of_the_validation_epochs():
    summed, full = trainer(), trainer(diagnostics="every")
    result, every = summed.run(), full.run()
    diagnosed = [row["epoch"] for row in summed.run_state.history if "R_g" in row]
    assert diagnosed == [10, 20, 25]  # validate ... every 10, and the last epoch
    assert len([row for row in full.run_state.history if "R_g" in row]) == 24  # not the warm-up's zero-rate step
    counted = [row for row in full.run_state.history if row["epoch"] in diagnosed]
    for key in ("R_g", "R_a", "R_u"):  # the rates over the diagnosed steps, which the full run saw too
        assert result.rates[key] == pytest.approx(sum(row[key] for row in counted) / 3)
    assert every.rates["R_p"] is None and result.rates["R_p"] is None


@pytest.mark.parametrize("surgery, align", [("config", "none"), ("none", "gua"), ("pcgrad", "none")])
def test_a_chain_that_reads_g_forms_it_at_every_step(surgery, align):
    run = trainer(surgery=surgery, align=align, epochs=4)
    assert not run.sums
    run.run()
    assert all("R_g" in row for row in run.run_state.history[1:])  # the warm-up's zero-rate step is not counted


def test_gradnorm_forms_g_where_it_measures(monkeypatch):
    run = trainer(weights="gradnorm(every = 3)", epochs=8)
    steps, call = [], Execution.__call__

    def recorded(self, *args, summed=False, **kwargs):
        steps.append(summed)
        return call(self, *args, summed=summed, **kwargs)

    monkeypatch.setattr(Execution, "__call__", recorded)
    run.run()
    assert steps == [False, True, True, False, True, True, False, False]  # due at 0, 3, 6; the last validates


def test_the_summed_step_of_the_chain_is_surgery_none_of_g():
    generator = torch.Generator().manual_seed(0)
    G = torch.randn(3, 7, generator=generator, dtype=torch.float64)  # [m, p]
    theta = torch.randn(7, generator=generator, dtype=torch.float64)
    chain = UpdateChain(SURGERY.get("none")(), OPTIMIZERS.get("adam")(lr=1e-2), ALIGN.get("none")())
    state = chain.init(theta, [(7,)], 3)
    full, summed = chain.update(G, theta, state), chain.update_summed(G.sum(0), theta, state)
    torch.testing.assert_close(summed.p, full.p, rtol=1e-15, atol=0)
    torch.testing.assert_close(summed.state.optimizer.exp_avg_sq, full.state.optimizer.exp_avg_sq, rtol=1e-15, atol=0)
    assert summed.checks.conflicts.tolist() == [0.0, 0.0, 0.0]


def test_show_says_which_steps_sum():
    spec = loads(TINY.read_text(), filename=str(TINY))
    assert "between validations: one backward pass of the weighted sum" in describe_execution(spec)
    every = apply_overrides(spec, {"diagnostics": "every"})
    assert "between validations" not in describe_execution(every)


def test_a_summed_step_that_diverges_says_so():
    run = trainer(epochs=6)
    draw = run.points.draw

    def poisoned(epoch, block=None):
        points = draw(epoch, block)
        points.sets[0].x.data[0, 0] = float("nan")
        return points

    run.points.draw = poisoned
    result = run.run()
    assert result.status == "diverged"
    assert result.message.startswith("training diverged at epoch 1: the loss of task 0 'N' (condition pde)")


@pytest.mark.parametrize("stack", [pytest.param("off", marks=pytest.mark.inductor), "sets"])
def test_compiled_summed_steps_equal_eager_ones(stack):
    """With compile = on the summed steps take the compiled losses' one pullback per set (``stack = off``) or one
    network pass over every set and one pullback (``sets``), the validation epochs the eager full step (no second
    graph); both as the eager run to rounding."""
    eager, compiled = trainer(epochs=12), trainer(epochs=12, compile="on", stack=stack)
    eager.run(), compiled.run()
    assert compiled.execution.current == "summed one graph" and compiled.execution._summed.calls == 10
    assert compiled.execution.strategy.name == "one graph" and compiled.execution.strategy.calls == 0
    torch.testing.assert_close(compiled.theta_flat(), eager.theta_flat(), rtol=1e-10, atol=1e-12)


def test_the_summed_steps_sum_starts_from_the_first_task():
    """sum_i lambda_i L_i from the first term: no 0 + L_1 (one more operation, and one more node backwards); the
    same value."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from pinnspec.engine._execute import _weighted_sum

    tasks = [torch.tensor(v) for v in (0.25, 1.5, 3.0)]
    for weights in (None, torch.tensor([1.0, 2.0, 0.5])):
        seen = []

        class Ops(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(func.overloadpacket.__name__)
                return func(*args, **(kwargs or {}))

        with Ops():
            total = _weighted_sum(tasks, weights)
        assert seen.count("add") == 2
        lam = [1.0, 1.0, 1.0] if weights is None else weights.tolist()
        assert total.item() == sum(w * t.item() for w, t in zip(lam, tasks))
