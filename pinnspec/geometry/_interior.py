"""Points inside a shape, and its volume by Monte Carlo."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

import numpy as np

from ._shapes import Primitive, Shape

__all__ = ["sample_interior", "estimate_measure"]

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]

#: points of the fixed stream that estimates which fraction of a combination's bounding box it fills
FRACTION_DRAWS = 1 << 13
FRACTION_SEED = 20240612
#: how much larger than the first batch a redrawn batch may grow before giving up
MAX_GROWTH = 64


def _count(n) -> int:
    if isinstance(n, (bool, np.bool_)) or int(n) != n or n < 0:
        raise ValueError(f"the number of points must be a whole number >= 0, got {n!r}")
    return int(n)


def _box_volume(lo: np.ndarray, hi: np.ndarray) -> float:
    return float(np.prod(hi - lo))


def _in_box(unit: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Unit-cube points ``[m, d]`` mapped to the box ``lo..hi``, ``[m, d]``."""
    return lo + unit * (hi - lo)


@lru_cache(maxsize=64)
def _filled_fraction(shape: Shape) -> float:
    """The fraction of the bounding box inside the shape: exact for a primitive, else
    estimated from a fixed stream of ``FRACTION_DRAWS`` points (the same every run)."""
    lo, hi = shape.bounds()
    if isinstance(shape, Primitive):
        return shape.measure() / _box_volume(lo, hi)
    unit = np.random.default_rng(FRACTION_SEED).random((FRACTION_DRAWS, shape.dim))  # [M, d]
    fraction = float(np.mean(shape._sdf(_in_box(unit, lo, hi)) < 0))
    if fraction == 0:
        raise ValueError(f"{shape!r} looks empty: none of {FRACTION_DRAWS} points spread over its bounding box "
                         f"lies inside it; check that the holes do not cover it and that intersected shapes overlap")
    return fraction


def _resolve(sampler: Sampler | None) -> Sampler:
    """The unit-cube sampler (None: independent uniform draws).  A registered sampler's name is resolved by the
    caller (`pinnspec.sampling`, which sits above geometry)."""
    if sampler is None:
        return lambda n, k, rng: rng.random((n, k))
    if isinstance(sampler, str):
        raise TypeError(f"sampler {sampler!r}: pass a sampler, e.g. pinnspec.registry.SAMPLERS.get({sampler!r})()")
    return sampler


def sample_interior(shape: Shape, n: int, rng: np.random.Generator,
                    sampler: Sampler | None = None) -> np.ndarray:
    """``n`` points ``[n, d]`` uniform in the domain, every one strictly inside (``sdf < 0``).

    ``sampler``: a unit-cube sampler ``sampler(m, d, rng) -> [m, d]`` (e.g. an instance from
    :data:`pinnspec.registry.SAMPLERS`), or None for independent
    uniform points.  A batch of ``m`` points is drawn in the bounding box, sized from the
    filled fraction of the box (exact for a primitive, a fixed-stream estimate for a
    combination) with a margin, so one batch nearly always holds ``n`` inside points;
    when it holds more, ``n`` of them are kept, chosen at random with ``rng`` (a random
    subset of a low-discrepancy set stays uniform, a prefix of one need not); when it
    holds fewer, a larger fresh batch is drawn (a deterministic sampler such as the
    Hammersley set gives the same points for the same batch size, so batches are never
    pooled).  The same ``rng`` state gives the same points.
    """
    n = _count(n)
    draw = _resolve(sampler)
    lo, hi = shape.bounds()
    d = shape.dim
    if n == 0:
        return np.empty((0, d))
    first_batch = batch = math.ceil((n + 4.0 * math.sqrt(n) + 16) / _filled_fraction(shape))
    while True:
        unit = np.asarray(draw(batch, d, rng), dtype=np.float64)  # [m, d]
        if unit.ndim != 2 or unit.shape[1] != d:
            raise ValueError(f"the sampler {draw!r} returned shape {unit.shape} for ({batch}, {d}); expected [m, {d}]")
        x = _in_box(unit, lo, hi)  # [m, d]
        inside = x[shape._sdf(x) < 0]  # [k, d]
        if len(inside) >= n:
            if len(inside) > n:
                inside = inside[np.sort(rng.choice(len(inside), size=n, replace=False))]
            return np.ascontiguousarray(inside)
        if batch >= MAX_GROWTH * first_batch:
            raise RuntimeError(f"only {len(inside)} of {n} points fell inside {shape!r} out of {batch} drawn in its "
                               f"bounding box (expected about {n * batch / first_batch:.0f}); does the sampler "
                               f"{draw!r} fill the unit cube evenly?")
        batch = min(MAX_GROWTH * first_batch, math.ceil(batch * max(2.0, 1.25 * n / max(len(inside), 1))))


def estimate_measure(shape: Shape, n: int, rng: np.random.Generator) -> float:
    """The d-dimensional measure (length, area, volume) by Monte Carlo: the bounding
    box's volume times the fraction of ``n`` uniform points in it that are inside.
    Its standard error is ``volume_box * sqrt(f (1 - f) / n)`` for a filled fraction f."""
    n = _count(n)
    if n == 0:
        raise ValueError("estimate_measure needs at least one point")
    lo, hi = shape.bounds()
    x = _in_box(rng.random((n, shape.dim)), lo, hi)  # [n, d]
    return _box_volume(lo, hi) * float(np.mean(shape._sdf(x) < 0))
