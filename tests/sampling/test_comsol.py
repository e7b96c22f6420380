"""COMSOL text exports: steady and wide time-dependent files read to long form,
located errors, column matching by name or order, and the shipped PINNacle files."""

import re
from pathlib import Path

import numpy as np
import pytest

from pinnspec import ir
from pinnspec.sampling._comsol import read_comsol, read_comsol_header
from pinnspec.sampling._data import load_data, load_reference, match_columns, read_columns, read_file_columns

SHIPPED = Path(__file__).resolve().parents[2] / "benchmarks" / "pinnacle" / "ref"
X = ir.Coordinate("x", 0, 1)
Y = ir.Coordinate("y", 0, 1)
T = ir.Coordinate("t", 0, 1, is_time=True)

STEADY = """\
% Model:              tiny.mph
% Version:            COMSOL 6.0.0.354
% Dimension:          2
% Nodes:              3
% Expressions:        2
% Description:        Dependent variable u, pressure
% Length unit:        m
% X                       Y                        u (1)                    p (Pa)
0                         0                        1.5                      -2
0.5                       0.25                     2.5                      3e-1
1                         1                        -1E-3                    4
"""

NODES = (0.0, 0.5, 1.0)
TIMES = (0.0, 0.1, 0.25)


def u_at(node: float, time: float) -> float:
    return 10 * time + node


def v_at(node: float, time: float) -> float:
    return -100 * time - 2 * node


def wide_text(interleaved: bool = True) -> str:
    """x, then u and v at three times: u@t0 v@t0 u@t1 v@t1 ... (interleaved)
    or u@t0 u@t1 u@t2 v@t0 ... (grouped by output)."""
    keys = [(name, t) for t in TIMES for name in "uv"] if interleaved else [(name, t) for name in "uv" for t in TIMES]
    header = ["% Model:              wide.mph", "% Dimension:          1", "% Nodes:              3",
              f"% Expressions:        {len(keys)}", "% Description:        u, v",
              "% X    " + "    ".join(f"{name} (1) @ t={t}" for name, t in keys)]
    rows = []
    for node in NODES:
        values = [u_at(node, t) if name == "u" else v_at(node, t) for name, t in keys]
        rows.append("  ".join(repr(x) for x in [node] + values))
    return "\n".join(header + rows) + "\n"


