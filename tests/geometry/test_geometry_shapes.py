"""Shapes: exact signed distance and measure of the primitives, the sign of combinations, bounds, refusals."""

import math

import numpy as np
import pytest

from pinnspec.geometry import Ball, Box, Difference, HalfSpace, Intersection, Polygon, Union


# ------------------------------------------------------------------ signed distance of primitives


def test_box_signed_distance_at_known_points():
    box = Box([0, 0], [2, 1])
    x = np.array([[1, 0.5], [0.2, 0.5], [3, 0.5], [3, 2], [-1, -1], [2, 1], [1, 1]])
    expected = [-0.5, -0.2, 1.0, math.sqrt(2), math.sqrt(2), 0.0, 0.0]
    np.testing.assert_allclose(box.sdf(x), expected, atol=1e-15)
    np.testing.assert_array_equal(box.inside(x), [True, True, False, False, False, False, False])


def test_ball_signed_distance_in_several_dimensions():
    np.testing.assert_allclose(Ball([1, 1], 2).sdf(np.array([[1, 1], [1, 4], [3, 1]])), [-2, 1, 0], atol=1e-15)
    np.testing.assert_allclose(Ball([0, 0, 0, 0, 0], 1).sdf(np.array([[3, 4, 0, 0, 0]])), [4.0])
    # an interval as a 1-D ball and as a 1-D box: the same distance everywhere
    x = np.linspace(-1, 2, 31)[:, None]
    np.testing.assert_allclose(Ball(0.5, 0.5).sdf(x), Box(0, 1).sdf(x), atol=1e-15)


@pytest.mark.parametrize("block", [None, 40])
def test_polygon_signed_distance_equals_the_box_it_traces_in_either_orientation(block, monkeypatch):
    if block:  # points taken 10 at a time (40 // 4 edges): the same answer
        monkeypatch.setattr("pinnspec.geometry._shapes.POLYGON_BLOCK", block)
    x = np.random.default_rng(0).uniform(-1, 3, (2003, 2))
    box = Box([0, 0], [2, 1])
    counter_clockwise = Polygon([(0, 0), (2, 0), (2, 1), (0, 1)])
    clockwise = Polygon([(0, 0), (0, 1), (2, 1), (2, 0)])
    np.testing.assert_allclose(counter_clockwise.sdf(x), box.sdf(x), atol=1e-14)
    np.testing.assert_allclose(clockwise.sdf(x), box.sdf(x), atol=1e-14)
    assert clockwise.sdf(np.empty((0, 2))).shape == (0,)


def test_polygon_signed_distance_of_a_non_convex_polygon_at_known_points():
    l_polygon = Polygon([(0, 0), (1, 0), (1, 0.5), (0.5, 0.5), (0.5, 1), (0, 1)])
    x = np.array([[0.25, 0.25], [0.75, 0.75], [0.75, 0.6], [0.6, 0.75], [1.5, 0.5], [0.5, 0.5], [0.75, 0.25]])
    expected = [-0.25, 0.25, 0.1, 0.1, 0.5, 0.0, -0.25]
    np.testing.assert_allclose(l_polygon.sdf(x), expected, atol=1e-15)


def test_half_space_is_stored_normalised_and_gives_the_distance_to_its_plane():
    half = HalfSpace([3, 4], 10)  # 3x + 4y <= 10: distance (3x + 4y - 10) / 5
    assert half.normal == (0.6, 0.8) and half.offset == 2.0
    assert half == HalfSpace([0.6, 0.8], 2)
    np.testing.assert_allclose(half.sdf(np.array([[0, 0], [2, 1], [6, 8]])), [-2, 0, 8], atol=1e-15)
    assert half.measure() == math.inf


# ------------------------------------------------------------------ measure of primitives


