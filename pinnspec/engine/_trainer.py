"""The training engine: one epoch at a time.

Every epoch:
    points = sample(epoch)                       fresh per resample block, pure in (seed, epoch)
    out    = execution(theta, points, state)     losses [m], G [m, p] and the update chain's step
                                                 (surgery -> proposal -> alignment: `_chain`), by the
                                                 strategy of the execution plan (`_execute`)
    values = one fetch                           the losses, the chain's checks, the conflict indicators
    stop if not finite, or if the loss blew up   (diverged: no checkpoint of it is written)
    magnitudes (every `every` epochs)            the weights stage's per-task measure (`_weights`): ||g_i||
                                                 from G, or the NTK diagonal from the residuals (`_ntk`)
    theta -= eta_t p                             `Trainer._apply`, the only place parameters change
    lambda <- the balanced weights               `UpdateChain.reweighted`, used from the next epoch on

Signs follow the update chain's convention (`_chain`): G, a, u and p all point uphill.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, NamedTuple

import numpy as np
import torch

from .. import __version__, ir
from .._interrupts import Interrupts
from .._malloc import tune_allocator
from .._rss import read_status, reset_peak
from .. import catalog, models, optim, surgery  # noqa: F401  (register the built-in names)
from ..compiler import compile_spec
from ..forward import supports
from ..models._field_groups import FieldGroups
from ..models._periodic import PeriodicEmbedding
from ..optim._quasi_newton import DENSE_LIMIT_BYTES, dense_bytes, quasi_newton
from ..registry import MODELS, SCHEDULES
from ..sampling._regions import files_outside_domain
from . import _artifacts as files
from . import _schedule  # noqa: F401  (registers the schedules)
from ._chain import ChainState, UpdateChain
from ._compiled import CompiledLosses
from ._execute import Execution, StepContext, StepOut, plan_execution
from ._stages import SummedObjective
from ._weights import GradNorm, ntk_diagonal_mean

EVAL_BATCH = 65_536
#: a quasi-Newton stage stops moving after this many line searches in a row without a decrease (at the precision floor)
STALLED_LINE_SEARCHES = 3
#: the resampling blocks of a quasi-Newton stage's later point sets (`stage ... resample = N`) are numbered
#: from here on (the block of one begun at epoch e is SECOND_ORDER_BLOCKS + e), apart from the spec's own
#: blocks (epoch // resample_every < 2^32), so that their draws are new ones
SECOND_ORDER_BLOCKS = 2 ** 32
_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass
class Result:
    """What a run produced (``result.json`` holds the same fields)."""

    problem: str
    surgery: str
    optimizer: str
    align: str
    grouping: str
    seed: int
    epochs: int
    epochs_done: int
    status: str  # "completed" | "diverged" | "interrupted" | "running"
    rel_l2: float | None  # test rel-L2 at the best-validation checkpoint (None: the spec has no reference)
    rel_l2_final: float | None  # test rel-L2 at the end (None: no reference)
    best_epoch: int | None  # epochs are counted from 1: epoch k is the state after k updates
    best_validation: float | None  # the best validation rel-L2 (None: no reference)
    #: what chose the best checkpoint: "points" (rel-L2 on separate validation points), "test" (rel-L2 on the
    #: test set), or "training loss" (a spec without reference: the summed task losses of the model then)
    validation: str
    rates: dict[str, float | None]
    projected_fraction: float | None
    train_time_s: float
    peak_memory_mb: float  # since training started in this process: CUDA max allocated, or the CPU RSS high-water mark
    device: str
    dtype: str  # the network's type; with stages their types in order ("float32 then float64")
    params: dict[str, float]
    model: str
    tasks: list[str]
    message: str = ""
    #: how the first-order steps ran at the end (docs/training.md, "How a step runs"): "one CUDA graph", "one
    #: graph", "two graphs", "losses compiled, chain eager" or "eager" (a compiled part that failed: the
    #: strategy it demoted to)
    execution: str = ""
    #: the run's place in a `RunGroup` (its lane of the group's batched graph: lane, lanes, and the group's id,
    #: which its runs share); None: it trained alone
    group: dict | None = None
    #: the spec's `report` quantities of the kept model (best validation; the final model before the first
    #: validation), computed when the run ends; {} while it runs or for a spec without reports
    reports: dict[str, float] = field(default_factory=dict)
    allocator: dict = field(default_factory=dict)
    version: str = __version__
    run_dir: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Best:
    validation: float = math.inf  # the validation rel-L2, or without a reference the training loss
    epoch: int | None = None
    model: dict | None = None
    params: dict | None = None


@dataclass
class _Counters:
    counted: int = 0
    conflicts: dict[str, int] = field(default_factory=lambda: {"R_g": 0, "R_a": 0, "R_u": 0, "R_p": 0})
    projected: int = 0


class GroupLane(NamedTuple):
    """Where a run's parameters sit in a `RunGroup`'s batched graph: lane ``lane`` (from 0) of ``lanes``, in the
    group ``group`` (an id that the group's runs share, from their run directories when it formed)."""

    lane: int
    lanes: int
    group: str


class TrainingDiverged(RuntimeError):
    pass


def resolve_device(device: str | None) -> torch.device:
    device = device or "auto"
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA device (use --device cpu or auto)")
    return torch.device(device)


def build_model(spec, problem, *, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The spec's network, initialised from its seed (on the CPU: the same network on every device), with
    the spec's hard constraints on its outputs (`enforce`)."""
    t = spec.ir.training
    init = torch.Generator().manual_seed(int(t.setting("seed")))
    periodic = tuple((problem.coordinates.index(e.coordinate), e.lo, e.hi - e.lo) for e in spec.ir.periodic_embeddings)
    factory = MODELS.get(t.model.name)(**t.model.options)
    if spec.ir.field_coordinates:
        return problem.constrained(_field_groups(spec, factory, init, dtype, device, periodic))
    trunk = factory.build(problem.dim + len(periodic), len(spec.ir.fields), generator=init, dtype=dtype,
                          device=device)
    net = PeriodicEmbedding(trunk, problem.dim, periodic) if periodic else trunk  # `enforce` of a periodic condition
    if getattr(factory, "pi_init", False):
        _physics_informed_init(spec, problem, trunk, net)
    return problem.constrained(net)


def _field_groups(spec, factory, init, dtype, device, periodic) -> FieldGroups:
    """``field a(x, y)``: one network of the spec's model per set of coordinates, drawn in the order of
    each set's first field (`FieldGroups`)."""
    ir_problem = spec.ir
    if periodic:
        raise ValueError("a periodic `enforce` and fields of some coordinates only (field a(...)) do not combine "
                         "yet: keep the periodic condition as a loss, or let every field depend on every coordinate")
    if getattr(factory, "pi_init", False):
        raise ValueError("pi_init = true fits one output layer to the initial data; it does not combine with "
                         "fields of some coordinates only (field a(...))")
    names = [c.name for c in ir_problem.coordinates]
    by_columns: dict[tuple[int, ...], list[int]] = {}
    for f, field in enumerate(ir_problem.fields):
        columns = tuple(names.index(c) for c in ir_problem.coordinates_of(field))
        by_columns.setdefault(columns, []).append(f)

    def setting(columns):  # a per-coordinate Fourier scale keeps its columns' scales
        return factory.on_columns(columns, len(names)) if hasattr(factory, "on_columns") else factory

    groups = tuple((columns, tuple(fields), setting(columns).build(len(columns), len(fields), generator=init,
                                                                   dtype=dtype, device=device))
                   for columns, fields in by_columns.items())
    return FieldGroups(len(names), len(ir_problem.fields), groups)


def _physics_informed_init(spec, problem, trunk, net) -> None:
    """PirateNet's physics-informed initialisation (``pi_init = true``): the output row of each field an
    initial condition sets is fitted by least squares to its data on 2048 points of that condition (drawn from
    the spec's seed); a field with a hard constraint keeps its draw (its initial data holds already)."""
    from ..models._layers import TENSOR_OPS

    constrained = {h.field for h in spec.ir.hard_constraints}
    data = problem.initial_values(2048, int(spec.ir.training.setting("seed")))
    for field, (x, values) in data.items():
        if problem.fields[field] in constrained:
            continue
        device = next(trunk.parameters()).device
        x = x.to(device)
        inputs = net.embed(TENSOR_OPS, x.to(net.angle_weight.dtype)) if net is not trunk else x  # what the trunk reads
        trunk.fit_output(field, inputs.to(torch.float64), values.to(device))


def _objective_compiles(training: ir.Training, problem, model) -> bool:
    """Whether a quasi-Newton stage's objective (`SummedObjective`) runs as one compiled graph: ``compile`` on or
    ``graphs``, the forward derivative engine (not ``engine = autograd``) covering the network, and no ``causal``
    condition (its chunk weights are frozen for the stage, which the compiled sums do not take)."""
    return (training.setting("compile") != "off" and training.setting("engine") != "autograd"
            and not problem.causal and supports(problem.network(model)))


def describe_execution(spec) -> str:
    """How a training step of ``spec`` runs: its execution plan (`plan_execution`), as
    ``pinnspec show --stage step`` prints it.  Nothing is compiled or trained."""
    t = spec.ir.training
    device = resolve_device(t.setting("device"))
    dtype = torch.float64 if t.setting("dtype") == "float64" else torch.float32
    grouping = spec.ir.grouping()
    problem = compile_spec(spec, grouping.name)
    model = build_model(spec, problem, device=device, dtype=dtype)
    plan = plan_execution(problem, model, UpdateChain.from_training(spec.ir.training), grouping=grouping.name,
                          num_losses=grouping.m, device=device)
    text = plan.describe(plan.candidates[0].name)
    if t.stages:  # the plan above is the first first-order stage's; each stage in order
        lines = [f"stages ({len(t.stages)}), each from the best checkpoint of those before it:"]
        objective = "one compiled graph" if _objective_compiles(t, problem, model) else "eagerly"
        for k, stage in enumerate(t.stages):
            how = (f"its line search on the host, f and its gradient by {objective}, the task losses' weighted sum "
                   "at fixed points; no surgery or alignment" if stage.second_order
                   else "the update chain with this stage's optimizer, planned as above")
            lines.append(f"  {k + 1}. {stage}: {how}")
        text += "\n" + "\n".join(lines)
    return text


class Trainer:
    """Trains one checked spec; writes its run directory when ``out`` is given."""

    def __init__(self, spec, out: str | None = None, *, progress: bool = False, log=None,
                 device_override: str | None = None, distributed: bool = False):
        """``progress``: a tqdm bar; ``log``: a callable that gets one line per
        validation and the closing message (``--quiet`` logs instead of the bar).

        ``distributed``: data-parallel training in an initialised
        ``torch.distributed`` process group (``torchrun``): each rank evaluates
        its shard of every point set, the m loss-specific gradients (and the
        losses) are all-reduced, and every rank runs the identical
        surgery/optimizer/GUA step; rank 0 alone writes the run directory."""
        self.allocator = tune_allocator()
        self.rank, self.world = 0, 1
        if distributed:
            import torch.distributed as dist

            if not dist.is_initialized():
                raise ValueError("--distributed needs a torch.distributed process group: launch with torchrun")
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
            if self.rank != 0:
                out, progress, log = None, False, None
        self.distributed = distributed
        self.spec = spec
        self.out = out
        self.progress = progress
        self.log = log
        p = spec.ir
        t = p.training
        self.epochs = int(t.setting("epochs"))
        self.seed = int(t.setting("seed"))
        self.checkpoint_every = int(t.setting("checkpoint_every"))
        self.diverge_factor = float(t.setting("diverge_factor"))
        self.device = resolve_device(device_override or t.setting("device"))
        if distributed and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", self.rank)) % torch.cuda.device_count())
        #: the stages in order (one without `stage` statements) and the epoch each begins at
        self.stages = t.stage_list()
        self.stage_starts = [sum(s.epochs for s in self.stages[:k]) for k in range(len(self.stages))]
        if distributed and any(s.second_order for s in self.stages):
            raise ValueError(f"a quasi-Newton stage ({', '.join(catalog.QUASI_NEWTON_STAGES)}) does not run "
                             "data-parallel (its line search is one process's): train the spec without --distributed")
        self.stage_index = 0
        self.dtype = _DTYPES[self.stages[0].dtype]
        self.grouping = p.grouping()
        self.problem = compile_spec(spec, self.grouping.name)
        if distributed and self.problem.causal:
            raise ValueError("causal weighting takes each time chunk's mean over all of its points: data-parallel "
                             "runs (point sets split over ranks) do not take it; train without --distributed")

        self.model = build_model(spec, self.problem, device=self.device, dtype=self.dtype)
        self.params = self.problem.init_params(device=self.device, dtype=self.dtype)
        self.theta: list[torch.Tensor] = list(self.model.parameters()) + list(self.params.values())
        self.numels = [t_.numel() for t_ in self.theta]
        self._check_dense_stages()
        self.schedule = SCHEDULES.get(t.schedule.name)(**t.schedule.options)
        self.chain_generator = torch.Generator().manual_seed(self.seed + 1)  # PCGrad orders, Hutchinson probes
        self.condition_names = list(self.problem.condition_kernels)  # the spec's order, less `left_out`
        self.qn = self.qn_state = self.objective = None  # a second-order stage's method, state, objective
        #: what compiles its objective (`_objective_graph`): None before it is built, False once it failed
        self._qn_graph: CompiledLosses | None | bool = None
        self.qn_failures = 0  # consecutive line searches without a decrease
        self.qn_stopped: str | None = None  # why the stage stopped moving (converged or stalled), if it did
        self._fixed_points = None  # a second-order stage's points
        #: `weights rba`: condition -> lambda [N] per point (empty before the first step), else None; the step
        #: computes the new lambda into `_attention_next`, kept once the step succeeded
        self.attention: dict[str, torch.Tensor] | None = {} if t.weights.name == "rba" else None
        self._attention_next: dict[str, torch.Tensor] = {}
        self._build_chain(0)
        m = self.grouping.m
        self.state: ChainState = self.chain.init(self._theta_flat(), [tuple(t_.shape) for t_ in self.theta], m)
        self.epoch = 0
        self.history: list[dict] = []
        self.validations: list[tuple[int, float]] = []
        self.best = _Best()
        self.counters = _Counters()
        self.elapsed = 0.0
        self.status = "running"
        self.message = ""
        self._points_block = None
        self._points = None
        self._next_points = None  # (block, points) drawn ahead by _draw_ahead
        self._stop_requested = False
        self._bar = self._previous_sigint = self._started = None  # set while the run trains (`begin_run`)
        self.group_lane: GroupLane | None = None  # set once the run trains in a `RunGroup`

        self.lowest_loss: tuple[float, int, list[float]] | None = None  # (loss, epoch, task losses): blow-ups
        self.has_reference = self.problem.has_reference
        self.validation_points = self.validation_reference = self.test_reference = None
        self._evaluation_points()
        if self.has_reference:  # without one, the checkpoint is chosen on the training loss
            # the references come from the float64 points: a float32 copy can round past the domain's edge
            # (t = pi/2 becomes 1.5707964 > pi/2, outside a generated reference's time span)
            self.validation_reference = self.problem.reference(self.problem.validation_points()).to(self.device)
            self.test_reference = self.problem.reference(self.problem.test_points()).to(self.device)
        self._warn_files_outside_domain()
        if p.enforced:
            how = [f"{h.field} = A + D*N ({', '.join(h.conditions)})" for h in p.hard_constraints] + [
                f"{e.coordinate} embedded periodically ({e.condition})" for e in p.periodic_embeddings]
            one = len(p.enforced) == 1
            self._notice(f"enforce: {', '.join(p.enforced)} hold{'s' if one else ''} by construction "
                         f"({'; '.join(how)}); {'it is' if one else 'they are'} in no task (the loss is logged)",
                         prefix=False)
        if self.problem.left_out:
            one = len(self.problem.left_out) == 1
            self._notice(f"grouping '{self.grouping.name}': {', '.join(self.problem.left_out)} "
                         f"{'is' if one else 'are'} in no task: not evaluated, no loss logged", prefix=False)
        self.columns = (["epoch", "lr", "loss"] + [f"task{i}" for i in range(m)]
                        + [f"loss:{c}" for c in self.condition_names]
                        + ["R_g", "R_a", "R_u", "R_p", "projected", "cos_pu", "validation"]
                        + ([f"weight{i}" for i in range(m)] if self.state.weights is not None else [])
                        + (["stage", "evaluations"] if t.stages else [])
                        + [f"causal:{name}" for name in self.problem.causal]
                        + ([f"attention:{c}" for c in self.condition_names] if self.attention is not None else []))
        if self.stages[0].second_order:
            self._setup_stage(0)
            self._initial_stage_state(0)
            self._notice(f"stage 1/{len(self.stages)}: {self.stages[0]}; it runs "
                         f"{'compiled' if self.objective.compiled else 'eagerly'}", prefix=False)

    def _evaluation_points(self) -> None:
        """The test and validation points in the run's dtype (from the problem's float64 points)."""
        self.test_points = torch.as_tensor(self.problem.test_points(), dtype=self.dtype, device=self.device)
        if self.has_reference:
            self.validation_points = torch.as_tensor(self.problem.validation_points(), dtype=self.dtype,
                                                     device=self.device)

    # ================================================================== stages
    def _build_chain(self, k: int) -> None:
        """The update chain and its execution plan of stage ``k`` (a second-order stage keeps the chain of
        the first-order stage before it, whose state carries the task weights)."""
        t = self.spec.ir.training
        first_order = [j for j in range(k + 1) if not self.stages[j].second_order]
        optimizer = self.stages[first_order[-1]].optimizer if first_order else t.optimizer
        self.chain = UpdateChain.from_training(replace(t, optimizer=optimizer))
        self.plan = plan_execution(self.problem, self.model, self.chain, grouping=self.grouping.name,
                                   num_losses=self.grouping.m, device=self.device, distributed=self.distributed)
        context = StepContext(self.problem, self.model, self.params, self.theta, self.chain, self.grouping.name,
                              self.chain_generator, self.condition_names, f"{t.surgery}, {optimizer}, {t.align}",
                              self.distributed, point_weights=self._attend if self.chain.weights.pointwise else None)
        self.execution = Execution(self.plan, context, notice=self._notice)
        if not self.stages[k].second_order:
            for note in self.plan.notes:
                self._notice(note, prefix=False)
        if self.plan.mode is not None:
            # a deprecation inside torch's own lowering, printed once per compile: not the user's to act on
            warnings.filterwarnings("ignore", message=r"`torch\._prims_common\.check` is deprecated",
                                    category=FutureWarning)

    def _check_dense_stages(self) -> None:
        """Refuses a bfgs-family stage whose dense [p, p] inverse Hessian would pass `DENSE_LIMIT_BYTES`."""
        p = sum(self.numels)
        for k, stage in enumerate(self.stages):
            if stage.second_order and stage.optimizer.name != "lbfgs":
                size = dense_bytes(p, _DTYPES[stage.dtype])
                if size > DENSE_LIMIT_BYTES:
                    raise ValueError(
                        f"stage {k + 1} ({stage.optimizer.name}) keeps a dense {p:,} x {p:,} inverse Hessian: "
                        f"{size / 1024 ** 3:.1f} GiB, over the {DENSE_LIMIT_BYTES / 1024 ** 3:.0f} GiB limit; use "
                        "`stage lbfgs(...)` (memory 2 x history x p) or a smaller network")

    def _stage_of(self, epoch: int) -> int:
        return max(k for k, start in enumerate(self.stage_starts) if start <= epoch)

    def _setup_stage(self, k: int, *, objective: bool = True) -> None:
        """Make stage ``k`` current: its dtype (the model, params and evaluation points converted), its
        chain and execution (first-order), or its method and (``objective``) fixed points (second-order).  States
        are set by the caller: `_initial_stage_state` when a stage begins, a checkpoint when a run resumes (which
        also sets the points: ``objective`` False)."""
        stage = self.stages[k]
        self.stage_index = k
        dtype = _DTYPES[stage.dtype]
        if dtype != self.dtype:
            self.dtype = dtype
            self.model.to(dtype)
            for parameter in self.params.values():
                parameter.data = parameter.data.to(dtype)
            self._evaluation_points()
            self._points_block = self._points = self._next_points = None
        if k > 0:
            self._build_chain(k)
        if stage.second_order:
            self.qn = quasi_newton(stage.optimizer.name, stage.optimizer.options)
            self.qn_label = stage.optimizer.name
            self.qn_failures, self.qn_stopped = 0, None
            if objective:
                self._stage_objective(self.stage_starts[k])
        else:
            self.qn = self.qn_state = self.objective = self._fixed_points = None

    def _stage_objective(self, epoch: int, points=None) -> None:
        """A quasi-Newton stage's points for ``epoch`` and its objective on them: the points drawn at the
        stage's first epoch, or (``resample = N``) at the first epoch of the N-epoch block holding ``epoch``
        (``points``: those, as a checkpoint kept them)."""
        k, start = self.stage_index, self.stage_starts[self.stage_index]
        every = self.stages[k].resample
        first = start + (epoch - start) // every * every if every else start
        self._fixed_points = points or self._sample(first, None if first == start else SECOND_ORDER_BLOCKS + first)
        self.objective = SummedObjective(self.problem, self.model, self.params, self._fixed_points,
                                         self.grouping.name, self.state.weights, self.plan.engine,
                                         self.condition_names, compiled=self._objective_graph(),
                                         failed=self._objective_failed)

    def _objective_graph(self) -> CompiledLosses | None:
        """What compiles a quasi-Newton stage's objective (`SummedObjective`), built once per run: with ``compile``
        on (or ``graphs``: the line search keeps its evaluations' values, which a CUDA graph's replay would
        overwrite, so plain graphs) where `_objective_compiles`; else None (eager), also once it failed to compile
        (`_objective_failed`)."""
        if self._qn_graph is False or not _objective_compiles(self.spec.ir.training, self.problem, self.model):
            return None
        if self._qn_graph is None:
            self._qn_graph = CompiledLosses(self.problem, self.model, "default")
        return self._qn_graph

    def _objective_failed(self, text: str) -> None:
        """The objective did not compile: said once, and every later objective of the run is eager."""
        self._qn_graph = False
        self._notice(text, prefix=False)

    def _initial_stage_state(self, k: int) -> None:
        """The states stage ``k`` begins with: a fresh chain state keeping the task weights (first-order), or
        the method's state at the parameters now (second-order, one evaluation of the objective)."""
        if self.stages[k].second_order:
            self.qn_state = self.qn.init(self.objective, self._theta_flat())
        elif k > 0:
            fresh = self.chain.init(self._theta_flat(), [tuple(t_.shape) for t_ in self.theta], self.grouping.m)
            self.state = fresh._replace(weights=self.state.weights)

    def _begin_stage(self, k: int) -> None:
        """Stage ``k`` begins from the best checkpoint so far (the last state where there is none yet)."""
        if self.best.model is not None:
            self.model.load_state_dict(self.best.model)
            with torch.no_grad():
                for name, value in self.best.params.items():
                    self.params[name].copy_(value)
        weights = self.state.weights
        self._setup_stage(k)
        self._initial_stage_state(k)
        stage = self.stages[k]
        start = f"the best checkpoint (epoch {self.best.epoch})" if self.best.epoch is not None else "the last state"
        note = (f"stage {k + 1}/{len(self.stages)}: {stage}, from {start}")
        if stage.second_order:
            t = self.spec.ir.training
            points = f"points new every {stage.resample} epochs" if stage.resample else "fixed points"
            note += (f"; it minimises the {'weighted ' if weights is not None else ''}sum of the task losses at "
                     f"{points}, without surgery or alignment ({t.surgery.name}, {t.align.name} apply to "
                     f"first-order stages); it runs {'compiled' if self.objective.compiled else 'eagerly'}")
        self._notice(note, prefix=False)

    def _warn_files_outside_domain(self) -> None:
        """A warning (rank 0, stderr) for each reference or data file with rows outside the spec's domain."""
        if self.rank != 0 or self.spec.ir.domain is None:
            return
        read_reference = None
        if isinstance(self.spec.ir.reference, ir.FileReference):
            read_reference = lambda: self.problem._file_reference()[0]  # noqa: E731  (read once, kept)
        for message in files_outside_domain(self.spec.ir, reference_points=read_reference):
            print(f"pinnspec: warning: {message}", file=sys.stderr)

    # ================================================================== the step
    def _theta_flat(self) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1) for t in self.theta])  # [p]

    def _points_for(self, epoch: int):
        if self._fixed_points is not None:  # a second-order stage
            return self._fixed_points
        block = self.problem.point_plan.block(epoch)
        if block != self._points_block:
            ahead, self._next_points = self._next_points, None
            self._points = ahead[1] if ahead is not None and ahead[0] == block else self._sample(epoch)
            self._points_block = block
        return self._points

    def _sample(self, epoch: int, block: int | None = None):
        if not self.distributed:
            return self.problem.sample(epoch, self.seed, device=self.device, dtype=self.dtype,
                                       residual=self.problem.residual_function(self.model, self.params),
                                       block=block)
        from ._parallel import shard  # this rank's rows of every set

        parts = [shard(s, self.rank, self.world) for s in self.problem.point_plan.sample(self.seed, epoch)]
        return self.problem.points(epoch, [part for part, _ in parts], device=self.device, dtype=self.dtype,
                                   totals=[total for _, total in parts])

    def _draw_ahead(self, epoch: int) -> None:
        """Draw the next epoch's points now, if they are new, so that the host's sampling (and the
        copy to the device) overlaps the device's work on this step's losses and gradients instead of
        following the step's synchronisation.  Points are a pure function of (seed, epoch), the same either
        way, except an adaptive sampler's: those follow the model at this step's start (docs/sampling.md,
        "Which model"), and a checkpoint keeps them (`_adaptive_state`)."""
        following = epoch + 1
        block = self.problem.point_plan.block(following)
        if following >= self.epochs or block == self._points_block or following in self.stage_starts:
            return
        if self._next_points is None or self._next_points[0] != block:
            self._next_points = (block, self._sample(following))

    def _apply(self, lr: float, update: torch.Tensor) -> None:
        """theta <- theta - lr * p: the only place parameters change."""
        pieces = [piece.view_as(t) for t, piece in zip(self.theta, update.split(self.numels))]
        with torch.no_grad():  # one multi-tensor kernel on a GPU, not one per tensor
            torch._foreach_add_(self.theta, pieces, alpha=-lr)

    # the stages and their states, by name
    surgery = property(lambda self: self.chain.surgery)
    optimizer = property(lambda self: self.chain.optimizer)
    alignment = property(lambda self: self.chain.alignment)
    aligned = property(lambda self: self.chain.aligned)
    surgery_state = property(lambda self: self.state.surgery)
    optimizer_state = property(lambda self: self.state.optimizer)

    def step(self, epoch: int, launched: tuple | None = None) -> dict:
        """One epoch: points -> execute (losses, G, the chain's step) -> one fetch -> divergence checks ->
        apply -> the history row.  In a second-order stage, one iteration of its method (`_second_order_step`).
        ``launched``: the first half, already queued (`launch_step`)."""
        if self.qn is not None:
            return self._second_order_step(epoch)
        points, lr, out = launched or self.launch_step(epoch)
        values = _fetch(out, self.grouping.m)
        if not values.finite:
            raise TrainingDiverged(self._divergence_message(epoch, out.losses, out.G, out.chain.p))
        if self.attention is not None:
            self.attention, self._attention_next = self._attention_next, {}
        self._check_blow_up(epoch, values.loss, values.tasks)
        # measured at the parameters this step started from, on its points
        magnitudes = self._weight_magnitudes(points, out, epoch) if self.chain.weights.due(epoch) else None
        self._apply(lr, out.chain.p)
        self.state = _with_host_steps(out.chain.state, values.steps)
        if magnitudes is not None:
            self.state = self.chain.reweighted(self.state, magnitudes)
        return self._row(epoch, lr, values, diagnosed=lr > 0)  # the zero-rate warmup step is not diagnosed

    def launch_step(self, epoch: int) -> tuple:
        """The first half of a first-order step, up to its fetch: (points, rate, the execution's `StepOut`), the
        device's work queued.  A `RunGroup` queues every run's before it waits for any."""
        points = self._points_for(epoch)
        start, stage = self.stage_starts[self.stage_index], self.stages[self.stage_index]
        lr = float(self.schedule(epoch - start, stage.epochs, self.optimizer.lr))
        out = self.execution(self._theta_flat(), points, self.state, lambda: self._draw_ahead(epoch),
                             hessian_due=self.chain.hessian_due(self.state))
        return points, lr, out

    def _attend(self, condition: str, squares: torch.Tensor) -> torch.Tensor:
        """`weights rba`: the multipliers lambda_new^2 [N] of a condition's squared residuals [N] in this step,
        lambda_new = gamma lambda + eta |r| / max |r| from its last lambda (0 at the first step)."""
        previous = self.attention.get(condition)
        if previous is None or previous.shape != squares.shape:
            previous = torch.zeros_like(squares)  # [N]
        new = self.chain.weights.updated(previous, squares.sqrt())  # [N]
        self._attention_next[condition] = new
        return new.square()

    def _second_order_step(self, epoch: int) -> dict:
        """One iteration of the stage's method (a direction and its line search) on the summed objective;
        the history row's lr is the accepted step length.  Once the method has stopped moving (converged,
        or stalled at the precision floor) the stage's remaining epochs keep the parameters."""
        theta = self._theta_flat()  # [p]
        start, every = self.stage_starts[self.stage_index], self.stages[self.stage_index].resample
        if every and epoch > start and (epoch - start) % every == 0:  # new points: the memory is kept
            self._stage_objective(epoch)
            self.qn_state = self.qn.restarted(self.objective, theta, self.qn_state)
            self.qn_failures, self.qn_stopped = 0, None
        move, info = torch.zeros_like(theta), None  # [p]
        if not self.qn_stopped:
            move, self.qn_state, info = self.qn.step(self.objective, theta, self.qn_state)  # x_new - x
        values = self._second_order_values(self.objective.logged(theta + move))
        if not (math.isfinite(values.loss) and all(map(math.isfinite, values.tasks))
                and bool(torch.isfinite(move).all())):
            raise TrainingDiverged(self._second_order_divergence(epoch, values.tasks, values.conditions))
        self._check_blow_up(epoch, values.loss, values.tasks)
        self._apply(1.0, -move)
        if info is not None:
            self._check_second_order_progress(epoch, info)
        row = self._row(epoch, 0.0 if info is None else info.t, values, diagnosed=False)
        row["evaluations"] = 0 if info is None else info.evaluations
        return row

    def _check_second_order_progress(self, epoch: int, info) -> None:
        """Marks the stage stopped (with a notice) when its method converged on the gradient, or when
        `STALLED_LINE_SEARCHES` line searches in a row found no decrease."""
        self.qn_failures = self.qn_failures + 1 if info.t == 0.0 else 0
        reason = None
        if self.qn.converged(self.qn_state):
            reason = f"max |grad f| <= {self.qn.tolerance_grad:g}"
        elif self.qn_failures >= STALLED_LINE_SEARCHES:
            reason = f"{STALLED_LINE_SEARCHES} line searches in a row found no decrease of f = {info.loss:.6e}"
        if reason is not None:
            self.qn_stopped = f"stopped at epoch {epoch + 1}: {reason}"
            self._notice(f"stage {self.stage_index + 1} ({self.qn_label}) {self.qn_stopped}; its remaining "
                         "epochs keep the parameters", prefix=False)

    def _second_order_values(self, logged: torch.Tensor) -> "_StepValues":
        """A second-order epoch's history values from its losses [m + C] (no chain diagnostics)."""
        m = self.grouping.m
        tasks, conditions = logged[:m].tolist(), logged[m:].tolist()
        weights = () if self.state.weights is None else self.state.weights.tolist()
        return _StepValues(True, sum(tasks), tasks, conditions, [], 0.0, 0.0, {}, weights)

    def _second_order_divergence(self, epoch: int, tasks: list[float], conditions: list[float]) -> str:
        at = f"training diverged at epoch {epoch + 1} (stage {self.stage_index + 1}, {self.stages[self.stage_index].optimizer.name})"
        for i, label in enumerate(self.grouping.labels):
            if not math.isfinite(tasks[i]):
                bad = [c for c, v in zip(self.condition_names, conditions) if not math.isfinite(v)]
                where = f" (condition {', '.join(bad)})" if bad else ""
                return f"{at}: the loss of task {i} '{label}'{where} is {tasks[i]}"
        return f"{at}: the step is not finite"

    def _weight_magnitudes(self, points, out: StepOut, epoch: int) -> torch.Tensor:
        """The weights stage's per-task magnitudes s [m] (float64, on the device; no host synchronisation):
        ||g_i|| of the step's G (gradnorm) or the mean NTK diagonal (ntk, `_ntk_magnitudes`)."""
        if self.chain.weights.measures == "G":
            return GradNorm.magnitudes(out.G)
        magnitudes = self._ntk_magnitudes(points, epoch)
        if self.distributed:  # each rank measured its shard's subsample: their mean, the same on every rank
            import torch.distributed as dist

            dist.all_reduce(magnitudes)
            magnitudes = magnitudes / self.world
        return magnitudes

    def _ntk_magnitudes(self, points, epoch: int) -> torch.Tensor:
        """s_i = sum_c w_c mean_{x in S_c} ||d r_c(x) / d theta||^2 over the conditions c of task i (weight
        w_c; a pooled loss weighs each of its conditions by its share of the pool's points), S_c a subsample
        of ``points`` points of c's set, drawn from a generator seeded by (seed, epoch): a resumed run draws
        the same.  -> [m] float64"""
        stage = self.chain.weights
        draw = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        diagonal: dict[str, torch.Tensor] = {}
        for index in self.problem.by_set:
            s = points.sets[index]
            n = len(s.x)
            if n == 0:
                continue
            rows = torch.randperm(n, generator=draw)[: min(stage.points, n)].sort().values  # [n_sub], CPU
            residuals = self.problem.set_residuals(index, self.model, _subset(s, rows), self.params,
                                                   engine=self.plan.engine)
            for name, r in residuals.items():
                diagonal[name] = ntk_diagonal_mean(r, self.theta)
        zero = torch.zeros((), dtype=torch.float64, device=self.device)
        counts = self.problem.counts(points)
        totals = []
        for task in self.spec.ir.grouping(self.grouping.name).tasks:
            total = zero
            for weight, atom in task.terms:
                if isinstance(atom, ir.PoolLoss):
                    pooled = sum(counts[c] for c in atom.conditions)
                    total = total + float(weight) * sum(diagonal.get(c, zero) * (counts[c] / pooled)
                                                        for c in atom.conditions)
                else:
                    total = total + float(weight) * diagonal.get(atom.condition, zero)
            totals.append(total)
        return torch.stack(totals)  # [m]

    def _row(self, epoch: int, lr: float, values: "_StepValues", *, diagnosed: bool) -> dict:
        """The history row of an epoch (epoch k: the state after k updates); counts the conflict rates."""
        row: dict[str, Any] = {"epoch": epoch + 1, "lr": lr, "loss": values.loss}
        if self.spec.ir.training.stages:
            row["stage"] = self.stage_index + 1
        row.update({f"task{i}": value for i, value in enumerate(values.tasks)})
        row.update({f"loss:{c}": value for c, value in zip(self.condition_names, values.conditions)})
        row.update({f"weight{i}": value for i, value in enumerate(values.weights)})  # the weights this step used
        if diagnosed:
            self.counters.counted += 1
            for key, flag in zip(("R_g", "R_a", "R_u") + (("R_p",) if self.aligned else ()), values.conflicts):
                self.counters.conflicts[key] += int(flag)
                row[key] = int(flag)
            if self.aligned:
                self.counters.projected += int(values.projected)
                row["projected"] = int(values.projected)
                row["cos_pu"] = values.cos_pu
        return row

    def _notice(self, text: str, *, prefix: bool = True) -> None:
        """A one-line notice about how steps run (rank 0 only); ``prefix``: the compile setting first."""
        if self.rank == 0:
            setting = f"compile = {self.spec.ir.training.setting('compile')}: " if prefix else ""
            print(f"pinnspec: {setting}{text}", file=sys.stderr)

    def _divergence_message(self, epoch, losses, G, p) -> str:
        at = f"training diverged at epoch {epoch + 1}"
        for i, label in enumerate(self.grouping.labels):
            if not torch.isfinite(losses.task_list[i]):
                bad = [c for c in self.condition_names if not torch.isfinite(losses.conditions[c])]
                where = f" (condition {', '.join(bad)})" if bad else ""
                value = float(losses.task_list[i].detach())
                return f"{at}: the loss of task {i} '{label}'{where} is {value}"
        for i, label in enumerate(self.grouping.labels):
            if not torch.isfinite(G[i]).all():
                return f"{at}: the gradient of task {i} '{label}' is not finite"
        return f"{at}: the update p is not finite"

    def _check_blow_up(self, epoch: int, loss: float, tasks: list[float]) -> None:
        """A loss that grows past ``diverge_factor`` times its lowest value so far stops the run as diverged,
        like a NaN, naming the task that grew most (relative to its value at the lowest loss)."""
        if self.attention is not None:  # `weights rba`: the losses grow by design as the point weights build up
            return
        if self.lowest_loss is None or loss < self.lowest_loss[0]:
            self.lowest_loss = (loss, epoch + 1, list(tasks))
            return
        lowest, at, lowest_tasks = self.lowest_loss
        if not self.diverge_factor or loss <= self.diverge_factor * lowest:
            return
        growth = [value / max(before, 1e-300) for value, before in zip(tasks, lowest_tasks)]
        i = max(range(len(tasks)), key=growth.__getitem__)
        raise TrainingDiverged(
            f"training diverged at epoch {epoch + 1}: the loss {loss:.3e} exceeds diverge_factor = "
            f"{self.diverge_factor:g} times its lowest value {lowest:.3e} (epoch {at}); task {i} "
            f"'{self.grouping.labels[i]}' grew most, from {lowest_tasks[i]:.3e} to {tasks[i]:.3e} (a smaller "
            "learning rate may help; --set diverge_factor=0 turns this check off)")

    # ================================================================== evaluation
    @torch.no_grad()
    def _predict(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.model(x[i: i + EVAL_BATCH]) for i in range(0, len(x), EVAL_BATCH)])

    def rel_l2(self, x: torch.Tensor, reference: torch.Tensor) -> float:
        """(sum_j ||u(x_j) - u*(x_j)||^2)^(1/2) / (sum_j ||u*(x_j)||^2)^(1/2)  (Appendix C.8)."""
        error = self._predict(x).double() - reference.double()
        return float(error.norm() / reference.double().norm())

    def _validate(self, epoch: int, row: dict) -> None:
        """Validation rel-L2 after epoch ``epoch + 1``; the best so far is the checkpoint the run reports.
        Without a reference the checkpoint is chosen on the training loss instead: the summed task losses
        of the model now, on this epoch's points."""
        if self.attention:  # the mean per-point weight of each condition
            row.update({f"attention:{name}": float(w.mean()) for name, w in self.attention.items()})
        if self.problem.causal:  # the last chunk's weight (the smallest): 1 once the residual is small everywhere
            weights = self.problem.causal_weights(self.model, self._points_for(epoch), self.params,
                                                  engine=self.plan.engine)
            row.update({f"causal:{name}": float(w[-1]) for name, w in weights.items()})
        if self.has_reference:
            value = self.rel_l2(self.validation_points, self.validation_reference)
            row["validation"] = value
            self.validations.append((epoch + 1, value))
        else:
            value = self._training_loss(epoch)
        if value < self.best.validation:
            self.best = _Best(value, epoch + 1, {k: v.detach().clone() for k, v in self.model.state_dict().items()},
                              {k: v.detach().clone() for k, v in self.params.items()})

    def _training_loss(self, epoch: int) -> float:
        """The summed task losses of the current model on epoch ``epoch``'s points (all ranks together)."""
        losses = self.problem.losses(self.model, self._points_for(epoch), self.params, self.grouping.name,
                                     engine=self.plan.engine)
        total = losses.tasks.detach().sum().to(torch.float64)
        if self.distributed:
            import torch.distributed as dist

            dist.all_reduce(total)
        return float(total)

    # ================================================================== run
    def run(self) -> Result:
        if self.group_lane is not None and self.epoch < self.epochs:  # resumed from a group: on in its lane
            from ._group import resume_in_lane

            result = resume_in_lane(self)
            if result is not None:
                return result
        self.begin_run()
        try:
            for epoch in range(self.epoch, self.epochs):
                if not self.train_epoch(epoch):
                    break
        finally:
            self.end_epochs()
        return self.finish_run()

    # a run in three parts, so that a `RunGroup` can train several trainers in lockstep
    def begin_run(self, *, sigint: bool = True) -> None:
        """Before the first epoch: the run directory, the progress bar, the Ctrl-C handler (``sigint``) and the
        clock."""
        if self.out:
            os.makedirs(self.out, exist_ok=True)
            files.atomic_write_text(os.path.join(self.out, "config.pinn"), self.spec.source)
        self._bar = self._progress_bar()
        self._previous_sigint = _install_sigint(self.request_stop) if sigint else None
        self._started = time.perf_counter() - self.elapsed
        self._reset_peak_memory()
        if self.epoch >= self.epochs:
            self.status = "completed"

    def train_epoch(self, epoch: int, launched: tuple | None = None) -> bool:
        """Epoch ``epoch`` (the step, validation, history, checkpoint); False once the run has stopped: its last
        epoch, a stop request (Ctrl-C) or divergence (the status says which).  ``launched``: the step's first half,
        already queued (`launch_step`, in a run of one stage)."""
        every = self.spec.ir.validation.every
        try:
            if self._stage_of(epoch) != self.stage_index:
                self._begin_stage(self._stage_of(epoch))
            row = self.step(epoch) if launched is None else self.step(epoch, launched)
        except TrainingDiverged as err:
            self.status, self.message = "diverged", str(err)
            self.history.append({"epoch": self.epoch + 1, "loss": float("nan")})
            self.elapsed = time.perf_counter() - self._started
            return False
        # every `every` epochs, and at the end of each stage (the next begins from the best checkpoint)
        validated = (epoch + 1) % every == 0 or epoch + 1 in self.stage_starts or epoch == self.epochs - 1
        if validated:
            self._validate(epoch, row)
        self.history.append(row)
        self.epoch = epoch + 1
        self.elapsed = time.perf_counter() - self._started
        bar = self._bar
        if bar is not None:
            bar.update(1)
            if epoch % 10 == 0 or validated:
                bar.set_postfix_str(self._postfix(row), refresh=False)
        elif validated and self.log:
            self.log(f"epoch {epoch + 1}/{self.epochs}: {self._postfix(row)}")
        if self.out and self.epoch % self.checkpoint_every == 0 and self.epoch < self.epochs:
            self._save_checkpoint()
            self._write_result()
        if self.epoch == self.epochs:
            self.status = "completed"
            return False
        return not self.stop_if_requested()

    def request_stop(self) -> None:
        """Stop after the epoch in progress, checkpointed (what Ctrl-C does)."""
        self._stop_requested = True

    def stop_if_requested(self) -> bool:
        """Between epochs: whether a stop was requested, and if so the run's status says it stopped here."""
        if self._stop_requested:
            self.status, self.message = "interrupted", f"interrupted after epoch {self.epoch}"
        return self._stop_requested

    def end_epochs(self) -> None:
        """After the last epoch trained (or an exception): the Ctrl-C handler and the progress bar go."""
        _restore_sigint(self._previous_sigint)
        self._previous_sigint = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def finish_run(self) -> Result:
        """The final checkpoint (a diverged run keeps the one written before it) and the result; the training time
        is that to the run's last epoch (in a `RunGroup`, not the time the group trained on after it)."""
        if self.out and self.status != "diverged":
            self._save_checkpoint()
        result = self._write_result()
        if self.log and self.message:
            self.log(self.message)
        return result

    def _reset_peak_memory(self) -> None:
        """Peak memory counts from here: a process that trains several runs (a sweep's pool worker)
        reports each run's own peak, not the worker's."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            reset_peak()  # Linux; elsewhere the process's ru_maxrss stands in

    def _postfix(self, row: dict) -> str:
        parts = [f"loss {row['loss']:.3e}"]
        if self.spec.ir.training.stages:
            stage = self.stages[self.stage_index]
            parts.insert(0, f"stage {self.stage_index + 1}/{len(self.stages)} {stage.optimizer.name}")
        if self.validations:
            parts.append(f"val {self.validations[-1][1]:.3e}")
        n = max(self.counters.counted, 1)
        parts.append(f"R_u {self.counters.conflicts['R_u'] / n:.0%}")
        if self.aligned:
            parts.append(f"R_p {self.counters.conflicts['R_p'] / n:.0%}")
        return ", ".join(parts)

    def _progress_bar(self):
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=self.epochs, initial=self.epoch, desc=self.spec.ir.name, unit="epoch", dynamic_ncols=True)

    # ================================================================== results and checkpoints
    def _test_error(self, model_state=None, params=None) -> float | None:
        if not self.has_reference:
            return None
        if model_state is None:
            return self.rel_l2(self.test_points, self.test_reference)
        saved = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.model.load_state_dict(model_state)
        try:
            return self.rel_l2(self.test_points, self.test_reference)
        finally:
            self.model.load_state_dict(saved)

    def result(self) -> Result:
        t = self.spec.ir.training
        n = self.counters.counted
        rates = {k: (v / n if n else None) for k, v in self.counters.conflicts.items()}
        if not self.aligned:
            rates["R_p"] = None
        final = self._test_error() if self.epoch > 0 else None
        # before the first validation there is no best checkpoint: a finished or interrupted run reports its
        # final model there; a diverged run's final model is the one that blew up
        best = self._test_error(self.best.model) if self.best.model is not None else (
            None if self.status == "diverged" else final)
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
        else:
            peak = read_status()["VmHWM"] / 2**20
        optimizer = "; ".join(str(stage) for stage in t.stages) if t.stages else str(t.optimizer)
        return Result(
            problem=self.spec.ir.name, surgery=str(t.surgery), optimizer=optimizer, align=str(t.align),
            grouping=self.grouping.name, seed=self.seed, epochs=self.epochs, epochs_done=self.epoch,
            status=self.status, rel_l2=best, rel_l2_final=final, best_epoch=self.best.epoch,
            best_validation=None if self.best.epoch is None or not self.has_reference else self.best.validation,
            validation=self._selection(), rates=rates,
            projected_fraction=(self.counters.projected / n if n and self.aligned else None),
            train_time_s=self.elapsed, peak_memory_mb=peak, device=str(self.device),
            dtype=" then ".join(dict.fromkeys(s.dtype for s in self.stages)) if t.stages else (
                str(self.dtype).replace("torch.", "")),
            params={k: float(v.detach()) for k, v in self.params.items()}, model=str(t.model),
            tasks=list(self.grouping.labels), message=self.message, execution=self.execution.current,
            group=self.group_lane._asdict() if self.group_lane is not None else None, reports=self._reports(),
            allocator=self.allocator, run_dir=self.out)

    def _reports(self) -> dict[str, float]:
        """The `report` statements evaluated on the kept model once the run has ended (a diverged run's final
        model is the one that blew up: it reports the best checkpoint's, or nothing before the first one)."""
        if not self.spec.ir.reports or self.epoch == 0 or self.status not in ("completed", "interrupted", "diverged"):
            return {}
        state, params = self.best.model, self.best.params
        if state is None:
            if self.status == "diverged":
                return {}
            state, params = self.model.state_dict(), self.params
        saved = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.model.load_state_dict(state)
        try:
            return self.problem.reports(self.model, params)
        finally:
            self.model.load_state_dict(saved)

    def _selection(self) -> str:
        if not self.has_reference:
            return "training loss"
        return "test" if self.spec.ir.validation.on_test else "points"

    def _write_result(self) -> Result:
        result = self.result()
        if self.out:
            files.write_json(os.path.join(self.out, "result.json"), result.to_dict())
            files.write_csv(os.path.join(self.out, "history.csv"), self.columns, self.history)
            if self.epoch > 0:  # also at each checkpoint: a run killed later can be scored where it stopped
                self._write_predictions()
        return result

    def _write_predictions(self) -> None:
        state = self.best.model
        saved = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if state is not None:
            self.model.load_state_dict(state)
        try:
            prediction = self._predict(self.test_points).double().cpu().numpy()
        finally:
            self.model.load_state_dict(saved)
        reference = {} if self.test_reference is None else {"reference": self.test_reference.cpu().numpy()}
        files.save_npz(os.path.join(self.out, "predictions.npz"),
                       points=self.test_points.double().cpu().numpy(), prediction=prediction,
                       coordinates=np.array(self.problem.coordinates), fields=np.array(self.problem.fields),
                       **reference)

    def state_dict(self) -> dict:
        return {
            "version": __version__,
            "source_dir": self.spec.ir.source_dir,  # relative data/reference paths of config.pinn resolve here
            "epoch": self.epoch,
            "stage": self.stage_index,
            **({"attention": dict(self.attention)} if self.attention is not None else {}),
            **({"quasi_newton": {**self.qn.state_dict(self.qn_state), "failures": self.qn_failures,
                                 "stopped": self.qn_stopped or "", "causal": self.objective.unit.causal_weights}}
               if self.qn is not None else {}),
            "model": self.model.state_dict(),
            "params": {k: v.detach() for k, v in self.params.items()},
            **self.chain.state_dict(self.state),
            "chain_generator": self.chain_generator.get_state(),
            "best": asdict(self.best),
            "counters": asdict(self.counters),
            "history": self.history,
            "validations": self.validations,
            "elapsed": self.elapsed,
            "lowest_loss": self.lowest_loss,
            **({"adaptive": self._adaptive_state()} if self.problem.adaptive is not None else {}),
            **({"group": self.group_lane._asdict()} if self.group_lane is not None else {}),
        }

    def _adaptive_state(self) -> dict:
        """An adaptive sampler's part of a checkpoint: what its next block starts from, and the points the run
        holds (this block's, the next block's drawn ahead, a quasi-Newton stage's), which the model chose when
        they were drawn and so cannot be drawn again from (seed, epoch)."""
        held = {"current": self._points, "ahead": self._next_points and self._next_points[1],
                "fixed": self._fixed_points}
        return {"history": self.problem.adaptive_state(),
                "held": {role: {"epoch": p.epoch, "block": p.block,
                                "points": {str(i): torch.from_numpy(x) for i, x in p.adaptive.items()}}
                         for role, p in held.items() if p is not None and p.adaptive is not None}}

    def _load_adaptive_state(self, state: dict) -> dict:
        """Restores `_adaptive_state`: the sampler's history, this block's and the next block's points; returns
        the points of the roles held, as the run held them (a quasi-Newton stage's: ``fixed``)."""
        self.problem.load_adaptive_state(state["history"])
        held = {role: self.problem.sample(entry["epoch"], self.seed, device=self.device, dtype=self.dtype,
                                          block=entry["block"],
                                          adaptive={int(i): x.cpu().numpy() for i, x in entry["points"].items()})
                for role, entry in state["held"].items()}
        if "current" in held:
            self._points, self._points_block = held["current"], held["current"].block
        if "ahead" in held:
            self._next_points = (held["ahead"].block, held["ahead"])
        return held

    def load_state_dict(self, state: dict) -> None:
        self.epoch = state["epoch"]
        stage = state.get("stage", 0)  # absent in checkpoints written before stages
        if stage != self.stage_index:  # its dtype before the weights load (a float64 stage keeps every bit); a
            self._setup_stage(stage, objective=False)  # quasi-Newton stage's points and objective: below
        self.model.load_state_dict(state["model"])
        with torch.no_grad():
            for k, v in state["params"].items():
                self.params[k].copy_(v)
        # checkpoints load onto the CPU (the generator state must stay there): the chain's states
        # go back to the run's device
        self.state = self.chain.load_state_dict(_to_device({k: state[k] for k in ("surgery", "optimizer", "weights")
                                                            if k in state}, self.device))
        self.chain_generator.set_state(state["chain_generator"].cpu())  # a CPU tensor whatever the map_location
        self.execution.state_loaded()  # the one CUDA graph copies the loaded step counts to the device
        self.best = _Best(**state["best"])
        self.counters = _Counters(**state["counters"])
        self.history = list(state["history"])
        # a checkpoint whose history logged columns this run does not (`loss:`, `causal:` or `attention:` of a
        # condition now in no task of the grouping, hence not evaluated): they stay in history.csv, each after
        # its kind's columns, empty from the resume on; nothing that was logged is lost
        for key in dict.fromkeys(key for row in self.history for key in row):
            if key not in self.columns:
                kind = [i for i, c in enumerate(self.columns) if ":" in key and c.startswith(key.split(":")[0] + ":")]
                self.columns.insert(kind[-1] + 1 if kind else len(self.columns), key)
        self.validations = list(state["validations"])
        self.elapsed = state["elapsed"]
        self.lowest_loss = state.get("lowest_loss")  # absent in checkpoints written before the blow-up check
        group = state.get("group")  # a `RunGroup` member's lane (absent: the run trained alone)
        self.group_lane = None if group is None else GroupLane(int(group["lane"]), int(group["lanes"]),
                                                                str(group["group"]))
        if self.attention is not None:
            self.attention = _to_device(dict(state["attention"]), self.device)
        held = self._load_adaptive_state(state["adaptive"]) if "adaptive" in state else {}
        if self.qn is not None:
            # the points of the block the run resumes in (drawn again from (seed, epoch), or an adaptive
            # sampler's as the checkpoint kept them), and the objective's frozen causal weights of the run
            self._stage_objective(self.epoch, held.get("fixed"))
            saved = _to_device(state["quasi_newton"], self.device)
            self.objective.unit.causal_weights = saved["causal"]
            self.qn_state = self.qn.load_state_dict(saved)
            self.qn_failures, self.qn_stopped = int(saved["failures"]), saved["stopped"] or None
            if self.problem.adaptive is not None and "fixed" not in held:
                # a checkpoint written before checkpoints kept adaptive points: these were drawn anew from the
                # loaded model, so f and its gradient there, as at a resampling (a stale f fails line searches)
                self.qn_state = self.qn.restarted(self.objective, self._theta_flat(), self.qn_state)
                self.qn_failures, self.qn_stopped = 0, None

    def _save_checkpoint(self) -> None:
        files.save_torch(os.path.join(self.out, "checkpoint.pt"), self.state_dict())


class _StepValues(NamedTuple):
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


def _fetch(out: StepOut, m: int) -> _StepValues:
    """Everything the host needs from a step, in one synchronisation: [finite tasks, loss, tasks and
    conditions, the chain's checks, the device's step counts]."""
    checks = out.chain.checks
    tasks = out.logged[:m]  # [m]
    steps = list(out.steps.values()) if out.steps else []
    weights = out.chain.state.weights
    pieces = [torch.isfinite(tasks).all(), tasks.sum(), out.logged, *checks, *steps]
    pieces += [weights] if weights is not None else []
    values = torch.cat([x.detach().reshape(-1).to(torch.float64) for x in pieces]).tolist()
    k = len(checks.conflicts)
    tasks_finite, loss, logged = values[0], values[1], values[2: 2 + len(out.logged)]
    finite_G, finite_p, *rest = values[2 + len(out.logged):]
    conflicts, (projected, cos_pu), rest = rest[:k], rest[k: k + 2], rest[k + 2:]
    counts, lambdas = rest[: len(steps)], rest[len(steps):]
    return _StepValues(bool(tasks_finite and finite_G and finite_p), loss, logged[:m], logged[m:], conflicts,
                       projected, cos_pu, dict(zip(out.steps or {}, (int(c) for c in counts))), lambdas)


def _with_host_steps(state: ChainState, steps: dict[str, int]) -> ChainState:
    """The chain state with the step counts the device kept as ints again (checkpoints and Hessian schedules
    read ints; the device keeps its own copies)."""
    if not steps:
        return state
    return ChainState(*(replace(getattr(state, name), step=steps[name]) if name in steps else getattr(state, name)
                        for name in ChainState._fields))


def _subset(s, rows: torch.Tensor):
    """The points ``rows`` (sorted, on the CPU) of the point set ``s``, as a new set whose coordinates
    require grad (the derivative plan's inputs); a per-face set keeps its faces' slices."""
    from ..compiler._problem import TorchPointSet, host_to_device

    index = host_to_device(rows, torch.long, s.x.device)  # [n_sub]
    take = lambda a: None if a is None else a.detach()[index]  # noqa: E731
    faces = None
    if s.face_slices is not None:
        bounds = [(f.start or 0, len(s.x) if f.stop is None else f.stop) for f in s.face_slices]
        faces = tuple(slice(int((rows < a).sum()), int((rows < b).sum())) for a, b in bounds)
    partner = take(s.partner)
    return TorchPointSet(take(s.x).requires_grad_(True), faces,
                         None if partner is None else partner.requires_grad_(True), take(s.observed), None,
                         take(s.normals))


def _to_device(tree, device: torch.device):
    """Every tensor of a nested dict/list/tuple, moved to ``device`` (bit for bit)."""
    if isinstance(tree, torch.Tensor):
        return tree.to(device)
    if isinstance(tree, dict):
        return {k: _to_device(v, device) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_to_device(v, device) for v in tree)
    return tree


def _install_sigint(stop: Callable[[], object]):
    """Ctrl-C: ``stop()`` (the run, or every run of a group, finishes the epoch, checkpoints and stops); a second
    Ctrl-C stops at once (the same one delivered twice is one, see pinnspec._interrupts)."""
    interrupts = Interrupts()
    try:
        def handler(signum, frame):
            if interrupts.arrive() == "again":
                raise KeyboardInterrupt
            stop()

        return signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        return None


def _restore_sigint(previous) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
