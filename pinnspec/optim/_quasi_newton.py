r"""Quasi-Newton methods with a strong-Wolfe line search, in functional form (the second-order stages).

Every method here iterates  x <- x + t d,  d = -H g,  with H an approximation of the inverse Hessian built
from curvature pairs  s = x_{k+1} - x_k,  y = g_{k+1} - g_k,  and t from the strong-Wolfe line search
(`._linesearch`).  They differ only in how H is kept:

* :class:`LBFGS` -- the last ``history`` pairs and the two-loop recursion (Nocedal & Wright, *Numerical
  Optimization*, 2nd ed., Algorithm 7.4), H0 = gamma I with gamma = s'y / y'y of the newest pair (eq. 7.20);
* :class:`BFGS` -- H as a dense [p, p] matrix, updated by one of

  - ``bfgs``: the BFGS inverse update (N&W eq. 6.17)  H+ = (I - r s y') H (I - r y s') + r s s',  r = 1/s'y;
  - ``ssbfgs``: self-scaled BFGS, the same update of H / tau with Al-Baali's scaling tau = min(1, 1/b)
    (Al-Baali 1998, "Numerical experience with a class of self-scaling quasi-Newton algorithms", JOTA 96;
    Urban, Stefanou & Pons 2025, "Unveiling the optimization process of physics informed neural networks",
    JCP 523, eq. 11);
  - ``ssbroyden``: the self-scaled Broyden family (Al-Baali & Khalfan 2005; Urban et al. 2025, eqs. 13-23)

        H+ = (H - H y y'H / y'Hy + phi (y'Hy) v v') / tau + r s s',     v = r s - H y / y'Hy,

    with the scalars of the current pair,  b = s'B s / s'y = -t s'g / s'y  (B = H^-1, since B s = -t g),
    h = y'Hy / s'y,  a = b h - 1 (>= 0),  rho- = min(1, h (1 - sqrt(a / (1 + a)))),
    theta- = (rho- - 1) / a,  theta+ = 1 / rho-,  theta = max(theta-, min(theta+, (1 - b) / b)),
    sigma = 1 + a theta,  phi = (1 - theta) / (1 + a theta),  and
    tau = min(min(1, 1/b) sigma^(1/(1-p)), sigma) if theta <= 0, else min(1, 1/b) min(sigma^(1/(1-p)), 1/theta).
    theta = 0, tau = 1 is BFGS (phi = 1); where a vanishes (H y parallel to s, every member of the family
    agrees) theta = 0 is taken.

  Before the first update H = (s'y / y'y) I (N&W eq. 6.20).  Every update keeps the secant condition
  H+ y = s; H stays symmetric to rounding (three symmetric rank-one updates, one pass over it each).  The
  matrix costs p^2 numbers: :data:`DENSE_LIMIT_BYTES` bounds it.

Sign convention: gradients point uphill; the ``step`` returned by ``step`` is the move x_new - x (downhill),
so the caller applies x <- x + step.  The objective is ``objective(x [p]) -> (f 0-d, g [p])``.  Nothing here
mutates x or any parameter; states are immutable snapshots.

Choices (documented deviations from the textbooks):
* while the memory is empty (first iteration, or after a reset) the direction is -g and the initial trial
  step is min(1, 1/||g||_1) * lr (torch's rule for its first iteration); otherwise it is lr;
* a pair is used only if s'y > eps(dtype) * y'y (the curvature must be positive beyond rounding);
* if d is not a descent direction (g'd >= 0) the memory is dropped and d = -g;
* if the line search finds no Armijo decrease the step is zero (StepInfo.t == 0.0), the memory is dropped
  and converged is False;
* StepInfo.converged: max|g| <= tolerance_grad, or |f_new - f| or max|step| below tolerance_change;
  ``converged(state)`` checks the gradient criterion alone.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch
from torch import Tensor

from ._linesearch import Point, strong_wolfe

__all__ = ["LBFGS", "LBFGSState", "BFGS", "BFGSState", "StepInfo", "DENSE_LIMIT_BYTES", "BFGS_UPDATES"]

Objective = Callable[[Tensor], tuple[Tensor, Tensor]]

#: the largest dense inverse Hessian a BFGS-family stage keeps (p^2 * itemsize bytes)
DENSE_LIMIT_BYTES = 2 * 1024 ** 3
#: the dense updates of :class:`BFGS`
BFGS_UPDATES = ("bfgs", "ssbfgs", "ssbroyden")


class StepInfo(NamedTuple):
    t: float  # step length along d (0.0: line search failed, no move)
    evaluations: int  # objective evaluations in this iteration
    converged: bool
    loss: float  # f at the new x


class LBFGSState(NamedTuple):
    s: Tensor  # [k, p] steps x_{j+1} - x_j, oldest first
    y: Tensor  # [k, p] gradient differences g_{j+1} - g_j
    loss: Tensor  # [] f at the current x
    grad: Tensor  # [p] grad f at the current x
    iteration: int
    evaluations: int


class BFGSState(NamedTuple):
    H: Tensor  # [p, p] the inverse-Hessian approximation, or [0, 0] before the first update
    loss: Tensor  # []
    grad: Tensor  # [p]
    iteration: int
    evaluations: int


@dataclass(frozen=True)
class _QuasiNewton(ABC):
    """The shared iteration: direction from the memory, strong-Wolfe line search, memory update."""

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

    # the memory, by subclass
    @abstractmethod
    def _fresh(self, state, f: Tensor, g: Tensor, iteration: int, evaluations: int):
        """A state at f, g with an empty memory."""

    @abstractmethod
    def _empty(self, state) -> bool:
        """Whether the memory is empty (the direction is then -g)."""

    @abstractmethod
    def _direction(self, state) -> Tensor:
        """d = -H g from the memory."""

    @abstractmethod
    def _remember(self, state, step: Tensor, dy: Tensor, t: float, sy: float, f: Tensor, g: Tensor,
                  evaluations: int):
        """The state after the curvature pair (step, dy) of a step of length t, at the new f, g."""

    def init(self, objective: Objective, x: Tensor):
        f, g = objective(x)
        return self._fresh(None, f.detach().reshape(()), g.detach(), 0, 1)

    def restarted(self, objective: Objective, x: Tensor, state):
        """``state`` with f and g evaluated anew at x (the objective changed, e.g. new points); the memory
        is kept.  One evaluation."""
        f, g = objective(x)
        return state._replace(loss=f.detach().reshape(()), grad=g.detach(), evaluations=state.evaluations + 1)

    def converged(self, state) -> bool:
        return state.grad.abs().max().item() <= self.tolerance_grad

    def step(self, objective: Objective, x: Tensor, state):
        f, g = state.loss, state.grad  # [], [p]
        f0, gmax = torch.stack([f, g.abs().max()]).tolist()
        if gmax <= self.tolerance_grad:  # already converged: no evaluation, no move
            return torch.zeros_like(x), state, StepInfo(0.0, 0, True, f0)
        gtd = math.nan
        if not self._empty(state):
            d = self._direction(state)  # [p]
            gtd = (g @ d).item()
        if not gtd < 0.0:  # empty memory, or not a descent direction: restart from -g
            state = self._fresh(state, f, g, state.iteration, state.evaluations)
            d = -g  # [p]
            gtd = (g @ d).item()
        g1 = g.abs().sum().item() if self._empty(state) else 1.0  # ||g||_1 scales only a restart
        t0 = self.lr * (1.0 / g1 if g1 > 1.0 else 1.0)

        def evaluate(t: float) -> Point:
            step = t * d  # [p]
            fn, gn = objective(x + step)
            fn, gn = fn.detach().reshape(()), gn.detach()
            phi, dphi = torch.stack([fn, gn @ d]).tolist()
            return Point(t, phi, dphi, step, fn, gn)

        if self.line_search == "none":
            new, evals = evaluate(t0), 1
        else:
            new, evals = strong_wolfe(evaluate, Point(0.0, f0, gtd, torch.zeros_like(d), f, g), t0,
                                      d.abs().max().item(), c1=self.c1, c2=self.c2, max_evals=self.max_evals,
                                      tolerance_change=self.tolerance_change)
        count = state.evaluations + evals
        if new is None:  # no decrease found: stay, drop the memory
            info = StepInfo(0.0, evals, False, f0)
            return torch.zeros_like(x), self._fresh(state, f, g, state.iteration + 1, count), info
        dy = new.g - g  # [p]
        sy, yy, gmax, dstep = torch.stack([new.step @ dy, dy @ dy, new.g.abs().max(), new.step.abs().max()]).tolist()
        if sy > torch.finfo(x.dtype).eps * yy:
            state = self._remember(state, new.step, dy, new.t, sy, new.f, new.g, count)
        else:
            state = state._replace(loss=new.f, grad=new.g, evaluations=count)
        state = state._replace(iteration=state.iteration + 1)
        done = (gmax <= self.tolerance_grad or abs(new.phi - f0) < self.tolerance_change
                or dstep < self.tolerance_change)
        return new.step, state, StepInfo(new.t, evals, done, new.phi)

    def state_dict(self, state) -> dict:
        return {**state._asdict(), "iteration": int(state.iteration), "evaluations": int(state.evaluations)}


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
class LBFGS(_QuasiNewton):
    history: int = 50

    def _fresh(self, state, f, g, iteration, evaluations):
        empty = g.new_zeros(0, g.numel())  # [0, p] (fresh, so a checkpoint holds no stale storage)
        return LBFGSState(empty, empty, f, g, iteration, evaluations)

    def _empty(self, state):
        return state.s.shape[0] == 0

    def _direction(self, state):
        return -_two_loop(state.grad, state.s, state.y)

    def _remember(self, state, step, dy, t, sy, f, g, evaluations):
        s, y = state.s, state.y
        if self.history > 0:
            keep = slice(1, None) if s.shape[0] >= self.history else slice(None)
            s = torch.cat([s[keep], step[None]])  # [k', p]
            y = torch.cat([y[keep], dy[None]])  # [k', p]
        return state._replace(s=s, y=y, loss=f, grad=g, evaluations=evaluations)

    def load_state_dict(self, saved: dict) -> LBFGSState:
        return LBFGSState(saved["s"], saved["y"], saved["loss"], saved["grad"],
                          int(saved["iteration"]), int(saved["evaluations"]))


def broyden_parameters(update: str, b: float, h: float, p: int) -> tuple[float, float]:
    """(theta, tau) of a dense update (module docstring) from b = s'Bs / s'y, h = y'Hy / s'y and the
    number of unknowns p: theta the Broyden-family parameter of the direct update (0: BFGS, 1: DFP), tau the
    self-scaling of H."""
    if update == "bfgs":
        return 0.0, 1.0
    if update == "ssbfgs":
        return 0.0, min(1.0, 1.0 / b)
    a = max(b * h - 1.0, 0.0)  # >= 0 by Cauchy-Schwarz; rounding may make it slightly negative
    if a <= 1e-12:
        theta = 0.0
    else:
        rho_minus = min(1.0, h * (1.0 - math.sqrt(a / (1.0 + a))))
        theta_minus, theta_plus = (rho_minus - 1.0) / a, 1.0 / rho_minus
        theta = max(theta_minus, min(theta_plus, (1.0 - b) / b))
    sigma = 1.0 + a * theta
    root = abs(sigma) ** (1.0 / (1.0 - p)) if p > 1 else 1.0
    scale = min(1.0, 1.0 / b)
    return theta, (min(scale * root, sigma) if theta <= 0.0 else scale * min(root, 1.0 / theta))


def self_scaled_update(H: Tensor, s: Tensor, y: Tensor, t: float, g: Tensor, update: str) -> Tensor:
    """The inverse Hessian after the pair (s, y) [p] of a step of length t from gradient g [p] (module
    docstring); H [p, p] symmetric positive definite, s'y > 0, s = -t H g."""
    Hy = H @ y  # [p]
    sy, yHy, sg = torch.stack([s @ y, y @ Hy, s @ g]).tolist()
    r = 1.0 / sy
    b, h = -t * sg * r, yHy * r  # s'Bs / s'y (B s = -t g), y'Hy / s'y
    theta, tau = broyden_parameters(update, b, h, s.numel())
    phi = (1.0 - theta) / (1.0 + (b * h - 1.0) * theta)  # the inverse update's parameter (1: BFGS)
    v = s * r - Hy / yHy  # [p]
    # three symmetric rank-one updates, one pass over the matrix each (a new full matrix per term would cost
    # several times the gradient on a few thousand points)
    new = torch.addr(H, Hy, Hy, beta=1.0 / tau, alpha=-1.0 / (yHy * tau))  # [p, p]
    new.addr_(v, v, alpha=phi * yHy / tau)
    return new.addr_(s, s, alpha=r)


