"""First-order optimizers in proposal form (paper, Appendix C.4 table).

Each map a -> (u, tentative state) is the paper's, and equals the torch.optim
update theta <- theta - lr * u to float tolerance (tests/optim).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from pinnspec.catalog import GUA_STATE_ALIGNMENT
from pinnspec.registry import OPTIMIZERS

from ._base import Optimizer, ParamLayout

__all__ = ["SGD", "MomentumSGD", "RMSProp", "Adam", "AdamW", "StepState", "MomentumState",
           "RMSPropState", "AdamState"]


@dataclass(frozen=True)
class StepState:
    step: int


@dataclass(frozen=True)
class MomentumState:
    step: int
    momentum: Tensor  # [p]


@dataclass(frozen=True)
class RMSPropState:
    step: int
    square_avg: Tensor  # [p]   v


@dataclass(frozen=True)
class AdamState:
    step: int
    exp_avg: Tensor  # [p]      m, stored without bias correction
    exp_avg_sq: Tensor  # [p]   v, stored without bias correction


@OPTIMIZERS.register("sgd")
@dataclass(frozen=True)
class SGD(Optimizer):
    """Plain gradient descent: u_t = a_t (Robbins & Monro 1951; torch.optim.SGD)."""

    lr: float = 1e-3

    state_type = StepState

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return StepState(0)

    def propose(self, a, state, *, params=None, hessian=None):
        return a.clone(), StepState(state.step + 1)


@OPTIMIZERS.register("msgd")
@dataclass(frozen=True)
class MomentumSGD(Optimizer):
    """Heavy-ball momentum (Polyak 1964) as torch.optim.SGD(momentum=beta, dampening=0):
    m_{t+1} = beta m_t + a_t,  u_t = m_{t+1}."""

    lr: float = 1e-3
    momentum: float = 0.9

    state_type = MomentumState

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return MomentumState(0, torch.zeros_like(params))

    def propose(self, a, state, *, params=None, hessian=None):
        momentum = state.momentum * self.momentum + a  # [p]
        return momentum.clone(), MomentumState(state.step + 1, momentum)


@OPTIMIZERS.register("rmsprop")
@dataclass(frozen=True)
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton 2012, lecture 6.5; torch.optim.RMSprop's alpha and eps):
    v_{t+1} = alpha v_t + (1 - alpha) a_t^2,  u_t = a_t / (sqrt(v_{t+1}) + eps).

    GUA metric: sqrt(v_{t+1}) + eps.  State alignment (paper, Appendix E.4,
    (rho_m, rho_v) = (0, 0.5)): g~ = (sqrt(v) + eps) * p, v <- (1 - rho_v) v + rho_v g~^2.
    """

    lr: float = 1e-3
    alpha: float = 0.99
    eps: float = 1e-8

    state_type = RMSPropState
    alignment_defaults = GUA_STATE_ALIGNMENT["rmsprop"]

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return RMSPropState(0, torch.zeros_like(params))

    def propose(self, a, state, *, params=None, hessian=None):
        square_avg = state.square_avg * self.alpha + (1 - self.alpha) * a * a  # [p]
        u = a / (square_avg.sqrt() + self.eps)  # [p]
        return u, RMSPropState(state.step + 1, square_avg)

    def metric(self, state):
        return state.square_avg.sqrt() + self.eps

    def aligned_state(self, state, update, *, rho_m, rho_v, params=None):
        pseudo_grad = self.metric(state) * update  # [p]
        square_avg = (1 - rho_v) * state.square_avg + rho_v * pseudo_grad * pseudo_grad
        return replace(state, square_avg=square_avg)


@OPTIMIZERS.register("adam")
@dataclass(frozen=True)
class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, Algorithm 1; torch.optim.Adam):
    m = b1 m + (1 - b1) a,  v = b2 v + (1 - b2) a^2,
    u = m_hat / (sqrt(v_hat) + eps) with m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t).

    GUA metric: sqrt(v_hat) + eps of the tentative state.  State alignment
    (paper, Appendix D, default (rho_m, rho_v) = (0.1, 0.03)):
    g~ = (sqrt(v_hat) + eps) * p,  m <- (1 - rho_m) m + rho_m (1 - b1^t) g~,
    v <- (1 - rho_v) v + rho_v (1 - b2^t) g~^2  (i.e. the bias-corrected moments
    are blended toward g~ and g~^2; the stored moments stay un-corrected).
    """

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    state_type = AdamState
    alignment_defaults = GUA_STATE_ALIGNMENT["adam"]

    @property
    def _weight_decay(self) -> float:
        return 0.0

    def init(self, params, shapes=None):
        ParamLayout.of(shapes, params.numel())
        return AdamState(0, torch.zeros_like(params), torch.zeros_like(params))

    def _denominator(self, state: AdamState) -> Tensor:
        """sqrt(v_hat) + eps.  [p]"""
        bias2 = 1 - self.beta2 ** state.step
        # the step count is an int, or a 0-d tensor where the trainer keeps it on the device (CUDA graphs)
        root = bias2.sqrt() if isinstance(bias2, Tensor) else math.sqrt(bias2)
        return state.exp_avg_sq.sqrt() / root + self.eps

    def propose(self, a, state, *, params=None, hessian=None):
        decay = self._decay(self._weight_decay, params, a)
        step = state.step + 1
        exp_avg = torch.lerp(state.exp_avg, a, 1 - self.beta1)  # [p]
        exp_avg_sq = state.exp_avg_sq * self.beta2 + (1 - self.beta2) * a * a  # [p]
        tentative = AdamState(step, exp_avg, exp_avg_sq)
        u = (exp_avg / (1 - self.beta1 ** step)) / self._denominator(tentative) + decay  # [p]
        return u, tentative

    def metric(self, state):
        return self._denominator(state)

    def aligned_state(self, state, update, *, rho_m, rho_v, params=None):
        direction = update - self._decay(self._weight_decay, params, update)  # weight decay handled separately
        pseudo_grad = self._denominator(state) * direction  # [p]   g~
        bias1 = 1 - self.beta1 ** state.step
        bias2 = 1 - self.beta2 ** state.step
        exp_avg = (1 - rho_m) * state.exp_avg + rho_m * bias1 * pseudo_grad
        exp_avg_sq = (1 - rho_v) * state.exp_avg_sq + rho_v * bias2 * pseudo_grad * pseudo_grad
        return AdamState(state.step, exp_avg, exp_avg_sq)


@OPTIMIZERS.register("adamw")
@dataclass(frozen=True)
class AdamW(Adam):
    """AdamW (Loshchilov & Hutter 2019; torch.optim.AdamW): the Adam proposal plus
    decoupled weight decay, u = m_hat / (sqrt(v_hat) + eps) + lambda theta_t.

    ``propose`` needs the current flat parameters.  GUA: the Adam metric and
    state alignment (0.1, 0.03) applied to p - lambda theta (paper, Appendix E.4).
    """

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 1e-2

    @property
    def _weight_decay(self) -> float:
        return self.weight_decay
