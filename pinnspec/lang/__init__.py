"""The .pinn language front end: text -> syntax tree -> checked problem IR.

Never imports torch.  ``load``/``loads`` parse and check a spec and return a
:class:`Spec`; a spec with errors raises :class:`SpecError`, which carries
every diagnostic (file:line:col, the line, a caret, and what to do).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import ir
from . import _ast as syntax  # the syntax tree's node classes (Let, Equation, Ident, Call, ...)
from ._ast import KEYWORDS, SpecFile, Span
from ._diagnostics import Diagnostic, SpecError
from ._expr import BUILTIN_FUNCTIONS, CONSTANTS, SPECIAL_CALLS
from ._geometry import PRIMITIVES
from ._lower import lower, spec_domain
from ._overrides import STATEMENT_KEYS, apply_overrides, flag_text, set_text, what_it_trains
from ._parser import build_parser, grammar_text, parse
from ._recipe import expand as expand_recipe
from ._show import format_ast, format_ir

__all__ = ["Spec", "SpecError", "Diagnostic", "Span", "KEYWORDS", "load", "loads", "parse",
           "grammar_text", "build_parser", "spec_domain", "apply_overrides", "what_it_trains", "STATEMENT_KEYS",
           "flag_text", "set_text", "format_ast", "format_ir",
           "BUILTIN_FUNCTIONS", "CONSTANTS", "SPECIAL_CALLS", "PRIMITIVES", "syntax"]



@dataclass(frozen=True)
class Spec:
    """A checked spec: its syntax tree, its problem IR and its warnings."""

    ast: SpecFile = field(repr=False)
    ir: ir.Problem = field(repr=False)
    warnings: tuple[Diagnostic, ...] = ()
    #: the recipe the text was expanded from, as written (``strong(time = 10 min)``); "" without one
    recipe: str = ""

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def filename(self) -> str:
        return self.ast.filename

    @property
    def source(self) -> str:
        return self.ast.source

    def render_warnings(self) -> str:
        return "\n".join(w.render(self.source) for w in self.warnings)

    def __repr__(self) -> str:
        return f"Spec({self.filename!r}, problem={self.name!r})"


def loads(text: str, filename: str = "<string>", base_dir: str | None = None) -> Spec:
    """Parse and check spec text.  Relative data/reference paths resolve against
    ``base_dir`` (default: the file's folder, else the working directory)."""
    if base_dir is None:
        base_dir = os.path.dirname(os.path.abspath(filename)) if filename != "<string>" else os.getcwd()
    spec = checked(text, filename, base_dir)
    if spec.ir.training.recipe is not None:
        spec = expand_recipe(spec, replace=False, check=lambda t: checked(t, filename, base_dir))
    return spec


def checked(text: str, filename: str, base_dir: str) -> Spec:
    """``text`` parsed and checked as it stands (a `recipe` statement is checked, not expanded)."""
    tree = parse(text, filename)
    problem, diagnostics = lower(tree, base_dir)
    diagnostics.raise_if_errors()
    assert problem is not None
    return Spec(tree, problem, tuple(diagnostics.warnings))


def load(path: str | os.PathLike) -> Spec:
    """Read, parse and check a .pinn file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise SpecError([Diagnostic("error", f"the file is not UTF-8 text ({exc.reason})", Span(1, 1, 1, 2), path)]) from None
    return loads(text, filename=path)
