"""`enforce` on domains with re-entrant corners: the trimmed distance to a segment (Sukumar & Srivastava 2022)
against analytic values, the brute-force distance and finite differences; the transforms of L-shapes, steps,
unions and polygons vanish on every enforced part, are positive inside and reproduce the data; the plane
distances stay where they work; what is still refused says why."""

import numpy as np
import pytest
import sympy

from pinnspec import geometry
from pinnspec.lang import SpecError, loads
from pinnspec.lang._enforce import _open_ends, segment_distance
from pinnspec.sampling import sample_region

X = sympy.symbols("x y", real=True)
#: an oblique segment, so no term of the formula vanishes by symmetry
START, END = np.array([0.2, -0.3]), np.array([1.1, 0.5])
LENGTH = float(np.linalg.norm(END - START))


def _phi(expr=None):
    return sympy.lambdify(X, segment_distance(X, START, END) if expr is None else expr, modules="numpy")


def _distance_to_segment(points):  # [n, 2] -> [n]: brute force over 200,001 points of the segment
    s = np.linspace(0, 1, 200_001)
    segment = START + s[:, None] * (END - START)  # [m, 2]
    return np.array([np.min(np.linalg.norm(segment - p, axis=1)) for p in points])


def test_the_trimmed_distance_vanishes_on_its_segment_and_is_positive_elsewhere():
    rng = np.random.default_rng(0)
    on = START + rng.random((500, 1)) * (END - START)  # [500, 2]
    assert np.abs(_phi()(*on.T)).max() < 1e-15
    off = rng.uniform(-1, 2, (5000, 2))  # [5000, 2]
    values = _phi()(*off.T)
    assert np.all(values > 0)
    # swapping the ends changes only the sign of f
    np.testing.assert_allclose(values, sympy.lambdify(X, segment_distance(X, END, START))(*off.T), rtol=1e-12)


def test_the_trimmed_distance_on_the_line_beyond_an_end_is_s_plus_s_squared_over_l():
    direction = (END - START) / LENGTH
    s = np.array([1e-3, 0.1, 0.5, 2.0])
    for beyond in (END + s[:, None] * direction, START - s[:, None] * direction):
        np.testing.assert_allclose(_phi()(*beyond.T), s + s ** 2 / LENGTH, rtol=1e-12)


def test_near_the_inside_of_the_segment_it_is_the_distance_with_a_unit_normal_derivative():
    direction = (END - START) / LENGTH
    normal = np.array([-direction[1], direction[0]])
    feet = START + np.linspace(0.1, 0.9, 9)[:, None] * (END - START)  # [9, 2]
    for h in (1e-2, 1e-4):
        for side in (1, -1):
            points = feet + side * h * normal
            np.testing.assert_allclose(_phi()(*points.T), _distance_to_segment(points), rtol=1e-6)
            np.testing.assert_allclose(_phi()(*points.T), h, rtol=1e-9)
    # the one-sided derivative along the normal at the segment is 1 (second-order one-sided differences)
    h = 1e-5
    slope = (-3 * _phi()(*feet.T) + 4 * _phi()(*(feet + h * normal).T) - _phi()(*(feet + 2 * h * normal).T)) / (2 * h)
    np.testing.assert_allclose(slope, 1.0, atol=1e-8)


