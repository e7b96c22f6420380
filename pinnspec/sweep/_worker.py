"""What runs in a worker (a pool process or a Ray task): one run, fresh or
resumed.  torch is imported inside the functions, after the thread count is set."""

from __future__ import annotations

import os
import signal
import time

#: the files of a run directory that a fresh start replaces (pinnspec.engine._artifacts)
RUN_FILES = ("result.json", "history.csv", "checkpoint.pt", "predictions.npz", "config.pinn")
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def set_threads(threads: int) -> None:
    """torch intra-op threads for this process.  The environment variables count
    when torch is not imported yet (a fresh pool process); ``set_num_threads``
    covers a process that already has it (a reused Ray worker)."""
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


_stop = False  # a pool worker got SIGINT: it starts no further run
_trainer = None  # the run being set up or trained: a SIGINT before its own handler is installed still stops it


def _note_stop(signum, frame):
    global _stop
    _stop = True
    if _trainer is not None:
        _trainer._stop_requested = True


def init_pool_worker(threads: int) -> None:
    """Initializer of a local pool process.  It leaves the terminal's process
    group, so a Ctrl-C reaches only the driver, which sends each worker one
    SIGINT: a training run then finishes its epoch, checkpoints and returns
    status "interrupted" (the trainer's own handler); a worker between runs
    notes it and starts no more training."""
    try:
        os.setpgrp()
    except OSError:
        pass
    signal.signal(signal.SIGINT, _note_stop)
    set_threads(threads)


def run_one(task: dict) -> dict:
    """Train one planned run into ``task["run_dir"]``; returns the Result as a dict.

    ``task``: name, run_dir, source, filename, base_dir (the planned spec),
    action ("fresh" | "resume"), threads.  A resume loads the checkpoint into a
    trainer built from the planned spec (the same text as the run's config.pinn,
    with data paths resolved against the spec's own folder)."""
    if task.get("threads"):
        set_threads(int(task["threads"]))
    import torch

    from ..engine import Trainer
    from ..engine._artifacts import load_checkpoint
    from ..lang import loads

    run_dir = task["run_dir"]
    if _stop:
        raise KeyboardInterrupt("the sweep was interrupted before this run started")
    spec = loads(task["source"], filename=task["filename"], base_dir=task["base_dir"])
    started = time.perf_counter()
    resumed_from = None
    if task["action"] == "resume":
        trainer = Trainer(spec, run_dir)
        state = load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))  # onto the CPU: Trainer.load_state_dict
        trainer.load_state_dict(state)
        resumed_from = trainer.epoch
    else:
        for name in RUN_FILES:
            path = os.path.join(run_dir, name)
            if os.path.isfile(path):
                os.unlink(path)
        trainer = Trainer(spec, run_dir)
    if _stop:  # Ctrl-C while the trainer was built: keep what is on disk, train no further
        raise KeyboardInterrupt("the sweep was interrupted before this run started")
    global _trainer
    _trainer = trainer
    try:
        result = trainer.run()
    finally:
        _trainer = None
    if result.status == "interrupted":  # the trainer's own handler took the SIGINT: start no further run
        _note_stop(signal.SIGINT, None)
    return {"name": task["name"], "action": task["action"], "resumed_from": resumed_from,
            "result": result.to_dict(), "wall_s": time.perf_counter() - started, "pid": os.getpid(),
            "threads": torch.get_num_threads()}
