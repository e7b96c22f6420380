"""Checks and lowering of ``report NAME = EXPR``: a number computed from the trained fields.

EXPR is made of ``integral(PART, EXPR)`` and ``mean(PART, EXPR)`` calls, constants, constant ``let``s
and ``param``s.  PART names where the integral is taken:

* a shape of the domain (``integral(rim, ...)``): the part of the domain's boundary on it;
* a side of the space box, given as a keyword (``integral(x = 2.2, ...)``): that face (with a domain,
  the part of the domain's boundary on it);
* the domain's own name (``integral(channel, ...)``): the domain itself (an area or volume integral).

On a boundary the integrand may use ``dn(...)`` and ``normal(c)``, both along the domain's OUTWARD
normal.  With a time coordinate, the time is a keyword too: ``integral(rim, p, t = 1)``.
"""

from __future__ import annotations

import dataclasses

from .. import ir
from ..registry import did_you_mean
from . import _ast as A
from ._expr import REPORT_CALLS
from ._context import Context
from ._geometry import BOX, GeometryLowering

#: the most space coordinates a report integrates in (its quadrature rules: pinnspec.compiler._quadrature)
MAX_REPORT_DIMENSION = 3


def _integral_name(index: int) -> str:
    """The name an integral's call is replaced by in the report's expression (no spec name has '#')."""
    return f"#{index}"