def test_sympys_first_and_second_derivatives_match_finite_differences_off_the_segment():
    phi = segment_distance(X, START, END)
    rng = np.random.default_rng(1)
    points = rng.uniform(-1, 2, (40, 2))
    points = points[_distance_to_segment(points) > 0.05]  # [k, 2], away from the segment and its ends
    h = 1e-4
    for i, xi in enumerate(X):
        step = np.eye(2)[i] * h
        up, down = points + step, points - step
        first = _phi(sympy.diff(phi, xi))(*points.T)
        second = _phi(sympy.diff(phi, xi, 2))(*points.T)
        np.testing.assert_allclose(first, (_phi()(*up.T) - _phi()(*down.T)) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(second, (_phi()(*up.T) - 2 * _phi()(*points.T) + _phi()(*down.T)) / h ** 2,
                                   atol=2e-4)
    mixed = _phi(sympy.diff(phi, *X))(*points.T)
    corners = [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    fd = sum(a * b * _phi()(*(points + h * np.array([a, b])).T) for a, b in corners) / (4 * h * h)
    np.testing.assert_allclose(mixed, fd, atol=2e-4)


def test_at_an_end_the_gradient_is_bounded_and_the_second_derivatives_grow_like_one_over_r():
    phi = segment_distance(X, START, END)
    gradient = [_phi(sympy.diff(phi, xi)) for xi in X]
    laplacian = _phi(sympy.diff(phi, X[0], 2) + sympy.diff(phi, X[1], 2))
    angle = np.linspace(0.1, 2 * np.pi - 0.1, 7)
    around = np.stack([np.cos(angle), np.sin(angle)], axis=1)  # [7, 2]
    sizes = []
    for r in (1e-2, 1e-4):
        points = END + r * around
        assert np.all(np.hypot(*(g(*points.T) for g in gradient)) <= 1.1)
        sizes.append(np.abs(laplacian(*points.T)).max())
    assert 50 < sizes[1] / sizes[0] < 200  # r / 100 -> 100 times larger
    # 0/0 at the end itself (on the boundary): NaN where it rounds to exact zeros, as for (1, 0) of [(0, 0), (1, 0)]
    unit = sympy.diff(segment_distance(X, (0, 0), (1, 0)), X[0])
    with np.errstate(all="ignore"):
        assert np.isnan(_phi(unit)(1.0, 0.0))


L_SHAPE = """problem l
space x in [-1, 1], y in [-1, 1]
{shapes}
field u
equation pde: lap(u) = 4
{conditions}
points pde 256, {points}
enforce {enforced}
"""


def _spec(shapes, conditions, enforced="walls"):
    names = [line.split()[1] for line in conditions.splitlines()]
    return loads(L_SHAPE.format(shapes=shapes, conditions=conditions, enforced=enforced,
                                points=", ".join(f"{n} 64" for n in names)))


def _has_sqrt(expr):
    return any(p.exp == sympy.Rational(1, 2) for p in expr.atoms(sympy.Pow))


NOTCH = "shape notch = box(lo = (0, -1), hi = (1, 0))\ndomain L = box - notch"
STEP = "shape step = box(lo = (0.5, -1), hi = (1, -0.2))\ndomain S = box - step"
POLYGON = "shape ell = polygon(vertices = ((-1, -1), (0, -1), (0, 0), (1, 0), (1, 1), (-1, 1)))\ndomain L = ell"
# a channel past a step, as PINNacle's NS2d-CG: the inlet's profile is 0 where it meets the wall y = -1 and
# the step, and -8 where the lines x = -1 and y = 1 cross, inside the step; the box's faces x = -1 and y = 1,
# cut short by the step, are blended as parts, so their data need not agree there
CHANNEL = "shape step = box(lo = (-1, 0), hi = (0, 1))\ndomain C = box - step"
CHANNEL_WALLS = ("boundary inlet on x = -1: u = -4*(y + 1)*y\nboundary walls on y = -1, y = 1: u = 0\n"
                 "boundary block on step: u = 0")
UNION = ("shape a = box(lo = (-1, -1), hi = (0.5, 0.2))\nshape b = box(lo = (-0.2, -0.5), hi = (1, 1))\n"
         "domain U = a + b")
WALLS = "boundary walls on boundary: u = x^2 + y^2 + x*y"


@pytest.mark.parametrize("shapes, conditions, enforced", [
    (NOTCH, WALLS, "walls"),
    (STEP, WALLS, "walls"),
    (POLYGON, WALLS, "walls"),
    (UNION, WALLS, "walls"),
    # three conditions: the box's faces by the Boolean sum, the notch's parts as one group, blended
    (NOTCH, "boundary sides on x = -1, x = 1: u = 1 + y^2 + x*y\nboundary ends on y = -1, y = 1: u = x^2 + 1 + x*y\n"
            "boundary cut on notch: u = x^2 + y^2 + x*y", "sides, ends, cut"),
    (CHANNEL, CHANNEL_WALLS, "inlet, walls, block"),
], ids=["L-shape", "step", "polygon", "union", "L-shape, three conditions", "channel past a step"])
def test_re_entrant_corners_build_their_dirichlet_conditions_in(shapes, conditions, enforced):
    spec = _spec(shapes, conditions, enforced)
    p = spec.ir
    (h,) = p.hard_constraints
    assert h.conditions == tuple(n.strip() for n in enforced.split(","))
    assert _has_sqrt(h.distance)  # a trimmed distance is in it
    symbols = [c.symbol for c in p.coordinates]
    extension, distance = (sympy.lambdify(symbols, e, modules="numpy") for e in (h.extension, h.distance))
    rng = np.random.default_rng(5)
    for name in h.conditions:
        condition = next(c for c in p.conditions if c.name == name)
        points = sample_region(condition.region, p.coordinates, 2000, "uniform", rng).x  # [2000, 2]
        data = sympy.lambdify(symbols, p.field_function("u") - condition.residuals[0], modules="numpy")
        assert np.abs(distance(*points.T)).max() < 1e-12, name
        # the blend of several groups lifts each distance by 1e-12 (CORNER_LIFT): A moves by about 1e-12 / d
        np.testing.assert_allclose(extension(*points.T), data(*points.T), rtol=1e-9, atol=1e-10, err_msg=name)
    inside = geometry.sample_interior(p.domain.shape, 20_000, rng)  # [20000, 2]
    assert np.all(distance(*inside.T) > 0)


def test_a_trimmed_face_stays_trimmed_only_where_its_line_enters_the_domain():
    # the L's notch face y = 0 runs from the re-entrant corner (0, 0), where its line runs on into the L, to
    # (1, 0), where it leaves the box: that end moves out by the box's diagonal, so the distance's cone (second
    # derivatives like 1/r) is at the re-entrant corner alone
    shape = _spec(NOTCH, WALLS).ir.domain.shape
    start, end = _open_ends(shape, np.array([0.0, 0.0]), np.array([1.0, 0.0]))
    np.testing.assert_array_equal(start, [0.0, 0.0])
    np.testing.assert_allclose(end, [1.0 + np.sqrt(8.0), 0.0])
    # a face whose line enters the domain at both ends keeps both: the middle third of a slit's edge
    slit = _spec("shape slit = box(lo = (-0.5, -0.1), hi = (0.5, 0.1))\ndomain S = box - slit", WALLS).ir.domain.shape
    start, end = _open_ends(slit, np.array([-0.5, 0.1]), np.array([0.5, 0.1]))
    np.testing.assert_array_equal(start, [-0.5, 0.1])
    np.testing.assert_array_equal(end, [0.5, 0.1])
    lap = _phi(sympy.diff(segment_distance(X, start, end), X[0], 2) + sympy.diff(segment_distance(X, start, end),
                                                                                 X[1], 2))
    opened = segment_distance(X, *_open_ends(shape, np.array([0.0, 0.0]), np.array([1.0, 0.0])))
    lap_opened = _phi(sympy.diff(opened, X[0], 2) + sympy.diff(opened, X[1], 2))
    for r in (1e-2, 1e-3, 1e-4):  # beside the moved end: bounded; beside a kept end: like 1/r
        assert abs(lap_opened(1.0 - r, r)) < 10
        assert abs(lap(0.5 + r, 0.1 + r)) > 0.1 / r


def test_the_trimmed_distance_is_used_only_for_faces_whose_plane_crosses_the_domain():
    # a convex polygon and a plate with a hole keep their plane and sphere distances (no square root)
    triangle = _spec("shape tri = polygon(vertices = ((-1, -1), (1, -1), (0, 1)))\ndomain T = tri", WALLS)
    hole = _spec("shape hole = disk(center = (0.2, 0.1), radius = 0.3)\ndomain P = box - hole",
                 "boundary rim on hole: u = 1\nboundary outer on box: u = x*y", "rim, outer")
    for spec in (triangle, hole):
        (h,) = spec.ir.hard_constraints
        assert not _has_sqrt(h.distance) and not _has_sqrt(h.extension)
    # in the L-shape, the notch's two faces are trimmed (a segment each); the box's faces are not
    (h,) = _spec(NOTCH, WALLS).ir.hard_constraints
    roots = [f for f in sympy.Mul.make_args(h.distance) if _has_sqrt(f)]
    assert len(roots) == 2


def test_what_has_no_trimmed_distance_is_refused_with_the_reason():
    three_d = """problem l3
space x in [-1, 1], y in [-1, 1], z in [0, 1]
shape notch = box(lo = (0, -1, 0), hi = (1, 0, 1))
domain L = box - notch
field u
equation pde: lap(u) = 0
boundary cut on notch: u = 0
enforce cut
"""
    # a disk sticking out of a rectangle: its circle crosses the union, and circles are not trimmed
    for text, part in [(three_d, "notch, low face of axis 0"),
                       (L_SHAPE.format(shapes="shape a = box(lo = (-1, -1), hi = (0.5, 1))\n"
                                       "shape disc = disk(center = (0.5, 0), radius = 0.4)\ndomain U = a + disc",
                                       conditions="boundary rim on disc: u = 0", points="rim 64", enforced="rim"),
                        "of disc changes")]:
        with pytest.raises(SpecError) as err:
            loads(text)
        message = str(err.value)
        assert "changes sign inside the domain" in message and "flat faces in 2-D" in message
        assert part in message and "keep the condition as a loss" in message