def write(tmp_path, text: str, name: str = "table.dat", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def error_of(call, *args) -> str:
    with pytest.raises(ValueError) as err:
        call(*args)
    return str(err.value)


# ------------------------------------------------------------------ steady
def test_steady_file_columns_by_name_units_dropped(tmp_path):
    path = write(tmp_path, STEADY)
    table = read_comsol(path)
    assert table.names == ("x", "y", "u", "p") and table.rows == 3
    np.testing.assert_array_equal(table.columns["x"], [0, 0.5, 1])
    np.testing.assert_array_equal(table.columns["y"], [0, 0.25, 1])
    np.testing.assert_array_equal(table.columns["u"], [1.5, 2.5, -1e-3])
    np.testing.assert_array_equal(table.columns["p"], [-2, 0.3, 4])
    assert all(c.dtype == np.float64 for c in table.columns.values())
    assert table.header.metadata["Model"] == "tiny.mph" and table.header.metadata["Length unit"] == "m"
    assert table.header.sweep is None and table.header.time_column is None
    columns = read_columns(path)  # dispatched by the '%' header
    assert list(columns) == ["x", "y", "u", "p"]
    points, values = load_reference(path, (X, Y), ("p", "u"))
    np.testing.assert_array_equal(points, [[0, 0], [0.5, 0.25], [1, 1]])
    np.testing.assert_array_equal(values, [[-2, 1.5], [0.3, 2.5], [4, -1e-3]])


def test_latin1_and_crlf_header_read(tmp_path):
    text = STEADY.replace("Dependent variable u", "Température").replace("\n", "\r\n")
    table = read_comsol(write(tmp_path, text, encoding="latin-1"))
    assert table.header.metadata["Description"].startswith("Température")
    np.testing.assert_array_equal(table.columns["p"], [-2, 0.3, 4])
    utf8 = read_comsol(write(tmp_path, text.replace("Température", "因变量 u"), "utf8.txt"))
    assert utf8.header.metadata["Description"].startswith("因变量")


def test_single_valued_parameter_is_a_constant_not_a_column(tmp_path):
    text = ("% Dimension: 2\n% x  y  u @ Re=100  v @ Re=100\n"
            "0 0 1 2\n1 0 3 4\n")
    table = read_comsol(write(tmp_path, text))
    assert table.names == ("x", "y", "u", "v") and dict(table.header.constants) == {"Re": 100.0}
    np.testing.assert_array_equal(table.columns["v"], [2, 4])


# -------------------------------------------------------------------- wide
@pytest.mark.parametrize("interleaved", [True, False])
def test_wide_file_expands_to_rows_by_time_then_node(tmp_path, interleaved):
    table = read_comsol(write(tmp_path, wide_text(interleaved)))
    assert table.names == ("x", "t", "u", "v") and table.header.time_column == "t"
    assert table.header.sweep_values == TIMES and table.nodes == 3 and table.rows == 9
    expected_t = np.repeat(TIMES, 3)
    expected_x = np.tile(NODES, 3)
    np.testing.assert_array_equal(table.columns["t"], expected_t)
    np.testing.assert_array_equal(table.columns["x"], expected_x)
    np.testing.assert_array_equal(table.columns["u"], [u_at(x, t) for x, t in zip(expected_x, expected_t)])
    np.testing.assert_array_equal(table.columns["v"], [v_at(x, t) for x, t in zip(expected_x, expected_t)])
    points, values = match_columns(table, (X, T), ("v", "u"))
    np.testing.assert_array_equal(points, np.stack([expected_x, expected_t], axis=1))
    np.testing.assert_array_equal(values[:, 0], table.columns["v"])


def test_parametric_sweep_other_than_time_becomes_a_column(tmp_path):
    text = "% Dimension: 1\n% X  u (1) @ Re=10  u (1) @ Re=20\n0 1 2\n1 3 4\n"
    table = read_comsol(write(tmp_path, text))
    assert table.names == ("x", "Re", "u") and table.header.time_column is None
    np.testing.assert_array_equal(table.columns["Re"], [10, 10, 20, 20])
    np.testing.assert_array_equal(table.columns["u"], [1, 3, 2, 4])


# ------------------------------------------------------------------ errors
def test_bad_value_names_file_line_and_column(tmp_path):
    lines = wide_text().splitlines()
    lines[7] = lines[7].replace(repr(u_at(0.5, 0.1)), "abc", 1)  # line 8: node 0.5, u @ t=0.1 (column 4)
    path = write(tmp_path, "\n".join(lines) + "\n")
    message = error_of(read_comsol, path)
    assert str(path) in message and ":8: column 4 ('u @ t=0.1')" in message and "'abc'" in message
    assert "expected a finite number" in message
    nan = write(tmp_path, STEADY.replace("3e-1", "NaN"), "nan.dat")
    assert ":10: column 4 ('p')" in error_of(read_comsol, nan) and "not finite" in error_of(read_comsol, nan)


def test_row_length_differs_from_the_column_line(tmp_path):
    text = STEADY.replace("0.5                       0.25                     2.5", "0.5 0.25")
    path = write(tmp_path, text)
    message = error_of(read_comsol, path)
    assert str(path) in message and ":10: 3 values" in message and "line 8 names 4 columns" in message


def test_times_must_increase_for_every_output(tmp_path):
    path = write(tmp_path, "% Dimension: 1\n% X  u (1) @ t=0  u (1) @ t=0.2  u (1) @ t=0.1\n0 1 2 3\n")
    message = error_of(read_comsol, path)
    assert str(path) in message and ":2: column 4 ('u (1) @ t=0.1')" in message
    assert "t=0.1 comes after t=0.2" in message and "increasing t" in message
    repeated = write(tmp_path, "% Dimension: 1\n% X  u @ t=0  u @ t=0\n0 1 2\n", "repeated.dat")
    assert "t=0 comes after t=0" in error_of(read_comsol, repeated)


def test_every_output_at_the_same_times(tmp_path):
    path = write(tmp_path, "% Dimension: 1\n% X  u @ t=0  v @ t=0  u @ t=1  v @ t=2\n0 1 2 3 4\n")
    message = error_of(read_comsol, path)
    assert str(path) in message and ":2: " in message
    assert "'v' is not given at the same t values as 'u' (missing t=1; extra t=2)" in message


@pytest.mark.parametrize("text, expected", [
    ("% Dimension: 1\n% Nodes: 2\n% X  u\n0 1\n", "'Nodes: 2' in the header, but the file has 1 rows"),
    ("% Dimension: 1\n% Expressions: 3\n% X  u  v\n0 1 2\n", ":2: 'Expressions: 3', but the column line "
                                                             "(line 3) has 2 output columns"),
    ("% Model: a.mph\n% Dimension: 1\n0 1\n", ":2: expected the last '%' line to name the columns"),
    ("% Dimension: 1\n% X @ t=0  u\n0 1\n", ":2: column 1 ('X @ t=0'): a coordinate column"),
    ("% Dimension: 1\n% X  u @ t=0, Re=1  u @ t=1, Re=2\n0 1 2\n", ":2: the columns sweep t and Re"),
    ("% Dimension: 1\n% X  u @ t=0  v\n0 1 2\n", ":2: column 3 ('v'): expected the same '@' parameters"),
    ("% Dimension: 1\n% X  u  u\n0 1 2\n", ":2: column 3 ('u'): the output 'u' appears twice"),
    ("% Dimension: 1\n% X  u @ t=zero\n0 1\n", ":2: column 2 ('u @ t=zero'): the value of 't' is not a number"),
    ("% Dimension: 3\n% X  Y  u\n0 1 2\n", ":2: 'Dimension: 3', but the column line has 3 columns"),
    ("% Dimension: 1\n% X  u\n0 1\n% Data\n1 2\n", ":4: a '%' line among the number rows"),
    ("% Dimension: 1\n% X  u\n", "no rows after the header"),
])
def test_header_errors_are_located(tmp_path, text, expected):
    path = write(tmp_path, text)
    message = error_of(read_comsol, path)
    assert str(path) in message and expected in message


def test_header_is_read_without_the_rows_the_columns_with_them(tmp_path):
    path = write(tmp_path, wide_text() + "this row is not numbers\n")
    header = read_comsol_header(path)
    assert header.names == ("x", "t", "u", "v") and header.first_data_line == 7 and header.column_line == 6
    assert ":10: 5 values, but line 6 names 7 columns" in error_of(read_comsol, path)
    # the columns of a data file are known once every row is checked: check refuses what training would
    assert error_of(read_file_columns, path) == error_of(read_comsol, path)


# -------------------------------------------------------------- dispatch
def test_dat_and_txt_dispatch_csv_plain_and_comsol(tmp_path):
    csv = write(tmp_path, "x,t,u\n0.1,0.2,0.3\n", "obs.txt")
    assert list(read_columns(csv)) == ["x", "t", "u"]
    plain = write(tmp_path, "0.1 0.2 0.3\n\n0.4  0.5\t0.6\n", "points.dat")
    columns = read_columns(plain)
    assert list(columns) == ["column1", "column2", "column3"]
    np.testing.assert_array_equal(columns["column3"], [0.3, 0.6])
    assert read_file_columns(plain).named is False
    # a plain table has no names: a data condition reads it by order; a named file is never read by order
    x, observed = load_data(plain, (X, Y), ("u",))
    np.testing.assert_array_equal(x, [[0.1, 0.2], [0.4, 0.5]])
    np.testing.assert_array_equal(observed, [[0.3], [0.6]])
    assert "no column 'y'" in error_of(load_data, csv, (X, Y), ("u",))
    ragged = write(tmp_path, "0.1 0.2 0.3\n0.4 0.5\n", "ragged.dat")
    assert ":2: 2 values, but the first row has 3 values" in error_of(read_columns, ragged)


# -------------------------------------------------------------- matching
def test_match_by_name_ignores_case_and_column_order():
    columns = {"U": np.array([1.0, 2.0]), "T": np.array([0.0, 1.0]), "X": np.array([5.0, 6.0])}
    points, values = match_columns(columns, (X, T), ("u",))
    np.testing.assert_array_equal(points, [[5, 0], [6, 1]])
    np.testing.assert_array_equal(values, [[1], [2]])
    both = {"u": np.zeros(2), "U": np.ones(2), "x": np.zeros(2)}
    np.testing.assert_array_equal(match_columns(both, ("x",), ("U",))[1], [[1], [1]])  # the exact name wins
    ambiguous = {"AB": np.zeros(1), "ab": np.zeros(1), "x": np.zeros(1)}
    assert "the columns 'AB', 'ab' all match 'aB' ignoring case" in error_of(match_columns, ambiguous, ("x",), ("aB",))


def test_match_by_order_when_names_differ_and_counts_agree(tmp_path):
    text = "% Dimension: 2\n% R  Z  T (K)\n0 1 300\n2 3 310\n"
    table = read_comsol(write(tmp_path, text))
    points, values = match_columns(table, (X, Y), ("temperature",))
    np.testing.assert_array_equal(points, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(values, [[300], [310]])
    wide = read_comsol(write(tmp_path, wide_text(), "wide.dat"))
    points, values = match_columns(wide, (X, ir.Coordinate("tau", 0, 1, is_time=True)), ("a", "b"))
    np.testing.assert_array_equal(points[:, 1], np.repeat(TIMES, 3))
    np.testing.assert_array_equal(values[:, 1], wide.columns["v"])


def test_match_refuses_order_that_contradicts_the_file(tmp_path):
    wide = read_comsol(write(tmp_path, wide_text()))
    message = error_of(match_columns, wide, (X, T), ("w",))
    assert str(tmp_path) in message and "no column 'w' (the field 'w')" in message
    assert "expected columns named x, t, w" in message and "the file has columns: x, t, u, v" in message
    assert "needs 3 columns, the file has 4" in message
    # 'u' is named in the file but sits where 'w' would be read by order
    message = error_of(match_columns, wide, (X, T), ("w", "u"))
    assert "would read 'u' from column 4 ('v'), but the file's column 'u' is named for it" in message
    np.testing.assert_array_equal(match_columns(wide, (X, T), ("u", "w"))[1][:, 1], wide.columns["v"])  # agrees
    # the file's time column is never read as a space coordinate, nor the time from a space column
    assert "space coordinate 'y' from the file's time column 't'" in error_of(match_columns, wide, (X, Y), ("a", "b"))
    steady = read_comsol(write(tmp_path, STEADY, "steady.dat"))
    assert "needs 1 coordinate columns, the file has 2 (x, y)" in error_of(match_columns, steady, (X,), ("u", "w", "q"))


# ---------------------------------------------------------- shipped files
def data_rows(path: Path) -> list[list[str]]:
    """An independent parse: the non-'%' lines split on whitespace."""
    text = path.read_text(encoding="utf-8")
    return [line.split() for line in text.split("\n") if line.strip() and not line.startswith("%")]


def column_line(path: Path) -> str:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.startswith("%")][-1]


def test_shipped_files_are_there_with_their_licence():
    folder = SHIPPED.parent
    assert "MIT License" in (folder / "LICENSE").read_text() and (folder / "README.md").is_file()
    assert sorted(p.name for p in SHIPPED.glob("*.dat")) == [
        "burgers1d.dat", "heatinv_points.dat", "lid_driven_a4.dat", "ns_0_obstacle.dat", "poisson1_cg_data.dat",
        "poisson_boltzmann2d.dat"]


def test_shipped_burgers_wide_file():
    path = SHIPPED / "burgers1d.dat"
    rows = data_rows(path)
    times = [float(t) for t in re.findall(r"@ t=(\S+)", column_line(path))]
    assert len(rows) == 101 and len(times) == 11 and times[-1] == 1.0
    table = read_comsol(path)
    assert table.names == ("x", "t", "u") and table.rows == 101 * 11
    assert table.header.metadata["Nodes"] == "101" and table.header.metadata["Description"] == "因变量 u"
    points, values = load_reference(path, (ir.Coordinate("x", -1, 1), T), ("u",))
    for node, step in [(0, 0), (1, 1), (37, 4), (100, 10), (50, 7)]:
        row = step * 101 + node
        assert points[row, 0] == float(rows[node][0]) and points[row, 1] == times[step]
        assert values[row, 0] == float(rows[node][1 + step])
    # u(x, 0) = -sin(pi x), to the accuracy of the COMSOL solution
    np.testing.assert_allclose(values[:101, 0], -np.sin(np.pi * points[:101, 0]), atol=1e-5)


def test_shipped_steady_files():
    lid = SHIPPED / "lid_driven_a4.dat"
    table = read_comsol(lid)
    rows = data_rows(lid)
    assert table.names == ("x", "y", "u", "v", "p") and table.rows == len(rows) == 10201
    assert dict(table.header.constants) == {"Re": 100.0}
    for node in (1, 5000, 10200):
        assert [table.columns[n][node] for n in table.names] == [float(v) for v in rows[node]]
    poisson = SHIPPED / "poisson1_cg_data.dat"
    points, values = load_reference(poisson, (X, Y), ("u",))
    rows = data_rows(poisson)
    assert points.shape == (1246, 2) and len(rows) == 1246
    assert list(points[700]) + [values[700, 0]] == [float(v) for v in rows[700]]


def test_shipped_plain_points_file():
    path = SHIPPED / "heatinv_points.dat"
    x, observed = load_data(path, (X, Y, T), ())
    rows = data_rows(path)
    assert x.shape == (2500, 3) and observed.shape == (2500, 0) and len(rows) == 2500
    assert list(x[1234]) == [float(v) for v in rows[1234]]
