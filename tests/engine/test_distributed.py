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


def test_two_gloo_ranks_equal_one_process(tmp_path):
    single, multi = tmp_path / "single", tmp_path / "multi"
    one = subprocess.run([sys.executable, "-m", "pinnspec", "train", str(TINY), *ARGS, "--out", str(single)],
                         env=ENV, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--master_port", "29517", "-m", "pinnspec", "train", str(TINY), *ARGS, "--distributed",
                          "--out", str(multi)], env=ENV, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr
    a = torch.load(single / "checkpoint.pt", weights_only=False)
    b = torch.load(multi / "checkpoint.pt", weights_only=False)
    for key in a["model"]:
        assert torch.allclose(a["model"][key], b["model"][key], rtol=1e-9, atol=1e-12), key
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (single, multi))
    assert ra["rates"] == rb["rates"]
    assert abs(ra["rel_l2"] - rb["rel_l2"]) <= 1e-9 * ra["rel_l2"]
    ha = (single / "history.csv").read_text().splitlines()
    hb = (multi / "history.csv").read_text().splitlines()
    assert len(ha) == len(hb) == 21
