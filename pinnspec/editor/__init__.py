"""Editor support for `.pinn` files: the tokenizer (:func:`tokens`: each name's kind by where it stands), the
Pygments lexer on it (`PinnLexer`, registered under Pygments' entry point ``pygments.lexers``), the generator
of the TextMate grammar (:func:`write_textmate_grammar`) and the language server (`pinnspec lsp`,
:func:`serve`).  Never imports torch: the server runs the checks of `pinnspec check` only.  Pygments and pygls
are optional: they load with the names that need them (``pip install pinnspec[lsp]`` installs pygls)."""

from __future__ import annotations

from ._outline import Declaration, Use, declarations, use_at, uses
from ._textmate import textmate_grammar, write_textmate_grammar
from ._tokens import Token, tokens
from ._vocabulary import Vocabulary, signature, vocabulary

__all__ = ["Vocabulary", "vocabulary", "signature", "Declaration", "Use", "declarations", "uses", "use_at",
           "Token", "tokens", "textmate_grammar", "write_textmate_grammar", "PinnLexer", "serve"]


def __getattr__(name: str):
    if name == "PinnLexer":  # pygments loads with the lexer only
        from ._lexer import PinnLexer

        return PinnLexer
    if name == "serve":  # pygls loads with the server only
        from ._server import serve

        return serve
    raise AttributeError(f"module 'pinnspec.editor' has no attribute '{name}'")
