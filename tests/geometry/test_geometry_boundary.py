"""Boundary parts and boundary points: on their part, outward unit normals, uniform by length, exact counts."""

import math
import time

import numpy as np
import pytest
from scipy import stats

from pinnspec.geometry import (Ball, Box, HalfSpace, Polygon, boundary_parts, part_measures, parts_named,
                               sample_boundary, sample_interior)


def _check_points_on_parts(shape, points, normals, part_index, fd_gradient):
    """Every point on its part's primitive boundary (1e-9) and on the shape's boundary (1e-6), with a unit
    normal equal to the finite-difference gradient of its primitive's distance (reversed where subtracted)."""
    parts = boundary_parts(shape)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    assert np.all(np.abs(shape.sdf(points)) < 1e-6)
    for index in np.unique(part_index):
        part = parts[index]
        x, normal = points[part_index == index], normals[part_index == index]
        assert np.all(np.abs(part.primitive.sdf(x)) < 1e-9), part.label
        gradient = fd_gradient(part.primitive.sdf, x)
        expected = -gradient if part.flipped else gradient
        np.testing.assert_allclose(normal, expected, atol=1e-6, err_msg=part.label)


def _shapes():
    return {
        "plate": None,  # the fixture's
        "L-shape": Box([0, 0], [1, 1]) - Box([0.5, 0.5], [1, 1]),
        "two disks": Ball([0, 0], 1) + Ball([1, 0], 1),
        "triangle": Box([0, 0], [1, 1]) & HalfSpace([1, 1], 1),
        "polygon minus disk": Polygon([(0, 0), (2, 0), (2, 1), (1, 2), (0, 1)]) - Ball([2, 1], 0.5),
        "clockwise polygon minus box": Polygon([(0, 0), (0, 2), (3, 0)]) - Box([-1, -1], [0.5, 0.5]),
        "shell in 3-D": Ball([0, 0, 0], 1) - Box([-0.3, -0.3, -0.3], [0.3, 0.3, 0.3]),
        "cube minus a ball cutting a corner": Box([0, 0, 0], [1, 1, 1]) - Ball([1, 1, 1], 0.5),
        "hole in a hole": Box([0, 0], [4, 4]) - (Ball([2, 2], 1.5) - Ball([2, 2], 0.5)),
        "interval minus hole": Box(0, 1) - Ball(0.5, 0.1),
    }


@pytest.mark.parametrize("name", list(_shapes()))
def test_boundary_points_lie_on_their_parts_with_outward_unit_normals(name, plate, fd_gradient):
    shape = _shapes()[name] or plate[0]
    points, normals, part_index = sample_boundary(shape, 3001, np.random.default_rng(5))
    assert points.shape == normals.shape == (3001, shape.dim) and part_index.shape == (3001,)
    assert points.dtype == normals.dtype == np.float64
    _check_points_on_parts(shape, points, normals, part_index, fd_gradient)
    # outward: a short step along the normal leaves the domain, a step against it enters it
    assert np.all(shape.sdf(points + 1e-4 * normals) > 0)
    assert np.all(shape.sdf(points - 1e-4 * normals) < 0)


def test_the_normal_on_a_holes_rim_points_into_the_hole(plate):
    shape = plate[0]
    points, normals, part_index = sample_boundary(shape, 400, np.random.default_rng(0), parts=parts_named(shape, "hole2"))
    assert np.all(part_index == parts_named(shape, "hole2")[0].index)
    towards_center = (np.array([0.3, -0.3]) - points) / 0.1
    np.testing.assert_allclose(normals, towards_center, atol=1e-12)


def test_parts_of_a_combination_name_their_primitive_face_and_flip(l_shape, plate):
    parts = boundary_parts(l_shape)
    assert [(p.primitive.name, p.face, p.flipped, p.path) for p in parts] == (
        [("square", f, False, (0,)) for f in range(4)] + [("notch", f, True, (1,)) for f in range(4)])
    assert parts[5].label == ("notch, high face of axis 0 (x[0] = 1) (subtracted: normal reversed)")
    assert [p.index for p in parts] == list(range(8)) and boundary_parts(l_shape) == parts
    holes = [p for p in boundary_parts(plate[0]) if p.primitive.name.startswith("hole")]
    assert [p.path for p in holes] == [(0, 0, 0, 1), (0, 0, 1), (0, 1), (1,)] and all(p.face is None for p in holes)
    assert [p.flipped for p in boundary_parts(Box([0, 0], [4, 4]) - (Ball([2, 2], 1.5) - Ball([2, 2], 0.5)))] == \
        [False] * 4 + [True, False]  # the hole in the hole faces out of it again
    polygon_parts = boundary_parts(Polygon([(0, 0), (1, 0), (0, 1)], name="tri"))
    assert [p.face for p in polygon_parts] == [0, 1, 2] and "edge 1 (1, 0) -> (0, 1)" in polygon_parts[1].label


