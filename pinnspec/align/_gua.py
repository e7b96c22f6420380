"""Gradient-Update Alignment (GUA), the alignment stage of the update chain.

Paper: Sec. 3.4 (Eq. (gua_projection), Eq. (state_alignment_generic)),
Algorithm 1, Appendix "GUA Implementation Details" and Appendix E.4
("Performance across Optimizers").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pinnspec.registry import ALIGN

from ._cone import project
from ._conflicts import conflicting

__all__ = ["GUA", "NoAlignment", "CHANGE_THRESHOLD"]

#: the state is aligned only when ||p - u|| / ||u|| exceeds this
CHANGE_THRESHOLD = 1e-8


class _Stage:
    """The alignment stage holds no state of its own; it adjusts the optimizer's."""

    def state_dict(self, state=None) -> dict:
        return {}

    def load_state_dict(self, state_dict: dict):
        if state_dict:
            raise KeyError(f"{type(self).__name__} is stateless; got keys {sorted(state_dict)}")
        return None


@ALIGN.register("none")
@dataclass(frozen=True)
class NoAlignment(_Stage):
    """No alignment: p = u, the tentative optimizer state is kept."""

    def align(self, u: Tensor, G: Tensor, state, optimizer, *, params: Tensor | None = None):
        return u, state


@ALIGN.register("gua")
@dataclass(frozen=True)
class GUA(_Stage):
    """GUA: project the proposal onto the conflict-free cone and align the state.

    ``align(u, G, tentative_state, optimizer, params=None) -> (p, state)``:

    1. Gate: when no cos(g_i, u) < -1e-6 (the conflict indicator of Appendix
       C.7), p = u and the tentative state is kept.
    2. Direction alignment: p = argmin_{G d >= 0} 1/2 ||d - u||_M^2 with
       ``metric="adam"``: M the optimizer's diagonal second-moment metric
       (Adam/AdamW sqrt(v_hat) + eps, RMSProp sqrt(v) + eps, SOAP sqrt(v~) + eps
       in its eigenbasis, AdaHessian its denominator; optimizers without one --
       SGD, M-SGD, SophiaG -- use M = I), or ``metric="euclidean"``: M = I.
    3. State alignment, only when ||p - u|| / ||u|| > 1e-8: the optimizer's
       ``aligned_state`` with (rho_m, rho_v); ``None`` takes the paper's
       values for the optimizer (Adam/AdamW (0.1, 0.03), RMSProp (0, 0.5),
       SOAP (0.03, 0.003)).  Optimizers for which the paper defines no state
       alignment keep their tentative state (explicit rho values are refused).
    """

    metric: str = "adam"
    rho_m: float | None = None
    rho_v: float | None = None

    def __post_init__(self):
        if self.metric not in ("adam", "euclidean"):
            raise ValueError(f"gua: metric must be 'adam' or 'euclidean', got {self.metric!r}")
        for name in ("rho_m", "rho_v"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"gua: {name} must lie in [0, 1], got {value}")

    def coefficients(self, optimizer) -> tuple[float, float] | None:
        """(rho_m, rho_v) used with ``optimizer``; None when it has no state alignment."""
        defaults = optimizer.alignment_defaults
        if defaults is None:
            if self.rho_m or self.rho_v:
                raise ValueError(f"gua: {type(optimizer).__name__} has no state alignment in the paper; "
                                 "leave rho_m and rho_v unset (or 0) with it")
            return None
        return (defaults[0] if self.rho_m is None else self.rho_m,
                defaults[1] if self.rho_v is None else self.rho_v)

    def direction(self, u: Tensor, G: Tensor, state, optimizer) -> Tensor:
        """The projected update p (no gate, no state change).  [p]"""
        diagonal = optimizer.metric(state) if self.metric == "adam" else None
        if diagonal is None:
            return project(u, G)
        projected = optimizer.from_basis(
            project(optimizer.to_basis(u, state), optimizer.to_basis(G, state), diagonal), state)
        if conflicting(G, projected):  # rounding in a basis round trip: one Euclidean touch-up
            projected = project(projected, G)
        return projected.to(u.dtype)

    def align(self, u: Tensor, G: Tensor, state, optimizer, *, params: Tensor | None = None):
        coefficients = self.coefficients(optimizer)
        if not conflicting(G, u):
            return u, state
        p = self.direction(u, G, state, optimizer)
        u_norm = u.detach().to(torch.float64).norm()
        change = (p - u).detach().to(torch.float64).norm()
        if coefficients is not None and change > CHANGE_THRESHOLD * u_norm:
            rho_m, rho_v = coefficients
            state = optimizer.aligned_state(state, p, rho_m=rho_m, rho_v=rho_v, params=params)
        return p, state
