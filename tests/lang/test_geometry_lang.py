"""Geometry in the language: shapes, the domain and boundaries on its parts.

The parsed tree of a CSG spec is compared with a golden file; the lowered
domain is compared with the same shape built directly with pinnspec.geometry
(the oracle for which boundary parts a selector names), and ``dn`` on a curved
part with the normal written out by hand.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from pinnspec.geometry import boundary_parts
import sympy

from pinnspec import geometry, ir
from pinnspec.lang import load, loads, parse
from pinnspec.lang._show import format_ast, format_ir

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
PLATE = DATA / "plate_csg.pinn"


def test_csg_spec_parses_to_the_golden_tree():
    text = format_ast(parse(PLATE.read_text(), "plate_csg.pinn")) + "\n"
    golden = GOLDEN / "ast__plate_csg.txt"
    if os.environ.get("PINNSPEC_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def test_intersection_binds_tighter_than_union_and_difference():
    tree = parse("problem p\ndomain d = a - b & c + (e - f)\n")
    assert format_ast(tree).splitlines()[5].strip().startswith("expr: (+ (- a (& b c)) (- e f))")


def _oracle_plate():
    box = geometry.Box([-0.5, -0.5], [0.5, 0.5], name="box")
    hole1 = geometry.Ball([0.3, 0.3], 0.1, name="hole1")
    hole2 = geometry.Ball([-0.3, 0.3], 0.1, name="hole2")
    lower = geometry.HalfSpace([0, 1], 0.45, name="lower")
    notch = geometry.Polygon([(-0.1, -0.5), (0.1, -0.5), (0, -0.3)], name="notch")
    return ((box - hole1 - hole2) & lower) - notch  # Python binds - tighter than &; the language the reverse


def test_domain_lowers_to_the_shape_built_directly():
    problem = load(PLATE).ir
    shape = _oracle_plate()
    assert problem.domain.shape == shape
    assert problem.domain.expression == "(box - hole1 - hole2) & lower - notch"
    assert [n for n, _ in problem.domain.shapes] == ["hole1", "hole2", "lower", "notch"]
    # names travel with the primitives (they are not part of shape equality)
    names = [p.primitive.name for p in boundary_parts(problem.domain.shape)]
    assert names == [p.primitive.name for p in boundary_parts(shape)]
    x = np.random.default_rng(0).uniform(-0.5, 0.5, (2000, 2))
    assert np.array_equal(problem.domain.shape.inside(x), shape.inside(x))


def test_selectors_name_the_parts_on_the_boundary():
    problem = load(PLATE).ir
    shape = _oracle_plate()
    measures = geometry.part_measures(shape)

    def expected(name, face=None):
        return tuple(p.index for p in geometry.parts_named(shape, name)
                     if measures[p.index] > 0 and (face is None or p.face == face))

    regions = {c.name: c.region for c in problem.conditions}
    assert isinstance(regions["laplace"], ir.DomainInterior)
    assert regions["outer"].parts == expected("box")
    assert regions["rims"].parts == expected("hole1") + expected("hole2")
    assert regions["wall"].parts == expected("box", face=0)  # x = lo: face 2*axis
    assert regions["top"].parts == expected("lower")
    assert regions["cut"].parts == expected("notch")
    # the box's top face (y = 0.5) is cut away by `lower` (y <= 0.45): not on the boundary
    assert not any(boundary_parts(shape)[i].face == 3 for i in regions["outer"].parts)
    assert len(expected("notch")) == 2  # the notch's bottom edge lies on the box's: open, not a wall


def test_whole_boundary_of_a_domain_is_every_part_with_length():
    text = PLATE.read_text().replace("boundary outer on box: u = 1", "boundary outer on boundary: u = 1")
    problem = loads(text, "p.pinn").ir
    shape = _oracle_plate()
    measures = geometry.part_measures(shape)
    region = problem.condition("outer").region
    assert region.parts == tuple(p.index for p in boundary_parts(shape) if measures[p.index] > 0)
    assert region.on == ("boundary",)
    by_name = loads(text.replace("on boundary:", "on plate:"), "p.pinn").ir.condition("outer").region
    assert by_name.parts == region.parts and by_name.on == ("plate",)


def test_dn_on_a_domain_boundary_is_the_normal_dot_gradient():
    problem = load(PLATE).ir
    x, y = sympy.symbols("x y", real=True)
    u = sympy.Function("u")(x, y)
    n_x, n_y = ir.normal("x"), ir.normal("y")
    expected = n_x * sympy.Derivative(u, x) + n_y * sympy.Derivative(u, y)
    for name in ("rims", "wall"):
        (residual,) = problem.condition(name).residuals
        assert sympy.simplify(residual - expected) == 0
        assert problem.condition(name).face_residuals is None


def test_domain_with_time_uses_the_domain_for_the_initial_slice():
    text = ("problem p\nspace x in [0, 1], y in [0, 1]\ntime t in [0, 1]\n"
            "shape hole = disk(center = (0.5, 0.5), radius = 0.2)\ndomain plate = box - hole\nfield u\n"
            "equation heat: u_t = lap(u)\ninitial ic: u = 0\nboundary rim on hole: u = 1\n")
    problem = loads(text, "p.pinn").ir
    ic = problem.condition("ic").region
    assert isinstance(ic, ir.DomainInitialSlice) and (ic.time, ic.value) == ("t", 0.0)
    assert ic.domain is problem.domain
    assert "domain plate = box - hole" in format_ir(problem)


def test_lets_give_shape_values_and_one_d_intervals():
    text = ("problem p\nspace x in [0, 2]\nlet a = 0.5\nshape gap = interval(lo = a, hi = 2*a)\n"
            "domain rod = box - gap\nfield u\nequation pde: u_xx = 0\nboundary ends on gap: u = 0\n")
    problem = loads(text, "p.pinn").ir
    assert problem.domain.shape == geometry.Box([0.0], [2.0]) - geometry.Box([0.5], [1.0])
    assert dict(problem.domain.shapes)["gap"] == "interval(lo = 0.5, hi = 1)"


def test_unused_shape_is_warned():
    text = ("problem p\nspace x in [0, 1], y in [0, 1]\nshape hole = disk(center = (0.5, 0.5), radius = 0.2)\n"
            "shape spare = disk(center = (0.2, 0.2), radius = 0.1)\ndomain plate = box - hole\nfield u\n"
            "equation pde: lap(u) = 0\n")
    spec = loads(text, "p.pinn")
    assert [w.message for w in spec.warnings] == ["the shape 'spare' is not part of the domain 'plate' (= box - hole)"]


@pytest.mark.parametrize("text,expected", [
    ("a - b - c", "a - b - c"),
    ("a - (b - c)", "a - (b - c)"),
    ("(a + b) & c", "(a + b) & c"),
    ("a + b & c", "a + b & c"),
])
def test_domain_expression_is_printed_with_the_parentheses_it_needs(text, expected):
    from pinnspec.lang._geometry import _expression

    (statement,) = [s for s in parse(f"problem p\ndomain d = {text}\n").statements if s.keyword == "domain"]
    assert _expression(statement.expr) == expected
