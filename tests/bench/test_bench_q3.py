"""bench q3: the same-state, norm-matched probe on the tiny spec standing in for Burgers (seconds)."""

import copy
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pinnspec import bench
from pinnspec.bench import _paper, _q3
from pinnspec.engine import Trainer
from pinnspec.lang import load
from pinnspec.lang._overrides import apply_overrides

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")


def _trainer(align="gua", surgery="config", grouping="three", epochs=40):
    spec = apply_overrides(load(TINY), {"align": align, "surgery": surgery, "grouping": grouping,
                                        "epochs": str(epochs)})
    return Trainer(spec)


def _advance(trainer, epochs):
    for epoch in range(trainer.run_state.epoch, epochs):
        trainer.step(epoch)
        trainer.run_state.epoch = epoch + 1


def _step_capturing_update(trainer, epoch):
    """trainer.step(epoch), returning the (lr, update) it applied."""
    captured = []
    apply = trainer._apply
    trainer._apply = lambda lr, update: (captured.append((lr, update.detach().clone())), apply(lr, update))[1]
    try:
        trainer.step(epoch)
    finally:
        del trainer._apply
    trainer.run_state.epoch = epoch + 1
    (applied,) = captured
    return applied


def _losses(trainer, epoch):
    """The m task losses [m] at the trainer's parameters on the points of ``epoch`` (float64)."""
    losses = trainer.problem.losses(trainer.model, trainer.points.at(epoch), trainer.params, trainer.grouping.name)
    return torch.stack([loss.detach() for loss in losses.task_list]).double()


def _projected_probe(trainer, start):
    """Advance to the first epoch >= start at which GUA projects; returns (epoch, sample)."""
    for epoch in range(start, trainer.epochs):
        _advance(trainer, epoch)
        sample = _q3.probe_step(trainer, epoch)
        if sample is not None and sample.projected:
            return epoch, sample
    pytest.fail("GUA never projected on the tiny problem")


def test_probe_equals_a_direct_recomputation_through_the_engine(one_thread):
    """W_rel(u), W_rel(p), W_rel(q) of the probe equal the losses after the engine's own steps: p applied by a
    GUA trainer, u by a twin without alignment loaded with the same state, q applied to a third twin."""
    trainer = _trainer()
    epoch, sample = _projected_probe(trainer, start=6)
    state = copy.deepcopy(trainer.state_dict())
    before = _losses(trainer, epoch)  # [m]  L_i(theta_t)

    lr, p = _step_capturing_update(trainer, epoch)  # the GUA step itself
    assert lr == sample.lr > 0
    assert _q3.worst_relative_change(_losses(trainer, epoch), before) == pytest.approx(sample.w_p, rel=1e-12)

    twin = _trainer(align="none")  # the same state, no alignment: the step applies the proposal u
    twin.load_state_dict(state)
    lr_u, u = _step_capturing_update(twin, epoch)
    assert lr_u == lr
    assert _q3.worst_relative_change(_losses(twin, epoch), before) == pytest.approx(sample.w_u, rel=1e-12)

    assert not torch.equal(u, p)  # GUA projected this step
    assert sample.norm_u == pytest.approx(float(u.double().norm()), rel=1e-12)
    assert sample.norm_p == pytest.approx(float(p.double().norm()), rel=1e-12)
    third = _trainer()
    third.load_state_dict(state)
    third._apply(lr, _q3.norm_matched(u, p))
    assert _q3.worst_relative_change(_losses(third, epoch), before) == pytest.approx(sample.w_q, rel=1e-12)
    assert sample.w_p < sample.w_u  # the direction the paper's Q3 is about (true at this step of the tiny run)


@pytest.mark.parametrize("surgery", ["config", "pcgrad"])  # PCGrad draws from the trainer's random stream
def test_probing_leaves_the_training_bit_identical(one_thread, surgery):
    epochs = 16
    probed, plain = _trainer(surgery=surgery, epochs=epochs), _trainer(surgery=surgery, epochs=epochs)
    run = _q3.train_with_probes(probed, every=1)
    _advance(plain, epochs)
    assert run.status == "completed" and run.epochs_done == epochs
    assert len(run.samples) == epochs - 1  # every epoch but the warmup's eta = 0 one
    assert any(s.projected for s in run.samples)
    for a, b in zip(probed.theta, plain.theta):
        assert torch.equal(a, b)
    for a, b in zip(probed.chain.optimizer.state_dict(probed.chain_state.optimizer).values(),
                    plain.chain.optimizer.state_dict(plain.chain_state.optimizer).values()):
        assert all(torch.equal(x, y) for x, y in zip(a, b)) if isinstance(a, list) else \
            (torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b)
    assert torch.equal(probed.chain_generator.get_state(), plain.chain_generator.get_state())
    assert probed.run_state.counters == plain.run_state.counters
    assert run.rel_l2_final == plain.evaluation.test_error()


def test_norm_matched_has_the_norm_of_p_and_the_direction_of_u():
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(300, generator=generator)  # [p]
    p = 0.3 * torch.randn(300, generator=generator)  # [p]
    q = _q3.norm_matched(u, p)
    assert float(q.norm()) == pytest.approx(float(p.norm()), rel=1e-6)
    assert float(q @ u / (q.norm() * u.norm())) == pytest.approx(1.0, abs=1e-6)
    assert torch.equal(_q3.norm_matched(u, u), u)  # an unprojected step: q = p = u


