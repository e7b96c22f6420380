"""Readable renderings of the syntax tree and the problem IR (``pinnspec show``)."""

from __future__ import annotations

from dataclasses import fields

import sympy
from sympy.printing.str import StrPrinter

from .. import ir
from . import _ast as A


# ------------------------------------------------------------------ AST


def _leaf(node: A.Node) -> str | None:
    """A node shown without its children, or None."""
    if isinstance(node, A.Number):
        return node.text
    if isinstance(node, A.Name):
        return node.id
    if isinstance(node, A.String):
        return f'"{node.value}"'
    if isinstance(node, A.Call) and node.bare:
        return node.func.name
    if isinstance(node, A.Ident):
        return node.name
    if isinstance(node, A.ShapeRef):
        return node.name.name
    if isinstance(node, A.Duration):
        return f"(duration {node.amount.text} {node.unit.name})"
    return None


def _parts(node: A.Node) -> tuple[str, tuple, str, str, str]:
    """(head, children, tail, before each child, between children) of a node with children."""
    if isinstance(node, A.Neg):
        return "(neg ", (node.operand,), ")", "", ""
    if isinstance(node, (A.BinOp, A.ShapeOp)):
        return f"({node.op} ", (node.left, node.right), ")", "", " "
    if isinstance(node, A.TupleExpr):
        return "(tuple ", node.items, ")", "", " "
    if isinstance(node, A.KeywordArg):
        return f"{node.name.name}=", (node.value,), "", "", ""
    if isinstance(node, A.Call):
        return f"({node.func.name}", tuple(node.args) + tuple(node.kwargs), ")", " ", ""
    raise TypeError(type(node))


def _sexpr(root: A.Node) -> str:
    """An expression as a fully parenthesised prefix form: shows how it parsed (without recursion: expressions
    may nest thousands deep)."""
    shown: dict[int, str] = {}
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        leaf = _leaf(node)
        if leaf is not None:
            shown[id(node)] = leaf
            continue
        head, children, tail, before, between = _parts(node)
        if children_done:
            shown[id(node)] = head + between.join(before + shown[id(c)] for c in children) + tail
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return shown[id(root)]


_EXPR_TYPES = (A.Number, A.Name, A.String, A.Neg, A.BinOp, A.TupleExpr, A.Call, A.KeywordArg, A.Ident,
               A.ShapeRef, A.ShapeOp, A.Duration)


def format_ast(tree: A.SpecFile) -> str:
    lines: list[str] = []

    def dump(node: A.Node, indent: int, label: str = ""):
        pad = "  " * indent
        prefix = f"{label}: " if label else ""
        if isinstance(node, _EXPR_TYPES):
            lines.append(f"{pad}{prefix}{_sexpr(node)}  @{node.span}")
            return
        lines.append(f"{pad}{prefix}{type(node).__name__}  @{node.span}")
        for f in fields(node):  # type: ignore[arg-type]
            if f.name == "span":
                continue
            value = getattr(node, f.name)
            if isinstance(value, A.Node):
                dump(value, indent + 1, f.name)
            elif isinstance(value, tuple) and value and isinstance(value[0], A.Node):
                for i, item in enumerate(value):
                    dump(item, indent + 1, f"{f.name}[{i}]")
            elif isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):  # `field a(x, y)`'s lists
                shown = ", ".join("-" if v is None else "(" + ", ".join(i.name for i in v) + ")" for v in value)
                lines.append(f"{pad}  {f.name}: {shown}")
            elif value is not None and value != ():
                lines.append(f"{pad}  {f.name}: {value!r}")

    lines.append(f"SpecFile {tree.filename}")
    for st in tree.statements:
        dump(st, 1)
    return "\n".join(lines)


# ------------------------------------------------------------------ IR


class MathPrinter(StrPrinter):
    """SymPy -> the spec's own notation: u(x, t) -> u, d2u/dx2 -> u_xx."""

    def _print_Derivative(self, expr):
        inner = expr.expr
        if isinstance(inner, sympy.core.function.AppliedUndef):
            suffix = "".join(str(v) * int(n) for v, n in expr.variable_count)
            return f"{inner.func.__name__}_{suffix}"
        variables = ", ".join(str(v) for v, n in expr.variable_count for _ in range(int(n)))
        return f"d({self._print(inner)}, {variables})"

    def _print_Function(self, expr):
        if isinstance(expr, sympy.core.function.AppliedUndef):
            return expr.func.__name__
        return super()._print_Function(expr)

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Heaviside(self, expr):
        return f"heaviside({self._print(expr.args[0])})"


