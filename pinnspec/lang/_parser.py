"""Text -> syntax tree: the Lark parser, its post-lexer, the tree transformer
and friendly syntax errors."""

from __future__ import annotations

import functools
from importlib import resources

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from . import _ast as A
from ._diagnostics import Diagnostic, SpecError

GRAMMAR_RESOURCE = ("pinnspec.grammar", "pinnspec.lark")

_OPEN = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_CLOSE = {"RPAR", "RSQB", "RBRACE"}


def grammar_text() -> str:
    """The grammar, read from the installed package (``pinnspec.grammar``)."""
    package, name = GRAMMAR_RESOURCE
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


class BracketPostLex:
    """Drops newlines inside open brackets, so statements continue across lines.

    Remembers the open brackets of the current parse so that an unclosed one
    is reported where it was opened.
    """

    always_accept = ("_NL",)

    def __init__(self):
        self.open: list[Token] = []

    def process(self, stream):
        self.open = []
        for tok in stream:
            if tok.type in _OPEN:
                self.open.append(tok)
            elif tok.type in _CLOSE and self.open:
                self.open.pop()
            if tok.type == "_NL" and self.open:
                continue
            yield tok


@functools.lru_cache(maxsize=None)
def _parser(strict: bool = False) -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        postlex=BracketPostLex(),
        propagate_positions=True,
        maybe_placeholders=True,
        strict=strict,
    )


def build_parser(strict: bool = True) -> Lark:
    """A fresh parser (tests build it with ``strict=True``: conflicts fail)."""
    return _parser.__wrapped__(strict)


# ------------------------------------------------------------------ tree -> AST


def _span_of_token(tok: Token) -> A.Span:
    return A.Span(tok.line, tok.column, tok.end_line, tok.end_column)


def _span(meta) -> A.Span:
    return A.Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _join(a: A.Span, b: A.Span) -> A.Span:
    return A.Span(a.line, a.column, b.end_line, b.end_column)


def _ident(tok: Token) -> A.Ident:
    return A.Ident(str(tok), _span_of_token(tok))


def _number(tok: Token) -> A.Number:
    return A.Number(str(tok), _span_of_token(tok))


def _string(tok: Token) -> A.String:
    return A.String(str(tok)[1:-1], _span_of_token(tok))


