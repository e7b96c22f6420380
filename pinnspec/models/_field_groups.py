"""Fields of different coordinates: ``field u, a(x, y)`` in a problem of (x, y, t).

Each group of fields with the same coordinates has its own network, which reads only those columns:

    u(x) = sum_g P_g net_g(S_g x),   S_g [|C_g|, d] selects the group's columns C_g,
                                     P_g [n_fields, |F_g|] places its outputs at its fields' columns,

so a field of a group is exactly constant along every coordinate outside C_g (its derivative there is 0,
by construction, on every engine).  A time-independent coefficient recovered in an inverse problem is the
usual case.  S_g and P_g are fixed 0/1 matrices applied with ``ops.linear`` (no concatenation), so the forward
derivative engine runs the map on jets like the networks themselves.
"""

from __future__ import annotations

import torch
from torch import nn

from ._layers import Network
from ._periodic import run_inner, runs_on_jets


class FieldGroups(Network):
    """``groups``: ((columns, fields, inner), ...): ``inner`` reads the input columns ``columns`` and gives the
    output columns ``fields``; every output column belongs to exactly one group."""

    def __init__(self, in_dim: int, out_dim: int, groups: tuple[tuple[tuple[int, ...], tuple[int, ...], nn.Module], ...]):
        super().__init__()
        placed = sorted(f for _, fields, _ in groups for f in fields)
        if placed != list(range(out_dim)):
            raise ValueError(f"the groups must give each of the {out_dim} outputs once, got {placed}")
        for columns, _, inner in groups:
            if not columns or not all(0 <= c < in_dim for c in columns) or len(set(columns)) != len(columns):
                raise ValueError(f"a group's columns must be distinct and in 0..{in_dim - 1}, got {columns}")
            if not runs_on_jets(inner):
                raise ValueError(f"{type(inner).__name__} is not one of pinnspec's networks: fields of some "
                                 "coordinates only need mlp, fourier_mlp, modified_mlp, pirate_net or adaptive_mlp")
        self.in_dim, self.out_dim = int(in_dim), int(out_dim)
        self.columns = tuple(tuple(map(int, c)) for c, _, _ in groups)
        self.fields = tuple(tuple(map(int, f)) for _, f, _ in groups)
        self.inners = nn.ModuleList(inner for _, _, inner in groups)
        reference = next(iter(self.inners[0].parameters()))
        for g, (columns, fields) in enumerate(zip(self.columns, self.fields)):
            select = torch.zeros(len(columns), self.in_dim, dtype=reference.dtype)  # S_g [|C_g|, d]
            place = torch.zeros(self.out_dim, len(fields), dtype=reference.dtype)  # P_g [n_fields, |F_g|]
            for i, c in enumerate(columns):
                select[i, c] = 1.0
            for j, f in enumerate(fields):
                place[f, j] = 1.0
            self.register_buffer(f"select{g}", select.to(reference.device), persistent=False)
            self.register_buffer(f"place{g}", place.to(reference.device), persistent=False)

    @property
    def activation_name(self) -> str | None:
        names = {getattr(inner, "activation_name", None) for inner in self.inners}
        return names.pop() if len(names) == 1 else None

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        out = None
        for g, inner in enumerate(self.inners):
            h = run_inner(ops, inner, ops.linear(x, getattr(self, f"select{g}")))  # [N, |F_g|]
            part = ops.linear(h, getattr(self, f"place{g}"))  # [N, n_fields]
            out = part if out is None else out + part
        return out
