"""The syntax tree of a `.pinn` file: frozen dataclasses, each with a span.

The tree says what was written, nothing more: names are not resolved and
expressions are not simplified.  :mod:`pinnspec.lang._lower` checks the tree
and lowers it to the SymPy-level problem (:mod:`pinnspec.ir`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Union


@dataclass(frozen=True, order=True)
class Span:
    """1-based line and column of the first character, and of one past the last."""

    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"

    def text(self, source: str) -> str:
        """The source text under the span (lines joined by one space)."""
        lines = source.splitlines()
        if self.line == self.end_line:
            return lines[self.line - 1][self.column - 1: self.end_column - 1]
        parts = [lines[self.line - 1][self.column - 1:]] + lines[self.line: self.end_line - 1]
        parts.append(lines[self.end_line - 1][: self.end_column - 1])
        return " ".join(p.strip() for p in parts)


class Node:
    """Base of every tree node (each is a frozen dataclass with a ``span``)."""

    span: Span

    def children(self):
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        yield item

    def walk(self):
        """This node and every node below it, depth first (without recursion: trees of any depth)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children())))


@dataclass(frozen=True)
class Ident(Node):
    """A name as written where something is declared or referred to."""

    name: str
    span: Span


# ------------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Number(Node):
    text: str
    span: Span

    @property
    def value(self) -> float:
        return float(self.text)


@dataclass(frozen=True)
class Name(Node):
    id: str
    span: Span


@dataclass(frozen=True)
class String(Node):
    value: str
    span: Span


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # one of + - * / ^
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass(frozen=True)
class Neg(Node):
    operand: "Expr"
    span: Span


@dataclass(frozen=True)
class KeywordArg(Node):
    name: Ident
    value: "Expr"
    span: Span


@dataclass(frozen=True)
class Call(Node):
    func: Ident
    args: tuple["Expr", ...]
    kwargs: tuple[KeywordArg, ...]
    span: Span
    bare: bool = False  # written as a bare name (`surgery pcgrad`), not a call


@dataclass(frozen=True)
class TupleExpr(Node):
    items: tuple["Expr", ...]
    span: Span


@dataclass(frozen=True)
class Duration(Node):
    """A wall time as a setting's value: ``10 min`` (a number and its unit, checked where it is used)."""

    amount: Number
    unit: Ident
    span: Span


Expr = Union[Number, Name, String, BinOp, Neg, Call, TupleExpr, Duration]


# ------------------------------------------------------------------ statements


@dataclass(frozen=True)
class Statement(Node):
    """Base of statements; ``keyword`` is the leading keyword as written."""

    @property
    def keyword(self) -> str:
        return _KEYWORDS[type(self)]


@dataclass(frozen=True)
class Problem(Statement):
    name: Ident
    span: Span


@dataclass(frozen=True)
class Let(Statement):
    name: Ident
    value: Expr
    span: Span


@dataclass(frozen=True)
class Param(Statement):
    name: Ident
    value: Number
    negative: bool
    span: Span

    @property
    def initial(self) -> float:
        return -self.value.value if self.negative else self.value.value


@dataclass(frozen=True)
class Interval(Node):
    name: Ident
    lo: Expr
    hi: Expr
    span: Span


@dataclass(frozen=True)
class Space(Statement):
    intervals: tuple[Interval, ...]
    span: Span


@dataclass(frozen=True)
class Time(Statement):
    interval: Interval
    span: Span


@dataclass(frozen=True)
class Fields(Statement):
    names: tuple[Ident, ...]
    span: Span
    #: per name, the coordinates it depends on as written (``field a(x, y)``), or None: every coordinate
    arguments: tuple[tuple[Ident, ...] | None, ...] = ()


# ------------------------------------------------------------------ geometry


@dataclass(frozen=True)
class ShapeDecl(Statement):
    """``shape NAME = PRIMITIVE(...)``: a named primitive (box, interval, disk, ball, polygon, halfspace)."""

    name: Ident
    call: Call
    span: Span


@dataclass(frozen=True)
class ShapeRef(Node):
    """A shape named in a domain expression (a declared shape, or the built-in ``box``)."""

    name: Ident
    span: Span


@dataclass(frozen=True)
class ShapeOp(Node):
    """``left OP right`` in a domain expression: ``+`` union, ``-`` difference, ``&`` intersection."""

    op: str
    left: "ShapeExpr"
    right: "ShapeExpr"
    span: Span


ShapeExpr = Union[ShapeRef, ShapeOp]


@dataclass(frozen=True)
class DomainDecl(Statement):
    """``domain NAME = SHAPE_EXPR``: the region the equations hold on."""

    name: Ident
    expr: ShapeExpr
    span: Span


@dataclass(frozen=True)
class Relation(Node):
    """``lhs = rhs``: the residual is ``lhs - rhs``."""

    lhs: Expr
    rhs: Expr
    span: Span


@dataclass(frozen=True)
class Equation(Statement):
    name: Ident
    relation: Relation
    span: Span


@dataclass(frozen=True)
class Initial(Statement):
    name: Ident
    relations: tuple[Relation, ...]
    span: Span


