"""Residual-based adaptive samplers: ``rad``, ``rard`` and ``r3``.

Each redraws the points of the equation (interior) sets from the residual of the model at the resampling
epoch; every other set (boundary, initial, periodic) is drawn by the ``base`` sampler, and so are the
equation sets of the first block (epoch 0 to the first resampling: no residual of a trained model yet).

* RAD, residual-based adaptive distribution (Wu, Zhu, Tan, Kartha & Lu 2023, "A comprehensive study of
  non-adaptive and residual-based adaptive sampling for physics-informed neural networks", CMAME 403,
  115671, eq. (2)): the set's ``count`` points are drawn, without replacement, from ``pool * count``
  candidates of the base sampler with probabilities

      p(x) ∝ |r(x)|^k / E[|r|^k] + c,

  E[|r|^k] the mean over the candidates.  The set's size stays ``count``.
* RAR-D, residual-based adaptive refinement with distribution (same paper, section 2.3): the current
  points are kept and ``add`` points drawn with the RAD density from ``pool * count`` fresh candidates
  join them: the set grows by ``add`` at each resampling.
* R3, retain-resample-release (Daw, Bu, Wang, Perdikaris & Karpatne 2023, "Mitigating propagation
  failures in physics-informed neural networks using retain-resample-release (R3) sampling", ICML,
  Algorithm 1): the current points whose |r| exceeds the mean |r| over the set are retained, the others
  released, and the base sampler refills the set to its ``count``.

|r(x)| is the root of the sum of squares of every residual component of every condition on the set
(one equation with several components, or a system of equations sharing its points).

The pure selections (:func:`rad_weights`, :func:`rad_choice`, :func:`r3_retained`) take candidates'
magnitudes ``[n]``; :meth:`AdaptiveSampler.adapt` composes them with a drawing function and a residual
function.  Every random choice comes from the generator it is given.  A candidate whose |r| is not finite
(a point where the spec's own expressions are singular in the run's dtype) is never drawn, and a current
point's is released; where too few candidates are left, the resampling raises `ResidualNotFinite`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from ..registry import SAMPLERS

__all__ = ["AdaptiveSampler", "ResidualNotFinite", "RAD", "RARD", "R3", "rad_weights", "rad_choice", "r3_retained",
           "BASE_SAMPLERS"]

#: the samplers a candidate pool or a refill may be drawn with: random ones, that give fresh points on every
#: draw and any count exactly (``grid`` rounds the count, ``hammersley`` repeats the same points)
BASE_SAMPLERS = ("uniform", "lhs", "sobol", "halton")

Draw = Callable[[int], np.ndarray]  # n -> [n, d] points of the set's region
Residual = Callable[[np.ndarray], np.ndarray]  # [n, d] points -> [n] |r|


class ResidualNotFinite(ArithmeticError):
    """The residual is not finite at too many of the points an adaptive sampler draws from."""


def _finite(points: np.ndarray, magnitudes, least: int) -> tuple[np.ndarray, np.ndarray]:
    """The points ``[n, d]`` whose |r| ``[n]`` is finite, and those |r|; `ResidualNotFinite` where fewer
    than ``least`` are."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)  # [n]
    finite = np.isfinite(magnitudes)  # [n]
    if np.count_nonzero(finite) < least:
        raise ResidualNotFinite(
            f"the residual is not finite at {len(finite) - np.count_nonzero(finite)} of {len(finite)} points "
            f"drawn for resampling (at least {least} finite ones are needed): the model has diverged")
    return (points, magnitudes) if finite.all() else (points[finite], magnitudes[finite])


def _magnitudes(magnitudes) -> np.ndarray:
    magnitudes = np.asarray(magnitudes, dtype=np.float64)  # [n]
    if magnitudes.ndim != 1:
        raise ValueError(f"residual magnitudes must be one value per point, shape [n]; got {magnitudes.shape}")
    if not np.all(np.isfinite(magnitudes)):
        bad = int(np.count_nonzero(~np.isfinite(magnitudes)))
        raise ValueError(f"{bad} of {len(magnitudes)} residual magnitudes are not finite: the model has diverged")
    return np.abs(magnitudes)


def rad_weights(magnitudes, k: float, c: float) -> np.ndarray:
    """[n] -> [n]: the RAD density at each candidate, |r|^k / mean(|r|^k) + c (Wu et al. 2023, eq. (2)),
    not normalised.  Where every |r|^k is 0 the density is uniform (all ones)."""
    powers = _magnitudes(magnitudes) ** float(k)  # [n]
    mean = powers.mean() if len(powers) else 0.0
    if mean <= 0:
        return np.ones_like(powers)
    return powers / mean + float(c)


