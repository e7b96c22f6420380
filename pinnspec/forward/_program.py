"""Derivative programs: which input derivatives each layer carries, and the
Faà di Bruno terms that build an activation's derivatives from its input's.

A multi-index is a sorted tuple of coordinate indices (as in the derivative
plan).  For h = sigma(z) and a multi-index alpha of order k,

    D^alpha h = sum over set partitions pi of alpha's positions
                sigma^(|pi|)(z) * prod_{B in pi} D^{alpha_B} z,

so a layer must carry every sub-multiset of every needed multi-index (the
closure).  Partitions giving the same multiset of blocks are merged into one
term with an integer coefficient; the term of one block is sigma'(z) D^alpha z.
A program is built once per (sources, targets) (cached): ``RowProgram`` over a
list of [N, w] rows, one per multi-index (one op per term, products shared
between targets).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

import torch

MultiIndex = tuple[int, ...]


@dataclass(frozen=True)
class LinearOperator:
    """L = sum_k coef_k D^{mi_k}: constant coefficients, multi-indices of order >= 1, sorted by
    (order, index); normalised so that the first coefficient is 1.  Found by the compiler
    (pinnspec.compiler._operators, exported as pinnspec.compiler.LinearOperator); defined here, with
    the rows it becomes, so that the forward engine does not import the compiler."""

    terms: tuple[tuple[MultiIndex, float], ...]

    @property
    def order(self) -> int:
        return max(len(mi) for mi, _ in self.terms)

    def text(self, field: str, coordinates: tuple[str, ...], exact: bool = False) -> str:
        """e.g. ``u_t - 0.0031830989*u_xx`` (``exact``: every digit of the coefficients)."""
        parts = []
        for mi, coef in self.terms:
            name = f"{field}_{''.join(coordinates[i] for i in mi)}"
            sign = "-" if coef < 0 else "+"
            size = abs(coef)
            body = name if size == 1 else f"{size!r}*{name}" if exact else f"{size:.8g}*{name}"
            parts.append((sign, body))
        first_sign, first = parts[0]
        return ("-" if first_sign == "-" else "") + first + "".join(f" {s} {b}" for s, b in parts[1:])


def combine(operator: LinearOperator, terms: list[torch.Tensor]) -> torch.Tensor:
    """sum_k coef_k terms[k]: the operator's value from its terms' values."""
    total = None
    for (_, coef), value in zip(operator.terms, terms):
        term = value if coef == 1 else value * coef
        total = term if total is None else total + term
    return total


def _memo(fn):
    """A plain dict cache (torch.compile traces a dict lookup without the warning an lru_cache gets)."""
    cache: dict = {}

    def cached(*args):
        value = cache.get(args)
        if value is None:
            value = cache[args] = fn(*args)
        return value

    cached.__wrapped__ = fn
    cached.__name__ = fn.__name__
    cached.__doc__ = fn.__doc__
    return cached


def order_key(mi: MultiIndex):
    return (len(mi), mi)


def closure(multi_indices) -> tuple[MultiIndex, ...]:
    """Every non-empty sub-multiset of the given multi-indices, sorted by (order, index)."""
    out: set[MultiIndex] = set()
    for mi in multi_indices:
        mi = tuple(sorted(mi))
        for r in range(1, len(mi) + 1):
            out.update(itertools.combinations(mi, r))
    return tuple(sorted(out, key=order_key))


def _set_partitions(items: list[int]):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for p in _set_partitions(rest):
        yield [[first]] + p
        for i in range(len(p)):
            yield p[:i] + [[first] + p[i]] + p[i + 1:]


@_memo
def faa_di_bruno(mi: MultiIndex) -> tuple[tuple[int, tuple[MultiIndex, ...], int], ...]:
    """The terms (m, blocks, coefficient) of D^mi sigma(z): coefficient * sigma^(m)(z) * prod D^block z."""
    counts: Counter = Counter()
    for p in _set_partitions(list(range(len(mi)))):
        blocks = tuple(sorted((tuple(sorted(mi[i] for i in b)) for b in p), key=order_key))
        counts[blocks] += 1
    return tuple(sorted(((len(b), b, c) for b, c in counts.items()), key=lambda t: (t[0], t[1])))


def _source_rows(sources: tuple[MultiIndex, ...], needed) -> dict[MultiIndex, int]:
    """multi-index -> its row among ``sources``; every ``needed`` one must be there."""
    row = {mi: i for i, mi in enumerate(sources)}
    missing = [mi for mi in needed if mi not in row]
    if missing:
        raise ValueError(f"sources lack the sub-multi-indices {missing}")
    return row


# ---------------------------------------------------------------- the programs over rows
# A list of [N, w] rows, one per multi-index: no gathers and no scatters, products shared between targets.

@dataclass(frozen=True, eq=False)
class RowProgram:
    """D^alpha sigma(z) for alpha in ``targets`` from rows D^beta z, beta in ``sources``."""

    sources: tuple[MultiIndex, ...]
    targets: tuple[MultiIndex, ...]
    max_order: int
    # per target: (source row of alpha, ((m, coefficient, sorted source rows of the blocks), ...))
    terms: tuple[tuple[int, tuple[tuple[int, int, tuple[int, ...]], ...]], ...]

    def apply(self, sig: list[tuple[int, torch.Tensor]], dz: list[torch.Tensor],
              product: "Products | None" = None) -> list[torch.Tensor]:
        """``product``: the layer's shared products of ``dz`` rows (an operator program reuses them)."""
        product = product or Products(dz)
        scale1, q1 = sig[1]
        out = []
        for row, terms in self.terms:
            o = dz[row] * q1 if scale1 == 1 else dz[row] * q1 * scale1
            for m, coef, key in terms:
                scale, q = sig[m]
                o = torch.addcmul(o, q, product(key), value=coef * scale)
            out.append(o)
        return out