def test_counts_are_exact_and_split_by_measure(plate):
    shape, _, perimeter = plate
    for n in (0, 1, 7, 2000, 2003):
        points, normals, part_index = sample_boundary(shape, n, np.random.default_rng(n))
        assert len(points) == len(normals) == len(part_index) == n
    # the square's 4 sides have length 1, each hole's rim 2 pi 0.1: 2000 points split by largest remainders
    counts = np.bincount(sample_boundary(shape, 2000, np.random.default_rng(0))[2], minlength=8)
    quota = 2000 * np.array([1.0] * 4 + [2 * math.pi * 0.1] * 4) / perimeter
    assert counts.sum() == 2000 and np.all(np.abs(counts - quota) < 1)
    np.testing.assert_allclose(part_measures(shape), [1.0] * 4 + [2 * math.pi * 0.1] * 4, rtol=1e-14)


def test_same_generator_same_points_other_generator_other_points(l_shape):
    a = sample_boundary(l_shape, 600, np.random.default_rng([9, 1]))
    b = sample_boundary(l_shape, 600, np.random.default_rng([9, 1]))
    c = sample_boundary(l_shape, 600, np.random.default_rng([9, 2]))
    for first, second in zip(a, b):
        np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(a[2], c[2])  # the split across parts does not depend on the generator
    assert not np.any(np.all(a[0] == c[0], axis=1))


def test_disk_rim_is_uniform_in_angle():
    center = np.array([0.2, -0.1])
    points, normals, _ = sample_boundary(Ball(center, 0.7), 16_000, np.random.default_rng(2))
    angle = np.arctan2(points[:, 1] - center[1], points[:, 0] - center[0])
    counts = np.histogram(angle, bins=16, range=(-math.pi, math.pi))[0]
    assert stats.chisquare(counts).pvalue > 1e-3, counts
    np.testing.assert_allclose(np.linalg.norm(points - center, axis=1), 0.7, atol=1e-15)


def test_a_clipped_rim_keeps_a_uniform_density_on_what_remains():
    # a disk cut by the square's right side: the arc inside x < 1 is the boundary there
    shape = Box([-1, -1], [1, 1]) - Ball([1, 0], 0.5)
    points, _, part_index = sample_boundary(shape, 20_000, np.random.default_rng(3))
    rim = points[part_index == 4]
    angle = np.arctan2(rim[:, 1], rim[:, 0] - 1)  # the arc kept: angles in (pi/2, 3 pi/2)
    angle = np.where(angle < 0, angle + 2 * math.pi, angle)
    assert angle.min() > math.pi / 2 and angle.max() < 3 * math.pi / 2
    counts = np.histogram(angle, bins=10, range=(math.pi / 2, 3 * math.pi / 2))[0]
    assert stats.chisquare(counts).pvalue > 1e-3, counts
    # the right side keeps its two pieces outside the disk: length 1 of 2
    assert part_measures(shape)[1] == pytest.approx(1.0, rel=0.02)
    assert part_measures(shape)[4] == pytest.approx(math.pi * 0.5, rel=0.02)


def _l_shape_edges(points):
    """Which of the L-shape's six edges each point lies on ``[n]`` (-1: none)."""
    x, y = points[:, 0], points[:, 1]
    edges = [(y == 0), (x == 0), (y == 1) & (x <= 0.5), (x == 1) & (y <= 0.5),
             (x == 0.5) & (y >= 0.5), (y == 0.5) & (x >= 0.5)]
    assert np.all(np.sum(edges, axis=0) <= 2)  # a corner may be on two edges (never drawn in practice)
    which = np.full(len(points), -1)
    for number, on_edge in enumerate(edges):
        which[on_edge & (which < 0)] = number
    return which


