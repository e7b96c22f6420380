"""A table read at transformed coordinates: a file on [0, 1]^2 used on [-1, 1]^2 with
``table(..., at = ((x + 1)/2, (y + 1)/2))``.  The file holds a linear function, so linear interpolation is exact
and the oracle is that function at the transformed point; `verify` passes the exact solution through it."""

import numpy as np
import pytest

import pinnspec
from pinnspec.compiler._verify import verify
from pinnspec.lang import SpecError

SPEC = """problem shifted
space x in [-1, 1], y in [-1, 1]
field u
let a = table("unit.csv", at = ((x + 1)/2, (y + 1)/2))
let ustar = x*y + 1 + (x + 1)/2 + 2*(y + 1)/2
equation pde: u - a = x*y
boundary walls on boundary: u = ustar
exact u = ustar
points pde 200, walls 40
"""


def write_unit_table(folder, n=5):
    """unit.csv: 1 + X + 2Y on an n x n grid of [0, 1]^2 (columns x, y: the file's own coordinates)."""
    axis = np.linspace(0, 1, n)
    x, y = (a.reshape(-1) for a in np.meshgrid(axis, axis, indexing="ij"))
    rows = "\n".join(f"{xi!r},{yi!r},{1 + xi + 2 * yi!r}" for xi, yi in zip(x.tolist(), y.tolist()))
    (folder / "unit.csv").write_text("x,y,a\n" + rows + "\n")


def test_the_table_is_read_at_the_transformed_point(tmp_path):
    write_unit_table(tmp_path)
    spec = pinnspec.loads(SPEC, filename=str(tmp_path / "shifted.pinn"))
    assert "read at (x/2 + 1/2, y/2 + 1/2)" in str(spec.ir.tables[0])
    problem = pinnspec.compile(spec)
    points = np.random.default_rng(0).uniform(-1, 1, size=(100, 2))  # [100, 2] on [-1, 1]^2
    want = 1 + (points[:, 0] + 1) / 2 + 2 * (points[:, 1] + 1) / 2
    assert np.allclose(problem.table_values("a", points), want, rtol=0, atol=1e-12)
    assert all(c.passed for c in verify(problem, seed=0))


def test_one_expression_per_coordinate(tmp_path):
    write_unit_table(tmp_path)
    with pytest.raises(SpecError) as err:
        pinnspec.loads(SPEC.replace("at = ((x + 1)/2, (y + 1)/2)", "at = ((x + 1)/2)"),
                       filename=str(tmp_path / "shifted.pinn"))
    assert "table(at = ...) gives 1 expression(s), but the table spans 2 coordinate(s) (x, y)" in err.value.render()
    with pytest.raises(SpecError) as err:
        pinnspec.loads(SPEC.replace("at = ((x + 1)/2, (y + 1)/2)", "at = (u, y)"),
                       filename=str(tmp_path / "shifted.pinn"))
    assert "shifted.pinn:4:" in err.value.render()
