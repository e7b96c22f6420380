"""Every series visible, titles readable, the epoch axis covering the whole run."""

import numpy as np
import pytest

from pinnspec.plots._conflicts import conflicts_figure
from pinnspec.plots._losses import losses_figure
from pinnspec.plots._overlap import Series, coincide, coinciding_groups, visual_tolerance
from pinnspec.plots._run import read_run_files
from pinnspec.plots._style import call_lines, settings_lines
from rundirs import legend_texts, make_run, write_history, write_result

ALIGN = "gua(metric = adam, rho_m = 0.1, rho_v = 0.03)"
OPTIMIZER = "adam(lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-08)"


def series(name, y, x=None):
    y = np.asarray(y, dtype=float)
    return Series(name, np.arange(1, len(y) + 1) if x is None else np.asarray(x), y)


def lines_labelled(fig, label):
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_label() == label]


# ---------------------------------------------------------------------- finding coinciding series
def test_identical_series_are_grouped_and_distinct_ones_are_not():
    a = series("a", [1.0, 0.5, 0.25, np.nan])
    same = series("same", [1.0, 0.5, 0.25, np.nan])
    rounded = series("rounded", [1.0 + 1e-9, 0.5, 0.25, np.nan])  # history.csv's 9 digits
    close = series("close", [1.005, 0.5, 0.25, np.nan])  # within 1%: hidden, but not equal
    other = series("other", [1.0, 0.5, 0.3, np.nan])
    gap = series("gap", [1.0, np.nan, 0.25, np.nan])  # finite where a is, but not everywhere a is
    groups = coinciding_groups([a, same, rounded, close, other], rtol=0.01)
    assert [g.names for g in groups] == [["a", "same", "rounded", "close"], ["other"]]
    assert not groups[0].equal  # "close" is only indistinguishable
    assert coinciding_groups([a, same, rounded], rtol=0.01)[0].equal
    assert not coincide(a, other, rtol=0.01)
    assert coincide(a, gap, rtol=0.0)  # gap lies on a wherever it is drawn
    assert not coincide(series("empty", [np.nan, np.nan]), series("empty too", [np.nan, np.nan]), rtol=1)


def test_a_short_series_under_a_long_one_is_found_and_described():
    long = series("long R_p", np.zeros(200))
    short = series("short R_p", np.zeros(60))
    group = coinciding_groups([long, short], rtol=0.0, atol=0.004)[0]
    assert group.names == ["long R_p", "short R_p"] and group.equal
    assert group.note() == "long R_p = short R_p = 0 throughout"
    rising = series("rising", np.r_[np.zeros(60), np.linspace(0, 1, 140)])
    group = coinciding_groups([rising, short], rtol=0.0, atol=0.004)[0]
    assert group.note("every diagnosed epoch") == "rising = short R_p on every diagnosed epoch they share"
    shifted = series("shifted", np.zeros(60), x=np.arange(1, 61) + 0.5)  # other epochs: never hidden
    assert not coincide(long, shifted, rtol=0.0, atol=0.004)


def test_what_counts_as_hidden_follows_the_axis():
    narrow = series("narrow", np.linspace(1.3, 0.9, 15))  # a log axis spanning 0.16 decades
    wide = series("wide", np.logspace(0, -5, 15))  # ... five decades
    one_percent_apart = {s.name: series("b", s.y * 1.01) for s in (narrow, wide)}
    for s, hidden in ((narrow, False), (wide, True)):
        rtol, atol = visual_tolerance([s, one_percent_apart[s.name]], log=True)
        assert coincide(s, one_percent_apart[s.name], rtol, atol) is hidden
    rtol, atol = visual_tolerance([series("rate", [0.0, 0.01])], log=False, span=1.0)  # the 0..1 rate axis
    assert atol == pytest.approx(0.005)
    assert coincide(series("a", [0.2, 0.3]), series("b", [0.204, 0.3]), rtol, atol)
    assert not coincide(series("a", [0.2, 0.3]), series("b", [0.21, 0.3]), rtol, atol)


