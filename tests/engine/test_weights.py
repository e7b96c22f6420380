"""The loss-balancing stage (`weights gradnorm(...)` / `ntk(...)`, pinnspec.engine._weights): the formula on
hand-computed G, the NTK diagonal against closed forms and an independent per-point oracle, its place in the
chain, `weights none` bit-identical, resume bit for bit, the override, and what each surgery method and GUA
do with positive per-task weights (the table in docs/training.md)."""

import copy
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pinnspec import ir
from pinnspec.engine._chain import UpdateChain
from pinnspec.engine import Trainer
from pinnspec.engine._weights import GradNorm, NoWeights, NTKWeights, balanced_target, ntk_diagonal_mean
from pinnspec.lang import SpecError, loads
from pinnspec.lang._overrides import apply_overrides
from pinnspec.registry import ALIGN, OPTIMIZERS, SURGERY

TINY = Path(__file__).parent / "data" / "tiny.pinn"
ROOT = Path(__file__).resolve().parents[2]


def tiny(weights: str | None, epochs: int = 30) -> str:
    text = TINY.read_text().replace("train     epochs = 60", f"train     epochs = {epochs}")
    return text if weights is None else text.replace("train ", f"weights {weights}\ntrain ", 1)


def chain(weights, surgery="none", align="none"):
    return UpdateChain(SURGERY.get(surgery)(), OPTIMIZERS.get("sgd")(lr=1.0), ALIGN.get(align)(), weights)


# ====================================================================== the formula
def test_gradnorm_after_one_update_equals_the_hand_computed_formula():
    # ||g_1|| = 5, ||g_2|| = 1: mean 3, lambda_hat = (3/5, 3/1); from lambda = 1 with alpha = 0.9:
    # 0.9 + 0.1 * 0.6 = 0.96 and 0.9 + 0.1 * 3 = 1.2
    G = torch.tensor([[3.0, 4.0], [0.0, 1.0]], dtype=torch.float64)
    c = chain(GradNorm(every=1, alpha=0.9))
    state = c.init(torch.zeros(2, dtype=torch.float64), [(2,)], 2)
    assert torch.equal(state.weights, torch.ones(2, dtype=torch.float64))
    state = c.reweighted(state, GradNorm.magnitudes(G))
    assert torch.allclose(state.weights, torch.tensor([0.96, 1.2], dtype=torch.float64), rtol=0, atol=1e-15)
    # a second update from there: 0.9 * 0.96 + 0.1 * 0.6 = 0.924, 0.9 * 1.2 + 0.1 * 3 = 1.38
    state = c.reweighted(state, GradNorm.magnitudes(G))
    assert torch.allclose(state.weights, torch.tensor([0.924, 1.38], dtype=torch.float64), rtol=0, atol=1e-15)


def test_alpha_zero_gives_the_target_whose_weighted_rows_have_the_mean_norm():
    G = torch.tensor([[3.0, 4.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -12.0]], dtype=torch.float64)
    c = chain(GradNorm(every=1, alpha=0.0))
    state = c.reweighted(c.init(torch.zeros(3, dtype=torch.float64), [(3,)], 3), GradNorm.magnitudes(G))
    weighted = state.weights[:, None] * G
    assert torch.allclose(weighted.norm(dim=1), torch.full((3,), 6.0, dtype=torch.float64))  # mean(5, 1, 12)


def test_a_task_with_zero_gradient_keeps_its_weight():
    weights = torch.tensor([0.5, 2.0], dtype=torch.float64)
    target = balanced_target(torch.tensor([0.0, 4.0], dtype=torch.float64), weights)
    assert target.tolist() == [0.5, 2.0 / 4.0]  # s = (0, 4): mean 2; task 0 keeps 0.5
    assert balanced_target(torch.zeros(2, dtype=torch.float64), weights).tolist() == [0.5, 2.0]


def test_the_chain_scales_the_rows_of_G_before_surgery():
    G = torch.tensor([[1.0, -2.0, 0.5], [-3.0, 1.0, 2.0]], dtype=torch.float64)
    lam = torch.tensor([0.7, 1.9], dtype=torch.float64)
    theta = torch.zeros(3, dtype=torch.float64)
    for surgery in ("none", "pcgrad", "config", "upgrad"):
        weighted = chain(GradNorm(), surgery)
        state = weighted.init(theta, [(3,)], 2)._replace(weights=lam)
        plain = chain(NoWeights(), surgery)
        expected = plain.update(lam[:, None] * G, theta, plain.init(theta, [(3,)], 2),
                                generator=torch.Generator().manual_seed(0))
        step = weighted.update(G, theta, state, generator=torch.Generator().manual_seed(0))
        assert torch.equal(step.p, expected.p), surgery
        assert torch.equal(step.checks.conflicts, expected.checks.conflicts)
        assert step.state.weights is lam  # unchanged by the step: only `reweighted` moves them


