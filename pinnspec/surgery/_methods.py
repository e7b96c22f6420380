"""The stateless surgery methods, one class per paper.

Each maps G ([m, p]) to a ([p]).  Small m x m algebra runs in float64; the
result has G's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from pinnspec.align import solve_dual
from pinnspec.align import unit_rows
from pinnspec.registry import SURGERY

from ._base import Surgery

__all__ = ["Sum", "PCGrad", "CAGrad", "IMTLG", "AlignedMTL", "UPGrad", "ConFIG", "config_direction"]


@SURGERY.register("none")
@dataclass(frozen=True)
class Sum(Surgery):
    """No surgery: a = sum_i g_i, the gradient of the summed loss (the paper's
    "Adam" control, Table 2)."""

    compiles = True
    sums = True

    def direction(self, G, *, generator=None):
        return G.sum(dim=0)


def _pcgrad_weights(gram: Tensor, orders: list[Tensor]) -> Tensor:
    """PCGrad as weights on the rows: g_i^PC = sum_j W[i, j] g_j.  [m, m]

    ``gram``: [m, m] = G G^T; ``orders[i]``: the order in which task i meets
    the other tasks.
    """
    m = gram.shape[0]
    weights = torch.eye(m, dtype=gram.dtype)  # [m, m]
    for i in range(m):
        for j in orders[i].tolist():
            if j == i:
                continue
            inner = gram[j] @ weights[i]  # <g_i^PC, g_j>
            if inner < 0:
                weights[i, j] -= inner / gram[j, j]
    return weights


@SURGERY.register("pcgrad")
@dataclass(frozen=True)
class PCGrad(Surgery):
    """PCGrad (Yu et al. 2020, "Gradient Surgery for Multi-Task Learning",
    Algorithm 1): for each task i, in a random order of the other tasks j,
    g_i^PC <- g_i^PC - min(<g_i^PC, g_j>, 0) / ||g_j||^2 g_j; a = sum_i g_i^PC.

    Each task's order is a fresh ``torch.randperm`` from the passed generator
    (required when m > 2: with two tasks the order does not matter).
    """

    permutation_invariant = False

    def direction(self, G, *, generator=None):
        m = G.shape[0]
        if m > 2 and generator is None:
            raise ValueError("pcgrad with more than two losses draws task orders: pass generator=torch.Generator")
        G64 = G.to(torch.float64)
        gram = (G64 @ G64.T).cpu()  # [m, m]
        gen_device = generator.device if generator is not None else torch.device("cpu")
        orders = [torch.randperm(m, generator=generator, device=gen_device).cpu() if m > 2 else torch.arange(m)
                  for _ in range(m)]
        weights = _pcgrad_weights(gram, orders).sum(dim=0)  # [m]
        return (weights.to(G64.device) @ G64).to(G.dtype)


@SURGERY.register("cagrad")
@dataclass(frozen=True)
class CAGrad(Surgery):
    """CAGrad (Liu et al. 2021, "Conflict-Averse Gradient Descent", Eq. (4) and
    Algorithm 1): with g_0 the mean gradient and phi = c ||g_0||, solve
    w* = argmin_{w in simplex} g_w^T g_0 + phi ||g_w|| (g_w = sum_i w_i g_i) and
    take d = g_0 + phi / ||g_w*|| g_w*.

    Scale: the official code's default ``rescale=1`` divides d by 1 + c^2; the
    result is then multiplied by m so that it is on the scale of the summed
    gradient (the surgery ``none``): a = m d / (1 + c^2).  The inner problem
    is solved like the official code (SLSQP on the m-simplex, here with the
    analytic gradient and tight tolerances) on the trace-normalised Gram matrix.
    """

    c: float = 0.5

    def __post_init__(self):
        if self.c < 0:
            raise ValueError(f"cagrad: c must be >= 0, got {self.c}")

    def direction(self, G, *, generator=None):
        from scipy.optimize import minimize

        m = G.shape[0]
        G64 = G.to(torch.float64)
        gram = (G64 @ G64.T).cpu().numpy()  # [m, m]
        trace = float(np.trace(gram))
        if trace == 0:
            return G.new_zeros(G.shape[1])
        A = gram / trace  # [m, m]   scale-free Gram
        g0_norm = math.sqrt(max(A.mean(), 0.0))  # ||g_0|| in the normalised scale
        phi = self.c * g0_norm
        A_g0 = A.mean(axis=1)  # [m]   G G^T 1 / m

        def objective(w):
            gw_sq = max(float(w @ A @ w), 1e-300)
            return float(w @ A_g0) + phi * math.sqrt(gw_sq)

        def gradient(w):
            gw_sq = max(float(w @ A @ w), 1e-300)
            return A_g0 + phi * (A @ w) / math.sqrt(gw_sq)

        if m == 1:
            w = np.ones(1)
        else:
            result = minimize(objective, np.full(m, 1.0 / m), jac=gradient, method="SLSQP",
                              bounds=[(0.0, 1.0)] * m,
                              constraints=({"type": "eq", "fun": lambda w: 1.0 - w.sum(),
                                            "jac": lambda w: -np.ones_like(w)},),
                              options={"ftol": 1e-15, "maxiter": 1000})
            w = np.clip(result.x, 0.0, None)
        gw_norm = math.sqrt(max(float(w @ A @ w), 0.0))
        weights = np.full(m, 1.0 / m)
        if gw_norm > 0:
            weights = weights + (phi / gw_norm) * w
        weights = weights * m / (1.0 + self.c ** 2)
        return (torch.from_numpy(weights).to(G64.device) @ G64).to(G.dtype)


@SURGERY.register("imtlg")
@dataclass(frozen=True)
class IMTLG(Surgery):
    """IMTL-G (Liu et al. 2021, "Towards Impartial Multi-task Learning", Sec. 3.2):
    a = sum_i alpha_i g_i with sum_i alpha_i = 1 and equal projections
    <a, g_i / ||g_i||> for all i.  Closed form, in the rank-tolerant form of
    Quinton & Rey 2024 (torchjd): v = pinv(G G^T) diag(G G^T)^(1/2),
    alpha = v / sum(v) (alpha = 0 when sum(v) vanishes)."""

    def direction(self, G, *, generator=None):
        G64 = G.to(torch.float64)
        gram = G64 @ G64.T  # [m, m]
        v = torch.linalg.pinv(gram, hermitian=True) @ gram.diagonal().clamp(min=0).sqrt()  # [m]
        total = v.sum()
        if v.abs().sum() == 0 or total.abs() <= 1e-12 * v.abs().sum():
            return G.new_zeros(G.shape[1])
        return ((v / total) @ G64).to(G.dtype)


@SURGERY.register("amtl")
@dataclass(frozen=True)
class AlignedMTL(Surgery):
    """Aligned-MTL (Senushkin et al. 2023, "Independent Component Alignment for
    Multi-Task Learning", Algorithm 1 and the official ProcrustesSolver): with
    G G^T = V diag(l) V^T (eigenvalues above max(l) m eps(dtype) kept),
    B = sqrt(s) V diag(l)^(-1/2) V^T aligns the gradients to an orthogonal,
    equal-norm system G~ = B G, and a = sum_i w_i g_i with w = B c.
    ``scale`` picks s: ``"min"`` the smallest kept eigenvalue, ``"median"``,
    or ``"rmse"`` the mean eigenvalue (the default, as the GUA authors ran it).
    ``reduce`` picks c: ``"mean"`` (the default) c = 1/m, the mean of the
    aligned gradients, as torchjd's ``AlignedMTL`` (weights B 1/m from its
    default preference vector); ``"sum"`` c = 1, their sum, as Algorithm 1 and
    the official code (the balancer sums the ProcrustesSolver's aligned
    gradients), m times the mean.  The GUA paper's runs used the mean: its
    released code (JingXiao10/GUA, ``experiments/PINN/trainer.py`` builds
    ``conflictfree/grad_operator.py``'s AlignedMTLOperator with its defaults)
    calls torchjd's AlignedMTL with the default preference vector,
    ``scale_mode="rmse"`` and ``scale_to_sum=False``; the paper's text cites
    A-MTL without naming a library or the reduction."""

    scale: str = "rmse"
    reduce: str = "mean"

    def __post_init__(self):
        for key, choices in (("scale", ("min", "median", "rmse")), ("reduce", ("mean", "sum"))):
            value = getattr(self, key)
            if value not in choices:
                raise ValueError(f"amtl: {key} must be one of {', '.join(map(repr, choices))}, got {value!r}")

    def direction(self, G, *, generator=None):
        m = G.shape[0]
        G64 = G.to(torch.float64)
        gram = G64 @ G64.T  # [m, m]
        eigenvalues, V = torch.linalg.eigh(gram)  # ascending
        tol = eigenvalues.max() * m * torch.finfo(G.dtype).eps
        keep = eigenvalues > tol
        if not bool(keep.any()):
            return G.new_zeros(G.shape[1])
        order = torch.argsort(eigenvalues, descending=True)
        order = order[keep[order]]
        eigenvalues, V = eigenvalues[order], V[:, order]  # [r], [m, r]
        if self.scale == "min":
            scale = eigenvalues[-1]
        elif self.scale == "median":
            scale = torch.median(eigenvalues)
        else:
            scale = eigenvalues.mean()
        B = scale.sqrt() * (V / eigenvalues.sqrt()) @ V.T  # [m, m]
        preference = torch.full((m,), 1.0 / m if self.reduce == "mean" else 1.0, dtype=torch.float64,
                                device=G64.device)  # c: [m]
        weights = B @ preference  # [m]
        return (weights @ G64).to(G.dtype)


@SURGERY.register("upgrad")
@dataclass(frozen=True)
class UPGrad(Surgery):
    """UPGrad (Quinton & Rey 2024, "Jacobian Descent for Multi-Objective
    Optimization", Eq. (3) and Sec. 3): a = (1/m) sum_i pi(g_i), pi the
    Euclidean projection onto the dual cone {d : G d >= 0}.  Each projection
    is solved exactly in the m-dimensional dual (pinnspec.align.solve_dual:
    active-set enumeration / NNLS), without a regulariser."""

    conflict_free = True

    def direction(self, G, *, generator=None):
        m = G.shape[0]
        G64 = G.to(torch.float64)
        norms = G64.norm(dim=1)  # [m]
        keep = norms > 0
        if not bool(keep.any()):
            return G.new_zeros(G.shape[1])
        G_unit = G64[keep] / norms[keep, None]  # [k, p]
        K = G_unit @ G_unit.T  # [k, k]
        weights = torch.zeros(m, dtype=torch.float64, device=G64.device)  # on the rows of G
        index = torch.nonzero(keep).flatten()
        for position, i in enumerate(index.tolist()):
            b = K[:, position]  # [k]   <g_k/|g_k|, g_i/|g_i|>
            lam = torch.from_numpy(solve_dual(K, b)).to(G64.device) * norms[i]  # [k]
            weights[i] += 1.0
            weights[index] += lam / norms[keep]
        return ((weights / m) @ G64).to(G.dtype)


#: the ridge that stands in for the pseudo-inverse in ConFIG's direction for m >= 3 (see config_direction)
CONFIG_RIDGE = 1e-10


def config_direction(G: Tensor) -> Tensor:
    """ConFIG's direction for the rows of G ([m, p] -> [p]); see :class:`ConFIG`.

    For m >= 3, pinv(U) 1 = lim_{d -> 0} U^T (U U^T + d I)^{-1} 1: an m x m solve at d = ``CONFIG_RIDGE``
    instead of a pseudo-inverse.  The Gram matrix of unit rows has eigenvalues in [0, m]; along an
    eigenvalue l > 0 the solve differs from the pseudo-inverse by d / (l + d).  A null direction of U U^T
    is one U^T maps to zero: exactly for a zero row or a repeated one; where U x = 1 has no solution (four
    rows in one plane, say) rounding leaves about 1e-16 / d of it.
    LU without error checks never waits for the device, so the direction records into a CUDA graph; an
    eigh- or SVD-based pseudo-inverse would not.
    """
    m = G.shape[0]
    G64 = G.to(torch.float64)
    units = unit_rows(G64)  # [m, p]
    if m == 2:
        best = units[0] + units[1]  # closed form: x = (u_1 + u_2) / (1 + cos) solves U x = 1
    else:
        gram = units @ units.T  # [m, m]
        system = gram + CONFIG_RIDGE * torch.eye(m, dtype=torch.float64, device=G64.device)  # [m, m]
        lu, pivots, _ = torch.linalg.lu_factor_ex(system, check_errors=False)
        ones = torch.ones(m, 1, dtype=torch.float64, device=G64.device)  # [m, 1]
        best = units.T @ torch.linalg.lu_solve(lu, pivots, ones)[:, 0]  # [p]
    norm = best.norm()
    unit = best / torch.where(norm > 0, norm, 1.0)  # [p]; zero when every row is zero (no host decision)
    return ((G64 @ unit).sum() * unit).to(G.dtype)


@SURGERY.register("config")
@dataclass(frozen=True)
class ConFIG(Surgery):
    """ConFIG (Liu et al. 2025, "ConFIG: Towards Conflict-free Training of
    Physics Informed Neural Networks", Eq. (2)-(3)): with U the unit rows,
    a = (sum_i g_i^T a_u) a_u, a_u = normalise(pinv(U) 1).  For m = 2 the
    pseudo-inverse has the closed form pinv(U) 1 ∝ u_1 + u_2; a zero gradient
    counts as a zero unit row (so for m = 2, a = g_2 when g_1 = 0, never NaN)."""

    conflict_free = True
    compiles = True

    def direction(self, G, *, generator=None):
        return config_direction(G)