def math(expr) -> str:
    return MathPrinter().doprint(expr).replace("**", "^")


def format_ir(problem: ir.Problem) -> str:
    out = [f"problem {problem.name}"]
    coords = ", ".join(f"{c.name} in [{c.lo:g}, {c.hi:g}]" + (" (time)" if c.is_time else "") for c in problem.coordinates)
    out.append(f"  coordinates: {coords}")
    if problem.domain is not None:
        out.append(f"  domain {problem.domain.name} = {problem.domain.expression}")
        for name, text in problem.domain.shapes:
            out.append(f"    shape {name} = {text}")
    restricted = dict(problem.field_coordinates)
    out.append("  fields: " + ", ".join(f"{f}({', '.join(restricted[f])})" if f in restricted else f
                                        for f in problem.fields))
    if problem.params:
        out.append("  params: " + ", ".join(f"{n} = {v:g}" for n, v in problem.params))
    tables = {t.name: t for t in problem.tables}
    for name, value in problem.lets:
        out.append(f"  let {name} = {tables[name] if name in tables else math(value)}")
    out.append("conditions")
    for c in problem.conditions:
        n = problem.sampling.count(c.name)
        points = f", {n} points" if n is not None else ""
        out.append(f"  {c.name} [{c.kind}] on {c.region}{points}")
        if c.face_residuals:
            for face, residuals in zip(c.region.faces, c.face_residuals):
                for r in residuals:
                    out.append(f"    at {face}: {_residual_text(c, r)}")
        else:
            for r in c.residuals:
                out.append(f"    {_residual_text(c, r)}")
    out.append("losses")
    for name, loss in problem.losses:
        out.append(f"  {name} = {loss}")
    out.append("groupings")
    for g in problem.groupings:
        mark = "  (default)" if g.name == problem.default_grouping else ""
        tasks = ", ".join(f"{label}" for label in g.labels)
        out.append(f"  {g.name}: m = {g.m}, tasks [{tasks}]{mark}")
        for i, t in enumerate(g.tasks):
            out.append(f"    task {i}: {t}")
    if problem.reports:
        out.append("reports")
        for report in problem.reports:
            labels = {i.symbol: sympy.Symbol(f"[{k + 1}]") for k, i in enumerate(report.integrals)}
            out.append(f"  {report.name} = {math(report.value.xreplace(labels))}")
            for k, integral in enumerate(report.integrals):
                out.append(f"    [{k + 1}] {integral}: {math(integral.integrand)}")
    s = problem.sampling
    resample = "never" if s.resample_every is None else f"every {s.resample_every} epoch(s)"
    out.append(f"sampling: {s.sampler}, resample {resample}")
    if problem.reference is not None:
        if isinstance(problem.reference, ir.ExactReference):
            out.append("reference: exact")
            for f, e in problem.reference.solution:
                out.append(f"  {f} = {math(e)}")
        elif isinstance(problem.reference, ir.GeneratedReference):
            out.append(f"reference: {problem.reference.generator}")
        else:
            out.append(f'reference: file "{problem.reference.path}"')
    else:
        out.append("reference: none")
    out.append(f"test: {problem.test}")
    out.append(f"validate: {problem.validation}")
    t = problem.training
    out.append("training")
    for kind in ("model", "schedule", "surgery", "align") if t.stages else ("model", "optimizer", "schedule",
                                                                              "surgery", "align"):
        out.append(f"  {kind} {getattr(t, kind)}")
    if t.weights.name != "none":  # shown where a spec weights its tasks
        out.append(f"  weights {t.weights}")
    for causal in problem.causal:
        out.append(f"  {causal}")
    if problem.enforced:
        out.append(f"  enforce {', '.join(problem.enforced)} (by construction; not in any task)")
        out.extend(f"    {item}" for item in problem.hard_constraints + problem.periodic_embeddings)
    for i, stage in enumerate(t.stages):
        out.append(f"  stage {i + 1}: {stage}")
    if t.settings:
        out.append("  train " + ", ".join(f"{k} = {v}" for k, v in t.settings))
    return "\n".join(out)


def _residual_text(condition: ir.Condition, residual) -> str:
    if condition.kind == "periodic":
        r = condition.region
        return f"[{math(residual)}] at {r.coordinate} = {r.lo:g} minus at {r.coordinate} = {r.hi:g}"
    return f"{math(residual)} = 0"