@v_args(meta=True)
class ToAst(Transformer_NonRecursive):
    """Lark parse tree -> frozen AST nodes (:mod:`pinnspec.lang._ast`)."""

    # expressions
    def number(self, meta, c):
        return _number(c[0])

    def name(self, meta, c):
        return A.Name(str(c[0]), _span_of_token(c[0]))

    def string(self, meta, c):
        return _string(c[0])

    def _binary(node, op):
        """A transformer method making ``node(op, left, right, span)`` (BinOp, ShapeOp)."""

        def method(self, meta, c):
            return node(op, c[0], c[-1], _span(meta))

        return method

    add = _binary(A.BinOp, "+")
    sub = _binary(A.BinOp, "-")
    mul = _binary(A.BinOp, "*")
    div = _binary(A.BinOp, "/")

    def pow(self, meta, c):
        base, _, exponent = c
        return A.BinOp("^", base, exponent, _span(meta))

    def neg(self, meta, c):
        return A.Neg(c[0], _span(meta))

    def pos(self, meta, c):
        return c[0]

    def tuple(self, meta, c):
        return A.TupleExpr(tuple(c), _span(meta))

    def empty_tuple(self, meta, c):
        return A.TupleExpr((), _span(meta))

    def duration(self, meta, c):
        return A.Duration(_number(c[0]), _ident(c[1]), _span(meta))

    def keyword_arg(self, meta, c):
        return A.KeywordArg(_ident(c[0]), c[1], _span(meta))

    def call(self, meta, c):
        func, *args = c
        args = [a for a in args if a is not None]
        positional = tuple(a for a in args if not isinstance(a, A.KeywordArg))
        keywords = tuple(a for a in args if isinstance(a, A.KeywordArg))
        return A.Call(_ident(func), positional, keywords, _span(meta))

    def bare_name(self, meta, c):
        ident = _ident(c[0])
        return A.Call(ident, (), (), ident.span, bare=True)

    # declarations
    def problem_stmt(self, meta, c):
        return A.Problem(_ident(c[0]), _span(meta))

    def let_stmt(self, meta, c):
        return A.Let(_ident(c[0]), c[1], _span(meta))

    def signed_number(self, meta, c):
        return (_number(c[0]), False)

    def negative_number(self, meta, c):
        return (_number(c[0]), True)

    def param_stmt(self, meta, c):
        number, negative = c[1]
        return A.Param(_ident(c[0]), number, negative, _span(meta))

    def interval_decl(self, meta, c):
        return A.Interval(_ident(c[0]), c[1], c[2], _span(meta))

    def space_stmt(self, meta, c):
        return A.Space(tuple(c), _span(meta))

    def time_stmt(self, meta, c):
        return A.Time(c[0], _span(meta))

    def field_stmt(self, meta, c):
        arguments = tuple(args for _, args in c)
        return A.Fields(tuple(name for name, _ in c), _span(meta), arguments if any(arguments) else ())

    def field_decl(self, meta, c):
        name, *coordinates = c
        coordinates = [t for t in coordinates if t is not None]  # `field u`: Lark gives None for the absent list
        return _ident(name), (tuple(_ident(t) for t in coordinates) if coordinates else None)

    # geometry
    def shape_stmt(self, meta, c):
        return A.ShapeDecl(_ident(c[0]), c[1], _span(meta))

    def shape_ref(self, meta, c):
        ident = _ident(c[0])
        return A.ShapeRef(ident, ident.span)

    shape_union = _binary(A.ShapeOp, "+")
    shape_difference = _binary(A.ShapeOp, "-")
    shape_intersection = _binary(A.ShapeOp, "&")
    del _binary

    def domain_stmt(self, meta, c):
        return A.DomainDecl(_ident(c[0]), c[1], _span(meta))

    # conditions
    def relation(self, meta, c):
        return A.Relation(c[0], c[1], _span(meta))

    def equation_stmt(self, meta, c):
        return A.Equation(_ident(c[0]), c[1], _span(meta))

    def initial_stmt(self, meta, c):
        return A.Initial(_ident(c[0]), tuple(c[1:]), _span(meta))

    def face(self, meta, c):
        return A.Face(_ident(c[0]), c[1], _span(meta))

    def whole_boundary(self, meta, c):
        return A.Selector((), True, _span(meta))

    def shape_part(self, meta, c):
        return _ident(c[0])

    def selector_items(self, meta, c):
        faces = tuple(item for item in c if isinstance(item, A.Face))
        shapes = tuple(item for item in c if isinstance(item, A.Ident))
        return A.Selector(faces, False, _span(meta), shapes)

    def boundary_stmt(self, meta, c):
        return A.Boundary(_ident(c[0]), c[1], tuple(c[2:]), _span(meta))

    def periodic_stmt(self, meta, c):
        return A.Periodic(_ident(c[0]), _ident(c[1]), tuple(c[2:]), _span(meta))

    def data_stmt(self, meta, c):
        fields = tuple(_ident(t) for t in c[2:] if isinstance(t, Token))
        options = tuple(t for t in c[2:] if not isinstance(t, Token))
        return A.Data(_ident(c[0]), _string(c[1]), fields, _span(meta), options)

    def data_option(self, meta, c):
        return (_ident(c[0]), _number(c[1]))

    # losses
    def weight(self, meta, c):
        return _number(c[0])

    def pool(self, meta, c):
        return A.Pool(tuple(_ident(t) for t in c), _span(meta))

    def loss_term(self, meta, c):
        weight, target = c
        if isinstance(target, Token):
            target = _ident(target)
        return A.LossTerm(weight, target, _span(meta))

    def loss_stmt(self, meta, c):
        return A.Loss(_ident(c[0]), tuple(c[1:]), _span(meta))

    def group_entry(self, meta, c):
        return A.GroupEntry(tuple(c), _span(meta))

    def grouping_stmt(self, meta, c):
        return A.Grouping(_ident(c[0]), tuple(c[1:]), _span(meta))

    # sampling
    def point_count(self, meta, c):
        return A.PointCount(_ident(c[0]), _number(c[1]), _span(meta))

    def points_stmt(self, meta, c):
        return A.Points(tuple(c), _span(meta))

    def sampler_stmt(self, meta, c):
        return A.Sampler(c[0], _span(meta))

    def resample_every(self, meta, c):
        return A.Resample(_number(c[0]), _span(meta))

    def resample_never(self, meta, c):
        return A.Resample(None, _span(meta))

    # checking
    def exact_stmt(self, meta, c):
        return A.Exact(tuple(c), _span(meta))

    def reference_call(self, meta, c):
        return A.Reference(c[0], None, _span(meta))

    def reference_file(self, meta, c):
        return A.Reference(None, _string(c[0]), _span(meta))

    def test_count(self, meta, c):
        return A.Test(_number(c[0]), None, _span(meta))

    def test_grid(self, meta, c):
        return A.Test(None, tuple(_number(t) for t in c), _span(meta))

    def test_uniform(self, meta, c):
        return A.Test(None, None, _span(meta), uniform=_number(c[0]))

    def validate_count(self, meta, c):
        return A.Validate(_number(c[0]), _number(c[1]), _span(meta))

    def validate_test(self, meta, c):
        return A.Validate(None, _number(c[0]), _span(meta))

    def report_stmt(self, meta, c):
        return A.Report(_ident(c[0]), c[1], _span(meta))

    # training
    def _setting(kind):
        def method(self, meta, c):
            return A.Setting(kind, c[0], _span(meta))

        return method

    model_stmt = _setting("model")
    optimizer_stmt = _setting("optimizer")
    schedule_stmt = _setting("schedule")
    surgery_stmt = _setting("surgery")
    align_stmt = _setting("align")
    weights_stmt = _setting("weights")
    recipe_stmt = _setting("recipe")
    del _setting

    def enforce_stmt(self, meta, c):
        return A.Enforce(tuple(_ident(n) for n in c), _span(meta))

    def causal_stmt(self, meta, c):
        return A.Causal(c[0], _span(meta))

    def stage_stmt(self, meta, c):
        return A.Stage(c[0], tuple(c[1:]), _span(meta))

    def train_stmt(self, meta, c):
        return A.Train(tuple(c), _span(meta))

    def start(self, meta, c):
        return tuple(c)


