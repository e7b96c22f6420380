"""Point statements: ``points``, ``sampler``, ``resample``, the reference solution (``exact`` or
``reference``), ``test`` and ``validate``."""

from __future__ import annotations

import os

import sympy

from .. import ir
from ..sampling import load_reference
from . import _ast as A
from ._context import Context
from ._training import call_setting, validated_call

#: Points per condition when a spec gives none (documented in docs/reference.md).
DEFAULT_POINTS = {"equation": 1000, "initial": 100, "boundary": 100, "periodic": 100}


def sampling(ctx: Context, by_kind) -> ir.Sampling:
    """The points per condition (`points`, else `DEFAULT_POINTS`), the `sampler` and how often the points are
    redrawn (`resample`)."""
    counts: dict[str, int] = {}
    for st in by_kind.get("points", []):
        for pc in st.counts:
            name = pc.name.name
            n = ctx.count(pc.count, f"the number of points for '{name}'")
            kind = ctx.declared.get(name, (None,))[0]
            if kind != "condition":
                ctx.is_condition(pc.name, "points")
                continue
            if ctx.condition_kinds.get(name) == "data":
                ctx.diag.error(pc.span, f"'{name}' is a data condition: it uses every row of its file (no 'points')")
                continue
            if name in counts:
                ctx.diag.error(pc.span, f"points for '{name}' are given twice")
                continue
            if n is not None:
                counts[name] = n
    points = []
    for name, cond in ctx.conditions.items():
        if cond.kind == "data":
            continue
        default = DEFAULT_POINTS[cond.kind]
        if cond.kind == "initial" and not ctx.space_names:
            default = 1  # an ODE: the initial slice is a single point
        points.append((name, counts.get(name, default)))
    sampler = call_setting(ctx, "sampler", by_kind.get("sampler", []))
    resample: int | None = 1
    for st in by_kind.get("resample", [])[:1]:
        resample = None if st.every is None else ctx.count(st.every, "'resample every'")
    return ir.Sampling(tuple(points), sampler, resample)


def reference(ctx: Context, by_kind) -> ir.Reference | None:
    """The reference solution: `exact` expressions, a `reference` file or a generated reference; None without
    one (or with an error, reported)."""
    exact_stmts = by_kind.get("exact", [])
    refs = by_kind.get("reference", [])
    if exact_stmts and refs:
        ctx.diag.error(refs[0].span, f"give either 'exact' (line {exact_stmts[0].span.line}) or 'reference', not both")
        return None
    if exact_stmts:
        solution: dict[str, sympy.Expr] = {}
        ok = True
        for st in exact_stmts:
            for rel in st.relations:
                if not isinstance(rel.lhs, A.Name) or rel.lhs.id not in ctx.fields:
                    what = f"'{rel.lhs.id}'" if isinstance(rel.lhs, A.Name) else "the left side"
                    ctx.diag.error(rel.lhs.span, f"{what} is not a field: 'exact' is written FIELD = EXPR "
                                   f"(fields are: {', '.join(ctx.fields)})")
                    ok = False
                    continue
                if rel.lhs.id in solution:
                    ctx.diag.error(rel.lhs.span, f"the exact solution of '{rel.lhs.id}' is given twice")
                    ok = False
                    continue
                value = ctx.expr.lower(rel.rhs, ctx.scope(f"the exact solution of '{rel.lhs.id}'",
                                                          fields=False, params=False, tables=False))
                if value is not None:
                    value = ctx.defined(value, rel.rhs.span)
                if value is None:
                    ok = False
                    continue
                solution[rel.lhs.id] = value
        missing = [f for f in ctx.fields if f not in solution]
        if ok and missing:
            ctx.diag.error(exact_stmts[0].span, f"'exact' gives no expression for {', '.join(map(repr, missing))} "
                           f"(fields are: {', '.join(ctx.fields)})")
            ok = False
        return ir.ExactReference(tuple((f, solution[f]) for f in ctx.fields)) if ok else None
    if refs:
        st = refs[0]
        if st.path is not None:
            full = st.path.value if os.path.isabs(st.path.value) else os.path.join(ctx.base_dir, st.path.value)
            if not os.path.isfile(full):
                ctx.diag.error(st.path.span, f"the reference file '{st.path.value}' does not exist (looked for {full})")
                return None
            try:  # read as training will: every row checked, the columns matched to the coordinates and fields
                load_reference(full, ctx.coordinates, ctx.fields)
            except ValueError as exc:
                ctx.diag.error(st.path.span, str(exc))
                return None
            return ir.FileReference(st.path.value)
        call = validated_call(ctx, "reference", st.call)
        return ir.GeneratedReference(call) if call else None
    return None


def testing(ctx: Context, by_kind, domain: ir.Domain | None) -> ir.TestPoints:
    """The points of the `test` statement (a model is measured there against the reference)."""
    for st in by_kind.get("test", [])[:1]:
        if st.grid is not None:
            counts = [ctx.count(n, "a test grid count") for n in st.grid]
            if len(counts) != len(ctx.coordinates):
                names = ", ".join(c.name for c in ctx.coordinates)
                ctx.diag.error(st.span, f"'test grid' needs one count per coordinate ({len(ctx.coordinates)}: {names}), "
                               f"got {len(counts)}")
                return ir.TestPoints()
            if None in counts:
                return ir.TestPoints()
            return ir.TestPoints(grid=tuple(counts))
        if st.uniform is not None:
            n = ctx.count(st.uniform, "the number of uniform test points")
            if domain is not None:
                ctx.diag.error(st.span, "'test uniform' places its grid in the box; this spec's domain has "
                               "shapes: use 'test N' or 'test grid ...' (their points outside the domain "
                               "are left out)")
                return ir.TestPoints()
            return ir.TestPoints(uniform=n)
        n = ctx.count(st.count, "the number of test points")
        return ir.TestPoints(count=n)
    return ir.TestPoints()


def validation(ctx: Context, by_kind) -> ir.Validation:
    """How often, and on which points, a run measures the model during training (`validate`)."""
    for st in by_kind.get("validate", [])[:1]:
        every = ctx.count(st.every, "'validate ... every'") or 100
        if st.count is None:
            return ir.Validation(every=every, on_test=True)
        count = ctx.count(st.count, "the number of validation points") or 1000
        return ir.Validation(every=every, count=count)
    return ir.Validation()
