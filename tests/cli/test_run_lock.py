"""One run writes a run directory: a second writer is refused, naming the process that holds it; the lock goes
when its run ends (also by SIGTERM), and a lock whose process is gone is taken over."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from cli_process import ENV, TINY, cli, user_error
from pinnspec._rundir import LOCK, RunDirLocked, RunLock
from pinnspec.cli import main
from pinnspec.engine import load_run


def test_a_second_writer_is_refused_and_the_first_run_is_intact(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "pinnspec", "train", TINY, "--epochs", "1000000", "--quiet",
                              "--set", "checkpoint_every=5", "--out", str(out)],
                             env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "checkpoint.pt").exists() and first.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert (out / LOCK).read_text().split() == [str(first.pid), socket.gethostname()]
    config = (out / "config.pinn").read_bytes()
    second = cli("train", TINY, "--epochs", "2", "--out", out, "--overwrite", "--quiet")
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=60)
    lines = user_error(second)
    assert lines == [f"{out / LOCK}: error: {out} is in use by a run of process {first.pid}; wait for it to end, "
                     f"choose another --out DIR, or, if process {first.pid} is not a run, delete {out / LOCK}"]
    assert first.returncode == 128 + signal.SIGTERM
    assert not (out / LOCK).exists()  # released on SIGTERM
    assert (out / "config.pinn").read_bytes() == config
    assert load_run(str(out)).run_state.epoch >= 5  # its last checkpoint is whole


def test_resume_and_overwrite_wait_for_the_holder(tmp_path, capsys):
    assert main(["train", TINY, "--epochs", "2", "--out", str(tmp_path), "--quiet"]) == 0
    before = sorted(os.listdir(tmp_path))
    with RunLock(str(tmp_path)):  # this process holds it: alive
        for argv in (["train", "--resume", str(tmp_path)], ["train", TINY, "--out", str(tmp_path), "--overwrite"]):
            capsys.readouterr()
            assert main([*argv, "--quiet"]) == 1
            err = capsys.readouterr().err.splitlines()
            assert len(err) == 1 and f"is in use by a run of process {os.getpid()}" in err[0], err
    assert sorted(os.listdir(tmp_path)) == before


def test_a_stale_lock_is_taken_over(tmp_path, capsys):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK).write_text(f"{gone.stdout.strip()} {socket.gethostname()}\n")
    assert main(["train", TINY, "--epochs", "2", "--out", str(tmp_path), "--quiet"]) == 0
    assert not (tmp_path / LOCK).exists()
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "completed"


def test_a_lock_of_another_host_is_left_alone(tmp_path):
    (tmp_path / LOCK).write_text("12345 some-other-host\n")
    with pytest.raises(RunDirLocked, match="in use by a run of process 12345 on host some-other-host"):
        RunLock(str(tmp_path)).acquire()
    assert (tmp_path / LOCK).read_text() == "12345 some-other-host\n"


def test_the_lock_is_released_on_an_exception_and_a_new_folder_left_empty_goes(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(KeyError):
        with RunLock(str(out)):
            assert (out / LOCK).exists()
            raise KeyError("boom")
    assert not out.exists()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_an_empty_lock_is_taken_over_once_it_is_old(tmp_path):
    """A process killed between creating the lock and writing its pid leaves it empty."""
    lock = tmp_path / LOCK
    lock.write_text("")
    with pytest.raises(RunDirLocked, match="did not say which"):
        RunLock(str(tmp_path)).acquire()
    old = time.time() - 60
    os.utime(lock, (old, old))
    with RunLock(str(tmp_path)):
        assert lock.read_text().split() == [str(os.getpid()), socket.gethostname()]
    assert not lock.exists()
