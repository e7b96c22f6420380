"""``pinnspec verify``: the spec's ``exact`` solution through the training path.

The fields are replaced by the exact solution, evaluated as a torch function
of the sampled points, so that its derivatives go through the same
derivative plan and kernels as training (float64).  A correct spec has
residuals at rounding level; a typo (a sign, a coefficient) does not.

Judging: a condition passes when RMS(r) <= rtol * scale, where scale is the
largest RMS over the points of any additive term of its residual (so a
residual is small *relative to the terms that cancel in it*), floored at the
RMS of the exact fields over the whole domain (so ``u = 0`` on a face where
the solution vanishes is judged against the solution's size, not against
rounding noise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy
import torch

from .. import ir
from ..sampling import box_points
from ..sampling import domain_points
from ._codegen import build_kernels, generate_kernel
from ._problem import CompiledProblem

DEFAULT_RTOL = 1e-6


@dataclass(frozen=True)
class ConditionCheck:
    name: str
    points: int
    max_abs: float
    rms: float
    scale: float
    judged: bool
    note: str = ""
    rtol: float = DEFAULT_RTOL
    #: observations with stated noise: the rms the noise gives (its sd) and the allowed relative deviation
    #: from it (five standard deviations of the rms of that many values); None otherwise
    noise_rms: float | None = None
    noise_tolerance: float = 0.0

    @property
    def relative(self) -> float:
        return self.rms / self.scale if self.scale > 0 else math.inf

    @property
    def passed(self) -> bool:
        if not self.judged:
            return True
        if self.noise_rms is not None:  # the residual of noisy data is the noise: its rms must match it
            return math.isfinite(self.rms) and abs(self.rms / self.noise_rms - 1) <= self.noise_tolerance
        return math.isfinite(self.rms) and self.rms <= self.rtol * self.scale


class Checks(list):
    """The :class:`ConditionCheck` of every condition, and ``reports``: every ``report`` of the spec
    evaluated on the exact solution (``{name: value}``, empty without reports)."""

    reports: dict[str, float]

    def __init__(self, checks=(), reports: dict[str, float] | None = None):
        super().__init__(checks)
        self.reports = dict(reports or {})


#: how closely the output transform of `enforce` must reproduce its conditions' data (relative to the field scale)
ENFORCE_RTOL = 1e-10


def verify(problem: CompiledProblem, *, seed: int = 0, params: dict[str, float] | None = None,
           rtol: float = DEFAULT_RTOL) -> Checks:
    """Every condition as written, on the exact solution; and, for a spec with hard constraints (``enforce``),
    every enforced condition on the constrained output A + D * u* (its data must come back to
    `ENFORCE_RTOL`: a row '<condition> (enforced)')."""
    if problem.enforces or problem.left_out:  # every condition as written: the exact solution is the field
        problem = CompiledProblem(problem.written, enforce=False)
    if problem.exact_kernel is None:
        raise ValueError(f"the problem '{problem.ir.name}' has no 'exact' solution: verify needs one "
                         "(add 'exact FIELD = EXPR, ...')")
    params = dict(params or {})
    unknown = [p for p in params if p not in dict(problem.ir.params)]
    if unknown:
        known = ", ".join(n for n, _ in problem.ir.params) or "none"
        raise ValueError(f"unknown param '{unknown[0]}' (params are: {known})")
    dtype = torch.float64
    values = {name: params.get(name, initial) for name, initial in problem.ir.params}
    param_tensors = {name: torch.tensor(v, dtype=dtype) for name, v in values.items()}
    points = problem.sample(0, seed, dtype=dtype)
    residuals = problem.residuals(problem.exact, points, param_tensors)
    term_kernels = _term_kernels(problem)
    if problem.ir.domain is not None:  # the exact solution may be singular off the domain (in a hole)
        inside = domain_points(problem.ir.domain, problem.ir.coordinates, 1000, np.random.default_rng(seed))
    else:
        inside = box_points(problem.ir.coordinates, 1000, np.random.default_rng(seed))
    domain = torch.as_tensor(inside, dtype=dtype)
    field_scale = _rms(problem.exact(domain).reshape(-1))
    checks = []
    for cond in problem.ir.conditions:
        r = residuals[cond.name].detach()
        ck = problem.condition_kernels[cond.name]
        s = points.sets[ck.set_index]
        scale = field_scale
        plan = problem.plans[ck.set_index].plain()  # the term kernels read an operator's terms one by one
        slices = s.face_slices if ck.per_face else (slice(None),)
        for x, at_partner in ([(s.x, False), (s.partner, True)] if ck.periodic else [(s.x, False)]):
            vals = plan.evaluate(problem.exact(x), x)
            for k, rows in zip(term_kernels[cond.name], slices):
                for term in problem._call(k, x, vals, param_tensors, s, ck, rows, at_partner):
                    scale = max(scale, _rms(term.detach().reshape(-1)))
        unset = [p for p, _ in problem.ir.params if p not in params and _uses(cond, p)]
        note = ""
        if unset:
            note = (f"uses param {', '.join(unset)} at its initial value; "
                    f"pass --param {unset[0]}=VALUE to judge it")
        noise = cond.noise
        noise_rms, tolerance = None, 0.0
        if noise is not None:  # every value of r [n, k] is one observation's noise: rms ~ sd, +- sd/sqrt(2 n k)
            noise_rms, tolerance = noise, 5 / math.sqrt(2 * r.numel())
            note = (note + "; " if note else "") + (
                f"noise sd {noise:g} stated: rms / sd = {_rms(r.reshape(-1)) / noise:.3f} (allowed 1 ± {tolerance:.3f})")
        checks.append(ConditionCheck(cond.name, r.shape[0], float(r.abs().max()), _rms(r.reshape(-1)),
                                     scale, judged=not unset, note=note, rtol=rtol, noise_rms=noise_rms,
                                     noise_tolerance=tolerance))
    if problem.ir.hard_constraints:
        enforced = problem.residuals(problem.constrained(problem.exact), points, param_tensors)
        for name in (c for h in problem.ir.hard_constraints for c in h.conditions):
            r = enforced[name].detach()
            checks.append(ConditionCheck(f"{name} (enforced)", r.shape[0], float(r.abs().max()),
                                         _rms(r.reshape(-1)), max(field_scale, 1.0), judged=True,
                                         note="the output transform's value on the condition's points",
                                         rtol=ENFORCE_RTOL))
    return Checks(checks, problem.reports(problem.exact, values))


def _rms(t: torch.Tensor) -> float:
    return float(t.square().mean().sqrt()) if t.numel() else 0.0


def _uses(cond: ir.Condition, param: str) -> bool:
    sym = sympy.Symbol(param, real=True)
    groups = cond.face_residuals or (cond.residuals,)
    return any(r.has(sym) for g in groups for r in g)


def _term_kernels(problem: CompiledProblem):
    """Per condition (per face): a kernel returning every additive term of every component."""
    pending = {}
    kernels = []
    for cond in problem.ir.conditions:
        groups = cond.face_residuals or (cond.residuals,)
        ks = []
        for i, residuals in enumerate(groups):
            terms = tuple(t for r in residuals for t in sympy.Add.make_args(r))
            ks.append(generate_kernel(f"terms_{cond.name}_{i}", terms, problem.ir, all_coordinates=True))
        pending[cond.name] = ks
        kernels.extend(ks)
    built, _ = build_kernels(kernels, problem.ir.name + " (terms)")
    by_name = {k.name: k for k in built}
    return {name: [by_name[k.name] for k in ks] for name, ks in pending.items()}


def format_checks(checks: list[ConditionCheck], title: str) -> str:
    w = max([14] + [len(c.name) + 2 for c in checks])
    lines = [title, f"{'condition':<{w}}{'points':>8}{'max |r|':>12}{'rms r':>12}{'scale':>12}{'rms/scale':>12}  result"]
    for c in checks:
        result = ("ok" if c.passed else "FAIL") if c.judged else "not judged"
        lines.append(f"{c.name:<{w}}{c.points:>8}{c.max_abs:>12.3e}{c.rms:>12.3e}{c.scale:>12.3e}"
                     f"{c.relative:>12.3e}  {result}")
        if c.note:
            lines.append(f"{'':{w}}  note: {c.note}")
    reports = getattr(checks, "reports", None)
    if reports:
        lines.append("reports on the exact solution (quadrature)")
        lines.extend(f"  {name} = {value:.15g}" for name, value in reports.items())
    return "\n".join(lines)