# ---------------------------------------------------------------------- drawing them visibly
def test_a_condition_that_is_a_task_of_its_own_stays_visible(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_history(run, epochs=120, conditions=("pde", "walls", "ic"), tasks=3)  # task i = condition i
    write_result(run, tasks=("N", "B", "I"))
    fig = losses_figure(read_run_files(run))
    texts = legend_texts(fig)
    for condition, task in (("pde", "N"), ("walls", "B"), ("ic", "I")):
        assert f"condition {condition} (= task {task})" in texts
        assert f"task {task} (= condition {condition})" in texts
        drawn_over, = lines_labelled(fig, f"task {task} (= condition {condition})")
        assert drawn_over.get_marker() not in ("None", "", None)  # markers: seen over the other
        under, = lines_labelled(fig, f"condition {condition} (= task {task})")
        bands = [line for line in fig.axes[0].get_lines() if line.get_alpha() == 0.35
                 and np.array_equal(line.get_ydata(), under.get_ydata())]
        assert len(bands) == 1 and bands[0].get_linewidth() > drawn_over.get_linewidth() + 3


def test_distinct_losses_get_no_note(tmp_path):
    run = make_run(tmp_path, conditions=("pde", "ic", "bc"), tasks=1)  # one task: the sum of three
    texts = legend_texts(losses_figure(read_run_files(run)))
    assert "condition ic" in texts and not any("(=" in t or "(≈" in t for t in texts)


def test_R_a_and_R_p_both_zero_are_both_drawn_and_noted(tmp_path):
    run = make_run(tmp_path, epochs=80)
    fig = conflicts_figure(read_run_files(run))
    texts = legend_texts(fig)
    assert "R_a = R_p = 0 throughout" in texts
    r_p, = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("R_p = 0")]
    assert r_p.get_marker() not in ("None", "", None)
    run = make_run(tmp_path, name="unaligned", aligned=False)
    texts = legend_texts(conflicts_figure(read_run_files(run)))
    assert not any("throughout" in t for t in texts)
    assert any(t.startswith("R_p: not applicable") for t in texts)


# ---------------------------------------------------------------------- titles
def test_settings_break_between_items_never_inside_a_call():
    items = ["grouping two", "surgery config()", f"optimizer {OPTIMIZER}", f"align {ALIGN}",
             "model mlp(width = 50, depth = 5, activation = tanh, init = xavier)"]
    lines = settings_lines(items, width=110)
    assert all(len(line) <= 110 for line in lines)
    assert " · ".join(lines) == " · ".join(items)  # every break falls between two items
    assert lines == [f"grouping two · surgery config() · optimizer {OPTIMIZER}",
                     f"align {ALIGN}", items[-1]]
    # a call too long for a line by itself breaks after its top-level commas only
    call = "align gua(metric = adam(beta1 = 0.9, beta2 = 0.999), rho_m = 0.1, rho_v = 0.03)"
    assert call_lines(call, width=60) == ["align gua(metric = adam(beta1 = 0.9, beta2 = 0.999),",
                                          "    rho_m = 0.1, rho_v = 0.03)"]
    assert settings_lines(["grouping two", call, "model mlp()", "seed 0"], width=60) == [
        "grouping two", "align gua(metric = adam(beta1 = 0.9, beta2 = 0.999),", "    rho_m = 0.1, rho_v = 0.03)",
        "model mlp() · seed 0"]  # what follows a broken call starts a line of its own


def test_titles_state_the_resolved_settings_on_whole_lines(tmp_path):
    run = make_run(tmp_path)
    write_result(run, align=ALIGN, optimizer=OPTIMIZER)
    for build in (losses_figure, conflicts_figure):
        lines = build(read_run_files(run)).get_suptitle().splitlines()
        assert any(f"align {ALIGN}" in line for line in lines)
        assert any(f"optimizer {OPTIMIZER}" in line for line in lines)
        for line in lines:
            assert line.count("(") == line.count(")"), line


# ---------------------------------------------------------------------- the epoch axis
@pytest.mark.parametrize("first, epochs", [(1, 137), (0, 137), (1, 2000)])
def test_the_epoch_axis_covers_the_whole_run(tmp_path, first, epochs):
    run = tmp_path / "run"
    run.mkdir()
    write_history(run, epochs=epochs, first=first)
    last = first + epochs - 1
    loaded = read_run_files(run)
    for fig in (losses_figure(loaded), conflicts_figure(loaded)):
        bottom = fig.axes[-1]
        assert bottom.get_xlabel() == "epoch"
        lo, hi = bottom.get_xlim()
        assert lo <= first and hi >= last
        ticks = bottom.get_xticks()
        assert ticks.max() == last  # the last epoch is labelled
        assert np.all(np.diff(ticks) > 0.45 * np.diff(ticks).max())  # ... without crowding the one before