def test_unit_weights_leave_the_step_bit_identical():
    G = torch.randn(3, 50, dtype=torch.float32, generator=torch.Generator().manual_seed(3))
    theta = torch.zeros(50)
    for surgery in ("none", "pcgrad", "config", "upgrad", "imtlg", "cagrad"):
        with_stage, without = chain(GradNorm(), surgery, "gua"), chain(NoWeights(), surgery, "gua")
        a = with_stage.update(G, theta, with_stage.init(theta, [(50,)], 3), generator=torch.Generator().manual_seed(0))
        b = without.update(G, theta, without.init(theta, [(50,)], 3), generator=torch.Generator().manual_seed(0))
        assert torch.equal(a.p, b.p), surgery


def test_stage_arguments_are_checked():
    with pytest.raises(ValueError, match="every"):
        GradNorm(every=0)
    with pytest.raises(ValueError, match="alpha"):
        GradNorm(alpha=1.0)
    with pytest.raises(ValueError, match="points"):
        NTKWeights(points=0)


def test_cadence_is_every_epoch_that_is_a_multiple_of_every():
    stage = GradNorm(every=4)
    assert [k for k in range(13) if stage.due(k)] == [0, 4, 8, 12]
    assert not any(NoWeights().due(k) for k in range(10))


# ====================================================================== the NTK diagonal
def test_ntk_diagonal_of_a_linear_residual_is_the_mean_squared_row_norm():
    # r = X theta - y: d r_j / d theta = x_j, so the mean NTK diagonal is mean_j ||x_j||^2
    g = torch.Generator().manual_seed(0)
    X = torch.randn(7, 4, dtype=torch.float64, generator=g)
    y = torch.randn(7, dtype=torch.float64, generator=g)
    theta = torch.randn(4, dtype=torch.float64, generator=g, requires_grad=True)
    r = (X @ theta - y)[:, None]  # [7, 1]
    assert torch.allclose(ntk_diagonal_mean(r, [theta]), X.square().sum(dim=1).mean(), rtol=1e-14, atol=0)
    # two components and a bias: r_j = (W x_j + b) -> per point sum_k ||x_j||^2 + 1 over k = 1, 2
    layer = torch.nn.Linear(4, 2).double()
    out = layer(X)  # [7, 2]
    expected = (2 * (X.square().sum(dim=1) + 1)).mean()
    assert torch.allclose(ntk_diagonal_mean(out, list(layer.parameters())), expected, rtol=1e-14, atol=0)


def _oracle_magnitudes(trainer: Trainer, points) -> list[float]:
    """mean_j ||d r(x_j)/d theta||^2 per task of the tiny spec's grouping 'three' [N, B, I], every point,
    by torch.func (jacrev of the functional model per point) -- nothing of the engine's residual code."""
    from torch.func import functional_call, jacrev, vmap

    model = trainer.model
    names = [n for n, _ in model.named_parameters()]
    params = {n: p.detach() for n, p in model.named_parameters()}

    def u(p, x):  # x [2] -> u(x) scalar
        return functional_call(model, p, (x[None],))[0, 0]

    def pde(p, x):  # u_t - 0.1 u_xx (coordinates x, t)
        du = torch.func.grad(u, argnums=1)
        d2u = torch.func.jacrev(du, argnums=1)
        return du(p, x)[1] - 0.1 * d2u(p, x)[0, 0]

    def boundary(p, x):  # u = 0 on the walls
        return u(p, x)

    def initial(p, x):  # u - sin(pi x) at t = 0
        return u(p, x) - torch.sin(torch.pi * x[0])

    def diagonal(residual, x):
        J = vmap(jacrev(residual), in_dims=(None, 0))(params, x.detach())
        return sum(J[n].reshape(len(x), -1).double().square().sum(dim=1) for n in names).mean()

    sets = {ck.condition: points.sets[ck.set_index].x for cks in trainer.problem.by_set.values() for ck in cks}
    return [float(diagonal(pde, sets["pde"])), float(diagonal(boundary, sets["walls"])),
            float(diagonal(initial, sets["ic"]))]


