"""Several runs of one problem trained side by side in one process: `RunGroup`.

Runs that differ only in their update chain (surgery, alignment, optimizer, schedule, loss weights) train on the
same points: those of one seed, or of several seeds where the points do not depend on the seed (a deterministic
sampler, drawn once: PINNacle's protocol), each from its seed's initial weights.  A group steps them in lockstep:
at each epoch one compiled graph computes every run's losses and G (`BatchedGradients`: the losses vmapped over
the runs' parameters, each layer of the R networks one batched matrix product), then each run takes its own
update chain's step (every compiled chain queued before the host waits for any), validation, history and checkpoint
exactly as it would alone.  On a GPU the R runs then launch the kernels of one run's losses, each R times larger,
instead of R times as many; on the CPU the batched products are no faster than R single ones.

Each run keeps its own run directory, and its checkpoint records its lane: its place among the group's R
parameter sets in the batched graph.  The batched graph rounds differently from a run's own (its batched
products sum in another order), so a run trained in a group and the same run trained alone drift apart
slowly, as two GPUs' runs do.  A run that diverges stays in the batch, its results unused: the graph's shapes
do not change.  A group resumed from its checkpoints keeps every run in its lane and fills the lanes of runs
that ended early (diverged) with a copy, so it goes on bit for bit, whichever of its runs resume, together or
one by one (`Trainer.run` of a run that trained in a group: `resume_in_lane`).
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Callable

import torch

from .._interrupts import install_sigint, restore_sigint
from ..catalog import CHAIN_STATEMENTS
from ..compiler import Losses, Points
from ..lang import what_it_trains
from ._compiled import BatchedGradients, FusedGradients
from ._execute import RECORDING_CALLS, TwoGraphs
from ._results import Result
from ._run_state import GroupLane
from ._step import BATCHED, BATCHED_CHAIN_EAGER, Demote, _reason

if TYPE_CHECKING:
    from ._trainer import Trainer

__all__ = ["RunGroup", "group_blocker", "resume_in_lane"]


def group_blocker(trainers: list[Trainer]) -> str | None:
    """Why ``trainers`` cannot train as one `RunGroup`, or None where they can."""
    if _lanes(trainers)[1] < 2:
        return "a group needs at least two runs (or a run that trained in one)"
    buffers = [dict(trainer.model.named_buffers()) for trainer in trainers]
    lead = trainers[0]
    problem = what_it_trains(lead.spec.source, CHAIN_STATEMENTS, ("seed",))
    names = [trainer.out or f"run {k + 1} ({trainer.spec.ir.name})" for k, trainer in enumerate(trainers)]
    for name, trainer in zip(names, trainers):
        if what_it_trains(trainer.spec.source, CHAIN_STATEMENTS, ("seed",)) != problem:
            return (f"{name} trains another problem, points or settings than {names[0]}: the runs of a group "
                    f"differ only in their {', '.join(CHAIN_STATEMENTS)} statements (and their seed, where the "
                    "points do not depend on it)")
        if trainer.distributed:
            return f"{name} is data-parallel"
        if trainer.budget.seconds is not None:
            return f"{name} has a time budget (each run ends where its own time is spent)"
        if trainer.stop_rule is not None:
            stop = trainer.spec.ir.training.setting("stop")
            return f"{name} stops where its own fit does (stop = {stop})"
        if len(trainer.stages) > 1 or trainer.stages[0].second_order:
            return f"{name} trains in stages or by a quasi-Newton method (its steps are its own)"
        if trainer.chain.uses_hessian:
            return f"{name}: its optimizer takes Hessian estimates (eager steps, double backward)"
        if trainer.problem.adaptive is not None:
            return f"{name}: an adaptive sampler draws each run's points from its own residuals"
        candidate = trainer.plan.candidates[0]
        if "losses" not in candidate.compiled or trainer.problem.model_terms(trainer.model):
            return (f"{name}: its losses do not run as one compiled graph ({candidate.name}); a group needs "
                    "compile = on or graphs, the forward engine and no loss term of the network's own")
        if trainer.run_state.epoch != lead.run_state.epoch:
            return f"{name} stands at epoch {trainer.run_state.epoch}, {names[0]} at {lead.run_state.epoch}"
        if trainer.device != lead.device:
            return f"{name} trains on {trainer.device}, {names[0]} on {lead.device}"
    for name, own in zip(names[1:], buffers[1:]):  # the batched graph reads one network's fixed tensors
        if own.keys() != buffers[0].keys() or any(not torch.equal(own[k], buffers[0][k]) for k in own):
            return (f"{name}'s network has other fixed (untrained) tensors than {names[0]}'s, such as a Fourier "
                    "matrix drawn from the seed: the runs of a group share them")
    seeds = {trainer.seed for trainer in trainers}
    if len(seeds) > 1 and not lead.problem.point_plan.seeds_share_points(seeds):
        return (f"the seeds {', '.join(map(str, sorted(seeds)))} train on other points (the points are drawn from "
                "the seed, or drawn anew during training): a group's runs share one seed, or points that do "
                "not depend on it (a deterministic sampler such as hammersley, resample never)")
    return None


def _lanes(trainers: list[Trainer]) -> tuple[list[int], int, str]:
    """Each run's lane in the batched graph, the number of lanes and the group's id: those the runs' checkpoints
    record where they agree (runs resumed from one group, maybe without some of its runs), else one lane per run,
    in order, and an id from their run directories."""
    recorded = [trainer.run_state.group_lane for trainer in trainers]
    if all(recorded) and len({(r.lanes, r.group) for r in recorded}) == 1 \
            and len({r.lane for r in recorded}) == len(recorded):
        return [r.lane for r in recorded], recorded[0].lanes, recorded[0].group
    where = "\n".join(os.path.abspath(t.out) if t.out else f"({k})" for k, t in enumerate(trainers))
    return list(range(len(trainers))), len(trainers), hashlib.sha256(where.encode()).hexdigest()[:12]


def resume_in_lane(trainer: Trainer) -> Result | None:
    """Train ``trainer``, resumed from a checkpoint it wrote in a group, on in its lane of the group's batched
    graph (the other lanes idle), which rounds as before: bit for bit.  None where it cannot (a setting changed
    on resume): it then trains alone (said in a notice) and the caller runs it."""
    lane, lanes, _ = trainer.run_state.group_lane
    blocker = group_blocker([trainer])
    if blocker is not None:
        trainer.run_state.group_lane = None
        trainer.monitor.notice(f"this run trained in a group of {lanes} runs and goes on alone ({blocker}): its "
                               "losses round differently from here on", prefix=False)
        return None
    trainer.monitor.notice(f"this run trained in a group of {lanes} runs: it goes on in its lane {lane + 1} of the "
                           "group's batched graph, the other lanes idle: bit for bit", prefix=False)
    return RunGroup([trainer]).run()[0]


class RunGroup:
    """Trains ``trainers`` (`group_blocker` says whether they may) in lockstep, their losses and G by one graph.

    ``notice``: where one-line notices go (the batched graph failing to compile: each run then computes its own
    losses, still in lockstep)."""

    def __init__(self, trainers: list[Trainer], notice: Callable[[str], None] | None = None):
        blocker = group_blocker(trainers)
        if blocker is not None:
            raise ValueError(f"these runs cannot train as one group: {blocker}")
        self.trainers = list(trainers)
        lead = self.trainers[0]
        self.notice = notice or lead.monitor.notice
        self.lanes, self.lane_count, self.id = _lanes(self.trainers)  # [R'] each run's lane of lane_count >= R'
        fused = FusedGradients(lead.problem, lead.model, lead.params, lead.grouping.name)
        self.batched: BatchedGradients | None = BatchedGradients(fused, lead.plan.mode)
        self._results: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # this epoch's, [R, ...]
        self._joined = False
        self._calls = 0  # completed calls of the batched graph

    def _join(self) -> None:
        """Before the first step: each run takes its lane and its steps from the group (not before: a group
        built and never trained leaves its runs as they were)."""
        if self._joined:
            return
        self._joined = True
        for index, (trainer, lane) in enumerate(zip(self.trainers, self.lanes)):
            joined = GroupLane(lane, self.lane_count, self.id)
            if trainer.run_state.group_lane not in (None, joined):
                self.notice(f"{trainer.out or 'a run'} trained in another group: in this one its losses round "
                            "differently from here on")
            trainer.run_state.group_lane = joined
            execution = trainer.execution
            execution.install(_BatchedStep(execution.ctx, _Member(self, index), compile_chain=trainer.chain.compiles,
                                           notice=execution.notice))

    def run(self) -> list[Result]:
        """Train every run to its last epoch (or until Ctrl-C: every run finishes the epoch and checkpoints;
        a run that diverges stops alone); one Result per run, in order."""
        trainers = self.trainers
        self._join()
        begun = []
        try:
            for trainer in trainers:
                trainer.begin_run(sigint=False)
                begun.append(trainer)
        except BaseException:  # the runs begun so far end as they began (their progress bars, the collector)
            for trainer in begun:
                trainer.end_epochs()
            raise
        previous = install_sigint(self.request_stop)
        try:
            active = [t for t in trainers if t.run_state.epoch < t.epochs]
            epoch = trainers[0].run_state.epoch
            while active:
                launched = self._launch(epoch, active)
                active = [t for t, queued in zip(active, launched) if t.train_epoch(epoch, queued)]
                # a stop asked for during the epoch (after some runs had checked) stops them all here, at one epoch
                active = [t for t in active if not t.stop_if_requested()]
                epoch += 1
        finally:
            self._results = None
            restore_sigint(previous)
            for trainer in trainers:
                trainer.end_epochs()
        return [trainer.finish_run() for trainer in trainers]

    def step(self, epoch: int) -> list[dict]:
        """One lockstep step of every run, its history row each (no validation, history or checkpoint: what a
        benchmark times)."""
        self._join()
        return [t.step(epoch, queued) for t, queued in zip(self.trainers, self._launch(epoch, self.trainers))]

    def _launch(self, epoch: int, active: list[Trainer]) -> list[tuple]:
        """The batched losses and G, then every active run's chain, queued before the host waits for any: each
        run's `Trainer.launch_step`, on the first active run's points."""
        lead, launched = active[0], []
        self._prepare(epoch, lead)
        for trainer in active:
            if trainer is not lead:  # the lead's points (drawn once for all: the same points, `group_blocker`)
                trainer.points.follow(lead.points)
            launched.append(trainer.launch_step(epoch))
        return launched

    def request_stop(self) -> None:
        """Every run stops after the epoch in progress, checkpointed (what Ctrl-C does)."""
        for trainer in self.trainers:
            trainer.request_stop()

    def _prepare(self, epoch: int, lead: Trainer) -> None:
        """Every run's losses and G at ``epoch`` on the points of ``lead``, kept for the runs' steps to take."""
        if self.batched is None:
            return
        points = lead.points.at(epoch)
        flat = [trainer.theta_flat() for trainer in self.trainers]  # R' x [p]
        lanes = [flat[0]] * self.lane_count  # a lane of no run here (it ended early): a copy, its results unused
        for lane, theta in zip(self.lanes, flat):
            lanes[lane] = theta
        thetas = torch.stack(lanes)  # [R, p]
        try:
            self._results = self.batched(thetas, points)
            self._calls += 1
        except torch._dynamo.exc.TorchDynamoException as err:
            self._each_its_own(f"the runs' batched losses do not compile ({_reason(err)})")
        except RuntimeError as err:
            # a CUDA graph warms up and records in its first calls: an op it cannot hold fails there with a CUDA
            # error, not a compiler's; later, a RuntimeError is the runs' own
            if self.batched.mode != "reduce-overhead" or self._calls >= RECORDING_CALLS:
                raise
            self._each_its_own(f"the runs' batched losses cannot be recorded as a CUDA graph ({_reason(err)})")

    def _each_its_own(self, why: str) -> None:
        """The batched graph failed: each run computes its losses and G by its own plan from here on."""
        self.batched, self._results = None, None
        self.notice(f"{why}; each run computes its own, still in lockstep")
        for trainer in self.trainers:  # each on its own from here: no lane to resume in
            trainer.run_state.group_lane = None
            execution = trainer.execution
            execution.install(execution._build(trainer.plan.candidates[0]))

    def member_results(self, index: int) -> tuple[Losses, torch.Tensor]:
        """Run ``index``'s losses and G [m, p] of this epoch."""
        tasks, conditions, G = self._results  # [R, m], [R, C], [R, m, p]
        lane = self.lanes[index]
        return self.batched.fused.losses(tasks[lane], conditions[lane]), G[lane]


class _Member:
    """What a run's step asks for its losses and G: its share of the group's batched results (the interface
    of `CompiledLosses.losses_and_gradients`)."""

    def __init__(self, group: RunGroup, index: int):
        self.group, self.index = group, index

    def losses_and_gradients(self, points: Points, params, grouping, theta) -> tuple[Losses, torch.Tensor]:
        return self.group.member_results(self.index)


class _BatchedStep(TwoGraphs):
    """A group member's step: the group's losses and G, then its own update chain (compiled, or eagerly where
    it does not compile)."""

    def __init__(self, ctx, member: _Member, *, compile_chain: bool, notice: Callable[[str], None]):
        super().__init__(ctx, member, compile_chain=compile_chain)
        self.name = BATCHED if compile_chain else BATCHED_CHAIN_EAGER
        self.notice = notice

    def __call__(self, theta, points, state, queued):
        try:
            return super().__call__(theta, points, state, queued)
        except Demote as failure:
            if failure.part != "chain":
                raise
            self.notice(failure.notice)
            self.chain, self.name = None, BATCHED_CHAIN_EAGER
            return super().__call__(theta, points, state, queued)
