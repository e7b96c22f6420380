"""M-ConFIG: ConFIG with per-loss momentum (stateful)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pinnspec.registry import SURGERY

from ._base import Surgery, _check_matrix
from ._methods import config_direction

__all__ = ["MConFIG", "MConFIGState"]


@dataclass(frozen=True)
class MConFIGState:
    step: int
    exp_avgs: Tensor  # [m, p]   per-loss first moments
    exp_avg_sq: Tensor  # [p]    second moment of the pseudo-gradient
    pseudo_exp_avg: Tensor  # [p]   the previous ConFIG direction times (1 - b1^t)


@SURGERY.register("mconfig")
@dataclass(frozen=True)
class MConFIG(Surgery):
    """M-ConFIG (Liu et al. 2025, "ConFIG", Sec. 3.3 and Algorithm 2; the
    authors' ``PseudoMomentumOperator``): per-loss Adam first moments
    m_i = b1 m_i + (1 - b1) g_i, the ConFIG direction c of the bias-corrected
    m_i, a pseudo-gradient g~ = (c (1 - b1^t) - b1 c_prev (1 - b1^(t-1))) / (1 - b1)
    whose second moment s = b2 s + (1 - b2) g~^2 normalises the output:
    a = c / (sqrt(s / (1 - b2^t)) + eps).

    The ConFIG paper updates one loss's momentum per step to save backward
    passes; the engine computes all m gradients every step, so every m_i is
    updated every step.  The output is already Adam-normalised (the authors
    pair it with SGD).
    """

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    compiles = True

    stateful = True
    scale_equivariant = False  # the output is normalised: a(sG) ~ a(G)
    state_type = MConFIGState

    def init(self, num_losses, num_params, *, dtype=torch.float32, device=None):
        zeros = torch.zeros(num_params, dtype=dtype, device=device)
        return MConFIGState(0, torch.zeros(num_losses, num_params, dtype=dtype, device=device),
                            zeros.clone(), zeros.clone())

    def __call__(self, G, state=None, *, generator=None):
        _check_matrix(G)
        if state is None:
            state = self.init(G.shape[0], G.shape[1], dtype=G.dtype, device=G.device)
        if state.exp_avgs.shape != G.shape:
            raise ValueError(f"mconfig state holds {list(state.exp_avgs.shape)} moments, G is {list(G.shape)}")
        step = state.step + 1
        exp_avgs = state.exp_avgs * self.beta1 + (1 - self.beta1) * G  # [m, p]
        direction = config_direction(exp_avgs / (1 - self.beta1 ** step))  # [p]
        pseudo_exp_avg = direction * (1 - self.beta1 ** step)  # [p]
        pseudo_grad = (pseudo_exp_avg - self.beta1 * state.pseudo_exp_avg) / (1 - self.beta1)  # [p]
        exp_avg_sq = state.exp_avg_sq * self.beta2 + (1 - self.beta2) * pseudo_grad * pseudo_grad  # [p]
        a = direction / ((exp_avg_sq / (1 - self.beta2 ** step)).sqrt() + self.eps)  # [p]
        return a, MConFIGState(step, exp_avgs, exp_avg_sq, pseudo_exp_avg)
