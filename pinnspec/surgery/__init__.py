"""Gradient surgery: m loss-specific gradients G ([m, p]) -> one direction a ([p]).

Registered names: none, pcgrad, cagrad, imtlg, amtl, upgrad, config, mconfig.
Sign convention: rows of G and a point uphill, like ``.grad``.
This package imports neither lark nor sympy.
"""

import torch
from torch import Tensor

from pinnspec.registry import SURGERY

from ._base import Surgery
from ._mconfig import MConFIG, MConFIGState
from ._methods import IMTLG, AlignedMTL, CAGrad, ConFIG, PCGrad, Sum, UPGrad

__all__ = ["Surgery", "make", "aggregate", "Sum", "PCGrad", "CAGrad", "IMTLG", "AlignedMTL", "UPGrad",
           "ConFIG", "MConFIG", "MConFIGState"]


def make(name: str, **kwargs) -> Surgery:
    """The registered surgery method ``name`` configured with ``kwargs``
    (unknown names raise :class:`pinnspec.registry.UnknownNameError` with a
    "did you mean" hint)."""
    return SURGERY.get(name)(**kwargs)


def aggregate(name: str, G: Tensor, *, generator: torch.Generator | None = None, **kwargs) -> Tensor:
    """Stateless convenience: ``G`` ([m, p]) -> a ([p]) with method ``name``.

    A stateful method (mconfig) runs one step from its initial state.
    """
    method = make(name, **kwargs)
    a, _ = method(G, None, generator=generator)
    return a
