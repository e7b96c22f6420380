"""L-BFGS with a strong-Wolfe line search, in functional form (for ``lbfgs`` stages).

Nocedal & Wright, *Numerical Optimization*, 2nd ed.: the search direction is
d = -H g from the two-loop recursion (Algorithm 7.4) with H0 = gamma I,
gamma = s'y / y'y of the newest pair (eq. 7.20); the step length comes from
Algorithm 3.5 (bracketing) and 3.6 (zoom, cubic interpolation eq. 3.59) and
satisfies the strong Wolfe conditions

    f(x + t d) <= f(x) + c1 t g'd,    |g(x + t d)'d| <= c2 |g'd|.

State (:class:`LBFGSState`) is an immutable snapshot: the last k <= history
curvature pairs s_j = x_{j+1} - x_j, y_j = g_{j+1} - g_j (oldest first), and
f, g at the current x.  Nothing here mutates x or any parameter.

Sign convention: gradients point uphill; the ``step`` returned by
:meth:`LBFGS.step` is the move x_new - x (downhill), so the caller applies
x <- x + step.  The objective is ``objective(x[p]) -> (f 0-d, g [p])``.

Choices (documented deviations from the textbook):
* while the history is empty (first iteration, or after a reset) the direction
  is -g and the initial trial step is min(1, 1/||g||_1) * lr (torch's rule for
  its first iteration); otherwise it is lr.
* a pair is stored only if s'y > eps(dtype) * y'y (a relative threshold: the
  scaling gamma = s'y/y'y must be positive beyond rounding).
* if d is not a descent direction (g'd >= 0) the history is dropped and d = -g.
* if the line search meets no strong-Wolfe point within max_evals evaluations
  (or its bracket shrinks below tolerance_change), the lowest-f point seen that
  satisfies the Armijo condition is accepted; if there is none, the step is
  zero (StepInfo.t == 0.0), the history is dropped and converged is False.
* StepInfo.converged: max|g| <= tolerance_grad, or |f_new - f| or max|step|
  below tolerance_change; :meth:`LBFGS.converged` (state only) checks the
  gradient criterion alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch
from torch import Tensor

__all__ = ["LBFGS", "LBFGSState", "StepInfo"]

Objective = Callable[[Tensor], tuple[Tensor, Tensor]]


class LBFGSState(NamedTuple):
    s: Tensor  # [k, p] steps x_{j+1} - x_j, oldest first
    y: Tensor  # [k, p] gradient differences g_{j+1} - g_j
    loss: Tensor  # [] f at the current x
    grad: Tensor  # [p] grad f at the current x
    iteration: int
    evaluations: int


class StepInfo(NamedTuple):
    t: float  # step length along d (0.0: line search failed, no move)
    evaluations: int  # objective evaluations in this iteration
    converged: bool
    loss: float  # f at the new x


class _Point(NamedTuple):  # one line-search trial: phi(t) = f(x + t d)
    t: float
    phi: float
    dphi: float  # phi'(t) = g(x + t d)'d
    step: Tensor  # [p] t d
    f: Tensor  # []
    g: Tensor  # [p]


def _cubic_min(a: _Point, b: _Point) -> float:
    """Minimiser of the cubic matching phi, phi' at a and b (N&W eq. 3.59); nan if none."""
    d1 = a.dphi + b.dphi - 3.0 * (a.phi - b.phi) / (a.t - b.t)
    disc = d1 * d1 - a.dphi * b.dphi
    if not disc >= 0.0:
        return math.nan
    d2 = math.copysign(math.sqrt(disc), b.t - a.t)
    denom = b.dphi - a.dphi + 2.0 * d2
    return b.t - (b.t - a.t) * (b.dphi + d2 - d1) / denom if denom != 0.0 else math.nan


def _two_loop(g: Tensor, s: Tensor, y: Tensor) -> Tensor:
    """H g for the L-BFGS inverse Hessian of pairs (s, y) ([k, p]), H0 = gamma I (N&W Alg. 7.4)."""
    rho = 1.0 / (s * y).sum(1)  # [k]
    q, alpha = g, [None] * s.shape[0]
    for i in reversed(range(s.shape[0])):
        alpha[i] = rho[i] * (s[i] @ q)  # []
        q = q - alpha[i] * y[i]  # [p]
    r = q * ((s[-1] @ y[-1]) / (y[-1] @ y[-1]))  # [p]
    for i in range(s.shape[0]):
        r = r + s[i] * (alpha[i] - rho[i] * (y[i] @ r))  # [p]
    return r


