"""Conflict indicators of the paper's Appendix C.7 ("Evaluation Metrics").

A direction d conflicts with the loss-specific gradients when, for some i,

    <g_i, d> / (||g_i|| ||d|| + eps) < -1e-6.

R_g uses the same test on pairs (g_i, g_j), i < j.  The engine averages the
per-step booleans over the steps with a positive learning rate.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["conflicts", "conflicting", "conflict_mask", "conflict_indicators", "CONFLICT_THRESHOLD", "CONFLICT_EPS"]

#: a normalised inner product below -CONFLICT_THRESHOLD is a conflict
CONFLICT_THRESHOLD = 1e-6
#: the epsilon added to the denominator ||g_i|| ||d||
CONFLICT_EPS = 1e-12


def _normalised_inner(G: Tensor, d: Tensor) -> Tensor:
    """<g_i, d> / (||g_i|| ||d|| + eps) for every row; float64.  [m]"""
    G64 = G.detach().to(torch.float64)  # [m, p]
    d64 = d.detach().to(torch.float64)  # [p]
    return (G64 @ d64) / (G64.norm(dim=1) * d64.norm() + CONFLICT_EPS)


def conflict_mask(G: Tensor, d: Tensor) -> Tensor:
    """Whether ``d`` conflicts with some row of ``G``, as a bool tensor on their device (no host
    synchronisation).  ``G``: [m, p], ``d``: [p]."""
    return (_normalised_inner(G, d) < -CONFLICT_THRESHOLD).any()


def conflicting(G: Tensor, d: Tensor) -> bool:
    """True when ``d`` conflicts with some row of ``G`` (``G``: [m, p], ``d``: [p])."""
    if G.shape[0] == 0:
        return False
    return bool(conflict_mask(G, d))


def conflict_indicators(G: Tensor, directions: list[Tensor]) -> Tensor:
    """The indicators of :func:`conflicts` as one float64 tensor on G's device, no host
    synchronisation: [R_g, then one per direction], each 0.0 or 1.0.  [1 + len(directions)]"""
    G64 = G.detach().to(torch.float64)  # [m, p]
    norms = G64.norm(dim=1)  # [m]
    cos = (G64 @ G64.T) / (norms[:, None] * norms[None, :] + CONFLICT_EPS)  # [m, m]
    upper = torch.triu(torch.ones_like(cos, dtype=torch.bool), diagonal=1)
    flags = [((cos < -CONFLICT_THRESHOLD) & upper).any()]
    flags += [conflict_mask(G64, d) for d in directions]
    return torch.stack(flags).to(torch.float64)


def conflicts(G: Tensor, a: Tensor | None = None, u: Tensor | None = None,
              p: Tensor | None = None) -> dict[str, bool | None]:
    """Per-step conflict indicators ``{"R_g", "R_a", "R_u", "R_p"}``.

    ``G``: [m, p] loss-specific gradients; ``a`` constructed direction,
    ``u`` optimizer proposal, ``p`` aligned update (each [p]).  A direction
    that is not given (e.g. ``p`` without alignment) gives ``None``.
    """
    given = {key: d for key, d in (("R_a", a), ("R_u", u), ("R_p", p)) if d is not None}
    values = iter(conflict_indicators(G, list(given.values())).tolist())
    result: dict[str, bool | None] = {"R_g": bool(next(values))}
    for key in ("R_a", "R_u", "R_p"):
        result[key] = bool(next(values)) if key in given else None
    return result
