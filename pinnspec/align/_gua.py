"""Gradient-Update Alignment (GUA), the alignment stage of the update chain.

Paper: Sec. 3.4 (Eq. (gua_projection), Eq. (state_alignment_generic)),
Algorithm 1, Appendix "GUA Implementation Details" and Appendix E.4
("Performance across Optimizers").
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import ClassVar

import torch
from torch import Tensor

from pinnspec.registry import ALIGN

from ._cone import project
from ._conflicts import conflict_mask

__all__ = ["GUA", "NoAlignment", "CHANGE_THRESHOLD"]

#: the state is aligned only when ||p - u|| / ||u|| exceeds this
CHANGE_THRESHOLD = 1e-8


class _Stage:
    """The alignment stage holds no state of its own; it adjusts the optimizer's."""

    #: whether the stage can change the proposal (then R_p and the projection are reported)
    aligns: ClassVar[bool] = True

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

    aligns = False

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
            project(optimizer.to_basis(u, state), optimizer.to_basis(G, state), diagonal, check=False), state)
        # rounding in a basis round trip can leave a conflict: then one Euclidean touch-up
        conflict = conflict_mask(G, projected)
        if _host_is_free(conflict):
            if bool(conflict):
                projected = project(projected, G)
        else:
            projected = torch.where(conflict, project(projected, G), projected)
        return projected.to(u.dtype)

    def align(self, u: Tensor, G: Tensor, state, optimizer, *, params: Tensor | None = None):
        """On the CPU the gate is a host decision (free there: a step without conflict skips the
        projection).  Elsewhere nothing is decided on the host (up to 8 losses): the gate and the
        state alignment are selections between computed tensors, so a GPU step is not synchronised
        by GUA.  Both give the same p and state."""
        coefficients = self.coefficients(optimizer)
        if G.shape[0] == 0:
            return u, state
        conflict = conflict_mask(G, u)
        host = _host_is_free(conflict)
        if host and not bool(conflict):
            return u, state
        p = self.direction(u, G, state, optimizer) if host else \
            torch.where(conflict, self.direction(u, G, state, optimizer), u)  # [p]
        if coefficients is None:
            return p, state
        u64 = u.detach().to(torch.float64)
        changed = (p.detach().to(torch.float64) - u64).norm() > CHANGE_THRESHOLD * u64.norm()
        if host and not bool(changed):
            return p, state
        rho_m, rho_v = coefficients
        aligned = optimizer.aligned_state(state, p, rho_m=rho_m, rho_v=rho_v, params=params)
        return p, aligned if host else select_state(changed, aligned, state)


def _host_is_free(t: Tensor) -> bool:
    """Whether deciding on the host costs nothing for a tensor here: on the CPU, yes (outside a
    compiled graph, where a host decision would break the graph); on a GPU a decision waits for
    every queued kernel."""
    return t.device.type == "cpu" and not torch.compiler.is_compiling()


def select_state(condition: Tensor, if_true, if_false):
    """``if_true`` where the bool tensor ``condition`` holds, else ``if_false``, field by field, without
    asking the host: tensors by torch.where, dataclasses, tuples and lists recursively; anything else
    must be the same object or equal in both."""
    if if_true is if_false:
        return if_true
    if isinstance(if_true, Tensor):
        return torch.where(condition, if_true, if_false)
    if is_dataclass(if_true) and type(if_true) is type(if_false):
        return replace(if_false, **{f.name: select_state(condition, getattr(if_true, f.name),
                                                         getattr(if_false, f.name))
                                    for f in fields(if_true) if f.init})
    if isinstance(if_true, (tuple, list)) and type(if_true) is type(if_false) and len(if_true) == len(if_false):
        return type(if_true)(select_state(condition, a, b) for a, b in zip(if_true, if_false))
    if if_true == if_false:
        return if_false
    raise TypeError(f"select_state: cannot select between {if_true!r} and {if_false!r}")
