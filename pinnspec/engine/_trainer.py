"""The training engine: DESIGN.md §1, one epoch at a time.

Sign convention (the paper's, written once): the loss-specific gradients
g_i, the constructed direction a, the optimizer proposal u and the aligned
update p all point UPHILL, like ``.grad``.  The engine applies

    theta <- theta - eta_t * p

and that line (:meth:`Trainer._apply`) is the only place parameters change.

Every epoch:
    points = sample(epoch)                   fresh per resample block, pure in (seed, epoch)
    L      = losses of the grouping           [m]
    G      = loss-specific gradients          [m, p]  (m backward passes over one graph)
    a      = surgery(G)                        [p]
    u, s~  = optimizer.propose(a, s)           [p]  (no learning rate, nothing applied)
    p, s   = align(u, G, s~)                   [p]  (GUA projection + state alignment)
    theta -= eta_t p
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
import types
import warnings
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any

import numpy as np
import torch

from .. import __version__
from .._compiling import aot_cacheable, own_code, symbolic
from .._malloc import tune_allocator
from .._rss import read_status, reset_peak
from .. import catalog, models, optim, surgery  # noqa: F401  (register the built-in names)
from ..align import conflict_indicators
from ..compiler import compile_spec
from ..optim import hutchinson_diagonal
from ..registry import ALIGN, MODELS, OPTIMIZERS, SCHEDULES, SURGERY
from . import _artifacts as files
from . import _schedule  # noqa: F401  (registers the schedules)
from ._gradients import loss_gradients

EVAL_BATCH = 65_536
#: the step counts of the surgery and optimizer states: ints that change every step, symbolic in the one-graph
#: step (torch.compile's ``dynamic_sources``; the frame's argument names) while every tensor shape stays static
STEP_COUNTS = "L['surgery_state'].step,L['optimizer_state'].step"
#: calls in which CUDA graphs warm up (1), record (2) and first replay (3) a compiled function
RECORDING_CALLS = 3


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
    dtype: str
    params: dict[str, float]
    model: str
    tasks: list[str]
    message: str = ""
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


class TrainingDiverged(RuntimeError):
    pass


def resolve_device(device: str | None) -> torch.device:
    device = device or "auto"
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA device (use --device cpu or auto)")
    return torch.device(device)


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
        options = t.options
        self.epochs = int(options.get("epochs", 1000))
        self.seed = int(options.get("seed", 0))
        self.checkpoint_every = int(options.get("checkpoint_every", 1000))
        self.diverge_factor = float(options.get("diverge_factor", catalog.TRAIN_SETTINGS["diverge_factor"][1]))
        self.device = resolve_device(device_override or options.get("device"))
        if distributed and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", self.rank)) % torch.cuda.device_count())
        self.dtype = torch.float64 if options.get("dtype") == "float64" else torch.float32
        self.grouping = p.grouping()
        self.problem = compile_spec(spec)

        init = torch.Generator().manual_seed(self.seed)  # CPU: the same network on every device
        self.model = MODELS.get(t.model.name)(**t.model.options).build(
            self.problem.dim, len(p.fields), generator=init, dtype=self.dtype, device=self.device)
        self.params = self.problem.init_params(device=self.device, dtype=self.dtype)
        self.theta: list[torch.Tensor] = list(self.model.parameters()) + list(self.params.values())
        self.numels = [t_.numel() for t_ in self.theta]
        self.surgery = SURGERY.get(t.surgery.name)(**t.surgery.options)
        self.optimizer = OPTIMIZERS.get(t.optimizer.name)(**t.optimizer.options)
        self.alignment = ALIGN.get(t.align.name)(**t.align.options)
        self.schedule = SCHEDULES.get(t.schedule.name)(**t.schedule.options)
        self.aligned = t.align.name != "none"
        # an optimizer that estimates Hessians decides on the host, from its step count, which steps take one
        hessians = type(self.optimizer).hessian_due is not optim.Optimizer.hessian_due
        notice = self.problem.compile_losses(self.model, device=self.device, optimizer_needs_hessian=hessians)
        if notice and self.rank == 0:
            print(f"pinnspec: {notice}", file=sys.stderr)
        self.chain_generator = torch.Generator().manual_seed(self.seed + 1)  # PCGrad orders, Hutchinson probes
        #: the update chain compiled with the losses (compile = on | graphs) where its surgery and optimizer
        #: trace into one graph; dynamic: the optimizer's step count is an int that changes every step, and
        #: one graph serves every step (also after a resume)
        self._update_compiled = None
        #: the whole step but sampling and apply (losses, G, update chain, checks) as ONE compiled graph, where
        #: the chain compiles, every point set feeds one task and G needs no all-reduce between the losses and
        #: the chain (`_compile_step`)
        self._step_compiled = None
        self._steps_on_device = False  # the one-graph step's step counts as device tensors (CUDA graphs)
        self._device_steps: dict[str, torch.Tensor] | None = None  # state name -> its step count, on the device
        self._one_graph_calls = 0  # completed calls of the one-graph step
        if self.problem.compile_mode is not None and type(self.surgery).compiles and type(self.optimizer).compiles:
            update = types.MethodType(own_code(Trainer._update), self)  # a cache of its own (see own_code)
            self._update_compiled = torch.compile(update, fullgraph=True, dynamic=True)
            if not distributed and self.problem.task_of_sets(self.grouping.name) is not None:
                graphs = self.problem.compile_mode == "reduce-overhead"
                # with CUDA graphs the losses and the chain compile apart where the chain cannot be recorded
                # (ConFIG's eigh for m >= 3) or the optimizer estimates Hessians
                if not graphs or (self.surgery.capturable(self.grouping.m) and not hessians):
                    self._compile_step(steps_on_device=graphs)
            # a deprecation inside torch's own lowering, printed once per compile: not the user's to act on
            warnings.filterwarnings("ignore", message=r"`torch\._prims_common\.check` is deprecated",
                                    category=FutureWarning)

        m, n = self.grouping.m, sum(self.numels)
        self.surgery_state = self.surgery.init(m, n, dtype=self.dtype, device=self.device)
        self.optimizer_state = self.optimizer.init(self._theta_flat(), [tuple(t_.shape) for t_ in self.theta])
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

        self.lowest_loss: tuple[float, int, list[float]] | None = None  # (loss, epoch, task losses): blow-ups
        self.has_reference = self.problem.has_reference
        self.test_points = torch.as_tensor(self.problem.test_points(), dtype=self.dtype, device=self.device)
        self.validation_points = self.validation_reference = self.test_reference = None
        if self.has_reference:  # without one, the checkpoint is chosen on the training loss
            self.validation_points = torch.as_tensor(self.problem.validation_points(), dtype=self.dtype,
                                                     device=self.device)
            # the references come from the float64 points: a float32 copy can round past the domain's edge
            # (t = pi/2 becomes 1.5707964 > pi/2, outside a generated reference's time span)
            self.validation_reference = self.problem.reference(self.problem.validation_points()).to(self.device)
            self.test_reference = self.problem.reference(self.problem.test_points()).to(self.device)
        self.condition_names = [c.name for c in p.conditions]
        self.columns = (["epoch", "lr", "loss"] + [f"task{i}" for i in range(m)]
                        + [f"loss:{c}" for c in self.condition_names]
                        + ["R_g", "R_a", "R_u", "R_p", "projected", "cos_pu", "validation"])

    # ================================================================== the step
    def _theta_flat(self) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1) for t in self.theta])  # [p]

    def _points_for(self, epoch: int):
        block = self.problem.point_plan.block(epoch)
        if block != self._points_block:
            ahead, self._next_points = self._next_points, None
            self._points = ahead[1] if ahead is not None and ahead[0] == block else self._sample(epoch)
            self._points_block = block
        return self._points

    def _sample(self, epoch: int):
        shard = (self.rank, self.world) if self.distributed else None
        return self.problem.sample(epoch, self.seed, device=self.device, dtype=self.dtype, shard=shard)

    def _draw_ahead(self, epoch: int) -> None:
        """Draw the next epoch's points now, if they are new, so that the host's sampling (and the
        copy to the device) overlaps the device's work on this step's losses and gradients instead of
        following the step's synchronisation.  Points are a pure function of (seed, epoch): the same
        points either way."""
        following = epoch + 1
        block = self.problem.point_plan.block(following)
        if following >= self.epochs or block == self._points_block:
            return
        if self._next_points is None or self._next_points[0] != block:
            self._next_points = (block, self._sample(following))

    def _apply(self, lr: float, update: torch.Tensor) -> None:
        """theta <- theta - lr * p: the only place parameters change."""
        pieces = [piece.view_as(t) for t, piece in zip(self.theta, update.split(self.numels))]
        with torch.no_grad():  # one multi-tensor kernel on a GPU, not one per tensor
            torch._foreach_add_(self.theta, pieces, alpha=-lr)

    def step(self, epoch: int) -> dict:
        points = self._points_for(epoch)
        hessian_due = self.optimizer.hessian_due(self.optimizer_state)
        theta = self._theta_flat()  # [p]
        lr = float(self.schedule(epoch, self.epochs, self.optimizer.lr))
        diagnosed = lr > 0  # the zero-rate warmup step is not a diagnosed step
        whole = None if hessian_due else self._run_one_graph_step(points, theta)
        steps = None  # the new step counts [k], where the one-graph step keeps them on the device
        if whole is not None:
            losses, G, (p, surgery_state, optimizer_state, checks), steps = whole
            self._draw_ahead(epoch)  # the whole step is queued: on a GPU the host samples while it runs
        else:
            losses, G = self._compiled_or_eager_losses(points, hessian_due, theta)
            # the losses and G are queued on the device: on a GPU the host draws the next points while it
            # works (here rather than before the fetch below: ConFIG's pseudo-inverse for m >= 3 waits)
            self._draw_ahead(epoch)
        hessian = None
        if hessian_due:  # the same probes on every rank: the sum of the estimates is the whole loss's
            hessian = hutchinson_diagonal(sum(losses.task_list), self.theta, generator=self.chain_generator)
        logged = torch.cat([losses.tasks.detach(),
                            torch.stack([losses.conditions[c].detach() for c in self.condition_names])])
        if self.distributed:  # every rank holds its shard's share of each mean: the sums are the means
            import torch.distributed as dist

            for tensor in (G, logged) + ((hessian,) if hessian is not None else ()):
                dist.all_reduce(tensor)
        tasks = logged[: self.grouping.m]  # [m]
        if whole is None:
            p, surgery_state, optimizer_state, checks = self._run_update(
                G, theta, hessian, self.surgery_state, self.optimizer_state, diagnosed)
        # everything the host needs from this step, fetched in ONE synchronisation:
        # [finite tasks, loss, tasks and conditions, finite G, finite p, (R_g, R_a, R_u[, R_p], projected, cos(p, u)),
        #  (the new step counts, where they are on the device)]
        pieces = [torch.isfinite(tasks).all().reshape(1), tasks.sum().reshape(1), logged, checks]
        values = torch.cat([x.detach().reshape(-1).to(torch.float64) for x in pieces + [steps] if x is not None])
        values = values.tolist()
        if steps is not None:  # the states keep ints (checkpoints, Hessian schedules); the device its copies
            counted = dict(zip(self._device_steps, values[-len(steps):]))
            del values[-len(steps):]
            surgery_state, optimizer_state = (
                replace(state, step=int(counted[name])) if name in counted else state
                for name, state in (("surgery", surgery_state), ("optimizer", optimizer_state)))
        n = 2 + logged.numel()
        (tasks_finite, loss, *logged_values), (G_finite, p_finite), diagnostics = \
            values[:n], values[n: n + 2], values[n + 2:]
        if not (tasks_finite and G_finite and p_finite):
            raise TrainingDiverged(self._divergence_message(epoch, losses, G, p))
        self._check_blow_up(epoch, loss, logged_values[: self.grouping.m])

        self._apply(lr, p)
        self.surgery_state, self.optimizer_state = surgery_state, optimizer_state

        row: dict[str, Any] = {"epoch": epoch + 1, "lr": lr, "loss": loss}  # epoch k: the state after k updates
        scalars = iter(logged_values + diagnostics)
        for i in range(self.grouping.m):
            row[f"task{i}"] = next(scalars)
        for c in self.condition_names:
            row[f"loss:{c}"] = next(scalars)
        if diagnosed:
            self.counters.counted += 1
            for key in ("R_g", "R_a", "R_u") + (("R_p",) if self.aligned else ()):
                flag = int(next(scalars))
                self.counters.conflicts[key] += flag
                row[key] = flag
            if self.aligned:
                changed = int(next(scalars))
                self.counters.projected += changed
                row["projected"] = changed
                row["cos_pu"] = next(scalars)
        return row

    def _compiled_or_eager_losses(self, points, hessian_due: bool, theta: torch.Tensor):
        """`_losses_and_gradients`; where the compiled losses fail (no working compiler on a laptop
        without a C++ toolchain, or a graph inductor rejects), a one-line notice and the eager losses
        from then on: the same values."""
        try:
            return self._losses_and_gradients(points, hessian_due, theta)
        except torch._dynamo.exc.TorchDynamoException as err:
            if self.problem.compile_mode is None:
                raise
            self._notice(f"the losses do not compile ({_reason(err)}); training eagerly")
            self.problem.stop_compiling()
            self._update_compiled = self._step_compiled = None  # they would meet the same compiler
            return self._losses_and_gradients(points, hessian_due, theta)

    def _compile_step(self, *, steps_on_device: bool) -> None:
        """The one-graph step, compiled with static shapes (the point sets' sizes never change; static
        kernels were faster than dynamic ones).  Its step counts are ints, symbolic in the graph
        (STEP_COUNTS: one graph for every step), or with ``steps_on_device`` 0-d float64 tensors on the
        run's device, fed from one step to the next: what CUDA graphs need (``compile = graphs`` on CUDA),
        since a recorded graph replays the same kernel arguments at every step."""
        self._steps_on_device, self._device_steps, self._one_graph_calls = steps_on_device, None, 0
        whole = types.MethodType(own_code(Trainer._losses_gradients_and_update), self)
        self._step_compiled = torch.compile(whole, fullgraph=True, dynamic=False if steps_on_device else None,
                                            mode=self.problem.compile_mode)

    def _run_one_graph_step(self, points, theta: torch.Tensor):
        """(losses, G, the chain's (p, states, checks), the new step counts [k] or None) by the one-graph
        step, or None where it does not run; where it does not compile, a one-line notice and the losses
        and the chain compiled apart from then on (each with its own fallback)."""
        if self._step_compiled is None:
            return None
        fused = self.problem.fused_gradients(self.model, self.params, self.grouping.name)
        inputs, counts = fused.inputs(points)
        states = {"surgery": self.surgery_state, "optimizer": self.optimizer_state}
        if self._steps_on_device:
            if self._device_steps is None:  # the first step, or the first after a resume
                self._device_steps = {name: torch.tensor(float(state.step), dtype=torch.float64, device=self.device)
                                      for name, state in states.items() if _has_step(state)}
            states.update({name: replace(states[name], step=step) for name, step in self._device_steps.items()})
        try:
            with aot_cacheable(), symbolic("" if self._steps_on_device else STEP_COUNTS):
                tasks, conditions, G, (p, surgery_state, optimizer_state, checks) = self._step_compiled(
                    fused, theta, inputs, counts, states["surgery"], states["optimizer"])
        except torch._dynamo.exc.TorchDynamoException as err:
            self._step_compiled = None
            self._notice(f"the step does not compile as one graph ({_reason(err)}); the losses and the "
                         "update chain compile apart")
            return None
        except RuntimeError as err:
            # CUDA graphs warm up and record in the first calls: an op a graph cannot hold fails there, with a
            # CUDA error rather than a compiler's; later, a RuntimeError is the run's own
            if not self._steps_on_device or self._one_graph_calls >= RECORDING_CALLS:
                raise
            self._step_compiled = None
            self._notice(f"the step's CUDA graph cannot be recorded ({_reason(err)}); the losses and the "
                         "update chain compile apart")
            return None
        self._one_graph_calls += 1
        steps = None
        if self._steps_on_device:
            # a CUDA graph's outputs are overwritten by its next replay: the states it feeds back are copies
            states = {"surgery": _copied(surgery_state), "optimizer": _copied(optimizer_state)}
            self._device_steps = {name: states[name].step for name in self._device_steps}
            surgery_state, optimizer_state = states["surgery"], states["optimizer"]
            steps = torch.stack(list(self._device_steps.values())) if self._device_steps else None
        return fused.losses(tasks, conditions), G, (p, surgery_state, optimizer_state, checks), steps

    def _losses_gradients_and_update(self, fused, theta, inputs, counts, surgery_state, optimizer_state):
        """The one-graph step: (tasks [m], conditions [C], G [m, p], ``_update``'s (p, states, checks)), a
        pure function of its arguments (compiled, `_step_compiled`)."""
        tasks, conditions, G = fused(theta, inputs, counts)
        return tasks, conditions, G, self._update(G, theta, None, surgery_state, optimizer_state, True)

    def _notice(self, text: str) -> None:
        if self.rank == 0:
            print(f"pinnspec: compile = {self.problem.compile}: {text}", file=sys.stderr)

    def _losses_and_gradients(self, points, hessian_due: bool, theta: torch.Tensor):
        """The m task losses and G [m, p] (the compiled losses unless a Hessian estimate is due:
        it needs double backward, which a compiled graph does not support).  Compiled, and where each
        point set feeds one task, losses and G by one graph (`CompiledProblem.losses_and_gradients`)."""
        if not hessian_due:
            fused = self.problem.losses_and_gradients(self.model, points, self.params, self.grouping.name, theta)
            if fused is not None:
                return fused
        losses = self.problem.losses(self.model, points, self.params, self.grouping.name, compiled=not hessian_due)
        return losses, loss_gradients(losses.task_list, self.theta, retain_graph=hessian_due)  # [m, p]

    def _update(self, G, theta, hessian, surgery_state, optimizer_state, diagnosed: bool, generator=None):
        """surgery -> proposal -> alignment, and the step's checks: (p [p], surgery state, optimizer state,
        checks [finite G, finite p, (R_g, R_a, R_u[, R_p], projected, cos(p, u)) when diagnosed]).
        A pure function of its arguments (compiled with the losses when compile is on)."""
        a, surgery_state = self.surgery(G, surgery_state, generator=generator)  # [p]
        u, tentative = self.optimizer.propose(a, optimizer_state, params=theta, hessian=hessian)  # [p]
        p, optimizer_state = self.alignment.align(u, G, tentative, self.optimizer, params=theta)  # [p]
        checks = [torch.stack([torch.isfinite(G).all(), torch.isfinite(p).all()])]
        if diagnosed:
            checks.append(conflict_indicators(G, [a, u] + ([p] if self.aligned else [])))
            if self.aligned:
                u64, p64 = u.detach().double(), p.detach().double()
                checks += [((p - u).norm() > 0).reshape(1),
                           (u64 @ p64 / (u64.norm() * p64.norm() + 1e-30)).reshape(1)]
        return p, surgery_state, optimizer_state, torch.cat([c.reshape(-1).to(torch.float64) for c in checks])

    def _run_update(self, G, theta, hessian, surgery_state, optimizer_state, diagnosed: bool):
        """``_update``, compiled where it compiles; a chain that does not (a host decision inside a
        surgery method or an optimizer) runs eagerly from then on, with a one-line notice.  Compiled, it
        always computes the diagnostics (a few reductions; the caller reads them only when ``diagnosed``):
        one graph to compile, not a second one for the zero-rate first step alone."""
        if self._update_compiled is not None:
            try:
                return self._update_compiled(G, theta, hessian, surgery_state, optimizer_state, True)
            except torch._dynamo.exc.TorchDynamoException as err:
                self._update_compiled = None
                t = self.spec.ir.training
                self._notice(f"the update chain ({t.surgery}, {t.optimizer}, {t.align}) does not compile "
                             f"({type(err).__name__}); it runs eagerly")
        return self._update(G, theta, hessian, surgery_state, optimizer_state, diagnosed, self.chain_generator)

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
                                     compiled=False)
        total = losses.tasks.detach().sum().to(torch.float64)
        if self.distributed:
            import torch.distributed as dist

            dist.all_reduce(total)
        return float(total)

    # ================================================================== run
    def run(self) -> Result:
        if self.out:
            os.makedirs(self.out, exist_ok=True)
            files.atomic_write_text(os.path.join(self.out, "config.pinn"), self.spec.source)
        every = self.spec.ir.validation.every
        bar = self._progress_bar()
        previous = _install_sigint(self)
        started = time.perf_counter() - self.elapsed
        self._reset_peak_memory()
        try:
            for epoch in range(self.epoch, self.epochs):
                row = self.step(epoch)
                validated = (epoch + 1) % every == 0 or epoch == self.epochs - 1
                if validated:
                    self._validate(epoch, row)
                self.history.append(row)
                self.epoch = epoch + 1
                self.elapsed = time.perf_counter() - started
                if bar is not None:
                    bar.update(1)
                    if epoch % 10 == 0 or validated:
                        bar.set_postfix_str(self._postfix(row), refresh=False)
                elif validated and self.log:
                    self.log(f"epoch {epoch + 1}/{self.epochs}: {self._postfix(row)}")
                if self.out and self.epoch % self.checkpoint_every == 0 and self.epoch < self.epochs:
                    self._save_checkpoint()
                    self._write_result()
                if self._stop_requested:
                    self.status, self.message = "interrupted", f"interrupted after epoch {epoch + 1}"
                    break
            else:
                self.status = "completed"
        except TrainingDiverged as err:
            self.status, self.message = "diverged", str(err)
            self.history.append({"epoch": self.epoch + 1, "loss": float("nan")})
        finally:
            _restore_sigint(previous)
            if bar is not None:
                bar.close()
        self.elapsed = time.perf_counter() - started
        if self.out and self.status != "diverged":
            self._save_checkpoint()  # a diverged run keeps its last good checkpoint
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
        return Result(
            problem=self.spec.ir.name, surgery=str(t.surgery), optimizer=str(t.optimizer), align=str(t.align),
            grouping=self.grouping.name, seed=self.seed, epochs=self.epochs, epochs_done=self.epoch,
            status=self.status, rel_l2=best, rel_l2_final=final, best_epoch=self.best.epoch,
            best_validation=None if self.best.epoch is None or not self.has_reference else self.best.validation,
            validation=self._selection(), rates=rates,
            projected_fraction=(self.counters.projected / n if n and self.aligned else None),
            train_time_s=self.elapsed, peak_memory_mb=peak, device=str(self.device),
            dtype=str(self.dtype).replace("torch.", ""),
            params={k: float(v.detach()) for k, v in self.params.items()}, model=str(t.model),
            tasks=list(self.grouping.labels), message=self.message, allocator=self.allocator, run_dir=self.out)

    def _selection(self) -> str:
        if not self.has_reference:
            return "training loss"
        return "test" if self.spec.ir.validation.on_test else "points"

    def _write_result(self) -> Result:
        result = self.result()
        if self.out:
            files.write_json(os.path.join(self.out, "result.json"), result.to_dict())
            files.write_csv(os.path.join(self.out, "history.csv"), self.columns, self.history)
            if self.status in ("completed", "interrupted", "diverged") and self.epoch > 0:
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
            "model": self.model.state_dict(),
            "params": {k: v.detach() for k, v in self.params.items()},
            "surgery": self.surgery.state_dict(self.surgery_state),
            "optimizer": self.optimizer.state_dict(self.optimizer_state),
            "chain_generator": self.chain_generator.get_state(),
            "best": asdict(self.best),
            "counters": asdict(self.counters),
            "history": self.history,
            "validations": self.validations,
            "elapsed": self.elapsed,
            "lowest_loss": self.lowest_loss,
        }

    def load_state_dict(self, state: dict) -> None:
        self.epoch = state["epoch"]
        self.model.load_state_dict(state["model"])
        with torch.no_grad():
            for k, v in state["params"].items():
                self.params[k].copy_(v)
        # checkpoints load onto the CPU (the generator state must stay there): the chain's states
        # go back to the run's device
        self.surgery_state = self.surgery.load_state_dict(_to_device(state["surgery"], self.device))
        self.optimizer_state = self.optimizer.load_state_dict(_to_device(state["optimizer"], self.device))
        self.chain_generator.set_state(state["chain_generator"])
        self._device_steps = None  # the one-graph step copies the loaded step counts to the device
        self.best = _Best(**state["best"])
        self.counters = _Counters(**state["counters"])
        self.history = list(state["history"])
        self.validations = list(state["validations"])
        self.elapsed = state["elapsed"]
        self.lowest_loss = state.get("lowest_loss")  # absent in checkpoints written before the blow-up check

    def _save_checkpoint(self) -> None:
        files.save_torch(os.path.join(self.out, "checkpoint.pt"), self.state_dict())


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


def _to_device(tree, device: torch.device):
    """Every tensor of a nested dict/list/tuple, moved to ``device`` (bit for bit)."""
    if isinstance(tree, torch.Tensor):
        return tree.to(device)
    if isinstance(tree, dict):
        return {k: _to_device(v, device) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_to_device(v, device) for v in tree)
    return tree


def _install_sigint(trainer: Trainer):
    """Ctrl-C: finish the epoch, checkpoint, stop (a second Ctrl-C stops at once)."""
    try:
        def handler(signum, frame):
            if trainer._stop_requested:
                raise KeyboardInterrupt
            trainer._stop_requested = True

        return signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        return None


def _restore_sigint(previous) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
