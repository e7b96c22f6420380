"""The training engine: the update chain surgery -> optimizer proposal -> alignment -> apply.

    result = pinnspec.train("specs/burgers.pinn", epochs=2000, surgery="config", align="gua")
"""

from __future__ import annotations

import os

from ._chain import ChainState, ChainStep, Checks, UpdateChain
from ._execute import Execution, ExecutionPlan, plan_execution
from ._gradients import loss_gradients
from ._group import RunGroup, group_blocker
from ._artifacts import RunDirInUse, claim_run_dir, load_checkpoint
from ._build import build_model, describe_execution, resolve_device
from ._monitor import TrainingDiverged
from ._multitask import MultiTaskOptimizer, MultiTaskStep, multitask_gradients
from ._results import Result
from ._run_state import RunState
from ._trainer import Trainer

__all__ = ["train", "resume", "load_run", "run_spec", "Result", "Trainer", "TrainingDiverged", "loss_gradients",
           "resolve_device", "UpdateChain", "ChainState", "ChainStep", "Checks", "Execution", "ExecutionPlan",
           "plan_execution", "describe_execution", "RunGroup", "group_blocker", "RunState", "build_model",
           "MultiTaskOptimizer", "MultiTaskStep", "multitask_gradients", "load_checkpoint", "claim_run_dir",
           "RunDirInUse"]


def _as_spec(spec):
    from ..lang import Spec, load

    return spec if isinstance(spec, Spec) else load(spec)


def train(spec, *, epochs=None, surgery=None, optimizer=None, align=None, grouping=None, seed=None,
          device=None, dtype=None, out=None, overwrite=False, overrides=None, progress=False, log=None) -> Result:
    """Train a spec (a path or ``pinnspec.load(...)``); every argument overrides
    the spec's own training statement.  ``surgery``/``optimizer``/``align`` take a
    name or a call (``"cagrad(c = 0.4)"``).  ``out``: a run directory to write
    (result.json, history.csv, checkpoint.pt, config.pinn, predictions.npz); one that
    already holds files raises a ValueError (``_artifacts.RunDirInUse``) unless ``overwrite`` (which replaces
    the files the run there recorded as its own, and refuses a directory that holds no run); ``out`` is locked
    while the run writes it (``pinnspec._rundir.RunLock``: a second writer raises ``RunDirLocked``)."""
    from ..lang import apply_overrides
    from ._artifacts import PYTHON_REMEDIES, claim_run_dir

    given = {"epochs": epochs, "surgery": surgery, "optimizer": optimizer, "align": align, "grouping": grouping,
             "seed": seed, "device": device, "dtype": dtype, **(overrides or {})}
    spec = apply_overrides(_as_spec(spec), given)
    if out is None:
        return Trainer(spec, out, progress=progress, log=log).run()
    from .._rundir import RunLock

    trainer = Trainer(spec, out, progress=progress, log=log)
    with RunLock(os.fspath(out)):
        claim_run_dir(os.fspath(out), overwrite, PYTHON_REMEDIES)
        return trainer.run()


def load_run(run_dir: str, *, progress=False, log=None, device=None, out: str | None | bool = True,
             distributed: bool = False) -> Trainer:
    """A Trainer restored from a run directory's config.pinn and checkpoint.pt (which loads only tensors and
    plain values: anything else is refused with ``_artifacts.UnsafeCheckpoint``, a ValueError).  A missing,
    unreadable or mismatched run file raises ``pinnspec._rundir.RunFileError`` (a ValueError whose message is
    one line naming the file and what is wrong: for a checkpoint of another spec, the parameter that differs).

    ``distributed``: one rank of a data-parallel run (an initialised process group): every rank
    restores the same replicated state; rank 0 alone writes on in ``run_dir``."""
    from ._loader import open_run, restore

    saved = open_run(run_dir)
    trainer = Trainer(saved.spec, run_dir if out is True else out or None, progress=progress, log=log,
                      device_override=device, distributed=distributed)
    restore(trainer, saved)
    return trainer


def run_spec(run_dir: str):
    """The checked spec a run directory trains (its config.pinn; relative data and reference paths
    resolve where the original spec was, as the checkpoint records)."""
    from ._loader import open_run

    return open_run(run_dir).spec


def resume(run_dir: str, *, progress=False, log=None) -> Result:
    """Continue a run from its last checkpoint (bit for bit, same device), holding the directory's lock; the
    temporary files a run killed while writing left there are removed first."""
    from .._rundir import resuming

    with resuming(run_dir):
        return load_run(run_dir, progress=progress, log=log).run()
