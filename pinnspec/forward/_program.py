"""Derivative programs: which input derivatives each layer carries, and the
Faà di Bruno terms that build an activation's derivatives from its input's.

A multi-index is a sorted tuple of coordinate indices (as in the derivative
plan).  For h = sigma(z) and a multi-index alpha of order k,

    D^alpha h = sum over set partitions pi of alpha's positions
                sigma^(|pi|)(z) * prod_{B in pi} D^{alpha_B} z,

so a layer must carry every sub-multiset of every needed multi-index (the
closure).  Partitions giving the same multiset of blocks are merged into one
term with an integer coefficient; the term of one block is sigma'(z) D^alpha z.
A program is built once per (sources, targets) (cached) and runs in one of two
layouts: ``RowProgram`` over a list of [N, w] rows (one op per term, products
shared between targets), ``ActivationProgram`` over a [K, N, w] stack (batched
gathers, products and one index_add per partition size m).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

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


def _device_cache(build):
    """Per-device copies of a program's index tensors."""
    def get(self, device):
        key = str(torch.device(device))
        cached = self._tensors.get(key)
        if cached is None:
            cached = self._tensors[key] = build(self, device)
        return cached
    return get


def _rows_spec(rows: tuple[int, ...], broadcast: bool = True):
    """How to read these rows of a stack: ("range", start, count) for a view, else ("index", rows);
    ``broadcast``: one repeated row may be read as a single row."""
    if all(b - a == 1 for a, b in zip(rows, rows[1:])):
        return ("range", rows[0], len(rows))
    if broadcast and len(set(rows)) == 1:
        return ("range", rows[0], 1)  # broadcasts against the other factors
    return ("index", rows)


def _read(stack: torch.Tensor, spec, index: torch.Tensor | None) -> torch.Tensor:
    return stack.narrow(0, spec[1], spec[2]) if spec[0] == "range" else stack.index_select(0, index)


@dataclass(frozen=True, eq=False)
class _Group:
    """The Faà di Bruno terms with m blocks: out[targets] += alpha * coef * sigma^(m)/scale_m * prod."""

    m: int
    targets: tuple  # a rows spec
    coef: tuple[int, ...] | None  # per term, None when all equal (then in ``alpha``)
    alpha: int
    factors: tuple[tuple[tuple, int], ...]  # (rows spec, power) per distinct block column


@dataclass(frozen=True, eq=False)
class ActivationProgram:
    """D^alpha sigma(z) for alpha in ``targets`` from D^beta z for beta in ``sources``
    (the closure of the targets; carried as one [K, N, width] stack in this order)."""

    sources: tuple[MultiIndex, ...]
    targets: tuple[MultiIndex, ...]
    max_order: int
    first_rows: tuple | None  # rows spec of ``sources`` that are the targets (None: all, in order)
    groups: tuple[_Group, ...]
    n_terms: int
    _tensors: dict = field(default_factory=dict, repr=False)

    def _build(self, device):
        def index(spec):
            return torch.tensor(spec[1], dtype=torch.long, device=device) if spec[0] == "index" else None

        first = None if self.first_rows is None else index(self.first_rows)
        groups = [(index(g.targets), None if g.coef is None else torch.tensor(g.coef, device=device),
                   [index(spec) for spec, _ in g.factors]) for g in self.groups]
        return first, groups

    tensors = _device_cache(_build)

    def apply(self, sig: list[tuple[int, torch.Tensor]], dz: torch.Tensor) -> torch.Tensor:
        """sig: [(scale_m, q_m)], sigma^(m)(z) = scale_m q_m, each q_m [N, w];
        dz: [K_sources, N, w] -> [K_targets, N, w]."""
        first, groups = self.tensors(dz.device)
        base = dz if self.first_rows is None else _read(dz, self.first_rows, first)
        scale1, q1 = sig[1]
        out = base * q1
        if scale1 != 1:
            out = out * scale1
        for g, (target_index, coef, factor_index) in zip(self.groups, groups):
            scale, q = sig[g.m]
            prod = None
            for (spec, power), index in zip(g.factors, factor_index):
                f = _read(dz, spec, index)
                f = f.square() if power == 2 else (f if power == 1 else f.pow(power))
                prod = f if prod is None else prod * f
            prod = prod * q
            if coef is not None:
                prod = prod * coef.to(prod.dtype)[:, None, None]
            alpha = g.alpha * scale
            if g.targets[0] == "range":
                out.narrow(0, g.targets[1], g.targets[2]).add_(prod, alpha=alpha)
            else:
                out.index_add_(0, target_index, prod, alpha=alpha)
        return out


