"""Exactly periodic networks: a fixed periodic embedding of chosen input columns in front of a trunk.

For each periodic column c with box [lo_c, lo_c + L_c] the column enters the trunk only through
theta_c = 2 pi (x_c - lo_c) / L_c, as (cos theta_c, sin theta_c); the other columns pass as they are:

    gamma(x) = [x_c for each non-periodic c, ascending]
               + [cos theta_c, sin theta_c for each periodic c, ascending],   u(x) = trunk(gamma(x)),

so gamma has in_dim + (number of periodic columns) entries, and u and every derivative of u are
L_c-periodic in x_c (exactly: C^infinity periodic boundary conditions with no loss term).  Dong & Ni 2021,
"A method for representing periodic functions and enforcing exactly periodic boundary conditions with
deep neural networks" (J. Comput. Phys. 435, 110242); jaxpi's ``PeriodEmbs`` has the same form (its
frequency w = 2 pi / L, no shift lo: a phase the trunk's first layer absorbs).

gamma is written with ``ops.linear``, ``ops.cos_sin`` and ``+`` only (fixed 0/1 selection and placement
matrices, no concatenation), so the forward derivative engine runs it on jets.  The matrices are
non-persistent buffers rebuilt from the Python floats after every ``.to(dtype / device)``: 2 pi / L is
always rounded once in the working dtype (a float32 -> float64 round trip would break periodicity at 1e-7).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._layers import TENSOR_OPS, Network
from ._mlp import ACTIVATIONS, MLP


def runs_on_jets(inner: nn.Module) -> bool:
    """A `Network` with its own forward, or pinnspec's plain `MLP` (its forward, nn.Linear layers)."""
    if isinstance(inner, Network):
        return type(inner).forward is Network.forward
    return (isinstance(inner, MLP) and type(inner).forward is MLP.forward
            and inner.activation is ACTIVATIONS.get(inner.activation_name)
            and all(type(layer) is nn.Linear for layer in inner.layers))


def run_inner(ops, inner: nn.Module, h):  # [N, k] -> [N, n_out]
    """``inner`` (`runs_on_jets`) on ``h`` with ``ops``: a `Network`'s own ``compute``, or pinnspec's `MLP` as
    its forward computes it."""
    if isinstance(inner, Network):
        return inner.compute(ops, h)
    for layer in inner.layers[:-1]:
        h = ops.activation(ops.linear(h, layer.weight, layer.bias), inner.activation_name)  # [N, width]
    return ops.linear(h, inner.layers[-1].weight, inner.layers[-1].bias)


class PeriodicEmbedding(Network):
    """u(x) = inner(gamma(x)); ``periodic``: ((column, lo, period), ...), the inner reads
    ``in_dim + len(periodic)`` inputs (``embedded_dim``).  For an inner that is neither a `Network` nor
    pinnspec's `MLP` the instance is an `OpaquePeriodicEmbedding` (tensors only; not for the engine)."""

    def __new__(cls, inner: nn.Module | None = None, *args, **kwargs):  # no arguments: copy / unpickle
        opaque = cls is PeriodicEmbedding and inner is not None and not runs_on_jets(inner)
        return super().__new__(OpaquePeriodicEmbedding if opaque else cls)

    def __init__(self, inner: nn.Module, in_dim: int, periodic: tuple[tuple[int, float, float], ...]):
        super().__init__()
        self.inner, self.in_dim = inner, int(in_dim)
        self.periodic = tuple(sorted((int(c), float(lo), float(period)) for c, lo, period in periodic))
        columns = [c for c, _, _ in self.periodic]
        if not columns or len(set(columns)) != len(columns) or not all(0 <= c < self.in_dim for c in columns):
            raise ValueError(f"periodic columns must be distinct and in 0..{self.in_dim - 1}, got {columns}")
        if not all(period > 0 and math.isfinite(period) and math.isfinite(lo) for _, lo, period in self.periodic):
            raise ValueError(f"each periodic column needs a finite lo and a period > 0, got {self.periodic}")
        self.kept = tuple(c for c in range(self.in_dim) if c not in columns)  # the non-periodic columns
        self.embedded_dim = self.in_dim + len(columns)
        reference = next(iter(inner.parameters()), next(iter(inner.buffers()), torch.empty(0)))
        dtype = reference.dtype if reference.is_floating_point() else torch.get_default_dtype()
        for name, matrix in self._matrices(dtype, reference.device).items():
            self.register_buffer(name, matrix, persistent=False)

    @property
    def activation_name(self) -> str | None:
        return getattr(self.inner, "activation_name", None)

    def _matrices(self, dtype: torch.dtype, device) -> dict[str, torch.Tensor]:
        p, n_kept = len(self.periodic), len(self.kept)
        pass_through = torch.zeros(self.embedded_dim, self.in_dim, dtype=torch.float64)  # [e, d]
        angle_weight = torch.zeros(p, self.in_dim, dtype=torch.float64)  # [p, d]
        angle_bias = torch.zeros(p, dtype=torch.float64)  # [p]
        placement = torch.zeros(self.embedded_dim, 2 * p, dtype=torch.float64)  # [e, 2p]: [cos, sin] -> pairs
        for i, c in enumerate(self.kept):
            pass_through[i, c] = 1.0
        for k, (c, lo, period) in enumerate(self.periodic):
            frequency = 2.0 * math.pi / period
            angle_weight[k, c], angle_bias[k] = frequency, -frequency * lo
            placement[n_kept + 2 * k, k] = placement[n_kept + 2 * k + 1, p + k] = 1.0
        return {name: m.to(dtype=dtype, device=device) for name, m in (
            ("pass_through", pass_through), ("angle_weight", angle_weight), ("angle_bias", angle_bias),
            ("placement", placement))}

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        if self.angle_weight.is_floating_point():  # rebuilt in the new dtype from the exact floats
            for name, matrix in self._matrices(self.angle_weight.dtype, self.angle_weight.device).items():
                setattr(self, name, matrix)
        return self

    def embed(self, ops, x):  # [N, d] -> [N, d + p]
        theta = ops.linear(x, self.angle_weight, self.angle_bias)  # [N, p]: 2 pi (x_c - lo) / L
        return ops.linear(x, self.pass_through) + ops.linear(ops.cos_sin(theta), self.placement)

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        return run_inner(ops, self.inner, self.embed(ops, x))  # the trunk on gamma(x) [N, d + p]


class OpaquePeriodicEmbedding(PeriodicEmbedding):
    """inner(gamma(x)) for any nn.Module inner: its own forward, so ``pinnspec.forward.supports`` is False."""

    def compute(self, ops, x):
        if ops is not TENSOR_OPS:
            raise TypeError(f"{type(self.inner).__name__} is not written with ops; it runs on tensors only")
        return self.inner(self.embed(ops, x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [N, d] -> [N, n_fields]
        return self.compute(TENSOR_OPS, x)
