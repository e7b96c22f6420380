"""Forward (Taylor-mode) propagation of the input derivatives a derivative plan needs.

Each layer carries the value h [N, w] and the input derivatives D^alpha h for
alpha in the closure of the needed multi-indices (every sub-multiset of each).
A Linear layer maps every derivative (the bias only touches the value); the
activation applies its Faà di Bruno program.  The result is an ordinary
autograd graph of first-order ops: parameter gradients are one backward pass
(no double backward), and it stays differentiable to any order (Hessian-vector
products of the loss work as with the autograd plan).

The derivatives are a list of [N, w] rows, one per multi-index (no gathers
or scatters; products shared between targets).  Two layouts of a hidden
layer's linear map, same values:
* ``rows``: one matrix product per row (the fastest on the CPU: PNd's
  compiled step 1.42 s against 1.65 s for ``stack``, one thread);
* ``stack``: one product over the value and every row stacked
  [(1 + K) N, w] (fewer, larger kernels: a compiled PINNacle step launches
  16-56 % fewer, which is what a GPU shared by many runs spends its time on).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..models import ACTIVATIONS, MLP, Network
from ._activations import DERIVATIVES, scaled_derivatives
from ._jet import JET_OPS, Jet
from ._program import (LinearOperator, MultiIndex, Products, _memo, carried, closure, combine,
                       input_operator_rows, input_rows, operator_program, order_key, row_program)

Key = tuple  # (field index, multi-index or LinearOperator), as in the derivative plan
LAYOUTS = ("rows", "stack")


def supports(model) -> bool:
    """True when ``model`` is pinnspec's MLP (its own forward, plain Linear layers, no hooks)
    with an activation whose derivatives are known, or one of pinnspec's other networks (a
    ``pinnspec.models.Network``: its forward is its ``compute``, run on jets here) with such an
    activation and no hooks; False for anything else."""
    if isinstance(model, Network):
        return (type(model).forward is Network.forward and getattr(model, "activation_name", None) in DERIVATIVES
                and not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules()))
    if not isinstance(model, MLP) or type(model).forward is not MLP.forward:
        return False
    name = getattr(model, "activation_name", None)
    if name not in DERIVATIVES or model.activation is not ACTIVATIONS.get(name):
        return False
    if not len(model.layers) or not all(type(layer) is nn.Linear for layer in model.layers):
        return False
    for module in (model, *model.layers):
        if module._forward_hooks or module._forward_pre_hooks:
            return False
    return True


def forward_values(model, plan, x: torch.Tensor, *, layout: str = "rows") -> dict[Key, torch.Tensor]:
    """What ``plan.evaluate(model(x), x)`` returns (same keys, same order, each [N]),
    computed by forward derivative propagation through ``model`` (``supports(model)``).
    A linear operator of the plan is one row of its own (not the sum of its terms' rows).
    ``x`` [N, d] need not require grad; the values are differentiable w.r.t. the
    model's parameters (and x)."""
    if not supports(model):
        raise TypeError(f"the forward engine does not support {type(model).__name__} "
                        "(see pinnspec.forward.supports)")
    operators = plan.operators
    multi = tuple(sorted({mi for _, mi in plan.needs if mi and not isinstance(mi, LinearOperator)}, key=order_key))
    out, rows, op_rows = _propagate(model, x, multi, layout, operators)
    row = {mi: k for k, mi in enumerate(multi)}
    op_row = {op: k for k, op in enumerate(operators)}
    column = _column if out.shape[1] > 1 else _only_column
    return {(f, what): column(op_rows[op_row[what]] if isinstance(what, LinearOperator)
                              else out if not what else rows[row[what]], f) for f, what in plan.needs}


def _column(values: torch.Tensor, f: int) -> torch.Tensor:
    return values[:, f]


def _only_column(values: torch.Tensor, f: int) -> torch.Tensor:
    """The one column of [N, 1] as a view [N] (``values[:, 0]`` would copy, backwards, into a new [N, 1])."""
    return values.squeeze(1)


def propagate(model: MLP, x: torch.Tensor, multi_indices, layout: str = "rows"
              ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(u [N, n_out], D [K, N, n_out] or None when K = 0) with D[k] = D^{multi_indices[k]} u;
    multi_indices: distinct, non-empty, sorted by (order, index), coordinates < d."""
    multi_indices = tuple(tuple(mi) for mi in multi_indices)
    out, rows, _ = _propagate(model, x, multi_indices, layout)
    if not multi_indices:
        return out, None
    return out, torch.stack(rows)


def _propagate(model: MLP, x: torch.Tensor, multi_indices: tuple[MultiIndex, ...], layout: str, operators=()):
    """(u [N, n_out], rows, operator rows): rows[k] = D^{multi_indices[k]} u [N, n_out], operator
    rows[j] = operators[j] u [N, n_out] (lists)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout '{layout}' (known: {', '.join(LAYOUTS)})")
    operators = tuple(operators)
    _check_indices(multi_indices, operators, x.shape[-1])
    if not multi_indices and not operators:
        return model(x), [], []
    if isinstance(model, Network):  # the network's own code on jets; an operator is the sum of its terms' rows
        sources = closure(multi_indices + tuple(mi for op in operators for mi, _ in op.terms))
        jet = model.compute(JET_OPS, Jet.input(x, sources))
        row = {mi: k for k, mi in enumerate(sources)}
        return (jet.value, [jet.rows[row[mi]] for mi in multi_indices],
                [combine(op, [jet.rows[row[mi]] for mi, _ in op.terms]) for op in operators])

    layers = model.layers
    first, last = layers[0], layers[-1]
    if len(layers) == 1:  # affine network: first derivatives are the weights, the rest zero
        out = F.linear(x, first.weight, first.bias)
        n = x.shape[0]

        def row(mi):
            return first.weight[:, mi[0]].expand(n, -1) if len(mi) == 1 else out.new_zeros(out.shape)

        return out, [row(mi) for mi in multi_indices], [combine(op, [row(mi) for mi, _ in op.terms])
                                                        for op in operators]

    name = model.activation_name
    sources = carried(multi_indices, operators)
    last_hidden = len(layers) - 2
    targets = multi_indices if last_hidden == 0 else sources
    z = F.linear(x, first.weight, first.bias)
    sig = scaled_derivatives(name, z, max([len(mi) for mi in targets] + [op.order for op in operators]))
    h, rows = sig[0][1], input_rows(targets, sig, first.weight)
    op_rows = input_operator_rows(operators, sig, first.weight)
    for i in range(1, last_hidden + 1):
        z, dz, lz = _hidden_linear(layers[i], h, rows, op_rows, stacked=layout == "stack")
        program = row_program(sources, multi_indices if i == last_hidden else sources)
        op_program = operator_program(sources, operators)
        sig = scaled_derivatives(name, z, max(program.max_order, op_program.max_order))
        product = Products(dz)
        h, rows = sig[0][1], program.apply(sig, dz, product)
        op_rows = op_program.apply(sig, lz, product)
    # one product per derivative row, not one over a [K * N, w] stack: the weight gradient then
    # reduces over N points at a time, as nested autograd does (a float32 GEMM reducing over K * N
    # rows into a few outputs loses ~sqrt(K) more digits on CPU; 1.6e-5 vs 8e-7 on Burgers)
    return (F.linear(h, last.weight, last.bias), [F.linear(r, last.weight) for r in rows],
            [F.linear(r, last.weight) for r in op_rows])


@_memo
def _check_indices(multi_indices: tuple[MultiIndex, ...], operators: tuple, d: int) -> bool:
    """Raise unless the multi-indices are distinct, non-empty, sorted by (order, index) and, with the operators'
    terms, name coordinates 0..d-1 (checked once per distinct arguments: True, as `_memo` keeps no None)."""
    if list(multi_indices) != sorted(set(multi_indices), key=order_key) or not all(multi_indices):
        raise ValueError("multi-indices must be distinct, non-empty and sorted by (order, index)")
    if any(i < 0 or i >= d for mi in multi_indices for i in mi) or \
            any(i < 0 or i >= d for op in operators for mi, _ in op.terms for i in mi):
        raise ValueError(f"a multi-index names a coordinate outside 0..{d - 1}")
    return True


def _hidden_linear(layer: nn.Linear, h: torch.Tensor, rows: list[torch.Tensor], op_rows: list[torch.Tensor], *,
                   stacked: bool) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """z = h W^T + b [N, w] and the rows' images D z = (D h) W^T (the bias only touches the value): one product
    per row, or (``stacked``) one product over [h; rows; operator rows] [(1 + K) N, w_in], split again."""
    if not stacked:
        return (F.linear(h, layer.weight, layer.bias), [F.linear(r, layer.weight) for r in rows],
                [F.linear(r, layer.weight) for r in op_rows])
    pieces = F.linear(torch.cat([h, *rows, *op_rows]), layer.weight).split(h.shape[0])  # (1 + K) x [N, w]
    return pieces[0] + layer.bias, list(pieces[1: 1 + len(rows)]), list(pieces[1 + len(rows):])
