"""Unit-cube samplers: ``sampler(n, k, rng) -> [n, k]`` float64 in [0, 1].

Each is a class registered in :data:`pinnspec.registry.SAMPLERS`; the
instance (built with the keyword options of the spec's ``sampler`` call)
is called with the number of points, the dimension and a
``numpy.random.Generator``.  Every random choice comes from ``rng`` (nothing
global), so equal generators give equal points.  ``k = 0`` gives ``[n, 0]``.

pyDOE and scipy.stats.qmc are imported on first use: importing
:mod:`pinnspec.sampling` stays cheap.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..registry import SAMPLERS

__all__ = ["LHS", "Uniform", "Sobol", "Halton", "Grid", "Hammersley"]


def _check(n: int, k: int) -> tuple[int, int]:
    if int(n) != n or n < 0:
        raise ValueError(f"the number of points must be a whole number >= 0, got {n!r}")
    if int(k) != k or k < 0:
        raise ValueError(f"the dimension must be a whole number >= 0, got {k!r}")
    return int(n), int(k)


def _empty(n: int, k: int) -> np.ndarray | None:
    """The answer when there is nothing to draw (no points or no dimensions)."""
    if n == 0 or k == 0:
        return np.empty((n, k), dtype=np.float64)
    return None


def _flag(name: str, value) -> bool:
    """A yes/no option as a spec may write it: a bool, 0/1, or true/false/yes/no."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "false", "no", "off"):
        return value.strip().lower() in ("true", "yes", "on")
    raise ValueError(f"'{name}' must be true or false (or 1 or 0), got {value!r}")


def _unit(u: np.ndarray) -> np.ndarray:
    # guard against a rounding step past an end of [0, 1]
    return np.clip(np.ascontiguousarray(u, dtype=np.float64), 0.0, 1.0)


@SAMPLERS.register("lhs")
class LHS:
    """Latin hypercube (pyDOE, classic randomized design): every column has
    exactly one point in each of the ``n`` strata ``[i/n, (i+1)/n)``."""

    def __call__(self, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
        n, k = _check(n, k)
        empty = _empty(n, k)
        if empty is not None:
            return empty
        from pydoe import lhs

        return _unit(lhs(k, samples=n, seed=rng))

    def __repr__(self) -> str:
        return "LHS()"


@SAMPLERS.register("uniform")
class Uniform:
    """Independent uniform points."""

    def __call__(self, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
        n, k = _check(n, k)
        return rng.random((n, k), dtype=np.float64)

    def __repr__(self) -> str:
        return "Uniform()"


class _QMC:
    """A scipy.stats.qmc sequence; scrambled with ``rng`` on every call, so a
    re-draw with a fresh generator gives fresh points.  ``scramble=False``
    gives the plain (deterministic) sequence: every call returns the same
    first ``n`` points."""

    engine_name = ""

    def __init__(self, scramble: bool = True):
        self.scramble = _flag("scramble", scramble)

    def __call__(self, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
        n, k = _check(n, k)
        empty = _empty(n, k)
        if empty is not None:
            return empty
        from scipy.stats import qmc

        engine = getattr(qmc, self.engine_name)(d=k, scramble=self.scramble, rng=rng)
        with warnings.catch_warnings():
            # Sobol' balance properties need n = 2^m; any n is fine for us
            warnings.filterwarnings("ignore", message=".*balance properties.*", category=UserWarning)
            return _unit(engine.random(n))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scramble={self.scramble})"


@SAMPLERS.register("sobol")
class Sobol(_QMC):
    """Sobol' sequence (scipy.stats.qmc.Sobol), Owen-scrambled with ``rng``."""

    engine_name = "Sobol"


@SAMPLERS.register("halton")
class Halton(_QMC):
    """Halton sequence (scipy.stats.qmc.Halton), scrambled with ``rng``."""

    engine_name = "Halton"


@SAMPLERS.register("grid")
class Grid:
    """A regular grid of cell midpoints, deterministic (``rng`` unused).

    The count is ROUNDED: ``m = max(1, round(n ** (1/k)))`` midpoints
    ``(i + 1/2)/m`` per axis, ``m**k`` points in all (``n = 1000, k = 2`` gives
    ``32**2 = 1024``), the last axis varying fastest.  ``n = 0`` gives no
    points; ``k = 0`` gives ``[n, 0]``.
    """

    def __call__(self, n: int, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        n, k = _check(n, k)
        empty = _empty(n, k)
        if empty is not None:
            return empty
        m = max(1, int(round(n ** (1.0 / k))))
        axis = (np.arange(m, dtype=np.float64) + 0.5) / m
        mesh = np.meshgrid(*([axis] * k), indexing="ij")
        return np.stack([g.reshape(-1) for g in mesh], axis=1)

    def __repr__(self) -> str:
        return "Grid()"


def _first_primes(count: int) -> list[int]:
    """The first ``count`` primes (2, 3, 5, ...), by trial division."""
    primes: list[int] = []
    candidate = 2
    while len(primes) < count:
        if all(candidate % p for p in primes if p * p <= candidate):
            primes.append(candidate)
        candidate += 1
    return primes


def _radical_inverse(index: np.ndarray, base: int) -> np.ndarray:
    """The van der Corput radical inverse of each whole number in ``index``
    (``[n]``) in ``base``: its base-``base`` digits mirrored about the point
    (``6 = 110_2 -> 0.011_2 = 0.375``)."""
    result = np.zeros(index.shape, dtype=np.float64)  # [n]
    rest = index.copy()
    digit_weight = 1.0 / base
    while np.any(rest):
        result += (rest % base) * digit_weight
        rest //= base
        digit_weight /= base
    return result


@SAMPLERS.register("hammersley")
class Hammersley:
    """The ``n``-point Hammersley set in ``k`` dimensions, deterministic
    (``rng`` unused: every call with the same ``n`` and ``k`` gives the same
    points; DeepXDE and PINNacle sample with it by default).

    Point ``i`` (``i = 0 .. n-1``) is ``(i/n, phi_2(i), phi_3(i), phi_5(i), ...)``:
    the first coordinate a regular grid, then the radical inverses of ``i`` in
    the first ``k - 1`` primes (the unscrambled Halton sequence).  The set
    depends on ``n`` (it is not a sequence: the first ``m`` of ``n`` points are
    not the ``m``-point set).  Point 0 is the origin, a corner of the cube.
    """

    def __call__(self, n: int, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        n, k = _check(n, k)
        empty = _empty(n, k)
        if empty is not None:
            return empty
        index = np.arange(n, dtype=np.int64)  # [n]
        columns = [index / n] + [_radical_inverse(index, p) for p in _first_primes(k - 1)]
        return _unit(np.stack(columns, axis=1))  # [n, k]

    def __repr__(self) -> str:
        return "Hammersley()"
