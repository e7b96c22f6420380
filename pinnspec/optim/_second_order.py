"""Hessian-diagonal optimizers in proposal form: SophiaG and AdaHessian.

Both read a diagonal Hessian estimate h_hat that the engine supplies through an
explicit hook: when ``optimizer.hessian_due(state)`` is true, the engine calls
:func:`hutchinson_diagonal` on the summed loss sum_i L_i and passes the result
as ``propose(..., hessian=h_hat)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from pinnspec.registry import OPTIMIZERS

from ._base import Optimizer, ParamLayout

__all__ = ["SophiaG", "AdaHessian", "SophiaState", "AdaHessianState", "hutchinson_diagonal"]


def hutchinson_diagonal(loss: Tensor, params: Sequence[Tensor], *, generator: torch.Generator | None = None,
                        samples: int = 1, distribution: str = "rademacher",
                        grads: Sequence[Tensor] | None = None) -> Tensor:
    """Hutchinson estimate of diag(H), H the Hessian of ``loss`` w.r.t. ``params``.

    h_hat = (1/S) sum_s z_s * (H z_s), z_s Rademacher (default) or Gaussian,
    drawn from ``generator``; each H z is one Hessian-vector product by double
    back-propagation (Bekas et al. 2007; AdaHessian, Yao et al. 2021, Eq. 8).
    Pass ``grads`` (computed with ``create_graph=True``) to reuse a gradient
    graph.  Returns the flat estimate [p], detached.
    """
    params = list(params)
    if grads is None:
        grads = torch.autograd.grad(loss, params, create_graph=True)
    estimate = [torch.zeros_like(p) for p in params]
    gen_device = generator.device if generator is not None else torch.device("cpu")
    for s in range(samples):
        if distribution == "rademacher":
            zs = [(torch.randint(0, 2, p.shape, generator=generator, device=gen_device) * 2 - 1)
                  .to(device=p.device, dtype=p.dtype) for p in params]
        elif distribution == "gaussian":
            zs = [torch.randn(p.shape, generator=generator, device=gen_device, dtype=p.dtype).to(p.device)
                  for p in params]
        else:
            raise ValueError(f"unknown distribution '{distribution}' (known: rademacher, gaussian)")
        hzs = torch.autograd.grad(grads, params, grad_outputs=zs, retain_graph=s < samples - 1)
        for e, hz, z in zip(estimate, hzs, zs):
            e.add_(hz * z, alpha=1.0 / samples)
    return torch.cat([e.detach().reshape(-1) for e in estimate])


@dataclass(frozen=True)
class SophiaState:
    step: int
    exp_avg: Tensor  # [p]   m
    hessian: Tensor  # [p]   h, EMA of the Hessian-diagonal estimates


@dataclass(frozen=True)
class AdaHessianState:
    step: int
    exp_avg: Tensor  # [p]               m
    exp_hessian_diag_sq: Tensor  # [p]   v, EMA of D^2


def _needs_hessian(hessian: Tensor | None, due: bool, name: str) -> None:
    if due and hessian is None:
        raise ValueError(f"{name}: a Hessian estimate is due this step (hessian_due(state) is true); "
                         "pass propose(..., hessian=hutchinson_diagonal(...))")


@OPTIMIZERS.register("sophiag")
@dataclass(frozen=True)
class SophiaG(Optimizer):
    """SophiaG (Liu et al. 2024, "Sophia", Algorithm 3 and the official code):

        m = b1 m + (1 - b1) a,      h = b2 h + (1 - b2) h_hat   (on refresh steps),
        u = sign(m) * min(|m| / (max(gamma h, 0) + eps), 1) + lambda theta,  gamma = rho * bs.

    This is the paper's map clip(m / (gamma h + eps), .) with the official
    code's constants (clip at 1 after dividing by gamma h, gamma = rho * bs)
    and defaults (lr 1e-4, betas (0.965, 0.99), rho 0.04, bs 5120, weight
    decay 0.1, eps 1e-15).  ``max(., 0)`` equals the official ``gamma h + eps``
    whenever h >= 0 and keeps the sign of m when a Hutchinson estimate is
    negative (the paper's max{gamma h, eps}).

    Hessian estimator: the official SophiaG uses the Gauss-Newton-Bartlett
    estimator of a sampled-label classification loss, which a PINN residual
    loss does not have; here h_hat is the Hutchinson estimate
    :func:`hutchinson_diagonal` of the summed loss, refreshed every
    ``hessian_every`` (k = 10) steps, on steps 1, 1 + k, 1 + 2k, ... before the
    update (as SophiaH does; the official loop refreshes after steps k-1,
    2k-1, ..., starting from h = 0).  No GUA state alignment is defined.
    """

    lr: float = 1e-4
    beta1: float = 0.965
    beta2: float = 0.99
    rho: float = 0.04
    bs: int = 5120
    weight_decay: float = 1e-1
    eps: float = 1e-15
    hessian_every: int = 10

    state_type = SophiaState
    uses_hessian = True

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return SophiaState(0, torch.zeros_like(params), torch.zeros_like(params))

    def hessian_due(self, state):
        return state.step % self.hessian_every == 0

    def propose(self, a, state, *, params=None, hessian=None):
        _needs_hessian(hessian, self.hessian_due(state), "sophiag")
        decay = self._decay(self.weight_decay, params, a)
        h = state.hessian
        if hessian is not None:
            h = h * self.beta2 + (1 - self.beta2) * hessian.to(h.dtype)  # [p]
        exp_avg = state.exp_avg * self.beta1 + (1 - self.beta1) * a  # [p]
        denominator = (self.rho * self.bs * h).clamp(min=0) + self.eps  # [p]
        ratio = (exp_avg.abs() / denominator).clamp(max=1)  # [p]
        u = exp_avg.sign() * ratio + decay
        return u, SophiaState(state.step + 1, exp_avg, h)


@OPTIMIZERS.register("adahessian")
@dataclass(frozen=True)
class AdaHessian(Optimizer):
    """AdaHessian (Yao et al. 2021, Algorithm 1; official defaults lr 0.15,
    betas (0.9, 0.999), eps 1e-4, hessian_power 1):

        m = b1 m + (1 - b1) a,   v = b2 v + (1 - b2) D^2   (D = h_hat, on refresh steps),
        u = (m / (1 - b1^t)) / ((v / (1 - b2^t))^(k/2) + eps) + lambda theta.

    Hessian estimator: Rademacher Hutchinson :func:`hutchinson_diagonal` on the
    summed loss, every step by default (``hessian_every`` = 1, as in the paper;
    spatial averaging only concerns convolution kernels and is not applied).
    GUA metric: the denominator (v_hat)^(k/2) + eps; no state alignment defined.
    """

    lr: float = 0.15
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-4
    weight_decay: float = 0.0
    hessian_power: float = 1.0
    hessian_every: int = 1

    state_type = AdaHessianState
    uses_hessian = True

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return AdaHessianState(0, torch.zeros_like(params), torch.zeros_like(params))

    def hessian_due(self, state):
        return state.step % self.hessian_every == 0

    def _denominator(self, state: AdaHessianState) -> Tensor:
        bias2 = 1 - self.beta2 ** state.step
        return (state.exp_hessian_diag_sq / bias2).pow(self.hessian_power / 2) + self.eps

    def propose(self, a, state, *, params=None, hessian=None):
        _needs_hessian(hessian, self.hessian_due(state), "adahessian")
        decay = self._decay(self.weight_decay, params, a)
        step = state.step + 1
        v = state.exp_hessian_diag_sq
        if hessian is not None:
            hessian = hessian.to(v.dtype)
            v = v * self.beta2 + (1 - self.beta2) * hessian * hessian  # [p]
        exp_avg = torch.lerp(state.exp_avg, a, 1 - self.beta1)  # [p]
        tentative = AdaHessianState(step, exp_avg, v)
        u = (exp_avg / (1 - self.beta1 ** step)) / self._denominator(tentative) + decay
        return u, tentative

    def metric(self, state):
        return self._denominator(state)
