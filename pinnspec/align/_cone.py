"""Projection onto the conflict-free cone C = {d : G d >= 0}, in the m-dimensional dual.

The paper (gradient-update-alignment.tex, Eq. (gua_projection) and Appendix
"Projection Solver") projects the optimizer proposal u onto C under a diagonal
metric M:

    p = argmin_d  1/2 ||d - u||_M^2   s.t.  G d >= 0          G: [m, p]

Its Lagrange dual lives in R^m:

    min_{lam >= 0}  1/2 lam^T K lam + b^T lam,   K = G M^-1 G^T,  b = G u,
    p = u + M^-1 G^T lam.

Only m x m matrices and m x p products are formed: the cost is O(m^2 p) and no
p x p matrix ever exists.  The dual is solved by exact active-set enumeration
for m <= 8 (as the paper does for m in {2, 3}) and by a Lawson-Hanson
active-set NNLS on the dual for larger m.

The enumeration runs where the gradients are, in torch, as one batch over the
2^m active sets, and ``project`` takes no decision on the host: on a GPU the
whole projection is queued without a synchronisation (the NNLS above 8 tasks
is sequential and runs on the host).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import torch
from torch import Tensor

__all__ = ["project", "solve_dual", "ENUMERATION_MAX_TASKS"]

#: largest number of (nonzero) constraints solved by active-set enumeration
ENUMERATION_MAX_TASKS = 8

_REL_TOL = 1e-9  # KKT tolerance, relative to the (rescaled) dual problem
_SINGULAR = 1e-12  # an active set whose smallest LU pivot is below this times its largest is singular


def solve_dual(K, b, *, method: str = "auto") -> np.ndarray:
    """Solve ``min_{lam >= 0} 1/2 lam^T K lam + b^T lam`` for a PSD ``K``.

    ``K``: [m, m], ``b``: [m] (tensors or arrays).  ``method``: ``"auto"``
    (enumeration for m <= 8, NNLS above), ``"enumerate"`` or ``"nnls"``.
    Returns lam: [m] float64 numpy array, lam >= 0.
    """
    K = _as_numpy(K)
    b = _as_numpy(b)
    m = b.shape[0]
    if K.shape != (m, m):
        raise ValueError(f"K must be [{m}, {m}], got {list(K.shape)}")
    if m == 0:
        return np.zeros(0)
    if np.all(b >= 0):
        return np.zeros(m)  # lam = 0 satisfies the KKT conditions exactly
    # Rescale to max diag(K) = 1 and max |b| = 1: with K' = K / k and b' = b / beta
    # the solution is lam' = k lam / beta, so the KKT tolerances below are relative.
    k = float(np.max(np.diag(K)))
    beta = float(np.max(np.abs(b)))
    if not np.isfinite(k) or k <= 0 or not np.isfinite(beta):
        raise ValueError("K must be a finite positive semi-definite matrix with a positive diagonal, b finite")
    K1 = K / k
    b = b / beta
    if method == "auto":
        method = "enumerate" if m <= ENUMERATION_MAX_TASKS else "nnls"
    if method == "enumerate":
        lam, found = _enumerate_active_sets(torch.from_numpy(K1), torch.from_numpy(b))
        # numerically nothing passed the KKT test: fall back
        lam = lam.numpy() if bool(found) else _nnls_gram(K1, b)
    elif method == "nnls":
        lam = _nnls_gram(K1, b)
    else:
        raise ValueError(f"unknown dual solver '{method}' (known: auto, enumerate, nnls)")
    return lam * (beta / k)


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


_SUBSETS: dict[tuple[int, str], Tensor] = {}


def _subsets(m: int, device: torch.device) -> Tensor:
    """Every subset of range(m) as a row of a bool mask, by size, then in ``combinations`` order
    (the empty set first).  [2^m, m]"""
    if torch.compiler.is_compiling():  # traced: a constant of the graph, and no guard on the cache
        return _subset_rows(m, device)
    key = (m, str(device))
    if key not in _SUBSETS:
        _SUBSETS[key] = _subset_rows(m, device)
    return _SUBSETS[key]


def _subset_rows(m: int, device: torch.device) -> Tensor:
    rows = [[i in S for i in range(m)] for size in range(m + 1) for S in combinations(range(m), size)]
    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(len(rows), m)


def _enumerate_active_sets(K: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Exact active-set enumeration (paper, Appendix "Projection Solver"), all 2^m sets in one batch
    on K's device, without a host synchronisation.  K: [m, m], b: [m], float64, rescaled so that
    max diag(K) = 1.

    For every active set S: solve K_SS lam_S = -b_S, set the other multipliers to zero, keep the
    candidates that satisfy the KKT conditions lam >= 0, b + K lam >= 0 and (b + K lam)_S = 0,
    and take the one with the smallest dual objective (the first of equal ones).  A set whose K_SS
    is singular (rows that are zero, repeated or dependent) is skipped: some set of independent rows
    gives the same projection (Caratheodory's theorem for cones).  Returns (lam [m] >= 0, found):
    ``found`` (a bool tensor) is false when no set passed the KKT test numerically; lam is then the
    candidate that violates it least.
    """
    m = b.shape[0]
    active = _subsets(m, K.device).to(K.dtype)  # [n, m]
    system = K * active[:, :, None] * active[:, None, :] + torch.diag_embed(1.0 - active)  # [n, m, m]
    lu, pivots, _ = torch.linalg.lu_factor_ex(system, check_errors=False)
    lam = torch.linalg.lu_solve(lu, pivots, -(b * active)[:, :, None])[:, :, 0] * active  # [n, m]
    pivot = lu.diagonal(dim1=-2, dim2=-1).abs()  # [n, m]; inactive rows pivot on their 1
    regular = pivot.amin(dim=1) > _SINGULAR * pivot.amax(dim=1)  # [n]
    slack = lam @ K + b  # [n, m]   gradient of the dual objective
    tol = _REL_TOL * (1.0 + lam.abs().amax(dim=1, keepdim=True))  # [n, 1]
    violation = torch.stack([(-lam - tol).amax(dim=1), (-slack - tol).amax(dim=1),
                             ((slack.abs() - tol) * active).amax(dim=1)]).amax(dim=0)  # [n]
    violation = torch.where(regular & torch.isfinite(violation), violation, torch.inf)
    ok = violation <= 0  # [n]
    objective = 0.5 * ((lam @ K) * lam).sum(dim=1) + lam @ b  # [n]
    found = ok.any()
    best = torch.where(found, torch.where(ok, objective, torch.inf).argmin(), violation.argmin())
    return lam.index_select(0, best.reshape(1))[0].clamp_min(0.0), found


