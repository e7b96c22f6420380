"""Residual kernels: SymPy residuals -> Python/torch source with common
subexpressions eliminated.

A kernel is a plain function of 1-D tensors ``[N]`` (coordinate columns,
field values and derivatives, observed values) and scalar tensors (params);
it returns one ``[N]`` tensor per residual component.  Derivatives arrive
as inputs (the derivative plan computes them with autograd); the kernel
itself is elementwise algebra, differentiable in every input.
"""

from __future__ import annotations

import keyword
import math
from dataclasses import dataclass, field
from typing import Callable

import sympy
from sympy.core.function import AppliedUndef
from sympy.printing.str import StrPrinter

from .. import ir
from ..registry import FUNCTIONS
from . import _kernel_ops
from ._derivatives import LinearOperator

#: Module names the generated source uses; user names that equal one are renamed.
_RESERVED = {"torch", "math", "ops"}

_TORCH_FUNCTIONS = {
    "sin": "torch.sin", "cos": "torch.cos", "tan": "torch.tan", "exp": "torch.exp", "log": "torch.log",
    "tanh": "torch.tanh", "sinh": "torch.sinh", "cosh": "torch.cosh", "asin": "torch.asin",
    "acos": "torch.acos", "atan": "torch.atan", "atan2": "torch.atan2", "Abs": "torch.abs", "sign": "torch.sign",
    "Min": "ops.minimum", "Max": "ops.maximum",
}


#: a sum of more terms prints as parenthesised groups of _SUM_GROUP terms: Python's compiler recurses once per
#: operator of a chain and fails near 2,500 (a spec's expressions may have 10,000 terms, docs/language.md)
_LONG_SUM = 2000
_SUM_GROUP = 1000


class TorchKernelPrinter(StrPrinter):
    """SymPy -> torch expression source; constant subexpressions become floats."""

    def __init__(self, names: dict[sympy.Basic, str], numbers: dict[sympy.Symbol, sympy.Expr] | None = None):
        super().__init__({"full_prec": False})
        self.names = names
        self.numbers = numbers or {}  # the cse temporaries that hold plain numbers (Python floats in the kernel)

    def _print(self, expr, **kwargs):
        if expr in self.names:
            return self.names[expr]
        if isinstance(expr, (sympy.Function, sympy.Pow)) and self.numbers and expr.free_symbols and \
                expr.free_symbols <= set(self.numbers):  # a torch function of a Python float: fold it
            return self._print(expr.xreplace(self.numbers), **kwargs)
        if isinstance(expr, sympy.Expr) and expr.is_number and not expr.is_Integer:
            value = complex(expr.evalf(20))
            if value.imag != 0:
                raise ValueError(f"complex constant {expr} in a residual")
            return f"({value.real!r})"
        return super()._print(expr, **kwargs)

    def _print_Mul(self, expr):
        # fold every constant factor (1/100, pi, sqrt(2), ...) into one float
        coeff, rest = expr.as_independent(*expr.free_symbols, as_Add=False)
        if expr.free_symbols and coeff != 1 and coeff.is_number and not coeff.is_Integer:
            value = float(coeff)
            body = self.parenthesize(rest, 50) if rest.is_Add else self._print(rest)
            if value == -1.0:
                return f"-{body}"
            return f"({value!r})*{body}"
        return super()._print_Mul(expr)

    def _print_Add(self, expr, order=None):
        terms = self._as_ordered_terms(expr, order=order)
        if len(terms) <= _LONG_SUM:
            return super()._print_Add(expr, order=order)
        groups = (sympy.Add(*terms[i:i + _SUM_GROUP], evaluate=False) for i in range(0, len(terms), _SUM_GROUP))
        return " + ".join(f"({super(TorchKernelPrinter, self)._print_Add(group)})" for group in groups)

    def _print_Symbol(self, expr):
        raise KeyError(f"no kernel input for the symbol {expr}")

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.args
        if exp == sympy.Rational(1, 2):
            return f"torch.sqrt({self._print(base)})"
        if exp == -sympy.Rational(1, 2):
            return f"torch.rsqrt({self._print(base)})"
        if exp.is_Integer and exp < 0:
            return f"(1/{self.parenthesize(base, 60)}**{-int(exp)})" if exp != -1 else f"(1/{self.parenthesize(base, 60)})"
        if exp.is_number:
            return f"{self.parenthesize(base, 60)}**{self._print(exp)}"
        return f"{self.parenthesize(base, 60)}**{self.parenthesize(exp, 60)}"

    def _print_Function(self, expr):
        name = expr.func.__name__
        args = ", ".join(self._print(a) for a in expr.args)
        if name in _TORCH_FUNCTIONS:
            return f"{_TORCH_FUNCTIONS[name]}({args})"
        if name in FUNCTIONS:
            return f"fn_{name}({args})"
        raise ValueError(f"no torch implementation for the function {name}")

    def _print_Min(self, expr):  # Min and Max are not Functions to the printer: without these, "Min(...)"
        return f"ops.minimum({', '.join(self._print(a) for a in expr.args)})"

    def _print_Max(self, expr):
        return f"ops.maximum({', '.join(self._print(a) for a in expr.args)})"

    def _print_Heaviside(self, expr):
        return f"ops.heaviside({self._print(expr.args[0])})"

    def _print_Pi(self, expr):
        return repr(math.pi)

    def _print_Exp1(self, expr):
        return repr(math.e)


