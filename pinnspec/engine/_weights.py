"""Loss balancing: per-task weights lambda [m], the first stage of the update chain (`_chain`).

The chain scales the rows of G before surgery, G <- diag(lambda) G (the task losses scaled by lambda); the
weights are the chain state's ``weights`` [m] (None for ``weights none``, which leaves the chain untouched).
Every ``every`` epochs (epoch k with k % every == 0, counted from 0) the trainer measures one magnitude s_i
per task and moves the weights towards the balancing target (jaxpi, ``models.py``: ``compute_weights`` and
``TrainState.apply_weights``)::

    lambda_hat_i = mean_j(s_j) / s_i
    lambda      <- alpha * lambda + (1 - alpha) * lambda_hat         (initially lambda = 1)

    gradnorm:  s_i = ||g_i||, the row norms of G (the epoch's G, unweighted): learning-rate annealing
               (Wang, Teng & Perdikaris 2021, "Understanding and mitigating gradient flow pathologies in
               physics-informed neural networks", arXiv:2001.04536, Algorithm 1) in the gradient-norm form
               of Wang et al. 2023 ("An expert's guide to training PINNs", arXiv:2308.08468, Sec. 3.2), whose
               text normalises by the sum of the norms; jaxpi's code, followed here, by their mean (a common
               factor m on every weight)
    ntk:       s_i = mean of the NTK diagonal of task i, sum_c w_c mean_{x in S_c} ||d r_c(x) / d theta||^2
               over a subsample S_c of ``points`` points of each condition c of the task (weight w_c)
               (Wang, Yu & Perdikaris 2022, "When and why PINNs fail to train: a neural tangent kernel
               perspective", arXiv:2007.14527, Algorithm 1: lambda_i = tr K / tr K_ii, with jaxpi's means of
               the diagonals in place of the traces, so that sets of different sizes compare)

A task whose magnitude is 0 keeps its weight (lambda_hat_i = lambda_i): it carries no information.  Every
operation is a device computation: no host synchronisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from .. import ir
from ..compiler import TorchPointSet, host_to_device

__all__ = ["Weighting", "NoWeights", "GradNorm", "NTKWeights", "ResidualAttention", "WEIGHTINGS", "make_weighting",
           "balanced_target", "ntk_magnitudes"]


def balanced_target(magnitudes: Tensor, weights: Tensor) -> Tensor:
    """lambda_hat [m] from the per-task magnitudes s [m]: mean(s) / s_i, or lambda_i where s_i = 0."""
    s = magnitudes.to(weights.dtype)  # [m]
    positive = s > 0
    return torch.where(positive, s.mean() / torch.where(positive, s, torch.ones_like(s)), weights)


class Weighting:
    """Base of the weighting stages (subclasses are frozen dataclasses whose fields are the statement's
    keyword arguments).  ``measures``: what the magnitudes come from: "G" (the chain's own input), "ntk"
    (per-point residual gradients, which the trainer computes: `Trainer._ntk_magnitudes`), None (no weights)."""

    name: ClassVar[str] = ""
    measures: ClassVar[str | None] = None
    pointwise: ClassVar[bool] = False  # weights points of the conditions (rba), not the tasks

    def init(self, num_losses: int, *, dtype: torch.dtype, device: torch.device | str | None) -> Tensor | None:
        """The initial weights: ones [m] (None: the chain does not weight)."""
        return torch.ones(num_losses, dtype=dtype, device=device)

    def due(self, epoch: int) -> bool:
        """Whether the weights are measured after epoch ``epoch`` (from 0): a host decision on the counter."""
        return self.measures is not None and epoch % self.every == 0

    def update(self, weights: Tensor, magnitudes: Tensor) -> Tensor:
        """lambda <- alpha lambda + (1 - alpha) lambda_hat.  [m] -> [m]"""
        return self.alpha * weights + (1.0 - self.alpha) * balanced_target(magnitudes, weights)

    def _check(self) -> None:
        if not (isinstance(self.every, int) and self.every >= 1):
            raise ValueError(f"{self.name}: every must be a whole number of at least 1, got {self.every!r}")
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(f"{self.name}: alpha must be in [0, 1), got {self.alpha!r}")


@dataclass(frozen=True)
class NoWeights(Weighting):
    """``weights none`` (the default): no stage; G reaches surgery as computed."""

    name: ClassVar[str] = "none"

    def init(self, num_losses, *, dtype, device):
        return None

    def due(self, epoch):
        return False


@dataclass(frozen=True)
class GradNorm(Weighting):
    """Learning-rate annealing (Wang, Teng & Perdikaris 2021, arXiv:2001.04536, Algorithm 1), jaxpi's
    "grad_norm": s_i = ||g_i||, so that every weighted row lambda_hat_i g_i has the mean norm."""

    name: ClassVar[str] = "gradnorm"
    measures: ClassVar[str] = "G"
    every: int = 100
    alpha: float = 0.9

    def __post_init__(self):
        self._check()

    @staticmethod
    def magnitudes(G: Tensor) -> Tensor:
        """||g_i||: G [m, p] -> [m] (float64)."""
        return G.detach().to(torch.float64).norm(dim=1)


@dataclass(frozen=True)
class NTKWeights(Weighting):
    """NTK weights (Wang, Yu & Perdikaris 2022, arXiv:2007.14527, Algorithm 1), jaxpi's "ntk": s_i the mean
    NTK diagonal of task i on a subsample of ``points`` points per condition (`ntk_diagonal_mean`)."""

    name: ClassVar[str] = "ntk"
    measures: ClassVar[str] = "ntk"
    every: int = 100
    alpha: float = 0.9
    points: int = 256

    def __post_init__(self):
        self._check()
        if not (isinstance(self.points, int) and self.points >= 1):
            raise ValueError(f"ntk: points must be a whole number of at least 1, got {self.points!r}")


@dataclass(frozen=True)
class ResidualAttention(Weighting):
    """Residual-based attention, RBA (Anagnostopoulos, Toscano, Stergiopulos & Karniadakis 2024, "Residual-based
    attention in physics-informed neural networks", CMAME 421, 116805): one weight per collocation point of every
    condition, lambda_j = 0 at the start, and at every step, from the residuals r at the step's parameters,

        lambda_j <- gamma lambda_j + eta |r_j| / max_k |r_k|           (over the condition's points)

    the condition's loss then mean_j (lambda_j r_j)^2 (|r_j|^2: the sum over its components), no gradient
    through lambda.  It weights points, not tasks: the chain's task weights stay unset (``init`` None) and the
    trainer keeps lambda (`Trainer._attend`).  The defaults (eta, gamma) = (1e-3, 0.999) bound lambda by
    eta / (1 - gamma) = 1, PINA's RBAPINN defaults."""

    name: ClassVar[str] = "rba"
    pointwise: ClassVar[bool] = True
    eta: float = 1e-3
    gamma: float = 0.999

    def __post_init__(self):
        if not self.eta > 0:
            raise ValueError(f"rba: eta must be above 0, got {self.eta!r}")
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"rba: gamma must be in (0, 1), got {self.gamma!r}")

    def init(self, num_losses, *, dtype, device):
        return None

    def due(self, epoch):
        return False

    def updated(self, weights: Tensor, magnitudes: Tensor) -> Tensor:
        """lambda [N], |r| [N] -> the new lambda [N] (detached; a condition whose residual is 0 only decays)."""
        top = magnitudes.max()
        scaled = magnitudes / torch.where(top > 0, top, torch.ones_like(top))  # [N]
        return (self.gamma * weights + self.eta * scaled).detach()


WEIGHTINGS: dict[str, type[Weighting]] = {"none": NoWeights, "gradnorm": GradNorm, "ntk": NTKWeights,
                                          "rba": ResidualAttention}


def make_weighting(name: str, **options) -> Weighting:
    return WEIGHTINGS[name](**options)


def ntk_diagonal_mean(residuals: Tensor, theta: list[Tensor]) -> Tensor:
    """mean_j sum_k ||d r_jk / d theta||^2 for residuals [n, C] (a graph to ``theta``): one backward pass per
    point and component.  -> [] float64 (on theta's device)."""
    n, components = residuals.shape
    total = torch.zeros((), dtype=torch.float64, device=residuals.device)
    for j in range(n):
        for k in range(components):
            grads = torch.autograd.grad(residuals[j, k], theta, retain_graph=True, allow_unused=True)
            total = total + sum(g.detach().to(torch.float64).square().sum() for g in grads if g is not None)
    return total / n


def ntk_magnitudes(problem, model: torch.nn.Module, params: dict, theta: list[Tensor], points, tasks, *,
                   subsample: int, seed: int, epoch: int, engine: str | None) -> Tensor:
    """The `ntk` weighting's magnitudes: s_i = sum_c w_c mean_{x in S_c} ||d r_c(x) / d theta||^2 over the
    conditions c of task i (``tasks``: the grouping's, weight w_c; a pooled loss weighs each of its conditions
    by its share of the pool's points), S_c a subsample of ``subsample`` points of c's set in ``points``, drawn
    from a generator seeded by (seed, epoch): a resumed run draws the same.  -> [m] float64"""
    draw = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    diagonal: dict[str, Tensor] = {}
    for index in problem.by_set:
        s = points.sets[index]
        n = len(s.x)
        if n == 0:
            continue
        rows = torch.randperm(n, generator=draw)[: min(subsample, n)].sort().values  # [n_sub], CPU
        residuals = problem.set_residuals(index, model, _subset(s, rows), params,
                                          engine=engine)
        for name, r in residuals.items():
            diagonal[name] = ntk_diagonal_mean(r, theta)
    zero = torch.zeros((), dtype=torch.float64, device=theta[0].device)
    counts = problem.counts(points)
    totals = []
    for task in tasks:
        total = zero
        for weight, atom in task.terms:
            if isinstance(atom, ir.PoolLoss):
                pooled = sum(counts[c] for c in atom.conditions)
                total = total + float(weight) * sum(diagonal.get(c, zero) * (counts[c] / pooled)
                                                    for c in atom.conditions)
            else:
                total = total + float(weight) * diagonal.get(atom.condition, zero)
        totals.append(total)
    return torch.stack(totals)  # [m]


def _subset(s, rows: Tensor) -> TorchPointSet:
    """The points ``rows`` (sorted, on the CPU) of the point set ``s``, as a new set whose coordinates
    require grad (the derivative plan's inputs); a per-face set keeps its faces' slices."""
    index = host_to_device(rows, torch.long, s.x.device)  # [n_sub]
    take = lambda a: None if a is None else a.detach()[index]  # noqa: E731
    faces = None
    if s.face_slices is not None:
        bounds = [(f.start or 0, len(s.x) if f.stop is None else f.stop) for f in s.face_slices]
        faces = tuple(slice(int((rows < a).sum()), int((rows < b).sum())) for a, b in bounds)
    partner = take(s.partner)
    return TorchPointSet(take(s.x).requires_grad_(True), faces, None if partner is None else partner.requires_grad_(True),
                     take(s.observed), None, take(s.normals))
