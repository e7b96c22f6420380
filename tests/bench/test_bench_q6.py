"""bench q6: task-cardinality scaling on the generated multi-label set (tiny sizes, seconds)."""

import csv
import json
from pathlib import Path

import pytest
import torch

from pinnspec import bench
from pinnspec.bench import _q6

PAPER_LINES = Path(__file__).resolve().parents[1] / "data" / "paper_q6_lines.txt"
TINY = dict(samples=256, test_samples=256, features=8, width=16, depth=2, batch_size=64, threads=1)


def test_synthetic_data_is_a_pure_function_of_the_seed():
    first = _q6.synthetic_attributes(3, train=300, test=200, features=10)
    again = _q6.synthetic_attributes(3, train=300, test=200, features=10)
    other = _q6.synthetic_attributes(4, train=300, test=200, features=10)
    for name in ("x_train", "y_train", "x_test", "y_test", "prevalence"):
        assert torch.equal(getattr(first, name), getattr(again, name)), name
    assert not torch.equal(first.x_train, other.x_train) and not torch.equal(first.y_train, other.y_train)
    assert first.x_train.shape == (300, 10) and first.y_test.shape == (200, _q6.ATTRIBUTES)
    assert set(first.y_train.unique().tolist()) <= {0.0, 1.0}
    # each attribute's threshold sits at its prevalence quantile of the training split
    assert torch.allclose(first.y_train.mean(dim=0), first.prevalence, atol=2 / 300)
    assert float(first.prevalence.min()) >= 0.05 and float(first.prevalence.max()) <= 0.5
    # attributes share latent factors: some pairs correlate clearly (positively and negatively)
    big = _q6.synthetic_attributes(0, train=4000, test=10, features=10)
    corr = torch.corrcoef(big.y_train.T)  # [40, 40]
    off = corr[~torch.eye(_q6.ATTRIBUTES, dtype=torch.bool)]
    assert float(off.max()) > 0.3 and float(off.min()) < -0.3


def test_the_generator_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    _q6.synthetic_attributes(0, train=50, test=50, features=4)
    _q6.MultiTaskMLP(4, 8, 2, 3, generator=torch.Generator().manual_seed(0), device="cpu", dtype=torch.float32)
    assert torch.equal(torch.rand(3), expected)


def _batch(m=4, n=32, d=8, seed=0):
    data = _q6.synthetic_attributes(seed, train=n, test=8, features=d)
    model = _q6.MultiTaskMLP(d, 16, 2, m, generator=torch.Generator().manual_seed(seed), device="cpu",
                             dtype=torch.float64)
    return model, data.x_train.double(), data.y_train[:, :m].double()


def test_loss_specific_gradients_sum_to_the_gradient_of_the_summed_loss():
    model, x, y = _batch(m=5)
    G, g_heads, losses = _q6.task_gradients(model, x, y)  # [m, p_s], [p_h], [m]
    assert G.shape == (5, model.shared_numel) and g_heads.shape == (model.heads_numel,)
    total = sum(_q6.task_losses(model, x, y))
    shared = torch.cat([g.reshape(-1) for g in torch.autograd.grad(total, model.shared, retain_graph=True)])
    heads = torch.cat([g.reshape(-1) for g in torch.autograd.grad(total, model.heads)])
    assert torch.allclose(G.sum(dim=0), shared, rtol=1e-10, atol=1e-12)
    assert torch.allclose(g_heads, heads, rtol=1e-10, atol=1e-12)
    assert float(losses.sum()) == pytest.approx(float(total.detach()))
    # each row is its own task's gradient, not the sum's: rows differ, and task i reaches head i only
    assert not torch.allclose(G[0], G[1])
    from pinnspec.engine import loss_gradients

    rows = loss_gradients(_q6.task_losses(model, x, y), model.heads)  # [m, m * width + m]
    weight_rows = rows[:, : 5 * 16].reshape(5, 5, 16)  # [task, head, width]
    off_diagonal = ~torch.eye(5, dtype=torch.bool)
    own = torch.stack([weight_rows[i, i] for i in range(5)])  # [m, width]
    assert float(weight_rows[off_diagonal].abs().max()) == 0.0 and float(own.norm(dim=1).min()) > 0