def test_ntk_magnitudes_equal_an_independent_per_point_oracle():
    trainer = Trainer(loads(tiny("ntk(points = 100000)")))  # more points than any set: every point counts
    points = trainer.points.at(0)
    measured = trainer._weight_magnitudes(points, None, 0)
    assert measured.dtype == torch.float64 and measured.shape == (3,)
    expected = _oracle_magnitudes(trainer, points)
    assert measured.tolist() == pytest.approx(expected, rel=1e-5)


def test_ntk_subsample_is_pure_in_seed_and_epoch():
    trainer = Trainer(loads(tiny("ntk(points = 8)")))
    points = trainer.points.at(0)
    first, again = trainer._weight_magnitudes(points, None, 0), trainer._weight_magnitudes(points, None, 0)
    assert torch.equal(first, again)
    assert not torch.equal(first, trainer._weight_magnitudes(points, None, 1))


def test_pooled_task_weighs_its_conditions_by_their_share_of_points():
    spec = loads(tiny("ntk(points = 100000)").replace("grouping = three", "grouping = two"))
    trainer = Trainer(spec)
    points = trainer.points.at(0)
    two = trainer._weight_magnitudes(points, None, 0)  # [N, pool(walls, ic)]
    _, walls, ic = _oracle_magnitudes(trainer, points)
    assert float(two[1]) == pytest.approx((40 * walls + 40 * ic) / 80, rel=1e-5)


# ====================================================================== in a run
def run(text: str, **kwargs) -> Trainer:
    trainer = Trainer(loads(text), **kwargs)
    trainer.run()
    return trainer


def test_weights_none_leaves_a_run_bit_identical(tmp_path):
    plain = run(tiny(None), out=str(tmp_path / "plain"))
    none = run(tiny("none"), out=str(tmp_path / "none"))
    assert none.spec.ir.training == plain.spec.ir.training
    assert none.chain_state.weights is None and "weight0" not in none.run_state.columns
    assert (tmp_path / "plain" / "history.csv").read_text() == (tmp_path / "none" / "history.csv").read_text()
    assert all(torch.equal(a, b) for a, b in zip(plain.theta, none.theta))
    saved = torch.load(tmp_path / "none" / "checkpoint.pt", weights_only=False)
    assert "weights" not in saved
    assert set(saved) == set(torch.load(tmp_path / "plain" / "checkpoint.pt", weights_only=False))


def test_gradnorm_history_logs_the_weights_each_epoch_used():
    trainer = run(tiny("gradnorm(every = 7, alpha = 0.5)", epochs=20))
    columns = [f"weight{i}" for i in range(3)]
    assert trainer.run_state.columns[-3:] == columns
    rows = [[row[c] for c in columns] for row in trainer.run_state.history]
    assert rows[0] == [1.0, 1.0, 1.0]
    # the weights change after epochs 0, 7, 14 (counted from 0): constant on 1..7, 8..14, 15..19
    for start, stop in ((1, 8), (8, 15), (15, 20)):
        assert all(r == rows[start] for r in rows[start:stop])
    assert rows[1] != rows[0] and rows[8] != rows[1] and rows[15] != rows[8]
    assert trainer.chain_state.weights.tolist() == rows[15]  # the last update (after epoch 14) is what the state holds


def test_gradnorm_update_in_a_run_equals_the_formula_on_that_epoch_G():
    trainer = Trainer(loads(tiny("gradnorm(every = 5, alpha = 0.8)", epochs=5)))
    before = trainer.chain_state.weights.clone()
    captured = {}
    execute = trainer.execution

    def spy(*args, **kwargs):
        out = execute(*args, **kwargs)
        captured["G"] = out.G.detach().clone()
        return out

    trainer.execution = spy
    trainer.step(0)
    norms = captured["G"].double().norm(dim=1)
    expected = 0.8 * before.double() + 0.2 * norms.mean() / norms
    assert torch.allclose(trainer.chain_state.weights.double(), expected, rtol=1e-6, atol=0)


def _interrupted_at(text: str, epoch: int) -> dict:
    trainer = Trainer(loads(text))
    step = trainer.step

    def stepping(k):
        row = step(k)
        if k + 1 == epoch:
            trainer._stop_requested = True
        return row

    trainer.step = stepping
    assert trainer.run().status == "interrupted"
    buffer = io.BytesIO()
    torch.save(trainer.state_dict(), buffer)  # through bytes, as a checkpoint on disk
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("weights", ["gradnorm(every = 3, alpha = 0.7)", "ntk(every = 4, points = 8)"])
def test_resume_is_bit_for_bit(weights):
    text = tiny(weights, epochs=24)
    whole = run(text)
    saved = _interrupted_at(text, 10)
    assert torch.is_tensor(saved["weights"]) and saved["weights"].shape == (3,)
    resumed = Trainer(loads(text))
    resumed.load_state_dict(copy.deepcopy(saved))
    resumed.run()
    assert resumed.run_state.history == whole.run_state.history
    assert torch.equal(resumed.chain_state.weights, whole.chain_state.weights)
    assert all(torch.equal(a, b) for a, b in zip(resumed.theta, whole.theta))


