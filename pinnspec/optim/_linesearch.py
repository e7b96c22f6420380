"""The strong-Wolfe line search shared by the quasi-Newton stages (``lbfgs``, ``bfgs``, ``ssbfgs``,
``ssbroyden``).

Nocedal & Wright, *Numerical Optimization*, 2nd ed., Algorithms 3.5 (bracketing) and 3.6 (zoom, cubic
interpolation eq. 3.59): a step length t along a descent direction d with

    f(x + t d) <= f(x) + c1 t g'd,    |g(x + t d)'d| <= c2 |g'd|.

If no strong-Wolfe point turns up within ``max_evals`` evaluations (or the bracket shrinks below
``tolerance_change`` in max |t d|), the lowest-f point seen that satisfies the Armijo condition is accepted;
None where there is none.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from torch import Tensor

__all__ = ["Point", "cubic_min", "strong_wolfe"]


class Point(NamedTuple):  # one line-search trial: phi(t) = f(x + t d)
    t: float
    phi: float
    dphi: float  # phi'(t) = g(x + t d)'d
    step: Tensor  # [p] t d
    f: Tensor  # []
    g: Tensor  # [p]


def cubic_min(a: Point, b: Point) -> float:
    """Minimiser of the cubic matching phi, phi' at a and b (N&W eq. 3.59); nan if none."""
    d1 = a.dphi + b.dphi - 3.0 * (a.phi - b.phi) / (a.t - b.t)
    disc = d1 * d1 - a.dphi * b.dphi
    if not disc >= 0.0:
        return math.nan
    d2 = math.copysign(math.sqrt(disc), b.t - a.t)
    denom = b.dphi - a.dphi + 2.0 * d2
    return b.t - (b.t - a.t) * (b.dphi + d2 - d1) / denom if denom != 0.0 else math.nan


def strong_wolfe(evaluate: Callable[[float], Point], p0: Point, t: float, dmax: float, *, c1: float, c2: float,
                 max_evals: int, tolerance_change: float) -> tuple[Point | None, int]:
    """N&W Algorithms 3.5 + 3.6 from the trial step ``t``; ``p0`` is phi at t = 0 and ``dmax`` = max |d|.
    Returns the accepted point (None: no Armijo decrease) and the number of evaluations."""
    armijo = lambda p: p.phi <= p0.phi + c1 * p.t * p0.dphi  # noqa: E731  (False for nan)
    curvature = lambda p: abs(p.dphi) <= -c2 * p0.dphi  # noqa: E731
    best, evals, prev, bracket = None, 0, p0, None

    def seen(p: Point):
        nonlocal best, evals
        evals += 1
        if armijo(p) and p.phi < p0.phi and (best is None or p.phi < best.phi):
            best = p
        return p

    while evals < max_evals:  # bracketing phase (Algorithm 3.5)
        p = seen(evaluate(t))
        if not armijo(p) or (evals > 1 and p.phi >= prev.phi):
            bracket = (prev, p)
            break
        if curvature(p):
            return p, evals
        if p.dphi >= 0.0:
            bracket = (p, prev)
            break
        lo, hi = t + 0.1 * (t - prev.t), t + 4.0 * (t - prev.t)
        c = cubic_min(prev, p)
        prev, t = p, (min(max(c, lo), hi) if math.isfinite(c) else hi)
    while bracket is not None and evals < max_evals:  # zoom (Algorithm 3.6)
        lo, hi = bracket
        a, b = min(lo.t, hi.t), max(lo.t, hi.t)
        if (b - a) * dmax < tolerance_change:
            break
        c = cubic_min(lo, hi)
        if not a < c < b:  # no interior cubic minimiser: bisect
            c = 0.5 * (a + b)
        p = seen(evaluate(min(max(c, a + 0.1 * (b - a)), b - 0.1 * (b - a))))  # keep 10% off the ends
        if not armijo(p) or p.phi >= lo.phi:
            bracket = (lo, p)
        elif curvature(p):
            return p, evals
        else:
            bracket = (p, lo) if p.dphi * (hi.t - lo.t) >= 0.0 else (p, hi)
    return best, evals