# ------------------------------------------------------------------ syntax errors

_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": 'a quoted file name ("...")',
    "_NL": "the end of the line",
    "$END": "the end of the file",
    "EQUAL": "'='",
    "COLON": "':'",
    "COMMA": "','",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "POW": "'^'",
    "AMPERSAND": "'&'",
}


def _describe(terminal: str, parser: Lark) -> str:
    if terminal in _WORDS:
        return _WORDS[terminal]
    try:
        pattern = parser.get_terminal(terminal).pattern
    except KeyError:
        return terminal
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return terminal.lower()


def _describe_token(tok: Token) -> str:
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "$END":
        return "end of file"
    return f"'{tok}'"


def _misspelled_keyword(tok: Token, expected: list[str], parser: Lark) -> str | None:
    """The keyword a name at the start of a statement (``feild``) was probably meant to be, or None."""
    from ..registry import did_you_mean

    if tok.type != "NAME":
        return None
    words = [_literal(t, parser) for t in expected]
    return did_you_mean(str(tok), [w for w in words if w.isalpha()])


def _literal(terminal: str, parser: Lark) -> str:
    """The fixed text of a terminal (a keyword's word), or '' for a pattern (NAME, NUMBER, ...)."""
    try:
        pattern = parser.get_terminal(terminal).pattern
    except KeyError:
        return ""
    return pattern.value if pattern.type == "str" else ""


