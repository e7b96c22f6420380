"""Semantic checks and lowering: syntax tree -> problem IR (:mod:`pinnspec.ir`).

Every check reports into one :class:`Collector`; the spec fails only after
all statements were checked, so a user sees every mistake at once.
"""

from __future__ import annotations

import math
import os
from typing import Any

import sympy

from .. import catalog, ir
from ..registry import did_you_mean, load_plugins
from ..sampling._data import column_mapping, read_file_columns
from ..sampling._table import METHODS, TableColumnError, table_columns, table_interpolator
from . import _ast as A
from ._diagnostics import Collector
from ._expr import (BUILTIN_FUNCTIONS, CONSTANTS, SPECIAL_CALLS, TABLE_SUFFIX, ExprLowering, Scope,
                    keyword_arguments, uses_call)
from ._enforce import EnforceLowering
from ._geometry import BOX, GeometryLowering
from ._report import ReportLowering

#: Points per condition when a spec gives none (documented in docs/reference.md).
DEFAULT_POINTS = {"equation": 1000, "initial": 100, "boundary": 100, "periodic": 100}
DEFAULT_GROUPING = "default"
DATA_OPTIONS = ("noise",)  # `data NAME from "FILE": FIELD, ..., noise = SIGMA`
#: Statements a spec may hold at most once.
SINGLE = ("problem", "time", "domain", "sampler", "resample", "reference", "test", "validate",
          "model", "optimizer", "schedule", "surgery", "align", "weights")
#: Relative tolerance when matching a face value to a box end.
_FACE_TOL = 1e-12


def reserved_kind(name: str) -> str | None:
    if name in A.KEYWORDS:
        return "keyword"
    if name in CONSTANTS:
        return "built-in constant"
    if name in BUILTIN_FUNCTIONS or name in SPECIAL_CALLS:
        return "built-in function"
    if name == BOX:
        return "built-in shape: the space box"
    return None


