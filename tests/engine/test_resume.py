"""A killed run resumes from its last checkpoint and ends exactly like an
uninterrupted run (same seed, same device); Ctrl-C checkpoints and stops."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

TINY = Path(__file__).parent / "data" / "tiny.pinn"
ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--epochs", "600", "--surgery", "pcgrad", "--set", "checkpoint_every=25", "--quiet"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
VOLATILE = {"train_time_s", "peak_memory_mb", "run_dir", "message"}


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "pinnspec", *args], env=ENV, capture_output=True, text=True, **kwargs)


def start(out):
    return subprocess.Popen([sys.executable, "-m", "pinnspec", "train", str(TINY), *ARGS, "--out", str(out)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_checkpoint(out, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (out / "checkpoint.pt").exists():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before its first checkpoint: {proc.stderr.read()}")
        time.sleep(0.05)
    pytest.fail("no checkpoint appeared")


def same_run(a, b):
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (a, b))
    assert ra["status"] == rb["status"] == "completed"
    assert {k: v for k, v in ra.items() if k not in VOLATILE} == {k: v for k, v in rb.items() if k not in VOLATILE}
    assert (a / "history.csv").read_text() == (b / "history.csv").read_text()
    ma = torch.load(a / "checkpoint.pt", weights_only=False)["model"]
    mb = torch.load(b / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(ma[k], mb[k]) for k in ma)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    proc = cli("train", str(TINY), *ARGS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_sigkill_then_resume_equals_uninterrupted(uninterrupted, tmp_path):
    out = tmp_path / "killed"
    proc = start(out)
    wait_for_checkpoint(out, proc)
    proc.kill()
    proc.wait()
    saved_epoch = torch.load(out / "checkpoint.pt", weights_only=False)["epoch"]
    assert saved_epoch < 600
    resumed = cli("train", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    same_run(uninterrupted, out)


def test_ctrl_c_checkpoints_then_resume_equals_uninterrupted(uninterrupted, tmp_path):
    out = tmp_path / "interrupted"
    proc = start(out)
    wait_for_checkpoint(out, proc)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode == 130
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "interrupted"
    assert torch.load(out / "checkpoint.pt", weights_only=False)["epoch"] == result["epochs_done"]
    resumed = cli("train", "--resume", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    same_run(uninterrupted, out)


def test_one_ctrl_c_delivered_twice_checkpoints_and_stops(tmp_path):
    """`timeout -s INT` signals the command and then its process group: the one interrupt arrives twice, and
    the run still finishes its epoch and checkpoints (only a second Ctrl-C, later, stops at once)."""
    import pinnspec

    def ctrl_c_twice_at_epoch_10(line):
        if line.startswith("epoch 10/"):
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)

    result = pinnspec.train(str(TINY), epochs=60, out=str(tmp_path / "run"), log=ctrl_c_twice_at_epoch_10)
    assert result.status == "interrupted" and result.epochs_done == 10
    assert torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["epoch"] == 10


def _trained_until_a_crash_at_epoch_20(out: Path, epochs: int) -> None:
    """TINY trained into ``out`` with a checkpoint every 10 epochs, stopped by an error its log raises at epoch 20
    (before that epoch's checkpoint): the run directory holds the checkpoint of epoch 10."""
    import pinnspec

    def crash_at_epoch_20(line):
        if line.startswith("epoch 20/"):
            raise RuntimeError("the machine went away")

    with pytest.raises(RuntimeError, match="went away"):
        pinnspec.train(str(TINY), epochs=epochs, out=str(out), overrides={"checkpoint_every": 10}, log=crash_at_epoch_20)


def test_a_killed_run_holds_the_prediction_of_its_last_checkpoint(tmp_path):
    """predictions.npz is written with each checkpoint: a run that dies after its checkpoint at epoch 10 (here an
    error raised from its log at epoch 20, before that epoch's checkpoint) keeps the prediction of the model in
    that checkpoint, next to result.json saying "running" at epoch 10."""
    import numpy as np

    from pinnspec.engine import load_run

    out = tmp_path / "run"
    _trained_until_a_crash_at_epoch_20(out, epochs=60)
    result = json.loads((out / "result.json").read_text())
    assert (result["status"], result["epochs_done"]) == ("running", 10)
    with np.load(out / "predictions.npz") as saved:
        points, prediction = saved["points"], saved["prediction"]
    trainer = load_run(str(out), out=False, device="cpu")  # the checkpoint's model, evaluated again
    assert trainer.run_state.epoch == 10
    again = trainer.evaluation.predict(torch.as_tensor(points, dtype=trainer.dtype)).double().numpy()
    np.testing.assert_allclose(prediction, again, rtol=0, atol=1e-12)


def test_a_resume_keeps_the_loss_columns_its_checkpoint_logged(tmp_path):
    """A checkpoint whose history logged the loss of a condition the resumed run does not evaluate (in no task
    of its grouping; runs before such conditions were left out logged them) keeps that column in history.csv,
    empty from the resume on."""
    import pinnspec
    from pinnspec.engine._artifacts import load_checkpoint, save_torch

    out = tmp_path / "run"
    _trained_until_a_crash_at_epoch_20(out, epochs=30)
    state = load_checkpoint(str(out / "checkpoint.pt"))
    state["history"] = [{**row, "loss:ghost": 0.5, "attention:ghost": 2.0} for row in state["history"]]
    save_torch(str(out / "checkpoint.pt"), state)
    assert pinnspec.engine.resume(str(out)).status == "completed"
    rows = (out / "history.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert [c for c in header if c.startswith("loss:")] == ["loss:pde", "loss:ic", "loss:walls", "loss:ghost"]
    assert [r.split(",")[header.index("loss:ghost")] for r in rows[1:]].count("0.5") == len(state["history"])
    assert header[-1] == "attention:ghost" and [r.split(",")[-1] for r in rows[1:]].count("2") == len(state["history"])
