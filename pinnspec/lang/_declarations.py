"""Declarations: the spec's structure, its names (``declared``), coordinates, fields, params and lets
(a ``table(...)`` let reads its file now, so that ``check`` reports a bad table)."""

from __future__ import annotations

import os

import sympy

from .. import ir
from ..registry import did_you_mean
from ..sampling import read_file_columns
from ..sampling import TABLE_METHODS as METHODS, TableColumnError, table_columns, table_interpolator
from . import _ast as A
from ._context import Context
from ._expr import BUILTIN_FUNCTIONS, CONSTANTS, INDICATOR_PREFIX, SPECIAL_CALLS, TABLE_SUFFIX, keyword_arguments
from ._geometry import BOX, indicator

#: Statements a spec may hold at most once.
SINGLE = ("problem", "time", "domain", "sampler", "resample", "reference", "test", "validate",
          "model", "optimizer", "schedule", "surgery", "align", "weights", "recipe")
#: The statements that are conditions.
CONDITION_STATEMENTS = (A.Equation, A.Initial, A.Boundary, A.Periodic, A.Data)


#: special calls whose names a spec may also declare (a diffusivity `param d = 0.1`, a domain `inside`): the
#: name alone is the declaration, `d(...)` the derivative, `inside(...)` the indicator
DECLARABLE_CALLS = frozenset({"d", "inside"})


def reserved_kind(name: str) -> str | None:
    if name in A.KEYWORDS:
        return "keyword"
    if name in CONSTANTS:
        return "built-in constant"
    if name in BUILTIN_FUNCTIONS or name in SPECIAL_CALLS - DECLARABLE_CALLS:
        return "built-in function"
    if name == BOX:
        return "built-in shape: the space box"
    return None


# ====================================================================== structure & names
def check_structure(ctx: Context, statements, by_kind) -> None:
    if not statements:
        ctx.diag.error(A.Span(1, 1, 1, 2), "the spec is empty: it must start with 'problem NAME'")
        return
    if not isinstance(statements[0], A.Problem):
        ctx.diag.error(statements[0].span, "a spec must start with 'problem NAME'")
    for kind in SINGLE:
        extra = by_kind.get(kind, [])[1:]
        for st in extra:
            first = by_kind[kind][0]
            ctx.diag.error(st.span, f"a second '{kind}' statement (the first is at line {first.span.line}); "
                           "a spec has at most one")
    if not by_kind.get("field"):
        ctx.diag.error(statements[0].span, "the spec declares no field: add e.g. 'field u'")
    if not by_kind.get("space") and not by_kind.get("time"):
        ctx.diag.error(statements[0].span, "the spec declares no coordinate: add 'space x in [A, B]' and/or 'time t in [A, B]'")
    if not any(isinstance(s, CONDITION_STATEMENTS) for s in statements):
        ctx.diag.error(statements[0].span, "the spec has no condition (equation, initial, boundary, periodic or data)")
    if by_kind.get("problem"):
        _check_name(ctx, by_kind["problem"][0].name)


def _check_name(ctx: Context, ident: A.Ident) -> bool:
    kind = reserved_kind(ident.name)
    if kind:
        ctx.diag.error(ident.span, f"'{ident.name}' is a reserved word ({kind}) and cannot be used as a name; "
                       "choose another name")
        return False
    if "_" in ident.name:
        ctx.diag.error(ident.span, f"'{ident.name}': declared names cannot contain '_' "
                       f"(it marks derivatives, as in u_x); try '{ident.name.replace('_', '')}'")
        return False
    return True


def _declare(ctx: Context, ident: A.Ident, kind: str) -> bool:
    if not _check_name(ctx, ident):
        return False
    if ident.name in ctx.declared:
        other, span = ctx.declared[ident.name]
        ctx.diag.error(ident.span, f"'{ident.name}' is already declared (as a {other} at line {span.line})")
        return False
    ctx.declared[ident.name] = (kind, ident.span)
    return True


def declare_all(ctx: Context, statements) -> None:
    """Every declared name into ``ctx.declared`` (and the fields, params and condition kinds), in file order."""
    for st in statements:
        if isinstance(st, A.Space):
            for interval in st.intervals:
                _declare(ctx, interval.name, "coordinate")
        elif isinstance(st, A.Time):
            _declare(ctx, st.interval.name, "coordinate")
        elif isinstance(st, A.Fields):
            for ident, arguments in zip(st.names, st.arguments or (None,) * len(st.names)):
                if _declare(ctx, ident, "field"):
                    ctx.fields.append(ident.name)
                    if arguments:
                        ctx.field_arguments[ident.name] = arguments
        elif isinstance(st, A.Let):
            _declare(ctx, st.name, "let")
        elif isinstance(st, A.Param):
            if _declare(ctx, st.name, "param"):
                ctx.params[st.name.name] = sympy.Symbol(st.name.name, real=True)
                ctx.param_values.append((st.name.name, st.initial))
        elif isinstance(st, CONDITION_STATEMENTS):
            if _declare(ctx, st.name, "condition"):
                ctx.condition_kinds[st.name.name] = st.keyword
        elif isinstance(st, A.ShapeDecl):
            _declare(ctx, st.name, "shape")
        elif isinstance(st, A.DomainDecl):
            _declare(ctx, st.name, "domain")
        elif isinstance(st, A.Loss):
            _declare(ctx, st.name, "loss")
        elif isinstance(st, A.Grouping):
            _declare(ctx, st.name, "grouping")
        elif isinstance(st, A.Report):
            _declare(ctx, st.name, "report")


