"""`train time`: a wall-time budget the stages share.  The clock is replaced by one that reads the epoch number
(one second per epoch), so that where each stage ends is known: with 20 s and two stages, the first stage may use
half (it ends after the epoch at which 10 s have passed), the second what is left."""

import csv
import types
from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer, load_run
from pinnspec.engine import _trainer
from pinnspec.engine._budget import TimeBudget
from pinnspec.lang import loads

#: u_t = 0.1 u_xx on [0, 1]^2, u = sin(pi x) at t = 0, u = 0 on both walls (the engine tests' heat problem)
HEAT_CONDITIONS = (Path(__file__).parent / "data" / "heat_conditions.pinn").read_text()
SPEC = HEAT_CONDITIONS + """points pde 64, walls 16, ic 16
model mlp(width = 8, depth = 2)
schedule constant
stage adam(lr = 5e-3) epochs = 30
stage lbfgs(history = 5, max_evals = 5) epochs = 40, dtype = float64
train seed = 0, device = cpu, checkpoint_every = 4, time = 20 s
"""


class EpochClock:
    """A stand-in for the `time` module whose perf_counter reads ``now`` (set to the epoch before each epoch)."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = EpochClock()
    monkeypatch.setattr(_trainer, "time", types.SimpleNamespace(perf_counter=fake.perf_counter))
    return fake


def _ticking(clock, stop_at=None, trainer_box=None):
    def before_epoch(epoch):
        clock.now = float(epoch)
        if stop_at is not None and epoch == stop_at:
            trainer_box[0].request_stop()
    return before_epoch


def _stages(run_dir) -> list[str]:
    with open(run_dir / "history.csv") as f:
        return [row["stage"] for row in csv.DictReader(f)]


def test_the_stages_share_the_budget(tmp_path, clock):
    trainer = Trainer(loads(SPEC), str(tmp_path / "run"))
    result = trainer.run(before_epoch=_ticking(clock))
    # stage 1 may use 20 s / 2 stages: at epoch 10 (10 s) its share is spent, so it ends after 11 epochs; stage 2
    # begins at 11 s with the 9 s left and ends after the epoch at which 20 s have passed
    assert _stages(tmp_path / "run") == ["1"] * 11 + ["2"] * 10
    assert result.status == "completed" and result.epochs_done == result.epochs == 21
    assert trainer.stage_starts == [0, 11]
    assert "time budget (20 s) was spent after epoch 21" in trainer.run_state.message


def test_a_stopped_budgeted_run_resumes_bit_for_bit(tmp_path, clock):
    whole = Trainer(loads(SPEC), str(tmp_path / "whole"))
    whole.run(before_epoch=_ticking(clock))
    clock.now = 0.0
    box = [None]
    box[0] = Trainer(loads(SPEC), str(tmp_path / "part"))
    stopped = box[0].run(before_epoch=_ticking(clock, stop_at=14, trainer_box=box))
    assert stopped.status == "interrupted" and stopped.epochs_done == 15  # in stage 2, after its cut
    resumed = load_run(str(tmp_path / "part"))
    assert resumed.stage_starts == [0, 11] and resumed.epochs == 11 + 40  # the first cut is in the checkpoint
    clock.now = 14.0  # the clock as the stopped session left it
    result = resumed.run(before_epoch=_ticking(clock))
    assert result.epochs_done == 21
    for name, value in whole.params.items():
        assert torch.equal(value, resumed.params[name]), name
    assert (tmp_path / "whole" / "history.csv").read_text() == (tmp_path / "part" / "history.csv").read_text()


def test_deadlines():
    budget = TimeBudget(90.0, 3)
    budget.stage_began(0, 0.0)
    assert budget.deadline == 30.0  # an equal share of what is left
    budget.stage_began(1, 10.0)  # the first stage ended early: the second may use half of the 80 s left
    assert budget.deadline == 50.0 and not budget.spent(49.9) and budget.spent(50.0)
    budget.stage_began(2, 50.0)
    assert budget.deadline == 90.0  # the last stage: whatever is left
    assert not TimeBudget(None, 2).spent(1e9)
