"""Reading data conditions: CSV and NPZ, columns by name, clear errors."""

import numpy as np
import pytest

from pinnspec import ir
from pinnspec.sampling import load_data

COORDS = (ir.Coordinate("x", 0, 1), ir.Coordinate("t", 0, 1, is_time=True))


def test_csv_columns_picked_by_name(tmp_path):
    path = tmp_path / "obs.csv"
    path.write_text("u, t ,x,v\n1.5,0.25,0.1,9\n-2,0.5,0.2,9\n3e-1,0.75,0.3,9\n")
    x, obs = load_data(path, COORDS, ("u",))
    np.testing.assert_array_equal(x, [[0.1, 0.25], [0.2, 0.5], [0.3, 0.75]])
    np.testing.assert_array_equal(obs, [[1.5], [-2.0], [0.3]])
    assert x.dtype == obs.dtype == np.float64
    x, obs = load_data(str(path), ("t",), ("v", "u"))  # names work as coordinates too
    assert x.shape == (3, 1) and obs.shape == (3, 2)


def test_csv_single_row(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("x,t,u\n0.5,0.5,1\n")
    x, obs = load_data(path, COORDS, ("u",))
    assert x.shape == (1, 2) and obs.shape == (1, 1)


def test_npz_arrays_by_column_name(tmp_path):
    path = tmp_path / "obs.npz"
    rng = np.random.default_rng(0)
    cols = {"x": rng.random(20), "t": rng.random((20, 1)), "u": rng.random(20), "w": rng.random(20)}
    np.savez(path, **cols)
    x, obs = load_data(path, COORDS, ("w", "u"))
    np.testing.assert_array_equal(x, np.stack([cols["x"], cols["t"][:, 0]], axis=1))
    np.testing.assert_array_equal(obs, np.stack([cols["w"], cols["u"]], axis=1))


@pytest.mark.parametrize("suffix", ["csv", "npz"])
def test_missing_column_names_the_file_and_the_column(tmp_path, suffix):
    path = tmp_path / f"obs.{suffix}"
    if suffix == "csv":
        path.write_text("x,u\n0.1,1\n")
    else:
        np.savez(path, x=np.zeros(3), u=np.zeros(3))
    with pytest.raises(ValueError) as err:
        load_data(path, COORDS, ("u",))
    assert str(path) in str(err.value) and "'t'" in str(err.value) and "x, u" in str(err.value)
    with pytest.raises(ValueError, match="no column 'v'"):
        load_data(path, ("x",), ("v",))


def test_other_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_data(tmp_path / "nope.csv", COORDS, ("u",))
    bad = tmp_path / "bad.csv"
    bad.write_text("x,t,u\n0.1,0.2\n")
    with pytest.raises(ValueError, match="bad.csv"):
        load_data(bad, COORDS, ("u",))
    nan = tmp_path / "nan.csv"
    nan.write_text("x,t,u\n0.1,0.2,nan\n")
    with pytest.raises(ValueError, match=r"nan.csv:2: column 3 \('u'\): expected a finite number, found 'nan'"):
        load_data(nan, COORDS, ("u",))
    nan_npz = tmp_path / "nan.npz"
    np.savez(nan_npz, x=np.zeros(3), t=np.zeros(3), u=np.array([0, np.inf, 1]))
    with pytest.raises(ValueError, match="the column 'u' has a non-finite value \\(inf\\) at position 2 of 3"):
        load_data(nan_npz, COORDS, ("u",))
    uneven = tmp_path / "uneven.npz"
    np.savez(uneven, x=np.zeros(3), t=np.zeros(3), u=np.zeros(4))
    with pytest.raises(ValueError, match="different lengths"):
        load_data(uneven, COORDS, ("u",))
    notzip = tmp_path / "fake.npz"
    notzip.write_text("x,t,u\n")
    with pytest.raises(ValueError, match="fake.npz"):
        load_data(notzip, COORDS, ("u",))


def test_comsol_export_as_a_data_file(tmp_path):
    path = tmp_path / "obs.dat"
    path.write_text("% Dimension: 1\n% Nodes: 2\n% X  u (1) @ t=0  u (1) @ t=0.5\n0.1 1 2\n0.2 3 4\n")
    x, obs = load_data(path, COORDS, ("u",))
    np.testing.assert_array_equal(x, [[0.1, 0], [0.2, 0], [0.1, 0.5], [0.2, 0.5]])
    np.testing.assert_array_equal(obs, [[1], [3], [2], [4]])
    with pytest.raises(ValueError, match="no column 'v'"):  # a named file is matched by name only
        load_data(path, COORDS, ("v",))
