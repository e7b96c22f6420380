"""Conditions: ``equation``, ``initial``, ``boundary`` (on faces of the space box or on parts of the
domain's boundary), ``periodic`` and ``data`` statements, each lowered to an :class:`pinnspec.ir.Condition`
in ``ctx.conditions``."""

from __future__ import annotations

import os

import sympy

from .. import ir
from ..registry import did_you_mean
from ..sampling import load_data, read_file_columns
from . import _ast as A
from ._context import Context
from ._expr import Scope, uses_call
from ._geometry import BOX, GeometryLowering

DATA_OPTIONS = ("noise",)  # `data NAME from "FILE": FIELD, ..., noise = SIGMA`


def condition(ctx: Context, geometry: GeometryLowering, st: A.Statement) -> None:
    """Lowers a condition statement (``st``: an equation, initial, boundary, periodic or data statement)."""
    if isinstance(st, A.Equation):
        _equation(ctx, geometry, st)
    elif isinstance(st, A.Initial):
        _initial(ctx, geometry, st)
    elif isinstance(st, A.Boundary):
        _boundary(ctx, geometry, st)
    elif isinstance(st, A.Periodic):
        _periodic(ctx, st)
    else:
        _data(ctx, st)


def _residual(ctx: Context, rel: A.Relation, scope: Scope) -> sympy.Expr | None:
    lhs = ctx.expr.lower(rel.lhs, scope)
    rhs = ctx.expr.lower(rel.rhs, scope)
    if lhs is None or rhs is None:
        return None
    residual = lhs - rhs
    return ctx.defined(residual, rel.span)


def _needs_field(ctx: Context, expr: sympy.Expr, span: A.Span, name: str):
    if not any(expr.has(f) for f in ctx.field_exprs.values()):
        ctx.diag.error(span, f"this part of '{name}' involves no field: it would be a constant, not a condition")


def _add_condition(ctx: Context, st, kind, region, residuals, face_residuals=None):
    name = st.name.name
    if not ctx.declared_here(st.name):
        return  # a duplicate name: already reported
    def values(exprs):  # the tables as per-point inputs
        return tuple(e.xreplace(ctx.table_values) for e in exprs)

    ctx.conditions[name] = ir.Condition(name, kind, region, values(residuals),
                                        tuple(map(values, face_residuals)) if face_residuals else None,
                                        st.span.line)


def _lower_relations(ctx: Context, st, relations, where, face=None, normals=None):
    scope = ctx.scope(where, face=face, normals=normals)
    out = []
    for rel in relations:
        res = _residual(ctx, rel, scope)
        if res is not None:
            _needs_field(ctx, res, rel.span, st.name.name)
        out.append(res)
    return out


def _equation(ctx: Context, geometry: GeometryLowering, st: A.Equation) -> None:
    res = _lower_relations(ctx, st, (st.relation,), f"the equation '{st.name.name}'")
    if None not in res:
        domain = geometry.domain
        _add_condition(ctx, st, "equation", ir.DomainInterior(domain) if domain else ir.Interior(), res)


def _initial(ctx: Context, geometry: GeometryLowering, st: A.Initial) -> None:
    time = next((c for c in ctx.coordinates if c.is_time), None)
    if time is None:
        ctx.diag.error(st.span, "'initial' needs a time coordinate: declare one with 'time t in [A, B]'")
        return
    res = _lower_relations(ctx, st, st.relations, f"the initial condition '{st.name.name}'")
    if None not in res:
        domain = geometry.domain
        region = ir.DomainInitialSlice(domain, time.name, time.lo) if domain else ir.InitialSlice(time.name, time.lo)
        _add_condition(ctx, st, "initial", region, res)


