"""Run directories someone shares cannot run code: checkpoints load with ``weights_only=True``; a planted
pickle is refused, naming the file, and nothing in it runs."""

import os

import pytest
import torch

import pinnspec
from pinnspec.engine import load_run

from cli_process import TINY, cli, user_error


class _Planted:
    """Unpickling this calls ``os.system``: what a malicious checkpoint.pt would hold."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@pytest.mark.parametrize("surgery, optimizer", [("config", "adam"), ("mconfig", "soap"), ("pcgrad", "adahessian"),
                                                ("cagrad", "sophiag")])
def test_the_checkpoints_pinnspec_writes_load_with_weights_only(tmp_path, surgery, optimizer):
    pinnspec.train(TINY, epochs=3, surgery=surgery, optimizer=optimizer, align="gua", out=str(tmp_path))
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["epoch"] == 3
    assert load_run(str(tmp_path)).run_state.epoch == 3


@pytest.mark.parametrize("command", [("eval", "{run}"), ("train", "--resume", "{run}")])
def test_a_planted_pickle_is_refused_and_nothing_in_it_runs(tmp_path, command):
    run = tmp_path / "shared-run"
    pinnspec.train(TINY, epochs=2, out=str(run))
    marker = tmp_path / "it-ran"
    torch.save({"epoch": 2, "model": _Planted(f"touch {marker}")}, run / "checkpoint.pt")
    proc = cli(*(part.format(run=run) for part in command))
    lines = user_error(proc)
    assert not marker.exists()
    assert any(str(run / "checkpoint.pt") in line and "refused" in line and "nothing in it was run" in line
               for line in lines), proc.stderr
