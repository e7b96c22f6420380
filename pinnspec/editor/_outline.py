"""What a spec's syntax tree declares and where each name is used: the names of the outline, of
go-to-definition and of hover (read from the tree alone, so a spec with errors still has them)."""

from __future__ import annotations

from dataclasses import dataclass

from ..lang import Span, SpecFile, syntax

#: what each statement's declaration is, in words (hover, outline)
KIND_WORDS = {
    "problem": "problem", "let": "let", "param": "param (a trainable constant)", "coordinate": "coordinate",
    "field": "field", "shape": "shape", "domain": "domain", "equation": "equation", "initial": "initial condition",
    "boundary": "boundary condition", "periodic": "periodic condition", "data": "data condition", "loss": "loss",
    "grouping": "grouping", "report": "report",
}
#: the kinds that are conditions (each has a residual and may enter losses)
CONDITION_KINDS = ("equation", "initial", "boundary", "periodic", "data")


@dataclass(frozen=True)
class Declaration:
    """A declared name: its kind (a key of `KIND_WORDS`), the span of the name and the declaring statement."""

    name: str
    kind: str
    span: Span
    statement: syntax.Statement


@dataclass(frozen=True)
class Use:
    """A name as written anywhere in the spec (declared there or referring to something)."""

    name: str
    span: Span


def declarations(tree: SpecFile) -> list[Declaration]:
    """Every name ``tree`` declares, in file order (a name declared twice appears twice)."""
    found = []
    for st in tree.statements:
        if isinstance(st, syntax.Space):
            found += [Declaration(i.name.name, "coordinate", i.name.span, st) for i in st.intervals]
        elif isinstance(st, syntax.Time):
            found.append(Declaration(st.interval.name.name, "coordinate", st.interval.name.span, st))
        elif isinstance(st, syntax.Fields):
            found += [Declaration(n.name, "field", n.span, st) for n in st.names]
        elif isinstance(getattr(st, "name", None), syntax.Ident):
            found.append(Declaration(st.name.name, st.keyword, st.name.span, st))
    return found


def uses(tree: SpecFile) -> list[Use]:
    """Every name written in ``tree`` (identifiers and names in expressions), in file order."""
    found = []
    for node in tree.walk():
        if isinstance(node, syntax.Ident):
            found.append(Use(node.name, node.span))
        elif isinstance(node, syntax.Name):
            found.append(Use(node.id, node.span))
    return sorted(found, key=lambda u: u.span)


def use_at(tree: SpecFile, line: int, column: int) -> Use | None:
    """The name under the 1-based ``line`` and ``column`` (its end counts: the cursor right after a word)."""
    for use in uses(tree):
        if use.span.line == line and use.span.column <= column <= use.span.end_column:
            return use
    return None


def conditions_in_losses(tree: SpecFile) -> dict[str, list[str]]:
    """condition (or loss) name -> the losses and groupings that name it (``loss N``, ``grouping two``), in file
    order."""
    found: dict[str, list[str]] = {}
    for st in tree.statements:
        if isinstance(st, (syntax.Loss, syntax.Grouping)):
            for node in st.walk():
                where = f"{st.keyword} {st.name.name}"
                if isinstance(node, syntax.Ident) and node is not st.name and where not in found.get(node.name, []):
                    found.setdefault(node.name, []).append(where)
    return found
