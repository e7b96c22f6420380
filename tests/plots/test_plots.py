"""`pinnspec plot RUN_DIR`: plots of hand-built run directories (every layout of test
points) and of one real training run."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pinnspec.plots import plot_run
from pinnspec.plots._conflicts import running_rates, window_for
from pinnspec.plots._solution import _triangulation, choose_view, grid_of
from rundirs import assert_pngs, grid, make_run, write_history, write_result

ROOT = Path(__file__).resolve().parents[2]


ALL = ("losses.png", "conflicts.png", "solution.png")
rng = np.random.default_rng(1)


# ---------------------------------------------------------------------- every layout of test points
@pytest.mark.parametrize("label, points, fields, kind", [
    ("1d", np.linspace(0, 1, 101)[:, None], ("u",), "line"),
    ("2d-grid-3f", grid(np.linspace(-1, 1, 30), np.linspace(0, 1, 20)), ("u", "v", "p"), "grid"),
    ("2d-scattered", rng.random((400, 2)) * [2, 1], ("u",), "tri"),
    ("3d-grid", grid(np.linspace(0, 1, 12), np.linspace(0, 1, 10), np.linspace(0, 5, 7)), ("u",), "grid"),
    ("4d-scattered-3f", rng.random((2000, 4)), ("u", "v", "p"), "scatter"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_layout_writes_three_pngs(tmp_path, label, points, fields, kind):
    run = make_run(tmp_path, points, fields)
    if label == "2d-grid-3f":  # a few non-finite predictions are drawn around, not fatal
        data = dict(np.load(run / "predictions.npz"))
        data["prediction"][:10] = np.nan
        np.savez(run / "predictions.npz", **data)
    d = points.shape[1]
    assert choose_view(points, ["x", "y", "z", "t"][:d]).kind == kind
    paths = plot_run(run)
    assert_pngs(paths, ALL)
    assert all(Path(p).parent == run / "plots" for p in paths)


def test_blank_R_p_and_a_diverged_run(tmp_path):
    run = make_run(tmp_path, np.linspace(0, 1, 50)[:, None], fields=("u", "v"), aligned=False, diverged=True)
    write_result(run, status="diverged", message="training diverged at epoch 51")
    header = (run / "history.csv").read_text().splitlines()
    assert header[2].split(",")[11] == ""  # R_p blank on a diagnosed epoch
    assert header[-1].startswith("51,,nan")
    assert_pngs(plot_run(run), ALL)


def test_a_run_without_predictions_or_result_still_gets_the_curves(tmp_path):
    run = tmp_path / "partial"
    run.mkdir()
    write_history(run, epochs=7, every=100)  # no validation row before the last epoch
    paths = plot_run(run)
    assert_pngs(paths, ("losses.png", "conflicts.png"))


def test_a_single_epoch_and_an_out_dir(tmp_path):
    run = tmp_path / "one"
    run.mkdir()
    write_history(run, epochs=1)  # epoch 1 only: nothing diagnosed, lr 0
    out = tmp_path / "elsewhere"
    paths = plot_run(str(run), out_dir=str(out))
    assert_pngs(paths, ("losses.png", "conflicts.png"))
    assert all(Path(p).parent == out for p in paths)
    assert not (run / "plots").exists()


# ---------------------------------------------------------------------- bad input
def test_a_missing_run_dir_raises(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        plot_run(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        plot_run(tmp_path / "file")


def test_no_history_raises(tmp_path):
    with pytest.raises(ValueError, match="no history.csv"):
        plot_run(tmp_path)
    (tmp_path / "history.csv").write_text("epoch,lr,loss\n")
    with pytest.raises(ValueError, match="no epochs yet"):
        plot_run(tmp_path)
    (tmp_path / "history.csv").write_text("")
    with pytest.raises(ValueError, match="no 'epoch' column"):
        plot_run(tmp_path)


@pytest.mark.parametrize("broken, match", [
    ("history", "column 'loss' holds 'abc'"),
    ("result", "result.json: error: not a result pinnspec wrote: not JSON"),
    ("npz-shape", "prediction \\(9, 1\\) must be \\[N, F\\] with N = 10 points"),
    ("npz-reference-shape", "reference \\(10, 2\\) and prediction \\(10, 1\\) must both be \\[N, F\\]"),
    ("npz-keys", "lacks prediction"),
    ("npz-garbage", "predictions.npz: error: cannot read it"),
])
def test_unreadable_files_raise_value_error(tmp_path, broken, match):
    run = make_run(tmp_path, np.linspace(0, 1, 10)[:, None])
    if broken == "history":
        (run / "history.csv").write_text("epoch,lr,loss\n0,0,abc\n")
    elif broken == "result":
        (run / "result.json").write_text("{not json")
    elif broken == "npz-shape":
        np.savez(run / "predictions.npz", points=np.zeros((10, 1)), reference=np.zeros((10, 1)),
                 prediction=np.zeros((9, 1)))
    elif broken == "npz-reference-shape":
        np.savez(run / "predictions.npz", points=np.zeros((10, 1)), reference=np.zeros((10, 2)),
                 prediction=np.zeros((10, 1)))
    elif broken == "npz-keys":
        np.savez(run / "predictions.npz", points=np.zeros((10, 1)), reference=np.zeros((10, 1)))
    else:
        (run / "predictions.npz").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=match):
        plot_run(run)
    assert not (run / "plots").exists()  # everything is read before anything is written


# ---------------------------------------------------------------------- the pieces
def test_grid_detection():
    points = grid(np.linspace(0, 1, 4), np.array([0.0, 2.0, 5.0]))
    axes, index = grid_of(points)
    assert [len(a) for a in axes] == [4, 3]
    assert grid_of(points[:-1]) is None  # a missing corner
    assert grid_of(np.concatenate([points[:-1], points[:1]])) is None  # a duplicate in its place
    assert grid_of(rng.random((12, 2))) is None


def test_slices_are_described():
    points = grid(np.linspace(0, 1, 5), np.linspace(0, 1, 4), np.array([0.0, 1.0, 2.0, 4.0]))
    view = choose_view(points, ["x", "y", "t"])
    assert view.kind == "grid" and len(view.rows) == 20
    assert np.all(points[view.rows, 2] == 2.0)  # nearest to the middle (2.0) of [0, 4]
    assert "t = 2" in view.note and "nearest the middle" in view.note
    scattered = rng.random((5000, 3)) * [1, 1, 10]
    view = choose_view(scattered, ["x", "y", "t"])
    assert view.kind == "scatter"
    t = scattered[:, 2]
    middle = 0.5 * (t.min() + t.max())
    assert np.all(np.abs(t[view.rows] - middle) <= 0.1 * np.ptp(t) + 1e-12)
    assert np.array_equal(view.rows, np.flatnonzero(np.abs(t - middle) <= 0.1 * np.ptp(t)))
    assert "middle 20%" in view.note and f"{len(view.rows)} of 5000" in view.note


def test_triangles_across_a_hole_are_dropped():
    points = np.random.default_rng(2).uniform(-1, 1, (3000, 2))
    points = points[np.hypot(*points.T) > 0.5]
    tri = _triangulation(points[:, 0], points[:, 1])
    kept = tri.triangles[~tri.mask]
    centroids = np.stack([tri.x[kept].mean(axis=1), tri.y[kept].mean(axis=1)], axis=1)
    assert np.hypot(*centroids.T).min() > 0.4  # nothing drawn inside the hole
    assert tri.mask.sum() < 0.1 * len(tri.mask)  # ... and little else dropped


def test_running_rates():
    cumulative, moving = running_rates(np.array([1, 0, 1, 1, 0, 0.0]), window=2)
    np.testing.assert_allclose(cumulative, [1, 0.5, 2 / 3, 0.75, 0.6, 0.5])
    np.testing.assert_allclose(moving, [1, 0.5, 0.5, 1, 0.5, 0])
    assert window_for(2000) == 100 and window_for(3) == 1


def test_importing_plots_loads_neither_torch_nor_matplotlib():
    code = ("import pinnspec.plots, sys\n"
            "assert callable(pinnspec.plots.plot_comparison) and 'plot_comparison' in pinnspec.plots.__all__\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- a real run
@pytest.mark.slow
def test_plots_of_a_real_burgers_run(tmp_path):
    import pinnspec

    # a small network keeps the 60 epochs to about a second; the run directory is the real thing
    result = pinnspec.train(ROOT / "specs" / "burgers.pinn", epochs=60, out=str(tmp_path),
                            overrides={"validate": "200 every 20", "model": "mlp(width = 20, depth = 2)"})
    assert result.status == "completed" and result.model.startswith("mlp(width = 20")
    paths = plot_run(tmp_path)
    assert_pngs(paths, ALL)
    assert (tmp_path / "plots" / "solution.png").stat().st_size > 20000
