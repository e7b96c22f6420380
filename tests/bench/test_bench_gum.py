"""bench gum: ConFIG x optimizers on the tiny spec standing in for Burgers (seconds)."""

import csv
from pathlib import Path

from pinnspec import bench
from pinnspec.bench import _paper, _paper_runs

TINY = str(Path(__file__).resolve().parents[1] / "engine" / "data" / "tiny.pinn")


def _argv(out, *more):
    return ["--problems", "burgers", "--spec", f"burgers={TINY}", "--groupings", "three", "--optimizers", "adam,sgd",
            "--epochs", "3", "--seeds", "0", "--jobs", "1", "--threads", "1", "--out", str(out), *more]


def test_gum_end_to_end_and_restart(tmp_path, capsys):
    out = tmp_path / "gum"
    assert bench.main("gum", _argv(out, "--validate", "test")) == 0
    for name in ("gum.md", "gum.csv", "gum.png"):
        assert (out / name).stat().st_size > 0
    with open(out / "gum.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["grouping"], r["optimizer"]) for r in rows] == [("three", "adam"), ("three", "sgd")]
    for r in rows:
        assert r["completed"] == "1"
        assert 0.0 <= float(r["R_g"]) <= 100.0
        assert float(r["R_a"]) == 0.0  # ConFIG: no conflict before the optimizer
        assert (float(r["paper_R_g"]), float(r["paper_R_a"]), float(r["paper_R_u"])) == \
            _paper.GUM[("burgers", "three", r["optimizer"])]
    (run_dir,) = (out / "runs" / "burgers-three").glob("optimizer=sgd*__seed=0")
    config = (run_dir / "config.pinn").read_text(encoding="utf-8")
    assert "optimizer sgd(lr = 0.001)" in config  # the paper's learning rate
    assert "surgery config" in config and "align none" in config and "validate test every 100" in config
    assert "73.7→0.0→57.4" in (out / "gum.md").read_text(encoding="utf-8")  # the paper's Burgers 3-loss Adam row
    capsys.readouterr()
    assert bench.main("gum", _argv(out, "--validate", "test")) == 0  # again: every run is finished
    assert "2 finished (skipped), 0 to resume, 0 to start" in capsys.readouterr().err


def test_gum_user_errors(tmp_path, capsys):
    assert bench.main("gum", ["--problems", "no_such_problem", "--out", str(tmp_path)]) == 1
    assert "cannot find specs/no_such_problem.pinn" in capsys.readouterr().err
    assert bench.main("gum", ["--problems", "burgers", "--spec", "burgers", "--out", str(tmp_path)]) == 1
    assert bench.main("gum", _argv(tmp_path, "--optimizers", "adam,no_such_optimizer")) == 1
    assert "no_such_optimizer" in capsys.readouterr().err
    assert bench.main("gum", ["--epochs", "0"]) == 1


def test_base_name():
    assert _paper_runs.base_name("sgd(lr = 1e-2)") == "sgd"
    assert _paper_runs.base_name("adam") == "adam"
    assert "gum" in bench.BENCHMARKS and "q2" in bench.BENCHMARKS


def test_gum_runs_each_optimizer_at_the_papers_learning_rate():
    assert _paper.paper_optimizer("sophiag") == "sophiag(lr = 0.001)"  # not SophiaG's own 1e-4
    assert _paper.paper_optimizer("soap(lr = 3e-3)") == "soap(lr = 3e-3)"  # explicit arguments are kept
