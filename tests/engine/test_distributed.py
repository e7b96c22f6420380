"""Data-parallel training: 2 gloo processes equal the single-process run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

TINY = Path(__file__).parent / "data" / "tiny.pinn"
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
ARGS = ["--epochs", "20", "--dtype", "float64", "--surgery", "config", "--align", "gua", "--quiet",
        "--set", "grouping=three"]


def _torchrun(*args, port: int):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
            "-m", "pinnspec", "train", *args, "--distributed"]


def test_a_killed_data_parallel_run_resumes_bit_for_bit(tmp_path):
    """SIGKILL the whole torchrun group after its first checkpoint, then `train --resume --distributed`:
    the same weights, history and result as the uninterrupted data-parallel run."""
    import signal
    import time

    long = ["--epochs", "80", "--dtype", "float64", "--surgery", "config", "--align", "gua", "--quiet",
            "--set", "grouping=three", "--set", "checkpoint_every=20"]
    whole, split = tmp_path / "whole", tmp_path / "split"
    done = subprocess.run(_torchrun(str(TINY), *long, "--out", str(whole), port=29518), env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    run = subprocess.Popen(_torchrun(str(TINY), *long, "--out", str(split), port=29519), env=ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (split / "checkpoint.pt").exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.killpg(run.pid, signal.SIGKILL)
    finally:
        run.wait()
    killed_at = torch.load(split / "checkpoint.pt", weights_only=False)["epoch"]
    assert 0 < killed_at < 80  # killed mid-run, after a checkpoint
    again = subprocess.run(_torchrun("--resume", str(split), "--quiet", port=29520), env=ENV,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    a = torch.load(whole / "checkpoint.pt", weights_only=False)
    b = torch.load(split / "checkpoint.pt", weights_only=False)
    assert b["epoch"] == 80
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (whole, split))
    assert (ra["rel_l2"], ra["rates"], ra["best_epoch"]) == (rb["rel_l2"], rb["rates"], rb["best_epoch"])
    assert (whole / "history.csv").read_text() == (split / "history.csv").read_text()


def test_distributed_resume_refuses_overrides(tmp_path):
    env = {**ENV, "RANK": "0", "WORLD_SIZE": "1"}
    bad = subprocess.run([sys.executable, "-m", "pinnspec", "train", "--resume", str(tmp_path), "--epochs", "5",
                          "--distributed"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "give no FILE, overrides" in bad.stderr


def test_two_gloo_ranks_equal_one_process(tmp_path):
    """The weights stage (gradnorm) on the all-reduced G: the same weights, model, history and rates as one process;
    `ntk` (each rank measures its shard, the ranks average) runs to the end with finite weights."""
    args = [*ARGS, "--set", "weights=gradnorm(every = 3, alpha = 0.5)"]
    single, multi, ntk = tmp_path / "single", tmp_path / "multi", tmp_path / "ntk"
    one = subprocess.run([sys.executable, "-m", "pinnspec", "train", str(TINY), *args, "--out", str(single)],
                         env=ENV, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run(_torchrun(str(TINY), *args, "--out", str(multi), port=29521), env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr
    a = torch.load(single / "checkpoint.pt", weights_only=False)
    b = torch.load(multi / "checkpoint.pt", weights_only=False)
    assert torch.allclose(a["weights"], b["weights"], rtol=1e-9, atol=0)
    for key in a["model"]:
        assert torch.allclose(a["model"][key], b["model"][key], rtol=1e-9, atol=1e-12), key
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (single, multi))
    assert ra["rates"] == rb["rates"]
    assert abs(ra["rel_l2"] - rb["rel_l2"]) <= 1e-9 * ra["rel_l2"]
    ha = (single / "history.csv").read_text().splitlines()
    hb = (multi / "history.csv").read_text().splitlines()
    assert len(ha) == len(hb) == 21
    three = subprocess.run(_torchrun(str(TINY), *ARGS, "--set", "weights=ntk(every = 5, points = 16)", "--out",
                                     str(ntk), port=29522), env=ENV, capture_output=True, text=True, timeout=300)
    assert three.returncode == 0, three.stderr
    weights = torch.load(ntk / "checkpoint.pt", weights_only=False)["weights"]
    assert torch.isfinite(weights).all() and not torch.equal(weights, torch.ones(3, dtype=weights.dtype))