class Lowering:
    def __init__(self, tree: A.SpecFile, base_dir: str):
        self.tree = tree
        self.base_dir = base_dir
        self.diag = Collector(tree.filename, tree.source)
        self.expr = ExprLowering(self.diag)
        self.declared: dict[str, tuple[str, A.Span]] = {}
        self.coordinates: list[ir.Coordinate] = []
        self.coord_symbols: dict[str, sympy.Symbol] = {}
        self.space_names: tuple[str, ...] = ()
        self.fields: list[str] = []
        self.field_exprs: dict[str, sympy.Expr] = {}
        #: ``field a(x, y)``: the coordinates a field lists, as written (checked in _finish_coordinates)
        self.field_arguments: dict[str, tuple[A.Ident, ...]] = {}
        self.field_coordinates: dict[str, tuple[str, ...]] = {}  # the checked lists, in coordinate order
        self.lets: dict[str, sympy.Expr | None] = {}
        self.params: dict[str, sympy.Symbol] = {}
        self.param_values: list[tuple[str, float]] = []
        self.conditions: dict[str, ir.Condition] = {}
        self.condition_kinds: dict[str, str] = {}
        self.losses: dict[str, ir.WeightedSum] = {}
        self.groupings: dict[str, ir.Grouping] = {}
        self.tables: dict[str, ir.Table] = {}  # let name -> its coefficient table
        #: while lowering, a table is the function NAME^table of its coordinates (so that a derivative of it
        #: shows); the IR holds the per-point symbol ir.table_value(NAME) instead
        self.table_values: dict[sympy.Expr, sympy.Symbol] = {}
        self.geometry = GeometryLowering(self)
        self.reports: list[ir.Report] = []

    # ================================================================== driver
    def run(self) -> ir.Problem | None:
        statements = self.tree.statements
        by_kind: dict[str, list[A.Statement]] = {}
        for st in statements:
            by_kind.setdefault(st.keyword, []).append(st)
        self._check_structure(statements, by_kind)
        self._declare_all(statements)

        problem_name = by_kind["problem"][0].name.name if by_kind.get("problem") else "problem"
        self._symbols_from_tree()
        for st in statements:  # lets first, in file order (a let sees earlier lets only)
            if isinstance(st, A.Let):
                self._let(st)
        for st in by_kind.get("space", []) + by_kind.get("time", []):
            self._intervals(st)
        self._finish_coordinates()
        for st in by_kind.get("shape", []):
            self.geometry.shape(st)
        for st in by_kind.get("domain", [])[:1]:
            self.geometry.domain_statement_lowered(st)
        self._geometry_warnings(by_kind)
        for st in statements:
            handler = {
                A.Equation: self._equation,
                A.Initial: self._initial,
                A.Boundary: self._boundary,
                A.Periodic: self._periodic,
                A.Data: self._data,
            }.get(type(st))
            if handler:
                handler(st)
        self.hard_constraints, self.periodic_embeddings = EnforceLowering(self).run(by_kind.get("enforce", []))
        self.enforced = {c for h in self.hard_constraints for c in h.conditions} | {
            e.condition for e in self.periodic_embeddings}
        for st in by_kind.get("loss", []):
            self._loss(st)
        for st in by_kind.get("grouping", []):
            self._grouping(st)
        for st in by_kind.get("report", []):
            report = ReportLowering(self).report(st)
            if report is not None and self.declared.get(st.name.name, (None, None))[1] == st.name.span:
                self.reports.append(report)
        sampling = self._sampling(by_kind)
        reference = self._reference(by_kind)
        test = self._test(by_kind)
        validation = self._validation(by_kind)
        training = self._training(by_kind)
        causal = self._causal(by_kind)
        if training.weights.name == "rba" and sampling.resample_every is not None:
            self.diag.error(by_kind["weights"][0].span, "weights rba keeps one weight per point: it needs fixed "
                            "points; add 'resample never'")
        default_grouping = self._default_grouping(training)
        self._usage_warnings(by_kind)
        self._drop_enforced(by_kind)
        if self.diag.has_errors:
            return None
        return ir.Problem(
            name=problem_name,
            coordinates=tuple(self.coordinates),
            fields=tuple(self.fields),
            params=tuple(self.param_values),
            lets=tuple((k, v.xreplace(self.table_values)) for k, v in self.lets.items() if v is not None),
            conditions=tuple(self.conditions.values()),
            losses=tuple(self.losses.items()),
            groupings=tuple(self.groupings.values()),
            default_grouping=default_grouping,
            sampling=sampling,
            reference=reference,
            test=test,
            validation=validation,
            training=training,
            source_dir=self.base_dir,
            domain=self.geometry.domain,
            tables=tuple(self.tables.values()),
            reports=tuple(self.reports),
            causal=causal,
            hard_constraints=self.hard_constraints,
            periodic_embeddings=self.periodic_embeddings,
            field_coordinates=tuple((f, self.field_coordinates[f]) for f in self.fields if f in self.field_coordinates),
        )

    # ================================================================== structure & names
    def _check_structure(self, statements, by_kind):
        if not statements:
            self.diag.error(A.Span(1, 1, 1, 2), "the spec is empty: it must start with 'problem NAME'")
            return
        if not isinstance(statements[0], A.Problem):
            self.diag.error(statements[0].span, "a spec must start with 'problem NAME'")
        for kind in SINGLE:
            extra = by_kind.get(kind, [])[1:]
            for st in extra:
                first = by_kind[kind][0]
                self.diag.error(st.span, f"a second '{kind}' statement (the first is at line {first.span.line}); "
                                "a spec has at most one")
        if not by_kind.get("field"):
            self.diag.error(statements[0].span, "the spec declares no field: add e.g. 'field u'")
        if not by_kind.get("space") and not by_kind.get("time"):
            self.diag.error(statements[0].span, "the spec declares no coordinate: add 'space x in [A, B]' and/or 'time t in [A, B]'")
        if not any(isinstance(s, (A.Equation, A.Initial, A.Boundary, A.Periodic, A.Data)) for s in statements):
            self.diag.error(statements[0].span, "the spec has no condition (equation, initial, boundary, periodic or data)")
        if by_kind.get("problem"):
            self._check_name(by_kind["problem"][0].name)

    def _check_name(self, ident: A.Ident) -> bool:
        kind = reserved_kind(ident.name)
        if kind:
            self.diag.error(ident.span, f"'{ident.name}' is a reserved word ({kind}) and cannot be used as a name; "
                            "choose another name")
            return False
        if "_" in ident.name:
            self.diag.error(ident.span, f"'{ident.name}': declared names cannot contain '_' "
                            f"(it marks derivatives, as in u_x); try '{ident.name.replace('_', '')}'")
            return False
        return True

    def _declare(self, ident: A.Ident, kind: str) -> bool:
        if not self._check_name(ident):
            return False
        if ident.name in self.declared:
            other, span = self.declared[ident.name]
            self.diag.error(ident.span, f"'{ident.name}' is already declared (as a {other} at line {span.line})")
            return False
        self.declared[ident.name] = (kind, ident.span)
        return True

    def _declare_all(self, statements):
        for st in statements:
            if isinstance(st, A.Space):
                for interval in st.intervals:
                    self._declare(interval.name, "coordinate")
            elif isinstance(st, A.Time):
                self._declare(st.interval.name, "coordinate")
            elif isinstance(st, A.Fields):
                for ident, arguments in zip(st.names, st.arguments or (None,) * len(st.names)):
                    if self._declare(ident, "field"):
                        self.fields.append(ident.name)
                        if arguments:
                            self.field_arguments[ident.name] = arguments
            elif isinstance(st, A.Let):
                self._declare(st.name, "let")
            elif isinstance(st, A.Param):
                if self._declare(st.name, "param"):
                    self.params[st.name.name] = sympy.Symbol(st.name.name, real=True)
                    self.param_values.append((st.name.name, st.initial))
            elif isinstance(st, (A.Equation, A.Initial, A.Boundary, A.Periodic, A.Data)):
                if self._declare(st.name, "condition"):
                    self.condition_kinds[st.name.name] = st.keyword
            elif isinstance(st, A.ShapeDecl):
                self._declare(st.name, "shape")
            elif isinstance(st, A.DomainDecl):
                self._declare(st.name, "domain")
            elif isinstance(st, A.Loss):
                self._declare(st.name, "loss")
            elif isinstance(st, A.Grouping):
                self._declare(st.name, "grouping")
            elif isinstance(st, A.Report):
                self._declare(st.name, "report")

    def _scope(self, where: str, *, fields: bool = True, params: bool = True, coordinates: bool = True,
               face: tuple[str, int] | None = None, normals: dict[str, sympy.Symbol] | None = None,
               tables: bool = True) -> Scope:
        return Scope(
            where=where,
            coordinates=self.coord_symbols,
            space=self.space_names,
            fields=self.field_exprs if fields else {},
            lets=self.lets,
            params=self.params if params else {},
            declared=self.declared,
            allow_coordinates=coordinates,
            face=face,
            normals=normals,
            field_names=tuple(self.fields),
            tables=tables,
        )

    # ================================================================== declarations
    def _let(self, st: A.Let):
        if isinstance(st.value, A.Call) and st.value.func.name == "table" and not st.value.bare:
            value = self._table(st.name.name, st.value)
        else:
            value = self.expr.lower(st.value, self._scope(f"the let '{st.name.name}'"))
        if self.declared.get(st.name.name, (None, None))[1] == st.name.span:
            self.lets[st.name.name] = value

    def _table(self, name: str, call: A.Call) -> sympy.Expr | None:
        """``let NAME = table("FILE"[, method = M][, column = "C"])``: the file's columns matched to the
        coordinates and its rows read and checked now (so that ``check`` reports a bad table)."""
        ok = True
        if len(call.args) != 1 or not isinstance(call.args[0], A.String):
            where = call.args[1].span if len(call.args) > 1 else call.args[0].span if call.args else call.span
            self.diag.error(where, 'table() takes one file name, as a quoted string: table("kappa.csv")')
            ok = False
        options, fine = keyword_arguments(self.diag, call, ["method", "column"], "table")
        ok = ok and fine
        method = METHODS[0]
        if "method" in options:
            value = options["method"].value
            method = value.id if isinstance(value, A.Name) else None
            if method not in METHODS:
                hint = did_you_mean(method, METHODS) if method else None
                more = f"; did you mean '{hint}'?" if hint else ""
                self.diag.error(value.span, f"table(method = ...) must be one of {', '.join(METHODS)}{more}")
                ok = False
        column = None
        if "column" in options:
            value = options["column"].value
            if isinstance(value, A.String):
                column = value.value
            else:
                self.diag.error(value.span, 'table(column = ...) names a column of the file as a quoted string: '
                                'column = "kappa"')
                ok = False
        if not ok:
            return None
        node = call.args[0]
        full = node.value if os.path.isabs(node.value) else os.path.join(self.base_dir, node.value)
        if not os.path.isfile(full):
            self.diag.error(node.span, f"the table file '{node.value}' does not exist (looked for {full})")
            return None
        time = next((n for n in self.coord_symbols if n not in self.space_names), None)
        try:
            columns = table_columns(read_file_columns(full), self.space_names, time, column)
            table_interpolator(full, columns, method)  # reads every row: numbers, finite, distinct points
        except TableColumnError as exc:
            self.diag.error(options["column"].value.span if exc.argument == "column" else node.span, str(exc))
            return None
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            self.diag.error(node.span, str(exc))
            return None
        self.tables[name] = ir.Table(name, node.value, columns.coordinates, columns.coordinate_columns,
                                     columns.value_column, method)
        value = sympy.Function(name + TABLE_SUFFIX, real=True)(*(self.coord_symbols[c] for c in columns.coordinates))
        self.table_values[value] = ir.table_value(name)
        return value

    def _symbols_from_tree(self):
        """Coordinate symbols and field functions before the intervals are checked
        (a let may use coordinates declared after it)."""
        space, time = [], []
        for st in self.tree.statements:
            if isinstance(st, A.Space):
                space.extend(iv.name.name for iv in st.intervals)
            elif isinstance(st, A.Time):
                time.append(st.interval.name.name)
        names = list(dict.fromkeys(space + time))
        self.coord_symbols = {n: sympy.Symbol(n, real=True) for n in names}
        self.space_names = tuple(dict.fromkeys(space))
        self._field_functions()

    def _constant(self, node: A.Expr, where: str) -> float | None:
        value = self.expr.lower(node, self._scope(where, fields=False, params=False, coordinates=False))
        if value is None:
            return None
        try:
            number = complex(value.evalf(30))
        except (TypeError, ValueError):
            self.diag.error(node.span, f"{where} must be a constant number")
            return None
        if number.imag != 0 or not math.isfinite(number.real):
            self.diag.error(node.span, f"{where} must be a finite real number, got {value}")
            return None
        return number.real

    def _intervals(self, st):
        intervals = st.intervals if isinstance(st, A.Space) else (st.interval,)
        for iv in intervals:
            name = iv.name.name
            if self.declared.get(name, (None,))[0] != "coordinate" or self.declared[name][1] != iv.name.span:
                continue  # a duplicate: already reported
            lo = self._constant(iv.lo, f"the lower end of '{name}'")
            hi = self._constant(iv.hi, f"the upper end of '{name}'")
            if lo is None or hi is None:
                lo, hi = 0.0, 1.0  # keep going; the error is reported
            elif not lo < hi:
                what = "empty" if lo == hi else "reversed"
                self.diag.error(iv.span, f"{what} interval [{lo:g}, {hi:g}] for '{name}': the lower end must be below the upper end")
                lo, hi = 0.0, 1.0  # keep going (shapes and the domain need a box); the error is reported
            self.coordinates.append(ir.Coordinate(name, lo, hi, is_time=isinstance(st, A.Time)))

    def _finish_coordinates(self):
        # space first, then time, each in declaration order
        space = [c for c in self.coordinates if not c.is_time]
        time = [c for c in self.coordinates if c.is_time]
        self.coordinates = space + time
        self.coord_symbols = {c.name: c.symbol for c in self.coordinates}
        self.space_names = tuple(c.name for c in space)
        self._check_field_coordinates()
        self._field_functions()
        # lets were lowered with the same symbols (same names, same assumptions)

    def _field_functions(self) -> None:
        """Each field as a function of its coordinates: u(x, y, t), a(x, y) for ``field a(x, y)``."""
        def arguments(f):
            kept = self.field_coordinates.get(f) or {i.name for i in self.field_arguments.get(f, ())}
            return tuple(s for n, s in self.coord_symbols.items() if not kept or n in kept)

        self.field_exprs = {f: sympy.Function(f)(*arguments(f)) for f in self.fields}

    def _check_field_coordinates(self) -> None:
        """``field a(x, y)``: each listed name a coordinate, none twice; a field that lists every coordinate
        is a plain field."""
        names = [c.name for c in self.coordinates]
        for field, arguments in self.field_arguments.items():
            seen: set[str] = set()
            for ident in arguments:
                if ident.name not in names:
                    hint = did_you_mean(ident.name, names)
                    more = f"; did you mean '{hint}'?" if hint else f" (coordinates: {', '.join(names)})"
                    self.diag.error(ident.span, f"field {field}({', '.join(i.name for i in arguments)}): "
                                    f"'{ident.name}' is not a coordinate{more}")
                elif ident.name in seen:
                    self.diag.error(ident.span, f"field {field}: the coordinate '{ident.name}' is listed twice")
                seen.add(ident.name)
            kept = tuple(n for n in names if n in seen)
            if len(kept) < len(names):
                self.field_coordinates[field] = kept

    def _coordinate(self, name: str) -> ir.Coordinate | None:
        return next((c for c in self.coordinates if c.name == name), None)

    # ================================================================== conditions
    def _residual(self, rel: A.Relation, scope: Scope) -> sympy.Expr | None:
        lhs = self.expr.lower(rel.lhs, scope)
        rhs = self.expr.lower(rel.rhs, scope)
        if lhs is None or rhs is None:
            return None
        residual = lhs - rhs
        return self._defined(residual, rel.span)

    def _defined(self, expr: sympy.Expr, span: A.Span) -> sympy.Expr | None:
        if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            self.diag.error(span, "this expression is undefined or infinite (e.g. log(0), 0^-1 or 1/(1-1))")
            return None
        return expr

    def _needs_field(self, expr: sympy.Expr, span: A.Span, name: str):
        if not any(expr.has(f) for f in self.field_exprs.values()):
            self.diag.error(span, f"this part of '{name}' involves no field: it would be a constant, not a condition")

    def _add_condition(self, st, kind, region, residuals, face_residuals=None):
        name = st.name.name
        if self.declared.get(name, (None, None))[1] != st.name.span:
            return  # a duplicate name: already reported
        def values(exprs):  # the tables as per-point inputs
            return tuple(e.xreplace(self.table_values) for e in exprs)

        self.conditions[name] = ir.Condition(name, kind, region, values(residuals),
                                             tuple(map(values, face_residuals)) if face_residuals else None,
                                             st.span.line)

    def _lower_relations(self, st, relations, where, face=None, normals=None):
        scope = self._scope(where, face=face, normals=normals)
        out = []
        for rel in relations:
            res = self._residual(rel, scope)
            if res is not None:
                self._needs_field(res, rel.span, st.name.name)
            out.append(res)
        return out

    def _equation(self, st: A.Equation):
        res = self._lower_relations(st, (st.relation,), f"the equation '{st.name.name}'")
        if None not in res:
            domain = self.geometry.domain
            self._add_condition(st, "equation", ir.DomainInterior(domain) if domain else ir.Interior(), res)

    def _initial(self, st: A.Initial):
        time = next((c for c in self.coordinates if c.is_time), None)
        if time is None:
            self.diag.error(st.span, "'initial' needs a time coordinate: declare one with 'time t in [A, B]'")
            return
        res = self._lower_relations(st, st.relations, f"the initial condition '{st.name.name}'")
        if None not in res:
            domain = self.geometry.domain
            region = ir.DomainInitialSlice(domain, time.name, time.lo) if domain else ir.InitialSlice(time.name, time.lo)
            self._add_condition(st, "initial", region, res)

    def _faces(self, selector: A.Selector) -> list[ir.Face] | None:
        space = [c for c in self.coordinates if not c.is_time]
        if selector.whole:
            if not space:
                self.diag.error(selector.span, "'on boundary' needs space coordinates, and there are none")
                return None
            return [ir.Face(c.name, side, value) for c in space for side, value in (("lo", c.lo), ("hi", c.hi))]
        if selector.shapes:
            name = selector.shapes[0].name
            kind = self.declared.get(name, (None,))[0]
            if kind in ("shape", "domain") or name == BOX:
                what = f"'{name}' is a shape" if kind != "domain" else f"'{name}' is a domain"
                self.diag.error(selector.shapes[0].span, f"{what}, but the spec declares no 'domain' to take the "
                                f"boundary of: add e.g. 'domain plate = box - {name}', or select faces of the box "
                                f"('on x = 0', 'on boundary')")
            elif self._coordinate(name) is not None:
                self.diag.error(selector.shapes[0].span, f"'{name}' is a coordinate: a face of the box is written "
                                f"'{name} = VALUE'")
            else:
                self.diag.error(selector.shapes[0].span, f"unknown shape '{name}': the spec declares no 'domain'; "
                                f"select faces of the box ('on x = 0', 'on boundary')")
            return None
        faces: list[ir.Face] = []
        ok = True
        for face in selector.faces:
            new = self._face(face)
            if new is None:
                ok = False
                continue
            if new in faces:
                self.diag.error(face.span, f"the face {new} is listed twice")
                ok = False
                continue
            faces.append(new)
        return faces if ok else None

    def _face(self, face: A.Face) -> ir.Face | None:
        """The face of the space box ``face`` names, or None (reported)."""
        space = [c for c in self.coordinates if not c.is_time]
        name = face.coordinate.name
        coord = self._coordinate(name)
        if coord is None:
            hint = did_you_mean(name, [c.name for c in space])
            more = f"; did you mean '{hint}'?" if hint else f" (space coordinates are: {', '.join(c.name for c in space) or 'none'})"
            self.diag.error(face.coordinate.span, f"unknown coordinate '{name}'{more}")
            return None
        if coord.is_time:
            self.diag.error(face.coordinate.span, f"'{name}' is the time coordinate, not a face of the space box: "
                            f"a condition at {name} = {coord.lo:g} is written with 'initial'; for points at another "
                            f"time, declare '{name}' in 'space'")
            return None
        value = self._constant(face.value, f"the face value of '{name}'")
        if value is None:
            return None
        scale = max(abs(coord.lo), abs(coord.hi), 1.0)
        if abs(value - coord.lo) <= _FACE_TOL * scale:
            return ir.Face(name, "lo", coord.lo)
        if abs(value - coord.hi) <= _FACE_TOL * scale:
            return ir.Face(name, "hi", coord.hi)
        self.diag.error(face.value.span, f"{name} = {value:g} is not on the box: {name} is in "
                        f"[{coord.lo:g}, {coord.hi:g}], so a face is {name} = {coord.lo:g} or {name} = {coord.hi:g}")
        return None

    def _boundary(self, st: A.Boundary):
        where = f"the boundary condition '{st.name.name}'"
        if self.geometry.domain is not None or (self.tree_has_domain and st.selector.shapes):
            self._domain_boundary(st, where)
            return
        faces = self._faces(st.selector)
        if faces is None:
            # still check the expressions (without dn) to report their errors too
            if not any(uses_call(r, "dn") or uses_call(r, "normal") for r in st.relations):
                self._lower_relations(st, st.relations, where)
            return
        if any(uses_call(r, "dn") or uses_call(r, "normal") for r in st.relations):
            per_face = [self._lower_relations(st, st.relations, where, face=(f.coordinate, f.normal_sign)) if i == 0
                        else self._quiet(lambda f=f: self._lower_relations(st, st.relations, where,
                                                                           face=(f.coordinate, f.normal_sign)))
                        for i, f in enumerate(faces)]
            if any(None in r for r in per_face):
                return
            self._add_condition(st, "boundary", ir.FaceRegion(tuple(faces)), per_face[0],
                                per_face if len(faces) > 1 else None)
        else:
            res = self._lower_relations(st, st.relations, where)
            if None not in res:
                self._add_condition(st, "boundary", ir.FaceRegion(tuple(faces)), res)

    def _domain_boundary(self, st: A.Boundary, where: str):
        """A boundary condition on parts of the domain's boundary: ``dn`` uses the per-point normal."""
        region = self.geometry.selector(st.selector) if self.geometry.domain is not None else None
        normals = {c.name: ir.normal(c.name) for c in self.coordinates if not c.is_time}
        res = self._lower_relations(st, st.relations, where, normals=normals)
        if region is not None and None not in res:
            self._add_condition(st, "boundary", region, res)

    @property
    def tree_has_domain(self) -> bool:
        return any(isinstance(st, A.DomainDecl) for st in self.tree.statements)

    def _geometry_warnings(self, by_kind):
        domain = self.geometry.domain
        used = {name for name, _ in domain.shapes} if domain else set()
        for st in by_kind.get("shape", []):
            if st.name.name not in self.geometry.shapes:
                continue
            if not by_kind.get("domain"):
                self.diag.warning(st.name.span, f"the shape '{st.name.name}' is used by no domain: "
                                  f"add e.g. 'domain plate = box - {st.name.name}'")
            elif domain is not None and st.name.name not in used:
                self.diag.warning(st.name.span, f"the shape '{st.name.name}' is not part of the domain "
                                  f"'{domain.name}' (= {domain.expression})")

    def _quiet(self, fn):
        """Run ``fn`` without adding diagnostics (used to re-lower per face)."""
        saved = list(self.diag.items)
        try:
            return fn()
        finally:
            self.diag.items[:] = saved

    def _periodic(self, st: A.Periodic):
        name = st.coordinate.name
        coord = self._coordinate(name)
        ok = True
        if coord is None:
            space = [c.name for c in self.coordinates if not c.is_time]
            hint = did_you_mean(name, space)
            more = f"; did you mean '{hint}'?" if hint else f" (space coordinates are: {', '.join(space) or 'none'})"
            self.diag.error(st.coordinate.span, f"unknown coordinate '{name}'{more}")
            ok = False
        elif coord.is_time:
            self.diag.error(st.coordinate.span, f"'{name}' is the time coordinate; periodic conditions are on space coordinates")
            ok = False
        if self.tree_has_domain:
            self.diag.error(st.span, "a periodic condition pairs the two ends of the space box, and this spec's "
                            "domain is a shape: drop the 'domain' statement, or use boundary conditions instead")
            ok = False
        scope = self._scope(f"the periodic condition '{st.name.name}'")
        res = []
        for e in st.exprs:
            value = self.expr.lower(e, scope)
            if value is not None:
                value = self._defined(value, e.span)
            if value is not None:
                self._needs_field(value, e.span, st.name.name)
            res.append(value)
        if ok and None not in res:
            self._add_condition(st, "periodic", ir.PeriodicPairs(name, coord.lo, coord.hi), res)

    def _data(self, st: A.Data):
        ok = True
        for f in st.fields:
            if f.name not in self.fields:
                hint = did_you_mean(f.name, self.fields)
                more = f"; did you mean '{hint}'?" if hint else f" (fields are: {', '.join(self.fields)})"
                self.diag.error(f.span, f"unknown field '{f.name}'{more}")
                ok = False
        names = [f.name for f in st.fields]
        if len(set(names)) != len(names):
            self.diag.error(st.span, "a field is listed twice")
            ok = False
        path = st.path.value
        full = path if os.path.isabs(path) else os.path.join(self.base_dir, path)
        columns = self._data_columns(full, st.path)
        if columns is not None and ok:
            needed = [c.name for c in self.coordinates] + names
            for col in needed:
                if col not in columns:
                    self.diag.error(st.path.span, f"the data file '{path}' has no column '{col}' "
                                    f"(its columns are: {', '.join(columns) or 'none'})")
                    ok = False
        noise = None
        for key, value in st.options:
            if key.name != "noise":
                hint = did_you_mean(key.name, DATA_OPTIONS)
                more = f"; did you mean '{hint}'?" if hint else f" (a data statement takes: {', '.join(DATA_OPTIONS)})"
                self.diag.error(key.span, f"unknown data option '{key.name}'{more}")
                ok = False
            elif noise is not None:
                self.diag.error(key.span, "'noise' is given twice")
                ok = False
            elif not float(value.text) > 0:
                self.diag.error(value.span, f"noise = {value.text}: the noise's standard deviation must be > 0 "
                                f"(leave 'noise' out for exact observations)")
                ok = False
            else:
                noise = float(value.text)
        if ok and columns is not None:
            residuals = [self.field_exprs[f] - ir.observed(f) for f in names]
            self._add_condition(st, "data", ir.DataPoints(path, tuple(names), noise), residuals)

    def _data_columns(self, full: str, node: A.String) -> list[str] | None:
        if not os.path.isfile(full):
            self.diag.error(node.span, f"the data file '{node.value}' does not exist (looked for {full})")
            return None
        ext = os.path.splitext(full)[1].lower()
        try:
            if ext == ".csv":
                with open(full, encoding="utf-8") as fh:
                    header = fh.readline()
                return [c.strip().strip('"') for c in header.strip().split(",") if c.strip()]
            if ext == ".npz":
                import numpy as np

                with np.load(full) as data:
                    return list(data.files)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            self.diag.error(node.span, f"cannot read the data file '{node.value}': {exc}")
            return None
        self.diag.error(node.span, f"unsupported data file type '{ext or node.value}': use .csv (with a header line) or .npz")
        return None

    # ================================================================== losses and groupings
    def _weight(self, number: A.Number | None) -> float | None:
        if number is None:
            return 1.0
        value = float(number.text)
        if not math.isfinite(value) or value <= 0:
            self.diag.error(number.span, "a weight must be a positive number")
            return None
        return value

    def _pool(self, pool: A.Pool) -> ir.PoolLoss | None:
        names = []
        ok = True
        for m in pool.members:
            if not self._is_condition(m, "pool(...)"):
                ok = False
            elif m.name in names:
                self.diag.error(m.span, f"'{m.name}' appears twice in pool(...)")
                ok = False
            else:
                names.append(m.name)
        return ir.PoolLoss(tuple(names)) if ok else None

    def _is_condition(self, ident: A.Ident, where: str) -> bool:
        kind = self.declared.get(ident.name, (None,))[0]
        if kind == "condition":
            return True
        if kind is None:
            hint = did_you_mean(ident.name, list(self.condition_kinds))
            more = f"; did you mean '{hint}'?" if hint else f" (conditions are: {', '.join(self.condition_kinds) or 'none'})"
            self.diag.error(ident.span, f"unknown condition '{ident.name}'{more}")
        elif kind == "loss" and where == "loss":
            self.diag.error(ident.span, f"'{ident.name}' is a loss; a loss sums conditions (use losses in a 'grouping')")
        else:
            self.diag.error(ident.span, f"'{ident.name}' is a {kind}, not a condition")
        return False

    def _loss(self, st: A.Loss):
        terms = []
        ok = True
        for term in st.terms:
            w = self._weight(term.weight)
            if isinstance(term.target, A.Pool):
                atom = self._pool(term.target)
            else:
                atom = ir.ConditionLoss(term.target.name) if self._is_condition(term.target, "loss") else None
            if w is None or atom is None:
                ok = False
                continue
            terms.append((w, atom))
        if ok and self.declared.get(st.name.name, (None, None))[1] == st.name.span:
            self.losses[st.name.name] = ir.WeightedSum(_combine(terms))

    def _grouping(self, st: A.Grouping):
        tasks, labels = [], []
        ok = True
        for entry in st.entries:
            terms = []
            for term in entry.terms:
                w = self._weight(term.weight)
                expanded = None
                if isinstance(term.target, A.Pool):
                    pool = self._pool(term.target)
                    expanded = [(1.0, pool)] if pool else None
                else:
                    name = term.target.name
                    kind = self.declared.get(name, (None,))[0]
                    if kind == "loss":
                        expanded = list(self.losses[name].terms) if name in self.losses else None
                    elif kind == "condition":
                        expanded = [(1.0, ir.ConditionLoss(name))]
                    elif kind is None:
                        known = list(self.condition_kinds) + [n for n, (k, _) in self.declared.items() if k == "loss"]
                        hint = did_you_mean(name, known)
                        more = f"; did you mean '{hint}'?" if hint else f" (losses and conditions are: {', '.join(known) or 'none'})"
                        self.diag.error(term.target.span, f"unknown loss or condition '{name}'{more}")
                    else:
                        self.diag.error(term.target.span, f"'{name}' is a {kind}; a grouping lists losses, conditions and pools")
                if w is None or expanded is None:
                    ok = False
                    continue
                terms.extend((w * wi, atom) for wi, atom in expanded)
            tasks.append(ir.WeightedSum(_combine(terms)))
            labels.append(entry.span.text(self.tree.source))
        if ok and self.declared.get(st.name.name, (None, None))[1] == st.name.span:
            self.groupings[st.name.name] = ir.Grouping(st.name.name, tuple(tasks), tuple(labels))

    def _default_grouping(self, training: ir.Training) -> str:
        chosen = training.options.get("grouping")
        if chosen and chosen != DEFAULT_GROUPING:
            return chosen
        if DEFAULT_GROUPING in self.groupings:
            return DEFAULT_GROUPING
        # one task per loss; with no loss at all, one task per condition
        if self.losses:
            tasks = tuple(self.losses.values())
            labels = tuple(self.losses)
        else:
            tasks = tuple(ir.WeightedSum(((1.0, ir.ConditionLoss(n)),)) for n in self.conditions)
            labels = tuple(self.conditions)
        self.groupings[DEFAULT_GROUPING] = ir.Grouping(DEFAULT_GROUPING, tasks, labels)
        return DEFAULT_GROUPING

    def _drop_enforced(self, by_kind) -> None:
        """The enforced conditions leave every task (a pool keeps its other members; a task left empty goes)."""
        if not self.enforced:
            return
        for name, g in list(self.groupings.items()):
            tasks, labels = [], []
            for task, label in zip(g.tasks, g.labels):
                terms = []
                for weight, atom in task.terms:
                    if isinstance(atom, ir.PoolLoss):
                        kept = tuple(c for c in atom.conditions if c not in self.enforced)
                        if kept:
                            terms.append((weight, ir.PoolLoss(kept) if len(kept) > 1 else ir.ConditionLoss(kept[0])))
                    elif atom.condition not in self.enforced:
                        terms.append((weight, atom))
                if terms:
                    kept = ir.WeightedSum(tuple(terms))
                    tasks.append(kept)
                    labels.append(label if kept == task else str(kept))
            if not tasks:
                where = next((st.span for st in by_kind.get("grouping", []) if st.name.name == name),
                             by_kind["enforce"][0].span)
                self.diag.error(where, f"every task of the grouping '{name}' is enforced: nothing is left to train")
                continue
            self.groupings[name] = ir.Grouping(name, tuple(tasks), tuple(labels))

    def _usage_warnings(self, by_kind):
        used: set[str] = set()
        for loss in self.losses.values():
            used.update(loss.conditions)
        for g in self.groupings.values():
            for task in g.tasks:
                used.update(task.conditions)
        if by_kind.get("loss") or by_kind.get("grouping"):
            for st in self.tree.statements:
                if isinstance(st, (A.Equation, A.Initial, A.Boundary, A.Periodic, A.Data)):
                    if st.name.name in self.conditions and st.name.name not in used | self.enforced:
                        self.diag.warning(st.name.span, f"the condition '{st.name.name}' is used by no loss or grouping; "
                                          "it will not be trained")
        if by_kind.get("grouping"):
            in_groupings = set()
            for st in by_kind["grouping"]:
                for entry in st.entries:
                    for term in entry.terms:
                        if isinstance(term.target, A.Ident):
                            in_groupings.add(term.target.name)
            for st in by_kind.get("loss", []):
                if st.name.name not in in_groupings:
                    self.diag.warning(st.name.span, f"the loss '{st.name.name}' is used by no grouping")

    # ================================================================== sampling, reference, tests
    def _count(self, number: A.Number, what: str, minimum: int = 1) -> int | None:
        value = float(number.text)
        if not math.isfinite(value) or value != int(value) or value < minimum:
            self.diag.error(number.span, f"{what} must be a whole number of at least {minimum}, got {number.text}")
            return None
        return int(value)

    def _sampling(self, by_kind) -> ir.Sampling:
        counts: dict[str, int] = {}
        for st in by_kind.get("points", []):
            for pc in st.counts:
                name = pc.name.name
                n = self._count(pc.count, f"the number of points for '{name}'")
                kind = self.declared.get(name, (None,))[0]
                if kind != "condition":
                    self._is_condition(pc.name, "points")
                    continue
                if self.condition_kinds.get(name) == "data":
                    self.diag.error(pc.span, f"'{name}' is a data condition: it uses every row of its file (no 'points')")
                    continue
                if name in counts:
                    self.diag.error(pc.span, f"points for '{name}' are given twice")
                    continue
                if n is not None:
                    counts[name] = n
        points = []
        for name, cond in self.conditions.items():
            if cond.kind == "data":
                continue
            default = DEFAULT_POINTS[cond.kind]
            if cond.kind == "initial" and not self.space_names:
                default = 1  # an ODE: the initial slice is a single point
            points.append((name, counts.get(name, default)))
        sampler = self._call_setting("sampler", by_kind.get("sampler", []))
        resample: int | None = 1
        for st in by_kind.get("resample", [])[:1]:
            resample = None if st.every is None else self._count(st.every, "'resample every'")
        return ir.Sampling(tuple(points), sampler, resample)

    def _reference(self, by_kind) -> ir.Reference | None:
        exact_stmts = by_kind.get("exact", [])
        refs = by_kind.get("reference", [])
        if exact_stmts and refs:
            self.diag.error(refs[0].span, f"give either 'exact' (line {exact_stmts[0].span.line}) or 'reference', not both")
            return None
        if exact_stmts:
            solution: dict[str, sympy.Expr] = {}
            ok = True
            for st in exact_stmts:
                for rel in st.relations:
                    if not isinstance(rel.lhs, A.Name) or rel.lhs.id not in self.fields:
                        what = f"'{rel.lhs.id}'" if isinstance(rel.lhs, A.Name) else "the left side"
                        self.diag.error(rel.lhs.span, f"{what} is not a field: 'exact' is written FIELD = EXPR "
                                        f"(fields are: {', '.join(self.fields)})")
                        ok = False
                        continue
                    if rel.lhs.id in solution:
                        self.diag.error(rel.lhs.span, f"the exact solution of '{rel.lhs.id}' is given twice")
                        ok = False
                        continue
                    value = self.expr.lower(rel.rhs, self._scope(f"the exact solution of '{rel.lhs.id}'",
                                                                 fields=False, params=False, tables=False))
                    if value is not None:
                        value = self._defined(value, rel.rhs.span)
                    if value is None:
                        ok = False
                        continue
                    solution[rel.lhs.id] = value
            missing = [f for f in self.fields if f not in solution]
            if ok and missing:
                self.diag.error(exact_stmts[0].span, f"'exact' gives no expression for {', '.join(map(repr, missing))} "
                                f"(fields are: {', '.join(self.fields)})")
                ok = False
            return ir.ExactReference(tuple((f, solution[f]) for f in self.fields)) if ok else None
        if refs:
            st = refs[0]
            if st.path is not None:
                full = st.path.value if os.path.isabs(st.path.value) else os.path.join(self.base_dir, st.path.value)
                if not os.path.isfile(full):
                    self.diag.error(st.path.span, f"the reference file '{st.path.value}' does not exist (looked for {full})")
                    return None
                try:  # the header only: the columns must match the coordinates and fields
                    column_mapping(read_file_columns(full), self.coordinates, self.fields)
                except ValueError as exc:
                    self.diag.error(st.path.span, str(exc))
                    return None
                return ir.FileReference(st.path.value)
            call = self._validated_call("reference", st.call)
            return ir.GeneratedReference(call) if call else None
        return None

    def _test(self, by_kind) -> ir.TestPoints:
        for st in by_kind.get("test", [])[:1]:
            if st.grid is not None:
                counts = [self._count(n, "a test grid count") for n in st.grid]
                if len(counts) != len(self.coordinates):
                    names = ", ".join(c.name for c in self.coordinates)
                    self.diag.error(st.span, f"'test grid' needs one count per coordinate ({len(self.coordinates)}: {names}), "
                                    f"got {len(counts)}")
                    return ir.TestPoints()
                if None in counts:
                    return ir.TestPoints()
                return ir.TestPoints(grid=tuple(counts))
            if st.uniform is not None:
                n = self._count(st.uniform, "the number of uniform test points")
                if self.geometry.domain is not None:
                    self.diag.error(st.span, "'test uniform' places its grid in the box; this spec's domain has "
                                    "shapes: use 'test N' or 'test grid ...' (their points outside the domain "
                                    "are left out)")
                    return ir.TestPoints()
                return ir.TestPoints(uniform=n)
            n = self._count(st.count, "the number of test points")
            return ir.TestPoints(count=n)
        return ir.TestPoints()

    def _validation(self, by_kind) -> ir.Validation:
        for st in by_kind.get("validate", [])[:1]:
            every = self._count(st.every, "'validate ... every'") or 100
            if st.count is None:
                return ir.Validation(every=every, on_test=True)
            count = self._count(st.count, "the number of validation points") or 1000
            return ir.Validation(every=every, count=count)
        return ir.Validation()

    # ================================================================== training statements
    def _call_setting(self, kind: str, statements) -> ir.CallSpec:
        if statements:
            call = self._validated_call(kind, statements[0].call)
            if call is not None and kind == "weights":
                call = self._checked_arguments(call, statements[0].call)
            if call is not None:
                return call
        default = catalog.DEFAULTS[kind]
        if kind == "weights":
            return ir.CallSpec(default)  # `weights none`: no arguments shown or stored
        defaults = _known(kind)[default]
        return ir.CallSpec(default, tuple(defaults.items()))

    def _checked_arguments(self, spec: ir.CallSpec, call: A.Call) -> ir.CallSpec | None:
        """The ranges of `_ARGUMENT_RULES` (a `weights` call, a second-order stage's): located errors; the
        values in their types."""
        spans = {kw.name.name: kw.value.span for kw in call.kwargs}
        ok, checked = True, []
        for key, value in spec.kwargs:
            rule = _ARGUMENT_RULES.get(key)
            if rule is None:
                checked.append((key, value))
                continue
            valid, what, kind = rule
            if not valid(value):
                self.diag.error(spans.get(key, call.span), f"{spec.name}({key} = ...) must be {what}, got {value:g}")
                ok = False
            checked.append((key, kind(value)))
        return ir.CallSpec(spec.name, tuple(checked)) if ok else None

    def _validated_call(self, kind: str, call: A.Call) -> ir.CallSpec | None:
        known = _known(kind)
        name = call.func.name
        if name not in known:
            hint = did_you_mean(name, known)
            more = f"; did you mean '{hint}'?" if hint else f" (known: {', '.join(sorted(known))})"
            self.diag.error(call.func.span, f"unknown {kind} '{name}'{more}")
            return None
        params = known[name]
        ok = True
        if call.args:
            example = next(iter(params), "key")
            self.diag.error(call.args[0].span, f"{kind} arguments are given by keyword, e.g. {name}({example} = ...)")
            ok = False
        values: dict[str, Any] = {}
        for kw in call.kwargs:
            key = kw.name.name
            if key not in params:
                hint = did_you_mean(key, params)
                more = f"; did you mean '{hint}'?" if hint else (f" (it takes: {', '.join(params)})" if params else " (it takes none)")
                self.diag.error(kw.name.span, f"{name}() has no argument '{key}'{more}")
                ok = False
                continue
            if key in values:
                self.diag.error(kw.name.span, f"the argument '{key}' is given twice")
                ok = False
                continue
            value = self._setting_value(kw.value, f"{name}({key} = ...)", params[key],
                                        tuples=(kind, name, key) in catalog.TUPLE_ARGUMENTS)
            if value is _BAD:
                ok = False
                continue
            choices = catalog.CHOICES.get((kind, name, key))
            if choices and value not in choices:
                hint = did_you_mean(str(value), choices)
                more = f"; did you mean '{hint}'?" if hint else ""
                self.diag.error(kw.value.span, f"{name}({key} = ...) must be one of {', '.join(choices)}{more}")
                ok = False
                continue
            values[key] = value
        for key, default in params.items():
            if default is catalog.REQUIRED and key not in values:
                self.diag.error(call.span, f"{name}() needs the argument '{key}'")
                ok = False
        if not ok:
            return None
        merged = {k: values.get(k, v) for k, v in params.items() if not (v is catalog.REQUIRED and k not in values)}
        return ir.CallSpec(name, tuple(merged.items()))

    def _setting_value(self, node: A.Expr, where: str, default: Any, tuples: bool = False):
        """A call argument as a plain value: number, name (as a string), string or tuple (where the argument's
        default is one, or ``tuples``: a number argument of `catalog.TUPLE_ARGUMENTS`, which takes numbers)."""
        if isinstance(node, A.String):
            value: Any = node.value
        elif isinstance(node, A.Name) and node.id not in self.lets and node.id not in CONSTANTS:
            value = node.id
        elif isinstance(node, A.TupleExpr):
            number = isinstance(default, (int, float)) and not isinstance(default, bool)
            if number and not tuples:
                self.diag.error(node.span, f"{where} expects a number, got a tuple")
                return _BAD
            items = [self._setting_value(i, where, 0.0 if number else None) for i in node.items]
            return _BAD if _BAD in items else tuple(items)
        else:
            number = self._constant(node, where)
            if number is None:
                return _BAD
            value = int(number) if number == int(number) and isinstance(default, int) and not isinstance(default, bool) else number
        if isinstance(default, bool) or default is None or default is catalog.REQUIRED:
            return value
        if isinstance(default, (int, float)) and not isinstance(value, (int, float)):
            self.diag.error(node.span, f"{where} expects a number, got '{value}'")
            return _BAD
        if isinstance(default, str) and not isinstance(value, str):
            self.diag.error(node.span, f"{where} expects a name, got {value:g}")
            return _BAD
        return value

    def _training(self, by_kind) -> ir.Training:
        calls = {kind: self._call_setting(kind, [s for s in by_kind.get(kind, [])])
                 for kind in ("model", "optimizer", "schedule", "surgery", "align", "weights")}
        settings: dict[str, Any] = {}
        for st in by_kind.get("train", []):  # `train` statements add up
            self._keyword_settings(st.settings, catalog.TRAIN_SETTINGS, "train", "settings are", settings)
        settings = {key: value for key, value in settings.items() if value is not _BAD}
        stages = self._stages(by_kind, settings)
        if stages:
            first_order = [stage for stage in stages if not stage.second_order]
            if first_order:
                calls["optimizer"] = first_order[0].optimizer
            settings["epochs"] = sum(stage.epochs for stage in stages)
            if calls["align"].name == "gua" and len({stage.optimizer.name for stage in first_order}) > 1:
                self.diag.error(by_kind["stage"][0].span,
                                "with 'align gua' every first-order stage uses the same optimizer (gua's state "
                                f"alignment is the optimizer's): the stages use {', '.join(s.optimizer.name for s in first_order)}")
        calls["align"] = self._resolved_alignment(calls["align"], calls["optimizer"], by_kind.get("align", []))
        self._check_fourier_scales(calls["model"], by_kind.get("model", []))
        return ir.Training(settings=tuple(settings.items()), stages=stages, **calls)

    def _check_fourier_scales(self, model: ir.CallSpec, statements) -> None:
        """``fourier = (s_1, ..., s_k)``: one scale per input the network reads (the coordinates; with a periodic
        `enforce`, the other coordinates then cos and sin of each periodic one, as `PeriodicEmbedding` feeds it)."""
        scales = model.options.get("fourier")
        if not isinstance(scales, tuple) or not statements:
            return
        periodic = {e.coordinate for e in self.periodic_embeddings}
        names = [c.name for c in self.coordinates]
        inputs = [n for n in names if n not in periodic] + [f"{f} {n}" for n in names if n in periodic
                                                              for f in ("cos", "sin")]
        if len(scales) != len(inputs):
            span = next((kw.value.span for kw in statements[0].call.kwargs if kw.name.name == "fourier"),
                        statements[0].call.span)
            self.diag.error(span, f"fourier gives {len(scales)} scales, but the network reads {len(inputs)} inputs "
                            f"({', '.join(inputs)}): give one scale per input, in that order")

    def _keyword_settings(self, keyword_args, table, what: str, listing: str, into: dict[str, Any]) -> dict[str, Any]:
        """``KEY = VALUE`` settings of a ``train`` or ``stage`` statement (``table``: key -> (kind, default))
        added to ``into``, each key at most once; a bad value is kept as _BAD (reported)."""
        for kw in keyword_args:
            key = kw.name.name
            if not self._known_key(kw.name, table, f"unknown {what} setting", listing):
                continue
            if key in into:
                self.diag.error(kw.name.span, f"the {what} setting '{key}' is given twice")
                continue
            into[key] = self._train_value(key, kw.value, table[key][0])
        return into

    def _known_key(self, name: A.Ident, known, what: str, listing: str) -> bool:
        """Whether ``name`` is a key of ``known``; else the located error ``WHAT 'NAME'`` with a "did you
        mean" or, without a close key, ``(LISTING: the keys)``."""
        if name.name in known:
            return True
        hint = did_you_mean(name.name, known)
        more = f"; did you mean '{hint}'?" if hint else f" ({listing}: {', '.join(known)})"
        self.diag.error(name.span, f"{what} '{name.name}'{more}")
        return False

    def _causal(self, by_kind) -> tuple[ir.Causal, ...]:
        """The `causal` statements: each names an equation of a spec with time, at most once; ``causal none``
        (alone) weights nothing."""
        statements = by_kind.get("causal", [])
        if len(statements) == 1 and statements[0].call.func.name == "none" and statements[0].call.bare:
            return ()
        out: dict[str, ir.Causal] = {}
        for st in statements:
            ident, call = st.call.func, st.call
            if ident.name == "none":
                self.diag.error(ident.span, "'causal none' turns causal weighting off: it cannot be combined with "
                                "other 'causal' statements")
                continue
            if not self._is_condition(ident, "causal"):
                continue
            kind = self.condition_kinds.get(ident.name)
            if kind != "equation":
                self.diag.error(ident.span, f"causal weighting applies to equations; '{ident.name}' is "
                                f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} condition")
                continue
            if not any(c.is_time for c in self.coordinates):
                self.diag.error(ident.span, "causal weighting needs a time coordinate ('time t in [A, B]')")
                continue
            if ident.name in out:
                self.diag.error(ident.span, f"'{ident.name}' is weighted causally twice")
                continue
            values = dict(catalog.CAUSAL)
            ok = True
            for kw in call.kwargs:
                key = kw.name.name
                if not self._known_key(kw.name, catalog.CAUSAL, f"causal {ident.name}() has no argument", "it takes"):
                    ok = False
                    continue
                number = self._constant(kw.value, f"causal {ident.name}({key} = ...)")
                if number is None:
                    ok = False
                elif key == "chunks" and not (number == int(number) and number >= 1):
                    self.diag.error(kw.value.span, f"causal {ident.name}(chunks = ...) must be a whole number of at "
                                    f"least 1, got {number:g}")
                    ok = False
                elif key == "eps" and not number >= 0:
                    self.diag.error(kw.value.span, f"causal {ident.name}(eps = ...) must be at least 0, got {number:g}")
                    ok = False
                else:
                    values[key] = number
            for arg in call.args:
                self.diag.error(arg.span, f"causal arguments are given by keyword, e.g. {ident.name}(eps = 1)")
                ok = False
            if ok:
                out[ident.name] = ir.Causal(ident.name, float(values["eps"]), int(values["chunks"]))
        return tuple(out.values())

    def _stages(self, by_kind, settings: dict[str, Any]) -> tuple[ir.Stage, ...]:
        """The `stage` statements, checked: each names an optimizer or a second-order method with its
        arguments, and its settings (epochs required).  They exclude an `optimizer` statement and `train
        epochs` (each stage names its own)."""
        statements = by_kind.get("stage", [])
        if not statements:
            return ()
        for st in by_kind.get("optimizer", [])[:1]:
            self.diag.error(st.span, "'optimizer' and 'stage' statements exclude each other: the stages name the "
                            f"optimizers (write this one as the first stage, e.g. 'stage {st.call.func.name}(...) "
                            "epochs = 1000')")
        for st in by_kind.get("train", []):
            for kw in st.settings:
                if kw.name.name == "epochs":
                    self.diag.error(kw.span, "'train epochs' and 'stage' statements exclude each other: each stage "
                                    "gives its own epochs (stage NAME(...) epochs = N)")
        stages = []
        for st in statements:
            call = self._validated_call("stage", st.call)
            if call is not None and call.name in catalog.SECOND_ORDER_STAGES:
                call = self._checked_arguments(call, st.call)
            values = self._keyword_settings(st.settings, catalog.STAGE_SETTINGS, "stage", "a stage takes", {})
            if "epochs" not in values:
                self.diag.error(st.span, "a stage needs its epochs, e.g. 'stage adam(lr = 1e-3) epochs = 1000'")
            if "resample" in values and call is not None and call.name not in catalog.SECOND_ORDER_STAGES:
                where = next(kw.span for kw in st.settings if kw.name.name == "resample")
                self.diag.error(where, f"'resample' is a setting of quasi-Newton stages ("
                                f"{', '.join(catalog.QUASI_NEWTON_STAGES)}); a first-order stage draws its points "
                                "as the spec's 'resample' says")
                continue
            if call is None or _BAD in values.values() or "epochs" not in values:
                continue
            stages.append(ir.Stage(call, values["epochs"], values.get("dtype", settings.get("dtype", "float32")),
                                   values.get("resample")))
        return tuple(stages)

    def _resolved_alignment(self, align: ir.CallSpec, optimizer: ir.CallSpec, statements) -> ir.CallSpec:
        """``gua`` with the values a run uses: an unset rho_m / rho_v takes the paper's value for the
        spec's optimizer (catalog.GUA_STATE_ALIGNMENT), so that ``show``, result.json and plots state
        them; with a built-in optimizer that has no state alignment they are left out (and refused when
        given).  An optimizer registered at run time resolves its own defaults when the run starts."""
        if align.name != "gua" or optimizer.name not in catalog.BUILTINS["optimizer"]:
            return align
        options = align.options
        paper = catalog.GUA_STATE_ALIGNMENT.get(optimizer.name)
        if paper is None:
            if options.get("rho_m") or options.get("rho_v"):
                self.diag.error(statements[0].call.span,
                                f"gua: the optimizer '{optimizer.name}' has no state alignment (only "
                                f"{', '.join(catalog.GUA_STATE_ALIGNMENT)} have one): leave rho_m and rho_v unset")
            return ir.CallSpec("gua", tuple((k, v) for k, v in align.kwargs if k not in ("rho_m", "rho_v")))
        resolved = {"rho_m": paper[0], "rho_v": paper[1]}
        return ir.CallSpec("gua", tuple((k, resolved[k] if k in resolved and v is None else v)
                                        for k, v in align.kwargs))

    def _train_value(self, key: str, node: A.Expr, kind: str | None = None):
        """A `train` setting's value (``kind``: its kind, default `catalog.TRAIN_SETTINGS`'), or _BAD."""
        kind = kind or catalog.TRAIN_SETTINGS[key][0]
        if kind in ("int", "number"):
            number = self._constant(node, f"'{key}'") if not isinstance(node, (A.Name, A.String)) or (
                isinstance(node, A.Name) and node.id in self.lets) else None
        if kind == "number":
            if number is None or not number >= 0:
                self.diag.error(node.span, f"'{key}' must be a number of at least 0")
                return _BAD
            return float(number)
        if kind == "int":
            minimum = 0 if key == "seed" else 1
            if number is None or number != int(number) or number < minimum:
                self.diag.error(node.span, f"'{key}' must be a whole number of at least {minimum}")
                return _BAD
            return int(number)
        if not isinstance(node, A.Name):
            self.diag.error(node.span, f"'{key}' expects a name")
            return _BAD
        if kind == "name":  # grouping
            groupings = [n for n, (k, _) in self.declared.items() if k == "grouping"]
            if node.id not in groupings and node.id != DEFAULT_GROUPING:
                hint = did_you_mean(node.id, groupings)
                more = f"; did you mean '{hint}'?" if hint else f" (groupings are: {', '.join(groupings) or 'none'})"
                self.diag.error(node.span, f"unknown grouping '{node.id}'{more}")
                return _BAD
            return node.id
        choices = kind.split(":", 1)[1].split("|")
        if node.id not in choices:
            hint = did_you_mean(node.id, choices)
            more = f"; did you mean '{hint}'?" if hint else ""
            self.diag.error(node.span, f"'{key}' must be one of {', '.join(choices)}{more}")
            return _BAD
        return node.id


