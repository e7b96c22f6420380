"""Proposal-form optimizers: the common protocol.

Sign convention (the paper's, written once): the constructed direction a,
the proposal u and the applied update p all point uphill, like ``.grad``;
the engine applies theta <- theta - eta_t * p.  The learning rate is *not*
part of u: the engine reads ``optimizer.lr`` and schedules it.

Every optimizer is a frozen dataclass whose fields are exactly the keyword
arguments a ``.pinn`` file may pass, with the original paper's (or reference
implementation's) defaults.  Its state is a frozen dataclass too; ``propose``
never mutates the state it is given: it returns the proposal u and a
*tentative* next state, which the alignment stage may adjust and the engine
then keeps (the commit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Sequence

import torch
from torch import Tensor

__all__ = ["Optimizer", "ParamLayout", "flat_shapes"]


@dataclass(frozen=True)
class ParamLayout:
    """How the flat parameter vector [p] splits into the model's tensors."""

    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, shapes: Sequence[Sequence[int]] | None, numel: int) -> "ParamLayout":
        layout = cls(((numel,),) if shapes is None else tuple(tuple(int(d) for d in s) for s in shapes))
        if layout.numel != numel:
            raise ValueError(f"shapes {list(layout.shapes)} hold {layout.numel} numbers, the flat vector {numel}")
        return layout

    @property
    def numels(self) -> list[int]:
        return [math.prod(s) for s in self.shapes]

    @property
    def numel(self) -> int:
        return sum(self.numels)

    def split(self, flat: Tensor) -> list[Tensor]:
        """Views of ``flat`` ([..., p]) shaped [..., *shape] per parameter."""
        lead = flat.shape[:-1]
        return [c.reshape(*lead, *s) for c, s in zip(torch.split(flat, self.numels, dim=-1), self.shapes)]

    def join(self, tensors: Sequence[Tensor], lead: int = 0) -> Tensor:
        """Inverse of :meth:`split` (``lead`` leading batch dimensions)."""
        return torch.cat([t.reshape(*t.shape[:lead], -1) for t in tensors], dim=-1)


def flat_shapes(parameters) -> list[tuple[int, ...]]:
    """Shapes of an iterable of parameters (for :meth:`Optimizer.init`)."""
    return [tuple(p.shape) for p in parameters]


def _clone_tree(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.detach().clone()
    if isinstance(x, (tuple, list)):
        return [_clone_tree(v) for v in x]
    return x


def _tuple_tree(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.detach().clone()
    if isinstance(x, (tuple, list)):
        return tuple(_tuple_tree(v) for v in x)
    return x


class Optimizer:
    """Base of the proposal-form optimizers (subclasses are frozen dataclasses).

    ``init(params, shapes) -> state``;
    ``propose(a, state, params=None, hessian=None) -> (u, tentative_state)``.
    """

    #: class of the state this optimizer uses
    state_type: ClassVar[type]
    #: GUA state-alignment coefficients (rho_m, rho_v) from the paper, or None
    #: when the paper defines no state alignment for this optimizer
    alignment_defaults: ClassVar[tuple[float, float] | None] = None
    #: whether the proposal needs a Hessian-diagonal estimate on some steps (``hessian_due``): the engine
    #: then estimates it on those steps, by double backward through the eager losses
    uses_hessian: ClassVar[bool] = False
    #: whether ``compile = on`` compiles the update chain with this optimizer (SOAP: its compile takes
    #: a minute, and its eigendecompositions stay library calls anyway)
    compiles: ClassVar[bool] = True

    lr: float

    # -- the stage -------------------------------------------------------
    def init(self, params: Tensor, shapes: Sequence[Sequence[int]] | None = None):
        """Initial state for the flat parameter vector ``params`` ([p]);
        ``shapes`` splits it into the model's tensors (default: one vector)."""
        raise NotImplementedError

    def propose(self, a: Tensor, state, *, params: Tensor | None = None,
                hessian: Tensor | None = None) -> tuple[Tensor, Any]:
        """Proposal u ([p], no learning rate) and the tentative next state."""
        raise NotImplementedError

    # -- hooks for the engine and the alignment stage -------------------
    def hessian_due(self, state) -> bool:
        """Whether the next ``propose`` needs a Hessian-diagonal estimate."""
        return False

    def metric(self, state) -> Tensor | None:
        """Diagonal of the projection metric M for GUA, in :meth:`to_basis`
        coordinates, from the (tentative) state; None means Euclidean."""
        return None

    def to_basis(self, x: Tensor, state) -> Tensor:
        """Coordinates of ``x`` ([..., p]) in the basis where :meth:`metric` is diagonal."""
        return x

    def from_basis(self, x: Tensor, state) -> Tensor:
        """Inverse of :meth:`to_basis`."""
        return x

    def aligned_state(self, state, update: Tensor, *, rho_m: float, rho_v: float,
                      params: Tensor | None = None):
        """GUA state alignment toward targets rebuilt from the applied update."""
        raise NotImplementedError(f"{type(self).__name__} defines no state alignment")

    # -- checkpoints -----------------------------------------------------
    def state_dict(self, state) -> dict[str, Any]:
        """A plain dict (tensors cloned) of ``state``."""
        if not isinstance(state, self.state_type):
            raise TypeError(f"expected {self.state_type.__name__}, got {type(state).__name__}")
        return {f.name: _clone_tree(getattr(state, f.name)) for f in fields(state)}

    def load_state_dict(self, state_dict: dict[str, Any]):
        """The state saved by :meth:`state_dict`."""
        names = {f.name for f in fields(self.state_type)}
        if set(state_dict) != names:
            raise KeyError(f"{type(self).__name__} state needs keys {sorted(names)}, got {sorted(state_dict)}")
        return self.state_type(**{k: _tuple_tree(v) for k, v in state_dict.items()})

    # -- helpers ---------------------------------------------------------
    @staticmethod
    def _decay(weight_decay: float, params: Tensor | None, like: Tensor) -> Tensor | float:
        """Decoupled weight decay term lambda * theta of the proposal."""
        if weight_decay == 0:
            return 0.0
        if params is None:
            raise ValueError("this optimizer has weight decay: propose(..., params=theta) is required")
        return weight_decay * params.detach().to(like.dtype)
