"""End-to-end training: every surgery method with and without GUA, determinism,
divergence, schedules, loss-specific gradients."""

import json
import math
from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.catalog import BUILTINS
from pinnspec.compiler import CompiledProblem
from pinnspec.engine import Trainer, loss_gradients
from pinnspec.engine._schedule import Constant, Cosine, WarmupConstant, WarmupCosine
from pinnspec.lang._overrides import apply_overrides

TINY = Path(__file__).parent / "data" / "tiny.pinn"
ROOT = Path(__file__).resolve().parents[2]
SURGERY = sorted(BUILTINS["surgery"])


@pytest.mark.parametrize("align", ["none", "gua"])
@pytest.mark.parametrize("surgery", SURGERY)
def test_every_surgery_trains_with_and_without_gua(surgery, align):
    result = pinnspec.train(TINY, surgery=surgery, align=align, epochs=40)
    assert result.status == "completed"
    assert math.isfinite(result.rel_l2) and result.rel_l2 < 1.0
    rates = result.rates
    if align == "gua":
        assert rates["R_p"] == 0.0
    else:
        assert rates["R_p"] is None
    if surgery in ("config", "mconfig", "upgrad", "imtlg", "amtl", "pcgrad"):
        assert rates["R_a"] <= rates["R_g"]
    if surgery in ("config", "upgrad"):
        assert rates["R_a"] == 0.0


@pytest.mark.parametrize("grouping", ["two", "three"])
def test_a_step_fetches_from_the_device_once(grouping, host_conversions, monkeypatch):
    """ConFIG + Adam + GUA with diagnostics: the finite checks, the logged losses and the conflict
    indicators come to the host in one transfer per step (a GPU step synchronises once; on the CPU,
    where a host decision is free, GUA's gate is one more)."""
    from pinnspec.align import _gua
    from pinnspec.bench._common import load_spec

    monkeypatch.setattr(_gua, "_host_is_free", lambda t: False)

    trainer = Trainer(load_spec(str(ROOT / "specs" / "burgers.pinn"), points={"burgers": 200},
                                overrides={"epochs": 10, "device": "cpu", "grouping": grouping}))
    for epoch in range(3):
        trainer.step(epoch)
    with host_conversions() as seen:
        rows = [trainer.step(epoch) for epoch in range(3, 6)]
    assert seen.count == 3
    assert all({"R_g", "R_a", "R_u", "R_p", "projected", "cos_pu"} <= set(row) for row in rows)


def test_the_next_points_are_drawn_while_the_device_computes_the_gradients(monkeypatch):
    """step(e) draws epoch e + 1's points once its losses and G are queued, before the update chain
    (ConFIG's m >= 3 pseudo-inverse waits for a GPU) and before it fetches its values: on a GPU the
    host's sampling overlaps the device's work.  step(e + 1) uses exactly those points, which equal a
    fresh draw, and nothing is drawn past the last epoch."""
    from pinnspec.bench._common import load_spec

    trainer = Trainer(load_spec(str(ROOT / "specs" / "burgers.pinn"), points={"burgers": 100},
                                overrides={"epochs": 4, "device": "cpu"}))
    events = []
    sample, tolist = trainer.problem.sample, torch.Tensor.tolist
    monkeypatch.setattr(trainer.problem, "sample", lambda epoch, *a, **k: events.append(("sample", epoch))
                        or sample(epoch, *a, **k))
    monkeypatch.setattr(torch.Tensor, "tolist", lambda t: events.append(("fetch",)) or tolist(t))
    from pinnspec.engine import UpdateChain

    update = UpdateChain.update
    monkeypatch.setattr(UpdateChain, "update", lambda *a, **k: events.append(("update",)) or update(*a, **k))
    used = []
    for epoch in range(4):
        trainer.step(epoch)
        used.append(trainer.points.current)
    assert events == [("sample", 0), ("sample", 1), ("update",), ("fetch",), ("sample", 2), ("update",), ("fetch",),
                      ("sample", 3), ("update",), ("fetch",), ("update",), ("fetch",)]
    for epoch, points in enumerate(used):
        for got, fresh in zip(points.sets, sample(epoch, trainer.seed).sets):
            assert torch.equal(got.x.detach(), fresh.x.detach())


