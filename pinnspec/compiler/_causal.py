"""Causal training: an equation's loss weighted over time chunks.

Wang, Sankaran & Perdikaris, "Respecting causality for training physics-informed neural networks"
(CMAME 2024, arXiv:2203.07404), eqs. (3.8)-(3.10), in the chunked form of jaxpi (`res_and_w`): the time
interval [t0, t1] is cut into M equal chunks; with L_k the mean squared residual (components summed) of the
points whose time falls in chunk k,

    w_k = exp(-eps * sum_{j<k} L_j)        (no gradient flows through w)
    L   = (1/M) sum_k w_k L_k

so a chunk's residual counts only once the residual before it is small.  A chunk without points has L_k = 0.
With every w_k = 1 and equal chunk counts, L is the plain mean.  The reduction has no host synchronisation
and static shapes: it runs inside the compiled step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["CausalChunks"]


@dataclass(frozen=True)
class CausalChunks:
    eps: float
    chunks: int
    time_column: int  # the time coordinate's column of the points
    t0: float
    t1: float

    def chunk_losses(self, squares: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """squares [N] (per-point sums of squared components), x [N, d] -> L [M]: each chunk's mean."""
        t = x[:, self.time_column].detach()  # [N]
        index = ((t - self.t0) * (self.chunks / (self.t1 - self.t0))).floor().clamp(0, self.chunks - 1).long()  # [N]
        sums = squares.new_zeros(self.chunks).index_add(0, index, squares)  # [M]
        counts = squares.new_zeros(self.chunks).index_add(0, index, torch.ones_like(squares))  # [M]
        return sums / counts.clamp(min=1)  # [M]

    def weights(self, chunk_losses: torch.Tensor) -> torch.Tensor:
        """L [M] -> w [M] = exp(-eps * (the exclusive cumulative sum of L)), detached."""
        losses = chunk_losses.detach()  # [M]
        return torch.exp(-self.eps * (torch.cumsum(losses, 0) - losses))

    def loss(self, squares: torch.Tensor, x: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """The causal loss (a scalar) of per-point squares [N] at points x [N, d]; ``weights`` [M]: fixed
        chunk weights instead of the ones of these squares (an lbfgs stage's frozen objective)."""
        losses = self.chunk_losses(squares, x)  # [M]
        return ((self.weights(losses) if weights is None else weights) * losses).mean()
