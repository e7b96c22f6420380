"""`pinnspec lsp`: the language server of `.pinn` files (pygls, over stdio).

On open, change and save it checks the text as `pinnspec check` does and publishes every error and warning
with its range; it answers hover, completion, go-to-definition and document symbols from the last text
(:mod:`pinnspec.editor._analysis`).  It never imports torch."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from .. import __version__
from ..lang import Span
from ._analysis import Analysis, analyze

#: a completion's kind -> the editor's icon for it
_COMPLETION_KINDS = {
    "keyword": types.CompletionItemKind.Keyword, "function": types.CompletionItemKind.Function,
    "builtin": types.CompletionItemKind.Class, "argument": types.CompletionItemKind.Property,
    "constant": types.CompletionItemKind.Constant, "choice": types.CompletionItemKind.EnumMember,
    "field": types.CompletionItemKind.Field, "let": types.CompletionItemKind.Constant,
    "param": types.CompletionItemKind.Variable, "coordinate": types.CompletionItemKind.TypeParameter,
}
#: a declaration's kind -> its symbol kind in an outline
_SYMBOL_KINDS = {
    "problem": types.SymbolKind.Module, "let": types.SymbolKind.Constant, "param": types.SymbolKind.Variable,
    "coordinate": types.SymbolKind.TypeParameter, "field": types.SymbolKind.Field,
    "shape": types.SymbolKind.Struct, "domain": types.SymbolKind.Struct, "equation": types.SymbolKind.Function,
    "initial": types.SymbolKind.Event, "boundary": types.SymbolKind.Event, "periodic": types.SymbolKind.Event,
    "data": types.SymbolKind.Event, "loss": types.SymbolKind.Object, "grouping": types.SymbolKind.Array,
    "report": types.SymbolKind.Property,
}
_SEVERITIES = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


class PinnServer(LanguageServer):
    """The server and the analysis of each open document (uri -> `Analysis`)."""

    def __init__(self):
        super().__init__("pinnspec", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.analyses: dict[str, Analysis] = {}

    def check(self, uri: str, *, files: bool) -> None:
        """Analyse the document at ``uri`` and publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        analysis = analyze(document.source, to_fs_path(uri) or uri, files=files)
        self.analyses[uri] = analysis
        diagnostics = [types.Diagnostic(range=self.range(uri, d.span), message=d.message,
                                        severity=_SEVERITIES[d.severity], source="pinnspec")
                       for d in analysis.diagnostics]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=document.version))

    def range(self, uri: str, span: Span) -> types.Range:
        """A span's range in the client's units (UTF-16 unless it asked for another)."""
        document = self.workspace.get_text_document(uri)
        return document.range_to_client_units(ServerTextRange(
            ServerTextPosition(span.line - 1, span.column - 1), ServerTextPosition(span.end_line - 1,
                                                                                   span.end_column - 1)))

    def ask(self, params, question: str):
        """The answer of the document's analysis (its method ``question``) at the request's position; None
        for a document not open."""
        uri = params.text_document.uri
        analysis = self.analyses.get(uri)
        if analysis is None:
            return None
        position = self.workspace.get_text_document(uri).position_from_client_units(params.position)
        return getattr(analysis, question)(position.line + 1, position.character + 1)


def build_server() -> PinnServer:
    server = PinnServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PinnServer, params: types.DidOpenTextDocumentParams):
        ls.check(params.text_document.uri, files=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PinnServer, params: types.DidChangeTextDocumentParams):
        ls.check(params.text_document.uri, files=False)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PinnServer, params: types.DidSaveTextDocumentParams):
        ls.check(params.text_document.uri, files=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PinnServer, params: types.DidCloseTextDocumentParams):
        ls.analyses.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: PinnServer, params: types.HoverParams):
        text = ls.ask(params, "hover")
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=["(", ",", "="]))
    def completion(ls: PinnServer, params: types.CompletionParams):
        return types.CompletionList(is_incomplete=False, items=[
            types.CompletionItem(label=c.label, kind=_COMPLETION_KINDS.get(c.kind, types.CompletionItemKind.Variable),
                                 detail=c.detail or None)
            for c in ls.ask(params, "completions") or []])

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: PinnServer, params: types.DefinitionParams):
        span = ls.ask(params, "definition")
        if span is None:
            return None
        uri = params.text_document.uri
        return types.Location(uri=uri, range=ls.range(uri, span))

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: PinnServer, params: types.DocumentSymbolParams):
        uri = params.text_document.uri
        analysis = ls.analyses.get(uri)
        if analysis is None:
            return []
        return [types.DocumentSymbol(name=s.name, kind=_SYMBOL_KINDS[s.kind], range=ls.range(uri, s.span),
                                     selection_range=ls.range(uri, s.name_span), detail=s.detail)
                for s in analysis.symbols()]

    return server


def serve() -> int:
    """Run the language server on stdin and stdout until the client ends it."""
    build_server().start_io()
    return 0
