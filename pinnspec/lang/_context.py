"""What the statement families of one spec share while it is lowered: the :class:`Context`.

The driver (:mod:`pinnspec.lang._lower`) makes one context per spec and hands it to each family in turn
(:mod:`._declarations`, the geometry, :mod:`._conditions`, the `enforce` statements, :mod:`._groupings`,
the reports, :mod:`._points`, :mod:`._training`); each family reads the tables the families before it
filled and fills its own.  Every check reports into ``ctx.diag``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy

from .. import ir
from ..registry import did_you_mean
from . import _ast as A
from ._diagnostics import Collector
from ._expr import ExprLowering, Scope

#: Relative tolerance when matching a face value to a box end.
_FACE_TOL = 1e-12


@dataclass
class Context:
    """The state of lowering one spec, owned by the driver.  Who writes what:

    * declarations (:mod:`._declarations`): ``declared``, the coordinates and their symbols, the fields,
      lets, params, coefficient tables and the kind of each condition;
    * conditions (:mod:`._conditions`): ``conditions``;
    * the driver: the results of the `enforce` statements (``hard_constraints``, ``periodic_embeddings``,
      ``enforced``);
    * losses and groupings (:mod:`._groupings`): ``losses``, ``groupings``.
    """

    tree: A.SpecFile
    base_dir: str  # relative data, reference and table paths resolve against it
    diag: Collector
    expr: ExprLowering
    declared: dict[str, tuple[str, A.Span]] = field(default_factory=dict)  # name -> (kind, span of its declaration)
    coordinates: list[ir.Coordinate] = field(default_factory=list)
    coord_symbols: dict[str, sympy.Symbol] = field(default_factory=dict)
    space_names: tuple[str, ...] = ()
    fields: list[str] = field(default_factory=list)
    field_exprs: dict[str, sympy.Expr] = field(default_factory=dict)
    #: ``field a(x, y)``: the coordinates a field lists, as written (checked when the coordinates are known)
    field_arguments: dict[str, tuple[A.Ident, ...]] = field(default_factory=dict)
    field_coordinates: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the checked lists, in coordinate order
    lets: dict[str, sympy.Expr | None] = field(default_factory=dict)
    params: dict[str, sympy.Symbol] = field(default_factory=dict)
    param_values: list[tuple[str, float]] = field(default_factory=list)
    tables: dict[str, ir.Table] = field(default_factory=dict)  # let name -> its coefficient table
    #: while lowering, a table is the function NAME^table of its coordinates (so that a derivative of it
    #: shows); the IR holds the per-point symbol ir.table_value(NAME) instead
    table_values: dict[sympy.Expr, sympy.Symbol] = field(default_factory=dict)
    indicators: dict[str, sympy.Expr] = field(default_factory=dict)  # shape -> inside(shape) (`resolve_indicators`)
    conditions: dict[str, ir.Condition] = field(default_factory=dict)
    condition_kinds: dict[str, str] = field(default_factory=dict)
    hard_constraints: tuple[ir.HardConstraint, ...] = ()
    periodic_embeddings: tuple[ir.PeriodicCoordinate, ...] = ()
    enforced: set[str] = field(default_factory=set)  # the conditions that hold by construction
    losses: dict[str, ir.WeightedSum] = field(default_factory=dict)
    groupings: dict[str, ir.Grouping] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: A.SpecFile, base_dir: str) -> Context:
        """A fresh context for ``tree``, reporting into a new collector."""
        diag = Collector(tree.filename, tree.source)
        return cls(tree, base_dir, diag, ExprLowering(diag))

    @property
    def tree_has_domain(self) -> bool:
        return any(isinstance(st, A.DomainDecl) for st in self.tree.statements)

    def scope(self, where: str, *, fields: bool = True, params: bool = True, coordinates: bool = True,
              face: tuple[str, int] | None = None, normals: dict[str, sympy.Symbol] | None = None,
              tables: bool = True) -> Scope:
        """What an expression at ``where`` may refer to."""
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
            indicators=self.indicators,
        )

    def constant(self, node: A.Expr, where: str) -> float | None:
        """``node`` as a finite real number, or None (reported)."""
        value = self.expr.lower(node, self.scope(where, fields=False, params=False, coordinates=False))
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

    def defined(self, expr: sympy.Expr, span: A.Span) -> sympy.Expr | None:
        """``expr``, or None (reported) where it is undefined or infinite."""
        if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            self.diag.error(span, "this expression is undefined or infinite (e.g. log(0), 0^-1 or 1/(1-1))")
            return None
        return expr

    def count(self, number: A.Number, what: str, minimum: int = 1) -> int | None:
        """``number`` as a whole number of at least ``minimum``, or None (reported)."""
        value = float(number.text)
        if not math.isfinite(value) or value != int(value) or value < minimum:
            self.diag.error(number.span, f"{what} must be a whole number of at least {minimum}, got {number.text}")
            return None
        return int(value)

    def coordinate(self, name: str) -> ir.Coordinate | None:
        return next((c for c in self.coordinates if c.name == name), None)

    def box_face(self, face: A.Face) -> ir.Face | None:
        """The face of the space box ``face`` names, or None (reported)."""
        space = [c for c in self.coordinates if not c.is_time]
        name = face.coordinate.name
        coord = self.coordinate(name)
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
        value = self.constant(face.value, f"the face value of '{name}'")
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

    def is_condition(self, ident: A.Ident, where: str) -> bool:
        """Whether ``ident`` names a condition; else a located error saying what it is."""
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

    def declared_here(self, ident: A.Ident) -> bool:
        """Whether ``ident`` is where its name was declared (not a duplicate or a reserved name: those are reported)."""
        return self.declared.get(ident.name, (None, None))[1] == ident.span
