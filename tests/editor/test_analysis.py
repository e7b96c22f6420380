"""What the language server answers, asked in-process: hover, definition, symbols and completion on a text as
it is being typed (broken statements included) never fail, and say what the checked spec resolved."""

import re
import subprocess
import sys

import pytest
from editor_specs import ROOT

from pinnspec.editor import declarations
from pinnspec.editor._analysis import analyze
from pinnspec.editor._vocabulary import SPECIAL_SIGNATURES
from pinnspec.lang import SPECIAL_CALLS, load

BURGERS = ROOT / "specs" / "burgers.pinn"


def _position(text: str, pattern: str, group: int = 1) -> tuple[int, int]:
    """1-based line and column of ``group`` of the first match of ``pattern`` on a line that is not a comment."""
    for number, line in enumerate(text.splitlines(), 1):
        match = None if line.startswith("#") else re.search(pattern, line)
        if match:
            return number, match.start(group) + 1
    raise AssertionError(f"no line matches {pattern!r}")


@pytest.fixture(scope="module")
def burgers():
    return analyze(BURGERS.read_text(), str(BURGERS))


def test_a_statement_keyword_shows_its_rule_and_resolved_call(burgers):
    text = burgers.hover(*_position(burgers.text, r"^(align)\b"))
    resolved = load(BURGERS).ir.training.align
    assert '"align" call_or_name' in text
    assert f"resolved: `align {resolved}`" in text and "rho_v = 0.03" in text


def test_hover_on_names(burgers):
    text = burgers.text
    derivative = burgers.hover(*_position(text, r"nu\*(u_xx)"))
    assert derivative.startswith("`u_xx`: the derivative of the field `u` by x, x")
    nu = burgers.hover(*_position(text, r"- (nu)\*u_xx"))
    assert nu.startswith("(let) `nu`") and "SymPy: `1/(100*pi)`" in nu
    walls = burgers.hover(*_position(text, r"^loss B = (walls)"))
    assert walls.startswith("(boundary condition) `walls`") and "in: loss B, grouping two" in walls
    assert "residual: `u(x, t)`" in walls
    assert burgers.hover(*_position(text, r"(sin)\(pi")).startswith("(function) `sin`\n\n```pinn\nsin(x)\n```")
    assert "an argument of `gua` (default None)" in burgers.hover(*_position(text, r"(rho_m) ="))
    assert burgers.hover(*_position(text, r"^surgery\s+(config)")) == "(surgery) `config`\n\n```pinn\nconfig()\n```"
    assert burgers.hover(1, 5) is None  # a comment


def test_definition_of_a_use_and_of_a_derivative(burgers):
    text = burgers.text
    field = next(d for d in declarations(burgers.tree) if d.name == "u")
    assert burgers.definition(*_position(text, r"(u_xx)")) == field.span
    walls = next(d for d in declarations(burgers.tree) if d.name == "walls")
    assert burgers.definition(*_position(text, r"^loss B = (walls)")) == walls.span
    assert burgers.definition(*_position(text, r"(sin)\(")) is None


def test_a_broken_statement_keeps_the_others():
    text = BURGERS.read_text().replace("field u", "field u(").replace("loss N = burgers", "loss N = burgers +")
    analysis = analyze(text, str(BURGERS))
    assert analysis.spec is None and analysis.diagnostics
    names = [s.name for s in analysis.symbols()]
    assert "u" not in names and "N" not in names and {"nu", "walls", "B", "two"} <= set(names)
    whole = analyze(BURGERS.read_text(), str(BURGERS))
    kept = {(s.name, s.name_span) for s in whole.symbols()}
    assert {(s.name, s.name_span) for s in analysis.symbols()} <= kept  # in their places


def test_every_position_and_every_prefix_answers():
    text = BURGERS.read_text()
    analysis = analyze(text, str(BURGERS))
    for number, line in enumerate(text.splitlines(), 1):
        for word in re.finditer(r"\S+", line):
            for column in (word.start() + 1, word.end() + 1):
                analysis.hover(number, column)
                analysis.definition(number, column)
                assert analysis.completions(number, column)
    for cut in range(0, len(text), 61):  # the text as it is typed
        partial = analyze(text[:cut], str(BURGERS))
        lines = text[:cut].split("\n")
        assert partial.completions(len(lines), len(lines[-1]) + 1)
        partial.hover(len(lines), max(len(lines[-1]), 1))
        partial.symbols()


def test_every_special_call_has_its_signature():
    assert set(SPECIAL_SIGNATURES) == set(SPECIAL_CALLS)
    assert all(signature.startswith(name + "(") for name, (signature, _) in SPECIAL_SIGNATURES.items())


def test_completion_after_a_keyword_without_builtins_offers_the_declared_names():
    text = BURGERS.read_text() + "causal \nenforce "
    analysis = analyze(text, str(BURGERS))
    lines = text.split("\n")
    for number in (len(lines) - 1, len(lines)):
        labels = {c.label: c.kind for c in analysis.completions(number, len(lines[number - 1]) + 1)}
        assert labels["burgers"] == "equation" and labels["walls"] == "boundary"


def test_a_registered_surgery_method_is_known_as_check_knows_it():
    """Names registered at run time (a plugin's) are completed, highlighted and explained (a fresh
    interpreter: the vocabulary is read once per process)."""
    code = '''
from dataclasses import dataclass
from pinnspec.registry import SURGERY

@SURGERY.register("halfway")
@dataclass(frozen=True)
class Halfway:
    share: float = 0.5

from pinnspec.editor import tokens
from pinnspec.editor._analysis import analyze
text = open("specs/burgers.pinn").read().replace("surgery   config", "surgery   halfway(share = 0.2)")
analysis = analyze(text, "specs/burgers.pinn")
assert analysis.diagnostics == [], analysis.diagnostics
line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("surgery"))
assert "halfway(share = 0.5)" in analysis.hover(line, 12)
assert "resolved: `surgery halfway(share = 0.2)`" in analysis.hover(line, 1)
assert "halfway" in [c.label for c in analysis.completions(line, 11)]
assert [t.kind for t in tokens(text) if t.text == "halfway"] == ["builtin"]
'''
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
