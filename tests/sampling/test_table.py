"""Coefficient tables (pinnspec.sampling._table): which column is what, and the interpolation.

The oracle of every exactness test is the linear function the table was written from: linear
interpolation (multilinear on a grid, barycentric on a triangulation, np.interp in 1-D) reproduces a
linear function, so the interpolated values equal it to rounding."""

import numpy as np
import pytest

from pinnspec.sampling import read_file_columns
from pinnspec.sampling._table import (TableColumnError, TableColumns, TableInterpolator, grid_axes, load_table,
                                      table_columns, table_interpolator)


def linear(points):  # [N, k] -> [N]: the oracle
    return 0.5 + points @ np.array([1.5, -2.0, 0.75][: points.shape[1]])


def write_csv(path, names, rows):
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in rows) + "\n")
    return path


def grid(*axes):  # [prod n_i, k]: every combination
    return np.stack([a.reshape(-1) for a in np.meshgrid(*axes, indexing="ij")], axis=1)


# ------------------------------------------------------------------ interpolation


def test_multilinear_on_a_grid_is_exact_for_linear_data():
    points = grid(np.linspace(0, 1, 5), np.array([-1.0, -0.2, 0.3, 2.0]))  # uneven spacing in y
    interpolate = TableInterpolator(points, linear(points))
    assert interpolate.layout == "grid"
    query = np.random.default_rng(0).uniform([0, -1], [1, 2], size=(500, 2))
    np.testing.assert_allclose(interpolate(query), linear(query), rtol=0, atol=1e-12)


def test_grid_detection_ignores_row_order_and_finds_three_dimensions():
    points = grid(np.linspace(0, 1, 3), np.linspace(0, 2, 4), np.linspace(-1, 1, 2))
    points = points[np.random.default_rng(1).permutation(len(points))]
    assert [len(a) for a in grid_axes(points)] == [3, 4, 2]
    interpolate = TableInterpolator(points, linear(points))
    query = np.random.default_rng(2).uniform([0, 0, -1], [1, 2, 1], size=(300, 3))
    np.testing.assert_allclose(interpolate(query), linear(query), rtol=0, atol=1e-12)


def test_grid_clamps_queries_to_its_box():
    points = grid(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    interpolate = TableInterpolator(points, linear(points))
    np.testing.assert_allclose(interpolate(np.array([[2.0, 0.5], [-1.0, -3.0]])),
                               linear(np.array([[1.0, 0.5], [0.0, 0.0]])), rtol=0, atol=1e-12)


def test_scattered_linear_is_exact_inside_the_hull_and_nearest_outside():
    rng = np.random.default_rng(3)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    points = np.concatenate([corners, rng.uniform(0, 1, size=(60, 2))])
    interpolate = TableInterpolator(points, linear(points))
    assert interpolate.layout == "scattered"
    inside = rng.uniform(0, 1, size=(400, 2))
    np.testing.assert_allclose(interpolate(inside), linear(inside), rtol=0, atol=1e-12)
    outside = np.array([[1.5, 1.2], [-0.3, 0.0]])  # nearest rows: the corners (1, 1) and (0, 0)
    np.testing.assert_allclose(interpolate(outside), linear(np.array([[1.0, 1.0], [0.0, 0.0]])), rtol=0, atol=0)


def test_one_coordinate_is_np_interp():
    xp = np.array([0.3, -1.0, 2.0, 0.0])  # unsorted rows
    fp = np.array([1.0, 4.0, -2.0, 0.5])
    interpolate = TableInterpolator(xp[:, None], fp)
    query = np.linspace(-2, 3, 41)
    order = np.argsort(xp)
    np.testing.assert_array_equal(interpolate(query[:, None]), np.interp(query, xp[order], fp[order]))


def test_nearest_takes_the_closest_row():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.9, 0.9]])
    values = np.array([10.0, 20.0, 30.0, 40.0])
    interpolate = TableInterpolator(points, values, "nearest")
    query = np.array([[0.1, 0.1], [0.6, 0.1], [0.1, 0.7], [0.6, 0.6], [5.0, 5.0], [1.0, 0.4]])
    np.testing.assert_array_equal(interpolate(query), [10.0, 20.0, 30.0, 40.0, 40.0, 20.0])


def test_points_on_a_line_cannot_be_triangulated():
    points = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    with pytest.raises(ValueError, match="method = nearest"):
        TableInterpolator(points, np.arange(4.0))


