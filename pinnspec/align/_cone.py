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
        lam = _enumerate_active_sets(K1, b)
        if lam is None:  # numerically nothing passed the KKT test: fall back
            lam = _nnls_gram(K1, b)
    elif method == "nnls":
        lam = _nnls_gram(K1, b)
    else:
        raise ValueError(f"unknown dual solver '{method}' (known: auto, enumerate, nnls)")
    return lam * (beta / k)


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _enumerate_active_sets(K: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Exact active-set enumeration (paper, Appendix "Projection Solver").

    For every active set S: solve K_SS lam_S = -b_S (pseudo-inverse, so that
    singular K_SS from duplicate or opposite rows is handled), set the other
    multipliers to zero, keep the candidates that satisfy the KKT conditions
    lam >= 0, b + K lam >= 0 and (b + K lam)_S = 0, and return the one with the
    smallest dual objective.  All subsets of one size are solved as one batch.
    """
    m = b.shape[0]
    best, best_obj = None, np.inf
    for size in range(1, m + 1):
        subsets = np.array(list(combinations(range(m), size)))  # [n, size]
        K_ss = K[subsets[:, :, None], subsets[:, None, :]]  # [n, size, size]
        b_s = b[subsets]  # [n, size]
        lam_s = -np.einsum("nij,nj->ni", np.linalg.pinv(K_ss, rcond=1e-13, hermitian=True), b_s)
        lam = np.zeros((len(subsets), m))  # [n, m]
        np.put_along_axis(lam, subsets, lam_s, axis=1)
        slack = lam @ K + b  # [n, m]   gradient of the dual objective
        tol = _REL_TOL * (1.0 + np.abs(lam).max(axis=1))  # [n]
        ok = (lam_s >= -tol[:, None]).all(axis=1)
        ok &= (slack >= -tol[:, None]).all(axis=1)
        ok &= (np.abs(np.take_along_axis(slack, subsets, axis=1)) <= tol[:, None]).all(axis=1)
        if not ok.any():
            continue
        obj = 0.5 * np.einsum("ni,ni->n", lam, lam @ K) + lam @ b  # [n]
        obj[~ok] = np.inf
        i = int(np.argmin(obj))
        if obj[i] < best_obj:
            best_obj, best = obj[i], lam[i]
    return None if best is None else np.maximum(best, 0.0)


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


def _normalised_rows(G64: Tensor) -> Tensor:
    """Rows of G divided by their norms, zero rows dropped.  [k, p], k <= m."""
    norms = G64.norm(dim=1)  # [m]
    keep = (norms > 0) & torch.isfinite(norms)
    return G64[keep] / norms[keep, None]


def project(u: Tensor, G: Tensor, metric: Tensor | None = None, *, solver: str = "auto") -> Tensor:
    """Project ``u`` onto ``{d : G d >= 0}`` under ``||.||_M``, M = diag(metric).

    ``u``: [p]; ``G``: [m, p] (rows are the loss-specific gradients g_i);
    ``metric``: None (Euclidean) or [p] with positive entries.  Returns p: [p]
    in u's dtype, exactly ``u`` when u is already in the cone.

    Works in float64 on row-normalised G and unit u (rows of zero norm are
    dropped, the scale of u is restored at the end): positive rescaling of the
    rows leaves the cone unchanged, and the projection is positively
    homogeneous in u.
    """
    if u.dim() != 1 or G.dim() != 2 or G.shape[1] != u.shape[0]:
        raise ValueError(f"project expects u: [p] and G: [m, p]; got {list(u.shape)} and {list(G.shape)}")
    if metric is not None:
        if metric.shape != u.shape:
            raise ValueError(f"metric must be [p] = {list(u.shape)}, got {list(metric.shape)}")
        if not bool((metric > 0).all()):
            raise ValueError("metric must be strictly positive")
    G_unit = _normalised_rows(G.detach().to(torch.float64))  # [k, p]
    u64 = u.detach().to(torch.float64)
    u_norm = u64.norm()
    if G_unit.shape[0] == 0 or u_norm == 0 or not torch.isfinite(u_norm):
        return u.clone()
    u_unit = u64 / u_norm  # [p]
    b = G_unit @ u_unit  # [k]
    if bool((b >= 0).all()):
        return u.clone()
    if metric is None:
        Minv_G = G_unit  # [k, p]
    else:
        Minv_G = G_unit / metric.detach().to(torch.float64)  # [k, p]
    K = Minv_G @ G_unit.T  # [k, k]
    lam = torch.from_numpy(solve_dual(K, b, method=solver)).to(u64.device)  # [k]
    p_unit = u_unit + lam @ Minv_G  # [p]
    return (p_unit * u_norm).to(u.dtype)
