"""bench overhead: the components on random G, and a tiny run end to end."""

import csv

import pytest
import torch

from pinnspec import bench
from pinnspec.align import conflicting
from pinnspec.bench import _overhead

pytestmark = pytest.mark.usefixtures("one_thread")  # one torch thread (conftest.py)


def test_the_proposal_conflicts_so_gua_projects():
    gen = torch.Generator().manual_seed(0)
    G = torch.randn(3, 500, generator=gen)
    u = _overhead._conflicting_proposal(G, gen)
    cos = float(G[0] @ u / (G[0].norm() * u.norm()))
    assert cos == pytest.approx(-0.1, abs=1e-5)
    assert conflicting(G, u)


def test_components_cover_every_requested_piece():
    cells = _overhead.components(300, 3, ["none", "config", "mconfig"], torch.device("cpu"), 0, min_time=0.0)
    assert cells["_projection_active"] == [1.0]
    for name in ("surgery none", "surgery config", "surgery mconfig", "project, euclidean metric",
                 "project, adam metric", "conflict gate", "state alignment (adam)", "GUA.align, euclidean",
                 "GUA.align, adam", "diagnostics"):
        assert len(cells[name]) >= 5 and all(t > 0 for t in cells[name]), name


def test_overhead_end_to_end(tmp_path, capsys):
    out = tmp_path / "overhead"
    rc = bench.overhead.main(["--epochs", "2", "--warmup", "0", "--points", "64", "--sizes", "epoch,2000",
                              "--tasks", "2,3,9", "--methods", "none,config,upgrad", "--min-time", "0",
                              "--threads", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for needle in ("allocator:", "torch threads 1", "p = 10401", "p = 2000", "m = 9", "GUA.align, adam",
                   "surgery + GUA + diagnostics at m <= 3", "m = 2 (grouping two)", "m = 3 (grouping three)",
                   "full / base - 1"):
        assert needle in text, needle
    rows = list(csv.DictReader(open(out / "overhead.csv")))
    cells = {(r["p"], r["m"], r["component"]) for r in rows}
    assert ("2000", "9", "surgery upgrad") in cells
    assert ("10401", "3", "config + GUA.align adam + diagnostics") in cells
    assert all(float(r["fraction_of_epoch"]) > 0 for r in rows)
    assert (out / "overhead.md").exists()


@pytest.mark.parametrize("argv", [["--tasks", "x"], ["--tasks", "0"], ["--sizes", ""], ["--methods", "nope"],
                                  ["--points", "0"]])
def test_bad_command_lines_are_user_errors(argv, capsys):
    assert bench.overhead.main(argv) == 1
    assert "error" in capsys.readouterr().err