# Examples of common mistakes -> what to say (Lark's match_examples).
_EXAMPLES = {
    "a condition needs its name and ':' before the equation, e.g. 'equation pde: u_t = 0'": [
        "problem p\nequation u_t = 0\n",
        "problem p\nequation pde u_t = 0\n",
        "problem p\ninitial u = 0\n",
        "problem p\ninitial ic u = 0\n",
    ],
    "a condition is written 'LEFT = RIGHT' (one '='), e.g. 'u_t + u*u_x = 0'": [
        "problem p\nequation pde: u_t + u\n",
        "problem p\nequation pde: u_t = = 0\n",
        "problem p\ninitial ic: u\n",
        "problem p\nexact u\n",
    ],
    "an interval is written 'NAME in [A, B]', e.g. 'space x in [-1, 1]'": [
        "problem p\nspace x [0, 1]\n",
        "problem p\nspace x in 0, 1\n",
        "problem p\ntime t in (0, 1)\n",
        "problem p\nspace x in [0 1]\n",
        "problem p\nspace x = [0, 1]\n",
    ],
    "a boundary needs a selector: 'boundary NAME on x = 0: ...', 'on boundary' or the shapes 'on hole1, box'": [
        "problem p\nboundary bc: u = 0\n",
        "problem p\nboundary bc on: u = 0\n",
        "problem p\nboundary bc x = 0: u = 0\n",
    ],
    "a shape is written 'shape NAME = PRIMITIVE(...)', e.g. 'shape hole = disk(center = (0, 0), radius = 0.1)'": [
        "problem p\nshape hole disk(center = (0, 0), radius = 0.1)\n",
        "problem p\nshape hole = 3\n",
        "problem p\nshape hole = disk\n",
        "problem p\nshape = disk(radius = 1)\n",
    ],
    "a domain combines shapes with + (union), - (difference), & (intersection), e.g. 'domain plate = box - hole'": [
        "problem p\ndomain d = box * hole\n",
        "problem p\ndomain d = box - 2\n",
        "problem p\ndomain d box - hole\n",
        "problem p\ndomain d = box -\n",
        "problem p\ndomain d = disk(radius = 1)\n",
    ],
    "a periodic condition is written 'periodic NAME on COORD: EXPR, ...'": [
        "problem p\nperiodic pbc: u\n",
        "problem p\nperiodic pbc on x = 0: u\n",
    ],
    "points are written 'points NAME COUNT, NAME COUNT', e.g. 'points pde 1000, bc 100'": [
        "problem p\npoints pde = 1000\n",
        "problem p\npoints 1000\n",
        "problem p\npoints pde: 1000\n",
    ],
    "a grouping is a bracketed list of tasks, e.g. 'grouping two = [N, pool(B, I)]'": [
        "problem p\ngrouping g = N, B\n",
        "problem p\ngrouping g [N, B]\n",
    ],
    "a data condition is written 'data NAME from \"FILE\": FIELD, ...'": [
        "problem p\ndata obs from obs.csv: u\n",
        "problem p\ndata obs \"obs.csv\": u\n",
    ],
    "a report is written 'report NAME = integral(PART, EXPR)', e.g. 'report flux = integral(rim, dn(u))'": [
        "problem p\nreport flux integral(rim, u)\n",
        "problem p\nreport = integral(rim, u)\n",
        "problem p\nreport flux: integral(rim, u)\n",
    ],
    "settings are written 'train KEY = VALUE, ...', e.g. 'train epochs = 1000'": [
        "problem p\ntrain epochs 1000\n",
        "problem p\ntrain 1000\n",
    ],
}


@functools.lru_cache(maxsize=None)
def _example_errors():
    return {msg: examples for msg, examples in _EXAMPLES.items()}


def _friendly_message(err: UnexpectedInput, text: str) -> str | None:
    parser = _parser()
    try:
        return err.match_examples(parser.parse, _example_errors(), use_accepts=True)
    except Exception:  # a failing example lookup must never hide the real error
        return None


