"""Plots follow the spec's domain (config.pinn in the run directory): nothing is drawn outside it.

The runs are hand-built: the plate of examples/plate_holes (four holes of radius 0.1 at (+-0.3, +-0.3))
with a test grid cut to the domain, with PINNacle's COMSOL nodes, and with a reference file that has
a row inside a hole."""

from pathlib import Path

import numpy as np

from pinnspec.lang import load
from pinnspec.plots import plot_run
from pinnspec.plots._run import read_run_files, read_domain
from pinnspec.plots._solution import _line_with_gaps, _triangulation, choose_view, masked_outside, solution_figure
from pinnspec.sampling import load_reference
from rundirs import assert_pngs, grid, write_history, write_result

ROOT = Path(__file__).resolve().parents[2]
PLATE = ROOT / "examples" / "plate_holes" / "plate_holes.pinn"
COMSOL = ROOT / "benchmarks" / "pinnacle" / "ref" / "poisson1_cg_data.dat"
HOLES = [(0.3, 0.3), (-0.3, 0.3), (0.3, -0.3), (-0.3, -0.3)]


def _plate_domain():
    return load(PLATE).ir.domain


def _field(points):
    return (np.sin(3 * points[:, 0]) * np.cos(2 * points[:, 1]))[:, None]  # [N, 1]


def _plate_run(tmp_path, points, name="run", config=PLATE.read_text()) -> Path:
    run = tmp_path / name
    run.mkdir()
    write_history(run)
    write_result(run)
    (run / "config.pinn").write_text(config)
    u = _field(points)
    np.savez(run / "predictions.npz", points=points, reference=u, prediction=u + 0.01,
             coordinates=np.array(["x", "y"]), fields=np.array(["u"]))
    return run


def _grid_cut_to_plate(n=41):
    axis = np.linspace(-0.5, 0.5, n)
    points = grid(axis, axis)  # [n*n, 2]
    return points[_plate_domain().shape.inside(points)]


def _in_a_hole(points):
    """[N] bool: the rows strictly inside one of the four holes."""
    return np.any([np.hypot(points[:, 0] - cx, points[:, 1] - cy) < 0.1 - 1e-9 for cx, cy in HOLES], axis=0)


def _white_at(fig, ax, point) -> bool:
    """Whether the rendered figure is blank (the white face) at ``point`` of ``ax``'s data space."""
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())  # [H, W, 4]
    px, py = ax.transData.transform(point)
    row, col = int(round(image.shape[0] - py)), int(round(px))
    return bool((image[row - 1:row + 2, col - 1:col + 2, :3] >= 250).all())


def _drawn(fig):
    return [ax for ax in fig.axes if ax.get_title() and ax.get_visible()]  # not the colour bars


def test_the_run_directory_gives_the_domain(tmp_path):
    run = _plate_run(tmp_path, _grid_cut_to_plate())
    domain = read_run_files(run).domain
    assert domain is not None and domain.name == "plate" and domain.expression == "box - ne - nw - se - sw"


def test_a_config_whose_reference_file_moved_still_gives_the_domain(tmp_path):
    """config.pinn names its reference relative to the spec's folder, which is not the run directory."""
    text = PLATE.read_text().replace("../../benchmarks", "../nowhere")
    (tmp_path / "config.pinn").write_text(text)
    assert read_domain(str(tmp_path / "config.pinn")).name == "plate"


def test_no_domain_without_a_config_or_a_domain(tmp_path):
    assert read_domain(str(tmp_path / "config.pinn")) is None
    (tmp_path / "config.pinn").write_text("problem p\nspace x in [0, 1]\nfield u\nequation rest: u_xx = 0\n")
    assert read_domain(str(tmp_path / "config.pinn")) is None
    (tmp_path / "config.pinn").write_text("not a spec at all")
    assert read_domain(str(tmp_path / "config.pinn")) is None


