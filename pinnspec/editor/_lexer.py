"""A Pygments lexer for `.pinn` files, registered under Pygments' entry point ``pygments.lexers`` (so
```` ```pinn ```` blocks of Markdown, Sphinx and notebooks highlight, and ``pygmentize -l pinn`` works).

The tokens and the kind of each name are those of :func:`pinnspec.editor.tokens`, which follows the grammar
(pinnspec/grammar/pinnspec.lark) and reads the names from the catalog and the registries."""

from __future__ import annotations

from pygments.lexer import Lexer
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from ._tokens import tokens

__all__ = ["PinnLexer"]

#: the kind of a token (pinnspec.editor.tokens) -> its Pygments token type
TOKEN_TYPES = {
    "keyword": Keyword, "declaration": Name.Variable, "builtin": Name.Builtin, "function": Name.Function,
    "argument": Name.Attribute, "constant": Name.Constant, "name": Name, "float": Number.Float,
    "integer": Number.Integer, "string": String.Double, "comment": Comment.Single, "operator": Operator,
    "punctuation": Punctuation, "space": Whitespace, "error": Error,
}


class PinnLexer(Lexer):
    """The `.pinn` language of pinnspec."""

    name = "pinnspec"
    aliases = ["pinn", "pinnspec"]
    filenames = ["*.pinn"]
    mimetypes = ["text/x-pinn"]

    def get_tokens_unprocessed(self, text):
        for token in tokens(text):
            yield token.offset, TOKEN_TYPES[token.kind], token.text
