"""The Pygments lexer: no error token on any spec of the repository or ```pinn block of the docs, the
declarations it marks are the syntax tree's, and Pygments finds it by its entry point."""

import subprocess
import sys
import tomllib

import pytest
from editor_specs import ROOT, doc_blocks, spec_files

pygments = pytest.importorskip("pygments")
from pygments.token import Error, Keyword, Name  # noqa: E402

from pinnspec.editor import PinnLexer  # noqa: E402
from pinnspec.editor import declarations  # noqa: E402
from pinnspec.lang import parse  # noqa: E402

SPECS = spec_files()


def _located(text: str):
    """(line, column, token, value) of every token, 1-based as the syntax tree's spans."""
    for index, token, value in PinnLexer().get_tokens_unprocessed(text):
        line = text.count("\n", 0, index) + 1
        yield line, index - (text.rfind("\n", 0, index) + 1) + 1, token, value


def test_every_spec_is_found():
    folders = {p.relative_to(ROOT).parts[0] for p in SPECS}
    assert {"specs", "examples", "benchmarks", "tests"} <= folders
    assert len(SPECS) >= 30


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_error_token_in_a_spec(path):
    text = path.read_text(encoding="utf-8")
    errors = [f"{line}:{col}: {value!r}" for line, col, token, value in _located(text) if token in Error]
    assert errors == []


@pytest.mark.parametrize("where,text", doc_blocks(), ids=[w for w, _ in doc_blocks()])
def test_no_error_token_in_a_doc_block(where, text):
    assert [v for _, _, token, v in _located(text) if token in Error] == []


def test_a_brace_is_an_error_token():
    """What the grammar has no terminal for is an error token (so the tests above can fail)."""
    text = "problem p\nlet a = {1}\n"
    assert [v for _, _, token, v in _located(text) if token in Error] == ["{", "}"]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_declared_names_are_the_syntax_trees(path):
    text = path.read_text(encoding="utf-8")
    tree = parse(text, str(path))
    lexed = [(line, col, value) for line, col, token, value in _located(text) if token is Name.Variable]
    assert lexed == [(d.span.line, d.span.column, d.name) for d in declarations(tree)]
    opening = [(line, col, value) for line, col, token, value in _located(text)
               if token is Keyword and (line, col) in {(st.span.line, st.span.column) for st in tree.statements}]
    assert [value for _, _, value in opening] == [st.keyword for st in tree.statements]


def test_kinds_of_names_by_where_they_stand():
    text = ('problem p\nspace x in [0, 1]\nfield u\nshape s = interval(lo = 0, hi = 1)\n'
            'equation pde: u_xx + sin(pi*x) + f(x) = 0\nboundary walls on boundary: u = 0\n'
            'sampler rad(base = uniform)\ntest grid 10\nvalidate test every 100\n'
            'stage lbfgs(history = 5) epochs = 10, dtype = float64\ngrouping g = [pde, pool(walls)]\n')
    kinds = {(value, line): token for line, _, token, value in _located(text)}
    assert kinds[("interval", 4)] is Name.Builtin and kinds[("lo", 4)] is Name.Attribute
    assert kinds[("sin", 5)] is Name.Builtin and kinds[("f", 5)] is Name.Function
    assert kinds[("pi", 5)] is Name.Constant and kinds[("u_xx", 5)] is Name
    assert kinds[("on", 6)] is Keyword and kinds[("boundary", 6)] is Keyword
    assert kinds[("rad", 7)] is Name.Builtin and kinds[("uniform", 7)] is Name
    assert kinds[("grid", 8)] is Keyword and kinds[("test", 9)] is Keyword and kinds[("every", 9)] is Keyword
    assert kinds[("lbfgs", 10)] is Name.Builtin and kinds[("epochs", 10)] is Name.Attribute
    assert kinds[("pool", 11)] is Name.Builtin and kinds[("walls", 11)] is Name


def test_the_entry_point_names_the_lexer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = config["project"]["entry-points"]["pygments.lexers"]["pinn"]
    module, _, attribute = target.partition(":")
    assert getattr(__import__(module, fromlist=[attribute]), attribute) is PinnLexer


@pytest.mark.slow
def test_pygments_finds_the_installed_lexer_by_name_and_file_name(tmp_path, checkout_build):
    """pinnspec installed (here: into a folder of its own, far from the checkout) registers the lexer."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(tmp_path / "site"), str(ROOT)], check=True, capture_output=True, cwd=tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pinnspec; assert 'site' in pinnspec.__file__\n"
            "from pygments.lexers import get_lexer_by_name, get_lexer_for_filename\n"
            "print(type(get_lexer_by_name('pinn')).__name__, type(get_lexer_for_filename('burgers.pinn')).__name__)")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path / "site")], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["PinnLexer", "PinnLexer"]


def test_lexing_loads_no_torch():
    code = ("import sys\nfrom pinnspec.editor import PinnLexer\nlist(PinnLexer().get_tokens(open('specs/burgers.pinn')"
            ".read()))\nassert 'torch' not in sys.modules and 'pinnspec.compiler' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
