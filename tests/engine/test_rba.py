"""`weights rba`: per-point residual-based attention against a hand computation of its update and loss,
its state through a checkpoint, and its execution plan."""

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.engine._artifacts import load_checkpoint
from pinnspec.engine._weights import ResidualAttention
from pinnspec.lang import loads

#: u_t = 0.1 u_xx on [0, 1]^2, u = sin(pi x) at t = 0, u = 0 on both walls (the engine tests' heat problem)
HEAT_CONDITIONS = (Path(__file__).parent / "data" / "heat_conditions.pinn").read_text()
SPEC = HEAT_CONDITIONS + """points pde 60, walls 10, ic 10
resample never
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
validate 50 every 5
model mlp(width = 8, depth = 2)
optimizer adam(lr = 1e-2)
schedule constant
weights rba(eta = 0.01, gamma = 0.9)
train epochs = 12, seed = 0, dtype = float64, checkpoint_every = 3{more}
"""


def _residual_magnitudes(trainer) -> dict[str, torch.Tensor]:
    """|r_j| [N] of every condition at the trainer's parameters now, on its (fixed) points."""
    residuals = trainer.problem.residuals(trainer.model, trainer.points.at(0), trainer.params)
    return {name: r.detach().square().sum(1).sqrt() for name, r in residuals.items()}


def test_two_steps_follow_the_formula():
    trainer = Trainer(loads(SPEC.format(more="")))
    eta, gamma = 0.01, 0.9
    r0 = _residual_magnitudes(trainer)
    row = trainer.step(0)
    lam1 = {c: eta * r / r.max() for c, r in r0.items()}
    for c in r0:
        assert torch.allclose(trainer.attention[c], lam1[c], rtol=1e-12, atol=0)
        # the step's loss of the condition: mean_j (lambda_j r_j)^2 with the lambda of this step
        assert row[f"loss:{c}"] == pytest.approx(float((lam1[c] * r0[c]).square().mean()), rel=1e-12)
    r1 = _residual_magnitudes(trainer)
    trainer.step(1)
    for c in r0:
        expected = gamma * lam1[c] + eta * r1[c] / r1[c].max()
        assert torch.allclose(trainer.attention[c], expected, rtol=1e-12, atol=0)


def test_a_zero_residual_only_decays_and_the_weights_stay_bounded():
    rba = ResidualAttention(eta=0.5, gamma=0.75)
    lam = torch.tensor([0.4, 0.2], dtype=torch.float64)
    assert rba.updated(lam, torch.zeros(2, dtype=torch.float64)).tolist() == [0.30000000000000004, 0.15000000000000002]
    for _ in range(200):  # lambda <= eta / (1 - gamma)
        lam = rba.updated(lam, torch.tensor([1.0, 0.5], dtype=torch.float64))
    assert lam.tolist() == pytest.approx([2.0, 1.0])


def test_resume_carries_the_point_weights_bit_for_bit(tmp_path):
    straight = Trainer(loads(SPEC.format(more="")), str(tmp_path / "straight"))
    straight.run()
    holder = {}

    def stop(line):
        if line.startswith("epoch 5/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(loads(SPEC.format(more="")), str(tmp_path / "first"), log=stop)
    first.run()
    saved = load_checkpoint(str(tmp_path / "first" / "checkpoint.pt"))
    assert saved["epoch"] == 5 and set(saved["attention"]) == {"pde", "ic", "walls"}
    resumed = Trainer(loads(SPEC.format(more="")), str(tmp_path / "first"))
    resumed.load_state_dict(saved)
    resumed.run()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(torch.equal(straight.attention[c], resumed.attention[c]) for c in straight.attention)
    assert "attention:pde" in (tmp_path / "first" / "history.csv").read_text().splitlines()[0]


def test_rba_runs_eagerly_under_compile_on(capsys):
    trainer = Trainer(loads(SPEC.format(more=", compile = on")))
    assert [c.name for c in trainer.plan.candidates] == ["eager"]
    assert "weights rba updates its per-point weights" in capsys.readouterr().err


def test_the_blow_up_check_is_off_while_the_point_weights_build_up():
    """lambda starts at 0, so the first losses are tiny and grow by design: no divergence is declared."""
    trainer = Trainer(loads(SPEC.format(more=", diverge_factor = 10")))
    result = trainer.run()
    losses = [row["loss"] for row in trainer.run_state.history]
    assert result.status == "completed" and max(losses) > 10 * losses[0]