@pytest.mark.parametrize("shape, exact", [
    (Box(-1, 2), 3.0),
    (Box([0, 0], [2, 3]), 6.0),
    (Box([0, 0, 0], [1, 2, 3]), 6.0),
    (Ball(0, 1.5), 3.0),
    (Ball([0, 0], 2), 4 * math.pi),
    (Ball([0, 0, 0], 2), 4 / 3 * math.pi * 8),
    (Ball([0] * 5, 1), math.pi ** 2.5 / math.gamma(3.5)),
    (Polygon([(0, 0), (1, 0), (1, 0.5), (0.5, 0.5), (0.5, 1), (0, 1)]), 0.75),
    (Polygon([(0, 1), (0.5, 0.5), (0.5, 1), (0, 1.5)][::-1]), 0.25),
])
def test_measure_of_primitives_by_formula(shape, exact):
    assert shape.measure() == pytest.approx(exact, rel=1e-14)


# ------------------------------------------------------------------ combinations


def _random_points(dim, count=4000, seed=1):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, (count, dim))


def test_combinations_are_inside_exactly_where_the_set_operations_say():
    a, b = Ball([0, 0], 1), Box([0, -0.5], [1.2, 0.5])
    x = _random_points(2)
    in_a, in_b = a.inside(x), b.inside(x)
    np.testing.assert_array_equal((a + b).inside(x), in_a | in_b)
    np.testing.assert_array_equal((a & b).inside(x), in_a & in_b)
    np.testing.assert_array_equal((a - b).inside(x), in_a & ~in_b)
    assert isinstance(a + b, Union) and isinstance(a - b, Difference) and isinstance(a & b, Intersection)
    # boundary points of b inside a are on the boundary of a - b, not inside it
    on_rim = np.array([[0, 0], [0.5, 0.5], [0.5, -0.5]])
    np.testing.assert_array_equal((a - b).sdf(on_rim), [0, 0, 0])
    assert not np.any((a - b).inside(on_rim))


def test_difference_depth_is_exact_inside_and_a_lower_bound_outside():
    from scipy.spatial import cKDTree

    from pinnspec.geometry import sample_boundary

    square_with_notch = Box([-1, -1], [1, 1]) - Ball([1, 0], 0.5)  # the disk cuts the right edge
    rim, _, _ = sample_boundary(square_with_notch, 60_000, np.random.default_rng(0))  # a dense boundary
    x = np.random.default_rng(1).uniform(-1.3, 1.3, (300, 2))
    nearest = cKDTree(rim).query(x)[0]  # [300]: the distance to the boundary
    sdf = square_with_notch.sdf(x)
    inside = sdf < 0
    assert inside.sum() > 100 and (~inside).sum() > 50
    np.testing.assert_allclose(-sdf[inside], nearest[inside], atol=2e-3)  # exact (up to the boundary's spacing)
    assert np.all(sdf[~inside] <= nearest[~inside] + 2e-3)  # never more than the distance
    assert np.any(sdf[~inside] < nearest[~inside] - 0.05)  # and at places less (beyond the notch)


def test_shapes_are_values_equal_by_parameters_and_names_do_not_count():
    assert Box([0, 0], [1, 1]) == Box((0.0, 0.0), np.array([1, 1]), name="other")
    assert hash(Ball([0, 0], 1) - Box([0, 0], [1, 1])) == hash(Ball((0, 0), 1.0) - Box([0, 0], [1, 1]))
    assert Ball([0, 0], 1) + Box([0, 0], [1, 1]) != Box([0, 0], [1, 1]) + Ball([0, 0], 1)
    assert Polygon([[0, 0], [1, 0], [0, 1]]).vertices == ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0))


def test_bounds_of_primitives_and_combinations():
    def bounds(shape):
        return [list(v) for v in shape.bounds()]

    assert bounds(Box([0, 1], [2, 3])) == [[0, 1], [2, 3]]
    assert bounds(Ball([1, 1], 0.5)) == [[0.5, 0.5], [1.5, 1.5]]
    assert bounds(Polygon([(0, 0), (2, 1), (1, 3)])) == [[0, 0], [2, 3]]
    assert bounds(Box([0, 0], [1, 1]) + Ball([2, 0], 0.5)) == [[0, -0.5], [2.5, 1]]
    assert bounds(Box([0, 0], [1, 1]) & Ball([1, 1], 0.5)) == [[0.5, 0.5], [1, 1]]
    assert bounds(Box([0, 0], [1, 1]) - Ball([1, 1], 0.5)) == [[0, 0], [1, 1]]
    assert bounds(Box([0, 0], [1, 1]) & HalfSpace([1, 1], 1)) == [[0, 0], [1, 1]]
    assert Ball([0, 0, 0], 1).dim == 3 and Box(0, 1).dim == 1 and (Box(0, 1) - Ball(0.5, 0.1)).dim == 1


