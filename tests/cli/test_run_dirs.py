"""`train --out DIR` never silently overwrites a run: it refuses a directory that holds files,
says what is there and how to go on; `--overwrite` replaces the run's own files only."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import ENV, TINY, cli, user_error

import pinnspec
from pinnspec._rundir import LEGACY_RUN_FILES, MANIFEST
from pinnspec.engine._artifacts import RunDirInUse, claim_run_dir


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    proc = cli("train", TINY, "--epochs", "3", "--out", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out


def test_out_refuses_a_finished_run_and_changes_nothing(finished_run):
    before = snapshot(finished_run)
    lines = user_error(cli("train", TINY, "--epochs", "4", "--out", finished_run, "--quiet"))
    assert lines == [f"error: {finished_run} holds a finished run (result.json: completed, 3/3 epochs): "
                     "choose another --out DIR or add --overwrite to replace it"]
    assert snapshot(finished_run) == before


def test_out_refuses_a_folder_of_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    lines = user_error(cli("train", TINY, "--epochs", "2", "--out", tmp_path, "--quiet"))
    assert lines == [f"error: {tmp_path} is not empty (it holds notes.txt): choose another --out DIR "
                     "or add --overwrite to replace it"]
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_overwrite_replaces_the_run_files_and_keeps_the_others(finished_run, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    for name, data in snapshot(finished_run).items():
        (out / name).write_bytes(data[0])
    (out / "plots" / "thesis").mkdir(parents=True)
    (out / "plots" / "thesis" / "fig2.pdf").write_bytes(b"mine")
    (out / "notes.txt").write_text("mine")
    recorded = json.loads((out / MANIFEST).read_text())["files"]
    proc = cli("train", TINY, "--epochs", "2", "--out", out, "--quiet", "--overwrite")
    assert proc.returncode == 0, proc.stderr
    removed = [name for name in recorded if name != MANIFEST] + [MANIFEST]
    assert f"--overwrite: replacing the run in {out} (removed {', '.join(removed)})" in proc.stderr
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "plots" / "thesis" / "fig2.pdf").read_bytes() == b"mine"
    assert json.loads((out / "result.json").read_text())["epochs_done"] == 2


def test_overwrite_refuses_a_folder_without_a_run_and_removes_nothing(tmp_path):
    """The user's own config.pinn, history.csv and plots/ are no run: nothing recorded them."""
    (tmp_path / "plots" / "thesis").mkdir(parents=True)
    (tmp_path / "plots" / "thesis" / "fig2.pdf").write_bytes(b"mine")
    (tmp_path / "config.pinn").write_text("my notes")
    (tmp_path / "history.csv").write_text("year,event\n")
    before = snapshot(tmp_path)
    lines = user_error(cli("train", TINY, "--epochs", "2", "--out", tmp_path, "--quiet", "--overwrite"))
    assert lines == [f"error: {tmp_path} holds no pinnspec run (no manifest.json, no result.json beside a "
                     "config.pinn): --overwrite replaces a run's own files only, so nothing was removed; choose "
                     "another --out DIR"]
    assert snapshot(tmp_path) == before


def test_an_empty_or_missing_directory_is_fine(tmp_path):
    assert claim_run_dir(str(tmp_path)) == []
    assert claim_run_dir(str(tmp_path / "new")) == []


def test_an_unfinished_run_is_offered_resume(tmp_path):
    (tmp_path / "checkpoint.pt").write_bytes(b"")
    (tmp_path / "result.json").write_text(json.dumps({"status": "interrupted", "epochs_done": 40, "epochs": 600}))
    with pytest.raises(RunDirInUse) as info:
        claim_run_dir(str(tmp_path))
    assert str(info.value) == (f"{tmp_path} holds an interrupted run (result.json: interrupted, 40/600 epochs): "
                               f"continue it with 'pinnspec train --resume {tmp_path}', choose another --out DIR "
                               "or add --overwrite to replace it")


def test_a_file_is_not_a_run_directory(tmp_path):
    path = tmp_path / "f"
    path.write_text("")
    with pytest.raises(RunDirInUse, match="is a file, not a directory"):
        claim_run_dir(str(path), overwrite=True)


def test_overwrite_of_a_run_without_manifest_removes_the_known_run_files(tmp_path):
    """A run written before runs kept a manifest: recognised by its result.json beside a config.pinn."""
    for name in LEGACY_RUN_FILES:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "result.json").write_text(json.dumps({"status": "completed", "epochs_done": 3, "epochs": 3}))
    (tmp_path / "plots" / "thesis").mkdir()
    (tmp_path / "plots" / "thesis" / "fig2.pdf").write_text("keep")
    (tmp_path / "data.csv").write_text("keep")
    (tmp_path / ".tmp-k2j3history.csv").write_text("half")  # left by a run killed while writing
    assert claim_run_dir(str(tmp_path), overwrite=True) == [*LEGACY_RUN_FILES, ".tmp-k2j3history.csv"]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "data.csv", "plots/thesis/fig2.pdf"]


def test_a_manifest_naming_files_outside_the_run_removes_nothing_there(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "precious.txt"
    run.mkdir()
    outside.write_text("keep")
    (run / "result.json").write_text("{}")
    (run / MANIFEST).write_text(json.dumps({"files": ["../precious.txt", str(outside), "result.json"]}))
    assert claim_run_dir(str(run), overwrite=True) == ["result.json", MANIFEST]
    assert outside.read_text() == "keep" and os.listdir(run) == []


def test_python_api_refuses_then_overwrites(tmp_path):
    pinnspec.train(TINY, epochs=2, out=str(tmp_path))
    with pytest.raises(ValueError, match=r"pass overwrite=True to replace it"):
        pinnspec.train(TINY, epochs=3, out=str(tmp_path))
    result = pinnspec.train(TINY, epochs=3, out=str(tmp_path), overwrite=True)
    assert result.epochs_done == 3
    assert json.loads((tmp_path / "result.json").read_text())["epochs_done"] == 3


def test_ctrl_c_says_how_to_resume(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "pinnspec", "train", TINY, "--epochs", "100000", "--quiet",
                             "--set", "checkpoint_every=5", "--out", str(out)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "checkpoint.pt").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"to continue it: pinnspec train --resume {out}" in err
