"""A blow-up is a divergence, not a success: exit 1, the message names the epoch and the task, the
checkpoint written before it stays (with the best-validation model that result.json reports)."""

import json

import torch

from cli_process import TINY, cli, user_error


def test_a_learning_rate_of_1e6_exits_1_as_diverged_and_keeps_its_checkpoint(tmp_path):
    out = tmp_path / "run"
    lines = user_error(cli("train", TINY, "--optimizer", "adam(lr = 1e6)", "--out", out, "--quiet",
                           "--set", "checkpoint_every=1"))
    error = next(line for line in lines if line.startswith("error: training diverged at epoch "))
    assert "exceeds diverge_factor = 1e+06 times its lowest value" in error and "task " in error
    assert f"the last checkpoint written before the divergence is kept in {out}" in error
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "diverged" and result["message"] in error
    diverged_at = int(error.split("epoch ")[1].split(":")[0])
    checkpoint = torch.load(out / "checkpoint.pt", weights_only=True)
    assert checkpoint["epoch"] == diverged_at - 1  # the state before the step that found the blow-up
    assert all(torch.isfinite(v).all() for v in checkpoint["model"].values())
