"""The unit-cube samplers: registered, shapes, ranges, determinism, LHS strata."""

import inspect
import warnings

import numpy as np
import pytest

import pinnspec.sampling as S
from pinnspec.registry import SAMPLERS

NAMES = ["lhs", "uniform", "sobol", "halton", "grid", "hammersley"]
RANDOM = ["lhs", "uniform", "sobol", "halton"]


def make(name, **options):
    return SAMPLERS.get(name)(**options)


def test_registered_with_no_required_arguments():
    for name in NAMES:
        assert name in SAMPLERS
        params = SAMPLERS.entry(name).parameters()
        assert all(v is not inspect.Parameter.empty for v in params.values()), name
    assert SAMPLERS.get("lhs") is S.LHS and SAMPLERS.get("grid") is S.Grid


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n, k", [(37, 1), (50, 3), (1, 2), (64, 5)])
def test_shape_dtype_and_range(name, n, k):
    u = make(name)(n, k, np.random.default_rng(0))
    expected = max(1, round(n ** (1 / k))) ** k if name == "grid" else n
    assert u.shape == (expected, k) and u.dtype == np.float64
    assert np.all((u >= 0) & (u <= 1))


@pytest.mark.parametrize("name", NAMES)
def test_zero_dimensions_and_zero_points(name):
    s = make(name)
    assert s(7, 0, np.random.default_rng(0)).shape == (7, 0)
    assert s(0, 3, np.random.default_rng(0)).shape == (0, 3)


@pytest.mark.parametrize("n, k", [(10, 1), (97, 2), (256, 4), (1000, 3)])
def test_lhs_one_point_per_stratum_in_every_marginal(n, k):
    u = make("lhs")(n, k, np.random.default_rng(n + k))
    for j in range(k):
        assert sorted(np.floor(u[:, j] * n).astype(int)) == list(range(n))


@pytest.mark.parametrize("name", RANDOM)
def test_equal_generators_equal_points_new_generator_new_points(name):
    s = make(name)
    a = s(100, 3, np.random.default_rng([1, 2, 3]))
    b = s(100, 3, np.random.default_rng([1, 2, 3]))
    c = s(100, 3, np.random.default_rng([1, 3, 3]))
    np.testing.assert_array_equal(a, b)
    assert not np.any(np.all(a == c, axis=1)), "a re-draw shares points with the first draw"


@pytest.mark.parametrize("name", ["sobol", "halton"])
def test_qmc_redraws_differ_stay_in_box_and_do_not_warn(name):
    s = make(name)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no balance warning for n = 100 (not a power of 2)
        draws = [s(100, 2, rng) for _ in range(3)]
    for d in draws:
        assert np.all((d >= 0) & (d <= 1))
    assert not np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[1], draws[2])
    # still a low-discrepancy set: every quarter of [0, 1] of each axis gets ~25 points
    counts = np.stack([np.bincount((d * 4).astype(int).clip(0, 3).ravel(), minlength=4) for d in draws])
    assert counts.min() >= 40  # two columns of 100 points: ~50 per quarter


@pytest.mark.parametrize("name", ["sobol", "halton"])
def test_unscrambled_qmc_is_the_plain_sequence(name):
    s = make(name, scramble=False)
    a = s(16, 2, np.random.default_rng(0))
    b = s(16, 2, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], [0.0, 0.0])


def test_grid_midpoints_rounded_count_last_axis_fastest():
    g = make("grid")
    u = g(10, 2, None)  # round(sqrt(10)) = 3 per axis
    axis = np.array([1, 3, 5]) / 6
    np.testing.assert_allclose(u, np.array([[a, b] for a in axis for b in axis]))
    assert g(1000, 3, None).shape == (1000, 3)
    assert g(1000, 2, None).shape == (32 ** 2, 2)
    np.testing.assert_allclose(g(4, 1, None)[:, 0], [0.125, 0.375, 0.625, 0.875])
    assert g(1, 4, None).shape == (1, 4) and np.all(g(1, 4, None) == 0.5)
    np.testing.assert_array_equal(g(50, 2, np.random.default_rng(0)), g(50, 2, np.random.default_rng(1)))


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="number of points"):
        make("lhs")(-1, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="dimension"):
        make("uniform")(3, 1.5, np.random.default_rng(0))


def test_importing_sampling_loads_neither_torch_nor_pydoe():
    import subprocess
    import sys

    code = "import sys, pinnspec.sampling; print('torch' in sys.modules, 'pydoe' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("value, expected", [(True, True), (0, False), (1.0, True), ("false", False),
                                             ("True", True), ("no", False)])
def test_scramble_option_as_a_spec_writes_it(value, expected):
    assert make("sobol", scramble=value).scramble is expected
    assert make("halton", scramble=value).scramble is expected


def test_scramble_option_refuses_other_values():
    with pytest.raises(ValueError, match="scramble"):
        make("sobol", scramble="maybe")
    with pytest.raises(ValueError, match="scramble"):
        make("halton", scramble=2)


def _hammersley_by_definition(n, k):
    """Point i = (i/n, then the base-p digits of i mirrored about the point for the first k-1 primes),
    written from the definition with exact fractions, one digit at a time."""
    from fractions import Fraction

    primes = [p for p in range(2, 100) if all(p % q for q in range(2, p))][: k - 1]
    rows = []
    for i in range(n):
        row = [Fraction(i, n)]
        for base in primes:
            value, weight, rest = Fraction(0), Fraction(1, base), i
            while rest:
                rest, digit = divmod(rest, base)
                value += digit * weight
                weight /= base
            row.append(value)
        rows.append([float(v) for v in row])
    return np.array(rows)


@pytest.mark.parametrize("n, k", [(1, 1), (10, 1), (37, 2), (100, 4), (64, 7)])
def test_hammersley_is_the_set_by_its_definition(n, k):
    u = make("hammersley")(n, k, np.random.default_rng(0))
    np.testing.assert_allclose(u, _hammersley_by_definition(n, k), rtol=0, atol=1e-15)


def test_hammersley_after_its_grid_column_is_the_unscrambled_halton_sequence():
    from scipy.stats import qmc  # scipy has Halton, not Hammersley

    u = make("hammersley")(200, 5, None)
    np.testing.assert_allclose(u[:, 1:], qmc.Halton(d=4, scramble=False).random(200), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(u[:, 0], np.arange(200) / 200)
    np.testing.assert_allclose(u[:4, 1], [0, 0.5, 0.25, 0.75])  # base 2: 0, 1/2, 1/4, 3/4
    np.testing.assert_allclose(u[:4, 2], [0, 1 / 3, 2 / 3, 1 / 9])  # base 3


def test_hammersley_ignores_the_generator_and_depends_on_n():
    s = make("hammersley")
    np.testing.assert_array_equal(s(50, 3, np.random.default_rng(0)), s(50, 3, np.random.default_rng(1)))
    np.testing.assert_array_equal(s(50, 3, None), s(50, 3, None))
    assert not np.array_equal(s(50, 3, None), s(60, 3, None)[:50])  # a set, not a sequence: i/n changes with n
    assert repr(s) == "Hammersley()"
    # low discrepancy: each of the 10 strips of the second axis holds 10 +- 1 of 100 points
    counts = np.bincount((s(100, 2, None)[:, 1] * 10).astype(int), minlength=10)
    assert counts.min() >= 9 and counts.max() <= 11
