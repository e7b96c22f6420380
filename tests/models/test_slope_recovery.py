"""adaptive_mlp(slope_recovery = w): the slope-recovery term w S(a) of Jagtap et al. 2020 against a hand
computation of its formula, added to the first task's loss, and the execution plan it takes."""

import math

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.lang import loads
from pinnspec.models._adaptive import AdaptiveSlopeMLP

SPEC = """problem tiny
space x in [0, 1]
time  t in [0, 1]
field u
equation pde: u_t - 0.1*u_xx = 0
initial  ic: u = sin(pi*x)
points pde 64, ic 16
model adaptive_mlp(width = 8, depth = 3, slope = {slope}, slope_recovery = {weight})
train epochs = 3, seed = 0, dtype = float64{more}
"""


@pytest.mark.parametrize("slope", ["global", "layer", "neuron"])
def test_the_term_is_the_formula(slope):
    model = AdaptiveSlopeMLP(2, 1, 4, 3, "tanh", slope, 10.0, slope_recovery=0.5).double()
    with torch.no_grad():
        for k, a in enumerate(model.slopes):
            a.copy_(torch.linspace(0.1 * (k + 1), 0.2 * (k + 1), a.numel(), dtype=torch.float64).reshape(a.shape))
    means = [float(a.detach().mean()) for a in model.slopes]
    expected = 0.5 / (sum(math.exp(m) for m in means) / len(means))
    assert float(model.loss_term()) == pytest.approx(expected, rel=1e-14)
    assert AdaptiveSlopeMLP(2, 1, 4, 3, "tanh", slope, 10.0).loss_term() is None


def test_the_term_is_added_to_the_first_task_and_the_plan_skips_the_fused_graphs():
    with_term = Trainer(loads(SPEC.format(slope="layer", weight=0.25, more="")))
    without = Trainer(loads(SPEC.format(slope="layer", weight=0.0, more="")))
    points = with_term.points.at(0)
    a = with_term.problem.losses(with_term.model, points, with_term.params)
    b = without.problem.losses(without.model, points, without.params)  # the same network: the same seed
    term = float(with_term.model.loss_term().detach())
    assert term == pytest.approx(0.25 / math.exp(0.1))  # every slope starts at 1/n = 0.1
    assert float(a.task_list[0].detach()) == pytest.approx(float(b.task_list[0].detach()) + term, rel=1e-12)
    assert float(a.task_list[1].detach()) == float(b.task_list[1].detach())
    assert a.conditions["pde"] == b.conditions["pde"]
    compiled = Trainer(loads(SPEC.format(slope="layer", weight=0.25, more=", compile = on")))
    names = [c.name for c in compiled.plan.candidates]
    assert "one graph" not in names and names[0] == "two graphs"  # the per-set graphs, the term added after
