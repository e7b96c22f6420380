"""A broken run directory is one line naming the file and what is wrong with it, for `eval`, `plot` and
`train --resume` alike: exit 1, no traceback, no file changed.  A leftover temporary file is removed on resume."""

import json
import shutil

import pytest

from cli_process import TINY, cli, user_error
from pinnspec.cli import main

TINY_TEXT = open(TINY, encoding="utf-8").read()


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished run of tiny (width 16), and one of the same problem with width 32 (another spec)."""
    base = tmp_path_factory.mktemp("runs")
    wide = base / "wide.pinn"
    wide.write_text(TINY_TEXT.replace("width = 16", "width = 32"))
    other = base / "other.pinn"
    other.write_text(TINY_TEXT.replace("problem tiny", "problem other"))
    for name, spec in (("tiny", TINY), ("wide", wide), ("other", other)):
        assert main(["train", str(spec), "--epochs", "2", "--out", str(base / name), "--quiet"]) == 0
    return base


def _garbage_result(run, runs):
    (run / "result.json").write_text("{ this is not json")
    return "result.json", "not a result pinnspec wrote: not JSON (line 1 column 3"


def _no_config(run, runs):
    (run / "config.pinn").unlink()
    return "config.pinn", "missing"


def _random_checkpoint(run, runs):
    (run / "checkpoint.pt").write_bytes(bytes(range(256)) * 8)
    return "checkpoint.pt", "refused: not a checkpoint pinnspec wrote"


def _checkpoint_of_another_spec(run, runs):
    shutil.copy(runs / "wide" / "checkpoint.pt", run / "checkpoint.pt")
    return "checkpoint.pt", ("not a checkpoint of the spec in config.pinn: its weight "
                             "'layers.0.weight' is [32, 2], config.pinn's network has [16, 2]")


def _config_of_another_spec(run, runs):
    shutil.copy(runs / "other" / "config.pinn", run / "config.pinn")
    return "result.json", "the result of problem 'tiny', but config.pinn trains problem 'other'"


def _garbage_predictions(run, runs):
    (run / "predictions.npz").write_bytes(b"PK\x03\x04" + bytes(100))
    return "predictions.npz", "error: cannot read it"


def _text_in_history(run, runs):
    lines = (run / "history.csv").read_text().splitlines()
    (run / "history.csv").write_text("\n".join([lines[0], "1,abc" + lines[1][lines[1].index(",", 2):]]) + "\n")
    return "history.csv", "line 2: column 'lr' holds 'abc', not a number"


BROKEN = {"garbage result.json": _garbage_result, "deleted config.pinn": _no_config,
          "random bytes in checkpoint.pt": _random_checkpoint,
          "a checkpoint of another spec": _checkpoint_of_another_spec,
          "a config.pinn of another spec": _config_of_another_spec,
          "random bytes in predictions.npz": _garbage_predictions, "text in history.csv": _text_in_history}
COMMANDS = {"eval": ("eval",), "resume": ("train", "--resume"), "plot": ("plot",)}
#: plot reads result.json, history.csv and predictions.npz (config.pinn only to mask the domain, if it is there);
#: eval and resume read config.pinn, checkpoint.pt and result.json
PLOT_READS = ("garbage result.json", "random bytes in predictions.npz", "text in history.csv")
CASES = [(broken, command) for broken in BROKEN for command in COMMANDS
         if (command == "plot") == (broken in PLOT_READS) or broken == "garbage result.json"]


@pytest.mark.parametrize("broken, command", CASES)
def test_a_broken_run_directory_is_one_line_naming_the_file(runs, tmp_path, capsys, broken, command):
    run = tmp_path / "run"
    shutil.copytree(runs / "tiny", run)
    name, what = BROKEN[broken](run, runs)
    before = snapshot(run)
    capsys.readouterr()
    assert main([*COMMANDS[command], str(run)]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(run / name) in lines[0] and what in lines[0], lines[0]
    assert snapshot(run) == before
    assert not (run / ".pinnspec.lock").exists()


def test_the_checkpoint_mismatch_through_the_process(runs, tmp_path):
    """The same table row as a user meets it: `python -m pinnspec eval`, exit 1, no traceback."""
    run = tmp_path / "run"
    shutil.copytree(runs / "tiny", run)
    _checkpoint_of_another_spec(run, runs)
    lines = user_error(cli("eval", run))
    assert len(lines) == 1 and str(run / "checkpoint.pt") in lines[0] and "[32, 2]" in lines[0]


def test_resume_removes_the_temporary_files_a_killed_run_left(runs, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(runs / "tiny", run)
    (run / ".tmp-abc123predictions.npz").write_bytes(b"half written")
    (run / "plots").mkdir()
    (run / "plots" / ".tmp-xyzlosses.png").write_bytes(b"half")
    (run / "notes.tmp").write_text("mine")
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "completed"
    assert main(["train", "--resume", str(run), "--quiet"]) == 0
    assert sorted(p.name for p in run.rglob("*") if p.is_file()) == sorted(
        ["checkpoint.pt", "config.pinn", "history.csv", "manifest.json", "notes.tmp", "predictions.npz",
         "result.json"])


def test_eval_ignores_a_temporary_file(runs, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(runs / "tiny", run)
    (run / ".tmp-abc123predictions.npz").write_bytes(b"half written")
    assert main(["eval", str(run)]) == 0
    assert (run / ".tmp-abc123predictions.npz").exists()  # eval writes nothing, not even a removal
