"""How one training step runs: the strategies, the plan that orders them, and the wrapper that demotes.

A strategy is a ``StepFn``: ``(theta [p], points, chain state, queued) -> StepOut`` -- the losses, G [m, p]
and one step of the update chain (nothing applied: the trainer applies p).  ``queued`` is called once the
losses and G are queued on the device, so that the host can draw the next points while the device works.

    eager          losses and G by autograd (one backward pass per task), the chain eagerly
    two graphs     losses and G compiled (one graph over every point set, or where the network adds its own
                   loss term one graph per set and a backward pass per task), the chain compiled or eager
    one graph      losses, G and the chain as ONE torch.compile graph (step counts symbolic ints)
    one CUDA graph the one graph recorded as a CUDA graph (compile = graphs on CUDA; step counts on the device)

A summing run (surgery none, no alignment) steps between validations by the weighted sum's gradient alone:
where the one graph would run, by the summed one graph (`_traced`: traced by make_fx, compiled by inductor,
called without torch.compile's frame capture), else by the summed losses compiled or eagerly.

`plan_execution` lists the candidates in order of preference with the reason for each, and why the faster
ones are not candidates; `Execution` runs the first and, where a compiled part fails, demotes to the next
candidate that does not compile that part, with one notice.  Steps with a Hessian estimate (AdaHessian,
SophiaG) always run eagerly: the estimate needs double backward.  Data-parallel training (`_parallel`) sums
G and the losses over the ranks between the losses and the chain.  ``pinnspec show --stage step SPEC``
prints the plan.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from .._compiling import aot_cacheable, compiled, own_code, symbolic
from ..compiler import CompiledProblem, Losses, Points, added_up
from ..optim import hutchinson_diagonal
from ._chain import ChainState, ChainStep, UpdateChain
from ._compiled import CompiledLosses
from ._gradients import loss_gradients
from ._step import (COMPILED_PARTS, EAGER, LOSSES_COMPILED, ONE_CUDA_GRAPH, ONE_GRAPH, SUMMED_GRAPH,
                    SUMMED_ONE_GRAPH, SUMMED_STRATEGIES, TWO_GRAPHS, Demote, StepContext, StepFn, StepOut, _copied,
                    _has_step, _reason)

__all__ = ["ExecutionPlan", "Candidate", "Execution", "plan_execution", "STEP_COUNTS", "RECORDING_CALLS"]

#: the step counts of the surgery and optimizer states: ints that change every step, symbolic in the one-graph
#: step (torch.compile's ``dynamic_sources``; the compiled function's argument names) while every tensor
#: shape stays static
STEP_COUNTS = "L['surgery_state'].step,L['optimizer_state'].step"
#: calls in which CUDA graphs warm up (1), record (2) and first replay (3) a compiled function
RECORDING_CALLS = 3

# ====================================================================== the plan
@dataclass(frozen=True)
class Candidate:
    name: str
    reason: str

    @property
    def compiled(self) -> set[str]:
        return COMPILED_PARTS[self.name]


@dataclass(frozen=True)
class ExecutionPlan:
    """The strategies a run may use, in order; ``not_taken``: (strategy, why not); ``notes``: what else
    the run should know (one line each, printed when training starts); ``mode``: torch.compile's mode
    (None where nothing compiles); ``engine``: the derivative engine of the eager losses."""

    candidates: tuple[Candidate, ...]
    not_taken: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    mode: str | None = None
    engine: str | None = None
    hessian_steps: str | None = None
    header: str = ""
    #: how the steps between validations run where they take one backward pass of the weighted sum, else None
    summed_steps: str | None = None

    def describe(self, current: str | None = None) -> str:
        lines = [self.header] if self.header else []
        for i, c in enumerate(self.candidates, 1):
            mark = "  <- runs now" if c.name == current else ""
            lines.append(f"  {i}. {c.name}: {c.reason}{mark}")
        for name, why in self.not_taken:
            lines.append(f"  not {name}: {why}")
        if self.hessian_steps:
            lines.append(f"  steps with a Hessian estimate: {self.hessian_steps}")
        if self.summed_steps:
            lines.append(f"  between validations: {self.summed_steps}")
        return "\n".join(lines)


def plan_execution(problem: CompiledProblem, model, chain: UpdateChain, *, grouping: str, num_losses: int,
                   device: torch.device, distributed: bool = False) -> ExecutionPlan:
    """The ordered candidates for ``compile = off | on | graphs`` (the spec's), with the reasons."""
    from ..forward import supports

    t = problem.ir.training
    compile_setting, engine = t.setting("compile"), t.setting("engine")
    weights = f"weights {t.weights} -> " if t.weights.name != "none" else ""
    stacking = problem.stacking(device)
    stack = "" if engine == "autograd" else f", stack = {stacking}"
    header = (f"how a step of '{problem.ir.name}' runs (compile = {compile_setting}, engine = {engine}{stack}, "
              f"{device.type}, grouping {grouping}: {num_losses} losses; chain {weights}{t.surgery} -> "
              f"{t.optimizer} -> {t.align}):")
    # `stack = sets` (one network pass over every set) is a form of the compiled step's `FusedGradients`
    sets_note = "; rows stacked as stack = on does (sets: compiled steps only)" if stacking == "sets" else ""
    eager = Candidate(EAGER, f"losses and G by autograd, one backward pass per task; the chain eagerly{sets_note}")
    hessian = ("eager (the estimate needs double backward through the losses)" if chain.uses_hessian else None)
    summed = None
    if chain.sums_tasks and t.setting("diagnostics") == "validation":
        summed = ("one backward pass of the weighted sum of the task losses (with compile on, where the one graph "
                  "runs: the losses, that gradient and the chain's step traced as one graph and compiled by inductor, "
                  "'summed one graph'; else the losses and that gradient as one graph, 'summed graph'); G and the "
                  "conflict statistics at validation epochs only, by the eager step (surgery none, no alignment; "
                  "train diagnostics = every: at every step)"
                  + (f", and where {t.weights.name} measures G" if chain.weights.measures == "G" else "")
                  + ("; a CUDA graph's steps form G at every step" if compile_setting == "graphs"
                     and device.type == "cuda" else ""))
    if compile_setting == "off":
        return ExecutionPlan((eager,), (("compiled", "compile = off (the default)"),), header=header,
                             hessian_steps=hessian, summed_steps=summed)
    why_not = None
    if chain.weights.pointwise:
        why_not = (f"compile = {compile_setting}: weights {t.weights.name} updates its per-point weights from each "
                   "step's residuals inside the losses; training eagerly")
    elif engine == "autograd":
        why_not = (f"compile = {compile_setting} needs the forward engine (engine = auto or forward); "
                   "training eagerly with autograd")
    elif not supports(problem.network(model)):
        why_not = (f"compile = {compile_setting}: the forward derivative engine does not cover "
                   f"{type(problem.network(model)).__name__}; training eagerly with nested autograd")
    if why_not is not None:
        return ExecutionPlan((eager,), (("compiled", why_not),), notes=(why_not,), header=header,
                             hessian_steps=hessian, summed_steps=summed)
    cuda_graphs = device.type == "cuda" and compile_setting == "graphs"
    mode = "reduce-overhead" if cuda_graphs else "default"
    notes = []
    if chain.uses_hessian:
        notes.append(f"compile = {compile_setting}: the Hessian-estimate steps of this optimizer run eagerly "
                     "(double backward does not compile); the other steps are compiled")
    fused = not problem.model_terms(model)
    losses_how = ("every point set's losses and G as one graph" if fused else
                  "one graph per point set (the network adds its own loss term), one backward pass per task"
                  + sets_note)
    candidates, not_taken = [], []
    one = ONE_CUDA_GRAPH if cuda_graphs else ONE_GRAPH
    if not chain.compiles:
        not_taken.append((one, "the update chain does not compile (a host decision or a random stream inside "
                               "its surgery or optimizer)"))
    elif distributed:
        not_taken.append((one, "data-parallel: G is summed over the ranks between the losses and the chain"))
    elif not fused:
        not_taken.append((one, "the network adds its own loss term (outside the point sets' graphs), so G does "
                               "not come from one pass over the sets"))
    elif cuda_graphs and not chain.capturable:
        not_taken.append((one, f"the chain cannot be recorded as a CUDA graph: {t.optimizer} needs Hessian "
                               "estimates on some steps"))
    else:
        what = ("recorded as one CUDA graph, step counts kept on the device" if cuda_graphs
                else "torch.compile, step counts symbolic")
        candidates.append(Candidate(one, f"losses, G and the update chain as one graph ({what})"))
    if chain.compiles:
        candidates.append(Candidate(TWO_GRAPHS, f"{losses_how}; the update chain compiled apart"))
    candidates.append(Candidate(LOSSES_COMPILED, f"{losses_how}; the update chain eagerly"))
    candidates.append(Candidate(EAGER, "losses and G eagerly by the forward engine (what a failed compile "
                                       f"falls back to: the same values){sets_note}"))
    return ExecutionPlan(tuple(candidates), tuple(not_taken), tuple(notes), mode=mode, engine="forward",
                         hessian_steps=hessian, header=header, summed_steps=summed)


# ====================================================================== the strategies
class EagerStep:
    name = EAGER

    def __init__(self, ctx: StepContext, engine: str | None = None):
        self.ctx, self.engine = ctx, engine

    def __call__(self, theta, points, state, queued, *, hessian_due: bool = False, summed: bool = False,
                 joint: bool = False) -> StepOut:
        """``summed``: one backward pass of sum_i lambda_i L_i instead of G (a chain that `sums_tasks`);
        ``joint``: the sets a pool joins in one network pass (`CompiledProblem.residuals`)."""
        ctx = self.ctx
        losses = ctx.problem.losses(ctx.model, points, ctx.params, ctx.grouping, engine=self.engine,
                                    point_weights=ctx.point_weights, joint=joint)
        if summed:
            g = loss_gradients([_weighted_sum(losses.task_list, state.weights)], ctx.theta,
                               retain_graph=hessian_due)[0]  # [p]
        else:
            G = loss_gradients(losses.task_list, ctx.theta, retain_graph=hessian_due)  # [m, p]
        queued()
        hessian = None
        if hessian_due:  # the same probes on every rank: the sum of the estimates is the whole loss's
            hessian = hutchinson_diagonal(sum(losses.task_list), ctx.theta, generator=ctx.generator)
        logged = ctx.logged(losses)
        if summed:
            ctx.reduce(g, logged, hessian)
            return StepOut(losses, logged, None, ctx.chain.update_summed(g, theta, state, hessian=hessian))
        ctx.reduce(G, logged, hessian)
        step = ctx.chain.update(G, theta, state, hessian=hessian, generator=ctx.generator)
        return StepOut(losses, logged, G, step)


class SummedGraph:
    """A summed step with the losses compiled: the task losses and the gradient of their weighted sum by one
    compiled graph (`CompiledLosses.summed`: one pullback per point set), the chain's step eagerly."""

    name = SUMMED_GRAPH

    def __init__(self, ctx: StepContext, losses: CompiledLosses):
        self.ctx, self.compiled_losses = ctx, losses
        self.m = len(ctx.problem.grouping(ctx.grouping).tasks)

    def __call__(self, theta, points, state, queued) -> StepOut | None:
        """The step, or None where the network adds its own loss term (outside the compiled sets)."""
        ctx = self.ctx
        lam = state.weights.to(theta) if state.weights is not None else theta.new_ones(self.m)  # [m]
        try:
            out = self.compiled_losses.summed(points, ctx.params, ctx.grouping, theta, lam)
        except torch._dynamo.exc.TorchDynamoException as err:
            raise Demote("losses", f"the losses do not compile ({_reason(err)}); training eagerly") from None
        if out is None:
            return None
        tasks, conditions, g = out  # [m], [C], [p]
        queued()
        losses = self.compiled_losses.fused(ctx.params, ctx.grouping).losses(tasks, conditions)
        logged = ctx.logged(losses)
        ctx.reduce(g, logged)
        return StepOut(losses, logged, None, ctx.chain.update_summed(g, theta, state))


def _weighted_sum(tasks: list[torch.Tensor], weights: torch.Tensor | None) -> torch.Tensor:
    """sum_i lambda_i L_i (lambda = ``weights`` [m], or 1 without a weights stage)."""
    if weights is None:
        return added_up(tasks)
    lam = weights.to(tasks[0].dtype)  # [m]
    return added_up(lam[i] * task for i, task in enumerate(tasks))


class TwoGraphs:
    """The losses and G compiled; the chain compiled (``compile_chain``) or eager."""

    def __init__(self, ctx: StepContext, losses: CompiledLosses, *, compile_chain: bool):
        self.ctx, self.compiled_losses = ctx, losses
        self.name = TWO_GRAPHS if compile_chain else LOSSES_COMPILED
        # one graph for every step: the step counts are ints that change every step (dynamic)
        self.chain = compiled(_bound(_chain_update, ctx.chain), dynamic=True) \
            if compile_chain else None

    def __call__(self, theta, points, state, queued) -> StepOut:
        ctx = self.ctx
        try:
            fused = self.compiled_losses.losses_and_gradients(points, ctx.params, ctx.grouping, theta)
            if fused is None:
                losses = self.compiled_losses.losses(points, ctx.params, ctx.grouping)
                fused = losses, loss_gradients(losses.task_list, ctx.theta)  # [m, p]
        except torch._dynamo.exc.TorchDynamoException as err:
            raise Demote("losses", f"the losses do not compile ({_reason(err)}); training eagerly") from None
        losses, G = fused
        queued()
        logged = ctx.logged(losses)
        ctx.reduce(G, logged)
        if self.chain is None:
            return StepOut(losses, logged, G, ctx.chain.update(G, theta, state, generator=ctx.generator))
        try:
            step = self.chain(G, theta, None, state.surgery, state.optimizer, state.weights)
            step = step._replace(state=step.state._replace(weights=state.weights))  # the input's, not an alias
        except torch._dynamo.exc.TorchDynamoException as err:
            raise Demote("chain", f"the update chain ({ctx.chain_label}) does not compile ({type(err).__name__}); "
                                  "it runs eagerly") from None
        return StepOut(losses, logged, G, step)


class OneGraph:
    """Losses, G and the chain as one compiled graph.  ``steps_on_device``: the chain's step counts as 0-d
    float64 device tensors fed from one step to the next (what CUDA graphs need: a recorded graph replays
    the same kernel arguments at every step), else ints, symbolic in the graph (`STEP_COUNTS`)."""

    def __init__(self, ctx: StepContext, losses: CompiledLosses, *, steps_on_device: bool):
        self.ctx, self.compiled_losses, self.steps_on_device = ctx, losses, steps_on_device
        self.name = ONE_CUDA_GRAPH if steps_on_device and losses.mode == "reduce-overhead" else ONE_GRAPH
        self.calls = 0  # completed calls
        self.device_steps: dict[str, torch.Tensor] | None = None  # state name -> its step count, on the device
        # static shapes: the point sets' sizes never change (static kernels were faster than dynamic ones)
        self.compiled = compiled(_bound(_one_graph_step, ctx.chain),
                                 dynamic=False if steps_on_device else None, mode=losses.mode)

    def state_loaded(self) -> None:
        """The trainer's state was replaced (a resume): the device copies of the step counts are stale."""
        self.device_steps = None

    def __call__(self, theta, points, state, queued) -> StepOut:
        fused = self.compiled_losses.fused(self.ctx.params, self.ctx.grouping)
        inputs, counts = fused.inputs(points)
        states = {"surgery": state.surgery, "optimizer": state.optimizer}
        if self.steps_on_device:
            if self.device_steps is None:  # the first step, or the first after a resume
                self.device_steps = {name: torch.tensor(float(s.step), dtype=torch.float64, device=theta.device)
                                     for name, s in states.items() if _has_step(s)}
            states.update({name: replace(states[name], step=step) for name, step in self.device_steps.items()})
        try:
            with aot_cacheable(), symbolic("" if self.steps_on_device else STEP_COUNTS):
                tasks, conditions, G, step = self.compiled(fused, theta, inputs, counts, states["surgery"],
                                                           states["optimizer"], state.weights)
        except torch._dynamo.exc.TorchDynamoException as err:
            raise Demote("step", f"the step does not compile as one graph ({_reason(err)}); the losses and the "
                                 "update chain compile apart") from None
        except RuntimeError as err:
            # CUDA graphs warm up and record in the first calls: an op a graph cannot hold fails there, with a
            # CUDA error rather than a compiler's; later, a RuntimeError is the run's own
            if not self.steps_on_device or self.calls >= RECORDING_CALLS:
                raise
            raise Demote("step", f"the step's CUDA graph cannot be recorded ({_reason(err)}); the losses and the "
                                 "update chain compile apart") from None
        self.calls += 1
        queued()  # the whole step is queued: on a GPU the host samples while it runs
        losses = fused.losses(tasks, conditions)
        steps = None
        if self.steps_on_device:
            # a CUDA graph's outputs are overwritten by its next replay: the states it feeds back are copies
            chain_state = ChainState(_copied(step.state.surgery), _copied(step.state.optimizer), state.weights)
            step = step._replace(state=chain_state)
            self.device_steps = {name: getattr(chain_state, name).step for name in self.device_steps}
            steps = dict(self.device_steps)
        # the weights pass through the step unchanged: the caller's tensor, never a graph's output buffer
        step = step._replace(state=step.state._replace(weights=state.weights))
        return StepOut(losses, self.ctx.logged(losses), G, step, steps)


def _chain_update(chain: UpdateChain, G, theta, hessian, surgery_state, optimizer_state, weights=None) -> ChainStep:
    """The chain's step with the state as separate arguments (compiled apart from the losses; ``weights``
    None: no weights stage)."""
    return chain.update(G, theta, ChainState(surgery_state, optimizer_state, weights), hessian=hessian)


def _one_graph_step(chain: UpdateChain, fused, theta, inputs, counts, surgery_state, optimizer_state,
                    weights=None):
    """The one-graph step: (tasks [m], conditions [C], G [m, p], the chain's step), a pure function of its
    arguments (compiled whole)."""
    tasks, conditions, G = fused(theta, inputs, counts)
    return tasks, conditions, G, chain.update(G, theta, ChainState(surgery_state, optimizer_state, weights))


def _bound(fn, chain: UpdateChain):
    """``fn`` with a code object of its own (see `own_code`), its first argument bound to ``chain``."""
    return types.MethodType(own_code(fn), chain)


# ====================================================================== the wrapper
@dataclass
class Execution:
    """Runs each step by the current strategy of ``plan``; a compiled part that fails demotes to the next
    candidate that does not compile that part (one notice each).  Steps with a Hessian estimate run by the
    eager strategy."""

    plan: ExecutionPlan
    ctx: StepContext
    notice: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr))
    strategy: StepFn | None = None
    _index: int = 0
    _losses: CompiledLosses | None = None
    _eager: EagerStep | None = None
    _summed: StepFn | None = None

    def __post_init__(self):
        self._eager = EagerStep(self.ctx, self.plan.engine)
        self.strategy = self._build(self.plan.candidates[0])

    @property
    def current(self) -> str:
        """The strategy that runs the steps now (a summing run's: its summed step's where it compiles the
        losses)."""
        if self.summing and "losses" in COMPILED_PARTS[self.strategy.name]:
            return SUMMED_ONE_GRAPH if self.strategy.name == ONE_GRAPH else SUMMED_GRAPH
        return self.strategy.name

    def describe(self) -> str:
        return self.plan.describe(self.current)

    def __call__(self, theta, points, state, queued, *, hessian_due: bool = False, summed: bool = False
                 ) -> StepOut:
        """One step.  In a summing run (`summing`) a ``summed`` step takes one backward pass of the weighted sum
        of the task losses (by the compiled losses where the strategy compiles them: `SummedGraph`, else
        eagerly), and its other steps (validation epochs: G and the conflict statistics) the eager full step;
        otherwise every step is the strategy's full step (a CUDA graph's or a group's also in a summing chain)."""
        summing = self.summing
        while True:
            compiled = "losses" in COMPILED_PARTS[self.strategy.name]
            if hessian_due or (summing and not (summed and compiled)):
                # a summing run's diagnosed steps (G every few hundred steps) run eagerly: no second graph; its
                # eager steps evaluate the sets a pool joins in one pass
                return self._eager(theta, points, state, queued, hessian_due=hessian_due, summed=summing and summed,
                                   joint=summing)
            try:
                if not summing:
                    return self.strategy(theta, points, state, queued)
                out = self._summed_graph()(theta, points, state, queued)
                return out if out is not None else self._eager(theta, points, state, queued, summed=True,
                                                               joint=True)
            except Demote as failure:
                self.notice(failure.notice)
                self._demote(failure.part)

    @property
    def summing(self) -> bool:
        """Whether the run's steps between validations take one backward pass of the weighted sum (the plan's
        `summed_steps`, and a strategy that takes it: `SUMMED_STRATEGIES`)."""
        return self.plan.summed_steps is not None and self.strategy.name in SUMMED_STRATEGIES

    def _summed_graph(self) -> StepFn:
        """A summing run's summed step for the current strategy: the summed one graph in place of the one graph,
        else the summed losses compiled with the chain eagerly (built once each)."""
        one = self.strategy.name == ONE_GRAPH
        if self._summed is None or (self._summed.name == SUMMED_ONE_GRAPH) != one:
            from ._traced import TracedSummedGraph

            self._summed = (TracedSummedGraph(self.ctx, self.compiled_losses()) if one
                            else SummedGraph(self.ctx, self.compiled_losses()))
        return self._summed

    def losses(self, points: Points, *, eager: bool = False) -> Losses:
        """The losses as the current strategy computes them (the compiled per-set units where it compiles the
        losses, unless ``eager``: e.g. for a Hessian estimate, which needs double backward)."""
        ctx = self.ctx
        if not eager and "losses" in COMPILED_PARTS[self.strategy.name]:
            return self.compiled_losses().losses(points, ctx.params, ctx.grouping)
        return ctx.problem.losses(ctx.model, points, ctx.params, ctx.grouping, engine=self.plan.engine)

    def install(self, strategy: StepFn) -> None:
        """Run by ``strategy`` from now on (tests, benchmarks): it demotes like a planned one."""
        self.strategy = strategy

    def state_loaded(self) -> None:
        getattr(self.strategy, "state_loaded", lambda: None)()

    def compiled_losses(self) -> CompiledLosses:
        """The compiled losses (built on first use: compiling nothing costs nothing)."""
        if self._losses is None:
            self._losses = CompiledLosses(self.ctx.problem, self.ctx.model, self.plan.mode)
        return self._losses

    def one_graph(self, *, steps_on_device: bool) -> OneGraph:
        return OneGraph(self.ctx, self.compiled_losses(), steps_on_device=steps_on_device)

    def _build(self, candidate: Candidate) -> StepFn:
        if candidate.name in (ONE_GRAPH, ONE_CUDA_GRAPH):
            return self.one_graph(steps_on_device=candidate.name == ONE_CUDA_GRAPH)
        if candidate.name in (TWO_GRAPHS, LOSSES_COMPILED):
            return TwoGraphs(self.ctx, self.compiled_losses(), compile_chain=candidate.name == TWO_GRAPHS)
        return self._eager

    def _demote(self, part: str) -> None:
        names = [c.name for c in self.plan.candidates]
        start = names.index(self.strategy.name) + 1 if self.strategy.name in names else 0
        for candidate in self.plan.candidates[start:]:
            if part not in candidate.compiled:
                self.strategy = self._build(candidate)
                return
        self.strategy = self._eager
