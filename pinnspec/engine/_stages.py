"""Second-order stages: what a quasi-Newton stage (``lbfgs``, ``bfgs``, ``ssbfgs``, ``ssbroyden``) minimises,
and how.

A first-order stage runs the update chain (weights -> surgery -> proposal -> alignment, `_chain`).  A
second-order stage minimises ONE objective instead,

    f(theta) = sum_i lambda_i L_i(theta)        L_i the task losses of the spec's grouping on the stage's
                                                points, lambda [m] the task weights when the stage began (1
                                                without a `weights` statement), frozen for the whole stage; a
                                                causal condition's chunk weights are frozen while the points
                                                are, and `weights rba`'s per-point weights are not applied

by a quasi-Newton method with a line search (`pinnspec.optim._quasi_newton`).  Why the sum and not a
surgery-combined direction: a quasi-Newton method builds its curvature pairs from differences of the gradient
of one function and accepts a step by the Wolfe conditions on that function.  The direction of a surgery method
(ConFIG, PCGrad, ...) is not the gradient of any function, so neither the pairs nor the line search would mean
anything; and GUA aligns an optimizer's *proposal* with the optimizer state of an adaptive first-order method
(the paper's Adam moments), which a quasi-Newton method does not have.  A second-order stage therefore applies
neither surgery nor alignment, and says so when it begins.

Points: those of the point plan at the stage's first epoch, fixed for the stage; with ``resample = N`` the stage
draws new ones every N of its epochs (the spec's sampler; an adaptive sampler follows the model's residual) and
evaluates f and its gradient anew there, keeping the method's memory (the curvature pairs, or the dense inverse
Hessian), as Urban, Stefanou & Pons (2025) do between their BFGS restarts.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..compiler import CompiledProblem, Points
from ._compiled import CompiledLosses
from ._execute import _reason

__all__ = ["SummedObjective"]


class _LossesUnit(torch.nn.Module):
    """The model as the one submodule of a module whose call is the problem's losses: what
    `torch.func.functional_call` runs with the parameters of a trial point."""

    def __init__(self, problem: CompiledProblem, model: torch.nn.Module, grouping: str | None, engine: str | None,
                 causal_weights: dict[str, torch.Tensor]):
        super().__init__()
        self.model = model
        self.problem, self.grouping, self.engine = problem, grouping, engine
        self.causal_weights = causal_weights

    def forward(self, points: Points, params: dict[str, torch.Tensor]):
        return self.problem.losses(self.model, points, params, self.grouping, engine=self.engine,
                                   causal_weights=self.causal_weights)


class SummedObjective:
    """``objective(theta [p]) -> (f, grad f [p])`` with f = sum_i lambda_i L_i on fixed points, a pure
    function of theta (the model and params are not changed: each call runs the model with theta's pieces
    through `torch.func.functional_call`).  theta is the trainer's flat vector: the model's parameters, then
    the spec's params, in that order.  The last calls' task and condition losses are kept (`logged`)."""

    def __init__(self, problem: CompiledProblem, model: torch.nn.Module, params: dict[str, torch.Tensor],
                 points: Points, grouping: str | None, weights: torch.Tensor | None, engine: str | None,
                 condition_names: list[str], keep: int = 64, compiled: CompiledLosses | None = None,
                 failed: Callable[[str], None] = print):
        # the causal chunk weights of the stage's first parameters, frozen like lambda: with weights that follow
        # the residuals (and carry no gradient) f would not be the function whose gradient this returns
        causal = problem.causal_weights(model, points, params, engine=engine) if problem.causal else {}
        self.unit = _LossesUnit(problem, model, grouping, engine, causal)
        self.points = points
        self.names = ["model." + name for name, _ in model.named_parameters()]
        self.param_names = list(params)
        self.shapes = [tuple(t.shape) for t in model.parameters()] + [tuple(t.shape) for t in params.values()]
        self.sizes = [math.prod(shape) for shape in self.shapes]
        self.weights = weights  # [m] or None
        self.condition_names = condition_names
        self.keep = keep
        #: f and its gradient by one compiled graph (`CompiledLosses.summed`; not with causal weights, frozen
        #: here, which the compiled sums recompute), or None: eagerly.  ``failed(notice)``: it did not compile
        self.compiled, self.failed = compiled, failed
        self.params = params
        self.grouping = grouping
        self.m = len(problem.grouping(grouping).tasks)
        order = list(problem.condition_kernels)  # the compiled losses' order of the conditions
        self._condition_rows = [order.index(name) for name in condition_names]
        self._logged: list[tuple[torch.Tensor, torch.Tensor]] = []  # (theta [p], losses [m + C]), newest last

    def __call__(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self._compiled_call(theta) if self.compiled is not None else None
        return out if out is not None else self._eager_call(theta)

    def _compiled_call(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """f and its gradient by the compiled graph; None (and eagerly from then on) where it does not compile
        (``failed`` is told) or the network adds its own loss term."""
        lam = self.weights.to(theta) if self.weights is not None else theta.new_ones(self.m)  # [m]
        try:
            out = self.compiled.summed(self.points, self.params, self.grouping, theta, lam)
        except torch._dynamo.exc.TorchDynamoException as err:
            self.failed(f"the quasi-Newton stage's objective does not compile ({_reason(err)}); it runs eagerly")
            out = None
        if out is None:
            self.compiled = None
            return None
        tasks, conditions, gradient = out  # [m], [C], [p]
        f = (lam * tasks).sum()
        logged = torch.cat([tasks, conditions[self._condition_rows]])  # [m + C], as the eager call logs them
        self._logged = (self._logged + [(theta.detach(), logged)])[-self.keep:]
        return f, gradient

    def _eager_call(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        leaf = theta.detach().requires_grad_(True)  # [p]
        pieces = [piece.view(shape) for piece, shape in zip(leaf.split(self.sizes), self.shapes)]
        weights = dict(zip(self.names, pieces))
        params = dict(zip(self.param_names, pieces[len(self.names):]))
        with torch.enable_grad():
            losses = torch.func.functional_call(self.unit, weights, (self.points, params))
            tasks = torch.stack(losses.task_list)  # [m]
            lam = self.weights.to(tasks.dtype) if self.weights is not None else torch.ones_like(tasks)  # [m]
            f = (lam * tasks).sum()
            (gradient,) = torch.autograd.grad(f, leaf)  # [p]
        logged = torch.cat([tasks.detach(), torch.stack([losses.conditions[c].detach()
                                                         for c in self.condition_names])])  # [m + C]
        self._logged = (self._logged + [(theta.detach(), logged)])[-self.keep:]
        return f.detach(), gradient

    def logged(self, theta: torch.Tensor) -> torch.Tensor:
        """[m + C]: the task and condition losses at ``theta``, from the kept calls, else evaluated now."""
        for x, values in reversed(self._logged):
            if torch.equal(x, theta):
                return values
        self(theta)
        return self._logged[-1][1]
