"""Runs of a problem without a reference solution: null test errors, no validation values,
predictions.npz without ``reference``."""

import numpy as np
import pytest

from pinnspec.plots import plot_run
from pinnspec.plots._losses import losses_figure
from pinnspec.plots._run import read_run_files, read_predictions
from pinnspec.plots._solution import solution_figure
from rundirs import assert_pngs, grid, legend_texts, make_run, write_history, write_result, write_run_without_reference

ALL = ("losses.png", "conflicts.png", "solution.png")


def test_predictions_without_reference_read_as_none(tmp_path):
    run = write_run_without_reference(tmp_path / "run", np.linspace(0, 1, 30)[:, None], fields=("u", "v"))
    predictions = read_predictions(str(run / "predictions.npz"))
    assert predictions.reference is None
    assert predictions.prediction.shape == (30, 2) and predictions.fields == ["u", "v"]
    assert not read_run_files(run).has_reference


@pytest.mark.parametrize("points, fields, panels", [
    (np.linspace(0, 1, 40)[:, None], ("u",), 1),
    (grid(np.linspace(0, 1, 12), np.linspace(0, 2, 9)), ("u", "v", "p", "T"), 4),
], ids=["1d", "2d-grid-4f"])
def test_solution_shows_the_prediction_per_field_only(tmp_path, points, fields, panels):
    run = write_run_without_reference(tmp_path / "run", points, fields)
    fig = solution_figure(read_run_files(run))
    drawn = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]  # not the colour bars
    assert [ax.get_title() for ax in drawn] == [f"{name}: prediction" for name in fields]
    assert len(drawn) == panels
    title = fig.get_suptitle()
    assert "no reference" in title and "no error panel" in title
    assert "error|" not in " ".join(ax.get_title() for ax in fig.axes)


def test_losses_have_no_validation_panel_and_say_why(tmp_path):
    run = write_run_without_reference(tmp_path / "run", np.linspace(0, 1, 30)[:, None])
    fig = losses_figure(read_run_files(run))
    assert len(fig.axes) == 1
    assert "no reference: no validation error" in legend_texts(fig)
    assert fig.axes[0].get_xlabel() == "epoch"
    assert "no reference: no test error" in fig.get_suptitle().splitlines()[0]


def test_without_predictions_the_result_tells(tmp_path):
    run = write_run_without_reference(tmp_path / "run")  # no predictions.npz
    loaded = read_run_files(run)
    assert not loaded.has_reference
    assert "no reference: no validation error" in legend_texts(losses_figure(loaded))


def test_a_run_with_a_reference_but_no_validation_yet_keeps_its_panel(tmp_path):
    run = tmp_path / "early"
    run.mkdir()
    write_history(run, epochs=5, every=None)
    write_result(run, rel_l2=None, rel_l2_final=0.5, best_epoch=None, epochs_done=5)
    loaded = read_run_files(run)
    assert loaded.has_reference
    fig = losses_figure(loaded)
    assert len(fig.axes) == 2
    assert "no validation yet" in [t.get_text() for t in fig.axes[1].texts]


def test_plot_run_writes_all_three_pngs(tmp_path):
    run = write_run_without_reference(tmp_path / "run", grid(np.linspace(0, 1, 20), np.linspace(0, 1, 15)))
    assert_pngs(plot_run(run), ALL)
    with_reference = make_run(tmp_path, np.linspace(0, 1, 20)[:, None], name="with")
    assert read_run_files(with_reference).has_reference


def test_the_kept_checkpoint_is_named_for_what_chose_it(tmp_path):
    run = write_run_without_reference(tmp_path / "run", np.linspace(0, 1, 30)[:, None])
    write_result(run, rel_l2=None, rel_l2_final=None, best_epoch=4, epochs_done=5)
    fig = losses_figure(read_run_files(run))
    assert "kept: lowest held-out residual, epoch 4" in fig.get_suptitle().splitlines()[0]
    assert "best-validation" not in fig.get_suptitle()
