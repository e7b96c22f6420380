"""What every step strategy shares: the strategies' names, a step's output, the context it reads, the
demotion it raises, and the one fetch of a step's values to the host (`_execute` runs the strategies,
`_traced` is one of them)."""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Callable, NamedTuple, Protocol

import torch

from ..catalog import GROUP_STRATEGIES
from ..compiler import CompiledProblem, Losses, Points
from ._chain import ChainState, ChainStep, UpdateChain

__all__ = ["StepOut", "StepFn", "Demote", "StepContext", "StepValues", "fetch", "packed", "with_host_steps",
           "COMPILED_PARTS", "SUMMED_STRATEGIES"]

#: the strategies, fastest first; each names the parts it compiles
ONE_CUDA_GRAPH, ONE_GRAPH, TWO_GRAPHS, LOSSES_COMPILED, EAGER = (
    "one CUDA graph", "one graph", "two graphs", "losses compiled, chain eager", "eager")
#: a run of a `RunGroup` (`_group`): its losses and G come from the group's one graph over every run
BATCHED, BATCHED_CHAIN_EAGER = GROUP_STRATEGIES
#: the strategies whose summed steps take one backward pass of the weighted sum (`Execution.__call__`): not a
#: CUDA graph's (its replay would need a second recorded graph) nor a group's (G comes from the group's graph)
SUMMED_STRATEGIES = (ONE_GRAPH, TWO_GRAPHS, LOSSES_COMPILED, EAGER)
#: a summing run's steps with the losses compiled: the losses and their weighted sum's gradient as one graph
SUMMED_GRAPH = "summed graph"
#: a summing run's steps where the one graph would run: the losses, their weighted sum's gradient and the chain's
#: summed step as one graph
SUMMED_ONE_GRAPH = "summed one graph"
COMPILED_PARTS = {ONE_CUDA_GRAPH: {"step", "losses", "chain"}, ONE_GRAPH: {"step", "losses", "chain"},
                  TWO_GRAPHS: {"losses", "chain"}, LOSSES_COMPILED: {"losses"}, EAGER: set(),
                  BATCHED: {"losses", "chain"}, BATCHED_CHAIN_EAGER: {"losses"}}


class StepOut(NamedTuple):
    """One step's results, on the run's device: ``logged`` [m + C] the task losses then every condition's
    (the spec's order), detached; ``G`` [m, p], or None for a summed step (`UpdateChain.update_summed`: the
    weighted sum's gradient only); ``steps`` the chain states' step counts as device tensors (the one CUDA
    graph keeps them there), else None."""

    losses: Losses
    logged: torch.Tensor
    G: torch.Tensor | None
    chain: ChainStep
    steps: dict[str, torch.Tensor] | None = None
    #: what `fetch` reads but the weights, packed by the graph that ran the step (`packed`), or None
    fetched: torch.Tensor | None = None


class StepFn(Protocol):
    name: str

    def __call__(self, theta: torch.Tensor, points: Points, state: ChainState,
                 queued: Callable[[], None]) -> StepOut: ...


class Demote(Exception):
    """A compiled part of a strategy failed: run the step by the next candidate that does not compile it."""

    def __init__(self, part: str, notice: str):
        super().__init__(notice)
        self.part, self.notice = part, notice


@dataclass
class StepContext:
    """What every strategy reads: the lowered problem, the model and its extra trainable params, theta as
    the list of tensors the trainer owns, the chain, the grouping and the chain's random stream."""

    problem: CompiledProblem
    model: torch.nn.Module
    params: dict[str, torch.Tensor]
    theta: list[torch.Tensor]
    chain: UpdateChain
    grouping: str
    generator: torch.Generator
    condition_names: list[str]
    chain_label: str  # the spec's stages, for notices
    distributed: bool = False
    #: per-point loss multipliers ``(condition, squares [N]) -> [N]`` for the next step (`weights rba`: set by
    #: the trainer before each step), or None
    point_weights: Callable | None = None

    def logged(self, losses: Losses) -> torch.Tensor:
        """[m + C]: the task losses, then every condition's loss in the spec's order (detached)."""
        return torch.cat([losses.tasks.detach(), torch.stack([losses.conditions[c].detach()
                                                              for c in self.condition_names])])

    def reduce(self, *tensors) -> None:
        """Data-parallel: sum over the ranks (each holds its shard's share of every mean)."""
        if self.distributed:
            from ._parallel import all_reduce

            all_reduce(*tensors)


def _has_step(state) -> bool:
    """Whether a chain state counts steps (a dataclass with an int ``step``; ConFIG's state is None)."""
    return is_dataclass(state) and any(f.name == "step" for f in fields(state))


def _copied(state):
    """A state dataclass with its tensors copied (None stays None)."""
    if not is_dataclass(state):
        return state
    return replace(state, **{f.name: getattr(state, f.name).clone() for f in fields(state)
                             if isinstance(getattr(state, f.name), torch.Tensor)})


def _reason(err: Exception) -> str:
    """The first line of a compiler error, for a one-line notice."""
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__


class StepValues(NamedTuple):
    """What the host reads of one step, fetched in ONE transfer."""

    finite: bool  # the task losses, G and p are finite
    loss: float
    tasks: list[float]  # [m]
    conditions: list[float]  # [C], the spec's order
    conflicts: list[float]  # R_g, R_a, R_u[, R_p]: 0.0 or 1.0
    projected: float
    cos_pu: float
    steps: dict[str, int]  # the chain states' step counts, where they are kept on the device
    weights: tuple[float, ...] | list[float] = ()  # [m] the task weights the step used (none without a weights stage)


def fetch(out: StepOut, m: int) -> StepValues:
    """Everything the host needs from a step, in one synchronisation: [finite tasks, loss, tasks and
    conditions, the chain's checks, the device's step counts]."""
    checks = out.chain.checks
    steps = list(out.steps.values()) if out.steps else []
    weights = out.chain.state.weights
    fetched = out.fetched if out.fetched is not None else packed(out.logged[:m], out.logged, checks, steps)
    values = (torch.cat([fetched, weights.detach().to(torch.float64)]) if weights is not None else fetched).tolist()
    k = len(checks.conflicts)
    tasks_finite, loss, logged = values[0], values[1], values[2: 2 + len(out.logged)]
    finite_G, finite_p, *rest = values[2 + len(out.logged):]
    conflicts, (projected, cos_pu), rest = rest[:k], rest[k: k + 2], rest[k + 2:]
    counts, lambdas = rest[: len(steps)], rest[len(steps):]
    return StepValues(bool(tasks_finite and finite_G and finite_p), loss, logged[:m], logged[m:], conflicts,
                       projected, cos_pu, dict(zip(out.steps or {}, (int(c) for c in counts))), lambdas)


def packed(tasks: torch.Tensor, logged: torch.Tensor, checks, steps: list[torch.Tensor]) -> torch.Tensor:
    """What `fetch` reads of a step but the weights, in its order, as one float64 vector: whether the task losses
    [m] are finite, their sum, the logged losses [m + C], the chain's checks and the step counts."""
    pieces = [torch.isfinite(tasks).all(), tasks.sum(), logged, *checks, *steps]
    return torch.cat([x.detach().reshape(-1).to(torch.float64) for x in pieces])


def with_host_steps(state: ChainState, steps: dict[str, int]) -> ChainState:
    """The chain state with the step counts the device kept as ints again (checkpoints and Hessian schedules
    read ints; the device keeps its own copies)."""
    if not steps:
        return state
    return ChainState(*(replace(getattr(state, name), step=steps[name]) if name in steps else getattr(state, name)
                        for name in ChainState._fields))
