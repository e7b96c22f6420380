"""Linear operators: derivatives that reach the residuals only through one fixed combination.

In u_t + u u_x - nu u_xx = 0 the derivatives u_t and u_xx enter only as
L u = u_t - nu u_xx (constant coefficients, nothing else touches them), so the
kernel can read L u as ONE value.  Nested autograd gains nothing from that,
but the forward engine carries one derivative row per value through every
layer, and L u costs one row where u_t and u_xx cost two (u_x stays a row of
its own: u u_x needs it, and so does u_xx's chain rule).  Every layer's
matrix products scale with the rows: Burgers goes from 4 rows (u, u_x, u_t,
u_xx) to 3, a heat equation in 2-D from 6 to 4, Beltrami from 8 to 5.

Per point set and field, an operator is formed when

* its derivatives (at least two) enter every residual on the set with constant
  (numeric) coefficients, all of them in the same ratios or none of them (a
  residual may add other derivatives of the field: those stay plain values);
* none of them enters any residual on the set in any other way (through a
  product, a function, a coefficient with a param or a coordinate);
* the operators together carry fewer forward rows than the plain derivatives
  (all fields share the rows of one network, so this is decided per set).

A coefficient that is a trainable ``param`` (an inverse problem's unknown
diffusivity) is not constant: those derivatives stay plain values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import sympy

from .. import ir
from ..forward import carried, order_key
from ._codegen import derivative_key
from ._derivatives import LinearOperator, MultiIndex

#: candidate fields beyond which the row count is minimised greedily instead of over every subset
_EXHAUSTIVE = 8


def linear_operator(coefficients: dict[MultiIndex, sympy.Expr]) -> LinearOperator:
    """The operator sum_mi coef_mi D^mi, normalised (first coefficient 1, terms by (order, index));
    the ratios are taken exactly, then rounded once."""
    terms = sorted(coefficients.items(), key=lambda t: order_key(t[0]))
    first = terms[0][1]
    return LinearOperator(tuple((mi, float(coef / first)) for mi, coef in terms))


def _same(a: LinearOperator, b: LinearOperator) -> bool:
    return (len(a.terms) == len(b.terms) and all(
        ma == mb and math.isclose(ca, cb, rel_tol=1e-12, abs_tol=0.0) for (ma, ca), (mb, cb) in zip(a.terms, b.terms)))


def _consistent(op: LinearOperator, linear: list[dict[MultiIndex, sympy.Expr]]) -> bool:
    """Whether every residual holds all of the operator's terms, in its ratios, or none of them."""
    terms = {mi for mi, _ in op.terms}
    for coefficients in linear:
        part = {mi: c for mi, c in coefficients.items() if mi in terms}
        if part and (set(part) != terms or not _same(linear_operator(part), op)):
            return False
    return True


def _usage(residual: sympy.Expr, problem: ir.Problem
           ) -> dict[int, tuple[dict[MultiIndex, sympy.Expr], set[MultiIndex]]]:
    """field -> ({multi-index: constant coefficient}, {multi-indices entering otherwise}) for one residual."""
    atoms = residual.atoms(sympy.Derivative)
    dummies = {atom: sympy.Dummy() for atom in atoms}
    expr = residual.xreplace(dummies)
    usage: dict[int, tuple[dict, set]] = {}
    for atom, symbol in dummies.items():
        field, mi = derivative_key(atom, problem)
        linear, other = usage.setdefault(field, ({}, set()))
        coefficient = sympy.diff(expr, symbol)
        try:
            value = complex(coefficient) if coefficient.is_number else None
        except (TypeError, ValueError):  # zoo, nan
            value = None
        if mi in linear or mi in other:  # two atoms of one derivative (d/dx d/dt and d/dt d/dx): keep it plain
            linear.pop(mi, None)
            other.add(mi)
        elif value is not None and value.imag == 0 and math.isfinite(value.real) and value.real != 0:
            linear[mi] = coefficient  # the residual is affine in it: c * D^mi + (terms free of it)
        else:
            other.add(mi)
    return usage


def forward_rows(plain: set[MultiIndex], operators) -> int:
    """Derivative rows the forward engine carries through a hidden layer for these plain
    multi-indices and operators."""
    operators = tuple(dict.fromkeys(operators))
    return len(carried(sorted(plain, key=order_key), operators)) + len(operators)


def find_operators(residuals: Sequence[sympy.Expr], problem: ir.Problem) -> dict[int, LinearOperator]:
    """field index -> the linear operator its derivatives enter ``residuals`` (every residual
    component evaluated on one point set) through; fields without one are left out."""
    usages = [_usage(r, problem) for r in residuals]
    all_plain: dict[int, set[MultiIndex]] = {}
    for usage in usages:
        for field, (linear, other) in usage.items():
            all_plain.setdefault(field, set()).update(linear, other)
    candidates: dict[int, LinearOperator] = {}
    for field in sorted(all_plain):
        elsewhere = set().union(*(u[field][1] for u in usages if field in u))  # used non-linearly somewhere
        linear = [{mi: c for mi, c in u[field][0].items() if mi not in elsewhere} for u in usages if field in u]
        options = [op for op in (linear_operator(d) for d in linear if len(d) >= 2) if _consistent(op, linear)]
        if options:
            candidates[field] = max(options, key=lambda op: len(op.terms))

    def rows(chosen) -> int:
        plain = set()
        for field, mis in all_plain.items():
            plain |= mis - ({mi for mi, _ in candidates[field].terms} if field in chosen else set())
        return forward_rows(plain, [candidates[f] for f in chosen])

    fields = sorted(candidates)
    if len(fields) <= _EXHAUSTIVE:
        subsets = (c for k in range(len(fields) + 1) for c in itertools.combinations(fields, k))
        best = min(subsets, key=lambda c: (rows(c), len(c)))
    else:  # greedy: add the field that lowers the row count most, while one does
        best: tuple = ()
        while True:
            options = [best + (f,) for f in fields if f not in best]
            better = min(options, key=rows, default=None)
            if better is None or rows(better) >= rows(best):
                break
            best = better
    return {field: candidates[field] for field in best}
