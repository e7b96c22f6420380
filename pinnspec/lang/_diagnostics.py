"""Diagnostics (errors and warnings) located in a spec, and their rendering.

Every diagnostic renders as docs/reference.md (section 14) shows::

    burgers.pinn:9:25: error: unknown field 'w' (fields are: u)
      equation burgers: u_t + w*u_x - nu*u_xx = 0
                              ^
"""

from __future__ import annotations

from dataclasses import dataclass

from ._ast import Span


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" | "warning"
    message: str
    span: Span
    filename: str = "<string>"

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def render(self, source: str | None = None) -> str:
        head = f"{self.filename}:{self.span.line}:{self.span.column}: {self.severity}: {self.message}"
        if source is None:
            return head
        lines = source.splitlines()
        if not 1 <= self.span.line <= len(lines):
            return head
        text, column = _window(lines[self.span.line - 1], self.span.column)
        # Keep tabs in the caret line so the caret sits under the right character.
        prefix = "".join(c if c == "\t" else " " for c in text[: column - 1])
        return f"{head}\n  {text}\n  {prefix}^"


#: the most characters of a source line a diagnostic shows (a generated spec's lines can be 100,000 long)
SHOWN_LINE = 120


def _window(text: str, column: int) -> tuple[str, int]:
    """At most `SHOWN_LINE` characters of ``text`` around ``column`` (cut ends marked '...'), and the column's
    place in them."""
    if len(text) <= SHOWN_LINE:
        return text, column
    start = max(0, min(column - 1 - SHOWN_LINE // 2, len(text) - SHOWN_LINE))
    shown = text[start:start + SHOWN_LINE]
    before, after = ("..." if start > 0 else ""), ("..." if start + SHOWN_LINE < len(text) else "")
    return before + shown + after, column - start + len(before)


class SpecError(Exception):
    """A spec with one or more errors.

    ``line``, ``column`` and ``message`` describe the first error;
    ``diagnostics`` holds every error (and warning) found; ``str()`` is the
    rendered text of all errors.
    """

    def __init__(self, diagnostics: list[Diagnostic], source: str | None = None):
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.severity != "error", d.span))
        self.errors = [d for d in self.diagnostics if d.severity == "error"]
        if not self.errors:
            raise ValueError("SpecError needs at least one error")
        self.source = source
        first = self.errors[0]
        self.line = first.line
        self.column = first.column
        self.message = first.message
        self.filename = first.filename
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.errors)

    def __str__(self) -> str:
        return self.render()


class Collector:
    """Collects diagnostics while checking, so that all are reported at once."""

    def __init__(self, filename: str, source: str):
        self.filename = filename
        self.source = source
        self.items: list[Diagnostic] = []

    def error(self, span: Span, message: str) -> None:
        self.items.append(Diagnostic("error", message, span, self.filename))

    def warning(self, span: Span, message: str) -> None:
        self.items.append(Diagnostic("warning", message, span, self.filename))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "warning"]

    def raise_if_errors(self) -> None:
        if self.has_errors:
            raise SpecError(self.items, self.source)
