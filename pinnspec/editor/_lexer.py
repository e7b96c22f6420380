"""A Pygments lexer for `.pinn` files, registered under Pygments' entry point ``pygments.lexers`` (so
```` ```pinn ```` blocks of Markdown, Sphinx and notebooks highlight, and ``pygmentize -l pinn`` works).

The tokens follow the grammar (pinnspec/grammar/pinnspec.lark): a regular expression per terminal (NAME, NUMBER,
STRING, COMMENT, the operators and brackets), then each name is given its kind from where it stands:

* ``Keyword``: a statement's opening word (``equation``, ``loss``, ``surgery``, ...) and the grammar's other
  words (``in``, ``on``, ``from``, ``every``, ``never``, ``grid``, ``uniform``, ``boundary`` after ``on``);
* ``Name.Variable``: a name a statement declares (``let nu``, ``field u, v``, ``space x in ...``,
  ``boundary walls``);
* ``Name.Builtin``: a function an expression may call (``sin``, ``lap``, registered functions) and what a
  setting statement names (``surgery config``, ``model mlp(...)``, ``shape hole = disk(...)``);
* ``Name.Function``: any other called name; ``Name.Attribute``: a keyword argument or setting
  (``lr = 1e-3``, ``epochs = 500``); ``Name.Constant``: ``pi`` and ``e``; ``Name``: the rest.

The names come from :func:`pinnspec.editor.vocabulary` (the grammar, the catalog, the registries), read at the
first text lexed.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from ._vocabulary import DECLARING, vocabulary

__all__ = ["PinnLexer"]

_SKIPPED = (Whitespace, Comment.Single)
#: the statements whose ``KEY = VALUE`` entries at the top level are settings (not relations)
_SETTINGS_AT_TOP = ("train", "stage", "data")
#: the statements whose top-level names after the keyword and after each comma are declarations
_LISTS = ("field", "space")


class PinnLexer(RegexLexer):
    """The `.pinn` language of pinnspec."""

    name = "pinnspec"
    aliases = ["pinn", "pinnspec"]
    filenames = ["*.pinn"]
    mimetypes = ["text/x-pinn"]
    url = "https://github.com/pinnspec/pinnspec"

    tokens = {
        "root": [
            (r"[ \t\f\r\n]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r'"[^"\n]*"', String.Double),
            (r"(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"\*\*|[-+*/^&=]", Operator),
            (r"[()\[\],:]", Punctuation),
        ],
    }

    def get_tokens_unprocessed(self, text, stack=("root",)):
        tokens = list(super().get_tokens_unprocessed(text, stack))
        words = vocabulary()
        keywords = frozenset(words.statement_keywords) | frozenset(words.other_keywords)
        depth, statement, previous = 0, None, None  # open brackets; the statement's keyword; last token's text
        for i, (index, token, value) in enumerate(tokens):
            if token in _SKIPPED:
                if depth == 0 and "\n" in value:
                    statement, previous = None, None
                yield index, token, value
                continue
            if token is Punctuation and value in "([":
                depth += 1
            elif token is Punctuation and value in ")]":
                depth = max(depth - 1, 0)
            elif token is Name:
                following = _following(tokens, i)
                if statement is None:
                    statement = value
                    token = Keyword if value in words.statement_keywords else Name
                else:
                    token = _kind(value, statement, previous, following, depth, words, keywords)
            yield index, token, value
            previous = value


def _following(tokens, i: int) -> str | None:
    """The text of the next token that is not a space or a comment."""
    for _, token, value in tokens[i + 1:]:
        if token not in _SKIPPED:
            return value
    return None


def _kind(word: str, statement: str, previous: str | None, following: str | None, depth: int, words,
          keywords: frozenset[str]):
    """The token kind of a name that does not open its statement."""
    if depth == 0 and (previous == statement or (statement in _LISTS and previous == ",")):
        if statement in DECLARING:
            return Name.Variable
        if statement in words.calls:
            return Name.Builtin if word in words.calls[statement] else Name
    if following == "(":
        return Name.Builtin if word in words.functions or word in words.calls.get(statement, ()) else Name.Function
    if following == "=" and (depth > 0 or statement in _SETTINGS_AT_TOP):
        return Name.Attribute
    if previous == "=" or word not in keywords:
        return Name.Constant if word in words.constants else Name
    return Keyword
