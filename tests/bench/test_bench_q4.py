"""bench q4: the state-alignment ablation on the tiny spec standing in for Burgers (seconds)."""

import csv
from pathlib import Path

import pytest

from pinnspec import bench
from pinnspec.bench import _paper, _q4
from pinnspec.bench._cli import BenchError
from pinnspec.lang import load
from pinnspec.sweep import run_name

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")
BURGERS = str(ROOT / "specs" / "burgers.pinn")


def test_variants_keep_the_specs_gua_arguments():
    assert _q4.variant_statements(BURGERS) == {
        "none": "none",
        "direction": "gua(metric = adam, rho_m = 0, rho_v = 0)",
        "soft": "gua(metric = adam, rho_m = 0.10, rho_v = 0.03)",  # the spec's own statement, as written
        "exact_m": "gua(metric = adam, rho_m = 1, rho_v = 0)",
        "exact_mv": "gua(metric = adam, rho_m = 1, rho_v = 1)",
    }
    statements = _q4.variant_statements(TINY)  # tiny.pinn has no align statement
    assert statements["soft"] == "gua" and statements["exact_m"] == "gua(rho_m = 1, rho_v = 0)"


def test_coefficients_resolve_the_soft_rho():
    assert _q4.coefficients(BURGERS, "gua(metric = adam, rho_m = 0.10, rho_v = 0.03)") == (0.1, 0.03)
    assert _q4.coefficients(TINY, "gua") == (0.1, 0.03)  # Adam's paper default
    assert _q4.coefficients(TINY, "gua", "rmsprop") == (0.0, 0.5)
    assert _q4.coefficients(TINY, "gua(rho_m = 1, rho_v = 1)") == (1.0, 1.0)
    assert _q4.coefficients(TINY, "none") is None
    with pytest.raises(BenchError, match="no state alignment"):
        _q4.coefficients(TINY, "gua(rho_m = 1, rho_v = 0)", "sgd")


def _argv(out, *more):
    return ["--problems", "burgers", "--spec", f"burgers={TINY}", "--groupings", "three", "--epochs", "4",
            "--seeds", "0", "--jobs", "1", "--threads", "1", "--out", str(out), *more]


def test_q4_end_to_end_and_restart(tmp_path, capsys, one_thread):
    out = tmp_path / "q4"
    assert bench.main("q4", _argv(out)) == 0
    for name in ("q4.md", "q4.csv", "q4.png"):
        assert (out / name).stat().st_size > 0
    with open(out / "q4.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["variant"] for r in rows] == list(_q4.VARIANTS)
    expected_rho = {"none": None, "direction": (0.0, 0.0), "soft": (0.1, 0.03), "exact_m": (1.0, 0.0),
                    "exact_mv": (1.0, 1.0)}
    base = float(rows[0]["rel_l2_mean"])
    for r in rows:
        assert r["completed"] == "1" and float(r["rel_l2_mean"]) > 0
        rho = expected_rho[r["variant"]]
        assert (None if r["rho_m"] == "" else (float(r["rho_m"]), float(r["rho_v"]))) == rho
        # the run's own config.pinn holds the variant's align statement, with those coefficients
        run_dir = out / "runs" / "burgers-three" / run_name([("align", r["align"])], 0)
        align = load(str(run_dir / "config.pinn")).ir.training.align
        assert f"align {r['align']}" in (run_dir / "config.pinn").read_text(encoding="utf-8")
        assert align.name == ("none" if rho is None else "gua")
        if rho is not None and r["variant"] != "soft":
            assert (align.options["rho_m"], align.options["rho_v"]) == rho
        if r["variant"] == "none":
            assert r["imp"] == "" and r["R_p"] == ""
        else:
            assert float(r["imp"]) == pytest.approx(100 * (1 - float(r["rel_l2_mean"]) / base), abs=1e-6)
            assert float(r["R_p"]) == 0.0  # every GUA variant leaves no conflicting update
    paper = {r["variant"]: (r["paper_rel_l2_mean"], r["paper_source"]) for r in rows}
    assert paper["none"] == (f"{_paper.Q2_L2[('burgers', 'three', 'config', 'none')][0]:.9g}", "tab:full_q2_results")
    assert paper["soft"] == (f"{_paper.Q2_L2[('burgers', 'three', 'config', 'gua')][0]:.9g}", "tab:full_q2_results")
    assert paper["direction"] == paper["exact_m"] == paper["exact_mv"] == ("", "figure only")
    text = (out / "q4.md").read_text(encoding="utf-8")
    assert "figure only" in text and "(1, 1) exact m, v" in text and "1.34e-03 ± 1.3e-04" in text
    capsys.readouterr()
    assert bench.main("q4", _argv(out)) == 0  # again: every run is finished
    assert "5 finished (skipped), 0 to resume, 0 to start" in capsys.readouterr().err


def test_q4_user_errors(tmp_path, capsys):
    assert bench.main("q4", ["--problems", "no_such_problem", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "cannot find specs/no_such_problem.pinn" in err and "Traceback" not in err
    assert bench.main("q4", _argv(tmp_path, "--optimizers", "sgd")) == 1  # SGD has no state to align
    err = capsys.readouterr().err
    assert "no state alignment" in err and "Traceback" not in err
    assert bench.main("q4", _argv(tmp_path, "--optimizers", "no_such_optimizer")) == 1
    assert "no_such_optimizer" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing started


def test_state_alignment_rho_table():
    for problem, rho in _paper.STATE_ALIGNMENT_RHO.items():  # the shipped specs use the paper's soft rho
        align = load(str(ROOT / "specs" / f"{problem}.pinn")).ir.training.align
        assert (align.options["rho_m"], align.options["rho_v"]) == rho
    # the table itself: tests/bench/test_bench_paper.py::test_q3_and_rho_equal_their_tables (shipped excerpt)