def test_a_checkpoint_of_another_weights_stage_is_refused():
    saved = _interrupted_at(tiny("gradnorm(every = 3)", epochs=6), 2)
    trainer = Trainer(loads(tiny(None, epochs=6)))
    with pytest.raises(ValueError, match="task weights"):
        trainer.load_state_dict(saved)


# ====================================================================== the language
def test_statement_lowers_with_its_defaults():
    assert loads(tiny(None)).ir.training.weights == ir.CallSpec("none")
    assert loads(tiny("none")).ir.training.weights == ir.CallSpec("none")
    assert loads(tiny("gradnorm")).ir.training.weights == ir.CallSpec("gradnorm", (("every", 100), ("alpha", 0.9)))
    ntk = loads(tiny("ntk(points = 64, every = 10)")).ir.training.weights
    assert ntk == ir.CallSpec("ntk", (("every", 10), ("alpha", 0.9), ("points", 64)))
    assert isinstance(ntk.options["every"], int) and isinstance(ntk.options["alpha"], float)


def test_set_override_replaces_the_weights_statement():
    spec = loads(tiny("ntk(points = 64)"))
    changed = apply_overrides(spec, {"weights": "gradnorm(every = 10)"},
                              {"weights": "--set 'weights=gradnorm(every = 10)'"})
    assert changed.ir.training.weights == ir.CallSpec("gradnorm", (("every", 10), ("alpha", 0.9)))
    assert UpdateChain.from_training(changed.ir.training).weights == GradNorm(every=10, alpha=0.9)
    with pytest.raises(SpecError) as info:
        apply_overrides(spec, {"weights": "gradnrm(every = 10)"}, {"weights": "--set 'weights=gradnrm(every = 10)'"})
    assert "--set 'weights=gradnrm(every = 10)'" in str(info.value)
    assert "did you mean 'gradnorm'" in str(info.value)


def test_cli_set_weights_trains_and_logs_the_weights(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pinnspec", "train", str(TINY), "--epochs", "12", "--quiet",
                           "--set", "weights=gradnorm(every = 10)", "--out", str(tmp_path)], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "history.csv").read_text().splitlines()[0].split(",")
    assert header[-3:] == ["weight0", "weight1", "weight2"]
    assert "weights gradnorm(every = 10)" in (tmp_path / "config.pinn").read_text()


# ====================================================================== positive per-task scaling
#: method -> (direction invariant to a positive per-task scaling of the rows of G, magnitude invariant),
#: measured by `test_surgery_under_positive_per_task_scaling` (docs/training.md, the table)
INVARIANCE = {
    "none": (False, False),
    "pcgrad": (False, False),
    "cagrad": (False, False),
    "imtlg": (True, False),
    "amtl": (False, False),
    "upgrad": (False, False),
    "config": (True, False),
    "mconfig": (True, True),  # the first step only: see test_mconfig_is_invariant_only_at_its_first_step
}


