"""The grammar: conflict-free LALR, shipped inside the package."""

from pinnspec.lang import build_parser, grammar_text


def test_grammar_has_no_conflicts_or_collisions():
    # strict=True turns shift/reduce conflicts and terminal collisions into errors
    build_parser(strict=True)


def test_grammar_is_read_from_the_package():
    from importlib import resources

    text = resources.files("pinnspec.grammar").joinpath("pinnspec.lark").read_text()
    assert text == grammar_text()
    assert "equation_stmt" in text
