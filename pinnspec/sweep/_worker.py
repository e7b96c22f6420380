"""What runs in a worker (a pool process or a Ray task): one run, fresh or
resumed.  torch is imported inside the functions, after the thread count is set."""

from __future__ import annotations

import os
import signal
import sys
import threading
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
_trainer = None  # the run (or group) being trained: a SIGINT before its own handler is installed still stops it


def _note_stop(signum, frame):
    global _stop
    _stop = True
    if _trainer is not None:
        _trainer.request_stop()


#: how often a pool worker looks whether its driver still runs (seconds)
PARENT_POLL_S = 0.5


def init_pool_worker(threads: int) -> None:
    """Initializer of a local pool process.  It leaves the terminal's process
    group, so a Ctrl-C reaches only the driver, which sends each worker one
    SIGINT: a training run then finishes its epoch, checkpoints and returns
    status "interrupted" (the trainer's own handler); a worker between runs
    notes it and starts no more training.  A worker whose driver is gone
    (killed with SIGKILL, or crashed) stops the same way, then exits
    (`_stop_when_orphaned`): outside the terminal's process group, nothing
    else would end it."""
    try:
        os.setpgrp()
    except OSError:
        pass
    signal.signal(signal.SIGINT, _note_stop)
    set_threads(threads)
    watch_parent()


def watch_parent() -> None:
    """In a pool process: a daemon thread that stops this process when its parent is gone
    (`_stop_when_orphaned`)."""
    threading.Thread(target=_stop_when_orphaned, args=(os.getppid(),), name="pinnspec-parent-watch",
                     daemon=True).start()


def _stop_when_orphaned(driver: int, poll_s: float = PARENT_POLL_S) -> None:
    """Wait until this process's parent is no longer ``driver`` (it ended and the process was re-parented),
    then stop as on Ctrl-C: the run in progress finishes its epoch and checkpoints; once no run trains (at
    once in a process that trains none, such as a `bench q3` probe), the process exits (130).  Its answer
    could reach no one."""
    while os.getppid() == driver:
        time.sleep(poll_s)
    _note_stop(signal.SIGINT, None)
    while (trainer := _trainer) is not None:  # asked until it returns: also stops a run that began just now
        trainer.request_stop()
        time.sleep(poll_s / 5)
    os._exit(130)


def run_tasks(tasks: list[dict]) -> list[dict]:
    """Train the planned runs ``tasks`` into their ``run_dir``s; one answer per task (its Result as a dict), in
    order.  Several tasks train as one `pinnspec.engine.RunGroup` (in lockstep, their losses and G as one batched
    graph) where `group_blocker` lets them, else one after another (the reason printed once).

    A task: name, run_dir, source, filename, base_dir (the planned spec), action ("fresh" | "resume"), threads.  A
    resume loads the checkpoint into a trainer built from the planned spec (the same text as the run's
    config.pinn, with data paths resolved against the spec's own folder)."""
    if tasks[0].get("threads"):
        set_threads(int(tasks[0]["threads"]))
    import torch

    from ..engine import RunGroup, group_blocker

    started = time.perf_counter()
    built = [_trainer_for(task) for task in tasks]
    trainers = [trainer for trainer, _ in built]
    blocker = group_blocker(trainers) if len(tasks) > 1 else None
    if blocker is not None:
        print(f"pinnspec: sweep: {len(tasks)} runs train one after another, not as a group: {blocker}",
              file=sys.stderr, flush=True)
    if len(trainers) > 1 and blocker is None:
        units = [(RunGroup(trainers), tasks, built)]
    else:
        units = [(trainer, [task], [entry]) for trainer, task, entry in zip(trainers, tasks, built)]
    answers = []
    global _trainer
    for unit, its_tasks, its_built in units:
        if _stop:  # Ctrl-C while the trainers were built or an earlier run trained: keep what is on disk
            if answers:
                break  # the caller reports the runs without an answer as not started
            raise KeyboardInterrupt("the sweep was interrupted before this run started")
        _trainer = unit
        try:
            results = unit.run()
        finally:
            _trainer = None
        results = results if isinstance(results, list) else [results]
        wall = time.perf_counter() - started
        for task, (_, resumed_from), result in zip(its_tasks, its_built, results):
            if result.status == "interrupted":  # the trainer's own handler took the SIGINT: start no further run
                _note_stop(signal.SIGINT, None)
            answers.append({"name": task["name"], "action": task["action"], "resumed_from": resumed_from,
                            "result": result.to_dict(), "wall_s": wall, "pid": os.getpid(),
                            "threads": torch.get_num_threads(), "together": len(results)})
        started = time.perf_counter()
    return answers


def _trainer_for(task: dict):
    """(the task's trainer, fresh or loaded from its checkpoint; the epoch it resumes from, or None)."""
    from ..engine import Trainer
    from ..engine import load_checkpoint
    from ..lang import loads

    run_dir = task["run_dir"]
    if _stop:
        raise KeyboardInterrupt("the sweep was interrupted before this run started")
    spec = loads(task["source"], filename=task["filename"], base_dir=task["base_dir"])
    if task["action"] == "resume":
        trainer = Trainer(spec, run_dir)
        state = load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))  # onto the CPU: Trainer.load_state_dict
        trainer.load_state_dict(state)
        return trainer, trainer.run_state.epoch
    for name in RUN_FILES:
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            os.unlink(path)
    return Trainer(spec, run_dir), None
