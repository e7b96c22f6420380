"""Interior points: inside, exact counts, uniform, deterministic; areas and volumes by Monte Carlo."""

import math

import numpy as np
import pytest

from pinnspec.geometry import Ball, Box, HalfSpace, Polygon, estimate_measure, sample_interior
from pinnspec.registry import SAMPLERS

import pinnspec.sampling  # noqa: F401, E402  (registers the samplers)


def _lens_area(radius, separation):
    """The area of the union of two disks of ``radius`` whose centres are ``separation`` apart."""
    half = separation / 2
    overlap = 2 * radius ** 2 * math.acos(half / radius) - 2 * half * math.sqrt(radius ** 2 - half ** 2)
    return 2 * math.pi * radius ** 2 - overlap


def _cases(plate_area):
    return [
        ("plate with 4 holes", None, plate_area),
        ("L-shape", Box([0, 0], [1, 1]) - Box([0.5, 0.5], [1, 1]), 0.75),
        ("5-D unit ball", Ball([0] * 5, 1), math.pi ** 2.5 / math.gamma(3.5)),
        ("triangle", Polygon([(0, 0), (2, 0), (0, 1)]), 1.0),
        ("two disks", Ball([0, 0], 1) + Ball([1, 0], 1), _lens_area(1, 1)),
        ("half disk", Ball([0, 0], 1) & HalfSpace([0, 1], 0), math.pi / 2),
        ("cut cube", Box([0, 0, 0], [1, 1, 1]) & HalfSpace([1, 1, 1], 1.5), 0.5),
        ("ball shell", Ball([0, 0, 0], 1) - Ball([0, 0, 0], 0.5), 4 / 3 * math.pi * (1 - 0.125)),
        ("interval minus a hole", Box(0, 1) - Ball(0.5, 0.1), 0.8),
    ]


@pytest.mark.parametrize("case", range(9))
def test_measure_by_monte_carlo_matches_the_exact_value(case, plate):
    name, shape, exact = _cases(plate[1])[case]
    shape = plate[0] if shape is None else shape
    n = 200_000
    lo, hi = shape.bounds()
    box_volume = float(np.prod(hi - lo))
    fraction = exact / box_volume
    standard_error = box_volume * math.sqrt(fraction * (1 - fraction) / n)
    estimate = estimate_measure(shape, n, np.random.default_rng(case))
    assert abs(estimate - exact) < 4.5 * standard_error + 1e-12, (name, estimate, exact)


def _sampler(name):
    """The registered sampler ``name`` (None: independent uniform draws)."""
    return None if name is None else SAMPLERS.get(name)()


def test_a_samplers_name_is_resolved_by_the_caller():
    with pytest.raises(TypeError, match=r"pass a sampler, e.g. pinnspec.registry.SAMPLERS.get\('lhs'\)\(\)"):
        sample_interior(Box([0, 0], [1, 1]), 10, np.random.default_rng(0), sampler="lhs")


@pytest.mark.parametrize("sampler", [None, "uniform", "lhs", "sobol", "halton", "hammersley", "grid"])
def test_interior_points_are_strictly_inside_with_the_exact_count(sampler, plate):
    for shape in (plate[0], Ball([0, 0, 0], 1) - Ball([0.5, 0, 0], 0.3), Polygon([(0, 0), (2, 0), (0, 1)])):
        x = sample_interior(shape, 1234, np.random.default_rng(7), sampler=_sampler(sampler))
        assert x.shape == (1234, shape.dim) and x.dtype == np.float64
        assert np.all(shape.sdf(x) < 0)
        assert len(np.unique(x, axis=0)) == 1234


def test_interior_points_fill_the_domain_uniformly(l_shape):
    # each of the three unit quarters of the L-shape holds a third of the points (binomial, 4.5 sigma)
    n = 30_000
    for sampler in (None, "hammersley"):
        x = sample_interior(l_shape, n, np.random.default_rng(3), sampler=_sampler(sampler))
        quarter = (x[:, 0] > 0.5).astype(int) + 2 * (x[:, 1] > 0.5)  # 0, 1, 2 (3 is the notch)
        counts = np.bincount(quarter, minlength=4)
        assert counts[3] == 0
        assert np.all(np.abs(counts[:3] - n / 3) < 4.5 * math.sqrt(n * (1 / 3) * (2 / 3))), counts


