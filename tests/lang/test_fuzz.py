"""Property test: mutated specs only ever raise SpecError, and its rendering works.

Mutations of the real specs (delete, duplicate, swap and replace tokens,
insert random characters) and random bytes.  Any other exception is a bug.
"""

import os
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinnspec.lang import KEYWORDS, SpecError, loads

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(ROOT.glob("specs/*.pinn")) + sorted(ROOT.glob("examples/*/*.pinn"))
TEXTS = [(p.read_text(), str(p.parent)) for p in SOURCES]
TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+\.?\d*(?:[eE][+-]?\d+)?|\*\*|\"[^\"\n]*\"|.", re.S)
VOCAB = sorted(KEYWORDS) + ["u", "x", "t", "u_x", "u_xx", "d", "lap", "dn", "pool", "pi", "e", "sin",
                            "(", ")", "[", "]", ",", ":", "=", "+", "-", "*", "/", "^", "**", "\n", "0", "1e400",
                            '"x.csv"', "_", "__", "0/0", "#", "1.5", "-1"]
EXAMPLES = int(os.environ.get("PINNSPEC_FUZZ_EXAMPLES", "150"))


def _tokens(text):
    return TOKEN.findall(text)


@st.composite
def mutated_spec(draw):
    text, base = draw(st.sampled_from(TEXTS))
    tokens = _tokens(text)
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert", "chars"]))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif op == "replace":
            tokens[i] = draw(st.sampled_from(VOCAB))
        elif op == "insert":
            tokens.insert(i, draw(st.sampled_from(VOCAB)))
        else:
            tokens.insert(i, draw(st.text(min_size=1, max_size=3)))
    return "".join(tokens), base


def _check(text, base):
    try:
        spec = loads(text, filename="fuzz.pinn", base_dir=base)
    except SpecError as err:
        rendered = str(err)
        assert rendered.startswith("fuzz.pinn:")
        assert err.line >= 1 and err.column >= 1 and err.message
        return
    spec.render_warnings()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_spec())
def test_mutated_specs_raise_only_spec_error(case):
    _check(*case)


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_spec_error(data):
    _check(data.decode("latin-1"), str(ROOT))


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(st.text(max_size=120))
def test_random_text_raises_only_spec_error(text):
    _check(text, str(ROOT))