def test_no_surgery_no_alignment_is_adam_on_the_summed_loss():
    """surgery none + align none: the chain (shared and heads) is exactly torch.optim.Adam on the summed loss."""
    config = _q6.RunConfig(tasks=4, method="none", optimizer="adam(lr = 1e-2)", align="none", seed=1,
                           features=8, width=16, depth=2)
    training = _q6.MultiTaskTraining(config, device=torch.device("cpu"))
    reference = _q6.MultiTaskMLP(8, 16, 2, 4, generator=torch.Generator().manual_seed(1), device="cpu",
                                 dtype=torch.float32)
    adam = torch.optim.Adam(reference.params, lr=1e-2)
    data = _q6.synthetic_attributes(0, train=96, test=8, features=8)
    for k in range(3):
        x, y = data.x_train[32 * k: 32 * (k + 1)], data.y_train[32 * k: 32 * (k + 1), :4]
        record = training.step(x, y)
        assert torch.equal(record.p, record.u)  # no alignment: p = u
        adam.zero_grad()
        sum(_q6.task_losses(reference, x, y)).backward()
        adam.step()
    for ours, theirs in zip(training.model.params, reference.params):
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m", [6, 12])  # active-set enumeration (m <= 8) and the NNLS dual (m > 8)
def test_gua_leaves_no_conflicting_update(m, one_thread):
    config = _q6.RunConfig(tasks=m, optimizer="adam(lr = 1e-2)", align="gua", epochs=4, **TINY)
    result = _q6.train_run(config)
    assert result["status"] == "completed" and result["diagnosed"] == result["steps"] == 16
    assert result["conflicting_steps"]["R_p"] == 0 and result["rates"]["R_p"] == 0.0  # on every diagnosed step
    assert result["conflicting_steps"]["R_a"] == 0  # ConFIG's direction is conflict-free
    assert result["conflicting_steps"]["R_u"] > 0 and result["projected"] > 0  # GUA had something to do
    assert result["solver"] == ("enumerate" if m <= 8 else "nnls")
    assert 0.0 <= result["f1"] <= 1.0 and len(result["f1_by_epoch"]) == 4
    base = _q6.train_run(_q6.RunConfig(tasks=m, optimizer="adam(lr = 1e-2)", align="none", epochs=4, **TINY))
    assert base["rates"]["R_p"] is None and base["projected"] is None
    assert base["conflicting_steps"]["R_u"] > 0  # Adam re-creates the conflicts ConFIG removed


def test_runs_repeat_exactly(one_thread):
    config = _q6.RunConfig(tasks=3, align="gua", epochs=2, **TINY)
    first, again = _q6.train_run(config), _q6.train_run(config)
    assert first["f1_by_epoch"] == again["f1_by_epoch"] and first["conflicting_steps"] == again["conflicting_steps"]
    other = _q6.train_run(_q6.RunConfig(tasks=3, align="gua", epochs=2, seed=1, **TINY))
    assert other["f1_by_epoch"] != first["f1_by_epoch"]


def test_f1_per_task():
    model, x, _ = _batch(m=2, n=16)
    with torch.no_grad():
        predicted = (model(x) > 0).double()  # [n, 2]
    f1 = _q6.f1_per_task(model, x, predicted)
    assert torch.equal(f1, (predicted.sum(dim=0) > 0).double())  # perfect: 1, or 0 when nothing is positive
    flipped = _q6.f1_per_task(model, x, 1 - predicted)
    assert float(flipped.max()) == 0.0  # every prediction wrong: no true positives


