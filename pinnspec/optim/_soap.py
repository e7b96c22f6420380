"""SOAP in proposal form (Vyas et al. 2025, "SOAP: Improving and Stabilizing
Shampoo using Adam", Algorithm 1 and the official code).

Per parameter tensor W (shape d_0 x d_1 x ...): Shampoo statistics
L_k = EMA of contractions of a a^T over all dims but k, eigenbases Q_k, and
Adam run in the rotated coordinates a~ = a x_0 Q_0 x_1 Q_1 ... (paper's table,
Appendix C.4):

    a~ = Q^T a,  m = b1 m + (1 - b1) a  (kept in parameter coordinates),
    v~ = b2 v~ + (1 - b2) a~^2,
    u  = sqrt(1 - b2^k) / (1 - b1^k) * Q (Q^T m / (sqrt(v~) + eps)) + lambda theta.

As in the official code: the first step only initialises the statistics and
proposes u = 0; eigenbases come from ``eigh`` once, then one power-iteration
+ QR refresh (in float32) every ``precondition_frequency`` steps, reordering
v~ with the estimated eigenvalues; dimensions above ``max_precondition_dim``
and 1-D parameters are not rotated (1-D parameters get Adam).

Weight decay: the reference applies theta <- theta (1 - lr lambda) *after*
the preconditioned step; the proposal uses lambda theta_t (the difference is
lr^2 lambda times the step, second order in the learning rate).

Bookkeeping: the reference folds a_t into the statistics at the end of step t;
here that fold happens at the start of step t+1 (``pending``), so that the
tentative state returned with u_t still holds the basis u_t was built in --
the basis GUA projects in and aligns v~ in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import chain

import torch
from torch import Tensor

from pinnspec.catalog import GUA_STATE_ALIGNMENT
from pinnspec.registry import OPTIMIZERS

from ._base import Optimizer, ParamLayout

__all__ = ["SOAP", "SOAPState"]

Matrices = tuple[tuple[Tensor | None, ...], ...]  # per parameter, per dimension


@dataclass(frozen=True)
class SOAPState:
    step: int
    shapes: tuple[tuple[int, ...], ...]
    exp_avg: Tensor  # [p]   m, parameter coordinates
    exp_avg_sq: Tensor  # [p]   v~, eigenbasis coordinates
    preconditioners: Matrices  # L_k: [d_k, d_k] or None (dimension not rotated)
    bases: Matrices | None  # Q_k: [d_k, d_k] or None; None before the first eigh
    pending: Tensor | None  # [p]   a of the previous step, not yet folded into L_k


def _rotate(x: Tensor, bases: tuple[Tensor | None, ...], backward: bool = False) -> Tensor:
    """x (shape of one parameter) into (Q^T x) or out of (Q x) the eigenbasis."""
    for Q in bases:
        if Q is not None:
            x = torch.tensordot(x, Q, dims=[[0], [1 if backward else 0]])
        else:
            x = x.permute([*range(1, x.dim()), 0])
    return x


@OPTIMIZERS.register("soap")
@dataclass(frozen=True)
class SOAP(Optimizer):
    """SOAP (Vyas et al. 2025): Adam in the Shampoo eigenbasis; see the module
    docstring.  Defaults are the official ones (lr 3e-3, betas (0.95, 0.95),
    shampoo_beta = beta2, eps 1e-8, weight decay 0.01, frequency 10).

    GUA metric: sqrt(v~) + eps in the eigenbasis (:meth:`to_basis`).  State
    alignment (paper, Appendix E.4, (rho_m, rho_v) = (0.03, 0.003)): in the
    eigenbasis, with p~ = Q^T (p - lambda theta) and
    g~ = (sqrt(v~) + eps) p~ / sqrt(1 - b2^k) (the pseudo-gradient that SOAP's
    bias-corrected step maps to p~): m <- (1 - rho_m) m + rho_m Q (1 - b1^k) g~,
    v~ <- (1 - rho_v) v~ + rho_v (1 - b2^k) g~^2; the preconditioner statistics
    and the basis stay unchanged.
    """

    lr: float = 3e-3
    beta1: float = 0.95
    beta2: float = 0.95
    shampoo_beta: float | None = None
    eps: float = 1e-8
    weight_decay: float = 1e-2
    precondition_frequency: int = 10
    max_precondition_dim: int = 10000

    state_type = SOAPState
    alignment_defaults = GUA_STATE_ALIGNMENT["soap"]
    compiles = False

    def init(self, params, shapes=None):
        layout = ParamLayout.of(shapes, params.numel())
        preconditioners = []
        for shape in layout.shapes:
            if len(shape) <= 1:
                preconditioners.append((None,))
            else:
                preconditioners.append(tuple(
                    torch.zeros(d, d, dtype=params.dtype, device=params.device)
                    if d <= self.max_precondition_dim else None for d in shape))
        return SOAPState(0, layout.shapes, torch.zeros_like(params), torch.zeros_like(params),
                         tuple(preconditioners), None, None)

    # -- the Shampoo statistics and eigenbases ---------------------------
    def _fold(self, state: SOAPState, grad: Tensor, index: int) -> SOAPState:
        """Reference ``update_pre_conditioner`` for the gradient of step ``index``
        (0-based count of applied steps): L_k <- lerp(L_k, contraction, 1 - beta),
        first eigh, then QR refresh every ``precondition_frequency`` steps."""
        layout = ParamLayout(state.shapes)
        beta = self.beta2 if self.shampoo_beta is None else self.shampoo_beta
        preconditioners = []
        for g, Ls in zip(layout.split(grad), state.preconditioners):
            new = []
            for k, L in enumerate(Ls):
                if L is None:
                    new.append(None)
                    continue
                other = [*chain(range(k), range(k + 1, g.dim()))]
                outer = torch.tensordot(g, g, dims=[other, other])  # [d_k, d_k]
                new.append(torch.lerp(L, outer.to(L.dtype), 1 - beta))
            preconditioners.append(tuple(new))
        state = replace(state, preconditioners=tuple(preconditioners))
        if state.bases is None:
            return replace(state, bases=tuple(tuple(self._eigh(L) for L in Ls) for Ls in state.preconditioners))
        if index > 0 and index % self.precondition_frequency == 0:
            return self._refresh(state)
        return state

    @staticmethod
    def _eigh(L: Tensor | None) -> Tensor | None:
        if L is None:
            return None
        _, Q = torch.linalg.eigh(L + 1e-30 * torch.eye(L.shape[0], dtype=L.dtype, device=L.device))
        return torch.flip(Q, dims=[1])

    def _refresh(self, state: SOAPState) -> SOAPState:
        """One power iteration + QR per basis; v~ reordered by estimated eigenvalue."""
        layout = ParamLayout(state.shapes)
        second = []
        bases = []
        for v, Ls, Qs in zip(layout.split(state.exp_avg_sq), state.preconditioners, state.bases):
            new = []
            for k, (L, Q) in enumerate(zip(Ls, Qs)):
                if L is None:
                    new.append(None)
                    continue
                product = L @ Q  # [d, d]
                estimated = (Q * product).sum(dim=0)  # [d]
                order = torch.argsort(estimated, descending=True)
                v = v.index_select(k, order)
                Q_new, _ = torch.linalg.qr(product.index_select(1, order).to(torch.float32))
                new.append(Q_new.to(product.dtype))
            second.append(v)
            bases.append(tuple(new))
        return replace(state, exp_avg_sq=layout.join(second), bases=tuple(bases))

    # -- coordinates -------------------------------------------------------
    def to_basis(self, x, state):
        return self._apply_basis(x, state, backward=False)

    def from_basis(self, x, state):
        return self._apply_basis(x, state, backward=True)

    def _apply_basis(self, x: Tensor, state: SOAPState, backward: bool) -> Tensor:
        if state.bases is None:
            return x
        layout = ParamLayout(state.shapes)
        if x.dim() == 2:  # rows [m, p]
            return torch.stack([self._apply_basis(row, state, backward) for row in x])
        return layout.join([_rotate(c, Qs, backward) for c, Qs in zip(layout.split(x), state.bases)])

    def metric(self, state):
        return state.exp_avg_sq.sqrt() + self.eps

    # -- the stage -----------------------------------------------------------
    def propose(self, a, state, *, params=None, hessian=None):
        decay = self._decay(self.weight_decay, params, a)
        step = state.step + 1
        if step == 1:  # the reference only initialises its statistics on the first step
            return torch.zeros_like(a), replace(state, step=1, pending=a.clone())
        state = self._fold(state, state.pending, index=step - 2)
        k = step - 1  # steps that actually moved the parameters, this one included
        exp_avg = torch.lerp(state.exp_avg, a, 1 - self.beta1)  # [p]
        rotated = self.to_basis(a, state)  # [p]
        exp_avg_sq = torch.lerp(state.exp_avg_sq, rotated * rotated, 1 - self.beta2)  # [p]
        tentative = replace(state, step=step, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq, pending=a.clone())
        scale = math.sqrt(1 - self.beta2 ** k) / (1 - self.beta1 ** k)
        direction = self.from_basis(self.to_basis(exp_avg, tentative) / self.metric(tentative), tentative)
        return scale * direction + decay, tentative

    def aligned_state(self, state, update, *, rho_m, rho_v, params=None):
        if state.step <= 1:
            return state
        k = state.step - 1
        bias1 = 1 - self.beta1 ** k
        bias2 = 1 - self.beta2 ** k
        direction = self.to_basis(update - self._decay(self.weight_decay, params, update), state)  # p~
        pseudo_grad = self.metric(state) * direction / math.sqrt(bias2)  # g~, eigenbasis
        exp_avg = (1 - rho_m) * state.exp_avg + rho_m * self.from_basis(bias1 * pseudo_grad, state)
        exp_avg_sq = (1 - rho_v) * state.exp_avg_sq + rho_v * bias2 * pseudo_grad * pseudo_grad
        return replace(state, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq)
