"""Expressions as long and as deep as generated specs make them: chains of 10,000 added terms, 5,000 unary
minuses or parentheses check (and mean what pairwise lowering means); nesting past the stated limit
(``MAX_NESTING`` levels: calls, powers, lets inside lets) is a located error that says so, never a
RecursionError.  The expressions are generated here."""

import pytest
import sympy

from pinnspec.cli import main
from pinnspec.lang import SpecError, loads
from pinnspec.lang._expr import MAX_NESTING

HEAD = "problem deep\nspace x in [0, 1]\nfield u\n"  # three lines
X = sympy.Symbol("x", real=True)


def residual(expr: str):
    """The residual of 'equation pde: u_xx = EXPR' minus its u_xx: -EXPR as lowered."""
    spec = loads(HEAD + f"equation pde: u_xx = {expr}\n")
    (value,) = spec.ir.conditions[0].residuals
    return value - value.atoms(sympy.Derivative).pop()


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        loads(text)
    return info.value


def test_ten_thousand_added_terms_check_and_sum():
    terms = ["x"] * 5000 + ["1"] * 4000 + ["-2"] * 500  # "... + -2" is a term with a unary minus
    assert residual(" + ".join(terms) + " - x" * 500) == -(4500 * X + 4000 - 1000)


def test_five_thousand_unary_minuses_and_parentheses_check():
    assert residual("-" * 5000 + "x") == -X
    assert residual("-" * 5001 + "x") == X
    assert residual("(" * 5000 + "x" + ")" * 5000) == -X
    assert residual("-(" * 2500 + "x" + ")" * 2500) == -X


def test_long_products_and_quotients_check():
    assert residual("*".join(["x"] * 1000)) == -X**1000
    assert residual("x" + "/x" * 1000) == -X**-999


def test_a_sum_is_what_adding_pairwise_gives():
    """The flat sum gives exactly the expression the pairwise left fold gives (SymPy's canonical form)."""
    terms = ["x", "-3*x^2", "sin(x)", "(1 + x)", "-x", "2/3", "-(x - 1)*x"]
    pairwise = sympy.Integer(0)
    for term in terms:
        pairwise = pairwise + -residual(term)
    assert residual(" + ".join(terms)) == -pairwise


def test_nesting_within_the_limit_checks():
    depth = MAX_NESTING - 1
    want = X
    for _ in range(depth - 1):
        want = sympy.exp(want)
    assert residual("exp(" * (depth - 1) + "x" + ")" * (depth - 1)) == -want


@pytest.mark.parametrize("opened, closed, levels", [("exp(", ")", 5000), ("x^", "", 5000), ("(x*", ")", 1000),
                                                    ("sin(1 + ", ")", 1000)],
                         ids=["exp", "power", "product-in-parentheses", "sum-in-call"])
def test_nesting_past_the_limit_is_a_located_error(opened, closed, levels):
    expr = opened * levels + "x" + closed * levels
    err = error_of(HEAD + f"equation pde: u_xx = {expr}\n")
    assert err.line == 4 and len(err.errors) == 1
    assert f"nests more than {MAX_NESTING} levels deep; pinnspec accepts at most {MAX_NESTING}" in err.message


def test_lets_nesting_past_the_limit_are_located_at_the_let_that_does():
    lets = "let a0 = x\n" + "".join(f"let a{i} = exp(a{i - 1})\n" for i in range(1, 150))
    err = error_of(HEAD + lets + "equation pde: u_xx = a149\n")
    assert err.line == 4 + MAX_NESTING and err.column == len(f"let a{MAX_NESTING} = ") + 1
    assert f"nests {MAX_NESTING + 1} levels deep (counting the lets it uses)" in err.message


def test_a_report_of_thousands_of_terms_checks():
    spec = loads(HEAD + "equation pde: u_xx = 0\nreport r = " + " + ".join(["1"] * 3000) + " + integral(x = 1, u)\n")
    (report,) = spec.ir.reports
    assert report.value == report.integrals[0].symbol + 3000


def test_check_prints_the_limit_without_a_traceback(tmp_path, capsys):
    spec = tmp_path / "deep.pinn"
    spec.write_text(HEAD + "equation pde: u_xx = " + "x^" * 5000 + "x\n")
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{spec}:4:") and "Traceback" not in err and "RecursionError" not in err
    assert f"pinnspec accepts at most {MAX_NESTING}" in err.splitlines()[0]


def test_show_ast_of_a_deep_expression(capsys, tmp_path):
    """`pinnspec show --stage ast` prints a 5,000-deep expression (its printer does not recurse)."""
    spec = tmp_path / "deep.pinn"
    spec.write_text(HEAD + "equation pde: u_xx = " + "(" * 5000 + "-x" + ")" * 5000 + " + " + " + ".join(["x"] * 3000)
                    + "\n")
    assert main(["show", "--stage", "ast", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "(neg x)" in out and out.count("(+ ") == 3000


def test_a_diagnostic_on_a_long_line_shows_a_window_around_its_caret():
    line = "equation pde: u_xx = " + " + ".join(["x"] * 20000) + " + y"  # y: not declared
    err = error_of(HEAD + line + "\n")
    rendered = err.render().splitlines()
    assert rendered[0].startswith("<string>:4:") and "'y'" in rendered[0]
    assert len(rendered[1]) < 140 and rendered[1].strip().startswith("...")
    caret = rendered[2].index("^")
    assert rendered[1][caret] == "y"
