"""check, train, eval and plot on a spec whose reference file has rows outside its domain (inside the
hole): each says so, naming the file (check, train) or the test points (eval), with the count and the
farthest point; eval flags them and adds the errors inside the domain only; nothing is refused."""

from pathlib import Path

import numpy as np
import pytest

from cli_process import ROOT, cli

HOLE_PLATE = ROOT / "tests" / "engine" / "data" / "hole_plate.pinn"
FILE_WARNING = ("warning: the reference file 'ref_in_hole.csv': 2 of 6 rows lie outside the domain 'plate' "
                "(box - hole), the farthest at (x = 0.2, y = 0.2), 0.15 past its boundary")


def test_check_warns_about_a_reference_file_with_rows_in_a_hole():
    proc = cli("check", HOLE_PLATE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(f"{HOLE_PLATE}: {FILE_WARNING}")
    assert len(proc.stderr.splitlines()) == 1


def test_check_is_quiet_when_the_reference_lies_in_the_domain():
    proc = cli("check", ROOT / "examples" / "plate_holes" / "plate_holes.pinn")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("holeplate") / "run"
    proc = cli("train", HOLE_PLATE, "--out", run, "--quiet")
    assert proc.returncode == 0, proc.stderr
    return run, proc


def test_train_warns_at_the_start(trained):
    _, proc = trained
    assert f"pinnspec: {FILE_WARNING}" in proc.stderr
    assert proc.stderr.index(FILE_WARNING) < proc.stderr.index("epoch ")  # before the first epoch


def test_eval_flags_the_test_points_outside_and_scores_the_inside_apart(trained):
    run, _ = trained
    proc = cli("eval", run)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{run}: re-tested on 6 test points (cpu)"
    assert "(matches result.json)" in lines[1] and "(matches result.json)" in lines[2]
    assert lines[3] == ("  warning: 2 of 6 test points lie outside the domain 'plate' (box - hole), the farthest "
                        "at (x = 0.2, y = 0.2), 0.15 past its boundary; the errors above include them (as training "
                        "computed them)")
    assert lines[4].startswith("  test rel-L2 inside the domain only (4 points), best validation checkpoint: ")
    assert lines[5].startswith("  test rel-L2 inside the domain only (4 points), final model: ")
    assert float(lines[5].rsplit(": ", 1)[1]) > 0


def test_plot_draws_nothing_at_the_test_points_in_the_hole(trained):
    from pinnspec.plots._run import read_run_files
    from pinnspec.plots._solution import masked_outside

    run, _ = trained
    proc = cli("plot", run)
    assert proc.returncode == 0, proc.stderr
    assert [Path(p).name for p in proc.stdout.split()] == ["losses.png", "conflicts.png", "solution.png"]
    reference, prediction, dropped = masked_outside(read_run_files(run))
    assert dropped == 2
    assert np.isnan(prediction[2:4]).all() and np.isfinite(prediction[[0, 1, 4, 5]]).all()
