"""The spectral probe (pinnspec.sampling._spectrum): the dominant oscillation of a function along each axis.

The oracle is the frequency each function was written with: a sine of f cycles over an interval of length L has
angular frequency 2 pi f / L, which the probe must find to within half a bin, pi / (n h) (n grid points a side,
spacing h); functions without an oscillation (a line, a jump, noise) must give 0 or a frequency under one
period, which the recipe ignores."""

import numpy as np
import pytest

from pinnspec.sampling import TableInterpolator, dominant_frequencies
from pinnspec.sampling._spectrum import GRID_POINTS, MAX_AXIS_POINTS


def half_bin(lo, hi, k):
    n = min(MAX_AXIS_POINTS, int(np.floor(GRID_POINTS ** (1 / k) + 1e-9)))
    return np.pi / (n * (hi - lo) / (n - 1))


def first_bin(lo, hi, k):  # one period over the interval, and half a bin
    return 2 * np.pi / (hi - lo) + half_bin(lo, hi, k)


@pytest.mark.parametrize("cycles, lo, hi", [(8, 0.0, 1.0), (8, -1.0, 1.0), (20, 0.0, 1.0), (13.4, -3.0, 5.0)])
def test_a_sine_along_one_axis_is_found_there_and_nowhere_else(cycles, lo, hi):
    length = hi - lo
    frequency = 2 * np.pi * cycles / length
    found = dominant_frequencies(lambda x: 2 + np.sin(frequency * x[:, 0] + 0.3) * (1 + x[:, 1] ** 2), [lo, 0.0],
                                 [hi, 1.0])  # [2]
    assert abs(found[0] - frequency) <= half_bin(lo, hi, 2)
    assert found[1] <= first_bin(0.0, 1.0, 2)  # 1 + y^2 bends once: at most the first bin, under one period


def test_the_highest_of_two_oscillations_is_reported():
    found = dominant_frequencies(lambda x: np.sin(2 * np.pi * 2 * x[:, 0]) + np.sin(2 * np.pi * 40.3 * x[:, 0]),
                                 [0.0], [1.0])
    assert abs(found[0] - 2 * np.pi * 40.3) <= half_bin(0.0, 1.0, 1)


def test_a_square_wave_gives_its_fundamental():
    found = dominant_frequencies(lambda x: np.sign(np.sin(2 * np.pi * 5 * x[:, 0])), [0.0, 0.0], [1.0, 1.0])
    assert abs(found[0] - 10 * np.pi) <= half_bin(0.0, 1.0, 2) and found[1] == 0.0


@pytest.mark.parametrize("function", [
    lambda x: 1 + x[:, 0] + 2 * x[:, 1],  # a plane: nothing left after the trend
    lambda x: np.random.default_rng(0).normal(size=len(x)),  # white noise: no bin stands out
], ids=["plane", "noise"])
def test_no_oscillation_gives_zero(function):
    assert np.all(dominant_frequencies(function, [0.0, 0.0], [1.0, 1.0]) == 0.0)


def test_a_jump_gives_at_most_the_first_bin():
    found = dominant_frequencies(lambda x: (x[:, 0] > 0.37).astype(float), [0.0, 0.0], [1.0, 1.0])
    assert found[0] <= first_bin(0.0, 1.0, 2) and found[1] == 0.0


def test_a_sine_on_scattered_rows_read_through_their_triangulation():
    rng = np.random.default_rng(3)
    points = rng.uniform(0.0, 1.0, (6000, 2))  # [6000, 2]
    values = np.sin(2 * np.pi * 10 * points[:, 1])
    found = dominant_frequencies(TableInterpolator(points, values), points.min(0), points.max(0))
    assert found[0] == 0.0
    assert abs(found[1] - 20 * np.pi) <= half_bin(points[:, 1].min(), points[:, 1].max(), 2)
