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

from .. import ir
from ..compiler import CompiledProblem, Points
from ..forward import supports
from ..optim import quasi_newton
from ._compiled import CompiledLosses
from ._step import _reason

__all__ = ["SummedObjective", "ObjectiveGraph", "QuasiNewtonStage", "STALLED_LINE_SEARCHES", "SECOND_ORDER_BLOCKS"]

#: a quasi-Newton stage stops moving after this many line searches in a row without a decrease (at the precision floor)
STALLED_LINE_SEARCHES = 3
#: the resampling blocks of a quasi-Newton stage's later point sets (`stage ... resample = N`) are numbered
#: from here on (the block of one begun at epoch e is SECOND_ORDER_BLOCKS + e), apart from the spec's own
#: blocks (epoch // resample_every < 2^32), so that their draws are new ones
SECOND_ORDER_BLOCKS = 2 ** 32


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


def objective_compiles(training: ir.Training, problem: CompiledProblem, model: torch.nn.Module) -> bool:
    """Whether a quasi-Newton stage's objective (`SummedObjective`) runs as one compiled graph: ``compile`` on or
    ``graphs``, the forward derivative engine (not ``engine = autograd``) covering the network, and no ``causal``
    condition (its chunk weights are frozen for the stage, which the compiled sums do not take)."""
    return (training.setting("compile") != "off" and training.setting("engine") != "autograd"
            and not problem.causal and supports(problem.network(model)))


class ObjectiveGraph:
    """What compiles the quasi-Newton stages' objectives of a run, built once for all its stages: with ``compile``
    on (or ``graphs``: the line search keeps its evaluations' values, which a CUDA graph's replay would
    overwrite, so plain graphs) where `objective_compiles`; none (eager) once it failed to compile, which is
    said once (``notice``)."""

    def __init__(self, training: ir.Training, problem: CompiledProblem, model: torch.nn.Module,
                 notice: Callable[[str], None]):
        self.training, self.problem, self.model, self.notice = training, problem, model, notice
        self.graph: CompiledLosses | None | bool = None  # None before it is built, False once it failed

    def get(self) -> CompiledLosses | None:
        if self.graph is False or not objective_compiles(self.training, self.problem, self.model):
            return None
        if self.graph is None:
            self.graph = CompiledLosses(self.problem, self.model, "default")
        return self.graph

    def failed(self, text: str) -> None:
        """The objective did not compile: said once, and every later objective of the run is eager."""
        self.graph = False
        self.notice(text)


