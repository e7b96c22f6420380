"""Checks and lowering of the geometry statements: ``shape NAME = PRIMITIVE(...)``, ``domain NAME = EXPR``
and boundary selectors on the domain (``on hole1, box``, ``on x = -0.5``, ``on boundary``).

The shapes become :mod:`pinnspec.geometry` primitives named as in the spec (the built-in ``box`` is the
space box, named ``box``); the domain is their combination (:class:`pinnspec.ir.Domain`).
"""

from __future__ import annotations

import numpy as np
import sympy

from .. import geometry, ir
from ..registry import did_you_mean
from . import _ast as A
from ._context import Context
from ._expr import keyword_arguments

#: the built-in shape: the space box
BOX = "box"
#: primitive -> its keyword arguments and what each must be:
#: "point" (one number per space coordinate; a number in 1-D), "number", "points" (a tuple of (x, y) pairs)
PRIMITIVES = {
    "box": (("lo", "point"), ("hi", "point")),
    "interval": (("lo", "number"), ("hi", "number")),
    "disk": (("center", "point"), ("radius", "number")),
    "ball": (("center", "point"), ("radius", "number")),
    "polygon": (("vertices", "points"),),
    "halfspace": (("normal", "point"), ("offset", "number")),
}
#: primitives that exist in one dimension only
DIMENSION_OF = {"interval": 1, "disk": 2, "polygon": 2}
#: points of the fixed stream that tells an empty domain (none of them inside)
EMPTY_DRAWS = 1 << 14
EMPTY_SEED = 20240613
#: relative tolerance of "inside the space box"
_BOX_TOL = 1e-12


def _format(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_format(v) for v in value) + ")"
    return f"{value:g}"


def indicator(shape: geometry.Primitive, space: list[sympy.Symbol]) -> sympy.Expr | None:
    """``inside(SHAPE)`` as an expression of the space coordinates: 1 inside, 0 outside, 1/2 on the boundary
    (products of heaviside); None for a shape it is not built for (a polygon that is not convex)."""
    step = lambda e: sympy.Heaviside(e, sympy.Rational(1, 2))  # noqa: E731
    number = sympy.nsimplify
    if isinstance(shape, geometry.Box):
        return sympy.Mul(*(step(c - number(lo)) * step(number(hi) - c) for c, lo, hi in zip(space, shape.lo, shape.hi)))
    if isinstance(shape, geometry.Ball):
        return step(number(shape.radius) ** 2 - sum((c - number(m)) ** 2 for c, m in zip(space, shape.center)))
    if isinstance(shape, geometry.HalfSpace):
        return step(number(shape.offset) - sum(number(n) * c for c, n in zip(space, shape.normal)))
    if isinstance(shape, geometry.Polygon):
        vertices = np.asarray(shape.vertices, dtype=np.float64)  # [V, 2]
        edges = np.roll(vertices, -1, axis=0) - vertices  # [V, 2]
        turns = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
        if not (np.all(turns > 0) or np.all(turns < 0)):
            return None
        sign = 1 if np.all(turns > 0) else -1  # counter-clockwise: the inside is left of every edge
        x, y = space
        return sympy.Mul(*(step(sign * (number(e[0]) * (y - number(v[1])) - number(e[1]) * (x - number(v[0]))))
                           for v, e in zip(vertices, edges)))
    return None


