"""A kernel's sum of thousands of terms (a generated spec's) compiles: Python's compiler recurses once per `+`
of a chain and fails near 2,500, so a longer sum prints as parenthesised groups; a shorter one prints as
before, one chain."""

import math

import sympy
import torch

from pinnspec.compiler import _codegen
from pinnspec.compiler._codegen import TorchKernelPrinter


def _sum_source(count: int) -> str:
    v = sympy.symbols(f"v0:{count}", real=True)
    expr = sympy.Add(*(k * s for k, s in enumerate(v, start=1)))  # distinct terms: nothing combines
    return TorchKernelPrinter({s: f"v[{i}]" for i, s in enumerate(v)}).doprint(expr)


def test_three_thousand_terms_compile_and_add_up():
    count = 3000  # one chain of 3,000 fails to compile
    source = _sum_source(count)
    assert source.count(") + (") == math.ceil(count / _codegen._SUM_GROUP) - 1
    values = torch.linspace(-1, 1, count, dtype=torch.float64)
    got = float(eval(compile(source, "<sum>", "eval"), {"torch": torch}, {"v": values}))
    terms = [k * x for k, x in enumerate(values.tolist(), start=1)]
    assert abs(got - math.fsum(terms)) <= 1e-12 * math.fsum(map(abs, terms))  # fsum: exactly rounded


def test_a_sum_up_to_the_threshold_prints_as_one_chain(monkeypatch):
    monkeypatch.setattr(_codegen, "_LONG_SUM", 40)
    monkeypatch.setattr(_codegen, "_SUM_GROUP", 20)
    chain = _sum_source(40)
    assert "(" not in chain and chain.count(" + ") == 39
    grouped = _sum_source(41)
    assert grouped.count(") + (") == 2 and grouped.replace("(", "").replace(")", "").count(" + ") == 40
