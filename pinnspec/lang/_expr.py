"""Expressions -> SymPy: names, derivatives (``u_xt``, ``d``, ``lap``, ``dn``),
functions and constants, with located diagnostics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import sympy
from sympy.core.function import AppliedUndef

from ..ir import without_jumps
from ..registry import FUNCTIONS, did_you_mean
from . import _ast as A
from ._diagnostics import Collector

#: name -> (sympy callable, min args, max args or None)
#: what other tools call the derivative operators -> how a spec writes them (docs/reference.md, "Derivatives")
OTHER_NAMES = {
    "laplacian": "lap(u) for the Laplacian of u",
    "laplace": "lap(u) for the Laplacian of u",
    "grad": "d(u, x) for the derivative of u by x (or u_x)",
    "gradient": "d(u, x) for the derivative of u by x (or u_x)",
    "diff": "d(u, x) for the derivative of u by x (or u_x)",
    "derivative": "d(u, x) for the derivative of u by x (or u_x)",
    "div": "d(a, x) + d(b, y) for the divergence of (a, b)",
    "divergence": "d(a, x) + d(b, y) for the divergence of (a, b)",
}

BUILTIN_FUNCTIONS: dict[str, tuple[Callable, int, int | None]] = {
    "sin": (sympy.sin, 1, 1),
    "cos": (sympy.cos, 1, 1),
    "tan": (sympy.tan, 1, 1),
    "exp": (sympy.exp, 1, 1),
    "log": (sympy.log, 1, 1),
    "sqrt": (sympy.sqrt, 1, 1),
    "abs": (sympy.Abs, 1, 1),
    "tanh": (sympy.tanh, 1, 1),
    "sinh": (sympy.sinh, 1, 1),
    "cosh": (sympy.cosh, 1, 1),
    "arcsin": (sympy.asin, 1, 1),
    "arccos": (sympy.acos, 1, 1),
    "arctan": (sympy.atan, 1, 1),
    "atan2": (sympy.atan2, 2, 2),
    "sign": (sympy.sign, 1, 1),
    "min": (sympy.Min, 2, None),
    "max": (sympy.Max, 2, None),
    "heaviside": (lambda x: sympy.Heaviside(x, sympy.Rational(1, 2)), 1, 1),
}
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}
#: calls with a meaning of their own (not functions of values)
SPECIAL_CALLS = {"d", "lap", "dn", "normal", "pool", "table", "integral", "mean", "inside"}
#: the SymPy function standing for ``inside(SHAPE)`` in a `let` lowered before the shapes are (replaced by the
#: shape's indicator once they are: `resolve_indicators`)
INDICATOR_PREFIX = "inside^"
#: the reductions of a `report` (pinnspec.lang._report)
REPORT_CALLS = ("integral", "mean")
#: the suffix of the SymPy function standing for a coefficient table while a spec is lowered
TABLE_SUFFIX = "^table"

_LARGEST_EXPONENT10 = 300  # constants beyond 1e300 are refused (they would overflow float64)
#: how many levels an expression may nest (calls, powers, products inside sums inside calls, ...; docs/language.md,
#: "Limits").  A chain of + and -, of * and /, or of unary minuses is one level however long: it is built flat.
#: SymPy, and the code generated from it, recurse once per level.
MAX_NESTING = 100


@dataclass
class Scope:
    """What an expression may refer to, and where it stands."""

    where: str  # for messages: "an equation", "an interval bound", ...
    coordinates: dict[str, sympy.Symbol]
    space: tuple[str, ...]
    fields: dict[str, sympy.Expr]  # name -> u(x, t); empty where fields are not allowed
    lets: dict[str, sympy.Expr | None]  # None: the let had an error
    params: dict[str, sympy.Symbol]
    declared: dict[str, tuple[str, A.Span]]  # every declared name -> (kind, span)
    allow_coordinates: bool = True
    face: tuple[str, int] | None = None  # (coordinate, outward sign) on a boundary face
    normals: dict[str, sympy.Symbol] | None = None  # space coordinate -> outward normal component (a domain's boundary)
    field_names: tuple[str, ...] = ()
    let_spans: dict[str, A.Span] = field(default_factory=dict)
    tables: bool = True  # whether coefficient tables may appear (not in 'exact': verify differentiates it)
    in_report: bool = False  # inside a report's integral(...) or mean(...)
    indicators: dict[str, sympy.Expr] = field(default_factory=dict)  # shape -> inside(shape), once the shapes are lowered


class _TooDeep(Exception):
    """Lowering stopped at ``node``, nested past MAX_NESTING levels (reported once, where it is caught)."""

    def __init__(self, node: A.Expr):
        super().__init__(node)
        self.node = node


class ExprLowering:
    def __init__(self, diag: Collector):
        self.diag = diag
        self._depth = 0  # the nesting level of the node being lowered (0: none is)

    # ------------------------------------------------------------------ entry
    def lower(self, node: A.Expr, scope: Scope) -> sympy.Expr | None:
        """The SymPy value of ``node``, or None with the errors reported.  An expression nesting more than
        :data:`MAX_NESTING` levels (counting the lets it uses) is an error located at it."""
        if self._depth == 0:
            return self._lower_outermost(node, scope)
        if self._depth > MAX_NESTING:
            raise _TooDeep(node)
        self._depth += 1
        try:
            return getattr(self, "_" + type(node).__name__)(node, scope)
        finally:
            self._depth -= 1

    def _lower_outermost(self, node: A.Expr, scope: Scope) -> sympy.Expr | None:
        self._depth = 1
        try:
            value = getattr(self, "_" + type(node).__name__)(node, scope)
        except _TooDeep as deep:
            self.diag.error(deep.node.span, _too_deep(f"more than {MAX_NESTING}"))
            return None
        except RecursionError:  # within MAX_NESTING levels SymPy should not get here; say so if it does
            self.diag.error(node.span, _too_deep("too many"))
            return None
        finally:
            self._depth = 0
        if value is not None:
            depth = nesting_depth(value)
            if depth > MAX_NESTING:
                self.diag.error(node.span, _too_deep(f"{depth}", " (counting the lets it uses)"))
                return None
        return value

    # ------------------------------------------------------------------ leaves
    def _Number(self, node: A.Number, scope: Scope):
        value = float(node.text)
        if not math.isfinite(value) or (value != 0 and abs(math.log10(abs(value))) > _LARGEST_EXPONENT10):
            self.diag.error(node.span, f"the number {node.text} is out of range (|x| must lie within 1e-300..1e300)")
            return None
        return _rational(node.text)

    def _String(self, node: A.String, scope: Scope):
        self.diag.error(node.span, f'a quoted string ("{node.value}") is not a value in {scope.where}')
        return None

    def _TupleExpr(self, node: A.TupleExpr, scope: Scope):
        self.diag.error(node.span, f"a tuple is not a value in {scope.where}")
        return None

    def _Duration(self, node: A.Duration, scope: Scope):
        self.diag.error(node.span, f"a wall time ({node.amount.text} {node.unit.name}) is a value of 'time' "
                        f"alone, not of {scope.where}; a product needs '*' ({node.amount.text}*{node.unit.name})")
        return None

    def _Name(self, node: A.Name, scope: Scope):
        name = node.id
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in scope.coordinates:
            if not scope.allow_coordinates:
                self.diag.error(node.span, f"{scope.where} must be a constant, but '{name}' is a coordinate")
                return None
            return scope.coordinates[name]
        if name in scope.fields:
            return scope.fields[name]
        if name in scope.params:
            return scope.params[name]
        if name in scope.lets:
            value = scope.lets[name]
            if value is None:
                return None  # its own error is already reported
            used = tables_in(value)
            what = "is a table" if used == [name] else f"reads the table '{used[0]}'" if used else ""
            if used and not scope.allow_coordinates:
                self.diag.error(node.span, f"{scope.where} must be a constant, but '{name}' {what}, "
                                "a function of the coordinates")
                return None
            if used and not scope.tables:
                self.diag.error(node.span, f"{scope.where} cannot use '{name}': it {what}, which defines no "
                                "derivatives, and 'pinnspec verify' differentiates the exact solution; write the "
                                "solution without the table")
                return None
            if not scope.allow_coordinates and value.free_symbols & set(scope.coordinates.values()):
                self.diag.error(node.span, f"{scope.where} must be a constant, but '{name}' depends on the coordinates")
                return None
            return value
        if "_" in name:
            return self._subscript_derivative(node, scope)
        return self._unknown_name(node, scope)

    def _unknown_name(self, node: A.Name, scope: Scope):
        name = node.id
        if name in scope.declared:
            kind, span = scope.declared[name]
            if kind == "field":
                self.diag.error(node.span, f"the field '{name}' cannot appear in {scope.where}")
            elif kind == "param":
                self.diag.error(node.span, f"the param '{name}' cannot appear in {scope.where}")
            elif kind == "let":
                self.diag.error(node.span, f"'{name}' is used before its definition (line {span.line})")
            else:
                self.diag.error(node.span, f"'{name}' is a {kind} (line {span.line}), not a value")
            return None
        if name in BUILTIN_FUNCTIONS or name in SPECIAL_CALLS or name in FUNCTIONS:
            self.diag.error(node.span, f"'{name}' is a function: call it, e.g. {name}(x)")
            return None
        values = list(scope.fields) + list(scope.coordinates) + list(scope.lets) + list(scope.params) + list(CONSTANTS)
        hint = did_you_mean(name, values)
        if hint:
            self.diag.error(node.span, f"unknown name '{name}'; did you mean '{hint}'?")
        elif scope.fields:
            self.diag.error(node.span, f"unknown field '{name}' (fields are: {', '.join(scope.fields)})")
        elif scope.field_names:
            self.diag.error(node.span, f"unknown name '{name}' (coordinates are: {', '.join(scope.coordinates) or 'none'})")
        else:
            self.diag.error(node.span, f"unknown name '{name}'")
        return None

    def _subscript_derivative(self, node: A.Name, scope: Scope):
        name = node.id
        head, _, suffix = name.partition("_")
        if head not in scope.fields:
            if scope.lets.get(head) is not None and tables_in(scope.lets[head]):
                self.diag.error(node.span, table_derivative_message(tables_in(scope.lets[head])[0], name))
            elif head in scope.lets or head in scope.params:
                self.diag.error(node.span, f"subscript derivatives apply to fields; write d({head}, ...) for '{head}'")
            elif head in scope.field_names:
                self.diag.error(node.span, f"the field '{head}' cannot appear in {scope.where}")
            else:
                fields = ", ".join(scope.field_names) or "none"
                hint = did_you_mean(head, scope.field_names)
                more = f"; did you mean '{hint}_{suffix}'?" if hint else f" (fields are: {fields})"
                self.diag.error(node.span, f"'{name}' is not a derivative of a field: unknown field '{head}'{more}")
            return None
        if not suffix or "_" in suffix:
            self.diag.error(node.span, f"a derivative is written FIELD_COORDS, e.g. {head}_{next(iter(scope.coordinates), 'x')}"
                            f"{next(iter(scope.coordinates), 'x')}: '{name}' is not")
            return None
        splits = split_subscript(suffix, tuple(scope.coordinates))
        if not splits:
            coords = ", ".join(scope.coordinates) or "none"
            self.diag.error(node.span, f"cannot read '{suffix}' in '{name}' as coordinates (coordinates are: {coords})")
            return None
        if len(splits) > 1:
            readings = " or ".join("d/d" + " d/d".join(s) for s in splits[:3])
            self.diag.error(node.span, f"ambiguous derivative '{name}': '{suffix}' reads as {readings}; "
                            f"write d({head}, ...) instead")
            return None
        field = scope.fields[head]
        absent = [c for c in splits[0] if scope.coordinates[c] not in field.args]
        if absent:  # `field a(x, y)`: a_t is 0
            self.diag.warning(node.span, f"'{name}' is 0: the field {field} does not depend on {absent[0]}")
            return sympy.Integer(0)
        return sympy.Derivative(field, *(scope.coordinates[c] for c in splits[0]))

    # ------------------------------------------------------------------ operators
    def _Neg(self, node: A.Neg, scope: Scope):
        negations = 0
        while isinstance(node, A.Neg):  # a chain of unary minuses, however long, is one level
            negations += 1
            node = node.operand
        value = self.lower(node, scope)
        return None if value is None else -value if negations % 2 else value

    def _BinOp(self, node: A.BinOp, scope: Scope):
        if node.op != "^":
            return self._chain(node, scope)
        left = self.lower(node.left, scope)
        right = self.lower(node.right, scope)
        if left is None or right is None:
            return None
        if left.is_number and right.is_number:
            try:
                magnitude = abs(float(right)) * math.log10(max(abs(complex(left)), 1e-300))
            except (TypeError, ValueError, OverflowError):
                magnitude = 0.0
            if magnitude > _LARGEST_EXPONENT10:
                self.diag.error(node.span, "this constant is too large (beyond 1e300)")
                return None
            if left.is_zero and right.is_negative:
                self.diag.error(node.span, "division by zero (0 to a negative power)")
                return None
        return left**right

    def _chain(self, node: A.BinOp, scope: Scope):
        """``a + b - c ...`` or ``a * b / c ...``, however many operands, lowered left to right without
        recursing.  A sum is built flat (``sympy.Add``: what adding pairwise gives, in one step); a product
        pairwise from the left, as written (``-a*(b + c)`` distributes the -a, as SymPy does for two
        factors)."""
        ops = ("+", "-") if node.op in ("+", "-") else ("*", "/")
        operands: list[tuple[str, A.Expr]] = []  # right to left
        while isinstance(node, A.BinOp) and node.op in ops:
            operands.append((node.op, node.right))
            node = node.left
        first = self.lower(node, scope)
        values = []
        for op, operand in reversed(operands):
            value = self.lower(operand, scope)
            if value is not None and op == "/" and value.is_zero:
                self.diag.error(operand.span, "division by zero")
                value = None
            if value is not None and op == "-":
                value = -value
            values.append((op, value))
        if first is None or any(value is None for _, value in values):
            return None
        if ops[0] == "+":
            return sympy.Add(first, *(value for _, value in values))
        product = first
        for op, value in values:
            product = product * value if op == "*" else product / value
        return product

    # ------------------------------------------------------------------ calls
    def _Call(self, node: A.Call, scope: Scope):
        name = node.func.name
        if name in REPORT_CALLS:
            self.diag.error(node.span, f"{name}(PART, EXPR) belongs in a 'report' (report NAME = {name}(...)), "
                            f"and not inside another {name}(...)" if scope.in_report else
                            f"{name}(PART, EXPR) belongs in a 'report' (report NAME = {name}(...)), not in {scope.where}")
            return None
        if node.kwargs and name != "table":
            self.diag.error(node.kwargs[0].span, f"'{name}' takes no keyword arguments")
            return None
        if name == "d":
            return self._d(node, scope)
        if name == "lap":
            return self._lap(node, scope)
        if name == "dn":
            return self._dn(node, scope)
        if name == "normal":
            return self._normal(node, scope)
        if name == "inside":
            return self._inside(node, scope)
        if name == "pool":
            self.diag.error(node.span, "pool(...) belongs in a 'loss' or 'grouping', not in an expression")
            return None
        if name == "table":
            self.diag.error(node.span, "table(...) is the whole value of a let: write 'let a = table(\"FILE\")' "
                            "and use 'a' here")
            return None
        if name in BUILTIN_FUNCTIONS:
            function, lo, hi = BUILTIN_FUNCTIONS[name]
        elif name in FUNCTIONS:
            function = FUNCTIONS.get(name)
            lo, hi = getattr(function, "nargs_range", (1, 1))
        else:
            if name in scope.declared or name in scope.fields:
                self.diag.error(node.func.span, f"'{name}' is not a function (it is a {scope.declared.get(name, ('field',))[0]}); "
                                "fields are used without arguments, e.g. u")
            else:
                known = list(BUILTIN_FUNCTIONS) + FUNCTIONS.names() + ["d", "lap", "dn"]
                hint = did_you_mean(name, known)
                if name.lower() in OTHER_NAMES:
                    more = f"; write {OTHER_NAMES[name.lower()]}"
                elif hint:
                    more = f"; did you mean '{hint}'?"
                else:
                    more = f" (functions are: {', '.join(sorted(known))})"
                self.diag.error(node.func.span, f"unknown function '{name}'{more}")
            return None
        n = len(node.args)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            self.diag.error(node.span, f"{name}() takes {want} argument{'s' if want != '1' else ''}, got {n}")
            return None
        args = [self.lower(a, scope) for a in node.args]
        if any(a is None for a in args):
            return None
        return function(*args)

    def _coordinate_args(self, node: A.Call, scope: Scope, args: tuple[A.Expr, ...]):
        symbols = []
        ok = True
        for arg in args:
            if not isinstance(arg, A.Name) or arg.id not in scope.coordinates:
                coords = ", ".join(scope.coordinates) or "none"
                what = f"'{arg.id}'" if isinstance(arg, A.Name) else "this"
                self.diag.error(arg.span, f"{what} is not a coordinate to differentiate by (coordinates are: {coords})")
                ok = False
                continue
            symbols.append(scope.coordinates[arg.id])
        return symbols if ok else None

    def _d(self, node: A.Call, scope: Scope):
        if len(node.args) < 2:
            self.diag.error(node.span, "d(EXPR, x, ...) needs an expression and at least one coordinate")
            return None
        symbols = self._coordinate_args(node, scope, node.args[1:])
        expr = self.lower(node.args[0], scope)
        if expr is None or symbols is None:
            return None
        return self._no_table_derivative(sympy.diff(expr, *symbols), node, scope)

    def _one_arg(self, node: A.Call, scope: Scope):
        if len(node.args) != 1:
            self.diag.error(node.span, f"{node.func.name}() takes 1 argument, got {len(node.args)}")
            return None
        return self.lower(node.args[0], scope)

    def _lap(self, node: A.Call, scope: Scope):
        if not scope.space:
            self.diag.error(node.span, "lap() sums second derivatives over the space coordinates, and there are none")
            return None
        expr = self._one_arg(node, scope)
        if expr is None:
            return None
        return self._no_table_derivative(sympy.Add(*(sympy.diff(expr, scope.coordinates[c], 2) for c in scope.space)),
                                         node, scope)

    def _dn(self, node: A.Call, scope: Scope):
        if scope.normals is not None:
            expr = self._one_arg(node, scope)
            if expr is None:
                return None
            return self._no_table_derivative(
                sympy.Add(*(normal * sympy.diff(expr, scope.coordinates[c]) for c, normal in scope.normals.items())),
                node, scope)
        if scope.face is None:
            self.diag.error(node.span, "dn() is the outward normal derivative on a boundary face: "
                            "use it only in a 'boundary' condition or in a report's integral over a boundary part")
            return None
        expr = self._one_arg(node, scope)
        if expr is None:
            return None
        coordinate, sign = scope.face
        return self._no_table_derivative(sign * sympy.diff(expr, scope.coordinates[coordinate]), node, scope)

    def _normal(self, node: A.Call, scope: Scope):
        """``normal(c)``: the component along the space coordinate ``c`` of the outward unit normal."""
        space = ", ".join(scope.space) or "none"
        if len(node.args) != 1 or not isinstance(node.args[0], A.Name) or node.args[0].id not in scope.space:
            where = node.args[0].span if len(node.args) == 1 else node.span
            self.diag.error(where, f"normal(c) takes one space coordinate, the component it gives "
                            f"(space coordinates are: {space})")
            return None
        coordinate = node.args[0].id
        if scope.normals is not None:
            return scope.normals[coordinate]
        if scope.face is not None:
            face_coordinate, sign = scope.face
            return sympy.Integer(sign if coordinate == face_coordinate else 0)
        self.diag.error(node.span, "normal(c) is the outward unit normal on a boundary: use it only in a "
                        "'boundary' condition or in a report's integral over a boundary part")
        return None

    def _inside(self, node: A.Call, scope: Scope):
        """``inside(SHAPE)``: 1 inside the shape, 0 outside, 1/2 on its boundary (a piecewise constant by region:
        ``let k = 1 + 9*inside(core)``)."""
        if len(node.args) != 1 or not isinstance(node.args[0], A.Name):
            self.diag.error(node.span, "inside() takes one declared shape: inside(core)")
            return None
        shape = node.args[0].id
        if scope.declared.get(shape, ("",))[0] != "shape":
            shapes = [n for n, (kind, _) in scope.declared.items() if kind == "shape"]
            hint = did_you_mean(shape, shapes)
            more = f"; did you mean '{hint}'?" if hint else f" (shapes are: {', '.join(shapes) or 'none'})"
            self.diag.error(node.args[0].span, f"inside() takes a declared shape, and '{shape}' is none{more}")
            return None
        if shape in scope.indicators:
            return scope.indicators[shape]
        return sympy.Function(INDICATOR_PREFIX + shape, real=True)(*(scope.coordinates[c] for c in scope.space))

    def _no_table_derivative(self, value: sympy.Expr, node: A.Call, scope: Scope):
        """``value`` (the derivative of a jump, heaviside's, taken as 0: points fall on a jump with probability
        0), or None (reported at ``node``) when it holds a derivative of a coefficient table."""
        value = without_jumps(value)
        differentiated = [d.expr for d in value.atoms(sympy.Derivative) if tables_in(d.expr)]
        if not differentiated:
            return value
        self.diag.error(node.span, table_derivative_message(tables_in(differentiated[0])[0], f"{node.func.name}(...)"))
        return None


def keyword_arguments(diag: Collector, call: A.Call, known: list[str] | dict, name: str
                      ) -> tuple[dict[str, A.KeywordArg], bool]:
    """A call's keyword arguments by name, and whether all were fine: an unknown or repeated one is
    reported (with a did-you-mean) and left out."""
    given: dict[str, A.KeywordArg] = {}
    ok = True
    for kw in call.kwargs:
        key = kw.name.name
        if key not in known:
            hint = did_you_mean(key, known)
            more = f"; did you mean '{hint}'?" if hint else f" (it takes: {', '.join(known)})"
            diag.error(kw.name.span, f"{name}() has no argument '{key}'{more}")
            ok = False
        elif key in given:
            diag.error(kw.name.span, f"the argument '{key}' is given twice")
            ok = False
        else:
            given[key] = kw
    return given, ok


def nesting_depth(value: sympy.Basic) -> int:
    """The levels of a SymPy expression (a symbol or number: 1), counted without recursion."""
    depth: dict[int, int] = {}
    stack = [(value, False)]
    while stack:
        expr, visited = stack.pop()
        if id(expr) in depth:
            continue
        if visited or not expr.args:
            depth[id(expr)] = 1 + max((depth[id(a)] for a in expr.args), default=0)
            continue
        stack.append((expr, True))
        stack.extend((a, False) for a in expr.args if id(a) not in depth)
    return depth[id(value)]


def _too_deep(levels: str, counted: str = "") -> str:
    return (f"this expression nests {levels} levels deep{counted}; pinnspec accepts at most {MAX_NESTING} "
            f"(SymPy, which it builds on, recurses once per level; a chain of + and -, of * and /, or of unary "
            f"minuses is one level however long): write it with fewer levels, e.g. expand a nested power or product")


def tables_in(value: sympy.Expr) -> list[str]:
    """The coefficient tables (``let NAME = table(...)``) an expression reads, by name, sorted."""
    return sorted({f.func.__name__[:-len(TABLE_SUFFIX)] for f in value.atoms(AppliedUndef)
                   if f.func.__name__.endswith(TABLE_SUFFIX)})


def table_derivative_message(table: str, written: str) -> str:
    return (f"{written} differentiates the table '{table}', whose interpolation defines values, not derivatives: "
            f"give the derivative as a table of its own (let {table}x = table(\"FILE\", column = \"{table}x\")) "
            f"and write the equation in non-conservative form ({table}*u_xx + {table}x*u_x, not d({table}*u_x, x))")


def _rational(text: str) -> sympy.Rational:
    """A decimal literal as an exact rational (``0.01`` -> 1/100)."""
    mantissa, _, exponent = text.lower().partition("e")
    value = sympy.Rational(mantissa if mantissa not in ("", ".") else "0")
    if exponent:
        value *= sympy.Integer(10) ** int(exponent)
    return value


def split_subscript(suffix: str, coordinates: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every way to read ``suffix`` as a sequence of coordinate names."""
    results: list[tuple[str, ...]] = []

    def walk(rest: str, acc: tuple[str, ...]):
        if len(results) > 3:
            return
        if not rest:
            results.append(acc)
            return
        for c in coordinates:
            if rest.startswith(c):
                walk(rest[len(c):], acc + (c,))

    walk(suffix, ())
    return results


def uses_call(node: A.Node, name: str) -> bool:
    return any(isinstance(n, A.Call) and n.func.name == name for n in node.walk())