class GeometryLowering:
    """Lowers the shapes and the domain of one spec; reports into the context's diagnostics."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.diag = ctx.diag
        self.shapes: dict[str, geometry.Primitive] = {}
        self.shape_text: dict[str, str] = {}
        self.domain: ir.Domain | None = None
        self.domain_statement: A.DomainDecl | None = None
        self._measures: np.ndarray | None = None

    # ================================================================== shapes
    def space_box(self) -> geometry.Box:
        space = [c for c in self.ctx.coordinates if not c.is_time]
        return geometry.Box([c.lo for c in space], [c.hi for c in space], name=BOX)

    def shape(self, st: A.ShapeDecl):
        name = st.name.name
        if not self.ctx.declared_here(st.name):
            return  # a duplicate or reserved name: already reported
        space = [c for c in self.ctx.coordinates if not c.is_time]
        if not space:
            self.diag.error(st.span, "a shape lives in the space coordinates, and there are none: "
                            "declare them with 'space x in [A, B], ...'")
            return
        values = self._arguments(st.call, len(space))
        if values is None:
            return
        kind = st.call.func.name
        try:
            if kind in ("box", "interval"):
                primitive = geometry.Box(values["lo"], values["hi"], name=name)
            elif kind in ("disk", "ball"):
                primitive = geometry.Ball(values["center"], values["radius"], name=name)
            elif kind == "polygon":
                primitive = geometry.Polygon(values["vertices"], name=name)
            else:
                primitive = geometry.HalfSpace(values["normal"], values["offset"], name=name)
        except ValueError as exc:
            where = st.call.kwargs[0].value.span if kind == "polygon" else st.call.span
            self.diag.error(where, f"{kind}(): {exc}")
            return
        if not self._inside_box(st, primitive, space):
            return
        self.shapes[name] = primitive
        self.shape_text[name] = f"{kind}(" + ", ".join(f"{k} = {_format(v)}" for k, v in values.items()) + ")"

    def _arguments(self, call: A.Call, dim: int) -> dict | None:
        kind = call.func.name
        if call.bare or kind not in PRIMITIVES:
            hint = did_you_mean(kind, PRIMITIVES)
            more = f"; did you mean '{hint}'?" if hint else f" (shapes are: {', '.join(PRIMITIVES)})"
            self.diag.error(call.func.span, f"unknown shape '{kind}'{more}" if not call.bare or hint else
                            f"a shape is a primitive with its arguments, e.g. disk(center = (0, 0), radius = 1): "
                            f"'{kind}' is not one")
            return None
        wanted = DIMENSION_OF.get(kind)
        if wanted is not None and wanted != dim:
            instead = {1: "interval", 2: "disk or polygon"}.get(dim, "ball or box")
            self.diag.error(call.func.span, f"{kind}() is {wanted}-D, but the space has {dim} coordinate"
                            f"{'s' if dim != 1 else ''}; use {instead}")
            return None
        params = dict(PRIMITIVES[kind])
        example = f"{kind}(" + ", ".join(f"{k} = ..." for k in params) + ")"
        if call.args:
            self.diag.error(call.args[0].span, f"shape arguments are given by keyword: {example}")
            return None
        given, ok = keyword_arguments(self.diag, call, params, kind)
        values: dict = {}
        for key, kw in given.items():
            value = self._value(kw.value, params[key], f"{kind}({key} = ...)", dim)
            ok = ok and value is not None
            values[key] = value
        missing = [k for k in params if k not in values]
        if missing and ok:  # after a misspelt argument, its did-you-mean says it all
            self.diag.error(call.span, f"{kind}() needs the argument{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)}: {example}")
            return None
        if ok and kind in ("disk", "ball") and not values["radius"] > 0:
            node = next(kw.value for kw in call.kwargs if kw.name.name == "radius")
            self.diag.error(node.span, f"{kind}(radius = ...) must be > 0, got {values['radius']:g}")
            return None
        return {k: values[k] for k in params} if ok and not missing else None

    def _value(self, node: A.Expr, what: str, where: str, dim: int):
        space = ", ".join(c.name for c in self.ctx.coordinates if not c.is_time)
        if what == "number":
            if isinstance(node, A.TupleExpr):
                self.diag.error(node.span, f"{where} is one number, not a tuple")
                return None
            return self.ctx.constant(node, where)
        if what == "point":
            items = node.items if isinstance(node, A.TupleExpr) else (node,)
            if len(items) != dim:
                self.diag.error(node.span, f"{where} needs {dim} number{'s' if dim > 1 else ''}, one per space "
                                f"coordinate ({space}), got {len(items)}")
                return None
            numbers = [self.ctx.constant(i, where) for i in items]
            return None if None in numbers else (tuple(numbers) if dim > 1 else numbers[0])
        # points: the vertices of a polygon
        if not isinstance(node, A.TupleExpr) or any(not isinstance(i, A.TupleExpr) for i in node.items):
            self.diag.error(node.span, f"{where} is a tuple of (x, y) pairs, e.g. ((0, 0), (1, 0), (0, 1))")
            return None
        vertices = []
        for item in node.items:
            vertex = self._value(item, "point", where, dim)
            if vertex is None:
                return None
            vertices.append(vertex)
        return tuple(vertices)

    def _inside_box(self, st: A.ShapeDecl, primitive: geometry.Primitive, space) -> bool:
        if isinstance(primitive, geometry.HalfSpace):
            return True  # unbounded: it only ever cuts a bounded shape
        lo, hi = primitive.bounds()
        for axis, c in enumerate(space):
            tol = _BOX_TOL * max(abs(c.lo), abs(c.hi), 1.0)
            if lo[axis] < c.lo - tol or hi[axis] > c.hi + tol:
                self.diag.error(st.call.span, f"the shape '{st.name.name}' reaches outside the space box: its "
                                f"{c.name} runs over [{lo[axis]:g}, {hi[axis]:g}], the box's over [{c.lo:g}, {c.hi:g}]; "
                                f"move or shrink the shape, or widen 'space {c.name} in [...]'")
                return False
        return True

    # ================================================================== the domain
    def domain_statement_lowered(self, st: A.DomainDecl):
        name = st.name.name
        space = [c for c in self.ctx.coordinates if not c.is_time]
        if not space:
            self.diag.error(st.span, "a domain lives in the space coordinates, and there are none: "
                            "declare them with 'space x in [A, B], ...'")
            return
        shape = self._combine(st.expr)
        if shape is None or not self.ctx.declared_here(st.name):
            return
        if not self._bounded(st.expr):
            self.diag.error(st.expr.span, f"the domain '{name}' is unbounded: a halfspace must be intersected with a "
                            f"bounded shape, e.g. 'domain {name} = box & {self._first_halfspace(st.expr)}'")
            return
        empty = self._emptiness(shape)
        if empty:
            self.diag.error(st.expr.span, f"the domain '{name}' {empty}; check that the holes do not cover it and "
                            f"that intersected shapes overlap")
            return
        used = [n for n in dict.fromkeys(r.name.name for r in st.expr.walk() if isinstance(r, A.ShapeRef))
                if n != BOX]
        self.domain = ir.Domain(name, shape, _expression(st.expr),
                                tuple((n, self.shape_text[n]) for n in used))
        self.domain_statement = st

    def _first_halfspace(self, expr: A.ShapeExpr) -> str:
        for node in expr.walk():
            if isinstance(node, A.ShapeRef) and isinstance(self.shapes.get(node.name.name), geometry.HalfSpace):
                return node.name.name
        return "cut"

    def _bounded(self, expr: A.ShapeExpr) -> bool:
        """Whether the combination is bounded: a halfspace is not; a union needs both operands bounded,
        a difference its left one, an intersection either."""
        if isinstance(expr, A.ShapeRef):
            return not isinstance(self.shapes.get(expr.name.name), geometry.HalfSpace)
        left, right = self._bounded(expr.left), self._bounded(expr.right)
        return {"+": left and right, "-": left, "&": left or right}[expr.op]

    @staticmethod
    def _emptiness(shape: geometry.Shape) -> str | None:
        """Why the shape is empty, or None: no point of a fixed stream over its bounding box lies inside,
        or an intersection in it has operands whose bounding boxes do not overlap."""
        try:
            area = geometry.estimate_measure(shape, EMPTY_DRAWS, np.random.default_rng(EMPTY_SEED))
        except ValueError:
            return "has an empty part: an intersection of shapes that do not overlap"
        return None if area > 0 else f"is empty: none of {EMPTY_DRAWS} points spread over its bounding box lies inside it"

    def _combine(self, expr: A.ShapeExpr) -> geometry.Shape | None:
        if isinstance(expr, A.ShapeRef):
            return self._shape_named(expr.name)
        left, right = self._combine(expr.left), self._combine(expr.right)
        if left is None or right is None:
            return None
        return {"+": left.__add__, "-": left.__sub__, "&": left.__and__}[expr.op](right)

    def _shape_named(self, ident: A.Ident) -> geometry.Shape | None:
        name = ident.name
        if name == BOX:
            return self.space_box()
        if name in self.shapes:
            return self.shapes[name]
        kind = self.ctx.declared.get(name, (None,))[0]
        if kind == "shape":
            return None  # its own error is reported
        if kind is not None:
            self.diag.error(ident.span, f"'{name}' is a {kind}, not a shape (shapes are: "
                            f"{', '.join([BOX] + self._declared_shapes())})")
            return None
        known = [BOX] + self._declared_shapes()
        hint = did_you_mean(name, known)
        more = f"; did you mean '{hint}'?" if hint else f" (shapes are: {', '.join(known)})"
        self.diag.error(ident.span, f"unknown shape '{name}'{more}; declare it with 'shape {name} = disk(...)'"
                        if not hint else f"unknown shape '{name}'{more}")
        return None

    def _declared_shapes(self) -> list[str]:
        return [n for n, (k, _) in self.ctx.declared.items() if k == "shape"]

    # ================================================================== boundary selectors
    def measures(self) -> np.ndarray:
        if self._measures is None:
            self._measures = geometry.part_measures(self.domain.shape)
        return self._measures

    def on_boundary(self, parts) -> list[int]:
        """The indices of ``parts`` that lie on the domain's boundary (measure > 0)."""
        measures = self.measures()
        return [p.index for p in parts if measures[p.index] > 0]

    def selector(self, selector: A.Selector) -> ir.DomainBoundary | None:
        """The parts of the domain's boundary a selector names, or None (reported)."""
        domain = self.domain
        every = geometry.boundary_parts(domain.shape)
        chosen: list[int] = []
        on: list[str] = []
        ok = True

        def add(indices: list[int], label: str, span: A.Span):
            nonlocal ok
            again = [i for i in indices if i in chosen]
            if again:
                self.diag.error(span, f"{label} is selected twice: part of it is already selected by "
                                f"{', '.join(on)}; list each part of the boundary once")
                ok = False
                return
            chosen.extend(indices)
            on.append(label)

        if selector.whole:
            return ir.DomainBoundary(domain, tuple(self.on_boundary(every)), ("boundary",))
        space = [c.name for c in self.ctx.coordinates if not c.is_time]
        for ident in selector.shapes:
            name = ident.name
            if name == domain.name:
                add(self.on_boundary(every), name, ident.span)
                continue
            used = sorted({p.primitive.name for p in every})
            if name not in used:
                kind = self.ctx.declared.get(name, (None,))[0]
                if name in space:
                    self.diag.error(ident.span, f"'{name}' is a coordinate: a face of the box is written "
                                    f"'{name} = VALUE'")
                elif kind == "shape":
                    self.diag.error(ident.span, f"the shape '{name}' is not part of the domain '{domain.name}' "
                                    f"(= {domain.expression}), so no part of the domain's boundary lies on it; "
                                    f"add it to the domain or choose one of {', '.join(used)}")
                elif kind is not None and kind != "shape":
                    self.diag.error(ident.span, f"'{name}' is a {kind}, not a shape; a boundary lies on shapes of "
                                    f"the domain: {', '.join(used)}")
                else:
                    hint = did_you_mean(name, used + [domain.name])
                    more = f"; did you mean '{hint}'?" if hint else f" (the domain is made of: {', '.join(used)})"
                    self.diag.error(ident.span, f"unknown shape '{name}'{more}")
                ok = False
                continue
            indices = self.on_boundary(p for p in every if p.primitive.name == name)
            if not indices:
                self.diag.error(ident.span, f"the shape '{name}' lies nowhere on the boundary of the domain "
                                f"'{domain.name}' (= {domain.expression}): it lies inside a hole or inside another shape of a "
                                f"union, or outside the shape it is cut from; move or resize it, or leave it out of "
                                f"the domain")
                ok = False
                continue
            add(indices, name, ident.span)
        for face in selector.faces:
            located = self.ctx.box_face(face)
            if located is None:
                ok = False
                continue
            axis = space.index(located.coordinate)
            number = 2 * axis + (0 if located.side == "lo" else 1)
            indices = self.on_boundary(p for p in every if p.primitive.name == BOX and p.face == number)
            if not indices:
                self.diag.error(face.span, f"the face {located} of the space box is not on the boundary of the domain "
                                f"'{domain.name}' (= {domain.expression}); select the shapes the boundary lies on, "
                                f"e.g. 'on {next(iter(sorted({p.primitive.name for p in every})))}'")
                ok = False
                continue
            add(indices, str(located), face.span)
        return ir.DomainBoundary(domain, tuple(chosen), tuple(on)) if ok else None


def _expression(expr: A.ShapeExpr, parent: str | None = None, right: bool = False) -> str:
    """The domain expression as text with the parentheses it needs."""
    if isinstance(expr, A.ShapeRef):
        return expr.name.name
    text = f"{_expression(expr.left, expr.op)} {expr.op} {_expression(expr.right, expr.op, True)}"
    tighter = {"&": 2, "+": 1, "-": 1}
    if parent is not None and (tighter[parent] > tighter[expr.op] or (right and tighter[parent] == tighter[expr.op])):
        return f"({text})"
    return text