def _nnls_gram(K: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """Lawson-Hanson active-set NNLS written on the Gram form of the dual.

    The dual equals the NNLS problem min_{lam>=0} ||A lam - y|| with
    A = M^-1/2 G^T and y = -M^1/2 u; only A^T A = K and A^T y = -b are needed,
    so the loop runs entirely in R^m (Lawson & Hanson 1974, Ch. 23).
    """
    m = b.shape[0]
    max_iter = max_iter or 30 * m + 100
    lam = np.zeros(m)
    passive = np.zeros(m, dtype=bool)
    w = -(K @ lam + b)  # [m]   negative dual gradient
    tol = _REL_TOL * (1.0 + np.abs(b).max())
    iterations = 0
    while iterations < max_iter:
        candidates = np.where(~passive & (w > tol))[0]
        if candidates.size == 0:
            break
        j = candidates[np.argmax(w[candidates])]
        passive[j] = True
        while iterations < max_iter:
            iterations += 1
            idx = np.where(passive)[0]
            s = np.zeros(m)
            s[idx] = np.linalg.lstsq(K[np.ix_(idx, idx)], -b[idx], rcond=1e-13)[0]
            if np.all(s[idx] > 0):
                lam = s
                break
            blocking = idx[s[idx] <= 0]
            steps = lam[blocking] / np.maximum(lam[blocking] - s[blocking], 1e-300)
            alpha = float(np.min(steps))
            lam = lam + alpha * (s - lam)
            drop = passive & (lam <= tol * 1e-3)
            drop[blocking[np.argmin(steps)]] = True  # the blocking index leaves
            passive &= ~drop
            lam[~passive] = 0.0
            if not passive.any():
                break
        w = -(K @ lam + b)
    return np.maximum(lam, 0.0)


def unit_rows(G64: Tensor) -> Tensor:
    """Rows of G divided by their norms; rows of zero (or non-finite) norm become zero rows, which
    constrain nothing.  [m, p]"""
    norms = G64.norm(dim=1, keepdim=True)  # [m, 1]
    usable = (norms > 0) & torch.isfinite(norms)
    return torch.where(usable, G64 / torch.where(usable, norms, 1.0), 0.0)


def _dual_on_device(K: Tensor, b: Tensor) -> Tensor:
    """:func:`solve_dual` by enumeration where K and b are, with no host synchronisation: rescaled to
    max diag(K) = 1, max |b| = 1 like the host solver (lam' = k lam / beta).  [m]"""
    k = K.diagonal().amax().clamp_min(torch.finfo(K.dtype).tiny)
    beta = b.abs().amax().clamp_min(torch.finfo(b.dtype).tiny)
    lam, _ = _enumerate_active_sets(K / k, b / beta)
    return lam * (beta / k)


def project(u: Tensor, G: Tensor, metric: Tensor | None = None, *, solver: str = "auto",
            check: bool = True) -> Tensor:
    """Project ``u`` onto ``{d : G d >= 0}`` under ``||.||_M``, M = diag(metric).

    ``u``: [p]; ``G``: [m, p] (rows are the loss-specific gradients g_i);
    ``metric``: None (Euclidean) or [p] with positive entries.  Returns p: [p]
    in u's dtype, exactly ``u`` when u is already in the cone.

    Works in float64 on row-normalised G and unit u (rows of zero norm
    constrain nothing, the scale of u is restored at the end): positive
    rescaling of the rows leaves the cone unchanged, and the projection is
    positively homogeneous in u.  With enumeration (``solver`` "auto" up to 8
    rows, or "enumerate") nothing is decided on the host; ``check=False``
    also skips the (synchronising) test that the metric is positive.
    """
    if u.dim() != 1 or G.dim() != 2 or G.shape[1] != u.shape[0]:
        raise ValueError(f"project expects u: [p] and G: [m, p]; got {list(u.shape)} and {list(G.shape)}")
    if solver not in ("auto", "enumerate", "nnls"):
        raise ValueError(f"unknown dual solver '{solver}' (known: auto, enumerate, nnls)")
    if metric is not None:
        if metric.shape != u.shape:
            raise ValueError(f"metric must be [p] = {list(u.shape)}, got {list(metric.shape)}")
        if check and not bool((metric > 0).all()):
            raise ValueError("metric must be strictly positive")
    m = G.shape[0]
    if m == 0:
        return u.clone()
    G_unit = unit_rows(G.detach().to(torch.float64))  # [m, p]
    u64 = u.detach().to(torch.float64)
    u_norm = u64.norm()
    u_unit = u64 / u_norm  # [p]
    b = G_unit @ u_unit  # [m]
    Minv_G = G_unit if metric is None else G_unit / metric.detach().to(torch.float64)  # [m, p]
    K = Minv_G @ G_unit.T  # [m, m]
    if solver == "enumerate" or (solver == "auto" and m <= ENUMERATION_MAX_TASKS):
        lam = _dual_on_device(K, b)  # [m]
    elif not (bool(torch.isfinite(u_norm)) and bool(u_norm > 0)):  # the host solver: decide here
        return u.clone()
    else:
        lam = torch.from_numpy(solve_dual(K, b, method="nnls")).to(u64.device)  # [m], on the host
    projected = ((u_unit + lam @ Minv_G) * u_norm).to(u.dtype)  # [p]
    inside = ~(b < 0).any() | ~(u_norm > 0) | ~torch.isfinite(u_norm)  # u in the cone (or no direction)
    return torch.where(inside, u, projected)