def test_l_shape_edges_get_points_in_proportion_to_length_and_none_off_the_l(l_shape):
    n = 12_000
    points, _, _ = sample_boundary(l_shape, n, np.random.default_rng(4))
    edge = _l_shape_edges(points)
    assert np.all(edge >= 0), points[edge < 0][:5]  # nothing on the removed sides x = 1, y > 1/2 or y = 1, x > 1/2
    counts = np.bincount(edge, minlength=6)
    lengths = np.array([1, 1, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(counts / n, lengths / 4, rtol=0.02)
    # uniform along the bottom edge too
    bottom = np.histogram(points[edge == 0, 0], bins=10, range=(0, 1))[0]
    assert stats.chisquare(bottom).pvalue > 1e-3, bottom
    np.testing.assert_allclose(part_measures(l_shape), [1, 0.5, 1, 0.5, 0.5, 0, 0.5, 0], atol=0.01)
    assert sum(part_measures(l_shape)) == pytest.approx(4.0, rel=0.01)


def test_shared_faces_are_sampled_once_and_internal_walls_not_at_all():
    # side by side (a wall at x = 1 between them) and overlapping (the bottom y = 0 shared on 1 < x < 2)
    touching = Box([0, 0], [1, 1]) + Box([1, 0], [2, 1])
    overlapping = Box([0, 0], [2, 1]) + Box([1, 0], [3, 1])
    common = Box([0, 0], [1, 1]) & Box([0, 0], [2, 1])  # shares three sides with the same normal
    # faces wholly on or wholly off the boundary measure exactly; faces cut short by Monte Carlo
    for shape, perimeter, tolerance in ((touching, 6.0, 1e-12), (overlapping, 8.0, 0.01), (common, 4.0, 1e-12)):
        assert sum(part_measures(shape)) == pytest.approx(perimeter, rel=tolerance)
    # shared up to rounding (a slanted edge on a plane, a circle on itself): still once, from the left operand
    triangle = Polygon([(0, 0), (1, 0), (0, 1)]) & HalfSpace([1, 1], 1)
    np.testing.assert_allclose(part_measures(triangle), [1, math.sqrt(2), 1, 0], rtol=1e-12)
    np.testing.assert_allclose(part_measures(Ball([0.1, 0.2], 0.3) + Ball([0.1, 0.2], 0.3)), [0.6 * math.pi, 0])
    points, _, _ = sample_boundary(touching, 6000, np.random.default_rng(0))
    assert not np.any(np.abs(points[:, 0] - 1) < 1e-12)
    points, _, _ = sample_boundary(overlapping, 8000, np.random.default_rng(0))
    bottom = points[points[:, 1] == 0, 0]
    counts = np.histogram(bottom, bins=3, range=(0, 3))[0]  # 1000 each: the shared third is not doubled
    assert np.all(np.abs(counts - 1000) < 4.5 * math.sqrt(1000 * 2 / 3)), counts


def test_measures_of_clipped_parts_match_exact_lengths():
    # two unit disks 1 apart: each keeps 2/3 of its rim (the arc outside the other spans 240 degrees)
    two_disks = Ball([0, 0], 1) + Ball([1, 0], 1)
    np.testing.assert_allclose(part_measures(two_disks), [4 * math.pi / 3] * 2, rtol=0.01)
    triangle = Box([0, 0], [1, 1]) & HalfSpace([1, 1], 1)
    np.testing.assert_allclose(part_measures(triangle), [1, 0, 1, 0, math.sqrt(2)], rtol=0.01, atol=0)
    points, normals, part_index = sample_boundary(triangle, 1000, np.random.default_rng(0), parts=[4])
    np.testing.assert_allclose(points.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(normals, np.full((1000, 2), math.sqrt(0.5)), atol=1e-15)
    assert np.all(part_index == 4) and np.all((points >= 0) & (points <= 1))
    # surface of a cube with a ball of radius 1/2 cut out of a corner: 3 faces lose a quarter disk,
    # and an eighth of the sphere bounds the cut
    corner = Box([0, 0, 0], [1, 1, 1]) - Ball([1, 1, 1], 0.5)
    area = 6 - 3 * math.pi * 0.25 / 4 + 4 * math.pi * 0.25 / 8
    assert sum(part_measures(corner)) == pytest.approx(area, rel=0.01)


def test_intervals_have_point_faces_with_normals_along_the_line():
    shape = Box(0, 1) - Ball(0.5, 0.1)
    points, normals, part_index = sample_boundary(shape, 8, np.random.default_rng(0))
    np.testing.assert_array_equal(part_index, [0, 0, 1, 1, 2, 2, 2, 2])  # measures 1, 1, 2 (the hole's 2 ends)
    by_place = {round(float(p), 9): float(n) for p, n in zip(points[:, 0], normals[:, 0])}
    assert by_place[0.0] == -1 and by_place[1.0] == 1
    assert set(by_place) <= {0.0, 1.0, 0.4, 0.6} and by_place.get(0.4, 1) == 1 and by_place.get(0.6, -1) == -1


def test_a_primitive_alone_has_exact_part_measures_and_all_its_points():
    cube = Box([0, 0, 0], [1, 2, 3])
    np.testing.assert_allclose(part_measures(cube), [6, 6, 3, 3, 2, 2])
    sphere = Ball([0, 0, 0], 2)
    np.testing.assert_allclose(part_measures(sphere), [16 * math.pi])
    points, normals, _ = sample_boundary(sphere, 3000, np.random.default_rng(1))
    # uniform on the sphere: z is uniform on [-r, r] (Archimedes)
    assert stats.kstest(points[:, 2], stats.uniform(loc=-2, scale=4).cdf).pvalue > 1e-3
    np.testing.assert_allclose(normals, points / 2, atol=1e-15)


# ------------------------------------------------------------------ selecting parts and refusals


def test_selected_parts_get_all_the_points(plate):
    shape = plate[0]
    rim = parts_named(shape, "hole1")
    points, normals, part_index = sample_boundary(shape, 300, np.random.default_rng(0), parts=rim)
    assert np.all(part_index == rim[0].index)
    np.testing.assert_allclose(np.linalg.norm(points - [0.3, 0.3], axis=1), 0.1, atol=1e-15)
    by_index = sample_boundary(shape, 300, np.random.default_rng(0), parts=[rim[0].index])
    np.testing.assert_array_equal(by_index[0], points)
    sides = parts_named(shape, "plate")
    _, _, part_index = sample_boundary(shape, 1000, np.random.default_rng(0), parts=sides[2:])
    np.testing.assert_array_equal(np.bincount(part_index, minlength=4)[2:], [500, 500])


def test_a_hole_entirely_outside_the_box_is_refused_by_name():
    shape = Box([-0.5, -0.5], [0.5, 0.5]) - Ball([2, 2], 0.1, name="hole1")
    with pytest.raises(ValueError, match="the boundary of hole1 lies nowhere on the boundary of the shape"):
        sample_boundary(shape, 100, np.random.default_rng(0))
    assert part_measures(shape)[4] == 0
    covered = Box([0, 0], [1, 1]) + Ball([0.5, 0.5], 0.2, name="inner")  # entirely inside the other operand
    with pytest.raises(ValueError, match="inner lies nowhere"):
        sample_boundary(covered, 100, np.random.default_rng(0))
    # a face cut away entirely is fine while the rest of its primitive is on the boundary...
    narrowed = Box([0, 0], [1, 1], name="outer") - Box([0.5, -1], [2, 2])
    points, _, part_index = sample_boundary(narrowed, 300, np.random.default_rng(0))
    assert np.all(part_index != 1) and np.all(points[:, 0] <= 0.5)
    # ...but not when it is all that is asked for
    with pytest.raises(ValueError, match=r"the parts outer, high face of axis 0 .* lies nowhere"):
        sample_boundary(narrowed, 300, np.random.default_rng(0), parts=[1])


def test_bad_part_selections_are_refused(plate, l_shape):
    with pytest.raises(ValueError, match=r"no primitive of the shape is called 'hole9' \(named: hole1, hole2"):
        parts_named(plate[0], "hole9")
    with pytest.raises(ValueError, match="not a part of this shape"):
        sample_boundary(plate[0], 10, np.random.default_rng(0), parts=[boundary_parts(l_shape)[4]])
    with pytest.raises(ValueError, match=r"indices 0..7"):
        sample_boundary(l_shape, 10, np.random.default_rng(0), parts=[8])
    with pytest.raises(ValueError, match="selected twice"):
        sample_boundary(l_shape, 10, np.random.default_rng(0), parts=[0, 0])
    with pytest.raises(ValueError, match="no parts are selected"):
        sample_boundary(l_shape, 10, np.random.default_rng(0), parts=[])
    with pytest.raises(ValueError, match="whole number >= 0"):
        sample_boundary(l_shape, -1, np.random.default_rng(0))


# ------------------------------------------------------------------ speed


def test_four_hole_plate_samples_fast_even_the_first_time(plate):
    from pinnspec.geometry import _boundary, _interior

    _boundary._part_measures.cache_clear()  # the first call estimates what it caches
    _interior._filled_fraction.cache_clear()
    shape = plate[0]
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    interior = sample_interior(shape, 10_000, rng)
    boundary = sample_boundary(shape, 2_000, rng)
    elapsed = time.perf_counter() - start
    assert interior.shape == (10_000, 2) and boundary[0].shape == (2_000, 2)
    assert elapsed < 0.5, f"{elapsed:.3f} s"