def syntax_error(err: UnexpectedInput, text: str, filename: str, postlex: BracketPostLex) -> SpecError:
    parser = _parser()
    line, column = getattr(err, "line", 1) or 1, getattr(err, "column", 1) or 1
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        if char == '"':
            message = "unterminated string: a file name needs a closing '\"' on the same line"
        elif char == "{" or char == "}":
            message = f"unexpected character '{char}': braces are not part of the language"
        else:
            message = f"unexpected character {char!r}"
        expected = None
    elif isinstance(err, UnexpectedToken):
        tok = err.token
        expected = sorted(err.accepts or err.expected)
        opener = postlex.open[-1] if postlex.open else None
        line_start = tok.type != "$END" and text[: tok.start_pos].rsplit("\n", 1)[-1].strip() == ""
        if opener is not None and (tok.type == "$END" or (line_start and str(tok) in A.KEYWORDS)):
            # A bracket left open swallows the newlines after it: say so where it opened.
            line, column = opener.line, opener.column
            return SpecError(
                [Diagnostic("error", f"'{opener}' is never closed (expected '{_OPEN[opener.type]}' "
                            f"before {_describe_token(tok)})", A.Span(line, column, line, column + 1), filename)],
                text,
            )
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
        elif tok.type == "_NL":
            # Point at the end of the statement's line, not the start of the next.
            line = tok.line
            column = tok.column
        friendly = _friendly_message(err, text)
        keyword = _misspelled_keyword(tok, expected, parser) if line_start else None
        if keyword:
            message = f"unknown statement '{tok}'; did you mean '{keyword}'?"
        elif tok.type == "STRING":
            message = (f"unexpected {tok}: a quoted string names a file (in 'data' and 'reference') "
                       "or is a keyword value in a call, e.g. mlp(activation = \"tanh\")")
        elif str(tok) in A.KEYWORDS and "NAME" in expected:
            message = f"'{tok}' is a reserved word and cannot be used as a name; choose another name"
        elif friendly:
            message = f"unexpected {_describe_token(tok)}: {friendly}"
        else:
            words = [_describe(t, parser) for t in expected if t not in ("COMMENT",)]
            words = sorted(set(words))
            if len(words) > 6:
                message = f"unexpected {_describe_token(tok)}"
            elif words:
                message = f"unexpected {_describe_token(tok)}; expected " + " or ".join(
                    [", ".join(words[:-1]), words[-1]] if len(words) > 1 else words
                )
            else:
                message = f"unexpected {_describe_token(tok)}"
        if tok.type != "$END" and str(tok) == "=" and "EQUAL" not in expected and "==" in text:
            message += " (use a single '=')"
        before = text[: tok.start_pos].rstrip()
        if (tok.type in ("NAME", "NUMBER") and "STAR" in expected and before
                and (before[-1].isalnum() or before[-1] in "_).")):  # two operands side by side, as in mathematics
            operand = before.split()[-1].split("(")[-1]
            message = f"unexpected {_describe_token(tok)}: a product needs '*' (write {operand}*{tok})"
            if str(tok).lower() in _TIME_WORDS:  # `time = -5 min`, `time = ten minutes`
                message = (f"unexpected {_describe_token(tok)}: a wall time is a number above 0 and a unit, "
                           f"as in 10 min, 90 s or 1.5 h (in an expression, a product needs '*': {operand}*{tok})")
        if tok.type == "_NL" and text[: tok.start_pos].rstrip().endswith((",", "+", "-", "*", "/", "=")):
            message += " (a statement continues onto the next line only inside brackets: ( [ )"
    else:  # UnexpectedEOF and anything else Lark raises
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        message = "unexpected end of the file"
    return SpecError([Diagnostic("error", message, A.Span(line, column, line, column + 1), filename)], text)


#: words a wall time's unit may be written as (the units themselves: catalog.DURATION_UNITS)
_TIME_WORDS = {"s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs",
               "hour", "hours"}


def parse(text: str, filename: str = "<string>") -> A.SpecFile:
    """Parse ``text`` into a :class:`~pinnspec.lang._ast.SpecFile` (syntax only).

    Raises :class:`SpecError` with a located message on a syntax error.
    """
    if "\x00" in text:
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise SpecError([Diagnostic("error", "the file contains a NUL byte (is it a text file?)",
                                    A.Span(line, column, line, column + 1), filename)], text)
    parser = _parser()
    source = text if text.endswith("\n") else text + "\n"
    try:
        tree = parser.parse(source)
    except UnexpectedInput as err:
        raise syntax_error(err, text, filename, parser.options.postlex) from None
    try:
        statements = ToAst().transform(tree)
    except VisitError as err:  # pragma: no cover - a bug in the transformer
        raise err.orig_exc
    return A.SpecFile(tuple(statements), text, filename)