def _faces(ctx: Context, selector: A.Selector) -> list[ir.Face] | None:
    space = [c for c in ctx.coordinates if not c.is_time]
    if selector.whole:
        if not space:
            ctx.diag.error(selector.span, "'on boundary' needs space coordinates, and there are none")
            return None
        return [ir.Face(c.name, side, value) for c in space for side, value in (("lo", c.lo), ("hi", c.hi))]
    if selector.shapes:
        name = selector.shapes[0].name
        kind = ctx.declared.get(name, (None,))[0]
        if kind in ("shape", "domain") or name == BOX:
            what = f"'{name}' is a shape" if kind != "domain" else f"'{name}' is a domain"
            ctx.diag.error(selector.shapes[0].span, f"{what}, but the spec declares no 'domain' to take the "
                           f"boundary of: add e.g. 'domain plate = box - {name}', or select faces of the box "
                           f"('on x = 0', 'on boundary')")
        elif ctx.coordinate(name) is not None:
            ctx.diag.error(selector.shapes[0].span, f"'{name}' is a coordinate: a face of the box is written "
                           f"'{name} = VALUE'")
        else:
            ctx.diag.error(selector.shapes[0].span, f"unknown shape '{name}': the spec declares no 'domain'; "
                           f"select faces of the box ('on x = 0', 'on boundary')")
        return None
    faces: list[ir.Face] = []
    ok = True
    for face in selector.faces:
        new = ctx.box_face(face)
        if new is None:
            ok = False
            continue
        if new in faces:
            ctx.diag.error(face.span, f"the face {new} is listed twice")
            ok = False
            continue
        faces.append(new)
    return faces if ok else None


def _boundary(ctx: Context, geometry: GeometryLowering, st: A.Boundary) -> None:
    where = f"the boundary condition '{st.name.name}'"
    if geometry.domain is not None or (ctx.tree_has_domain and st.selector.shapes):
        _domain_boundary(ctx, geometry, st, where)
        return
    faces = _faces(ctx, st.selector)
    if faces is None:
        # still check the expressions (without dn) to report their errors too
        if not any(uses_call(r, "dn") or uses_call(r, "normal") for r in st.relations):
            _lower_relations(ctx, st, st.relations, where)
        return
    if any(uses_call(r, "dn") or uses_call(r, "normal") for r in st.relations):
        per_face = [_lower_relations(ctx, st, st.relations, where, face=(f.coordinate, f.normal_sign)) if i == 0
                    else _quiet(ctx, lambda f=f: _lower_relations(ctx, st, st.relations, where,
                                                                  face=(f.coordinate, f.normal_sign)))
                    for i, f in enumerate(faces)]
        if any(None in r for r in per_face):
            return
        _add_condition(ctx, st, "boundary", ir.FaceRegion(tuple(faces)), per_face[0],
                       per_face if len(faces) > 1 else None)
    else:
        res = _lower_relations(ctx, st, st.relations, where)
        if None not in res:
            _add_condition(ctx, st, "boundary", ir.FaceRegion(tuple(faces)), res)


def _domain_boundary(ctx: Context, geometry: GeometryLowering, st: A.Boundary, where: str) -> None:
    """A boundary condition on parts of the domain's boundary: ``dn`` uses the per-point normal."""
    region = geometry.selector(st.selector) if geometry.domain is not None else None
    normals = {c.name: ir.normal(c.name) for c in ctx.coordinates if not c.is_time}
    res = _lower_relations(ctx, st, st.relations, where, normals=normals)
    if region is not None and None not in res:
        _add_condition(ctx, st, "boundary", region, res)


def geometry_warnings(ctx: Context, geometry: GeometryLowering, by_kind) -> None:
    """A shape that no domain uses, or that the domain leaves out: a warning."""
    domain = geometry.domain
    used = {name for name, _ in domain.shapes} if domain else set()
    for st in by_kind.get("shape", []):
        if st.name.name not in geometry.shapes:
            continue
        if not by_kind.get("domain"):
            ctx.diag.warning(st.name.span, f"the shape '{st.name.name}' is used by no domain: "
                             f"add e.g. 'domain plate = box - {st.name.name}'")
        elif domain is not None and st.name.name not in used:
            ctx.diag.warning(st.name.span, f"the shape '{st.name.name}' is not part of the domain "
                             f"'{domain.name}' (= {domain.expression})")


