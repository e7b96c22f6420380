"""The accuracy toolkit on CUDA (skipped without a GPU; run on a lent GPU machine by ``.ci/gpu-check``):
stages with an L-BFGS or a self-scaled Broyden stage in float64 (and resume inside them), hard constraints and a periodic embedding,
causal weighting and residual-based attention, eager and compiled.

``PINNSPEC_TEST_DEVICE=cpu`` runs the same tests on the CPU (how their logic is checked without a GPU)."""

import os

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.engine._artifacts import load_checkpoint
from pinnspec.lang import loads

DEVICE = os.environ.get("PINNSPEC_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")

#: u_t = 0.1 u_xx on [0, 1]^2, u = sin(pi x) at t = 0, u = 0 on both walls (the engine tests' heat problem)
HEAT_CONDITIONS = (Path(__file__).parents[1] / "engine" / "data" / "heat_conditions.pinn").read_text()
HEAT = HEAT_CONDITIONS + """points pde 256, walls 32, ic 32
resample never
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
test 500
validate 100 every 5
model mlp(width = 16, depth = 2)
schedule constant
surgery config
align gua
{more}
train seed = 0, device = {device}, checkpoint_every = 4{train}
"""

STAGES = """stage adam(lr = 5e-3) epochs = 20
stage lbfgs(history = 10, max_evals = 10) epochs = 10, dtype = float64"""
#: the dense self-scaled Broyden stage drawing new points every 3 epochs (at 23, 26, 29)
SSBROYDEN = STAGES.replace("lbfgs(history = 10, max_evals = 10)", "ssbroyden(max_evals = 10)") + ", resample = 3"


def _spec(more: str = "", train: str = ", epochs = 12"):
    return loads(HEAT.format(more=more, device=DEVICE, train=train))


def test_stages_switch_to_lbfgs_in_float64_on_the_device(tmp_path):
    trainer = Trainer(_spec(STAGES, train=""), str(tmp_path / "run"))
    result = trainer.run()
    assert result.status == "completed" and result.device.startswith(DEVICE)
    assert all(p.dtype == torch.float64 and p.device.type == DEVICE for p in trainer.model.parameters())
    losses = [row["loss"] for row in trainer.run_state.history[20:]]
    assert all(b <= a for a, b in zip(losses, losses[1:]))  # L-BFGS at fixed points never goes up


@pytest.mark.parametrize("stages", [STAGES, SSBROYDEN], ids=["lbfgs", "ssbroyden"])
def test_resume_inside_a_quasi_newton_stage_on_the_device_is_bit_identical(tmp_path, stages):
    straight = Trainer(_spec(stages, train=""), str(tmp_path / "straight"))
    straight.run()
    holder = {}

    def stop(line):
        if line.startswith("epoch 25/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(_spec(stages, train=""), str(tmp_path / "first"), log=stop)
    first.run()
    resumed = Trainer(_spec(stages, train=""), str(tmp_path / "first"))
    resumed.load_state_dict(load_checkpoint(str(tmp_path / "first" / "checkpoint.pt")))
    resumed.run()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert straight.quasi_newton.state.grad.device.type == DEVICE


@pytest.mark.parametrize("compile_setting", ["off", "on"])
def test_hard_constraints_hold_on_the_device(compile_setting):
    trainer = Trainer(_spec("enforce ic, walls", f", epochs = 6, engine = forward, compile = {compile_setting}"))
    result = trainer.run()
    assert result.status == "completed"
    assert all(row["loss:ic"] < 1e-10 and row["loss:walls"] < 1e-10 for row in trainer.run_state.history)


def test_a_periodic_embedding_on_the_device():
    text = HEAT.replace("boundary walls on x = 0, x = 1: u = 0", "periodic pbc on x: u, u_x").replace(
        "points pde 256, walls 32, ic 32", "points pde 256, pbc 32, ic 32")
    trainer = Trainer(loads(text.format(more="enforce pbc", device=DEVICE, train=", epochs = 6")))
    trainer.run()
    assert all(row["loss:pbc"] < 1e-10 for row in trainer.run_state.history)


def test_causal_weighting_compiled_equals_eager_on_the_device():
    rows = {}
    for setting in ("off", "on"):
        trainer = Trainer(_spec("causal pde(eps = 1, chunks = 8)", f", epochs = 6, engine = forward, "
                                                                      f"compile = {setting}"))
        trainer.run()
        rows[setting] = [row["loss:pde"] for row in trainer.run_state.history]
    assert rows["on"] == pytest.approx(rows["off"], rel=1e-3)


def test_residual_based_attention_on_the_device():
    trainer = Trainer(_spec("weights rba(eta = 0.01, gamma = 0.99)"))
    assert trainer.run().status == "completed"
    assert all(w.device.type == DEVICE for w in trainer.attention.values())