class Products:
    """Products of a layer's derivative rows, each formed once (key: sorted row indices, length >= 2)."""

    def __init__(self, dz: list[torch.Tensor]):
        self.dz = dz
        self.cache: dict[tuple[int, ...], torch.Tensor] = {}

    def __call__(self, key: tuple[int, ...]) -> torch.Tensor:
        value = self.cache.get(key)
        if value is None:
            dz = self.dz
            if len(key) == 2:
                value = dz[key[0]] * dz[key[1]]  # a square too: the product's backward is cheaper than pow's
            else:
                value = self(key[:-1]) * dz[key[-1]]
            self.cache[key] = value
        return value


@_memo
def row_program(sources: tuple[MultiIndex, ...], targets: tuple[MultiIndex, ...]) -> RowProgram:
    row = _source_rows(sources, closure(targets))
    terms = []
    for mi in targets:
        ts = tuple((m, coef, tuple(sorted(row[b] for b in blocks)))
                   for m, blocks, coef in faa_di_bruno(mi) if m >= 2)
        terms.append((row[mi], ts))
    return RowProgram(sources, targets, max([0] + [len(mi) for mi in targets]), tuple(terms))


def input_rows(targets: tuple[MultiIndex, ...], sig: list[tuple[int, torch.Tensor]],
               weight: torch.Tensor) -> list[torch.Tensor]:
    """The first activation in the row layout: D^alpha h = sigma^(|alpha|)(z) * prod_j W[:, alpha_j]."""
    wt = weight.t()  # [d, w]
    factors: dict[MultiIndex, torch.Tensor] = {}  # prod_j W[:, mi_j], shared by prefixes
    out = []
    for mi in targets:
        for k in range(1, len(mi) + 1):
            if mi[:k] not in factors:
                factors[mi[:k]] = wt[mi[0]] if k == 1 else factors[mi[:k - 1]] * wt[mi[k - 1]]
        f = factors[mi]
        scale, q = sig[len(mi)]
        out.append(q * (f if scale == 1 else f * scale))
    return out


