"""Where an epoch's time goes: stage timers for Trainer.step and the hand-written baseline.

The Trainer is timed from the outside, without a copy of its step: for the
duration of ``instrument(trainer)`` its collaborators are wrapped in timers
(the point stream's ``draw``, the model's forward, the derivative plans, ``problem.losses``,
``loss_gradients``, the surgery, ``optimizer.propose``, ``alignment.align``,
``conflict_indicators``, ``_apply``) and restored afterwards.  Whatever the step spends
outside them is reported as "rest of step" (finite checks, the history row,
cos(p, u), the flat copy of theta).  Every timer synchronises the device.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict

import torch

from ._common import clock, median, quiet_gc

#: the stages in report order (the hand-written baseline uses the same names where it has the stage)
STAGES = ("sample points", "network forward", "input derivatives", "residuals + losses", "loss-specific gradients",
          "surgery", "optimizer proposal", "alignment (GUA)", "apply update", "optimizer + apply",
          "diagnostics (conflicts)", "rest")


class StageClock:
    """Accumulates seconds per stage; ``mark(stage)`` books the time since the last mark."""

    def __init__(self, device: torch.device):
        self.device = device
        self.epochs: list[dict[str, float]] = []
        self.current: dict[str, float] = defaultdict(float)
        self.last = 0.0

    def start(self) -> None:
        self.current = defaultdict(float)
        self.last = clock(self.device)

    def mark(self, stage: str) -> None:
        now = clock(self.device)
        self.current[stage] += now - self.last
        self.last = now

    def stop(self) -> None:
        self.epochs.append(dict(self.current))

    def medians(self) -> dict[str, float]:
        stages = {s for e in self.epochs for s in e}
        return {s: median([e.get(s, 0.0) for e in self.epochs]) for s in stages}


class _Timers:
    """Nested wall-clock timers for the instrumented Trainer (inner time is subtracted from outer)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.totals: dict[str, float] = defaultdict(float)
        self.stack: list[list] = []

    def wrap(self, stage: str, fn):
        def timed(*args, **kwargs):
            frame = [stage, clock(self.device), 0.0]  # stage, start, time of nested timers
            self.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                self.stack.pop()
                elapsed = clock(self.device) - frame[1]
                self.totals[stage] += elapsed - frame[2]
                if self.stack:
                    self.stack[-1][2] += elapsed

        return timed


class _Proxy:
    """Forwards every attribute to ``target``; the methods in ``timed`` go through timers."""

    def __init__(self, target, timed: dict):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_timed", timed)

    def __getattr__(self, name):
        return self._timed.get(name) or getattr(self._target, name)

    def __call__(self, *args, **kwargs):
        return self._timed["__call__"](*args, **kwargs)


