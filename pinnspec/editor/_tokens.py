"""The tokens of a `.pinn` text with the kind of each name by where it stands: what the Pygments lexer colours
and what the language server reads the context of a completion from.  Works on any text (a half-typed statement
too): the grammar's terminals (pinnspec/grammar/pinnspec.lark) by regular expressions, anything else one
``error`` character.

Kinds: ``keyword`` (a statement's opening word and the grammar's other words: ``in``, ``on``, ``from``,
``every``, ``never``, ``grid``, ``uniform``, ``boundary`` after ``on``, ``test`` after ``validate``),
``declaration`` (a name a statement declares: ``let nu``, ``field u, v``, ``space x in ...``), ``builtin`` (a
function an expression may call, what a setting statement names: ``surgery config``, ``disk(...)``),
``function`` (any other called name), ``argument`` (a keyword argument or setting: ``lr = 1e-3``), ``constant``
(``pi``, ``e``), ``name``; ``float``, ``integer``, ``string``, ``comment``, ``operator``, ``punctuation``,
``space`` and ``error``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._vocabulary import DECLARING, Vocabulary, vocabulary

_TERMINALS = re.compile(r"""
    (?P<space>[ \t\f\r\n]+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"[^"\n]*")
  | (?P<float>(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<integer>\d+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<operator>\*\*|[-+*/^&=])
  | (?P<punctuation>[()\[\],:])
""", re.X)
_SKIPPED = ("space", "comment")
#: the statements whose ``KEY = VALUE`` entries at the top level are settings (not relations)
_SETTINGS_AT_TOP = ("train", "stage", "data")
#: the statements whose top-level names after the keyword and after each comma are declarations
_LISTS = ("field", "space")


@dataclass(frozen=True)
class Token:
    """A piece of the text: its offset, kind, text, the statement it belongs to (its opening word; None for
    spaces and comments between statements) and how many brackets are open before it."""

    offset: int
    kind: str
    text: str
    statement: str | None
    depth: int


def tokens(text: str, words: Vocabulary | None = None) -> list[Token]:
    """Every token of ``text``, in order; their texts joined are ``text``."""
    words = words or vocabulary()
    keywords = frozenset(words.statement_keywords) | frozenset(words.other_keywords)
    raw = _terminals(text)
    found = []
    depth, statement, previous = 0, None, None  # open brackets; the statement's keyword; the last token's text
    for i, (offset, kind, value) in enumerate(raw):
        if kind in _SKIPPED:
            if depth == 0 and "\n" in value:
                statement, previous = None, None
            found.append(Token(offset, kind, value, statement, depth))
            continue
        before = depth
        if kind == "punctuation" and value in "([":
            depth += 1
        elif kind == "punctuation" and value in ")]":
            depth = max(depth - 1, 0)
        elif kind == "name":
            if statement is None:
                statement = value
                kind = "keyword" if value in words.statement_keywords else "name"
            else:
                kind = _kind(value, statement, previous, _following(raw, i), before, words, keywords)
        found.append(Token(offset, kind, value, statement, before))
        previous = value
    return found


def _terminals(text: str) -> list[tuple[int, str, str]]:
    found, at = [], 0
    while at < len(text):
        match = _TERMINALS.match(text, at)
        if match is None:
            found.append((at, "error", text[at]))
            at += 1
            continue
        found.append((at, match.lastgroup, match.group()))
        at = match.end()
    return found


def _following(raw, i: int) -> str | None:
    """The text of the next token that is not a space or a comment."""
    for _, kind, value in raw[i + 1:]:
        if kind not in _SKIPPED:
            return value
    return None


def _kind(word: str, statement: str, previous: str | None, following: str | None, depth: int, words: Vocabulary,
          keywords: frozenset[str]) -> str:
    """The kind of a name that does not open its statement."""
    if depth == 0 and (previous == statement or (statement in _LISTS and previous == ",")):
        if statement in DECLARING:
            return "declaration"
        if statement in words.calls:
            return "builtin" if word in words.calls[statement] else "name"
    if following == "(":
        return "builtin" if word in words.functions or word in words.calls.get(statement, ()) else "function"
    if following == "=" and (depth > 0 or statement in _SETTINGS_AT_TOP):
        return "argument"
    if previous == "=" or word not in keywords:
        return "constant" if word in words.constants else "name"
    return "keyword"
