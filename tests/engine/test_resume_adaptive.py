"""Resuming a run whose points come from an adaptive sampler: the checkpoint holds the sampler's history and the
points the run holds (chosen by the model when they were drawn), so a stopped run resumes bit for bit, as with a
plain sampler."""

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
train     epochs = 30, seed = 0, device = cpu, checkpoint_every = 10
"""


def _straight_and_resumed(tmp_path, sampler: str, stop_at: int) -> tuple[Trainer, Trainer]:
    """(30 epochs straight, 30 epochs stopped after epoch ``stop_at`` and resumed from its checkpoint)."""
    straight = Trainer(loads(SPEC.format(sampler=sampler)), str(tmp_path / "straight"))
    straight.run()
    first = Trainer(loads(SPEC.format(sampler=sampler)), str(tmp_path / "first"))
    step = first.step

    def stopping_step(epoch):  # as Ctrl-C does: the epoch finishes, the run checkpoints and stops
        row = step(epoch)
        first._stop_requested = epoch + 1 == stop_at
        return row

    first.step = stopping_step
    assert first.run().status == "interrupted"
    resumed = Trainer(loads(SPEC.format(sampler=sampler)), str(tmp_path / "first"))
    resumed.load_state_dict(load_checkpoint(str(tmp_path / "first" / "checkpoint.pt")))
    assert resumed.run_state.epoch == stop_at
    resumed.run()
    return straight, resumed


@pytest.mark.parametrize("stop_at", [15, 17], ids=["at a resampling (drawn ahead)", "inside a block"])
@pytest.mark.parametrize("sampler", ["uniform", "rad", "rard(add = 20)", "r3"])
def test_a_stopped_run_resumes_bit_for_bit(tmp_path, sampler, stop_at):
    straight, resumed = _straight_and_resumed(tmp_path, sampler, stop_at)
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [row["loss"] for row in straight.run_state.history] == [row["loss"] for row in resumed.run_state.history]
    assert torch.equal(straight.points.current.sets[0].x, resumed.points.current.sets[0].x)  # the last block's points
    if sampler != "uniform":
        assert len(straight.points.current.sets[0].x) == (200 if sampler.startswith("rard") else 100)  # rard: 5 x 20 added
