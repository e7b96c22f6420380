"""The derivative plan: which input derivatives of which fields a point set
needs, and the autograd calls that compute each exactly once.

A value is keyed ``(field index, multi-index)``: the multi-index is the sorted
tuple of coordinate indices differentiated by (``()`` is the field itself,
``(0, 0, 1)`` is u_xxt for coordinates (x, t)).  Every needed value is built
from its prefix: one ``autograd.grad`` of a value gives all of its first
derivatives at once (the network is pointwise, so the gradient of the sum
over points is the per-point derivative), so the plan needs one call per
*internal* node of the prefix tree, shared by every condition on the points.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

Key = tuple[int, tuple[int, ...]]


@dataclass(frozen=True)
class DerivativePlan:
    fields: tuple[str, ...]
    coordinates: tuple[str, ...]
    needs: tuple[Key, ...]  # what kernels read
    steps: tuple[Key, ...]  # values to differentiate, in order (parents before children)

    @classmethod
    def build(cls, needs: set[Key], fields: tuple[str, ...], coordinates: tuple[str, ...]) -> "DerivativePlan":
        closure: set[Key] = set()
        for f, mi in needs:
            for k in range(len(mi) + 1):
                closure.add((f, mi[:k]))
        steps = sorted({(f, mi[:-1]) for f, mi in closure if mi}, key=lambda k: (len(k[1]), k))
        return cls(fields, coordinates, tuple(sorted(needs, key=lambda k: (k[0], len(k[1]), k[1]))), tuple(steps))

    @property
    def max_order(self) -> int:
        return max((len(mi) for _, mi in self.needs), default=0)

    @property
    def n_grad_calls(self) -> int:
        return len(self.steps)

    def evaluate(self, outputs: torch.Tensor, x: torch.Tensor) -> dict[Key, torch.Tensor]:
        """outputs: [N, n_fields] computed from x: [N, d] (requires grad).
        Returns every needed value as a [N] tensor, differentiable w.r.t. the
        network's parameters (create_graph=True)."""
        values: dict[Key, torch.Tensor] = {(f, ()): outputs[:, f] for f in range(outputs.shape[1])}
        for f, parent in self.steps:
            value = values[(f, parent)]
            if value.requires_grad:
                (grad,) = torch.autograd.grad(value, x, grad_outputs=torch.ones_like(value),
                                              create_graph=True, allow_unused=True)
            else:
                grad = None
            if grad is None:  # the value does not depend on x (e.g. a constant exact solution)
                grad = torch.zeros_like(x)
            first = parent[-1] if parent else 0
            for j in range(first, x.shape[1]):
                values[(f, parent + (j,))] = grad[:, j]  # [N]
        return {k: values[k] for k in self.needs}

    def describe(self) -> list[str]:
        def name(key: Key) -> str:
            f, mi = key
            return self.fields[f] + ("_" + "".join(self.coordinates[i] for i in mi) if mi else "")

        lines = [f"needs: {', '.join(name(k) for k in self.needs)}"]
        for step in self.steps:
            f, parent = step
            first = parent[-1] if parent else 0
            children = [name((f, parent + (j,))) for j in range(first, len(self.coordinates))]
            lines.append(f"grad({name(step)}) -> {', '.join(children)}")
        lines.append(f"{self.n_grad_calls} autograd.grad call(s)")
        return lines
