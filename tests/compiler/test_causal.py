"""Causal weighting over time chunks: the reduction against a brute-force computation of the formula
(Wang, Sankaran & Perdikaris 2022; jaxpi's chunked form), the condition loss of a spec against the formula
applied to its own residuals, and the compiled step's loss against the eager one."""

import math

import numpy as np
import pytest
import torch

from pinnspec.compiler import compile_spec
from pinnspec.compiler._causal import CausalChunks
from pinnspec.engine import Trainer
from pinnspec.engine._compiled import set_sums
from pinnspec.lang import loads

SPEC = """problem tiny
space x in [0, 1]
time  t in [0.5, 2]
field u
equation pde: u_t - 0.1*u_xx = 0
initial  ic: u = sin(pi*x)
boundary walls on x = 0, x = 1: u = 0
points pde 300, walls 40, ic 40
exact u = sin(pi*x)*exp(-0.1*pi^2*(t - 0.5))
test 200
validate 50 every 5
model mlp(width = 8, depth = 2)
causal pde(eps = {eps}, chunks = 7)
train epochs = 10, seed = 0, device = cpu{more}
"""


def brute_force(squares: np.ndarray, t: np.ndarray, eps: float, chunks: int, t0: float, t1: float):
    """(loss, weights) by loops over the chunks: L_k the mean of the squares with t in chunk k."""
    width = (t1 - t0) / chunks
    losses = []
    for k in range(chunks):
        lo, hi = t0 + k * width, t0 + (k + 1) * width
        inside = [s for s, ti in zip(squares, t) if lo <= ti < hi or (k == chunks - 1 and ti == t1)]
        losses.append(sum(inside) / len(inside) if inside else 0.0)
    weights = [math.exp(-eps * sum(losses[:k])) for k in range(chunks)]
    return sum(w * l for w, l in zip(weights, losses)) / chunks, weights


def test_the_reduction_is_the_formula():
    rng = np.random.default_rng(0)
    squares, t = rng.random(500) ** 3, rng.uniform(0.5, 2.0, 500)
    t[:3] = [0.5, 2.0, 1.25]  # the ends and a chunk edge
    causal = CausalChunks(eps=3.0, chunks=6, time_column=1, t0=0.5, t1=2.0)
    x = torch.tensor(np.column_stack([rng.random(500), t]), dtype=torch.float64)
    s = torch.tensor(squares, dtype=torch.float64, requires_grad=True)
    loss = causal.loss(s, x)
    expected, weights = brute_force(squares, t, 3.0, 6, 0.5, 2.0)
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-12)
    assert causal.weights(causal.chunk_losses(s, x)).tolist() == pytest.approx(weights, rel=1e-12)
    # no gradient through the weights: d loss / d s_j = w_k / (M n_k) for the chunk k of point j
    (grad,) = torch.autograd.grad(loss, s)
    chunk = np.minimum(np.floor((t - 0.5) / 0.25), 5).astype(int)
    counts = np.bincount(chunk, minlength=6)
    assert grad.numpy() == pytest.approx(np.array(weights)[chunk] / (6 * counts[chunk]), rel=1e-12)


def test_an_empty_chunk_adds_nothing_and_zero_eps_is_the_chunk_mean():
    x = torch.tensor([[0.0, 0.1], [0.0, 0.2], [0.0, 0.9]], dtype=torch.float64)
    squares = torch.tensor([1.0, 3.0, 5.0], dtype=torch.float64)
    causal = CausalChunks(eps=0.0, chunks=4, time_column=1, t0=0.0, t1=1.0)
    assert causal.chunk_losses(squares, x).tolist() == [2.0, 0.0, 0.0, 5.0]
    assert float(causal.loss(squares, x)) == pytest.approx((2.0 + 5.0) / 4)


def test_a_spec_condition_loss_is_the_causal_loss_of_its_residuals():
    spec = loads(SPEC.format(eps=2.0, more=""))
    trainer = Trainer(spec)
    problem, points = trainer.problem, trainer.points.at(0)
    losses = problem.losses(trainer.model, points, trainer.params)
    index = problem.condition_kernels["pde"].set_index
    residual = problem.set_residuals(index, trainer.model, points.sets[index], trainer.params)["pde"]
    t = points.sets[index].x[:, 1].detach().double().numpy()
    expected, _ = brute_force(residual.detach().double().square().sum(1).numpy(), t, 2.0, 7, 0.5, 2.0)
    assert float(losses.conditions["pde"].detach()) == pytest.approx(expected, rel=1e-5)
    # the other conditions keep their plain means; the compiled step's unit (`set_sums`) gives the same sums
    plain = residual.detach().square().sum(1).mean()
    assert float(losses.conditions["pde"]) != pytest.approx(float(plain), rel=1e-3)
    s = points.sets[index]
    (unit_sum,) = set_sums(problem, index, trainer.model, s.x.detach(), None, s.observed, s.face_slices, s.normals,
                           trainer.params)
    assert float(unit_sum) / s.count == pytest.approx(expected, rel=1e-5)


def test_training_logs_the_last_chunk_weight_and_compiled_equals_eager(tmp_path):
    eager = Trainer(loads(SPEC.format(eps=1.0, more=", engine = forward")), str(tmp_path / "eager"))
    eager.run()
    row = eager.run_state.history[4]
    assert 0.0 < row["causal:pde"] <= 1.0
    compiled = Trainer(loads(SPEC.format(eps=1.0, more=", engine = forward, compile = on")), None)
    compiled.run()
    a = [r["loss:pde"] for r in eager.run_state.history]
    b = [r["loss:pde"] for r in compiled.run_state.history]
    assert b == pytest.approx(a, rel=1e-4)
    assert "causal:pde" in (tmp_path / "eager" / "history.csv").read_text().splitlines()[0]


def test_causal_none_and_the_override():
    from pinnspec.lang._overrides import apply_overrides

    spec = loads(SPEC.format(eps=1.0, more=""))
    assert [c.condition for c in spec.ir.causal] == ["pde"]
    assert apply_overrides(spec, {"causal": "none"}).ir.causal == ()
    assert apply_overrides(spec, {"causal": "pde(eps = 0.5)"}).ir.causal[0].eps == 0.5
    assert compile_spec(apply_overrides(spec, {"causal": "none"})).causal == {}
