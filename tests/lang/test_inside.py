"""`inside(SHAPE)`: a piecewise constant by region, 1 inside a declared shape and 0 outside.  Checked against the
geometry's own signed distance (pinnspec.geometry: `sdf < 0` inside) at random points away from the boundary, for
a box, a disk, a half-space and a convex polygon, in a `let` (lowered before the shapes) and in a condition; the
derivative across a jump is 0 away from it."""

import numpy as np
import pytest
import sympy

from pinnspec import geometry
from pinnspec.lang import SpecError, loads

HEAD = "problem regions\nspace x in [0, 1], y in [0, 1]\nfield u\n"
SHAPES = {
    "core": ("disk(center = (0.5, 0.5), radius = 0.25)", geometry.Ball((0.5, 0.5), 0.25)),
    "slab": ("box(lo = (0.1, 0.2), hi = (0.4, 0.9))", geometry.Box((0.1, 0.2), (0.4, 0.9))),
    "half": ("halfspace(normal = (1, 1), offset = 1)", geometry.HalfSpace((1, 1), 1)),
    "tri": ("polygon(vertices = ((0.1, 0.1), (0.9, 0.2), (0.3, 0.8)))",
            geometry.Polygon(((0.1, 0.1), (0.9, 0.2), (0.3, 0.8)))),
}
X, Y = sympy.symbols("x y", real=True)


@pytest.mark.parametrize("name", SHAPES)
def test_inside_is_the_shapes_indicator(name):
    text, shape = SHAPES[name]
    spec = loads(HEAD + f"let k = 1 + 9*inside({name})\nshape {name} = {text}\n"
                 f"equation pde: u = k + 2*inside({name})\n")
    (residual,) = spec.ir.condition("pde").residuals
    u = spec.ir.field_function("u")
    value = sympy.lambdify((X, Y), -residual.subs(u, 0), modules="numpy")
    points = np.random.default_rng(0).uniform(0, 1, size=(2000, 2))  # [2000, 2]
    distance = shape.sdf(points)
    away = np.abs(distance) > 1e-6
    want = np.where(distance < 0, 12.0, 1.0)
    assert np.array_equal(value(points[:, 0], points[:, 1])[away], want[away])


def test_the_derivative_of_a_piecewise_constant_is_zero_away_from_its_jump():
    spec = loads(HEAD + "shape core = disk(center = (0.5, 0.5), radius = 0.25)\nlet k = 1 + 9*inside(core)\n"
                 "equation pde: d(k*u_x, x) + d(k*u_y, y) = 1\n")
    (residual,) = spec.ir.condition("pde").residuals
    u = spec.ir.field_function("u")
    assert not residual.has(sympy.DiracDelta)
    assert sympy.simplify(residual - ((1 + 9 * residual.atoms(sympy.Heaviside).pop()) *
                                      (u.diff(X, 2) + u.diff(Y, 2)) - 1)) == 0


@pytest.mark.parametrize("line, message", [
    ("equation pde: u = inside(cor)", "inside() takes a declared shape, and 'cor' is none; did you mean 'core'?"),
    ("equation pde: u = inside(core, core)", "inside() takes one declared shape"),
    ("shape l = polygon(vertices = ((0, 0), (1, 0), (1, 1), (0.5, 0.5), (0, 1)))\nlet k = inside(l)\n"
     "equation pde: u = k", "inside(l): 'l' is not a box, a disk or ball, a half-space or a convex polygon"),
])
def test_bad_uses_are_located_errors(line, message):
    with pytest.raises(SpecError) as err:
        loads(HEAD + "shape core = disk(center = (0.5, 0.5), radius = 0.25)\n" + line + "\n", filename="r.pinn")
    assert message in err.value.render() and "r.pinn:" in err.value.render()
