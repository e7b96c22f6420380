"""`pinnspec compare RUN_DIR RUN_DIR ... [--out PNG]`: one side-by-side table of runs."""

import json
import re
import shutil

import pytest
from cli_process import TINY, cli, user_error

import pinnspec


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    pinnspec.train(TINY, epochs=4, surgery="config", align="gua", out=str(root / "config-gua"))
    pinnspec.train(TINY, epochs=3, surgery="config", align="none", out=str(root / "config"))
    return root / "config-gua", root / "config"


def rows_of(table: str) -> dict[str, list[str]]:
    """label -> cells; a label and its cells are separated by two or more spaces."""
    return {parts[0]: parts[1:] for parts in (re.split(r"\s{2,}", line.strip()) for line in table.splitlines()[1:])}


def test_table_of_two_runs(runs):
    proc = cli("compare", *runs)
    assert proc.returncode == 0, proc.stderr
    header, *_ = proc.stdout.splitlines()
    assert header.split() == ["config-gua", "config"]
    rows = rows_of(proc.stdout)
    results = [json.loads((run / "result.json").read_text()) for run in runs]
    assert rows["problem"] == ["tiny", "tiny"] and rows["status"] == ["completed", "completed"]
    assert rows["align"] == [r["align"] for r in results] and rows["surgery"] == [r["surgery"] for r in results]
    assert rows["epochs"] == ["4/4", "3/3"]
    assert rows["test rel-L2 (best val.)"] == [f"{r['rel_l2']:.3e}" for r in results]
    assert rows["test rel-L2 (final)"] == [f"{r['rel_l2_final']:.3e}" for r in results]
    assert rows["best epoch"] == [str(r["best_epoch"]) for r in results]
    assert rows["R_u"] == [f"{r['rates']['R_u']:.1%}" for r in results]
    assert rows["R_p"] == [f"{results[0]['rates']['R_p']:.1%}", "-"]  # no alignment: no R_p
    assert rows["train time (s)"] == [f"{r['train_time_s']:.1f}" for r in results]


def test_a_run_without_reference_shows_dashes(runs, tmp_path):
    bare = tmp_path / "no-reference"
    shutil.copytree(runs[1], bare)
    result = json.loads((bare / "result.json").read_text())
    (bare / "result.json").write_text(json.dumps({**result, "rel_l2": None, "rel_l2_final": None}))
    proc = cli("compare", runs[0], bare)
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(proc.stdout)
    assert rows["test rel-L2 (best val.)"][1] == "-" and rows["test rel-L2 (final)"][1] == "-"


def test_missing_runs_are_user_errors(runs, tmp_path):
    for args, message in ((["compare", runs[0], tmp_path / "nope"], f"{tmp_path / 'nope'}: error: no such directory"),
                          (["compare", runs[0], tmp_path], f"{tmp_path}: error: no result.json here"),
                          (["compare", runs[0]], "compare needs at least two run directories")):
        assert message in "\n".join(user_error(cli(*args)))


def test_out_writes_the_comparison_figure(runs, tmp_path):
    png = tmp_path / "comparison.png"
    proc = cli("compare", *runs, "--out", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert proc.stdout.splitlines()[-1] == str(png)