def test_interior_area_fraction_of_a_sub_region_matches_its_area(plate):
    shape, area, _ = plate
    n = 40_000
    x = sample_interior(shape, n, np.random.default_rng(11))
    upper_half = np.mean(x[:, 1] > 0)  # two holes in each half: half of the area
    near_hole = np.mean(np.linalg.norm(x - [0.3, 0.3], axis=1) < 0.2)  # annulus 0.1 < r < 0.2 around hole1
    annulus = math.pi * (0.2 ** 2 - 0.1 ** 2) / area
    assert abs(upper_half - 0.5) < 4.5 * math.sqrt(0.25 / n)
    assert abs(near_hole - annulus) < 4.5 * math.sqrt(annulus * (1 - annulus) / n)


@pytest.mark.parametrize("sampler", [None, "lhs", "sobol", "hammersley"])
def test_same_generator_same_points_other_generator_other_points(sampler, plate):
    shape = plate[0]
    a = sample_interior(shape, 500, np.random.default_rng([4, 2]), sampler=_sampler(sampler))
    b = sample_interior(shape, 500, np.random.default_rng([4, 2]), sampler=_sampler(sampler))
    c = sample_interior(shape, 500, np.random.default_rng([4, 3]), sampler=_sampler(sampler))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_sampler_instance_or_callable_is_used_as_given():
    calls = []

    def corner_quarter(n, k, rng):  # only the lower-left quarter of the unit cube
        calls.append((n, k))
        return 0.5 * rng.random((n, k))

    x = sample_interior(Box([0, 0], [2, 2]), 100, np.random.default_rng(0), sampler=corner_quarter)
    assert calls and all(k == 2 for _, k in calls)
    assert x.shape == (100, 2) and np.all(x < 1.0)
    y = sample_interior(Box([0, 0], [2, 2]), 100, np.random.default_rng(0), sampler=SAMPLERS.get("halton")())
    assert y.shape == (100, 2)


def test_a_batch_short_of_points_is_replaced_by_a_larger_fresh_one():
    # a sampler that puts only 1 point in 10 inside the disk (vs pi/4 expected) forces redraws
    def mostly_in_a_corner(n, k, rng):
        u = rng.random((n, k))
        u[: 9 * n // 10] *= 0.1  # the corner [0, 0.1]^2 lies outside the disk of radius 1/2 at (1/2, 1/2)
        return u

    x = sample_interior(Ball([0.5, 0.5], 0.5), 2000, np.random.default_rng(0), sampler=mostly_in_a_corner)
    assert x.shape == (2000, 2) and np.all(Ball([0.5, 0.5], 0.5).sdf(x) < 0)


def test_a_sampler_that_never_reaches_the_shape_is_reported():
    def corner_only(n, k, rng):
        return np.zeros((n, k))  # the bounding box's corner, outside the disk

    with pytest.raises(RuntimeError, match="only 0 of 50 points fell inside .* does the sampler"):
        sample_interior(Ball([0, 0], 1), 50, np.random.default_rng(0), sampler=corner_only)


def test_zero_points_and_bad_counts():
    assert sample_interior(Ball([0, 0], 1), 0, np.random.default_rng(0)).shape == (0, 2)
    with pytest.raises(ValueError, match="whole number >= 0"):
        sample_interior(Ball([0, 0], 1), -3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="whole number >= 0"):
        sample_interior(Ball([0, 0], 1), 2.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least one point"):
        estimate_measure(Ball([0, 0], 1), 0, np.random.default_rng(0))


def test_a_shape_with_nothing_inside_is_refused():
    covered = Box([0, 0], [1, 1]) - Box([-1, -1], [2, 2])
    with pytest.raises(ValueError, match="looks empty"):
        sample_interior(covered, 10, np.random.default_rng(0))


def test_a_sampler_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"returned shape \(5, 3\)"):
        sample_interior(Box([0, 0], [1, 1]), 3, np.random.default_rng(0), sampler=lambda n, k, rng: np.zeros((5, 3)))