# ---------------------------------------------------------------- linear operators
# A row L h = sum_k c_k D^{alpha_k} h for a constant-coefficient operator L: one row instead of
# one per term.  At an activation, L sigma(z) = sigma'(z) L z + sum_k c_k (the terms of D^{alpha_k}
# sigma(z) with >= 2 blocks); those read only proper sub-multi-indices of the alpha_k, carried as rows.

@dataclass(frozen=True, eq=False)
class OperatorProgram:
    """L sigma(z) for each operator from its row L z and the rows D^beta z, beta in ``sources``."""

    sources: tuple[MultiIndex, ...]
    operators: tuple  # LinearOperator
    max_order: int
    # per operator: ((m, coefficient, sorted source rows of the blocks), ...), like terms merged
    terms: tuple[tuple[tuple[int, float, tuple[int, ...]], ...], ...]

    def apply(self, sig: list[tuple[int, torch.Tensor]], lz: list[torch.Tensor], product: Products
              ) -> list[torch.Tensor]:
        scale1, q1 = sig[1]
        out = []
        for row, terms in zip(lz, self.terms):
            o = row * q1 if scale1 == 1 else row * q1 * scale1
            for m, coef, key in terms:
                scale, q = sig[m]
                o = torch.addcmul(o, q, product(key), value=coef * scale)
            out.append(o)
        return out


def operator_parts(operators) -> tuple[MultiIndex, ...]:
    """The proper sub-multi-indices of every operator term (what the operators' rows read)."""
    return closure(sub for op in operators for mi, _ in op.terms for r in range(1, len(mi))
                   for sub in itertools.combinations(mi, r))


def carried(multi_indices, operators=()) -> tuple[MultiIndex, ...]:
    """The plain derivative rows a hidden layer carries for these multi-indices and operators
    (each operator is one more row)."""
    return _carried(tuple(multi_indices), tuple(operators))


@_memo
def _carried(multi_indices: tuple[MultiIndex, ...], operators: tuple) -> tuple[MultiIndex, ...]:
    return closure(multi_indices + operator_parts(operators))


@_memo
def operator_program(sources: tuple[MultiIndex, ...], operators: tuple) -> OperatorProgram:
    row = _source_rows(sources, operator_parts(operators))
    programs = []
    for op in operators:
        merged: dict[tuple[int, tuple[int, ...]], float] = {}
        for mi, c in op.terms:
            for m, blocks, coef in faa_di_bruno(tuple(mi)):
                if m >= 2:
                    key = (m, tuple(sorted(row[b] for b in blocks)))
                    merged[key] = merged.get(key, 0.0) + c * coef
        programs.append(tuple((m, coef, key) for (m, key), coef in sorted(merged.items()) if coef != 0))
    return OperatorProgram(sources, tuple(operators), max([0] + [op.order for op in operators]), tuple(programs))


def input_operator_rows(operators, sig: list[tuple[int, torch.Tensor]], weight: torch.Tensor) -> list[torch.Tensor]:
    """The first activation's operator rows: L h = sum_k c_k sigma^(|alpha_k|)(z) prod_j W[:, alpha_k,j]."""
    wt = weight.t()  # [d, w]
    out = []
    for op in operators:
        by_order: dict[int, torch.Tensor] = {}  # sum of c_k prod_j W[:, alpha_k,j] over the terms of one order
        for mi, c in op.terms:
            factor = wt[mi[0]]
            for i in mi[1:]:
                factor = factor * wt[i]
            # also for c = 1 (the same values): without the product a unit term's factor is the strided column
            # of W^T itself, and the compiled step of DeepXDE's Burgers took 2.33 against 1.85 ms (one thread)
            factor = factor * c
            by_order[len(mi)] = factor if len(mi) not in by_order else by_order[len(mi)] + factor
        o = None
        for m in sorted(by_order):
            factor = by_order[m]
            scale, q = sig[m]
            term = q * (factor if scale == 1 else factor * scale)
            o = term if o is None else o + term
        out.append(o)
    return out
