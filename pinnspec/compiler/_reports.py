"""The values of a spec's ``report`` statements for a model: quadrature of generated kernels.

Each ``integral(PART, EXPR)`` / ``mean(PART, EXPR)`` of a report is one kernel of its integrand (the same
code generation as the residuals), evaluated on the points of a deterministic quadrature rule
(:mod:`pinnspec.compiler._quadrature`) with the model's fields and input derivatives (the same derivative
plan and engine as training), and summed with the rule's weights in float64.  A report's value is then its
constant expression of those integrals and the params.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy
import torch

from .. import ir
from ._codegen import Kernel, build_kernels, generate_kernel
from ._derivatives import DerivativePlan
from ._quadrature import Rule, region_rule

#: quadrature points per model evaluation (bounds the memory of the derivative pass)
CHUNK = 8192


@dataclass(frozen=True)
class _Integral:
    integral: ir.ReportIntegral
    kernel: Kernel
    plan: DerivativePlan


class ReportEvaluator:
    """The reports of one compiled problem; kernels and rules are built once, here."""

    def __init__(self, problem):
        self.problem = problem
        p = problem.ir
        pending = []
        for report in p.reports:
            for k, integral in enumerate(report.integrals):
                pending.append((integral, generate_kernel(f"report_{report.name}_{k}", (integral.integrand,), p,
                                                          all_coordinates=True)))
        built, self.kernel_source = build_kernels([k for _, k in pending], p.name + " (reports)") if pending \
            else ([], "")
        self.integrals: dict[sympy.Symbol, _Integral] = {}
        for (integral, _), kernel in zip(pending, built):
            needs = {inp.key for inp in kernel.inputs if inp.kind == "value"}
            self.integrals[integral.symbol] = _Integral(integral, kernel,
                                                        DerivativePlan.build(needs, p.fields, problem.coordinates))
        self._rules: dict[object, Rule] = {}

    def rule(self, region) -> Rule:
        if region not in self._rules:
            self._rules[region] = region_rule(region, self.problem.ir.space)
        return self._rules[region]

    def evaluate(self, model, params: dict[str, torch.Tensor | float] | None = None, *, device=None,
                 dtype=None) -> dict[str, float]:
        device, dtype = _placement(model, device, dtype)
        values = {name: float(v) for name, v in self.problem.ir.params}
        values.update({name: float(v.detach()) if isinstance(v, torch.Tensor) else float(v)
                       for name, v in (params or {}).items()})
        tensors = {name: torch.tensor(v, dtype=dtype, device=device) for name, v in values.items()}
        out: dict[str, float] = {}
        for report in self.problem.ir.reports:
            numbers = {sympy.Symbol(name, real=True): sympy.Float(v, 17) for name, v in values.items()}
            for integral in report.integrals:
                numbers[integral.symbol] = sympy.Float(
                    self.integral(self.integrals[integral.symbol], model, tensors, device, dtype), 17)
            out[report.name] = float(sympy.sympify(report.value).xreplace(numbers).evalf(17))
        return out

    def integral(self, entry: _Integral, model, params, device, dtype) -> float:
        integral = entry.integral
        rule = self.rule(integral.region)
        total = 0.0
        for start in range(0, len(rule.weights), CHUNK):
            rows = slice(start, start + CHUNK)
            points = rule.points[rows]  # [n, d_space]
            if integral.time is not None:
                points = np.column_stack([points, np.full(len(points), integral.time)])  # [n, d]
            integrand = self._integrand(entry, model, params, points, None if rule.normals is None
                                        else rule.normals[rows], device, dtype)
            total += float(np.dot(rule.weights[rows], integrand))
        if integral.reduction == "mean":
            total /= float(np.sum(rule.weights))
        return total

    def _integrand(self, entry: _Integral, model, params, points: np.ndarray, normals: np.ndarray | None,
                   device, dtype) -> np.ndarray:
        """The integrand at ``points`` ``[n, d]`` -> ``[n]`` float64."""
        kernel = entry.kernel
        with torch.enable_grad():
            x = torch.as_tensor(points, dtype=dtype, device=device).requires_grad_(True)  # [n, d]
            needs_values = any(inp.kind == "value" for inp in kernel.inputs)
            values = self.problem.derivatives(model, entry.plan, x) if needs_values else {}
            args = []
            for inp in kernel.inputs:
                if inp.kind == "value":
                    args.append(values[inp.key])
                elif inp.kind == "coordinate":
                    args.append(x[:, inp.key])
                elif inp.kind == "param":
                    args.append(params[inp.key])
                elif inp.kind == "normal":
                    args.append(torch.as_tensor(normals[:, inp.key], dtype=dtype, device=device))
                elif inp.kind == "table":
                    args.append(torch.as_tensor(self.problem.table_values(inp.key, points), dtype=dtype,
                                                device=device))
                else:
                    raise ValueError(f"a report's integrand reads {inp.kind} '{inp.key}', which reports do not have")
            (result,) = kernel.fn(*args)
        return result.detach().to(torch.float64).cpu().numpy()


def _placement(model, device, dtype):
    """The device and dtype of the model's parameters (float64 on the CPU for a plain function)."""
    first = next(iter(model.parameters()), None) if isinstance(model, torch.nn.Module) else None
    if device is None:
        device = first.device if first is not None else torch.device("cpu")
    if dtype is None:
        dtype = first.dtype if first is not None else torch.float64
    return device, dtype
