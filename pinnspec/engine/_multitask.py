"""Multi-task training of any torch model by the update chain: shared parameters through surgery, the
optimizer's proposal and alignment, task heads by the optimizer alone.

    chain = UpdateChain(ConFIG(), Adam(lr=1e-3), GUA())
    optimizer = MultiTaskOptimizer(chain, shared=trunk_params, heads=head_params, tasks=m)
    for x, y in batches:
        step = optimizer.step(lambda: task_losses(model, x, y))   # m scalar losses -> one update
        step.G, step.a, step.u, step.p, step.losses               # what the step computed (detached)
    optimizer.fit(lambda x, y: task_losses(model, x, y), x, y, epochs=E, batch_size=B, shuffle=generator)

One step (the paper's multi-task appendix, app:mtl_details: "GUA is applied to the same shared parameters
after task-gradient aggregation and optimizer proposal. The task-specific classification heads are updated
by the native optimizer but are not modified by GUA"):

    L = task_losses()                                    [m]
    G_all = loss_gradients(L, shared + heads)            [m, p_s + p_h]   (m backward passes)
    G = G_all[:, :p_s];  g_heads = sum_i G_all[i, p_s:]  [m, p_s], [p_h]
    p, state = chain.update(G, theta_s, state)           [p_s]            (surgery, proposal, alignment)
    u_h, s_h = chain.optimizer.propose(g_heads, s_h)     [p_h]            (the same optimizer, own state)
    theta_s -= lr p;  theta_h -= lr u_h

The heads' row blocks are summed: when loss i reaches head i only, that gives each head its own task's
gradient.  For an element-wise optimizer such as Adam, the heads' separate state makes this the same as
one optimizer over all parameters whose shared part alone goes through surgery and alignment.  Without
heads every parameter is shared.  The learning rate is the optimizer's ``lr``, constant.
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable, NamedTuple, Sequence

import torch
from torch import Tensor

from ._chain import ChainState, UpdateChain
from ._gradients import loss_gradients

__all__ = ["MultiTaskOptimizer", "MultiTaskStep", "multitask_gradients"]


class MultiTaskStep(NamedTuple):
    """What one :meth:`MultiTaskOptimizer.step` computed, all detached."""

    G: Tensor  # [m, p_s]  loss-specific gradients w.r.t. the shared parameters
    a: Tensor  # [p_s]     constructed direction (surgery)
    u: Tensor  # [p_s]     optimizer proposal
    p: Tensor  # [p_s]     applied update (p = u without alignment)
    losses: Tensor  # [m]


class MultiTaskOptimizer:
    """Owns the update chain's state for the ``shared`` tensors, the optimizer's state for the ``heads``
    tensors, and the one place that moves them (``theta -= lr * update``).

    ``shared`` / ``heads``: leaf tensors with ``requires_grad`` (the model's, updated in place);
    ``tasks``: the number m of losses a step takes; ``generator``: the surgery's random choices (PCGrad's
    task orders), None for the global generator."""

    def __init__(self, chain: UpdateChain, shared: Sequence[Tensor], heads: Sequence[Tensor] = (), *, tasks: int,
                 generator: torch.Generator | None = None):
        if not shared:
            raise ValueError("MultiTaskOptimizer needs at least one shared tensor")
        if chain.uses_hessian:
            raise ValueError(f"MultiTaskOptimizer runs first-order optimizers; {type(chain.optimizer).__name__} "
                             "needs Hessian estimates")
        self.chain = chain
        self.shared, self.heads = list(shared), list(heads)
        self.tasks = int(tasks)
        self.generator = generator
        self.shared_numel = sum(t.numel() for t in self.shared)
        self.heads_numel = sum(t.numel() for t in self.heads)
        self.state: ChainState = chain.init(_flat(self.shared), [tuple(t.shape) for t in self.shared], self.tasks)
        self.heads_state = chain.optimizer.init(_flat(self.heads), [tuple(t.shape) for t in self.heads]) \
            if self.heads else None
        self.lr = float(chain.optimizer.lr)

    @property
    def aligned(self) -> bool:
        """Whether the alignment can change u (GUA): p is then not always u."""
        return self.chain.aligned

    def step(self, task_losses: Callable[[], Sequence[Tensor]]) -> MultiTaskStep:
        """One update from ``task_losses()``: m scalar losses computed on the current parameters."""
        losses = list(task_losses())
        if len(losses) != self.tasks:
            raise ValueError(f"task_losses gave {len(losses)} losses; this optimizer takes {self.tasks}")
        G, g_heads = multitask_gradients(losses, self.shared, self.heads)  # [m, p_s], [p_h]
        step = self.chain.update(G, _flat(self.shared), self.state, generator=self.generator)  # [p_s]
        _apply(self.shared, step.p, self.lr)
        self.state = step.state
        if self.heads:
            u_heads, self.heads_state = self.chain.optimizer.propose(g_heads, self.heads_state,
                                                                     params=_flat(self.heads))  # [p_h]
            _apply(self.heads, u_heads, self.lr)
        return MultiTaskStep(G, step.a, step.u, step.p, torch.stack([loss.detach() for loss in losses]))


    def fit(self, task_losses: Callable[[Tensor, Tensor], Sequence[Tensor]], x: Tensor, y: Tensor, *, epochs: int,
            batch_size: int, shuffle: torch.Generator, around_step=contextlib.nullcontext,
            after_step: Callable[[int, int, MultiTaskStep], bool] | None = None,
            after_epoch: Callable[[int], None] | None = None) -> int:
        """Train on (x [n, d], y [n, ...]) for ``epochs`` epochs of minibatches: each epoch a permutation drawn
        from ``shuffle`` (on the CPU, then moved to x's device) cut into ceil(n / B) batches of B = min(
        ``batch_size``, n) rows, one `step` each on ``task_losses(x_batch, y_batch)``.  ``around_step()``: a
        context around each step (a benchmark's timer); ``after_step(epoch, k, step)``: called after step k of
        an epoch, False stops the training; ``after_epoch(epoch)``: after each whole epoch.  Returns the epochs
        completed."""
        batch = min(int(batch_size), len(x))
        steps_per_epoch = math.ceil(len(x) / batch)
        for epoch in range(int(epochs)):
            order = torch.randperm(len(x), generator=shuffle).to(x.device)  # [n]
            for k in range(steps_per_epoch):
                with around_step():
                    index = order[k * batch: (k + 1) * batch]  # [B]
                    step = self.step(lambda: task_losses(x[index], y[index]))
                stop = after_step is not None and after_step(epoch, k, step) is False
                del step  # G is not kept alive into the next step (it would add m x p to the peak memory)
                if stop:
                    return epoch
            if after_epoch is not None:
                after_epoch(epoch)
        return int(epochs)


def multitask_gradients(losses: Sequence[Tensor], shared: Sequence[Tensor], heads: Sequence[Tensor] = ()
                        ) -> tuple[Tensor, Tensor]:
    """(G [m, p_s], g_heads [p_h]): the loss-specific gradients w.r.t. the ``shared`` tensors (one row per
    loss), and the sum of the rows w.r.t. the ``heads`` tensors (each head's own task's gradient when loss
    i reaches head i only)."""
    shared = list(shared)
    G_all = loss_gradients(list(losses), shared + list(heads))  # [m, p_s + p_h]
    p_s = sum(t.numel() for t in shared)
    return G_all[:, :p_s], G_all[:, p_s:].sum(dim=0)


def _apply(tensors: list[Tensor], update: Tensor, lr: float) -> None:
    """theta <- theta - lr * update (the flat update [p] split over the tensors)."""
    with torch.no_grad():
        for t, piece in zip(tensors, update.split([t.numel() for t in tensors])):
            t.add_(piece.view_as(t), alpha=-lr)


def _flat(tensors: list[Tensor]) -> Tensor:
    return torch.cat([t.detach().reshape(-1) for t in tensors])  # [p]