def test_loss_decreases_and_history_is_complete(tmp_path):
    result = pinnspec.train(TINY, epochs=60, out=str(tmp_path))
    rows = (tmp_path / "history.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert len(rows) == 61
    losses = [float(r.split(",")[header.index("loss")]) for r in rows[1:]]
    assert sum(losses[-10:]) < 0.5 * sum(losses[:10])
    saved = json.loads((tmp_path / "result.json").read_text())
    for key in ("problem", "surgery", "optimizer", "align", "grouping", "seed", "epochs", "rel_l2", "rel_l2_final",
                "rates", "train_time_s", "peak_memory_mb", "device", "params"):
        assert key in saved
    assert saved["rel_l2"] == pytest.approx(result.rel_l2)
    assert set(saved["rates"]) == {"R_g", "R_a", "R_u", "R_p"}
    assert (tmp_path / "config.pinn").read_text().startswith("# A tiny heat problem")
    assert saved["validation"] == "points" and saved["best_epoch"] is not None


def test_conditions_in_no_task_are_not_evaluated_and_the_run_says_so(tmp_path, capsys):
    text = (TINY.read_text().replace("initial  ic:", "boundary pdewalls on x = 0, x = 1: u_t - 0.1*u_xx = 0\ninitial  ic:")
            .replace("points pde 200, walls 40, ic 40", "points pde 200, walls 40, ic 40, pdewalls 40"))
    spec = pinnspec.lang.loads(text, filename="tiny.pinn")
    assert Trainer(spec).problem.left_out == ("pdewalls",)
    pinnspec.train(spec, epochs=3, overrides={"compile": "on"}, out=str(tmp_path))
    assert "grouping 'three': pdewalls is in no task: not evaluated, no loss logged" in capsys.readouterr().err
    header = (tmp_path / "history.csv").read_text().splitlines()[0].split(",")
    assert [c for c in header if c.startswith("loss:")] == ["loss:pde", "loss:ic", "loss:walls"]


def test_same_seed_same_run():
    a = pinnspec.train(TINY, epochs=30, surgery="pcgrad").to_dict()
    b = pinnspec.train(TINY, epochs=30, surgery="pcgrad").to_dict()
    for key in ("train_time_s", "peak_memory_mb"):
        a.pop(key), b.pop(key)
    assert a == b
    c = pinnspec.train(TINY, epochs=30, surgery="pcgrad", seed=1)
    assert c.rel_l2 != a["rel_l2"]


def test_inverse_problem_learns_its_param():
    """The inverse heat problem recovers its diffusivity: k starts at 0.5 and approaches the true 0.1 of
    the observations (examples/inverse_heat/make_data.py), with the spec's ConFIG + GUA on a smaller
    network and point budget (seconds; seeds 0-2 end within 0.002 of 0.1)."""
    from pinnspec.bench._common import load_spec

    spec = load_spec(str(ROOT / "examples" / "inverse_heat" / "inverse_heat.pinn"), points={"heat": 150, "walls": 50},
                     overrides={"epochs": 1200, "device": "cpu", "model": "mlp(width = 16, depth = 3)",
                                "optimizer": "adam(lr = 5e-3)",
                                "schedule": "warmup_cosine(warmup = 10, lr_min = 1e-4)"})
    result = Trainer(spec).run()
    assert result.status == "completed" and set(result.params) == {"k"}
    assert result.params["k"] == pytest.approx(0.1, abs=0.01)


def test_divergence_stops_names_the_loss_and_keeps_the_checkpoint(tmp_path, monkeypatch):
    real = CompiledProblem.losses

    def poisoned(self, model, points, params=None, grouping=None, **options):
        out = real(self, model, points, params, grouping, **options)
        if points.epoch >= 7:
            out.task_list[1] = out.task_list[1] * float("nan")
        return out

    monkeypatch.setattr(CompiledProblem, "losses", poisoned)
    monkeypatch.setattr("pinnspec.compiler._problem.CompiledProblem.losses", poisoned)
    result = pinnspec.train(TINY, epochs=30, out=str(tmp_path), overrides={"checkpoint_every": 5})
    assert result.status == "diverged"
    # the poisoned losses start at the 8th epoch (index 7): epochs are counted from 1
    assert "epoch 8" in result.message and "task 1 'B'" in result.message
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert checkpoint["epoch"] == 5
    assert all(torch.isfinite(v).all() for v in checkpoint["model"].values())
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == "diverged" and "epoch 8" in saved["message"]


def test_loss_gradients_match_separate_backward_passes():
    problem = pinnspec.compile(TINY)
    model = pinnspec.models.mlp(width=8, depth=2).build(2, 1, generator=torch.Generator().manual_seed(0))
    points = problem.sample(0)
    theta = list(model.parameters())
    G = loss_gradients(problem.losses(model, points, grouping="three").task_list, theta)
    for i in range(3):
        model.zero_grad()
        problem.losses(model, points, grouping="three").task_list[i].backward()
        # the output bias does not reach u_t - 0.1 u_xx: its gradient is None there, a zero row in G
        row = torch.cat([(t.grad if t.grad is not None else torch.zeros_like(t)).reshape(-1) for t in theta])
        assert torch.allclose(G[i], row, atol=1e-7)


def test_unreached_parameter_gets_zero_gradient():
    w = torch.nn.Parameter(torch.ones(3))
    v = torch.nn.Parameter(torch.ones(2))
    G = loss_gradients([(w ** 2).sum(), (2 * w).sum()], [w, v])
    assert torch.equal(G[:, 3:], torch.zeros(2, 2))


def test_schedules_follow_the_paper():
    s = WarmupCosine(warmup=100, lr_min=1e-4)
    T, lr0 = 1000, 1e-3
    assert s(0, T, lr0) == 0.0
    assert s(50, T, lr0) == pytest.approx(5e-4)
    assert s(100, T, lr0) == pytest.approx(1e-3)
    assert s(550, T, lr0) == pytest.approx(1e-4 + 0.5 * 9e-4)
    assert s(T - 1, T, lr0) == pytest.approx(1e-4 + 0.5 * 9e-4 * (1 + math.cos(math.pi * 899 / 900)))
    assert WarmupConstant(100)(40, T, 1e-4) == pytest.approx(4e-5) and WarmupConstant(100)(500, T, 1e-4) == 1e-4
    assert Constant()(0, T, lr0) == lr0
    assert Cosine(lr_min=0.0)(500, T, lr0) == pytest.approx(5e-4)


def test_float32_run_takes_its_references_at_the_float64_points():
    # the Schrödinger grid ends at t = pi/2, which float32 rounds past the reference's time span
    spec = apply_overrides(pinnspec.load(ROOT / "specs" / "schrodinger.pinn"),
                           {"dtype": "float32", "device": "cpu", "epochs": 1, "validate": "test every 100"})
    trainer = Trainer(spec)
    assert float(trainer.evaluation.test_points[:, 1].max()) > math.pi / 2  # the rounding this guards against
    assert trainer.evaluation.test_reference.dtype == torch.float64 and len(trainer.evaluation.test_reference) == 256 * 201


def test_peak_memory_counts_from_the_start_of_training():
    """A process that trained something big before (a sweep's pool worker) reports each run's own peak."""
    import mmap

    from pinnspec._rss import read_status, reset_peak

    if not reset_peak():
        pytest.skip("the kernel does not let a process reset its RSS high-water mark")
    size = 400 * 2**20
    big = mmap.mmap(-1, size)  # its own mapping: closing it returns the pages, whatever malloc keeps
    for offset in range(0, size, mmap.PAGESIZE):
        big[offset] = 1
    before = read_status()["VmHWM"]
    big.close()
    result = Trainer(apply_overrides(pinnspec.load(TINY), {"epochs": 3, "device": "cpu"})).run()
    assert 0 < result.peak_memory_mb < (before - 300 * 2**20) / 2**20