def _conflicting(m: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    G = torch.randn(m, 20, dtype=torch.float64, generator=g)
    G[1] = -0.5 * G[0] + 0.3 * G[1]  # g_1 conflicts with g_0
    return G


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("name", sorted(INVARIANCE))
def test_surgery_under_positive_per_task_scaling(name, m):
    direction_invariant, magnitude_invariant = INVARIANCE[name]
    lam = torch.tensor([0.3, 2.0, 5.0][:m], dtype=torch.float64)
    for seed in range(3):
        G = _conflicting(m, seed)
        method = SURGERY.get(name)()
        a, _ = method(G, method.init(m, 20, dtype=torch.float64), generator=torch.Generator().manual_seed(1))
        b, _ = method(lam[:, None] * G, method.init(m, 20, dtype=torch.float64),
                      generator=torch.Generator().manual_seed(1))
        cos = float(a @ b / (a.norm() * b.norm()))
        ratio = float(b.norm() / a.norm())
        if direction_invariant:
            assert cos == pytest.approx(1.0, abs=1e-12), (seed, cos)
        if magnitude_invariant:
            assert ratio == pytest.approx(1.0, abs=1e-6), (seed, ratio)
        if seed == 0:  # the counter-examples: one G where the claim "not invariant" shows
            if not direction_invariant:
                assert cos < 1 - 1e-6, cos
            if not magnitude_invariant:
                assert abs(ratio - 1) > 1e-3, ratio


def test_config_magnitude_is_the_sum_of_the_weighted_projections():
    G = _conflicting(3, 0)
    lam = torch.tensor([0.3, 2.0, 5.0], dtype=torch.float64)
    a = SURGERY.get("config")().direction(lam[:, None] * G)
    unit = a / a.norm()
    assert float(a.norm()) == pytest.approx(float((lam[:, None] * G @ unit).sum()), rel=1e-12)


def test_mconfig_is_invariant_only_at_its_first_step():
    lam = torch.tensor([0.3, 2.0, 5.0], dtype=torch.float64)
    method = SURGERY.get("mconfig")()
    s1, s2 = method.init(3, 20, dtype=torch.float64), method.init(3, 20, dtype=torch.float64)
    cosines = []
    for seed in range(4):
        G = torch.randn(3, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        a, s1 = method(G, s1)
        b, s2 = method(lam[:, None] * G, s2)
        cosines.append(float(a @ b / (a.norm() * b.norm())))
    assert cosines[0] == pytest.approx(1.0, abs=1e-12)
    assert min(cosines[1:]) < 1 - 1e-5


@pytest.mark.parametrize("metric", ["adam", "euclidean"])
def test_gua_projection_is_invariant_to_positive_per_task_scaling(metric):
    # the cone {d : G d >= 0} and the gate cos(g_i, u) < -1e-6 do not change when the rows are scaled by
    # positive numbers: for a given proposal u, p and the aligned state are the same
    theta = torch.zeros(20, dtype=torch.float64)
    optimizer = OPTIMIZERS.get("adam")(lr=1e-3)
    gua = ALIGN.get("gua")(metric=metric, rho_m=0.1, rho_v=0.03)
    lam = torch.tensor([0.3, 2.0, 5.0], dtype=torch.float64)
    G = _conflicting(3, 0)
    state = optimizer.init(theta, [(20,)])
    for _ in range(3):  # a state with second moments
        _, state = optimizer.propose(torch.randn(20, dtype=torch.float64), state, params=theta)
    u, tentative = optimizer.propose(G[0] + 0.1 * G[1], state, params=theta)
    p1, s1 = gua.align(u, G, tentative, optimizer, params=theta)
    p2, s2 = gua.align(u, lam[:, None] * G, tentative, optimizer, params=theta)
    assert not torch.equal(p1, u)  # the projection acted
    assert torch.allclose(p1, p2, rtol=1e-9, atol=1e-12)


def test_losses_plot_shows_the_weights_panel(tmp_path):
    from pinnspec.plots._losses import losses_figure
    from pinnspec.plots._run import read_run_files

    run(tiny("gradnorm(every = 5)", epochs=12), out=str(tmp_path / "weighted"))
    run(tiny(None, epochs=12), out=str(tmp_path / "plain"))
    weighted = losses_figure(read_run_files(str(tmp_path / "weighted")))
    plain = losses_figure(read_run_files(str(tmp_path / "plain")))
    assert [a.get_ylabel() for a in weighted.axes][-1] == "task weight"
    assert len(weighted.axes) == len(plain.axes) + 1
    panel = weighted.axes[-1]
    assert [line.get_label() for line in panel.get_lines()] == ["task N", "task B", "task I"]
    assert panel.get_lines()[0].get_ydata()[0] == 1.0


def test_show_names_the_weights_stage():
    from pinnspec.engine import describe_execution
    from pinnspec.lang._show import format_ir

    weighted, plain = loads(tiny("gradnorm(every = 10)")), loads(tiny(None))
    assert "weights gradnorm(every = 10, alpha = 0.9)" in format_ir(weighted.ir)
    assert "weights" not in format_ir(plain.ir)
    assert "chain weights gradnorm(every = 10, alpha = 0.9) -> none() -> adam(" in describe_execution(weighted)
    assert "chain none() -> adam(" in describe_execution(plain)


def test_catalog_equals_the_stage_classes():
    from dataclasses import fields

    from pinnspec import catalog
    from pinnspec.engine._weights import WEIGHTINGS

    assert set(catalog.WEIGHTS) == set(WEIGHTINGS) and catalog.DEFAULTS["weights"] == "none"
    for name, args in catalog.WEIGHTS.items():
        assert {f.name: f.default for f in fields(WEIGHTINGS[name])} == args, name
