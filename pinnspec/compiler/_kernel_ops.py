"""Small elementwise helpers the generated kernels call (``ops.*``)."""

from __future__ import annotations

import functools

import torch


def _tensor_like(value, like):
    return value if isinstance(value, torch.Tensor) else torch.as_tensor(value, dtype=like.dtype, device=like.device)


def _first_tensor(args):
    return next(a for a in args if isinstance(a, torch.Tensor))


def minimum(*args):
    like = _first_tensor(args)
    return functools.reduce(torch.minimum, (_tensor_like(a, like) for a in args))


def maximum(*args):
    like = _first_tensor(args)
    return functools.reduce(torch.maximum, (_tensor_like(a, like) for a in args))


def heaviside(x):
    """H(x) with H(0) = 1/2 (the language's convention)."""
    return torch.heaviside(x, torch.full((), 0.5, dtype=x.dtype, device=x.device))