class QuasiNewtonStage:
    """A quasi-Newton stage in progress: its method (`pinnspec.optim.quasi_newton`), the method's state, the
    objective on the stage's points, and whether the method has stopped moving.

    ``index``/``start``: the stage's place (from 0) and its first epoch; ``points``: the run's `PointStream`
    (the stage's points are its ``fixed`` ones); ``weights()``: the task weights [m] (None without a `weights`
    statement), which a quasi-Newton stage does not change."""

    def __init__(self, stage: ir.Stage, index: int, start: int, *, problem: CompiledProblem, model, params,
                 grouping: ir.Grouping, condition_names: list[str], points, engine: str | None,
                 weights: Callable[[], torch.Tensor | None], graph: ObjectiveGraph,
                 notice: Callable[[str], None]):
        self.stage, self.index, self.start = stage, index, start
        self.problem, self.model, self.params = problem, model, params
        self.grouping, self.condition_names, self.points = grouping, condition_names, points
        self.engine, self.weights, self.graph, self.notice = engine, weights, graph, notice
        self.method = quasi_newton(stage.optimizer.name, stage.optimizer.options)
        self.label = stage.optimizer.name
        self.state = self.objective = None
        self.failures = 0  # consecutive line searches without a decrease
        self.stopped: str | None = None  # why the method stopped moving (converged or stalled), if it did

    def objective_at(self, epoch: int, points: Points | None = None) -> None:
        """The stage's points for ``epoch`` and its objective on them: the points drawn at the stage's first
        epoch, or (``resample = N``) at the first epoch of the N-epoch block holding ``epoch`` (``points``: those,
        as a checkpoint kept them)."""
        every = self.stage.resample
        first = self.start + (epoch - self.start) // every * every if every else self.start
        if points is None:
            points = self.points.draw(first, None if first == self.start else SECOND_ORDER_BLOCKS + first)
        self.points.fixed = points
        self.objective = SummedObjective(self.problem, self.model, self.params, points, self.grouping.name,
                                         self.weights(), self.engine, self.condition_names, compiled=self.graph.get(),
                                         failed=self.graph.failed)

    def begin(self, theta: torch.Tensor) -> None:
        """The method's state at ``theta`` [p] (one evaluation of the objective)."""
        self.state = self.method.init(self.objective, theta)

    def step(self, epoch: int, theta: torch.Tensor):
        """One iteration at ``theta`` [p]: (move [p] = x_new - x, the losses logged at x_new [m + C], the step's
        info or None once the method has stopped moving).  New points first where the stage resamples (the
        method's memory is kept)."""
        every = self.stage.resample
        if every and epoch > self.start and (epoch - self.start) % every == 0:
            self.objective_at(epoch)
            self.state = self.method.restarted(self.objective, theta, self.state)
            self.failures, self.stopped = 0, None
        move, info = torch.zeros_like(theta), None  # [p]
        if not self.stopped:
            move, self.state, info = self.method.step(self.objective, theta, self.state)
        return move, self.objective.logged(theta + move), info

    def check_progress(self, epoch: int, info) -> None:
        """Marks the stage stopped (with a notice) when its method converged on the gradient, or when
        `STALLED_LINE_SEARCHES` line searches in a row found no decrease."""
        self.failures = self.failures + 1 if info.t == 0.0 else 0
        reason = None
        if self.method.converged(self.state):
            reason = f"max |grad f| <= {self.method.tolerance_grad:g}"
        elif self.failures >= STALLED_LINE_SEARCHES:
            reason = f"{STALLED_LINE_SEARCHES} line searches in a row found no decrease of f = {info.loss:.6e}"
        if reason is not None:
            self.stopped = f"stopped at epoch {epoch + 1}: {reason}"
            self.notice(f"stage {self.index + 1} ({self.label}) {self.stopped}; its remaining epochs keep the "
                        "parameters")

    def divergence(self, epoch: int, tasks: list[float], conditions: list[float]) -> str:
        """What a non-finite epoch of the stage says."""
        at = f"training diverged at epoch {epoch + 1} (stage {self.index + 1}, {self.stage.optimizer.name})"
        for i, label in enumerate(self.grouping.labels):
            if not math.isfinite(tasks[i]):
                bad = [c for c, v in zip(self.condition_names, conditions) if not math.isfinite(v)]
                where = f" (condition {', '.join(bad)})" if bad else ""
                return f"{at}: the loss of task {i} '{label}'{where} is {tasks[i]}"
        return f"{at}: the step is not finite"

    def state_dict(self) -> dict:
        return {"quasi_newton": {**self.method.state_dict(self.state), "failures": self.failures,
                                 "stopped": self.stopped or "", "causal": self.objective.unit.causal_weights}}

    def load_state_dict(self, saved: dict, epoch: int, points: Points | None, theta: torch.Tensor) -> None:
        """The stage as a checkpoint at ``epoch`` kept it (``saved``: its `state_dict` entry, on the run's device):
        the points of the block the run resumes in (drawn again from (seed, epoch), or an adaptive sampler's as
        the checkpoint kept them: ``points``), the objective's frozen causal weights, the method's state."""
        self.objective_at(epoch, points)
        self.objective.unit.causal_weights = saved["causal"]
        self.state = self.method.load_state_dict(saved)
        self.failures, self.stopped = int(saved["failures"]), saved["stopped"] or None
        if self.problem.adaptive is not None and points is None:
            # a checkpoint written before checkpoints kept adaptive points: these were drawn anew from the
            # loaded model, so f and its gradient there, as at a resampling (a stale f fails line searches)
            self.state = self.method.restarted(self.objective, theta, self.state)
            self.failures, self.stopped = 0, None
