"""``compile = auto``: compile a run's steps where that wins back its first, compiling step.

    saving   = E * t_eager * (1 - r)      E the run's epochs, t_eager one eager step's losses and gradients on
                                          the run's points (timed: two evaluations after a warm-up), r the
                                          compiled step's share of the eager one (`COMPILED_SHARE`)
    cost     = C                          the first compiled step: as long as this problem's last one took
                                          (`CompileRecords`, one file per user), else `COLD_FIRST_STEP_S`
    compile  if saving > cost

The decision and its numbers are printed once; config.pinn then records ``compile = on`` or ``off`` (a resumed
run steps as before).  torch's compile cache lives in the user's cache folder (`use_compile_cache`), so a
second run of a problem compiles from it in seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import torch

from .. import __version__
from .._compiling import cache_root, use_compile_cache
from .._files import atomic_write_text
from ..compiler import compile_spec
from ..lang import apply_overrides, what_it_trains
from ._build import DTYPES, build_model
from ._chain import UpdateChain
from ._execute import plan_execution
from ._gradients import loss_gradients
from ._step import EAGER

__all__ = ["decide_compile", "use_compile_cache", "compile_key", "CompileRecords", "COMPILED_SHARE", "COLD_FIRST_STEP_S"]

#: a compiled step's time as a share of the eager one, by device type (measured: DeepXDE's Burgers on the
#: 2-core CPU, `pinnspec bench peers`, the summed one graph 2.05 ms against 4.30 eager, per iteration with the
#: first step; a GPU gains more, from fewer kernel launches)
COMPILED_SHARE = {"cpu": 0.5, "cuda": 0.25}
#: the first compiled step's seconds with an empty compile cache (measured on the 2-core CPU: 21.5 s for
#: Burgers' one graph), by device type
COLD_FIRST_STEP_S = {"cpu": 25.0, "cuda": 40.0}


class CompileRecords:
    """How long each problem's first compiled step took, by key (`compile_key`): a JSON file in the user's cache
    folder, read and written whole (a record lost to a race costs one cold estimate)."""

    def __init__(self, path: str | None = None):
        self.path = path or os.path.join(cache_root(), "first-steps.json")

    def read(self) -> dict[str, float]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                records = json.load(fh)
        except (OSError, ValueError):
            return {}
        return {k: float(v) for k, v in records.items() if isinstance(v, (int, float))} \
            if isinstance(records, dict) else {}

    def get(self, key: str) -> float | None:
        return self.read().get(key)

    def put(self, key: str, seconds: float) -> None:
        records = self.read()
        records[key] = round(float(seconds), 3)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        atomic_write_text(self.path, json.dumps(records, indent=1, sort_keys=True))


def compile_key(spec, device: torch.device) -> str:
    """What the compiled graphs depend on: the spec's statements without its epochs, seed and execution
    settings, the device type, torch's and pinnspec's versions."""
    statements, _ = what_it_trains(spec.source, settings_left_out=("epochs", "seed"))
    text = repr((statements, device.type, torch.__version__, __version__))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def decide_compile(spec, device: torch.device, *, records: CompileRecords | None = None,
                   rank: int | None = None) -> tuple[object, str]:
    """(the spec with ``compile = on`` or ``off`` in place of ``auto``, the one-line reason).  The eager step is
    timed on a copy of the run's problem and network (the run itself is built afterwards, untouched).
    ``rank``: one rank of a data-parallel run, which takes rank 0's decision."""
    if rank is not None:
        import torch.distributed as dist

        decision = [_decide(spec, device, records) if rank == 0 else None]
        dist.broadcast_object_list(decision, src=0)
        decided, why = decision[0]
    else:
        decided, why = _decide(spec, device, records)
    return apply_overrides(spec, {"compile": decided}), why


def _decide(spec, device: torch.device, records: CompileRecords | None) -> tuple[str, str]:
    t = spec.ir.training
    epochs = int(t.setting("epochs"))
    on = apply_overrides(spec, {"compile": "on"})
    grouping = on.ir.grouping()
    problem = compile_spec(on.ir, grouping.name)
    model = build_model(on, problem, device=device, dtype=DTYPES[t.stage_list()[0].dtype])
    chain = UpdateChain.from_training(on.ir.training)
    plan = plan_execution(problem, model, chain, grouping=grouping.name, num_losses=grouping.m, device=device)
    if plan.candidates[0].name == EAGER:
        return "off", f"compile = auto: not compiled ({plan.not_taken[0][1]})"
    eager = _eager_seconds(problem, model, grouping.name, chain.sums_tasks, device, t.stage_list()[0].dtype)
    records = records or CompileRecords()
    cost = records.get(compile_key(spec, device))
    source = "this problem's last first step" if cost is not None else "an empty compile cache"
    cost = cost if cost is not None else COLD_FIRST_STEP_S.get(device.type, COLD_FIRST_STEP_S["cpu"])
    share = COMPILED_SHARE.get(device.type, COMPILED_SHARE["cpu"])
    saving = epochs * eager * (1 - share)
    decided = "on" if saving > cost else "off"
    why = (f"compile = auto: {'compiled' if decided == 'on' else 'not compiled'}: {epochs:,} epochs x "
           f"{eager * 1e3:.2f} ms eager, a compiled step ~{share:.0%} of that: ~{saving:.1f} s saved, against "
           f"~{cost:.1f} s for the first step ({source})")
    return decided, why


def _eager_seconds(problem, model, grouping: str, summed: bool, device: torch.device, dtype: str) -> float:
    """One eager step's losses and gradients (the weighted sum's where the chain sums, else G): the faster of
    two timed evaluations after a warm-up, at the initial parameters on epoch 0's points."""
    params = problem.init_params(device=device, dtype=DTYPES[dtype])
    theta = list(model.parameters()) + list(params.values())
    points = problem.sample(0, device=device, dtype=DTYPES[dtype])
    times = []
    for _ in range(3):
        started = time.perf_counter()
        losses = problem.losses(model, points, params, grouping)
        loss_gradients([sum(losses.task_list)] if summed else losses.task_list, theta)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - started)
    return min(times[1:])
