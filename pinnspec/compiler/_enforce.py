"""The problem a network with enforced conditions trains on (``enforce``, `pinnspec.lang._enforce`).

A field u with a hard constraint is u = A + D * N, N the network's output: every residual and every report
integrand is rewritten in terms of N by substituting A + D * N for u and differentiating (SymPy), so that
the derivative engines, the kernels and the compiled step work on the network as they do without
constraints.  The network that predicts the fields (`HardConstrained`) applies the same transform.
Periodic embeddings need no rewriting: the embedding is part of the network.
"""

from __future__ import annotations

import dataclasses

import sympy
import torch

from .. import ir

__all__ = ["constrained_problem", "HardConstrained"]


def constrained_problem(p: ir.Problem) -> ir.Problem:
    """``p`` with u replaced by A + D * N in every residual and report integrand (``p`` itself without
    hard constraints)."""
    if not p.hard_constraints:
        return p
    mapping = {p.field_function(h.field): h.extension + h.distance * p.field_function(h.field)
               for h in p.hard_constraints}

    def rewrite(expr: sympy.Expr) -> sympy.Expr:  # the data's jumps (min, max, heaviside) differentiate to 0
        return ir.without_jumps(expr.xreplace(mapping).doit()) if expr.has(*mapping) else expr

    def condition(c: ir.Condition) -> ir.Condition:
        faces = tuple(tuple(map(rewrite, group)) for group in c.face_residuals) if c.face_residuals else None
        return dataclasses.replace(c, residuals=tuple(map(rewrite, c.residuals)), face_residuals=faces)

    def report(r: ir.Report) -> ir.Report:
        return dataclasses.replace(r, integrals=tuple(dataclasses.replace(i, integrand=rewrite(i.integrand))
                                                      for i in r.integrals))

    return dataclasses.replace(p, conditions=tuple(map(condition, p.conditions)),
                               reports=tuple(map(report, p.reports)))


class HardConstrained(torch.nn.Module):
    """The fields of a network ``net`` with hard constraints: column f is A_f + D_f * N_f for a constrained
    field f, N_f otherwise.  ``transform(x [N, d]) -> (A [N, k], D [N, k])`` for the constrained fields'
    columns ``columns`` (`CompiledProblem.constraint_transform`).  Its parameters are the network's."""

    def __init__(self, net: torch.nn.Module, transform, columns: tuple[int, ...]):
        super().__init__()
        self.net = net
        self.transform = transform
        self.columns = columns

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [N, d] -> [N, n_fields]
        out = self.net(x)  # [N, n_fields]
        extension, distance = self.transform(x)  # [N, k], [N, k]
        index = torch.tensor(self.columns, device=x.device)
        return out.index_copy(1, index, extension + distance * out[:, self.columns])
