"""Loss-specific gradients: the rows g_i of G, flat over every trainable tensor."""

from __future__ import annotations

import torch


def flatten(tensors, like: list[torch.Tensor]) -> torch.Tensor:
    """Concatenate per-parameter gradients into one [p] vector; None -> zeros
    (a parameter a loss does not reach gets zeros, not None/NaN)."""
    return torch.cat([(g if g is not None else torch.zeros_like(t)).reshape(-1) for g, t in zip(tensors, like)])


def loss_gradients(tasks: list[torch.Tensor], params: list[torch.Tensor], *, retain_graph: bool = False
                   ) -> torch.Tensor:
    """G [m, p]: one backward pass per task (a list of m scalars) over the shared graph.

    Pass the scalars themselves, not rows of a stacked tensor: the backward of
    a row of ``torch.stack`` sends zeros through every other task's graph.

    The eager strategy's G (and the compiled per-set units' where the network adds its own loss term);
    measured on the CPU, m separate backward passes over one graph are far faster than vmapped batched
    gradients for PINN graphs.  Otherwise the compiled strategies take G from one function of theta
    (`pinnspec.engine._compiled.FusedGradients`)."""
    m = len(tasks)
    rows = []
    for i in range(m):
        grads = torch.autograd.grad(tasks[i], params, retain_graph=retain_graph or i < m - 1, allow_unused=True)
        rows.append(flatten(grads, params))
    return torch.stack(rows)  # [m, p]