@dataclass(frozen=True)
class KernelInput:
    """One argument of a kernel: a coordinate column, a field value or
    derivative (``key = (field index, multi-index)``), a param, an
    observed column, a component of the outward normal on a domain's
    boundary (``key`` = the space coordinate's index), or the value of a
    coefficient table at the points (``key`` = the table's name)."""

    kind: str  # "coordinate" | "value" | "param" | "observed" | "normal" | "table"
    key: object
    name: str


@dataclass(frozen=True)
class Kernel:
    name: str
    inputs: tuple[KernelInput, ...]
    n_outputs: int
    source: str
    fn: Callable = field(compare=False, repr=False, default=None)


def python_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) or name in _RESERVED or name.startswith("fn") else name


def derivative_key(atom: sympy.Basic, problem: ir.Problem) -> tuple[int, tuple[int, ...]]:
    """u(x, t) -> (0, ()); Derivative(u, (x, 2), t) -> (0, (0, 0, 1)) (sorted coordinate indices)."""
    symbols = problem.symbols
    if isinstance(atom, AppliedUndef):
        return problem.fields.index(atom.func.__name__), ()
    fn = atom.expr
    indices: list[int] = []
    for var, count in atom.variable_count:
        indices.extend([symbols.index(var)] * int(count))
    return problem.fields.index(fn.func.__name__), tuple(sorted(indices))


class KernelNames:
    """Readable, collision-free argument names: x, u, u_x, u_xt, k, u__obs."""

    def __init__(self, problem: ir.Problem):
        self.problem = problem
        self.used: dict[str, object] = {}

    def claim(self, preferred: str, key: object, fallback: str) -> str:
        name = python_name(preferred)
        if self.used.get(name, key) != key:
            name = fallback
        self.used[name] = key
        return name

    def value(self, key: tuple[int, tuple[int, ...] | LinearOperator]) -> str:
        f, mi = key
        field_name = self.problem.fields[f]
        if isinstance(mi, LinearOperator):
            return self.claim(f"L{field_name}", key, f"{field_name}__L")
        if not mi:
            return self.claim(field_name, key, f"{field_name}__")
        coords = [self.problem.coordinates[i].name for i in mi]
        return self.claim(f"{field_name}_{''.join(coords)}", key, f"{field_name}__" + "_".join(map(str, mi)))


def _with_operators(exprs: list[sympy.Expr], operators: dict[int, LinearOperator],
                    symbols: dict[tuple[int, tuple[int, ...]], sympy.Symbol]
                    ) -> tuple[list[sympy.Expr], dict[tuple[int, LinearOperator], sympy.Symbol]]:
    """Each residual c * (sum_k coef_k D^{mi_k} u) + rest, rewritten as c * L + rest with L one symbol
    (``find_operators`` made sure the residual is affine in those derivatives with these ratios)."""
    op_symbols: dict[tuple[int, LinearOperator], sympy.Symbol] = {}
    out = []
    for expr in exprs:
        for field, op in operators.items():
            terms = [symbols.get((field, mi)) for mi, _ in op.terms]
            if not any(t is not None and expr.has(t) for t in terms):
                continue
            if any(t is None for t in terms):
                raise ValueError(f"a residual uses part of the operator {op} of field {field}")
            first_mi, _ = op.terms[0]
            scale = sympy.diff(expr, symbols[(field, first_mi)])
            symbol = op_symbols.setdefault((field, op), sympy.Dummy(f"L{field}"))
            expr = expr.xreplace({t: 0 for t in terms}) + scale * symbol
        out.append(expr)
    return out, op_symbols


