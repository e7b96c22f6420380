"""bench q5: GUA's time and memory overhead on the tiny spec standing in for Burgers (seconds)."""

import csv
import json
from pathlib import Path

import pytest

from pinnspec import bench

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")


def _result(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text(encoding="utf-8"))


def test_q5_end_to_end(tmp_path, capsys):
    out = tmp_path / "q5"
    argv = ["--problems", "burgers", "--spec", f"burgers={TINY}", "--groupings", "three", "--epochs", "4",
            "--seeds", "0", "--jobs", "1", "--threads", "1", "--out", str(out)]
    assert bench.main("q5", argv) == 0
    for name in ("q5.md", "q5.csv", "q5.png"):
        assert (out / name).stat().st_size > 0
    with open(out / "q5.csv", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["problem"], row["grouping"], row["method"]) == ("burgers", "three", "config")
    runs = sorted((out / "runs" / "burgers-three").glob("align=*__seed=0"))
    assert len(runs) == 2
    by_align = {("gua" if "gua" in p.name else "none"): _result(p) for p in runs}
    assert by_align["gua"]["align"].startswith("gua") and by_align["none"]["align"] == "none()"
    assert float(row["time_ratio"]) == pytest.approx(by_align["gua"]["train_time_s"] / by_align["none"]["train_time_s"],
                                                     rel=1e-6)
    assert float(row["memory_ratio"]) == pytest.approx(
        by_align["gua"]["peak_memory_mb"] / by_align["none"]["peak_memory_mb"], rel=1e-6)
    assert float(row["gua_peak_mb"]) > 0 and float(row["gua_R_p"]) == 0.0
    assert "fig:overhead" in (out / "q5.md").read_text(encoding="utf-8")


def test_q5_user_errors(tmp_path, capsys):
    assert bench.main("q5", ["--problems", "no_such_problem", "--out", str(tmp_path)]) == 1
    assert "no_such_problem" in capsys.readouterr().err