@dataclass(frozen=True)
class LBFGS:
    history: int = 50
    line_search: str = "strong_wolfe"  # or "none": fixed step lr
    lr: float = 1.0
    max_evals: int = 25
    c1: float = 1e-4
    c2: float = 0.9
    tolerance_grad: float = 1e-12
    tolerance_change: float = 1e-14

    def __post_init__(self):
        if self.line_search not in ("strong_wolfe", "none"):
            raise ValueError(f"line_search must be 'strong_wolfe' or 'none', not {self.line_search!r}")
        if not 0.0 < self.c1 < self.c2 < 1.0:
            raise ValueError(f"need 0 < c1 < c2 < 1, got c1={self.c1}, c2={self.c2}")

    def init(self, objective: Objective, x: Tensor) -> LBFGSState:
        f, g = objective(x)
        empty = x.new_zeros(0, x.numel())  # [0, p]
        return LBFGSState(empty, empty, f.detach().reshape(()), g.detach(), 0, 1)

    def converged(self, state: LBFGSState) -> bool:
        return state.grad.abs().max().item() <= self.tolerance_grad

    def step(self, objective: Objective, x: Tensor, state: LBFGSState) -> tuple[Tensor, LBFGSState, StepInfo]:
        s, y, f, g = state.s, state.y, state.loss, state.grad  # [k, p], [k, p], [], [p]
        f0, gmax = torch.stack([f, g.abs().max()]).tolist()
        if gmax <= self.tolerance_grad:  # already converged: no evaluation, no move
            return torch.zeros_like(x), state, StepInfo(0.0, 0, True, f0)
        gtd = math.nan
        if s.shape[0]:
            d = -_two_loop(g, s, y)  # [p]
            gtd = (g @ d).item()
        if not gtd < 0.0:  # empty history, or not a descent direction: restart from -g
            s = y = g.new_zeros(0, g.numel())  # [0, p] (fresh, so a checkpoint holds no stale storage)
            d = -g  # [p]
            gtd = (g @ d).item()
        g1 = g.abs().sum().item() if s.shape[0] == 0 else 1.0  # ||g||_1 scales only a restart
        t0 = self.lr * (1.0 / g1 if g1 > 1.0 else 1.0)

        def evaluate(t: float) -> _Point:
            step = t * d  # [p]
            fn, gn = objective(x + step)
            fn, gn = fn.detach().reshape(()), gn.detach()
            phi, dphi = torch.stack([fn, gn @ d]).tolist()
            return _Point(t, phi, dphi, step, fn, gn)

        if self.line_search == "none":
            new, evals = evaluate(t0), 1
        else:
            new, evals = self._strong_wolfe(evaluate, _Point(0.0, f0, gtd, torch.zeros_like(d), f, g), t0, d)
        count = state.evaluations + evals
        if new is None:  # no decrease found: stay, drop the history
            empty = g.new_zeros(0, g.numel())  # [0, p]
            info = StepInfo(0.0, evals, False, f0)
            return torch.zeros_like(x), LBFGSState(empty, empty, f, g, state.iteration + 1, count), info
        dy = new.g - g  # [p]
        sy, yy, gmax, dstep = torch.stack([new.step @ dy, dy @ dy, new.g.abs().max(), new.step.abs().max()]).tolist()
        if self.history > 0 and sy > torch.finfo(x.dtype).eps * yy:
            keep = slice(1, None) if s.shape[0] >= self.history else slice(None)
            s = torch.cat([s[keep], new.step[None]])  # [k', p]
            y = torch.cat([y[keep], dy[None]])  # [k', p]
        done = (gmax <= self.tolerance_grad or abs(new.phi - f0) < self.tolerance_change
                or dstep < self.tolerance_change)
        state = LBFGSState(s, y, new.f, new.g, state.iteration + 1, count)
        return new.step, state, StepInfo(new.t, evals, done, new.phi)

    def _strong_wolfe(self, evaluate, p0: _Point, t: float, d: Tensor) -> tuple[_Point | None, int]:
        """N&W Algorithms 3.5 + 3.6.  Returns the accepted point (None: no Armijo decrease) and the evaluations."""
        c1, c2 = self.c1, self.c2
        armijo = lambda p: p.phi <= p0.phi + c1 * p.t * p0.dphi  # noqa: E731  (False for nan)
        curvature = lambda p: abs(p.dphi) <= -c2 * p0.dphi  # noqa: E731
        best, evals, prev, bracket = None, 0, p0, None
        dmax = d.abs().max().item()

        def seen(p: _Point):
            nonlocal best, evals
            evals += 1
            if armijo(p) and p.phi < p0.phi and (best is None or p.phi < best.phi):
                best = p
            return p

        while evals < self.max_evals:  # bracketing phase (Algorithm 3.5)
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
            c = _cubic_min(prev, p)
            prev, t = p, (min(max(c, lo), hi) if math.isfinite(c) else hi)
        while bracket is not None and evals < self.max_evals:  # zoom (Algorithm 3.6)
            lo, hi = bracket
            a, b = min(lo.t, hi.t), max(lo.t, hi.t)
            if (b - a) * dmax < self.tolerance_change:
                break
            c = _cubic_min(lo, hi)
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

    def state_dict(self, state: LBFGSState) -> dict:
        return {"s": state.s, "y": state.y, "loss": state.loss, "grad": state.grad,
                "iteration": int(state.iteration), "evaluations": int(state.evaluations)}

    def load_state_dict(self, saved: dict) -> LBFGSState:
        return LBFGSState(saved["s"], saved["y"], saved["loss"], saved["grad"],
                          int(saved["iteration"]), int(saved["evaluations"]))