@dataclass(frozen=True)
class Face(Node):
    coordinate: Ident
    value: Expr
    span: Span


@dataclass(frozen=True)
class Selector(Node):
    """``on boundary`` (faces empty, whole=True), ``on x = -1, x = 1`` (faces of the space box)
    and/or ``on hole1, box`` (the parts of the domain's boundary on those shapes)."""

    faces: tuple[Face, ...]
    whole: bool
    span: Span
    shapes: tuple[Ident, ...] = ()


@dataclass(frozen=True)
class Boundary(Statement):
    name: Ident
    selector: Selector
    relations: tuple[Relation, ...]
    span: Span


@dataclass(frozen=True)
class Periodic(Statement):
    name: Ident
    coordinate: Ident
    exprs: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True)
class Data(Statement):
    name: Ident
    path: String
    fields: tuple[Ident, ...]
    span: Span
    options: tuple[tuple[Ident, Number], ...] = ()  # `noise = 0.1`


@dataclass(frozen=True)
class Pool(Node):
    members: tuple[Ident, ...]
    span: Span


@dataclass(frozen=True)
class LossTerm(Node):
    weight: Number | None
    target: Ident | Pool
    span: Span


@dataclass(frozen=True)
class Loss(Statement):
    name: Ident
    terms: tuple[LossTerm, ...]
    span: Span


@dataclass(frozen=True)
class GroupEntry(Node):
    terms: tuple[LossTerm, ...]
    span: Span


@dataclass(frozen=True)
class Grouping(Statement):
    name: Ident
    entries: tuple[GroupEntry, ...]
    span: Span


@dataclass(frozen=True)
class PointCount(Node):
    name: Ident
    count: Number
    span: Span


@dataclass(frozen=True)
class Points(Statement):
    counts: tuple[PointCount, ...]
    span: Span


@dataclass(frozen=True)
class Sampler(Statement):
    call: Call
    span: Span


@dataclass(frozen=True)
class Resample(Statement):
    every: Number | None  # None: `resample never`
    span: Span


@dataclass(frozen=True)
class Exact(Statement):
    relations: tuple[Relation, ...]
    span: Span


@dataclass(frozen=True)
class Reference(Statement):
    call: Call | None
    path: String | None
    span: Span


@dataclass(frozen=True)
class Test(Statement):
    count: Number | None
    grid: tuple[Number, ...] | None
    span: Span
    uniform: Number | None = None  # `test uniform N`


@dataclass(frozen=True)
class Validate(Statement):
    count: Number | None  # None: `validate test every N`
    every: Number
    span: Span


@dataclass(frozen=True)
class Report(Statement):
    """``report NAME = EXPR``: a quantity computed from the trained fields, EXPR made of
    ``integral(PART, EXPR)`` / ``mean(PART, EXPR)`` calls and constants."""

    name: Ident
    value: Expr
    span: Span


@dataclass(frozen=True)
class Setting(Statement):
    """``model``/``optimizer``/``schedule``/``surgery``/``align``/``weights``/``recipe`` CALL."""

    kind: str
    call: Call
    span: Span

    @property
    def keyword(self) -> str:
        return self.kind


@dataclass(frozen=True)
class Stage(Statement):
    """``stage CALL KEY = VALUE, ...``: one stage of training (an optimizer or ``lbfgs``, its epochs...)."""

    call: Call
    settings: tuple[KeywordArg, ...]
    span: Span


@dataclass(frozen=True)
class Causal(Statement):
    """``causal CONDITION(eps = ..., chunks = ...)`` (or ``causal none``)."""

    call: Call
    span: Span


@dataclass(frozen=True)
class Enforce(Statement):
    """``enforce CONDITION, ...``: conditions that hold by construction."""

    names: tuple[Ident, ...]
    span: Span


@dataclass(frozen=True)
class Train(Statement):
    settings: tuple[KeywordArg, ...]
    span: Span


@dataclass(frozen=True)
class SpecFile(Node):
    """A whole file: its statements, source text and file name."""

    statements: tuple[Statement, ...]
    source: str = field(repr=False, compare=False)
    filename: str = "<string>"
    span: Span = Span(1, 1, 1, 1)


_KEYWORDS = {
    Problem: "problem",
    Let: "let",
    Param: "param",
    Space: "space",
    Time: "time",
    Fields: "field",
    ShapeDecl: "shape",
    DomainDecl: "domain",
    Equation: "equation",
    Initial: "initial",
    Boundary: "boundary",
    Periodic: "periodic",
    Data: "data",
    Loss: "loss",
    Grouping: "grouping",
    Points: "points",
    Sampler: "sampler",
    Resample: "resample",
    Exact: "exact",
    Reference: "reference",
    Test: "test",
    Validate: "validate",
    Report: "report",
    Stage: "stage",
    Causal: "causal",
    Enforce: "enforce",
    Train: "train",
}

#: Words the grammar reserves: declaring one as a name is an error.
KEYWORDS = frozenset(
    set(_KEYWORDS.values())
    | {"model", "optimizer", "schedule", "surgery", "align", "weights", "recipe"}
    | {"in", "on", "from", "every", "never", "grid", "pool"}
)
