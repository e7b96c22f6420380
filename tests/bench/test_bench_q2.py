"""bench q2: surgery methods x {base, +GUA} on the tiny spec standing in for Burgers (seconds)."""

import csv
from pathlib import Path

import pytest

from pinnspec import bench
from pinnspec.bench import _paper, _paper_runs

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")


def test_q2_end_to_end(tmp_path, capsys):
    out = tmp_path / "q2"
    argv = ["--problems", "burgers", "--spec", f"burgers={TINY}", "--groupings", "two", "--methods", "none,config",
            "--epochs", "3", "--seeds", "0", "--jobs", "1", "--threads", "1", "--out", str(out)]
    assert bench.main("q2", argv) == 0
    for name in ("q2.md", "q2.csv", "q2.png"):
        assert (out / name).stat().st_size > 0
    with open(out / "q2.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["method"], r["align"]) for r in rows] == [("none", "none"), ("none", "gua"), ("config", "none"),
                                                         ("config", "gua")]
    for r in rows:
        assert r["completed"] == "1" and float(r["rel_l2_mean"]) > 0
        paper = _paper.Q2_L2[("burgers", "two", r["method"], r["align"])]
        assert float(r["paper_rel_l2_mean"]) == paper[0]
        if r["align"] == "gua":
            base = next(b for b in rows if b["method"] == r["method"] and b["align"] == "none")
            assert float(r["imp"]) == pytest.approx(100 * (1 - float(r["rel_l2_mean"]) / float(base["rel_l2_mean"])),
                                                    abs=1e-6)
            assert float(r["R_p"]) == 0.0  # GUA leaves no conflicting update
            assert float(r["paper_imp"]) == paper[2]
        else:
            assert r["imp"] == "" and r["R_p"] == ""
    text = (out / "q2.md").read_text(encoding="utf-8")
    assert "ConFIG" in text and "+GUA" in text
    assert "4.55e-03 ± 1.0e-03" in text and "62.6" in text  # the paper's Burgers 2-loss rows
    assert (out / "runs" / "burgers-two" / "surgery=config__align=gua__seed=0" / "result.json").is_file()


def test_gua_keeps_the_specs_own_alignment(tmp_path):
    assert _paper_runs.gua_statement(str(ROOT / "specs" / "burgers.pinn")) == "gua(metric = adam, rho_m = 0.10, rho_v = 0.03)"
    assert _paper_runs.gua_statement(TINY) == "gua"


def test_improvement():
    assert _paper_runs.improvement(2.0, 1.0) == 50.0
    assert _paper_runs.improvement(None, 1.0) is None and _paper_runs.improvement(0.0, 1.0) is None


def test_q2_user_errors(tmp_path, capsys):
    assert bench.main("q2", ["--methods", "none,none", "--out", str(tmp_path)]) == 1
    assert "listed twice" in capsys.readouterr().err
    assert bench.main("q2", ["--problems", "burgers", "--spec", f"burgers={TINY}", "--methods", "nosuch",
                             "--out", str(tmp_path)]) == 1
    assert bench.main("q2", ["--seeds", "x"]) == 1
