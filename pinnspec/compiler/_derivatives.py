"""The derivative plan: which input derivatives of which fields a point set
needs, and the autograd calls that compute each exactly once.

A value is keyed ``(field index, multi-index)``: the multi-index is the sorted
tuple of coordinate indices differentiated by (``()`` is the field itself,
``(0, 0, 1)`` is u_xxt for coordinates (x, t)).  Every needed value is built
from its prefix: one ``autograd.grad`` of a value gives all of its first
derivatives at once (the network is pointwise, so the gradient of the sum
over points is the per-point derivative), so the plan needs one call per
*internal* node of the prefix tree, shared by every condition on the points.

A value may also be a constant-coefficient linear combination of one field's
derivatives, ``(field index, LinearOperator)`` (e.g. u_t - nu u_xx), when the
residuals on the points use those derivatives only through it (see
``pinnspec.compiler._operators``): nested autograd evaluates it from its terms,
the forward engine carries it as ONE derivative row instead of one per term.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..forward import LinearOperator, MultiIndex, carried, combine, order_key  # noqa: F401  (re-exported)

#: (field index, multi-index) for a field or one derivative; (field index, LinearOperator) for a combination
Key = tuple[int, "MultiIndex | LinearOperator"]


def plain_keys(key: Key) -> list[tuple[int, MultiIndex]]:
    """The (field, multi-index) values a key is made of: itself, or its operator's terms."""
    f, what = key
    return [(f, mi) for mi, _ in what.terms] if isinstance(what, LinearOperator) else [key]


def _sort_key(key: Key):
    f, what = key
    if isinstance(what, LinearOperator):
        return (f, 1, what.order + 1, tuple(what.terms))  # after the plain values of the field
    return (f, 0, len(what), what)


@dataclass(frozen=True)
class DerivativePlan:
    fields: tuple[str, ...]
    coordinates: tuple[str, ...]
    needs: tuple[Key, ...]  # what kernels read
    steps: tuple[tuple[int, MultiIndex], ...]  # values to differentiate, in order (parents before children)

    @classmethod
    def build(cls, needs: set[Key], fields: tuple[str, ...], coordinates: tuple[str, ...]) -> "DerivativePlan":
        closure: set[tuple[int, MultiIndex]] = set()
        for key in needs:
            for f, mi in plain_keys(key):
                for k in range(len(mi) + 1):
                    closure.add((f, mi[:k]))
        steps = sorted({(f, mi[:-1]) for f, mi in closure if mi}, key=lambda k: (len(k[1]), k))
        return cls(fields, coordinates, tuple(sorted(needs, key=_sort_key)), tuple(steps))

    @property
    def max_order(self) -> int:
        return max((len(mi) for key in self.needs for _, mi in plain_keys(key)), default=0)

    @property
    def operators(self) -> tuple[LinearOperator, ...]:
        """The distinct linear operators the plan carries (one forward-engine row each)."""
        return tuple(dict.fromkeys(what for _, what in self.needs if isinstance(what, LinearOperator)))

    def plain(self) -> "DerivativePlan":
        """The same plan with every operator replaced by its terms (each a value of its own)."""
        needs = {k for key in self.needs for k in plain_keys(key)}
        return DerivativePlan.build(needs, self.fields, self.coordinates)

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
        out = {}
        for key in self.needs:
            f, what = key
            if isinstance(what, LinearOperator):
                out[key] = combine(what, [values[(f, mi)] for mi, _ in what.terms])
            else:
                out[key] = values[key]
        return out

    def describe(self) -> list[str]:
        def name(key: Key) -> str:
            f, what = key
            if isinstance(what, LinearOperator):
                return f"({what.text(self.fields[f], self.coordinates)})"
            return self.fields[f] + ("_" + "".join(self.coordinates[i] for i in what) if what else "")

        lines = [f"needs: {', '.join(name(k) for k in self.needs)}"]
        for step in self.steps:
            f, parent = step
            first = parent[-1] if parent else 0
            children = [name((f, parent + (j,))) for j in range(first, len(self.coordinates))]
            lines.append(f"grad({name(step)}) -> {', '.join(children)}")
        lines.append(f"{self.n_grad_calls} autograd.grad call(s)")
        plain = sorted({mi for _, mi in self.needs if mi and not isinstance(mi, LinearOperator)}, key=order_key)
        rows = [f"D_{''.join(self.coordinates[i] for i in mi)}" for mi in carried(plain, self.operators)]
        rows += [f"({op.text('D', self.coordinates)})" for op in self.operators]
        if rows:
            lines.append(f"forward engine: {len(rows)} derivative row(s) per hidden layer: {', '.join(rows)}")
        return lines