def generate_kernel(name: str, residuals: tuple[sympy.Expr, ...], problem: ir.Problem, *,
                    all_coordinates: bool = False, operators: dict[int, LinearOperator] | None = None) -> Kernel:
    """One kernel for the residual components of one condition (one face).

    ``all_coordinates``: take every coordinate column as an input (used for the
    exact solution, whose components may be constants: those are broadcast).
    ``operators``: field -> the linear operator its derivatives enter through on these
    points (``find_operators``); the kernel reads the operator's value as one input."""
    names = KernelNames(problem)
    inputs: list[KernelInput] = []
    replace: dict[sympy.Basic, sympy.Symbol] = {}
    atoms: set = set()
    for r in residuals:
        atoms |= r.atoms(sympy.Derivative)
    # derivatives first: u(x, t) inside Derivative(...) must not be replaced on its own
    stripped = [r.xreplace({a: sympy.Dummy() for a in atoms}) for r in residuals]
    for r in stripped:
        atoms |= r.atoms(AppliedUndef)
    value_atoms = sorted(atoms, key=lambda a: derivative_key(a, problem))
    value_symbols = {derivative_key(atom, problem): sympy.Dummy() for atom in value_atoms}
    residuals = [r.xreplace({atom: value_symbols[derivative_key(atom, problem)] for atom in value_atoms})
                 for r in residuals]
    op_symbols = {}
    if operators:
        residuals, op_symbols = _with_operators(residuals, operators, value_symbols)
    used = set().union(*(r.free_symbols for r in residuals)) if residuals else set()
    for key, symbol in list(value_symbols.items()) + list(op_symbols.items()):
        if symbol in used:  # named after its key once it is known to be read
            var = names.value(key)
            replace[symbol] = sympy.Symbol(var)
            inputs.append(KernelInput("value", key, var))
    # symbols left once the field values are inputs (x inside u_x(x, t) is not an input)
    free = set().union(*(r.xreplace(replace).free_symbols for r in residuals)) if residuals else set()
    for i, c in enumerate(problem.coordinates):
        if c.symbol in free or all_coordinates:
            var = names.claim(c.name, ("coordinate", i), f"c__{i}")
            replace[c.symbol] = sympy.Symbol(var)
            inputs.insert(sum(1 for k in inputs if k.kind == "coordinate"), KernelInput("coordinate", i, var))
    for p, _ in problem.params:
        sym = sympy.Symbol(p, real=True)
        if sym in free:
            var = names.claim(p, ("param", p), f"p__{p}")
            replace[sym] = sympy.Symbol(var)
            inputs.append(KernelInput("param", p, var))
    for f in problem.fields:
        sym = ir.observed(f)
        if sym in free:
            var = names.claim(f"{f}__obs", ("observed", f), f"{f}__obs")
            replace[sym] = sympy.Symbol(var)
            inputs.append(KernelInput("observed", f, var))
    for i, c in enumerate(problem.space):
        sym = ir.normal(c.name)
        if sym in free:
            var = names.claim(f"n_{c.name}", ("normal", i), f"n__{i}")
            replace[sym] = sympy.Symbol(var)
            inputs.append(KernelInput("normal", i, var))
    for table in problem.tables:
        sym = ir.table_value(table.name)
        if sym in free:
            var = names.claim(table.name, ("table", table.name), f"tab__{table.name}")
            replace[sym] = sympy.Symbol(var)
            inputs.append(KernelInput("table", table.name, var))
    exprs = [r.xreplace(replace) for r in residuals]
    temps, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols("_t"), optimizations="basic")
    printer_names = {sym: str(sym) for sym in replace.values()}
    lines = [f"def {name}({', '.join(k.name for k in inputs)}):"]
    coordinate_names = tuple(c.name for c in problem.coordinates)
    for k in inputs:
        if k.kind == "value" and isinstance(k.key[1], LinearOperator):
            lines.append(f"    # {k.name} = {k.key[1].text(problem.fields[k.key[0]], coordinate_names, exact=True)}")
    numbers: dict[sympy.Symbol, sympy.Expr] = {}  # temporaries that are plain numbers, by value
    for temp, value in temps:
        printer_names[temp] = str(temp)
        lines.append(f"    {temp} = {TorchKernelPrinter(printer_names, numbers).doprint(value)}")
        if value.xreplace(numbers).is_number:
            numbers[temp] = value.xreplace(numbers)
    outputs = []
    for expr in reduced:
        text = TorchKernelPrinter(printer_names, numbers).doprint(expr)
        if not expr.free_symbols:  # a constant component: broadcast it over the points
            if not inputs:
                raise ValueError(f"kernel {name}: a constant component and no inputs to shape it")
            text = f"torch.full_like({inputs[0].name}, {text})"
        outputs.append(text)
    lines.append(f"    return ({', '.join(outputs)},)")
    return Kernel(name, tuple(inputs), len(exprs), "\n".join(lines))


def build_kernels(kernels: list[Kernel], title: str) -> tuple[list[Kernel], str]:
    """Compile the kernels' source as one module; returns the kernels with
    their functions attached and the module source."""
    header = [f"# pinnspec residual kernels for problem '{title}' (generated; do not edit)",
              "import math", "import torch", "from pinnspec.compiler import _kernel_ops as ops", "", ""]
    source = "\n".join(header) + "\n\n\n".join(k.source for k in kernels) + "\n"
    namespace: dict = {"torch": __import__("torch"), "math": math, "ops": _kernel_ops}
    for name in FUNCTIONS.names():
        impl = getattr(FUNCTIONS.get(name), "torch_impl", None)
        if impl is not None:
            namespace[f"fn_{name}"] = impl
    exec(compile(source, f"<pinnspec kernels: {title}>", "exec"), namespace)
    built = [Kernel(k.name, k.inputs, k.n_outputs, k.source, namespace[k.name]) for k in kernels]
    return built, source
