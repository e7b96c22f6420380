"""The dominant oscillation of a function of a box's coordinates, one coordinate at a time: a short spectral
probe for data that no formula states (a coefficient table), as `recipe strong` reads sin and cos from formulas.

    frequencies = dominant_frequencies(interpolate, lo, hi)    # [k] angular frequencies, 0 where none dominates
"""

from __future__ import annotations

from typing import Callable

import numpy as np

#: at most this many grid points in all (each axis at most `MAX_AXIS_POINTS`)
GRID_POINTS = 2 ** 16
MAX_AXIS_POINTS = 256
#: the share of the power (the lines' means and linear trends removed) that a peak and the two bins either side of
#: it hold for the peak to count as an oscillation of the function along that axis
PEAK_SHARE = 0.2
#: what is left along an axis once each line loses its mean and linear trend, as a share of the function's variance,
#: below which nothing oscillates along that axis (a plane leaves rounding; interpolating scattered rows leaves ripples
#: of about 1 % of it: a sine of 10 periods across 6,000 rows, tests/sampling/test_spectrum.py)
VARIATION_SHARE = 0.05


def dominant_frequencies(function: Callable[[np.ndarray], np.ndarray], lo, hi, *, grid_points: int = GRID_POINTS,
                         peak_share: float = PEAK_SHARE) -> np.ndarray:
    """``[k]``: along each axis of the box ``[lo, hi]`` (``[k]`` each), the angular frequency of the highest
    oscillation that stands out of ``function``'s spectrum (``[M, k] -> [M]``), or 0 where none does.

    ``function`` is sampled on a uniform grid of n = min(`MAX_AXIS_POINTS`, floor(grid_points^(1/k))) points per
    axis (spacing h = (hi - lo)/(n - 1)).  Along axis j each grid line loses its least-squares line (mean and
    slope); where what is left holds less than `VARIATION_SHARE` of the function's variance nothing oscillates
    along j; else the lines are tapered by a Hann window and transformed (``numpy.fft.rfft``), their power spectra
    summed.
    A peak, a bin m >= 1 with no more power on either side, counts where bins m - 2 .. m + 2 hold at least
    ``peak_share`` of the summed power (the window spreads a sine over three or four bins; noise spreads its power
    over all, a jump or a kink mostly over the first few); the highest such m gives the angular frequency
    2 pi m / (n h), to half a bin, pi / (n h)."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)  # [k] each
    k = len(lo)
    n = int(min(MAX_AXIS_POINTS, np.floor(grid_points ** (1 / k) + 1e-9)))
    axes = [np.linspace(a, b, n) for a, b in zip(lo, hi)]
    mesh = np.meshgrid(*axes, indexing="ij")
    values = np.asarray(function(np.column_stack([m.ravel() for m in mesh])), dtype=np.float64).reshape((n,) * k)
    variance = float(np.var(values))
    s = np.linspace(-1.0, 1.0, n)  # [n]: the position along a line, for its linear trend
    window = np.hanning(n)  # [n]
    out = np.zeros(k)
    for j in range(k):
        lines = np.moveaxis(values, j, -1).reshape(-1, n)  # [L, n]
        lines = lines - lines.mean(axis=1, keepdims=True)
        lines = lines - np.outer(lines @ s / (s @ s), s)  # least squares: orthogonal to 1 and s
        if not np.mean(lines ** 2) > VARIATION_SHARE * variance:
            continue
        power = (np.abs(np.fft.rfft(lines * window, axis=1)) ** 2).sum(axis=0)  # [n // 2 + 1]
        power[0] = 0.0
        total = power.sum()
        padded = np.concatenate([power, [0.0]])  # [n // 2 + 2]
        peaks = [m for m in range(1, len(power)) if padded[m] >= padded[m - 1] and padded[m] >= padded[m + 1]
                 and power[m - 2 if m > 1 else 1: m + 3].sum() >= peak_share * total]
        if peaks:
            h = (hi[j] - lo[j]) / (n - 1)
            out[j] = 2 * np.pi * max(peaks) / (n * h)
    return out