# ====================================================================== lets
def let(ctx: Context, st: A.Let) -> None:
    if isinstance(st.value, A.Call) and st.value.func.name == "table" and not st.value.bare:
        value = _table(ctx, st.name.name, st.value)
    else:
        value = ctx.expr.lower(st.value, ctx.scope(f"the let '{st.name.name}'"))
    if ctx.declared_here(st.name):
        ctx.lets[st.name.name] = value


def _table(ctx: Context, name: str, call: A.Call) -> sympy.Expr | None:
    """``let NAME = table("FILE"[, method = M][, column = "C"][, at = (E1, ...)])``: the file's columns matched to
    the coordinates and its rows read and checked now (so that ``check`` reports a bad table); ``at``: where the
    file is read, one expression of the coordinates per coordinate it spans (a file on [0, 1]^2 used on
    [-1, 1]^2: ``at = ((x + 1)/2, (y + 1)/2)``)."""
    ok = True
    if len(call.args) != 1 or not isinstance(call.args[0], A.String):
        where = call.args[1].span if len(call.args) > 1 else call.args[0].span if call.args else call.span
        ctx.diag.error(where, 'table() takes one file name, as a quoted string: table("kappa.csv")')
        ok = False
    options, fine = keyword_arguments(ctx.diag, call, ["method", "column", "at"], "table")
    ok = ok and fine
    method = METHODS[0]
    if "method" in options:
        value = options["method"].value
        method = value.id if isinstance(value, A.Name) else None
        if method not in METHODS:
            hint = did_you_mean(method, METHODS) if method else None
            more = f"; did you mean '{hint}'?" if hint else ""
            ctx.diag.error(value.span, f"table(method = ...) must be one of {', '.join(METHODS)}{more}")
            ok = False
    column = None
    if "column" in options:
        value = options["column"].value
        if isinstance(value, A.String):
            column = value.value
        else:
            ctx.diag.error(value.span, 'table(column = ...) names a column of the file as a quoted string: '
                           'column = "kappa"')
            ok = False
    if not ok:
        return None
    node = call.args[0]
    full = node.value if os.path.isabs(node.value) else os.path.join(ctx.base_dir, node.value)
    if not os.path.isfile(full):
        ctx.diag.error(node.span, f"the table file '{node.value}' does not exist (looked for {full})")
        return None
    time = next((n for n in ctx.coord_symbols if n not in ctx.space_names), None)
    try:
        columns = table_columns(read_file_columns(full), ctx.space_names, time, column)
        table_interpolator(full, columns, method)  # reads every row: numbers, finite, distinct points
    except TableColumnError as exc:
        ctx.diag.error(options["column"].value.span if exc.argument == "column" else node.span, str(exc))
        return None
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        ctx.diag.error(node.span, str(exc))
        return None
    at = _table_at(ctx, options.get("at"), columns.coordinates) if "at" in options else ()
    if at is None:
        return None
    ctx.tables[name] = ir.Table(name, node.value, columns.coordinates, columns.coordinate_columns,
                                columns.value_column, method, at)
    read = {s for e in at for s in e.free_symbols} if at else {ctx.coord_symbols[c] for c in columns.coordinates}
    arguments = [symbol for symbol in ctx.coord_symbols.values() if symbol in read]  # what the value depends on
    value = sympy.Function(name + TABLE_SUFFIX, real=True)(*arguments)
    ctx.table_values[value] = ir.table_value(name)
    return value


def _table_at(ctx: Context, option: A.KeywordArg, spanned: tuple[str, ...]) -> tuple[sympy.Expr, ...] | None:
    """``at = (E1, ...)``: one expression of the coordinates per coordinate the table spans; None (reported)."""
    items = option.value.items if isinstance(option.value, A.TupleExpr) else (option.value,)
    if len(items) != len(spanned):
        ctx.diag.error(option.value.span, f"table(at = ...) gives {len(items)} expression(s), but the table spans "
                       f"{len(spanned)} coordinate(s) ({', '.join(spanned)}): give one per coordinate, in that order, "
                       f"e.g. at = ({', '.join(f'({c} + 1)/2' for c in spanned)})")
        return None
    scope = ctx.scope("table(at = ...)", fields=False, params=False, tables=False)
    values = [ctx.expr.lower(item, scope) for item in items]
    return None if any(v is None for v in values) else tuple(values)