# ------------------------------------------------------------------ refusals


def test_unbounded_shapes_refuse_bounds_and_sampling():
    from pinnspec.geometry import sample_boundary, sample_interior

    for shape in (HalfSpace([1, 0], 0), HalfSpace([1, 0], 0) + Box([0, 0], [1, 1]), HalfSpace([1, 0], 0) & HalfSpace([0, 1], 0)):
        with pytest.raises(ValueError, match="unbounded.*intersect it with a bounded shape"):
            shape.bounds()
        with pytest.raises(ValueError, match="unbounded"):
            sample_interior(shape, 10, np.random.default_rng(0))
        with pytest.raises(ValueError, match="unbounded"):
            sample_boundary(shape, 10, np.random.default_rng(0))


def test_empty_intersection_is_refused():
    with pytest.raises(ValueError, match="empty"):
        (Box([0, 0], [1, 1]) & Ball([3, 3], 1)).bounds()


@pytest.mark.parametrize("build, message", [
    (lambda: Polygon([(0, 0), (1, 1), (1, 0), (0, 1)]),
     r"not simple: edge 0 \(0, 0\) -> \(1, 1\) and edge 2 \(1, 0\) -> \(0, 1\) cross at \(0.5, 0.5\)"),
    (lambda: Polygon([(0, 0), (2, 0), (2, 2), (1, 0), (0, 2)]), r"not simple: edge 0 .* and edge 2 .* cross at \(1, 0\)"),
    (lambda: Polygon([(0, 0), (1, 0)]), "at least 3 vertices, got 2"),
    (lambda: Polygon([(0, 0), (1, 1), (2, 2)]), "zero area"),
    (lambda: Polygon([(0, 0), (1, 0), (1, 1), (0, 0)]), r"vertices 3 and 0 are equal .*do not close the chain"),
    (lambda: Polygon([(0, 0, 0), (1, 0, 0), (0, 1, 0)]), r"\(x, y\) pairs \(2-D only\)"),
    (lambda: Box([0, 1], [1, 0]), r"axis 1 has lo = 1, hi = 0 \(swap them\)"),
    (lambda: Box([0, 0], [1, 0]), "positive width"),
    (lambda: Box([0, 0], [1, 1, 1]), "lo has 2 coordinates and hi has 3"),
    (lambda: Box([0, float("nan")], [1, 1]), "finite"),
    (lambda: Ball([0, 0], 0), "radius must be > 0"),
    (lambda: Ball([0, 0], "big"), "radius must be a number"),
    (lambda: HalfSpace([0, 0], 1), "zero vector"),
    (lambda: Box([0, 0], [1, 1]) - Ball([0, 0, 0], 1), "cannot combine a 2-D shape with a 3-D shape"),
    (lambda: Box([0, 0], [1, 1]) + "disk", None),
    (lambda: Box([0, 0], [1, 1], name=3), "name must be a string"),
])
def test_bad_shapes_are_refused_with_what_was_wrong(build, message):
    if message is None:
        with pytest.raises(TypeError):
            build()
        return
    with pytest.raises(ValueError, match=message):
        build()


def test_points_of_the_wrong_shape_are_refused():
    with pytest.raises(ValueError, match=r"\[N, 2\] array for a 2-D shape, got shape \(3,\)"):
        Box([0, 0], [1, 1]).sdf(np.zeros(3))
    with pytest.raises(ValueError, match=r"\[N, 3\]"):
        (Ball([0, 0, 0], 1) - Ball([0, 0, 0], 0.5)).inside(np.zeros((4, 2)))
