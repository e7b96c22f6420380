"""Common protocol of the gradient-surgery stage.

A surgery method maps the loss-specific gradients G ([m, p], row i is
g_i = dL_i/dtheta, uphill like ``.grad``) to one constructed direction a ([p],
also uphill).  Methods are frozen dataclasses whose fields are exactly the
keyword arguments a ``.pinn`` file may pass.  Calling one is

    a, state = method(G, state, generator=gen)

``state`` is None for the stateless methods; ``generator`` is the only source
of randomness (PCGrad's task orders).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

import torch
from torch import Tensor

__all__ = ["Surgery"]


class Surgery:
    """Base of the surgery methods (subclasses are frozen dataclasses)."""

    #: whether the method carries state across steps
    stateful: ClassVar[bool] = False
    #: whether the method guarantees G a >= 0 whenever the rows of G are linearly independent
    conflict_free: ClassVar[bool] = False
    #: whether permuting the rows of G leaves a unchanged
    permutation_invariant: ClassVar[bool] = True
    #: whether a(s G) = s a(G) for s > 0
    scale_equivariant: ClassVar[bool] = True
    #: class of the state, for stateful methods
    state_type: ClassVar[type | None] = None
    #: whether the method traces into one torch.compile graph with no host decision, no generator and no
    #: op that waits for the device (``eigh``, ``pinv``, ``nonzero``...): then ``compile = on`` compiles the
    #: update chain too and ``compile = graphs`` records it in a CUDA graph (tests/engine/test_compiled.py,
    #: tests/surgery/test_properties.py)
    compiles: ClassVar[bool] = False
    #: whether a is the sum of G's rows, the gradient of the summed loss: then a step that needs no conflict
    #: statistics takes that gradient by one backward pass, without forming G (`UpdateChain.sums_tasks`)
    sums: ClassVar[bool] = False

    def init(self, num_losses: int, num_params: int, *, dtype: torch.dtype = torch.float32,
             device: torch.device | str | None = None):
        """Initial state (None for stateless methods)."""
        return None

    def __call__(self, G: Tensor, state=None, *, generator: torch.Generator | None = None) -> tuple[Tensor, Any]:
        _check_matrix(G)
        if G.shape[0] == 0:
            return G.new_zeros(G.shape[1]), state
        return self.direction(G, generator=generator), state

    def direction(self, G: Tensor, *, generator: torch.Generator | None = None) -> Tensor:
        """The constructed direction a ([p]) of a stateless method."""
        raise NotImplementedError

    # -- checkpoints -----------------------------------------------------
    def state_dict(self, state) -> dict[str, Any]:
        if state is None:
            return {}
        return {f.name: (getattr(state, f.name).detach().clone() if isinstance(getattr(state, f.name), Tensor)
                         else getattr(state, f.name)) for f in fields(state)}

    def load_state_dict(self, state_dict: dict[str, Any]):
        if self.state_type is None:
            if state_dict:
                raise KeyError(f"{type(self).__name__} is stateless; got keys {sorted(state_dict)}")
            return None
        names = {f.name for f in fields(self.state_type)}
        if set(state_dict) != names:
            raise KeyError(f"{type(self).__name__} state needs keys {sorted(names)}, got {sorted(state_dict)}")
        return self.state_type(**{k: (v.detach().clone() if isinstance(v, Tensor) else v)
                                   for k, v in state_dict.items()})


def _check_matrix(G: Tensor) -> None:
    if not isinstance(G, Tensor) or G.dim() != 2:
        raise ValueError(f"G must be a [m, p] tensor of loss-specific gradients, got {getattr(G, 'shape', G)!r}")