@dataclass(frozen=True)
class BFGS(_QuasiNewton):
    update: str = "bfgs"  # one of BFGS_UPDATES

    def __post_init__(self):
        super().__post_init__()
        if self.update not in BFGS_UPDATES:
            raise ValueError(f"update must be one of {', '.join(BFGS_UPDATES)}, not {self.update!r}")

    def _fresh(self, state, f, g, iteration, evaluations):
        return BFGSState(g.new_zeros(0, 0), f, g, iteration, evaluations)

    def _empty(self, state):
        return state.H.numel() == 0

    def _direction(self, state):
        return -(state.H @ state.grad)

    def _remember(self, state, step, dy, t, sy, f, g, evaluations):
        H = state.H
        if H.numel() == 0:  # N&W eq. 6.20
            H = torch.eye(step.numel(), dtype=step.dtype, device=step.device) * (sy / (dy @ dy).item())
        H = self_scaled_update(H, step, dy, t, state.grad, self.update)
        return state._replace(H=H, loss=f, grad=g, evaluations=evaluations)

    def load_state_dict(self, saved: dict) -> BFGSState:
        return BFGSState(saved["H"], saved["loss"], saved["grad"], int(saved["iteration"]),
                         int(saved["evaluations"]))


def quasi_newton(name: str, options: dict) -> LBFGS | BFGS:
    """The method of a second-order stage ``name`` (`catalog.SECOND_ORDER_STAGES`) with its options."""
    if name == "lbfgs":
        return LBFGS(**options)
    return BFGS(update=name, **options)


def dense_bytes(p: int, dtype: torch.dtype) -> int:
    """The bytes of a dense [p, p] inverse Hessian of ``dtype``."""
    return p * p * torch.finfo(dtype).bits // 8
