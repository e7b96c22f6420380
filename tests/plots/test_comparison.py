"""`plot_comparison`: one PNG comparing several runs of a problem."""

from pathlib import Path

import numpy as np
import pytest

import pinnspec.plots
from pinnspec.plots._comparison import comparison_figure, run_names
from pinnspec.plots._run import read_run_files
from rundirs import legend_texts, write_history, write_result, write_run_without_reference

ALIGN = "gua(metric = adam, rho_m = 0.1, rho_v = 0.03)"


def two_runs(tmp_path: Path) -> list[Path]:
    """runs/main/config-gua (aligned, validated) and runs/main/config (no alignment, no validation column)."""
    gua, plain = tmp_path / "main" / "config-gua", tmp_path / "main" / "config"
    gua.mkdir(parents=True)
    plain.mkdir()
    write_history(gua, epochs=120)
    write_result(gua, align=ALIGN)
    write_history(plain, epochs=100, aligned=False, validation=False)
    write_result(plain, align="none")
    return [gua, plain]


def test_the_comparison_png_is_written_and_readable(tmp_path):
    from matplotlib.image import imread

    out = tmp_path / "figures" / "compare.png"
    path = pinnspec.plots.plot_comparison([str(p) for p in two_runs(tmp_path)], str(out))
    assert path == str(out.resolve()) and out.exists()
    image = imread(path)
    assert image.shape == (1210, 1430, 4)  # 13 x 11 inches at 110 dpi
    assert image[..., :3].std() > 0.05  # something is drawn
    assert not list(out.parent.glob(".tmp-*"))


def test_the_panels_name_every_run_and_what_it_lacks(tmp_path):
    fig = comparison_figure([read_run_files(p) for p in two_runs(tmp_path)])
    ax_val, ax_rates, ax_loss = fig.axes
    val_texts = [t.get_text() for t in ax_val.get_legend().get_texts()]
    assert val_texts[0].startswith(f"config-gua\nalign {ALIGN}\n")
    assert val_texts[1] == "config\nalign none\nno validation column in history.csv"
    assert ax_val.get_yscale() == "log" and ax_loss.get_yscale() == "log"
    rate_texts = [t.get_text() for t in ax_rates.get_legend().get_texts()]
    assert any(t.startswith("config: R_u = ") and t.endswith(", R_p not applicable") for t in rate_texts)
    assert any(t.startswith("config-gua: R_u = ") and t.endswith("R_p = 0") for t in rate_texts)
    assert any(t.startswith("R_u:") for t in rate_texts) and any(t.startswith("R_p:") for t in rate_texts)
    styles = {(line.get_color(), line.get_linestyle()) for line in ax_rates.get_lines() if len(line.get_xdata())}
    assert {("C0", "-"), ("C0", "--"), ("C1", "-")} <= styles  # one colour a run, one style a rate
    assert [t.get_text().split(":")[0] for t in ax_loss.get_legend().get_texts()] == ["config-gua", "config"]
    gua_loss, plain_loss = [line for line in ax_loss.get_lines() if line.get_label().startswith("config")]
    assert gua_loss.get_linewidth() > plain_loss.get_linewidth() + 1  # the later run leaves the first's edges
    assert ax_loss.get_xlabel() == "epoch" and ax_loss.get_xlim()[1] >= 120
    title = fig.get_suptitle()
    assert title.startswith("synthetic — comparison of 2 runs") and "surgery config()" in title
    assert "align" not in title  # it is in the legend, per run


def test_identical_runs_are_both_visible_and_noted(tmp_path):
    runs = []
    for name in ("seed0", "copy"):
        run = tmp_path / name
        run.mkdir()
        write_history(run, epochs=60)
        write_result(run)
        runs.append(read_run_files(run))
    fig = comparison_figure(runs)
    texts = legend_texts(fig)
    assert any(t.startswith("seed0\n") and t.endswith("(= copy)") for t in texts)
    assert "seed0 R_u = copy R_u on every diagnosed epoch" in texts
    assert "seed0 R_p = copy R_p = 0 throughout" in texts


def test_a_run_without_reference_is_noted(tmp_path):
    runs = two_runs(tmp_path)
    runs.append(write_run_without_reference(tmp_path / "main" / "free"))
    texts = legend_texts(comparison_figure([read_run_files(p) for p in runs]))
    assert any(t.startswith("free\n") and t.endswith("no reference: no validation error") for t in texts)


def test_runs_with_the_same_basename_are_told_apart(tmp_path):
    for parent in ("a", "b"):
        (tmp_path / parent / "seed0").mkdir(parents=True)
        write_history(tmp_path / parent / "seed0", epochs=3)
    runs = [read_run_files(tmp_path / parent / "seed0") for parent in ("a", "b")]
    assert run_names(runs) == ["a/seed0", "b/seed0"]


@pytest.mark.parametrize("dirs, match", [
    (["{tmp}/main/config-gua", "{tmp}/missing"], "run directory .*missing does not exist"),
    (["{tmp}/main/config-gua", "{tmp}/main"], "main has no history.csv"),
    ([], "at least one run directory"),
    ("{tmp}/main/config-gua", "a list of run directories"),
])
def test_unreadable_or_missing_run_dirs_raise(tmp_path, dirs, match):
    two_runs(tmp_path)
    dirs = dirs.format(tmp=tmp_path) if isinstance(dirs, str) else [d.format(tmp=tmp_path) for d in dirs]
    out = tmp_path / "compare.png"
    with pytest.raises(ValueError, match=match):
        pinnspec.plots.plot_comparison(dirs, str(out))
    assert not out.exists()


def test_an_unreadable_history_and_an_out_path_that_is_a_directory_raise(tmp_path):
    gua, plain = two_runs(tmp_path)
    with pytest.raises(ValueError, match="is a directory"):
        pinnspec.plots.plot_comparison([str(gua)], str(tmp_path))
    (plain / "history.csv").write_text("epoch,loss\n1,abc\n")
    with pytest.raises(ValueError, match="column 'loss' holds 'abc'"):
        pinnspec.plots.plot_comparison([str(gua), str(plain)], str(tmp_path / "c.png"))
    assert np.all([not p.name.endswith(".png") for p in tmp_path.iterdir()])