def rad_choice(magnitudes, count: int, k: float, c: float, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct candidate indices (sorted), drawn without replacement with probabilities
    proportional to :func:`rad_weights`.  Where fewer than ``count`` candidates have a positive weight
    (``c = 0`` and a residual exactly 0 at many of them) every one of those is taken and the rest are
    drawn uniformly from the others."""
    weights = rad_weights(magnitudes, k, c)  # [n]
    n = len(weights)
    if not 0 <= count <= n:
        raise ValueError(f"cannot choose {count} of {n} candidates")
    positive = np.flatnonzero(weights > 0)  # [n_pos]
    if len(positive) <= count:
        others = np.flatnonzero(weights <= 0)
        extra = rng.choice(others, size=count - len(positive), replace=False)
        return np.sort(np.concatenate([positive, extra]))
    chosen = rng.choice(n, size=count, replace=False, p=weights / weights.sum())  # [count]
    return np.sort(chosen)


def r3_retained(magnitudes) -> np.ndarray:
    """[n] -> [n] bool: the points R3 retains, those with |r| above the mean |r| over the set
    (Daw et al. 2023, Algorithm 1: the retain population P_r = {x in P : F(x) > tau}, tau = mean F(P))."""
    magnitudes = _magnitudes(magnitudes)  # [n]
    if not len(magnitudes):
        return np.zeros(0, dtype=bool)
    return magnitudes > magnitudes.mean()


def _whole(name: str, value, least: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < least:
        raise ValueError(f"'{name}' must be a whole number of at least {least}, got {value!r}")
    return int(value)


def _nonnegative(name: str, value) -> float:
    if isinstance(value, bool) or not np.isfinite(float(value)) or float(value) < 0:
        raise ValueError(f"'{name}' must be a number >= 0, got {value!r}")
    return float(value)


class AdaptiveSampler(ABC):
    """A sampler whose equation sets follow the residual.  Called as a unit-cube sampler
    (``sampler(n, k, rng) -> [n, k]``) it is its ``base`` sampler: the points of every non-equation set and
    of the first block.  :meth:`adapt` gives an equation set's next points."""

    name = ""

    def __init__(self, base: str = "uniform"):
        if base not in BASE_SAMPLERS:
            raise ValueError(f"'base' must be one of {', '.join(BASE_SAMPLERS)}, got {base!r}")
        self.base_name = base
        self.base = SAMPLERS.get(base)()

    def __call__(self, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
        return self.base(n, k, rng)

    @abstractmethod
    def adapt(self, current: np.ndarray, count: int, draw: Draw, residual: Residual,
              rng: np.random.Generator) -> np.ndarray:
        """The set's next points ``[n', d]`` from its current ones ``[n, d]`` (``count``: the spec's
        ``points`` count of the set; ``draw(n)``: ``n`` base points of the set's region, from ``rng``;
        ``residual(x)``: |r| ``[len(x)]`` of the model at the resampling epoch)."""

    def _options(self) -> str:
        return f"base = {self.base_name}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._options()})"


@SAMPLERS.register("rad")
class RAD(AdaptiveSampler):
    """RAD (Wu et al. 2023, eq. (2)): ``count`` points drawn without replacement from ``pool * count`` base
    candidates with probabilities ∝ |r|^k / mean(|r|^k) + c.  ``k = 1, c = 1``: the paper's recommended
    default."""

    name = "rad"

    def __init__(self, k: float = 1.0, c: float = 1.0, pool: int = 10, base: str = "uniform"):
        super().__init__(base)
        self.k, self.c = _nonnegative("k", k), _nonnegative("c", c)
        self.pool = _whole("pool", pool, 1)

    def adapt(self, current, count, draw, residual, rng):
        candidates = draw(self.pool * count)  # [pool * count, d]
        candidates, magnitudes = _finite(candidates, residual(candidates), count)  # [n_finite, d], [n_finite]
        return candidates[rad_choice(magnitudes, count, self.k, self.c, rng)]  # [count, d]

    def _options(self) -> str:
        return f"k = {self.k:g}, c = {self.c:g}, pool = {self.pool}, {super()._options()}"


@SAMPLERS.register("rard")
class RARD(AdaptiveSampler):
    """RAR-D (Wu et al. 2023, section 2.3): the current points plus ``add`` drawn with the RAD density
    (without replacement) from ``pool * count`` fresh base candidates; the set grows by ``add`` per
    resampling.  ``k = 2, c = 0``: the paper's choice for RAR-D."""

    name = "rard"

    def __init__(self, k: float = 2.0, c: float = 0.0, add: int = 100, pool: int = 10, base: str = "uniform"):
        super().__init__(base)
        self.k, self.c = _nonnegative("k", k), _nonnegative("c", c)
        self.add = _whole("add", add, 1)
        self.pool = _whole("pool", pool, 1)

    def adapt(self, current, count, draw, residual, rng):
        candidates = draw(max(self.pool * count, self.add))  # [pool * count, d]
        candidates, magnitudes = _finite(candidates, residual(candidates), self.add)  # [n_finite, d], [n_finite]
        chosen = rad_choice(magnitudes, self.add, self.k, self.c, rng)  # [add]
        return np.concatenate([current, candidates[chosen]], axis=0)  # [n + add, d]

    def _options(self) -> str:
        return f"k = {self.k:g}, c = {self.c:g}, add = {self.add}, pool = {self.pool}, {super()._options()}"


@SAMPLERS.register("r3")
class R3(AdaptiveSampler):
    """R3 (Daw et al. 2023, Algorithm 1): retain the current points with |r| above the set's mean |r|,
    refill to ``count`` with base points (released: the rest)."""

    name = "r3"

    def adapt(self, current, count, draw, residual, rng):
        current, magnitudes = _finite(current, residual(current), 1)  # a point whose |r| is not finite: released
        retained = current[r3_retained(magnitudes)]  # [n_r, d], n_r < n (strictly above the mean)
        return np.concatenate([retained, draw(max(count - len(retained), 0))], axis=0)  # [count, d]
