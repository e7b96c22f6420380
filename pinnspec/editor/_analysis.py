"""One `.pinn` text as the language server sees it: its diagnostics (those of `pinnspec check`), and the
answers to hover, completion, go-to-definition and document symbols, at 1-based lines and columns (code points).

The syntax tree answers where names are declared and used; the checked problem (when the text has no errors)
adds what the checks resolved: a ``let``'s SymPy form, a condition's residuals, a setting's call with its
defaults."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .. import catalog
from ..lang import Diagnostic, Span, Spec, SpecError, SpecFile, grammar_text, loads, parse, syntax
from ._outline import CONDITION_KINDS, KIND_WORDS, Declaration, Use, conditions_in_losses, declarations, use_at
from ._tokens import tokens
from ._vocabulary import signature, vocabulary

#: the statements whose resolved call the checked problem holds: statement -> where in ``ir.Problem``
_RESOLVED = {**{kind: ("training", kind) for kind in ("model", "optimizer", "schedule", "surgery", "align",
                                                        "weights")},
             "sampler": ("sampling", "sampler")}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # keyword | declaration kind (field, let, ...) | function | builtin | argument | constant | choice
    detail: str = ""


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # a key of KIND_WORDS
    span: Span  # the declaring statement's
    name_span: Span
    detail: str


@dataclass
class Analysis:
    """A text, its syntax tree (of its statements that parse: `_tolerant_tree`), its checked spec (None where
    it has errors) and every diagnostic of `pinnspec check`."""

    text: str
    path: str
    tree: SpecFile
    spec: Spec | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    # ------------------------------------------------------------------ hover

    def hover(self, line: int, column: int) -> str | None:
        """Markdown about the word at ``line``, ``column``: a declared name, a derivative of a field, a statement's
        keyword, a function, a registered name or a keyword argument; None elsewhere."""
        word = _word_at(self.text, line, column)
        if word is None:
            return None
        text, start = word
        statement = self._statement_at(line, start)
        if statement is not None and (statement.span.line, statement.span.column) == (line, start):
            return self._statement_hover(statement)
        use = use_at(self.tree, line, column)
        found = self._declaration(use) if use is not None else None
        if found is not None:
            return self._declaration_hover(found)
        if statement is not None:
            called = self._called_hover(statement, text, line, start)
            if called is not None:
                return called
        if text in vocabulary().functions:
            sig, what = vocabulary().functions[text]
            return f"(function) `{text}`\n\n{_code(sig)}\n\n{what}"
        if text in vocabulary().constants:
            return f"`{text}`: the constant {vocabulary().constants[text]}"
        derivative = self._derivative(text)
        if derivative is not None:
            fld, by = derivative
            return f"`{text}`: the derivative of the field `{fld}`" + (f" by {', '.join(by)}" if by else "")
        return None

    def _declaration_hover(self, found: Declaration) -> str:
        words = KIND_WORDS[found.kind]
        parts = [f"({words}) `{found.name}`", _code(_statement_text(self.text, found.statement.span))]
        problem = self.spec.ir if self.spec is not None else None
        if found.kind == "let" and problem is not None and found.name in dict(problem.lets):
            parts.append(f"SymPy: `{dict(problem.lets)[found.name]}`")
        if found.kind == "field" and problem is not None:
            coordinates = dict(problem.field_coordinates).get(found.name, [c.name for c in problem.coordinates])
            parts.append(f"`{found.name}({', '.join(coordinates)})`")
        if found.kind in CONDITION_KINDS and problem is not None:
            condition = next((c for c in problem.conditions if c.name == found.name), None)
            if condition is not None:
                parts.append(f"on {condition.region}; residual" + ("s" if len(condition.residuals) > 1 else "")
                             + ": " + ", ".join(f"`{r}`" for r in condition.residuals))
        if found.kind in CONDITION_KINDS + ("loss",):
            used = conditions_in_losses(self.tree).get(found.name)
            parts.append(f"in: {', '.join(used)}" if used else "in no loss or grouping")
        return "\n\n".join(parts)

    def _statement_hover(self, statement) -> str:
        keyword = statement.keyword
        parts = [f"(statement) `{keyword}`", _code(_grammar_rule(keyword))]
        if keyword in _RESOLVED and self.spec is not None:
            section, attribute = _RESOLVED[keyword]
            call = getattr(getattr(self.spec.ir, section), attribute)
            parts.append(f"resolved: `{keyword} {call}`")
        return "\n\n".join(parts)

    def _called_hover(self, statement, text: str, line: int, start: int) -> str | None:
        """A registered name a setting statement calls, or one of its keyword arguments."""
        calls = vocabulary().calls.get(statement.keyword, {})
        for node in statement.walk():
            if isinstance(node, syntax.Call) and (node.func.span.line, node.func.span.column) == (line, start):
                if text in calls:
                    return f"({statement.keyword}) `{text}`\n\n{_code(signature(text, calls[text]))}"
            if isinstance(node, syntax.Call) and node.func.name in calls:
                for kw in node.kwargs:
                    if (kw.name.span.line, kw.name.span.column) == (line, start):
                        arguments = calls[node.func.name]
                        if text in arguments:
                            return f"`{text}`: an argument of `{node.func.name}` ({_default(arguments[text])})"
        settings = vocabulary().settings.get(statement.keyword, {})
        if text in settings:
            return f"`{text}`: a setting of `{statement.keyword}` ({_default(settings[text])})"
        return None

    # ------------------------------------------------------------------ definition, symbols

    def definition(self, line: int, column: int) -> Span | None:
        """The span of the declaration of the name at ``line``, ``column`` (a derivative's field), or None."""
        use = use_at(self.tree, line, column)
        if use is None:
            return None
        found = self._declaration(use)
        derivative = self._derivative(use.name) if found is None else None
        if derivative is not None:
            found = self._declaration(Use(derivative[0], use.span))
        return found.span if found is not None else None

    def symbols(self) -> list[Symbol]:
        """Every declaration, in file order, for an outline."""
        return [Symbol(d.name, d.kind, d.statement.span, d.span,
                       _statement_text(self.text, d.statement.span).splitlines()[0].strip())
                for d in declarations(self.tree)]

    # ------------------------------------------------------------------ completion

    def completions(self, line: int, column: int) -> list[Completion]:
        """What may be written at ``line``, ``column`` (from the text before it, parsed or not)."""
        found = tokens(self.text[: _offset(self.text, line, column)])
        if found and found[-1].kind not in ("space", "comment", "operator", "punctuation", "error", "string"):
            found = found[:-1]  # the word being typed
        mine = []  # the significant tokens of the statement being written
        for t in found:
            if t.kind not in ("space", "comment"):
                mine.append(t)
            elif t.depth == 0 and "\n" in t.text:
                mine = []
        if not mine:
            return [Completion(k, "keyword") for k in vocabulary().statement_keywords]
        statement = mine[0].text
        return self._in_statement(statement, mine)

    def _in_statement(self, statement: str, mine) -> list[Completion]:
        words = vocabulary()
        last = mine[-1]
        call = _open_call(mine)
        calls = words.calls.get(statement, {})
        if statement == "causal" and call is not None:
            calls = {call: words.calls["causal"][""]}
        if call is not None and call in calls:
            if last.text == "=":
                return self._values(statement, call, mine[-2].text if len(mine) > 1 else "")
            return [Completion(a, "argument", _default(d)) for a, d in calls[call].items()]
        if len(mine) == 1 and any(calls):  # right after the keyword: what the statement may name
            return [Completion(n, "builtin", signature(n, a)) for n, a in calls.items()]
        closed = last.depth - (last.kind == "punctuation" and last.text in ")]") == 0
        if statement in words.settings and closed and (len(mine) == 1 and statement == "train"
                                                       or last.text in (",", ")")):
            return [Completion(k, "argument", _default(d)) for k, d in words.settings[statement].items()]
        return self._names()

    def _values(self, statement: str, call: str, argument: str) -> list[Completion]:
        choices = catalog.CHOICES.get((statement, call, argument)) or catalog.CHOICES.get(("optimizer", call, argument))
        if choices:
            return [Completion(c, "choice") for c in choices]
        return self._names()

    def _names(self) -> list[Completion]:
        """The declared names, the functions and the constants."""
        words = vocabulary()
        found = {}
        for t in tokens(self.text):  # the text's declarations, whether or not it parses (it is being typed)
            if t.kind == "declaration" and t.statement != "problem":  # nothing refers to the problem's name
                kind = "coordinate" if t.statement in ("space", "time") else t.statement
                found.setdefault(t.text, Completion(t.text, kind, KIND_WORDS[kind]))
        for name, (sig, _) in words.functions.items():
            found.setdefault(name, Completion(name, "function", sig))
        for name, value in words.constants.items():
            found.setdefault(name, Completion(name, "constant", value))
        return list(found.values())

    # ------------------------------------------------------------------ helpers

    def _declaration(self, use: Use) -> Declaration | None:
        """The declaration ``use`` is (its own span) or names: a spec may name its problem as one of its
        conditions, and a name used refers to the condition."""
        named = [d for d in declarations(self.tree) if d.name == use.name]
        return next((d for d in named if d.span == use.span), None) or next(
            (d for d in named if d.kind != "problem"), named[0] if named else None)

    def _derivative(self, name: str) -> tuple[str, list[str]] | None:
        """(field, coordinates) of a name like ``u_xt`` (a field, an underscore, coordinate names)."""
        head, _, tail = name.partition("_")
        declared = {d.name: d.kind for d in declarations(self.tree)}
        if declared.get(head) != "field" or not tail:
            return None
        coordinates = sorted((n for n, k in declared.items() if k == "coordinate"), key=len, reverse=True)
        by = []
        while tail:
            match = next((c for c in coordinates if tail.startswith(c)), None)
            if match is None:
                return head, []
            by.append(match)
            tail = tail[len(match):]
        return head, by

    def _statement_at(self, line: int, column: int):
        for st in self.tree.statements:
            if (st.span.line, st.span.column) <= (line, column) < (st.span.end_line, st.span.end_column):
                return st
        return None


def analyze(text: str, path: str, *, files: bool = False) -> Analysis:
    """Check ``text`` as `pinnspec check` checks the file at ``path`` (relative data and reference files resolve
    against its folder).  ``files``: also read the reference and data files for rows outside the domain
    (`check` does; the server does it on open and save, not at each change)."""
    found = Analysis(text, path, _tolerant_tree(text, path))
    try:
        found.spec = loads(text, filename=path, base_dir=os.path.dirname(os.path.abspath(path)))
    except SpecError as err:
        found.diagnostics = list(err.diagnostics)
        return found
    found.diagnostics = list(found.spec.warnings)
    if files and found.spec.ir.domain is not None:
        from ..sampling import files_outside_domain  # numpy only

        found.diagnostics += [Diagnostic("warning", message, _file_statement(found.tree, message), path)
                              for message in files_outside_domain(found.spec.ir)]
    return found


def _tolerant_tree(text: str, path: str) -> SpecFile:
    """The syntax tree of ``text``; where it does not parse (a statement being typed), the tree of the
    statements that parse on their own, each from a line that opens with a statement keyword to the next
    such line, in their places."""
    try:
        return parse(text, path)
    except SpecError:
        pass
    lines = text.split("\n")
    keywords = vocabulary().statement_keywords
    starts = [i for i, line in enumerate(lines) if (_WORD.match(line.lstrip()) or [None])[0] in keywords]
    statements = []
    for first, end in zip(starts, starts[1:] + [len(lines)]):
        try:  # padded with the lines before it: its spans are the text's
            statements += parse("\n" * first + "\n".join(lines[first:end]), path).statements
        except SpecError:
            continue
    return SpecFile(tuple(statements), text, path)


def _file_statement(tree: SpecFile, message: str):
    """The span of the statement a files-outside-the-domain message is about: the data condition it names,
    else the reference."""
    for st in tree.statements:
        if isinstance(st, syntax.Data) and f"(condition '{st.name.name}')" in message:
            return st.span
    return next((st.span for st in tree.statements if isinstance(st, syntax.Reference)), tree.statements[0].span)


def _default(value) -> str:
    return "required" if value is catalog.REQUIRED else f"default {value}"


def _open_call(mine) -> str | None:
    """The name before the innermost ``(`` still open at the end of ``mine``."""
    opened = []
    for i, t in enumerate(mine):
        if t.text in "([" and t.kind == "punctuation":
            opened.append(mine[i - 1].text if t.text == "(" and i > 0 else None)
        elif t.text in ")]" and t.kind == "punctuation" and opened:
            opened.pop()
    return opened[-1] if opened else None


def _word_at(text: str, line: int, column: int) -> tuple[str, int] | None:
    """The word under (or just before) ``column`` of ``line`` and its first column."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    for match in _WORD.finditer(lines[line - 1]):
        if match.start() + 1 <= column <= match.end() + 1:
            return match.group(), match.start() + 1
    return None


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(s) for s in lines[: line - 1]) + column - 1


def _statement_text(text: str, span) -> str:
    """The lines of the statement as written (from its first character)."""
    lines = text.splitlines()[span.line - 1: span.end_line]
    lines[-1] = lines[-1][: span.end_column - 1]
    lines[0] = lines[0][span.column - 1:]
    return "\n".join(lines)


def _code(text: str) -> str:
    return f"```pinn\n{text}\n```"


def _grammar_rule(keyword: str) -> str:
    """The grammar's rule of a statement (its alternatives that open with the keyword)."""
    rules, current = [], ""
    for line in grammar_text().splitlines():
        code = line.split("//")[0].rstrip()
        head = re.match(r"\??([a-z_]+)\s*:", code)
        if head:
            current = head.group(1)
        if current.endswith("_stmt") and f'"{keyword}"' in code:
            rules.append(code.split("->")[0].strip().lstrip("|").strip())
    return "\n".join(rules)