_BAD = object()

_WHOLE = (lambda v: v == int(v) and v >= 1, "a whole number of at least 1", int)
#: the range checks of the `weights` calls' and the second-order stages' arguments: key -> (valid?, what it
#: must be, its type)
_ARGUMENT_RULES = {
    "every": _WHOLE, "points": _WHOLE, "history": _WHOLE, "max_evals": _WHOLE,
    "alpha": (lambda v: 0 <= v < 1, "at least 0 and less than 1", float),
    "eta": (lambda v: v > 0, "above 0", float),
    "gamma": (lambda v: 0 < v < 1, "above 0 and below 1", float),
    "lr": (lambda v: v > 0, "above 0", float),
}

def _known(kind: str) -> dict[str, dict[str, Any]]:
    """The names of a training statement's kind with their arguments (the weights stage: `catalog.WEIGHTS`)."""
    if kind == "weights":
        return {name: dict(args) for name, args in catalog.WEIGHTS.items()}
    if kind == "stage":  # the optimizers, then the second-order methods
        return {**catalog.known("optimizer"), **{n: dict(a) for n, a in catalog.SECOND_ORDER_STAGES.items()}}
    return catalog.known(kind)


def _combine(terms: list[tuple[float, ir.Atom]]) -> tuple[tuple[float, ir.Atom], ...]:
    """Merge repeated atoms by adding their weights, keeping first-seen order."""
    merged: dict[ir.Atom, float] = {}
    for w, atom in terms:
        merged[atom] = merged.get(atom, 0.0) + w
    return tuple((w, atom) for atom, w in merged.items())


def lower(tree: A.SpecFile, base_dir: str) -> tuple[ir.Problem | None, Collector]:
    load_plugins()  # third-party functions, references, ... (entry-point group `pinnspec`)
    lowering = Lowering(tree, base_dir)
    problem = lowering.run()
    return problem, lowering.diag
