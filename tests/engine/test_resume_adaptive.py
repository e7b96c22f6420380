"""Resuming a run whose points come from an adaptive sampler: a known gap (the checkpoint does not hold the
sampler's history), kept as a strict xfail beside the same procedure with a plain sampler, which passes."""

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.engine._artifacts import load_checkpoint
from pinnspec.lang import loads

#: u_t = 0.1 u_xx on [0, 1]^2, u = sin(pi x) at t = 0, u = 0 on both walls (the engine tests' heat problem)
HEAT_CONDITIONS = (Path(__file__).parent / "data" / "heat_conditions.pinn").read_text()
SPEC = HEAT_CONDITIONS + """points pde 100, walls 20, ic 20
sampler {sampler}
resample every 5
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
test 200
validate 50 every 10
model     mlp(width = 8, depth = 2)
optimizer adam(lr = 5e-3)
schedule  constant
train     epochs = {epochs}, seed = 0, device = cpu, checkpoint_every = 10
"""


def _final_model(tmp_path, sampler: str) -> tuple[dict, dict]:
    """(the model after 30 epochs straight, the model after 15 epochs then resumed to 30)."""
    straight = Trainer(loads(SPEC.format(sampler=sampler, epochs=30)), str(tmp_path / "straight"))
    straight.run()
    first = Trainer(loads(SPEC.format(sampler=sampler, epochs=15)), str(tmp_path / "first"))
    first.run()
    resumed = Trainer(loads(SPEC.format(sampler=sampler, epochs=30)), str(tmp_path / "resumed"))
    resumed.load_state_dict(load_checkpoint(str(tmp_path / "first" / "checkpoint.pt")))
    resumed.run()
    return straight.model.state_dict(), resumed.model.state_dict()


def test_resume_with_a_plain_sampler_is_exact(tmp_path):
    a, b = _final_model(tmp_path, "uniform")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.xfail(strict=True, reason="a checkpoint does not hold an adaptive sampler's history: the resumed run "
                                       "redraws from the model at the resume epoch (docs/reference.md, resample)")
@pytest.mark.parametrize("sampler", ["rad", "rard(add = 20)", "r3"])
def test_resume_with_an_adaptive_sampler_is_exact(tmp_path, sampler):
    a, b = _final_model(tmp_path, sampler)
    assert all(torch.equal(a[k], b[k]) for k in a)
