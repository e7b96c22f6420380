"""Forward (Taylor-mode) propagation of the input derivatives a derivative plan needs.

Each layer carries the value h [N, w] and the input derivatives D^alpha h for
alpha in the closure of the needed multi-indices (every sub-multiset of each).
A Linear layer maps every derivative (the bias only touches the value); the
activation applies its Faà di Bruno program.  The result is an ordinary
autograd graph of first-order ops: parameter gradients are one backward pass
(no double backward), and it stays differentiable to any order (Hessian-vector
products of the loss work as with the autograd plan).

Two layouts of the derivatives, same values:
* ``rows`` (default): a list of [N, w] tensors, one per multi-index; no
  gathers or scatters, products shared between targets (fastest on CPU).
* ``stack``: one [K, N, w] tensor per layer, batched gathers and index_add
  (fewer, larger kernels; untimed on GPU).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..models._layers import Network
from ..models._mlp import ACTIVATIONS, MLP
from ._activations import DERIVATIVES, scaled_derivatives
from ._jet import JET_OPS, Jet
from ._program import (LinearOperator, MultiIndex, Products, activation_program, carried, closure, combine,
                       input_operator_rows, input_program, input_rows, operator_program, order_key, row_program)

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
    return {(f, what): (op_rows[op_row[what]][:, f] if isinstance(what, LinearOperator)
                        else out[:, f] if not what else rows[row[what]][:, f]) for f, what in plan.needs}


def propagate(model: MLP, x: torch.Tensor, multi_indices, layout: str = "rows"
              ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(u [N, n_out], D [K, N, n_out] or None when K = 0) with D[k] = D^{multi_indices[k]} u;
    multi_indices: distinct, non-empty, sorted by (order, index), coordinates < d."""
    multi_indices = tuple(tuple(mi) for mi in multi_indices)
    out, rows, _ = _propagate(model, x, multi_indices, layout)
    if not multi_indices:
        return out, None
    return out, rows if isinstance(rows, torch.Tensor) else torch.stack(rows)


def _propagate(model: MLP, x: torch.Tensor, multi_indices: tuple[MultiIndex, ...], layout: str, operators=()):
    """(u [N, n_out], rows, operator rows): rows[k] = D^{multi_indices[k]} u [N, n_out] (a list, or a
    stack), operator rows[j] = operators[j] u [N, n_out] (a list)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout '{layout}' (known: {', '.join(LAYOUTS)})")
    if list(multi_indices) != sorted(set(multi_indices), key=order_key) or not all(multi_indices):
        raise ValueError("multi-indices must be distinct, non-empty and sorted by (order, index)")
    d = x.shape[-1]
    if any(i < 0 or i >= d for mi in multi_indices for i in mi) or \
            any(i < 0 or i >= d for op in operators for mi, _ in op.terms for i in mi):
        raise ValueError(f"a multi-index names a coordinate outside 0..{d - 1}")
    operators = tuple(operators)
    if operators and layout == "stack":  # the stack layout carries every term as a row and combines them
        terms = tuple(sorted(set(multi_indices) | {mi for op in operators for mi, _ in op.terms}, key=order_key))
        out, rows, _ = _propagate(model, x, terms, layout)
        row = {mi: k for k, mi in enumerate(terms)}
        keep = [rows[row[mi]] for mi in multi_indices]
        return out, (torch.stack(keep) if keep else []), [
            combine(op, [rows[row[mi]] for mi, _ in op.terms]) for op in operators]
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
    if layout == "rows":
        h, rows = sig[0][1], input_rows(targets, sig, first.weight)
        op_rows = input_operator_rows(operators, sig, first.weight)
        for i in range(1, last_hidden + 1):
            layer = layers[i]
            z = F.linear(h, layer.weight, layer.bias)
            dz = [F.linear(r, layer.weight) for r in rows]
            lz = [F.linear(r, layer.weight) for r in op_rows]
            program = row_program(sources, multi_indices if i == last_hidden else sources)
            op_program = operator_program(sources, operators)
            sig = scaled_derivatives(name, z, max(program.max_order, op_program.max_order))
            product = Products(dz)
            h, rows = sig[0][1], program.apply(sig, dz, product)
            op_rows = op_program.apply(sig, lz, product)
    else:
        h, rows = sig[0][1], input_program(targets, d).apply(sig, first.weight)
        for i in range(1, last_hidden + 1):
            layer = layers[i]
            z = F.linear(h, layer.weight, layer.bias)
            dz = F.linear(rows, layer.weight)
            program = activation_program(sources, multi_indices if i == last_hidden else sources)
            sig = scaled_derivatives(name, z, program.max_order)
            h, rows = sig[0][1], program.apply(sig, dz)
        rows, op_rows = rows.unbind(0), []
    # one product per derivative row, not one over a [K * N, w] stack: the weight gradient then
    # reduces over N points at a time, as nested autograd does (a float32 GEMM reducing over K * N
    # rows into a few outputs loses ~sqrt(K) more digits on CPU; 1.6e-5 vs 8e-7 on Burgers)
    return (F.linear(h, last.weight, last.bias), [F.linear(r, last.weight) for r in rows],
            [F.linear(r, last.weight) for r in op_rows])
