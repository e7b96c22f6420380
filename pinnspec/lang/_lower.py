"""Semantic checks and lowering: syntax tree -> problem IR (:mod:`pinnspec.ir`).

Every check reports into one :class:`Collector`; the spec fails only after
all statements were checked, so a user sees every mistake at once.  The statement families share one
:class:`Context`; this module runs them in order: declarations (:mod:`._declarations`), geometry
(:mod:`._geometry`), conditions (:mod:`._conditions`), `enforce` (:mod:`._enforce`), losses and
groupings (:mod:`._groupings`), reports (:mod:`._report`), points (:mod:`._points`) and training
(:mod:`._training`).
"""

from __future__ import annotations

from .. import ir
from ..registry import load_plugins
from . import _ast as A
from . import _conditions, _declarations, _groupings, _points, _training
from ._context import Context
from ._diagnostics import Collector
from ._enforce import EnforceLowering
from ._geometry import GeometryLowering
from ._report import ReportLowering


def lower(tree: A.SpecFile, base_dir: str) -> tuple[ir.Problem | None, Collector]:
    """The problem IR of ``tree`` (None where it has errors) and every diagnostic; relative paths resolve
    against ``base_dir``."""
    load_plugins()  # third-party functions, references, ... (entry-point group `pinnspec`)
    ctx = Context.of(tree, base_dir)
    problem = _lowered(ctx, GeometryLowering(ctx))
    return problem, ctx.diag


def spec_domain(tree: A.SpecFile, base_dir: str) -> ir.Domain | None:
    """The domain ``tree``'s statements lower to (None where it has none, or its geometry has errors), whether
    or not its other statements have errors: every statement is lowered, as :func:`lower` does."""
    load_plugins()
    ctx = Context.of(tree, base_dir)
    geometry = GeometryLowering(ctx)
    _lowered(ctx, geometry)
    return geometry.domain


def _lowered(ctx: Context, geometry: GeometryLowering) -> ir.Problem | None:
    statements = ctx.tree.statements
    by_kind: dict[str, list[A.Statement]] = {}
    for st in statements:
        by_kind.setdefault(st.keyword, []).append(st)
    _declarations.check_structure(ctx, statements, by_kind)
    _declarations.declare_all(ctx, statements)

    problem_name = by_kind["problem"][0].name.name if by_kind.get("problem") else "problem"
    _declarations.symbols_from_tree(ctx)
    for st in statements:  # lets first, in file order (a let sees earlier lets only)
        if isinstance(st, A.Let):
            _declarations.let(ctx, st)
    for st in by_kind.get("space", []) + by_kind.get("time", []):
        _declarations.coordinates(ctx, st)
    _declarations.finish_coordinates(ctx)
    for st in by_kind.get("shape", []):
        geometry.shape(st)
    _declarations.resolve_indicators(ctx, geometry.shapes)
    for st in by_kind.get("domain", [])[:1]:
        geometry.domain_statement_lowered(st)
    _conditions.geometry_warnings(ctx, geometry, by_kind)
    for st in statements:
        if isinstance(st, _declarations.CONDITION_STATEMENTS):
            _conditions.condition(ctx, geometry, st)
    ctx.hard_constraints, ctx.periodic_embeddings = EnforceLowering(ctx, geometry.domain).run(
        by_kind.get("enforce", []))
    ctx.enforced = {c for h in ctx.hard_constraints for c in h.conditions} | {
        e.condition for e in ctx.periodic_embeddings}
    for st in by_kind.get("loss", []):
        _groupings.loss(ctx, st)
    for st in by_kind.get("grouping", []):
        _groupings.grouping(ctx, st)
    reports = []
    for st in by_kind.get("report", []):
        report = ReportLowering(ctx, geometry).report(st)
        if report is not None and ctx.declared_here(st.name):
            reports.append(report)
    sampling = _points.sampling(ctx, by_kind)
    reference = _points.reference(ctx, by_kind)
    test = _points.testing(ctx, by_kind, geometry.domain)
    validation = _points.validation(ctx, by_kind)
    training = _training.training(ctx, by_kind)
    causal = _training.causal(ctx, by_kind)
    if training.weights.name == "rba" and sampling.resample_every is not None:
        ctx.diag.error(by_kind["weights"][0].span, "weights rba keeps one weight per point: it needs fixed "
                       "points; add 'resample never'")
    default_grouping = _groupings.default_grouping(ctx, training)
    _groupings.usage_warnings(ctx, by_kind)
    _groupings.drop_enforced(ctx, by_kind)
    _groupings.check_balance_stop(ctx, by_kind, training, default_grouping)
    if ctx.diag.has_errors:
        return None
    return ir.Problem(
        name=problem_name,
        coordinates=tuple(ctx.coordinates),
        fields=tuple(ctx.fields),
        params=tuple(ctx.param_values),
        lets=tuple((k, v.xreplace(ctx.table_values)) for k, v in ctx.lets.items() if v is not None),
        conditions=tuple(ctx.conditions.values()),
        losses=tuple(ctx.losses.items()),
        groupings=tuple(ctx.groupings.values()),
        default_grouping=default_grouping,
        sampling=sampling,
        reference=reference,
        test=test,
        validation=validation,
        training=training,
        source_dir=ctx.base_dir,
        domain=geometry.domain,
        tables=tuple(ctx.tables.values()),
        reports=tuple(reports),
        causal=causal,
        hard_constraints=ctx.hard_constraints,
        periodic_embeddings=ctx.periodic_embeddings,
        field_coordinates=tuple((f, ctx.field_coordinates[f]) for f in ctx.fields if f in ctx.field_coordinates),
    )
