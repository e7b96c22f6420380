"""The words of the `.pinn` language an editor needs: the keywords (read from the grammar), the functions an
expression may call with their signatures, and what each setting statement may name with its keyword arguments
(read from :mod:`pinnspec.catalog` and the registries, plugins included, as `check` reads them).  No torch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import catalog
from ..catalog import REQUIRED
from ..lang import BUILTIN_FUNCTIONS, CONSTANTS, PRIMITIVES, SPECIAL_CALLS, grammar_text

#: the calls with a meaning of their own: name -> (signature, what it is); `pinnspec.lang.SPECIAL_CALLS` names
#: them (a test keeps the two equal)
SPECIAL_SIGNATURES = {
    "d": ("d(u, x, ...)", "the derivative of u by x (repeat a coordinate for a higher derivative)"),
    "lap": ("lap(u)", "the Laplacian of u over the space coordinates"),
    "dn": ("dn(u)", "the outward normal derivative of u (on a boundary)"),
    "normal": ("normal(x)", "the outward unit normal's component along x (on a boundary)"),
    "pool": ("pool(a, b, ...)", "one mean over the union of the conditions' points (in a loss or grouping)"),
    "inside": ("inside(SHAPE)", "1 inside the declared shape, 0 outside (a piecewise constant by region)"),
    "table": ('table("FILE", method = linear | nearest, column = "COLUMN", at = (EXPR, ...))',
              "a coefficient read from a file of the coordinates (the whole value of a let)"),
    "integral": ("integral(PART, EXPR)", "the integral of EXPR over a part of the domain (in a report)"),
    "mean": ("mean(PART, EXPR)", "the mean of EXPR over a part of the domain (in a report)"),
}
#: the statements that declare names: the name after the keyword (and, for `field` and `space`, after each
#: top-level comma); tests/editor checks this against the syntax tree of every spec
DECLARING = ("problem", "let", "param", "space", "time", "field", "shape", "domain", "equation", "initial",
             "boundary", "periodic", "data", "loss", "grouping", "report")
#: the statements that name one registered thing, and the registry kind they name
SETTING_KINDS = ("model", "optimizer", "schedule", "surgery", "align", "sampler", "reference")


@dataclass(frozen=True)
class Vocabulary:
    """What a `.pinn` file may write, for highlighting, hover and completion."""

    #: the words that open a statement, in the grammar's order
    statement_keywords: tuple[str, ...]
    #: the other words the grammar spells out (``in``, ``on``, ``from``, ``every``, ``grid``, ...)
    other_keywords: tuple[str, ...]
    #: function name -> (signature, what it is): the math functions, the special calls, registered functions
    functions: dict[str, tuple[str, str]]
    #: constant name -> its value as SymPy prints it
    constants: dict[str, str]
    #: statement keyword (``model``, ``surgery``, ``stage``, ``weights``, ``shape``, ...) -> name it may call ->
    #: {argument: default} (`REQUIRED` where it has none)
    calls: dict[str, dict[str, dict[str, Any]]]
    #: statement keyword (``train``, ``stage``) -> its ``KEY = VALUE`` settings -> default
    settings: dict[str, dict[str, Any]]


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The vocabulary of the language as this process knows it (plugins loaded; read once)."""
    statement, other = _grammar_keywords(grammar_text())
    functions = {name: (_math_signature(name, lo, hi), f"the function {name} (SymPy's)")
                 for name, (_, lo, hi) in BUILTIN_FUNCTIONS.items()}
    functions.update(SPECIAL_SIGNATURES)
    for name, arguments in catalog.known("function").items():
        functions.setdefault(name, (signature(name, arguments), "a registered function"))
    calls = {kind: catalog.known(kind) for kind in SETTING_KINDS}
    calls["weights"] = {name: dict(args) for name, args in catalog.WEIGHTS.items()}
    calls["stage"] = {**calls["optimizer"], **{n: dict(a) for n, a in catalog.SECOND_ORDER_STAGES.items()}}
    calls["shape"] = {name: {arg: REQUIRED for arg, _ in args} for name, args in PRIMITIVES.items()}
    calls["causal"] = {"": dict(catalog.CAUSAL)}  # `causal EQUATION(eps = ..., chunks = ...)`
    settings = {"train": {k: default for k, (_, default) in catalog.TRAIN_SETTINGS.items()},
                "stage": {k: default for k, (_, default) in catalog.STAGE_SETTINGS.items()}}
    return Vocabulary(statement, other, functions, {k: str(v) for k, v in CONSTANTS.items()}, calls, settings)


def signature(name: str, arguments: dict[str, Any]) -> str:
    """``name(a, b = 1.0)``: the arguments in order, each with its default where it has one."""
    parts = [a if d is REQUIRED else f"{a} = {_value(d)}" for a, d in arguments.items()]
    return f"{name}({', '.join(parts)})"


def _value(default: Any) -> str:
    if isinstance(default, float):
        return f"{default:g}"
    if isinstance(default, tuple):
        return "(" + ", ".join(_value(v) for v in default) + ")"
    return str(default)


def _math_signature(name: str, lo: int, hi: int | None) -> str:
    """``sin(x)``, ``atan2(x1, x2)``; ``min(x1, x2, ...)`` for a function of ``lo`` or more arguments."""
    count = lo if hi is None else hi
    arguments = ["x"] if count == 1 else [f"x{i + 1}" for i in range(count)]
    return f"{name}({', '.join(arguments + ([] if hi is not None else ['...']))})"


def _grammar_keywords(grammar: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the quoted words that open a ``*_stmt`` rule's alternatives, every other quoted word), in order."""
    statement, other = [], []
    rule = ""
    for line in grammar.splitlines():
        code = line.split("//")[0]
        head = re.match(r"\??([a-z_]+)\s*:", code)
        if head:
            rule, code = head.group(1), code[head.end():]
        opening = re.match(r'\s*\|?\s*"([a-z]+)"', code)
        if rule.endswith("_stmt") and opening and opening.group(1) not in statement:
            statement.append(opening.group(1))
        for word in re.findall(r'"([a-z]+)"', code):
            if word not in statement and word not in other:
                other.append(word)
    return tuple(statement), tuple(w for w in other if w not in statement)
