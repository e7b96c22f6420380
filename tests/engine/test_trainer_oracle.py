"""The trainer as a whole against an oracle: with surgery none and align none, k epochs of the tiny spec
equal torch.optim's optimizer + ``LambdaLR`` (the warmup-cosine formula written out here) minimising the
summed loss (residuals written out here, by autograd) on the same points from the same start (float64).

Only the points and the initial weights come from the trainer; everything else is rebuilt: the residuals of
tests/engine/data/tiny.pinn, the groupings' task losses, the schedule and the optimizer step."""

import copy
import math
from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.engine import Trainer
from pinnspec.lang._overrides import apply_overrides

TINY = Path(__file__).parent / "data" / "tiny.pinn"
EPOCHS, WARMUP, LR_MIN = 12, 4, 1e-4


def warmup_cosine(t: int, lr0: float) -> float:
    """The paper's schedule (Appendix C.3): linear warmup from 0 over WARMUP epochs, then a cosine from lr0
    down to LR_MIN at epoch EPOCHS."""
    if t < WARMUP:
        return lr0 * t / WARMUP
    return LR_MIN + 0.5 * (lr0 - LR_MIN) * (1 + math.cos(math.pi * (t - WARMUP) / (EPOCHS - WARMUP)))


def summed_loss(model, points, set_of, grouping: str) -> torch.Tensor:
    """tiny.pinn's summed task loss: pde u_t - 0.1 u_xx = 0, walls u = 0, ic u = sin(pi x); grouping three
    [pde, walls, ic] (three means), two [pde, pool(walls, ic)] (one mean over the pooled points)."""
    def u(name):
        x = points.sets[set_of[name]].x.detach().clone().requires_grad_(True)  # columns (x, t)
        return x, model(x)[:, 0]

    x, value = u("pde")
    (du,) = torch.autograd.grad(value.sum(), x, create_graph=True)
    (du_x,) = torch.autograd.grad(du[:, 0].sum(), x, create_graph=True)
    pde = (du[:, 1] - 0.1 * du_x[:, 0]) ** 2
    walls = u("walls")[1] ** 2
    x, value = u("ic")
    ic = (value - torch.sin(math.pi * x[:, 0])) ** 2
    if grouping == "three":
        return pde.mean() + walls.mean() + ic.mean()
    return pde.mean() + torch.cat([walls, ic]).mean()


CASES = {  # the spec's optimizer call -> (torch.optim's, grouping)
    "adam(lr = 5e-3, beta1 = 0.8, beta2 = 0.99, eps = 1e-7)":
        (lambda ps: torch.optim.Adam(ps, lr=5e-3, betas=(0.8, 0.99), eps=1e-7), "three"),
    "sgd(lr = 2e-2)": (lambda ps: torch.optim.SGD(ps, lr=2e-2), "two"),
    "adamw(lr = 5e-3, weight_decay = 0.05)":
        (lambda ps: torch.optim.AdamW(ps, lr=5e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05), "two"),
    "msgd(lr = 1e-2, momentum = 0.8)": (lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.8), "three"),
    "rmsprop(lr = 2e-3, alpha = 0.9, eps = 1e-6)":
        (lambda ps: torch.optim.RMSprop(ps, lr=2e-3, alpha=0.9, eps=1e-6), "three"),
}


@pytest.mark.parametrize("optimizer", list(CASES), ids=lambda call: call.split("(")[0])
def test_k_epochs_equal_torch_optim_with_lambdalr(optimizer):
    make, grouping = CASES[optimizer]
    spec = apply_overrides(pinnspec.load(TINY), {
        "dtype": "float64", "device": "cpu", "surgery": "none", "align": "none", "optimizer": optimizer,
        "schedule": f"warmup_cosine(warmup = {WARMUP}, lr_min = {LR_MIN})", "epochs": EPOCHS, "grouping": grouping})
    trainer = Trainer(spec)
    set_of = {name: trainer.problem.point_plan.set_index(name) for name in ("pde", "walls", "ic")}
    oracle = copy.deepcopy(trainer.model)
    start = [p.detach().clone() for p in oracle.parameters()]
    reference = make(list(oracle.parameters()))
    lr0 = reference.param_groups[0]["lr"]
    schedule = torch.optim.lr_scheduler.LambdaLR(reference, lambda t: warmup_cosine(t, lr0) / lr0)
    for epoch in range(EPOCHS):
        points = trainer.points.at(epoch)
        reference.zero_grad()
        loss = summed_loss(oracle, points, set_of, grouping)
        loss.backward()
        rate = reference.param_groups[0]["lr"]
        reference.step()
        schedule.step()
        row = trainer.step(epoch)
        assert row["lr"] == pytest.approx(rate, rel=1e-12, abs=0)
        assert row["loss"] == pytest.approx(loss.item(), rel=1e-10)
        if epoch == 0:  # the warmup's first rate is 0: nothing moves
            assert rate == 0 and all(torch.equal(p, s) for p, s in zip(trainer.model.parameters(), start))
    for ours, theirs in zip(trainer.model.parameters(), oracle.parameters()):
        assert ours.dtype == torch.float64
        torch.testing.assert_close(ours.detach(), theirs.detach(), rtol=1e-10, atol=1e-13)
    moved = max((p.detach() - s).abs().max().item() for p, s in zip(oracle.parameters(), start))
    assert moved > 1e-3  # the comparison is not between two resting networks