@contextlib.contextmanager
def instrument(trainer, device: torch.device):
    """Wrap the trainer's stages in timers; yields a function ``epoch -> {stage: seconds}``."""
    from ..engine import UpdateChain, _chain as chain_module, _execute as execute_module

    timers = _Timers(device)
    saved_module = {"loss_gradients": execute_module.loss_gradients,
                    "conflict_indicators": chain_module.conflict_indicators}
    context = trainer.execution.ctx  # what the step's strategy reads
    saved = {"model": trainer.model, "chain": context.chain}
    problem = trainer.problem
    saved_plans = dict(problem.plans)
    try:
        execute_module.loss_gradients = timers.wrap("loss-specific gradients", saved_module["loss_gradients"])
        chain_module.conflict_indicators = timers.wrap("diagnostics (conflicts)",
                                                       saved_module["conflict_indicators"])
        # drawn ahead during the previous step (PointStream.draw_ahead): timed wherever it happens
        trainer.points.draw = timers.wrap("sample points", type(trainer.points).draw.__get__(trainer.points))
        trainer._apply = timers.wrap("apply update", type(trainer)._apply.__get__(trainer))
        problem.losses = timers.wrap("residuals + losses", type(problem).losses.__get__(problem))
        model = saved["model"]
        trainer.model = context.model = _Proxy(model, {"__call__": timers.wrap("network forward", model)})
        for index, plan in saved_plans.items():
            problem.plans[index] = _Proxy(plan, {"evaluate": timers.wrap("input derivatives", plan.evaluate)})
        chain = saved["chain"]
        context.chain = UpdateChain(
            _Proxy(chain.surgery, {"__call__": timers.wrap("surgery", chain.surgery)}),
            _Proxy(chain.optimizer, {"propose": timers.wrap("optimizer proposal", chain.optimizer.propose)}),
            _Proxy(chain.alignment, {"align": timers.wrap("alignment (GUA)", chain.alignment.align)}))

        def step(epoch: int) -> dict[str, float]:
            timers.totals.clear()
            start = clock(device)
            trainer.step(epoch)
            total = clock(device) - start
            stages = dict(timers.totals)
            stages["rest"] = total - sum(stages.values())
            stages["total"] = total
            return stages

        yield step
    finally:
        execute_module.loss_gradients = saved_module["loss_gradients"]
        chain_module.conflict_indicators = saved_module["conflict_indicators"]
        trainer.__dict__.pop("_apply", None)
        trainer.points.__dict__.pop("draw", None)
        problem.__dict__.pop("losses", None)
        problem.plans.clear()
        problem.plans.update(saved_plans)
        trainer.model = context.model = saved["model"]
        context.chain = saved["chain"]


def profile_pair(trainer, hand, device: torch.device, *, epochs: int, first_epoch: int
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds per stage over ``epochs`` interleaved epochs: (pinnspec, hand-written).
    Both include "total" (the instrumented epoch, timers and syncs included)."""
    hand_clock = StageClock(device)
    pinnspec_epochs: list[dict[str, float]] = []
    with instrument(trainer, device) as step:
        for i in range(epochs):
            with quiet_gc():
                pinnspec_epochs.append(step(first_epoch + i))
            with quiet_gc():
                hand_clock.start()
                start = time.perf_counter()
                hand.step(hand_clock)
                hand_clock.current["total"] = time.perf_counter() - start
                hand_clock.stop()
    stages = {s for e in pinnspec_epochs for s in e}
    pinnspec = {s: median([e.get(s, 0.0) for e in pinnspec_epochs]) for s in stages}
    return pinnspec, hand_clock.medians()


#: the operators that are matrix products (their self time is the GEMM work of an epoch)
MATRIX_PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mv", "aten::addmv",
                   "aten::_addmm_activation")


def torch_profile(step, device: torch.device, *, epochs: int, first_epoch: int, row_limit: int = 15
                  ) -> tuple[str, float, float]:
    """torch.profiler over ``epochs`` calls of ``step(epoch)``: (its operator table by self time,
    ms per epoch in matrix products, ms per epoch in all operators), self times on the device
    for CUDA, on the CPU otherwise (inflated alike by the profiler)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for i in range(epochs):
            step(first_epoch + i)
        clock(device)
    averages = prof.key_averages()
    attribute, sort_keys = "self_cpu_time_total", ("self_cpu_time_total",)
    if device.type == "cuda":  # the name changed across torch versions
        attribute = "self_device_time_total" if hasattr(averages[0], "self_device_time_total") else \
            "self_cuda_time_total"
        sort_keys = (attribute, "self_cpu_time_total")
    per_epoch = 1e-3 / epochs  # profiler microseconds -> ms per epoch
    products = sum(getattr(e, attribute, 0.0) for e in averages if e.key in MATRIX_PRODUCTS) * per_epoch
    total = sum(getattr(e, attribute, 0.0) for e in averages) * per_epoch
    for key in sort_keys:
        try:
            return averages.table(sort_by=key, row_limit=row_limit), products, total
        except (AttributeError, KeyError, ValueError):
            continue
    return averages.table(row_limit=row_limit), products, total
