"""Truncated Taylor jets: a hidden value and its input derivatives, for networks other than the MLP.

A ``Jet`` carries a value h [N, w] and the rows D^alpha h [N, w] for every alpha of ``sources`` (a
closed set of multi-indices, sorted by (order, index), as the MLP path carries them).  The operations a
network is built from each map jets to jets:

* ``linear(W, b)``: D^alpha (h W^T + b) = (D^alpha h) W^T (the bias touches the value only);
* ``elementwise(derivatives)``: sigma(h) by Faà di Bruno (the MLP path's row program);
* ``jet * jet``: the Leibniz rule D^alpha (f g) = sum over sub-multisets beta of alpha of
  C(alpha, beta) D^beta f D^(alpha - beta) g; ``jet * c`` for a c constant in x (a parameter);
* ``+``, ``-``, ``number - jet`` and ``cat``.

A network that implements ``compute(ops, x)`` once (``pinnspec.models._layers.Network``) runs it on
tensors as its forward and on jets with `JET_OPS` here: its derivatives come from the code of its values.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Callable

import torch
from torch.nn import functional as F

from ._activations import scaled_derivatives
from ._program import MultiIndex, Products, _memo, row_program

Derivatives = Callable[[torch.Tensor, int], list]  # (z, order) -> [(scale, q)] with sigma^(m) = scale * q


@_memo
def leibniz_program(sources: tuple[MultiIndex, ...]) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """Per alpha in ``sources``: ((row of beta, row of alpha - beta, count), ...); row -1 is the value."""
    row = {mi: k for k, mi in enumerate(sources)}
    row[()] = -1
    program = []
    for mi in sources:
        counts: Counter = Counter()
        for r in range(len(mi) + 1):
            for chosen in itertools.combinations(range(len(mi)), r):
                beta = tuple(mi[i] for i in chosen)
                rest = tuple(mi[i] for i in range(len(mi)) if i not in chosen)
                counts[(row[beta], row[rest])] += 1
        program.append(tuple((a, b, c) for (a, b), c in sorted(counts.items())))
    return tuple(program)


class Jet:
    """A value [N, w] and its derivative rows (one [N, w] per multi-index of ``sources``)."""

    __slots__ = ("value", "rows", "sources")

    def __init__(self, value: torch.Tensor, rows: list[torch.Tensor], sources: tuple[MultiIndex, ...]):
        self.value, self.rows, self.sources = value, rows, sources

    @classmethod
    def input(cls, x: torch.Tensor, sources: tuple[MultiIndex, ...]) -> "Jet":
        """The coordinates x [N, d]: D^(i) x = e_i, every higher derivative zero."""
        eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        zero = x.new_zeros(x.shape)
        return cls(x, [eye[mi[0]].expand_as(x) if len(mi) == 1 else zero for mi in sources], sources)

    @property
    def max_order(self) -> int:
        return max([0] + [len(mi) for mi in self.sources])

    def _like(self, value, rows) -> "Jet":
        return Jet(value, rows, self.sources)

    def linear(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> "Jet":
        return self._like(F.linear(self.value, weight, bias), [F.linear(r, weight) for r in self.rows])

    def elementwise(self, derivatives: Derivatives) -> "Jet":
        sig = derivatives(self.value, self.max_order)
        if not self.rows:
            return self._like(sig[0][1] if sig[0][0] == 1 else sig[0][1] * sig[0][0], [])
        program = row_program(self.sources, self.sources)
        value = sig[0][1] if sig[0][0] == 1 else sig[0][1] * sig[0][0]
        return self._like(value, program.apply(sig, self.rows, Products(self.rows)))

    def scaled(self, factor) -> "Jet":
        """self * factor, factor constant in x (a number or a parameter tensor)."""
        return self._like(self.value * factor, [r * factor for r in self.rows])

    def __mul__(self, other) -> "Jet":
        if not isinstance(other, Jet):
            return self.scaled(other)
        def part(jet, k):
            return jet.value if k < 0 else jet.rows[k]
        rows = []
        for terms in leibniz_program(self.sources):
            total = None
            for a, b, count in terms:
                term = part(self, a) * part(other, b)
                term = term if count == 1 else term * count
                total = term if total is None else total + term
            rows.append(total)
        return self._like(self.value * other.value, rows)

    def __add__(self, other) -> "Jet":
        if not isinstance(other, Jet):
            return self._like(self.value + other, self.rows)
        return self._like(self.value + other.value, [a + b for a, b in zip(self.rows, other.rows)])

    def __neg__(self) -> "Jet":
        return self._like(-self.value, [-r for r in self.rows])

    def __sub__(self, other) -> "Jet":
        if not isinstance(other, Jet):
            return self._like(self.value - other, self.rows)
        return self._like(self.value - other.value, [a - b for a, b in zip(self.rows, other.rows)])

    def __rsub__(self, other) -> "Jet":  # number - jet
        return self._like(other - self.value, [-r for r in self.rows])

    __rmul__ = __mul__
    __radd__ = __add__


def _cos_derivatives(z: torch.Tensor, order: int) -> list:
    """cos^(m) = sin^(m+1): cos, -sin, -cos, sin, ..."""
    return scaled_derivatives("sin", z, order + 1)[1:]


class JetOps:
    """``compute``'s operations on jets (``pinnspec.models._layers.TensorOps`` on tensors)."""

    @staticmethod
    def linear(x: Jet, weight, bias=None) -> Jet:
        return x.linear(weight, bias)

    @staticmethod
    def activation(x: Jet, name: str) -> Jet:
        return x.elementwise(lambda z, order: scaled_derivatives(name, z, order))

    @staticmethod
    def scale(x: Jet, factor) -> Jet:  # a method call: dynamo does not trace ``jet * tensor`` to Jet.__mul__
        return x.scaled(factor)

    @staticmethod
    def cos_sin(x: Jet) -> Jet:
        c, s = x.elementwise(_cos_derivatives), x.elementwise(lambda z, order: scaled_derivatives("sin", z, order))
        return Jet(torch.cat([c.value, s.value], dim=-1),
                   [torch.cat([a, b], dim=-1) for a, b in zip(c.rows, s.rows)], x.sources)


JET_OPS = JetOps()