def _source_rows(sources: tuple[MultiIndex, ...], needed) -> dict[MultiIndex, int]:
    """multi-index -> its row among ``sources``; every ``needed`` one must be there."""
    row = {mi: i for i, mi in enumerate(sources)}
    missing = [mi for mi in needed if mi not in row]
    if missing:
        raise ValueError(f"sources lack the sub-multi-indices {missing}")
    return row


@_memo
def activation_program(sources: tuple[MultiIndex, ...], targets: tuple[MultiIndex, ...]) -> ActivationProgram:
    row = _source_rows(sources, closure(targets))
    first_rows = None if targets == sources else _rows_spec(tuple(row[mi] for mi in targets))
    by_m: dict[int, list] = {}
    n_terms = len(targets)
    for k, mi in enumerate(targets):
        for m, blocks, coef in faa_di_bruno(mi):
            if m >= 2:
                by_m.setdefault(m, []).append((k, coef, tuple(row[b] for b in blocks)))
                n_terms += 1
    groups = []
    for m in sorted(by_m):
        terms = by_m[m]
        coefs = tuple(c for _, c, _ in terms)
        uniform = all(c == coefs[0] for c in coefs)
        columns = Counter(tuple(t[2][j] for t in terms) for j in range(m))
        factors = tuple((_rows_spec(col), power) for col, power in sorted(columns.items()))
        groups.append(_Group(m, _rows_spec(tuple(k for k, _, _ in terms), broadcast=False), None if uniform else coefs,
                             coefs[0] if uniform else 1, factors))
    return ActivationProgram(sources, targets, max([0] + [len(mi) for mi in targets]), first_rows,
                             tuple(groups), n_terms)


@dataclass(frozen=True, eq=False)
class InputProgram:
    """The first activation, h = sigma(x W^T + b): D^alpha z is W[:, i] for alpha = (i,) and 0
    above order 1, so D^alpha h = sigma^(|alpha|)(z) * prod_j W[:, alpha_j]."""

    targets: tuple[MultiIndex, ...]
    max_order: int
    columns: tuple[tuple[int, ...], ...]  # max_order rows of coordinate indices (d: a factor 1)
    groups: tuple[tuple[int, int, int], ...]  # (order, start, stop): targets are sorted by order
    _tensors: dict = field(default_factory=dict, repr=False)

    def _build(self, device):
        return [torch.tensor(c, dtype=torch.long, device=device) for c in self.columns]

    tensors = _device_cache(_build)

    def apply(self, sig: list[tuple[int, torch.Tensor]], weight: torch.Tensor) -> torch.Tensor:
        """sig: [(scale_m, q_m)] each q_m [N, w]; weight: [w, d] -> [K_targets, N, w]."""
        columns = self.tensors(weight.device)
        wt = torch.cat([weight.t(), weight.new_ones(1, weight.shape[0])])  # [d + 1, w]; row d = ones
        factor = wt.index_select(0, columns[0])
        for c in columns[1:]:
            factor = factor * wt.index_select(0, c)  # [K, w]
        parts = []
        for k, start, stop in self.groups:
            scale, q = sig[k]
            f = factor[start:stop, None, :]
            parts.append(q * (f if scale == 1 else f * scale))
        return parts[0] if len(parts) == 1 else torch.cat(parts)


@_memo
def input_program(targets: tuple[MultiIndex, ...], dim: int) -> InputProgram:
    max_order = max([0] + [len(mi) for mi in targets])
    if list(targets) != sorted(targets, key=order_key):
        raise ValueError("targets must be sorted by (order, multi-index)")
    columns = tuple(tuple(mi[j] if j < len(mi) else dim for mi in targets) for j in range(max_order))
    groups = []
    for k, mi in enumerate(targets):
        if groups and groups[-1][0] == len(mi):
            groups[-1][2] = k + 1
        else:
            groups.append([len(mi), k, k + 1])
    return InputProgram(targets, max_order, columns, tuple(tuple(g) for g in groups))


# ---------------------------------------------------------------- row layout
# The same programs over a list of [N, w] rows (one per multi-index) instead of a
# [K, N, w] stack: no gathers and no scatters, products shared between targets.

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
                value = dz[key[0]].square() if key[0] == key[1] else dz[key[0]] * dz[key[1]]
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
    return closure(tuple(multi_indices) + operator_parts(operators))


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