class ReportLowering:
    """Lowers the ``report`` statements of one spec; reports into the context's diagnostics."""

    def __init__(self, ctx: Context, geometry: GeometryLowering):
        self.ctx = ctx
        self.diag = ctx.diag
        self.geometry = geometry

    def report(self, st: A.Report) -> ir.Report | None:
        name = st.name.name
        calls = self._reductions(st.value)
        if not calls:
            self.diag.error(st.value.span, f"the report '{name}' computes nothing from the fields: write it with "
                            f"integral(PART, EXPR) or mean(PART, EXPR), e.g. 'report {name} = integral(rim, dn(u))'")
            return None
        if not self._space_dimension_ok(st):
            return None
        integrals = [self._integral(name, index, call) for index, call in enumerate(calls)]
        lets = dict(self.ctx.lets)
        lets.update({_integral_name(i): ir.report_integral(name, i) for i in range(len(calls))})
        scope = dataclasses.replace(
            self.ctx.scope(f"the report '{name}' outside integral(...) and mean(...)", fields=False,
                           coordinates=False), lets=lets)
        value = self.ctx.expr.lower(_replace_calls(st.value, {id(c): i for i, c in enumerate(calls)}), scope)
        if value is not None:
            value = self.ctx.defined(value, st.value.span)
        if value is None or None in integrals:
            return None
        return ir.Report(name, value, tuple(integrals), st.span.line)

    # ------------------------------------------------------------------ structure
    @staticmethod
    def _reductions(node: A.Node) -> list[A.Call]:
        """The outermost integral(...) / mean(...) calls of the report's expression, left to right (found
        without recursion: expressions of any depth)."""
        found = []
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, A.Call) and current.func.name in REPORT_CALLS and not current.bare:
                found.append(current)
            else:
                stack.extend(reversed(list(current.children())))
        return found

    def _space_dimension_ok(self, st: A.Report) -> bool:
        space = self.ctx.space_names
        if not space:
            self.diag.error(st.span, "a report integrates over space, and the spec has no space coordinate")
            return False
        if len(space) > MAX_REPORT_DIMENSION:
            self.diag.error(st.span, f"reports integrate in up to {MAX_REPORT_DIMENSION} space coordinates, and the "
                            f"spec has {len(space)} ({', '.join(space)})")
            return False
        return True

    # ------------------------------------------------------------------ one integral
    def _integral(self, report: str, index: int, call: A.Call) -> ir.ReportIntegral | None:
        reduction = call.func.name
        example = f"{reduction}(rim, dn(u))"
        coordinates = {c.name: c for c in self.ctx.coordinates}
        time = next((c for c in self.ctx.coordinates if c.is_time), None)
        face: A.Face | None = None
        at: float | None = None
        ok = True
        seen: set[str] = set()
        for kw in call.kwargs:
            key = kw.name.name
            if key in seen:
                self.diag.error(kw.name.span, f"the argument '{key}' is given twice")
                ok = False
                continue
            seen.add(key)
            coordinate = coordinates.get(key)
            if coordinate is None:
                known = list(coordinates)
                hint = did_you_mean(key, known)
                more = f"; did you mean '{hint}'?" if hint else f" (coordinates are: {', '.join(known)})"
                self.diag.error(kw.name.span, f"{reduction}() takes a side of the space box ('x = VALUE') or the "
                                f"time ('t = VALUE') by keyword, and '{key}' is no coordinate{more}")
                ok = False
            elif coordinate.is_time:
                at = self._time(kw, coordinate)
                ok = ok and at is not None
            elif face is not None:
                self.diag.error(kw.span, f"{reduction}() takes one side of the box; add one {reduction}(...) per side")
                ok = False
            else:
                face = A.Face(kw.name, kw.value, kw.span)
        wanted = 1 if face is not None else 2
        if len(call.args) != wanted:
            shape = "EXPR (the side given as 'x = VALUE')" if face is not None else "PART, EXPR"
            self.diag.error(call.span, f"{reduction}() takes {shape}, got {len(call.args)} positional argument"
                            f"{'s' if len(call.args) != 1 else ''}: e.g. {example} or {reduction}(x = 0, u)")
            return None
        if time is not None and at is None and ok:
            self.diag.error(call.span, f"the problem has the time coordinate '{time.name}': say when the report is "
                            f"taken, e.g. {reduction}(..., {time.name} = {time.hi:g})")
            ok = False
        part = call.args[0] if face is None else None
        if part is not None and not isinstance(part, A.Name):
            self.diag.error(part.span, f"the first argument of {reduction}() names where it is taken: a shape of the "
                            f"domain, the domain itself, or a side of the box as 'x = VALUE' (e.g. {example})")
            return None
        region, scope_kind = self._region(part, face, reduction)
        if region is None:
            return None
        where = f"the {reduction} of the report '{report}'"
        if scope_kind == "normals":
            scope = self.ctx.scope(where, normals={c: ir.normal(c) for c in self.ctx.space_names})
        elif scope_kind == "face":
            only = region.faces[0]
            scope = self.ctx.scope(where, face=(only.coordinate, only.normal_sign))
        else:
            scope = self.ctx.scope(where)
        scope.in_report = True
        integrand = self.ctx.expr.lower(call.args[-1], scope)
        if integrand is not None:
            integrand = self.ctx.defined(integrand, call.args[-1].span)
        if integrand is None or not ok:
            return None
        integrand = integrand.xreplace(self.ctx.table_values)
        return ir.ReportIntegral(ir.report_integral(report, index), reduction, region, integrand, at)

    def _time(self, kw: A.KeywordArg, coordinate: ir.Coordinate) -> float | None:
        value = self.ctx.constant(kw.value, f"the time of a report ('{coordinate.name} = ...')")
        if value is None:
            return None
        scale = max(abs(coordinate.lo), abs(coordinate.hi), 1.0)
        if not coordinate.lo - 1e-12 * scale <= value <= coordinate.hi + 1e-12 * scale:
            self.diag.error(kw.value.span, f"{coordinate.name} = {value:g} is outside the time interval "
                            f"[{coordinate.lo:g}, {coordinate.hi:g}]")
            return None
        return min(max(value, coordinate.lo), coordinate.hi)

    def _region(self, part: A.Name | None, face: A.Face | None, reduction: str):
        """(the region, how its integrand sees the normal: "normals" | "face" | None), or (None, None)."""
        geometry = self.geometry
        domain = geometry.domain
        if self.ctx.tree_has_domain and domain is None:
            return None, None  # the domain's own error is reported
        if domain is not None:
            if part is not None and part.id == domain.name:
                return ir.DomainInterior(domain), None
            if part is not None:
                selector = A.Selector((), False, part.span, (A.Ident(part.id, part.span),))
            else:
                selector = A.Selector((face,), False, face.span)
            region = geometry.selector(selector)
            return (region, "normals") if region is not None else (None, None)
        if face is not None:
            located = self.ctx.box_face(face)
            return (ir.FaceRegion((located,)), "face") if located is not None else (None, None)
        name = part.id
        kind = self.ctx.declared.get(name, (None,))[0]
        if kind == "shape" or name == BOX:
            self.diag.error(part.span, f"'{name}' is a shape, and the spec declares no 'domain' whose boundary it "
                            f"bounds: add one (e.g. 'domain all = box - {name}'), or integrate over a side of the "
                            f"box: {reduction}(x = VALUE, EXPR)")
        else:
            self.diag.error(part.span, f"unknown part '{name}': without a 'domain', {reduction}() is taken over a "
                            f"side of the box, {reduction}(x = VALUE, EXPR); to integrate over the whole region "
                            f"declare 'domain all = box' and write {reduction}(all, EXPR)")
        return None, None


def _replace_calls(node, integral_indices: dict[int, int]):
    """The expression with each integral(...) / mean(...) call (by identity) replaced by the name of its integral
    symbol; rebuilt bottom up without recursion (expressions of any depth)."""
    rebuilt: dict[int, A.Node] = {}  # id of a node -> the node rebuilt
    stack: list[tuple[A.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        if id(current) in integral_indices:
            rebuilt[id(current)] = A.Name(_integral_name(integral_indices[id(current)]), current.span)
        elif not children_done:
            stack.append((current, True))
            stack.extend((child, False) for child in current.children())
        else:
            changes = {}
            for f in dataclasses.fields(current):
                value = getattr(current, f.name)
                if isinstance(value, A.Node):
                    changes[f.name] = rebuilt[id(value)]
                elif isinstance(value, tuple) and any(isinstance(v, A.Node) for v in value):
                    changes[f.name] = tuple(rebuilt[id(v)] if isinstance(v, A.Node) else v for v in value)
            rebuilt[id(current)] = dataclasses.replace(current, **changes) if changes else current
    return rebuilt[id(node)]