def test_q6_end_to_end(tmp_path, capsys):
    out = tmp_path / "q6"
    argv = ["--tasks", "2,10", "--epochs", "2", "--samples", "256", "--test-samples", "256", "--features", "8",
            "--width", "16", "--batch-size", "64", "--warmup-steps", "2", "--seeds", "0", "--jobs", "2",
            "--threads", "1", "--out", str(out)]
    assert bench.main("q6", argv) == 0
    for name in ("q6.md", "q6.csv", "q6.png"):
        assert (out / name).stat().st_size > 0
    with open(out / "q6.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["m"]) for r in rows] == [2, 10]
    for r in rows:
        assert r["completed"] == "1+1/2" and r["optimizer"] == _q6.CPU_OPTIMIZER
        assert 0.0 <= float(r["base_f1_mean"]) <= 1.0 and 0.0 <= float(r["gua_f1_mean"]) <= 1.0
        assert float(r["base_step_ms"]) > 0 and float(r["gua_step_ms"]) > 0
        assert float(r["base_peak_mib"]) > 0 and float(r["gua_peak_mib"]) > 0
        assert float(r["time_ratio"]) == pytest.approx(float(r["gua_step_ms"]) / float(r["base_step_ms"]))
        assert float(r["cpu_time_ratio"]) == pytest.approx(float(r["gua_step_cpu_ms"]) / float(r["base_step_cpu_ms"]))
        assert float(r["gua_R_p"]) == 0.0 and float(r["base_R_a"]) == 0.0
        assert r["paper_f1"] == "improved"  # the paper: F1 improved at m = 2 and m = 10
    assert rows[0]["solver"] == "enumerate" and rows[1]["solver"] == "nnls"
    text = (out / "q6.md").read_text(encoding="utf-8")
    assert "| 2 |" in text and "| 10 |" in text and "4.2 %" in text
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == 4
    result = json.loads(runs[0].read_text(encoding="utf-8"))
    assert result["status"] == "completed" and result["memory"]["peak"] >= result["memory"]["setup"] > 0
    assert result["steps"] == 8 and result["steps_timed"] == 6


def test_paper_numbers_and_defaults():
    for entry in _q6.PAPER_Q6.values():
        assert entry["source"].startswith("paper line")
    assert _q6.paper_cells(20)[:2] == ("comparable", None)
    assert _q6.paper_cells(40)[:2] == ("improved", 4.2)
    assert _q6.paper_cells(4) == ("-", None, "")
    args = _q6.build_parser().parse_args([])
    assert _q6.task_counts(args.tasks) == [2, 3, 5, 10, 20, 30, 40]
    assert args.epochs == 15 and args.batch_size == 256 and args.optimizers == "adam(lr = 1e-3)"
    assert _q6.paper_optimizer("adam") == "adam(lr = 0.0003)" and _q6.paper_optimizer("sgd(lr = 1)") == "sgd(lr = 1)"


def test_paper_source_lines_say_what_the_dict_says():
    """The paper's lines the Q6 settings cite (tests/data/paper_q6_lines.txt: verbatim, with their numbers)."""
    line = {int(n): text for n, _, text in (row.partition("| ") for row in PAPER_LINES.read_text(
        encoding="utf-8").splitlines() if not row.startswith("%"))}
    assert r"\{2,3,5,10,20,30,40\}" in line[2677]
    assert "Epochs" in line[2680] and "15" in line[2680]
    assert "256" in line[2681] and "Adam" in line[2682] and r"3\times10^{-4}" in line[2683]
    assert "six of" in line[723] and "20 tasks" in line[724]
    assert "4.2" in line[725] and "40 tasks" in line[726]
    assert "\\{0,1,2\\}" in line[2664]


def test_parse_call():
    assert _q6.parse_call("adam") == ("adam", {})
    assert _q6.parse_call("gua(metric = euclidean, rho_m = 0.2)") == ("gua", {"metric": "euclidean", "rho_m": 0.2})
    with pytest.raises(_q6.BenchError):
        _q6.parse_call("adam(lr = ")


@pytest.mark.parametrize("argv, message", [
    (["--tasks", "0"], "not a task count"),
    (["--tasks", "2,41"], "not a task count"),
    (["--tasks", "2,2"], "listed twice"),
    (["--problems", "burgers"], "'synthetic' only"),
    (["--groupings", "two"], "first m attributes"),
    (["--spec", "burgers=specs/burgers.pinn"], "no spec files"),
    (["--methods", "nosuch"], "unknown surgery"),
    (["--optimizers", "sophiag"], "first-order"),
    (["--optimizers", "adam(lr = "], "expected NAME"),
    (["--optimizers", "adam(nosuch = 1)"], "nosuch"),
    (["--gua", "none"], "other than none"),
    (["--epochs", "0"], "expected a whole number"),
    (["--samples", "x"], "invalid"),
    pytest.param(["--device", "cuda"], "no CUDA device",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")),
])
def test_q6_user_errors(tmp_path, capsys, argv, message):
    assert bench.main("q6", [*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "q6.md").exists()
