"""What a run produced (`Result`) and the run directory it writes (`RunFiles`).

    config.pinn      the resolved spec, written when the run begins
    result.json      `Result` (rewritten at every checkpoint; ``status`` says how far it got)
    history.csv      one row per epoch (`RunState.history`, in `RunState.columns`)
    checkpoint.pt    everything needed to resume bit for bit (the trainer's `state_dict`)
    predictions.npz  test points, reference and prediction at the best-validation checkpoint
    manifest.json    the files above, recorded as each is first written (`pinnspec._rundir.record_files`)
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from .. import __version__
from .._rss import read_status, reset_peak
from .._rundir import record_files
from . import _artifacts as files
from ._monitor import Evaluation, weights_loaded
from ._run_state import RunState

__all__ = ["Result", "RunFiles"]


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
    #: test set), or "held-out residual" (a spec without reference: the summed task losses of the model then on
    #: held-out points drawn apart from the training points)
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


class RunFiles:
    """A run's `Result` and, where ``out`` is a directory, its files (rank 0 alone is given one)."""

    def __init__(self, out: str | None, spec, problem, evaluation: Evaluation, model: torch.nn.Module,
                 params: dict[str, torch.Tensor], *, device: torch.device, allocator: dict):
        self.out, self.spec, self.problem, self.evaluation = out, spec, problem, evaluation
        self.model, self.params, self.device, self.allocator = model, params, device, allocator
        self._recorded: set[str] = set()  # the files of the manifest (`_record`)

    def begin(self) -> None:
        """Before the first epoch: the run directory and its config.pinn; peak memory counts from here (a
        process that trains several runs, a sweep's pool worker, reports each run's own peak)."""
        if self.out:
            os.makedirs(self.out, exist_ok=True)
            self._record("config.pinn")
            files.atomic_write_text(os.path.join(self.out, "config.pinn"), self.spec.source)
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            reset_peak()  # Linux; elsewhere the process's ru_maxrss stands in

    def result(self, run: RunState, *, epochs: int, seed: int, grouping, dtype: str, aligned: bool,
               execution: str) -> Result:
        t = self.spec.ir.training
        n = run.counters.counted
        rates = {k: (v / n if n else None) for k, v in run.counters.conflicts.items()}
        if not aligned:
            rates["R_p"] = None
        final = self.evaluation.test_error() if run.epoch > 0 else None
        # before the first validation there is no best checkpoint: a finished or interrupted run reports its
        # final model there; a diverged run's final model is the one that blew up
        best = self.evaluation.test_error(run.best.model) if run.best.model is not None else (
            None if run.status == "diverged" else final)
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
        else:
            peak = read_status()["VmHWM"] / 2**20
        optimizer = "; ".join(str(stage) for stage in t.stages) if t.stages else str(t.optimizer)
        has_reference = self.evaluation.has_reference
        return Result(
            problem=self.spec.ir.name, surgery=str(t.surgery), optimizer=optimizer, align=str(t.align),
            grouping=grouping.name, seed=seed, epochs=epochs, epochs_done=run.epoch,
            status=run.status, rel_l2=best, rel_l2_final=final, best_epoch=run.best.epoch,
            best_validation=None if run.best.epoch is None or not has_reference else run.best.validation,
            validation=("held-out residual" if not has_reference else
                        "test" if self.spec.ir.validation.on_test else "points"),
            rates=rates, projected_fraction=(run.counters.projected / n if n and aligned else None),
            train_time_s=run.elapsed, peak_memory_mb=peak, device=str(self.device), dtype=dtype,
            params={k: float(v.detach()) for k, v in self.params.items()}, model=str(t.model),
            tasks=list(grouping.labels), message=run.message, execution=execution,
            group=run.group_lane._asdict() if run.group_lane is not None else None, reports=self._reports(run),
            allocator=self.allocator, run_dir=self.out)

    def _reports(self, run: RunState) -> dict[str, float]:
        """The `report` statements evaluated on the kept model once the run has ended (a diverged run's final
        model is the one that blew up: it reports the best checkpoint's, or nothing before the first one)."""
        if not self.spec.ir.reports or run.epoch == 0 or run.status not in ("completed", "interrupted", "diverged"):
            return {}
        state, params = run.best.model, run.best.params
        if state is None:
            if run.status == "diverged":
                return {}
            state, params = None, self.params
        with weights_loaded(self.model, state):
            return self.problem.reports(self.model, params)

    def write(self, result: Result, run: RunState) -> Result:
        """result.json, history.csv and (once an epoch is done: a run killed later can be scored where it
        stopped) predictions.npz."""
        if self.out:
            self._record("result.json", "history.csv", *(("predictions.npz",) if run.epoch > 0 else ()))
            files.write_json(os.path.join(self.out, "result.json"), result.to_dict())
            files.write_csv(os.path.join(self.out, "history.csv"), run.columns, run.history)
            if run.epoch > 0:
                self._write_predictions(run)
        return result

    def _write_predictions(self, run: RunState) -> None:
        evaluation = self.evaluation
        with weights_loaded(self.model, run.best.model):
            prediction = evaluation.predict(evaluation.test_points).double().cpu().numpy()
        reference = {} if evaluation.test_reference is None else {"reference": evaluation.test_reference.cpu().numpy()}
        files.save_npz(os.path.join(self.out, "predictions.npz"),
                       points=evaluation.test_points.double().cpu().numpy(), prediction=prediction,
                       coordinates=np.array(self.problem.coordinates), fields=np.array(self.problem.fields),
                       **reference)

    def _record(self, *names: str) -> None:
        """The manifest lists ``names`` before they are written (a run killed in between leaves a name whose
        file is missing: ``overwrite`` skips it)."""
        if not self._recorded.issuperset(names):
            record_files(self.out, names)
            self._recorded.update(names)

    def save_checkpoint(self, state: dict) -> None:
        self._record("checkpoint.pt")
        files.save_torch(os.path.join(self.out, "checkpoint.pt"), state)