def test_worst_relative_change():
    base = torch.tensor([1.0, 2.0, 4.0])
    assert _q3.worst_relative_change(torch.tensor([1.5, 1.0, 4.0]), base) == pytest.approx(0.5)
    assert _q3.worst_relative_change(torch.tensor([0.5, 1.0, 3.0]), base) == pytest.approx(-0.25)
    assert _q3.worst_relative_change(torch.tensor([1e-12]), torch.tensor([0.0]), eps=1e-12) == pytest.approx(1.0)


def test_win_rates_count_a_tie_as_no_win():
    def sample(projected, w_u, w_p, w_q):
        return _q3.ProbeSample(0, 1e-3, projected, w_u, w_p, w_q, 1.0, 1.0, 1.0)

    samples = [sample(True, 0.1, 0.01, 0.05), sample(True, 0.1, 0.2, 0.3), sample(False, 0.1, 0.1, 0.1),
               sample(False, 0.2, 0.2, 0.2)]
    assert _q3.win_rates(samples, projected_only=True) == {"n": 2, "p_lt_u": 0.5, "p_lt_q": 1.0}
    assert _q3.win_rates(samples, projected_only=False) == {"n": 4, "p_lt_u": 0.25, "p_lt_q": 0.5}
    assert _q3.win_rates(samples[2:], projected_only=True) == {"n": 0, "p_lt_u": None, "p_lt_q": None}


def _argv(out, *more):
    return ["--problems", "burgers", "--spec", f"burgers={TINY}", "--groupings", "two,three", "--epochs", "12",
            "--every", "2", "--seeds", "0", "--jobs", "1", "--threads", "1", "--out", str(out), *more]


def test_q3_end_to_end_and_restart(tmp_path, capsys, one_thread):
    out = tmp_path / "q3"
    assert bench.main("q3", _argv(out)) == 0
    for name in ("q3.md", "q3.csv", "q3.png", "q3_steps.csv"):
        assert (out / name).stat().st_size > 0
    with open(out / "q3.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["problem"], r["grouping"]) for r in rows] == [("burgers", "two"), ("burgers", "three"),
                                                             ("overall", "all")]
    with open(out / "q3_steps.csv", encoding="utf-8") as fh:
        steps = list(csv.DictReader(fh))
    for r in rows[:2]:
        assert r["completed"] == "1" and int(r["steps"]) == 5  # epochs 2, 4, ..., 10 (epoch 0 has eta = 0)
        mine = [s for s in steps if s["grouping"] == r["grouping"]]
        assert len(mine) == 5 and int(r["projected_steps"]) == sum(s["projected"] == "1" for s in mine)
        assert (float(r["paper_win_pu"]), float(r["paper_win_pq"])) == _paper.Q3_WIN_RATES[("burgers", r["grouping"])]
        wins_all = sum(float(s["w_p"]) < float(s["w_u"]) for s in mine)
        assert float(r["win_pu_all_mean"]) == pytest.approx(100 * wins_all / len(mine))
    assert (float(rows[2]["paper_win_pu"]), float(rows[2]["paper_win_pq"])) == _paper.Q3_ALL_SETTINGS
    config = (out / "runs" / "burgers-three" / "seed=0" / "config.pinn").read_text(encoding="utf-8")
    assert "surgery config" in config and "align gua" in config and "epochs = 12" in config
    assert "| burgers | two | 1/1 |" in (out / "q3.md").read_text(encoding="utf-8")
    capsys.readouterr()
    assert bench.main("q3", _argv(out)) == 0  # again: both runs are finished
    assert "2 runs: 2 finished (skipped), 0 to run" in capsys.readouterr().err
    assert bench.main("q3", _argv(out, "--every", "3")) == 1  # the same folder with other settings
    assert "made with other settings" in capsys.readouterr().err


def test_q3_user_errors(tmp_path, capsys):
    assert bench.main("q3", ["--problems", "no_such_problem", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cannot find specs/no_such_problem.pinn" in err and "Traceback" not in err
    assert bench.main("q3", _argv(tmp_path, "--methods", "no_such_method")) == 1
    assert "no_such_method" in capsys.readouterr().err
    assert bench.main("q3", ["--every", "0"]) == 1


def test_paper_q3_table():
    for grouping, overall in _paper.Q3_OVERALL.items():
        members = [v for (_, g), v in _paper.Q3_WIN_RATES.items() if g == grouping]
        for k in range(2):
            assert sum(v[k] for v in members) / len(members) == pytest.approx(overall[k], abs=0.01)
    for k in range(2):  # the text's "across all 10 PINN settings"
        mean = sum(v[k] for v in _paper.Q3_WIN_RATES.values()) / len(_paper.Q3_WIN_RATES)
        assert mean == pytest.approx(_paper.Q3_ALL_SETTINGS[k], abs=0.05)
    # the table itself: tests/bench/test_bench_paper.py::test_q3_and_rho_equal_their_tables (shipped excerpt)


_DRIVER = """
import sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from pinnspec.bench._q3 import _pool_init

if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_pool_init,
                               initargs=(1,))
    pid = pool.submit(__import__("os").getpid).result()
    pool.submit(time.sleep, 600)
    print(pid, flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="Linux only: the test reads the worker's state in /proc")
def test_a_probe_worker_whose_driver_was_killed_exits(tmp_path):
    """`kill -9` to the driver of a q3 pool: its worker, busy with a task, sees it re-parented and exits
    rather than run on unseen."""
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    worker = None
    try:
        worker = int(proc.stdout.readline())
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                state = Path("/proc", str(worker), "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                break
            if state == "Z":
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the orphaned probe worker still runs")
    finally:
        for pid in filter(None, [proc.pid, worker]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