def test_a_test_grid_cut_to_the_domain_is_drawn_as_a_grid_with_blank_holes(tmp_path):
    points = _grid_cut_to_plate()
    domain = _plate_domain()
    assert choose_view(points, ["x", "y"]).kind == "tri"  # without the domain: not a full grid
    view = choose_view(points, ["x", "y"], domain)
    assert view.kind == "grid" and len(view.rows) == len(points)

    run = read_run_files(_plate_run(tmp_path, points))
    fig = solution_figure(run)
    assert "blank outside the domain 'plate'" in fig.get_suptitle()
    for ax in _drawn(fig):  # reference, prediction, |error|
        mesh = ax.collections[0]
        values = np.ma.filled(np.ma.asarray(mesh.get_array(), dtype=float), np.nan).reshape(-1)  # [nx*ny]
        centres = grid(view.xs, view.ys)  # the cell centres, x slowest
        order = np.lexsort((centres[:, 0], centres[:, 1]))  # the mesh's rows run along x, then y
        in_hole = _in_a_hole(centres[order])
        assert in_hole.any() and np.isnan(values[in_hole]).all(), ax.get_title()
        assert np.isfinite(values[~in_hole & domain.shape.inside(centres[order])]).all()
        for centre in HOLES:
            assert _white_at(fig, ax, centre), (ax.get_title(), centre)
        assert not _white_at(fig, ax, (0.0, 0.0))


def test_scattered_mesh_nodes_leave_the_holes_empty(tmp_path):
    """PINNacle's COMSOL nodes: the Delaunay triangles that fill the holes are masked."""
    points = load_reference(COMSOL, ["x", "y"], ["u"])[0]
    domain = _plate_domain()
    tri = _triangulation(points[:, 0], points[:, 1], domain)
    kept = ~tri.mask
    centroids = np.stack([tri.x[tri.triangles].mean(1), tri.y[tri.triangles].mean(1)], axis=1)  # [T, 2]
    assert not _in_a_hole(centroids[kept]).any()
    assert _in_a_hole(centroids[~kept]).any()
    assert kept.mean() > 0.9  # only the holes' triangles go: the plate itself is filled

    fig = solution_figure(read_run_files(_plate_run(tmp_path, points)))
    for ax in _drawn(fig):
        for centre in HOLES:
            assert _white_at(fig, ax, centre), (ax.get_title(), centre)
        assert not _white_at(fig, ax, (0.0, 0.0))


def test_test_points_outside_the_domain_are_not_drawn_nor_scored(tmp_path):
    """A reference file with rows inside a hole: those rows get no value and stay out of the rel-L2."""
    rng = np.random.default_rng(0)
    points = rng.uniform(-0.5, 0.5, (400, 2))
    points = np.concatenate([points[_plate_domain().shape.inside(points)], [[0.3, 0.3], [-0.31, -0.29]]])
    run = read_run_files(_plate_run(tmp_path, points))
    reference, prediction, dropped = masked_outside(run)
    assert dropped == 2
    assert np.isnan(prediction[-2:]).all() and np.isnan(reference[-2:]).all()
    assert np.isfinite(prediction[:-2]).all()
    fig = solution_figure(run)
    assert "(2 test points there not drawn)" in fig.get_suptitle()
    assert "(the test points inside the domain)" in _drawn(fig)[2].get_title()
    assert_pngs(plot_run(run.path), ("losses.png", "conflicts.png", "solution.png"))


def test_a_run_without_a_domain_is_drawn_as_before(tmp_path):
    """No config.pinn (older or hand-made runs): nothing masked, the old view."""
    points = _grid_cut_to_plate()
    run_dir = _plate_run(tmp_path, points)
    (run_dir / "config.pinn").unlink()
    run = read_run_files(run_dir)
    assert run.domain is None
    assert masked_outside(run)[2] == 0
    assert "blank outside" not in solution_figure(run).get_suptitle()


def test_a_line_does_not_run_across_a_gap_of_a_1d_domain(tmp_path):
    spec = tmp_path / "rod.pinn"
    spec.write_text("problem rod\nspace x in [0, 1]\nshape gap = interval(lo = 0.4, hi = 0.6)\n"
                    "domain rod = box - gap\nfield u\nequation rest: u_xx = 0\n")
    domain = load(spec).ir.domain
    x = np.concatenate([np.linspace(0, 0.39, 10), np.linspace(0.61, 1, 10)])
    xs, values = _line_with_gaps(x, x ** 2, domain)
    assert len(xs) == 21 and np.isnan(xs[10]) and np.isnan(values[10])
    assert _line_with_gaps(x, x ** 2, None)[0] is x