# ------------------------------------------------------------------ columns and files


def columns_of(path, space=("x", "y"), time=None, column=None):
    return table_columns(read_file_columns(path), space, time, column)


def test_columns_by_name_ignoring_case_and_in_any_order(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["kappa", "Y", "X"], [[1, 0, 0], [2, 0, 1], [3, 1, 0], [4, 1, 1]])
    assert columns_of(path) == TableColumns(("x", "y"), ("X", "Y"), "kappa")
    points, values = load_table(path, columns_of(path))
    np.testing.assert_array_equal(points, [[0, 0], [1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(values, [1, 2, 3, 4])


def test_a_time_column_makes_a_space_time_table(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["x", "t", "k"], [[0, 0, 1], [1, 0, 2], [0, 1, 3], [1, 1, 4]])
    assert columns_of(path, ("x",), "t") == TableColumns(("x", "t"), ("x", "t"), "k")
    with pytest.raises(TableColumnError, match="several value columns"):  # a steady spec: t is not a coordinate
        columns_of(path, ("x",))


def test_columns_by_order_when_none_is_named(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["a", "b", "c"], [[0, 0, 1], [1, 0, 2], [0, 1, 3]])
    assert columns_of(path) == TableColumns(("x", "y"), ("a", "b"), "c")
    path = write_csv(tmp_path / "kt.csv", ["a", "b", "c", "d"], [[0, 0, 0, 1]])
    assert columns_of(path, time="t") == TableColumns(("x", "y", "t"), ("a", "b", "c"), "d")


def test_column_chooses_among_several_value_columns(tmp_path):
    path = write_csv(tmp_path / "k.csv", ["x", "y", "k", "q"], [[0, 0, 1, 5]])
    with pytest.raises(TableColumnError, match='several value columns .k, q.: choose one with column = "k"'):
        columns_of(path)
    assert columns_of(path, column="Q").value_column == "q"
    with pytest.raises(TableColumnError, match="no column 'r'") as info:
        columns_of(path, column="r")
    assert info.value.argument == "column"


def test_comsol_export_is_a_table(tmp_path):
    path = tmp_path / "kappa.dat"
    path.write_text("% Model: k.mph\n% Dimension: 2\n% Nodes: 4\n% Expressions: 1\n"
                    "% X                 Y                 kappa (W/m/K)\n0 0 0.5\n1 0 2\n0 1 -1.5\n1 1 0\n")
    columns = columns_of(path)
    assert columns.value_column.startswith("kappa")
    interpolate = table_interpolator(path, columns, "linear")
    query = np.array([[0.25, 0.5], [0.5, 0.5]])
    np.testing.assert_allclose(interpolate(query), linear(query), rtol=0, atol=1e-12)


def test_npz_table(tmp_path):
    points = grid(np.linspace(0, 1, 4), np.linspace(0, 1, 3))
    np.savez(tmp_path / "k.npz", x=points[:, 0], y=points[:, 1], k=linear(points))
    interpolate = table_interpolator(tmp_path / "k.npz", columns_of(tmp_path / "k.npz"), "linear")
    query = np.random.default_rng(4).uniform(0, 1, size=(50, 2))
    np.testing.assert_allclose(interpolate(query), linear(query), rtol=0, atol=1e-12)


def test_same_file_same_values(tmp_path):
    rng = np.random.default_rng(5)
    points = rng.uniform(0, 1, size=(40, 2))
    path = write_csv(tmp_path / "k.csv", ["x", "y", "k"], np.column_stack([points, np.sin(3 * points[:, 0])]))
    query = rng.uniform(-0.2, 1.2, size=(200, 2))
    first = TableInterpolator(*load_table(path, columns_of(path)))(query)
    again = TableInterpolator(*load_table(path, columns_of(path)))(query)
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("rows,phrase", [
    ([[0, 0, 1], [1, 0, float("nan")], [0, 1, 2]], ":3: column 3 ('k'): expected a finite number, found 'nan'"),
    ([[0, 0, 1], [1, 0, 2], [1, 0, 3], [0, 1, 4]], "two rows at the same point (x = 1, y = 0)"),
    ([[0, 0, 1], [0, 1, 2]], "k.csv: every row has"),
])
def test_bad_rows(tmp_path, rows, phrase):
    path = write_csv(tmp_path / "k.csv", ["x", "y", "k"], rows)
    with pytest.raises(ValueError) as info:
        load_table(path, columns_of(path))
    assert phrase in str(info.value)