def resolve_indicators(ctx: Context, shapes: dict) -> None:
    """The shapes are lowered: ``inside(SHAPE)`` in the lets (lowered before them) becomes the shape's indicator,
    and later expressions get it directly (`Context.indicators`)."""
    space = [ctx.coord_symbols[c] for c in ctx.space_names]
    ctx.indicators = {name: value for name, shape in shapes.items() if (value := indicator(shape, space)) is not None}
    for name, value in list(ctx.lets.items()):
        if value is None:
            continue
        shape_of = {f: f.func.__name__[len(INDICATOR_PREFIX):] for f in value.atoms(sympy.Function)
                    if f.func.__name__.startswith(INDICATOR_PREFIX)}  # inside(SHAPE) as lowered before the shapes
        if not shape_of:
            continue
        missing = sorted(shape for shape in shape_of.values() if shape not in ctx.indicators)
        if missing:
            ctx.diag.error(ctx.declared[name][1], f"inside({missing[0]}): '{missing[0]}' is not a box, a disk or "
                           "ball, a half-space or a convex polygon (inside() is built for those; write the region "
                           "as a union of them in several inside() terms)")
            ctx.lets[name] = None
            continue
        resolved = value.subs({f: ctx.indicators[shape] for f, shape in shape_of.items()})
        ctx.lets[name] = ir.without_jumps(resolved.doit())


def symbols_from_tree(ctx: Context) -> None:
    """Coordinate symbols and field functions before the intervals are checked
    (a let may use coordinates declared after it)."""
    space, time = [], []
    for st in ctx.tree.statements:
        if isinstance(st, A.Space):
            space.extend(iv.name.name for iv in st.intervals)
        elif isinstance(st, A.Time):
            time.append(st.interval.name.name)
    names = list(dict.fromkeys(space + time))
    ctx.coord_symbols = {n: sympy.Symbol(n, real=True) for n in names}
    ctx.space_names = tuple(dict.fromkeys(space))
    _field_functions(ctx)


def coordinates(ctx: Context, st) -> None:
    """The coordinates of a `space` or `time` statement, each with its checked interval."""
    intervals = st.intervals if isinstance(st, A.Space) else (st.interval,)
    for iv in intervals:
        name = iv.name.name
        if ctx.declared.get(name, (None,))[0] != "coordinate" or ctx.declared[name][1] != iv.name.span:
            continue  # a duplicate: already reported
        lo = ctx.constant(iv.lo, f"the lower end of '{name}'")
        hi = ctx.constant(iv.hi, f"the upper end of '{name}'")
        if lo is None or hi is None:
            lo, hi = 0.0, 1.0  # keep going; the error is reported
        elif not lo < hi:
            what = "empty" if lo == hi else "reversed"
            ctx.diag.error(iv.span, f"{what} interval [{lo:g}, {hi:g}] for '{name}': the lower end must be below the upper end")
            lo, hi = 0.0, 1.0  # keep going (shapes and the domain need a box); the error is reported
        ctx.coordinates.append(ir.Coordinate(name, lo, hi, is_time=isinstance(st, A.Time)))


def finish_coordinates(ctx: Context) -> None:
    """The coordinates in their order (space, then time), their symbols and the fields as functions of them."""
    # space first, then time, each in declaration order
    space = [c for c in ctx.coordinates if not c.is_time]
    time = [c for c in ctx.coordinates if c.is_time]
    ctx.coordinates = space + time
    ctx.coord_symbols = {c.name: c.symbol for c in ctx.coordinates}
    ctx.space_names = tuple(c.name for c in space)
    _check_field_coordinates(ctx)
    _field_functions(ctx)
    # lets were lowered with the same symbols (same names, same assumptions)


def _field_functions(ctx: Context) -> None:
    """Each field as a function of its coordinates: u(x, y, t), a(x, y) for ``field a(x, y)``."""
    def arguments(f):
        kept = ctx.field_coordinates.get(f) or {i.name for i in ctx.field_arguments.get(f, ())}
        return tuple(s for n, s in ctx.coord_symbols.items() if not kept or n in kept)

    ctx.field_exprs = {f: sympy.Function(f)(*arguments(f)) for f in ctx.fields}


def _check_field_coordinates(ctx: Context) -> None:
    """``field a(x, y)``: each listed name a coordinate, none twice; a field that lists every coordinate
    is a plain field."""
    names = [c.name for c in ctx.coordinates]
    for field, arguments in ctx.field_arguments.items():
        seen: set[str] = set()
        for ident in arguments:
            if ident.name not in names:
                hint = did_you_mean(ident.name, names)
                more = f"; did you mean '{hint}'?" if hint else f" (coordinates: {', '.join(names)})"
                ctx.diag.error(ident.span, f"field {field}({', '.join(i.name for i in arguments)}): "
                               f"'{ident.name}' is not a coordinate{more}")
            elif ident.name in seen:
                ctx.diag.error(ident.span, f"field {field}: the coordinate '{ident.name}' is listed twice")
            seen.add(ident.name)
        kept = tuple(n for n in names if n in seen)
        if len(kept) < len(names):
            ctx.field_coordinates[field] = kept