def _quiet(ctx: Context, fn):
    """Run ``fn`` without adding diagnostics (used to re-lower per face)."""
    saved = list(ctx.diag.items)
    try:
        return fn()
    finally:
        ctx.diag.items[:] = saved


def _periodic(ctx: Context, st: A.Periodic) -> None:
    name = st.coordinate.name
    coord = ctx.coordinate(name)
    ok = True
    if coord is None:
        space = [c.name for c in ctx.coordinates if not c.is_time]
        hint = did_you_mean(name, space)
        more = f"; did you mean '{hint}'?" if hint else f" (space coordinates are: {', '.join(space) or 'none'})"
        ctx.diag.error(st.coordinate.span, f"unknown coordinate '{name}'{more}")
        ok = False
    elif coord.is_time:
        ctx.diag.error(st.coordinate.span, f"'{name}' is the time coordinate; periodic conditions are on space coordinates")
        ok = False
    if ctx.tree_has_domain:
        ctx.diag.error(st.span, "a periodic condition pairs the two ends of the space box, and this spec's "
                       "domain is a shape: drop the 'domain' statement, or use boundary conditions instead")
        ok = False
    scope = ctx.scope(f"the periodic condition '{st.name.name}'")
    res = []
    for e in st.exprs:
        value = ctx.expr.lower(e, scope)
        if value is not None:
            value = ctx.defined(value, e.span)
        if value is not None:
            _needs_field(ctx, value, e.span, st.name.name)
        res.append(value)
    if ok and None not in res:
        _add_condition(ctx, st, "periodic", ir.PeriodicPairs(name, coord.lo, coord.hi), res)


def _data(ctx: Context, st: A.Data) -> None:
    ok = True
    for f in st.fields:
        if f.name not in ctx.fields:
            hint = did_you_mean(f.name, ctx.fields)
            more = f"; did you mean '{hint}'?" if hint else f" (fields are: {', '.join(ctx.fields)})"
            ctx.diag.error(f.span, f"unknown field '{f.name}'{more}")
            ok = False
    names = [f.name for f in st.fields]
    if len(set(names)) != len(names):
        ctx.diag.error(st.span, "a field is listed twice")
        ok = False
    path = st.path.value
    full = path if os.path.isabs(path) else os.path.join(ctx.base_dir, path)
    readable = _check_data_file(ctx, full, st.path, names if ok else None)
    noise = None
    for key, value in st.options:
        if key.name != "noise":
            hint = did_you_mean(key.name, DATA_OPTIONS)
            more = f"; did you mean '{hint}'?" if hint else f" (a data statement takes: {', '.join(DATA_OPTIONS)})"
            ctx.diag.error(key.span, f"unknown data option '{key.name}'{more}")
            ok = False
        elif noise is not None:
            ctx.diag.error(key.span, "'noise' is given twice")
            ok = False
        elif not float(value.text) > 0:
            ctx.diag.error(value.span, f"noise = {value.text}: the noise's standard deviation must be > 0 "
                           f"(leave 'noise' out for exact observations)")
            ok = False
        else:
            noise = float(value.text)
    if ok and readable:
        residuals = [ctx.field_exprs[f] - ir.observed(f) for f in names]
        _add_condition(ctx, st, "data", ir.DataPoints(path, tuple(names), noise), residuals)


def _check_data_file(ctx: Context, full: str, node: A.String, fields: list[str] | None) -> bool:
    """Read the data file as training will (every row: finite numbers, one value per column; at least one
    row; the coordinates' and ``fields``' columns, when the fields are known); False, reported, when it
    cannot be used."""
    if not os.path.isfile(full):
        ctx.diag.error(node.span, f"the data file '{node.value}' does not exist (looked for {full})")
        return False
    try:
        if fields is None:
            read_file_columns(full)
        else:
            load_data(full, ctx.coordinates, fields)
    except ValueError as exc:
        ctx.diag.error(node.span, str(exc))
        return False
    return True
