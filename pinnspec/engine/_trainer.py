"""The training loop: one epoch at a time.

Every epoch:
    points = the stream's points of the epoch    fresh per resample block, pure in (seed, epoch) (`_points`)
    out    = execution(theta, points, state)     losses [m], G [m, p] and the update chain's step
                                                 (surgery -> proposal -> alignment: `_chain`), by the
                                                 strategy of the execution plan (`_execute`)
    values = one fetch                           the losses, the chain's checks, the conflict indicators
    stop if not finite, or if the loss blew up   (diverged: no checkpoint of it is written; `_monitor`)
    magnitudes (every `every` epochs)            the weights stage's per-task measure (`_weights`): ||g_i||
                                                 from G, or the NTK diagonal from the residuals
    theta -= eta_t p                             `Trainer._apply`, the only place parameters change
    lambda <- the balanced weights               `UpdateChain.reweighted`, used from the next epoch on

A quasi-Newton stage runs its method instead of the chain (`_stages.QuasiNewtonStage`).  What the run has done
is its `RunState`; validation, divergence and progress are the `Monitor`'s; result.json and the other files are
`RunFiles`'.  Signs follow the update chain's convention (`_chain`): G, a, u and p all point uphill.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import replace
from typing import Callable

import torch

from .. import __version__
from .._collector import hold as hold_collector, release as release_collector
from .._interrupts import install_sigint, restore_sigint
from .._malloc import tune_allocator
from ..catalog import QUASI_NEWTON_STAGES
from ..compiler import compile_spec
from ..registry import SCHEDULES
from ._artifacts import to_device
from ._autocompile import CompileRecords, compile_key, decide_compile, use_compile_cache
from ._budget import TimeBudget, stop_rule
from ._build import DTYPES, build_model, check_dense_stages, resolve_device
from ._chain import ChainState, UpdateChain
from ._execute import Execution, plan_execution
from ._group import resume_in_lane
from ._memory import check_memory
from ._monitor import Evaluation, Monitor, TrainingDiverged
from ._points import PointStream
from ._results import Result, RunFiles
from ._run_state import RunState
from ._stages import ObjectiveGraph, QuasiNewtonStage
from ._step import StepContext, StepOut, StepValues, fetch, with_host_steps
from ._weights import GradNorm, ntk_magnitudes

__all__ = ["Trainer"]


class Trainer:
    """Trains one checked spec; writes its run directory when ``out`` is given.

    What it holds: the compiled problem (`problem`), the network and the spec's params (`model`, `params`; theta
    is their tensors), the update chain and its state (`chain`, `chain_state`), how a step runs (`plan`,
    `execution`), the points (`points`), the run's progress (`run_state`), what watches it (`monitor`, on the
    test and validation points of `evaluation`) and its files (`files`)."""

    def __init__(self, spec, out: str | None = None, *, progress: bool = False, log=None,
                 device_override: str | None = None, distributed: bool = False):
        """``progress``: a tqdm bar; ``log``: a callable that gets one line per validation and the closing
        message (``--quiet`` logs instead of the bar).

        ``distributed``: data-parallel training in an initialised ``torch.distributed`` process group
        (``torchrun``): each rank evaluates its shard of every point set, the m loss-specific gradients (and the
        losses) are all-reduced, and every rank runs the identical surgery/optimizer/GUA step; rank 0 alone
        writes the run directory."""
        self.allocator = tune_allocator()
        self.rank, self.world = 0, 1
        if distributed:
            import torch.distributed as dist

            if not dist.is_initialized():
                raise ValueError("--distributed needs a torch.distributed process group: launch with torchrun")
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
            if self.rank != 0:
                out, progress, log = None, False, None
        self.device = resolve_device(device_override or spec.ir.training.setting("device"))
        if distributed and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", self.rank)) % torch.cuda.device_count())
        use_compile_cache()  # torch's compile cache in the user's cache folder, unless TORCHINDUCTOR_CACHE_DIR is set
        compiling = None
        if spec.ir.training.setting("compile") == "auto":  # decided once, here; config.pinn records on or off
            spec, compiling = decide_compile(spec, self.device, rank=self.rank if distributed else None)
        self.distributed, self.spec, self.out, self.log = distributed, spec, out, log
        p = spec.ir
        t = p.training
        self.epochs = int(t.setting("epochs"))
        self.seed = int(t.setting("seed"))
        self.checkpoint_every = int(t.setting("checkpoint_every"))
        #: the stages in order (one without `stage` statements) and the epoch each begins at
        self.stages = t.stage_list()
        self.stage_starts = [sum(s.epochs for s in self.stages[:k]) for k in range(len(self.stages))]
        self.budget = TimeBudget(t.setting("time"), len(self.stages))
        if distributed and any(s.second_order for s in self.stages):
            raise ValueError(f"a quasi-Newton stage ({', '.join(QUASI_NEWTON_STAGES)}) does not run "
                             "data-parallel (its line search is one process's): train the spec without --distributed")
        self.stage_index = 0
        self.dtype = DTYPES[self.stages[0].dtype]
        self.grouping = p.grouping()
        self.stop_rule = stop_rule(p, self.grouping)  # `train stop`: None, or where the last stage ends the run
        self.problem = compile_spec(p, self.grouping.name)
        check_memory(spec, self.problem, device=self.device, dtype=self.dtype)  # before anything is allocated
        if distributed and self.problem.causal:
            raise ValueError("causal weighting takes each time chunk's mean over all of its points: data-parallel "
                             "runs (point sets split over ranks) do not take it; train without --distributed")

        self.model = build_model(spec, self.problem, device=self.device, dtype=self.dtype)
        self.params = self.problem.init_params(device=self.device, dtype=self.dtype)
        self.theta: list[torch.Tensor] = list(self.model.parameters()) + list(self.params.values())
        self.numels = [t_.numel() for t_ in self.theta]
        check_dense_stages(self.stages, sum(self.numels))
        self.schedule = SCHEDULES.get(t.schedule.name)(**t.schedule.options)
        self.chain_generator = torch.Generator().manual_seed(self.seed + 1)  # PCGrad orders, Hutchinson probes
        self.condition_names = list(self.problem.condition_kernels)  # the spec's order, less `left_out`
        self.evaluation = Evaluation(self.problem, self.model, device=self.device, dtype=self.dtype)
        self.monitor = Monitor(spec, self.problem, self.evaluation, self.grouping, self.condition_names,
                               rank=self.rank, world=self.world, distributed=distributed, progress=progress, log=log)
        self.files = RunFiles(out, spec, self.problem, self.evaluation, self.model, self.params, device=self.device,
                              allocator=self.allocator)
        self.points = PointStream(self.problem, self.model, self.params, seed=self.seed, device=self.device,
                                  dtype=self.dtype, rank=self.rank, world=self.world, distributed=distributed)
        self.objective_graph = ObjectiveGraph(t, self.problem, self.model,
                                              notice=lambda text: self.monitor.notice(text, prefix=False))
        self.quasi_newton: QuasiNewtonStage | None = None  # the stage in progress, if it is a quasi-Newton one
        #: `weights rba`: condition -> lambda [N] per point (empty before the first step), else None; the step
        #: computes the new lambda into `_attention_next`, kept once the step succeeded
        self.attention: dict[str, torch.Tensor] | None = {} if t.weights.name == "rba" else None
        self._attention_next: dict[str, torch.Tensor] = {}
        self._build_chain(0)
        m = self.grouping.m
        self.chain_state: ChainState = self.chain.init(self.theta_flat(), [tuple(t_.shape) for t_ in self.theta], m)
        self.run_state = RunState(
            ["epoch", "lr", "loss"] + [f"task{i}" for i in range(m)]
            + [f"loss:{c}" for c in self.condition_names]
            + ["R_g", "R_a", "R_u", "R_p", "projected", "cos_pu", "validation"]
            + ([f"weight{i}" for i in range(m)] if self.chain_state.weights is not None else [])
            + (["stage", "evaluations"] if t.stages else [])
            + [f"causal:{name}" for name in self.problem.causal]
            + ([f"attention:{c}" for c in self.condition_names] if self.attention is not None else []))
        self._stop_requested = False
        self._previous_sigint = self._started = None  # set while the run trains (`begin_run`)
        self._holding_collector = False  # `pinnspec._collector`'s hold, from `begin_run` to `end_epochs`
        self.monitor.announce()
        if compiling is not None:
            self.monitor.notice(compiling, prefix=False)
        #: the first compiled step's seconds go to the user's records (`compile = auto` reads them)
        self._first_step_record = self.plan.mode is not None and self.rank == 0
        if self.stages[0].second_order:
            self._setup_stage(0)
            self._initial_stage_state(0)
            self.monitor.notice(f"stage 1/{len(self.stages)}: {self.stages[0]}; it runs "
                                f"{'compiled' if self.quasi_newton.objective.compiled else 'eagerly'}", prefix=False)

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
        self.execution = Execution(self.plan, context, notice=self.monitor.notice)
        #: whether steps that log no conflict statistics take one backward pass of the weighted sum (`train
        #: diagnostics = validation`, the default, and a chain that needs no more: the plan's `summed_steps`)
        self.sums = self.plan.summed_steps is not None
        if not self.stages[k].second_order:
            for note in self.plan.notes:
                self.monitor.notice(note, prefix=False)
        if self.plan.mode is not None:
            # a deprecation inside torch's own lowering, printed once per compile: not the user's to act on
            warnings.filterwarnings("ignore", message=r"`torch\._prims_common\.check` is deprecated",
                                    category=FutureWarning)

    def _setup_stage(self, k: int, *, objective: bool = True) -> None:
        """Make stage ``k`` current: its dtype (the model, params and points converted), its chain and execution
        (first-order), or its `QuasiNewtonStage` and (``objective``) its points.  States are set by the caller:
        `_initial_stage_state` when a stage begins, a checkpoint when a run resumes (which also sets the points:
        ``objective`` False)."""
        stage = self.stages[k]
        self.stage_index = k
        dtype = DTYPES[stage.dtype]
        if dtype != self.dtype:
            self.dtype = dtype
            self.model.to(dtype)
            for parameter in self.params.values():
                parameter.data = parameter.data.to(dtype)
            self.evaluation.retyped(dtype)
            self.points.retyped(dtype)
        if k > 0:
            self._build_chain(k)
        self.points.fixed = self.quasi_newton = None
        if stage.second_order:
            self.quasi_newton = QuasiNewtonStage(
                stage, k, self.stage_starts[k], problem=self.problem, model=self.model, params=self.params,
                grouping=self.grouping, condition_names=self.condition_names, points=self.points,
                engine=self.plan.engine, weights=lambda: self.chain_state.weights, graph=self.objective_graph,
                notice=lambda text: self.monitor.notice(text, prefix=False))
            if objective:
                self.quasi_newton.objective_at(self.stage_starts[k])

    def _initial_stage_state(self, k: int) -> None:
        """The states stage ``k`` begins with: a fresh chain state keeping the task weights (first-order), or
        the method's state at the parameters now (second-order, one evaluation of the objective)."""
        if self.stages[k].second_order:
            self.quasi_newton.begin(self.theta_flat())
        elif k > 0:
            fresh = self.chain.init(self.theta_flat(), [tuple(t_.shape) for t_ in self.theta], self.grouping.m)
            self.chain_state = fresh._replace(weights=self.chain_state.weights)

    def _begin_stage(self, k: int) -> None:
        """Stage ``k`` begins where stage k - 1 ended, not at the best checkpoint: that one is chosen by the
        reference where the spec has one, and the training must not depend on what a user would not have."""
        weights = self.chain_state.weights
        self._setup_stage(k)
        self._initial_stage_state(k)
        self.budget.stage_began(k, time.perf_counter() - self._started)
        stage = self.stages[k]
        note = f"stage {k + 1}/{len(self.stages)}: {stage}, from where stage {k} ended (epoch {self.stage_starts[k]})"
        if stage.second_order:
            t = self.spec.ir.training
            points = f"points new every {stage.resample} epochs" if stage.resample else "fixed points"
            note += (f"; it minimises the {'weighted ' if weights is not None else ''}sum of the task losses at "
                     f"{points}, without surgery or alignment ({t.surgery.name}, {t.align.name} apply to "
                     f"first-order stages); it runs {'compiled' if self.quasi_newton.objective.compiled else 'eagerly'}")
        self.monitor.notice(note, prefix=False)

    # ================================================================== the step
    def theta_flat(self) -> torch.Tensor:
        """The parameters as one flat vector [p]: the model's, then the spec's params (a detached copy)."""
        return torch.cat([t.detach().reshape(-1) for t in self.theta])  # [p]

    def _apply(self, lr: float, update: torch.Tensor) -> None:
        """theta <- theta - lr * p: the only place parameters change."""
        pieces = [piece.view_as(t) for t, piece in zip(self.theta, update.split(self.numels))]
        with torch.no_grad():  # one multi-tensor kernel on a GPU, not one per tensor
            torch._foreach_add_(self.theta, pieces, alpha=-lr)

    def step(self, epoch: int, launched: tuple | None = None) -> dict:
        """One epoch: points -> execute (losses, G, the chain's step) -> one fetch -> divergence checks ->
        apply -> the history row.  In a quasi-Newton stage, one iteration of its method (`_second_order_step`).
        ``launched``: the first half, already queued (`launch_step`)."""
        if self.quasi_newton is not None:
            return self._second_order_step(epoch)
        points, lr, out = launched or self.launch_step(epoch)
        values = fetch(out, self.grouping.m)
        if not values.finite:
            raise TrainingDiverged(self.monitor.divergence(epoch, out.losses, out.G, out.chain.p))
        if self.attention is not None:  # `weights rba`: the losses grow by design as the point weights build up
            self.attention, self._attention_next = self._attention_next, {}
        else:
            self.monitor.check_blow_up(self.run_state, epoch, values.loss, values.tasks)
        # measured at the parameters this step started from, on its points
        magnitudes = self._weight_magnitudes(points, out, epoch) if self.chain.weights.due(epoch) else None
        self._apply(lr, out.chain.p)
        self.chain_state = with_host_steps(out.chain.state, values.steps)
        if magnitudes is not None:
            self.chain_state = self.chain.reweighted(self.chain_state, magnitudes)
        # the zero-rate warmup step and a summed step (no G) are not diagnosed
        return self._row(epoch, lr, values, diagnosed=lr > 0 and out.G is not None)

    def launch_step(self, epoch: int) -> tuple:
        """The first half of a first-order step, up to its fetch: (points, rate, the execution's `StepOut`), the
        device's work queued.  A `RunGroup` queues every run's before it waits for any."""
        points = self.points.at(epoch)
        start, stage = self.stage_starts[self.stage_index], self.stages[self.stage_index]
        lr = float(self.schedule(epoch - start, stage.epochs, self.chain.optimizer.lr))
        draw_ahead = lambda: self.points.draw_ahead(epoch, last=self.epochs, stage_starts=self.stage_starts)  # noqa: E731
        # the conflict statistics (and G) on validation epochs, and where the weights stage measures G
        summed = self.sums and not (self.monitor.validated(epoch, last=self.epochs, stage_starts=self.stage_starts)
                                    or (self.chain.weights.measures == "G" and self.chain.weights.due(epoch)))
        out = self.execution(self.theta_flat(), points, self.chain_state, draw_ahead,
                             hessian_due=self.chain.hessian_due(self.chain_state), summed=summed)
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
        """One iteration of the stage's method (a direction and its line search) on the summed objective; the
        history row's lr is the accepted step length.  Once the method has stopped moving (converged, or stalled
        at the precision floor) the stage's remaining epochs keep the parameters."""
        stage = self.quasi_newton
        move, logged, info = stage.step(epoch, self.theta_flat())  # [p], [m + C]
        m = self.grouping.m
        tasks, conditions = logged[:m].tolist(), logged[m:].tolist()
        weights = () if self.chain_state.weights is None else self.chain_state.weights.tolist()
        values = StepValues(True, sum(tasks), tasks, conditions, [], 0.0, 0.0, {}, weights)
        if not (math.isfinite(values.loss) and all(map(math.isfinite, tasks)) and bool(torch.isfinite(move).all())):
            raise TrainingDiverged(stage.divergence(epoch, tasks, conditions))
        if self.attention is None:
            self.monitor.check_blow_up(self.run_state, epoch, values.loss, tasks)
        self._apply(1.0, -move)
        if info is not None:
            stage.check_progress(epoch, info)
        row = self._row(epoch, 0.0 if info is None else info.t, values, diagnosed=False)
        row["evaluations"] = 0 if info is None else info.evaluations
        return row

    def _weight_magnitudes(self, points, out: StepOut, epoch: int) -> torch.Tensor:
        """The weights stage's per-task magnitudes s [m] (float64, on the device; no host synchronisation):
        ||g_i|| of the step's G (gradnorm) or the mean NTK diagonal (ntk, `ntk_magnitudes`)."""
        weights = self.chain.weights
        if weights.measures == "G":
            return GradNorm.magnitudes(out.G)
        magnitudes = ntk_magnitudes(self.problem, self.model, self.params, self.theta, points,
                                    self.spec.ir.grouping(self.grouping.name).tasks, subsample=weights.points,
                                    seed=self.seed, epoch=epoch, engine=self.plan.engine)
        if self.distributed:  # each rank measured its shard's subsample: their mean, the same on every rank
            import torch.distributed as dist

            dist.all_reduce(magnitudes)
            magnitudes = magnitudes / self.world
        return magnitudes

    def _row(self, epoch: int, lr: float, values: "StepValues", *, diagnosed: bool) -> dict:
        """The history row of an epoch (epoch k: the state after k updates); counts the conflict rates."""
        row: dict = {"epoch": epoch + 1, "lr": lr, "loss": values.loss}
        if self.spec.ir.training.stages:
            row["stage"] = self.stage_index + 1
        row.update({f"task{i}": value for i, value in enumerate(values.tasks)})
        row.update({f"loss:{c}": value for c, value in zip(self.condition_names, values.conditions)})
        row.update({f"weight{i}": value for i, value in enumerate(values.weights)})  # the weights this step used
        if diagnosed:
            counters, aligned = self.run_state.counters, self.chain.aligned
            counters.counted += 1
            for key, flag in zip(("R_g", "R_a", "R_u") + (("R_p",) if aligned else ()), values.conflicts):
                counters.conflicts[key] += int(flag)
                row[key] = int(flag)
            if aligned:
                counters.projected += int(values.projected)
                row["projected"] = int(values.projected)
                row["cos_pu"] = values.cos_pu
        return row

    # ================================================================== run
    def run(self, *, before_epoch: Callable[[int], object] | None = None) -> Result:
        """Train to the last epoch (or a stop: Ctrl-C, divergence); the result.  ``before_epoch(epoch)``: called
        before each epoch trains, e.g. to measure the state a step starts from (it must leave the run as it
        found it)."""
        if self.run_state.group_lane is not None and self.run_state.epoch < self.epochs:
            result = resume_in_lane(self)  # resumed from a group: on in its lane
            if result is not None:
                return result
        self.begin_run()
        try:
            for epoch in range(self.run_state.epoch, self.epochs):
                if before_epoch is not None:
                    before_epoch(epoch)
                if not self.train_epoch(epoch):
                    break
        finally:
            self.end_epochs()
        return self.finish_run()

    # a run in three parts, so that a `RunGroup` can train several trainers in lockstep
    def begin_run(self, *, sigint: bool = True) -> None:
        """Before the first epoch: the run directory, the progress bar, the Ctrl-C handler (``sigint``) and the
        clock."""
        self.files.begin()
        self.monitor.begin(self.run_state, self.epochs)
        self._previous_sigint = install_sigint(self.request_stop) if sigint else None
        self._started = time.perf_counter() - self.run_state.elapsed
        if self.budget.deadline is None:
            self.budget.stage_began(self.stage_index, self.run_state.elapsed)
        if self.run_state.epoch >= self.epochs:
            self.run_state.status = "completed"
        if not self._holding_collector:  # the collector off the set-up's objects while the epochs run
            hold_collector()
            self._holding_collector = True

    def train_epoch(self, epoch: int, launched: tuple | None = None) -> bool:
        """Epoch ``epoch`` (the step, validation, history, checkpoint); False once the run has stopped: its last
        epoch, a stop request (Ctrl-C) or divergence (the status says which).  ``launched``: the step's first half,
        already queued (`launch_step`, in a run of one stage)."""
        run = self.run_state
        try:
            stage = max(k for k, start in enumerate(self.stage_starts) if start <= epoch)
            if stage != self.stage_index:
                self._begin_stage(stage)
            started = time.perf_counter()
            row = self.step(epoch) if launched is None else self.step(epoch, launched)
            if self._first_step_record:  # the step's one fetch waited for the device: its whole time
                self._first_step_record = False
                CompileRecords().put(compile_key(self.spec, self.device), time.perf_counter() - started)
        except TrainingDiverged as err:
            run.status, run.message = "diverged", str(err)
            run.history.append({"epoch": run.epoch + 1, "loss": float("nan")})
            run.elapsed = time.perf_counter() - self._started
            return False
        if self.budget.spent(time.perf_counter() - self._started):
            self._end_stage_after(epoch)
        if (self.stop_rule is not None and epoch + 1 < self.epochs and self.stage_index == len(self.stages) - 1
                and self.stop_rule.reached(row)):  # in the last stage: the earlier ones only start the fit
            self._end_run_after(epoch)
        validated = self.monitor.validated(epoch, last=self.epochs, stage_starts=self.stage_starts)
        if validated:
            self.monitor.validate(run, epoch, row, self.model, self.params, self.points.at(epoch), self.plan.engine,
                                  self.attention)
        run.history.append(row)
        run.epoch = epoch + 1
        run.elapsed = time.perf_counter() - self._started
        stage = (f"stage {self.stage_index + 1}/{len(self.stages)} {self.stages[self.stage_index].optimizer.name}"
                 if self.spec.ir.training.stages else None)
        self.monitor.record(run, row, epoch, self.epochs, validated, stage, self.chain.aligned)
        if self.out and run.epoch % self.checkpoint_every == 0 and run.epoch < self.epochs:
            self.files.save_checkpoint(self.state_dict())
            self.files.write(self.result(), run)
        if run.epoch == self.epochs:
            run.status = "completed"
            return False
        return not self.stop_if_requested()

    def _end_stage_after(self, epoch: int) -> None:
        """The stage in progress has spent its share of the time budget: it ends after ``epoch`` (the later stages,
        and the run's last epoch, move forward by the epochs it leaves out)."""
        k = self.stage_index
        end = self.stage_starts[k + 1] if k + 1 < len(self.stages) else self.epochs
        left_out = end - (epoch + 1)
        if left_out <= 0:
            return
        self.stage_starts[k + 1:] = [start - left_out for start in self.stage_starts[k + 1:]]
        self.epochs -= left_out
        self.monitor.retotal(self.epochs)
        budget = f"{self.budget.seconds:g} s"
        if k + 1 < len(self.stages):
            self.monitor.notice(f"stage {k + 1}/{len(self.stages)} has spent its share of the time budget ({budget}) "
                                f"after epoch {epoch + 1}", prefix=False)
        else:
            self.run_state.message = f"the time budget ({budget}) was spent after epoch {epoch + 1}"

    def _end_run_after(self, epoch: int) -> None:
        """`train stop`: its rule holds after ``epoch``; the run ends there, completed (the stages not begun are
        left out)."""
        self.stage_starts = [min(start, epoch + 1) for start in self.stage_starts]
        self.epochs = epoch + 1
        self.monitor.retotal(self.epochs)
        self.run_state.message = self.stop_rule.message(epoch + 1)

    def request_stop(self) -> None:
        """Stop after the epoch in progress, checkpointed (what Ctrl-C does)."""
        self._stop_requested = True

    def stop_if_requested(self) -> bool:
        """Between epochs: whether a stop was requested, and if so the run's status says it stopped here."""
        if self._stop_requested:
            self.run_state.status = "interrupted"
            self.run_state.message = f"interrupted after epoch {self.run_state.epoch}"
        return self._stop_requested

    def end_epochs(self) -> None:
        """After the last epoch trained (or an exception): the Ctrl-C handler and the progress bar go."""
        restore_sigint(self._previous_sigint)
        self._previous_sigint = None
        self.monitor.end()
        if self._holding_collector:
            release_collector()
            self._holding_collector = False

    def finish_run(self) -> Result:
        """The final checkpoint (a diverged run keeps the one written before it) and the result; the training time
        is that to the run's last epoch (in a `RunGroup`, not the time the group trained on after it)."""
        if self.out and self.run_state.status != "diverged":
            self.files.save_checkpoint(self.state_dict())
        result = self.files.write(self.result(), self.run_state)
        if self.log and self.run_state.message:
            self.log(self.run_state.message)
        return result

    # ================================================================== results and checkpoints
    def result(self) -> Result:
        t = self.spec.ir.training
        dtype = (" then ".join(dict.fromkeys(s.dtype for s in self.stages)) if t.stages
                 else str(self.dtype).replace("torch.", ""))
        return self.files.result(self.run_state, epochs=self.epochs, seed=self.seed, grouping=self.grouping,
                                 dtype=dtype, aligned=self.chain.aligned, execution=self.execution.current)

    def state_dict(self) -> dict:
        return {
            "version": __version__,
            "source_dir": self.spec.ir.source_dir,  # relative data/reference paths of config.pinn resolve here
            "stage": self.stage_index,
            **({"stage_starts": list(self.stage_starts), "planned_epochs": self.epochs, **self.budget.state_dict()}
               if self.budget.seconds is not None or self.stop_rule is not None else {}),
            **({"attention": dict(self.attention)} if self.attention is not None else {}),
            **(self.quasi_newton.state_dict() if self.quasi_newton is not None else {}),
            "model": self.model.state_dict(),
            "params": {k: v.detach() for k, v in self.params.items()},
            **self.chain.state_dict(self.chain_state),
            "chain_generator": self.chain_generator.get_state(),
            **self.run_state.state_dict(),
            **self.points.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        stage = state.get("stage", 0)  # absent in checkpoints written before stages
        if "stage_starts" in state:  # a time budget or a `train stop`: where its stages end, as far as decided
            self.stage_starts, self.epochs = list(state["stage_starts"]), int(state["planned_epochs"])
            self.budget.load_state_dict(state)
        if stage != self.stage_index:  # its dtype before the weights load (a float64 stage keeps every bit); a
            self._setup_stage(stage, objective=False)  # quasi-Newton stage's points and objective: below
        self.model.load_state_dict(state["model"])
        with torch.no_grad():
            for k, v in state["params"].items():
                self.params[k].copy_(v)
        # checkpoints load onto the CPU (the generator state must stay there): the chain's states
        # go back to the run's device
        self.chain_state = self.chain.load_state_dict(to_device(
            {k: state[k] for k in ("surgery", "optimizer", "weights") if k in state}, self.device))
        self.chain_generator.set_state(state["chain_generator"].cpu())  # a CPU tensor whatever the map_location
        self.execution.state_loaded()  # the one CUDA graph copies the loaded step counts to the device
        self.run_state.load_state_dict(state)
        if self.attention is not None:
            self.attention = to_device(dict(state["attention"]), self.device)
        held = self.points.load_state_dict(state)
        if self.quasi_newton is not None:
            self.quasi_newton.load_state_dict(to_device(state["quasi_newton"], self.device), self.run_state.epoch,
                                              held.get("fixed"), self.theta_flat())
