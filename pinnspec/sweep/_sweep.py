"""Running a sweep: which runs are finished, which resume, which start; the
local process pool and the Ray backend; the table at the end."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from .. import __version__
from .._files import atomic_write_text, read_json
from .._interrupts import REPEAT_S, Interrupts
from ..catalog import CHAIN_STATEMENTS, GROUP_STRATEGIES
from ..lang import SpecError
from ..lang import what_it_trains
from ._grid import Run, Sweep, SweepError, plan
from ._table import summarize, write_tables
from ._worker import init_pool_worker, run_tasks

FINISHED = ("completed", "diverged")  # a rerun from the same seed repeats a divergence exactly
LOCK = ".sweep.lock"


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs(cores: int | None = None) -> int:
    """Local worker processes: half the cores (1 on a 2-core machine), each with
    ``cores // jobs`` torch threads."""
    return max(1, (cores or cpu_count()) // 2)


@dataclass
class SweepReport:
    """What :func:`run_sweep` did."""

    out: str
    runs: list[Run]
    actions: dict[str, str]  # run name -> "skip" | "resume" | "fresh"
    #: resumed runs whose execution settings change: run name -> {setting: (saved, planned)}
    execution_changed: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    outcomes: dict[str, dict] = field(default_factory=dict)  # run name -> the worker's answer or {"error": ...}
    rows: list[dict] = field(default_factory=list)  # one per run (pinnspec.sweep._table.read_run)
    table: list[dict] = field(default_factory=list)  # one per setting
    paths: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def failed(self) -> list[str]:
        return [name for name, o in self.outcomes.items() if "error" in o]

    @property
    def stopped(self) -> list[str]:
        """Runs that came back interrupted (Ctrl-C): a restart resumes them."""
        return [name for name, o in self.outcomes.items() if o.get("result", {}).get("status") == "interrupted"]

    @property
    def exit_code(self) -> int:
        if self.interrupted or self.stopped:
            return 130
        return 1 if self.failed else 0


# ---------------------------------------------------------------- what is left to do
def run_action(run: Run) -> str:
    """"skip": result.json says completed or diverged; "resume": a checkpoint is
    there (killed or interrupted); "fresh": anything else.  Raises SweepError when
    a finished or resumable run was made with other settings (its config.pinn
    trains something else than the planned spec: the execution settings of
    ``catalog.EXECUTION_SETTINGS`` may differ, see :func:`execution_changes`)."""
    return _action(run)[0]


def _action(run: Run) -> tuple[str, dict[str, tuple[str, str]]]:
    """:func:`run_action` and, for a run that resumes or is skipped, its :func:`execution_changes`."""
    try:
        status = read_json(os.path.join(run.run_dir, "result.json")).get("status")
    except (OSError, ValueError):
        status = None
    if status in FINISHED:
        action = "skip"
    elif os.path.isfile(os.path.join(run.run_dir, "checkpoint.pt")):
        action = "resume"
    else:
        return "fresh", {}
    changes = execution_changes(run)
    if changes is None:
        raise SweepError(f"{run.run_dir}: error: this run was made with other settings than the sweep asks for "
                         f"(its config.pinn trains something else than the planned spec); give another --out, or "
                         f"delete the folder to run it again")
    return action, changes


def execution_changes(run: Run) -> dict[str, tuple[str, str]] | None:
    """The execution settings (``catalog.EXECUTION_SETTINGS``) in which the run folder's config.pinn differs
    from the planned spec, name -> (saved, planned) value texts (absent: ``-``); {} when the texts are equal;
    None when they differ in anything else (comments and layout aside) or the saved spec is missing or unreadable."""
    try:
        with open(os.path.join(run.run_dir, "config.pinn"), encoding="utf-8") as fh:
            saved = fh.read()
    except OSError:
        return None
    if saved == run.source:
        return {}
    try:
        before, after = what_it_trains(saved), what_it_trains(run.source)
    except SpecError:
        return None
    if before[0] != after[0]:
        return None
    keys = sorted(set(before[1]) | set(after[1]))
    return {k: (before[1].get(k, "-"), after[1].get(k, "-")) for k in keys if before[1].get(k) != after[1].get(k)}


class _Lock:
    """OUT/.sweep.lock: one sweep process per output folder (a stale lock of a
    process that is gone on this host is taken over)."""

    def __init__(self, out: str):
        self.path = os.path.join(out, LOCK)
        self.held = False

    def __enter__(self):
        host = socket.gethostname()
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    with open(self.path, encoding="utf-8") as fh:
                        other = json.loads(fh.read())
                except (OSError, ValueError):
                    other = {}
                if other.get("host") == host and not _alive(other.get("pid")):
                    os.unlink(self.path)
                    continue
                raise SweepError(f"{os.path.dirname(self.path)}: error: another sweep (pid {other.get('pid')} on "
                                 f"{other.get('host')}) is running in this folder; if it is gone, delete "
                                 f"{self.path}") from None
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"pid": os.getpid(), "host": host}))
            self.held = True
            return self
        raise SweepError(f"{self.path}: error: cannot take the lock")

    def __exit__(self, *exc):
        if self.held:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _alive(pid) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- backends
@contextlib.contextmanager
def _one_ctrl_c():
    """SIGINT and SIGTERM raise KeyboardInterrupt, except the repeats of the first (pinnspec._interrupts): the
    backends pass one interrupt on to the runs, which checkpoint, and wait for them; a second one stops at once.
    SIGTERM counts as Ctrl-C: `kill` or a batch scheduler ending the driver ends its workers' runs too, each
    checkpointed, rather than leave them training outside the terminal's process group."""
    interrupts = Interrupts()

    def handler(signum, frame):
        if interrupts.arrive() != "repeat":
            raise KeyboardInterrupt

    try:
        previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: Python's own handling
        yield
        return
    try:
        yield
    finally:
        if interrupts.first is not None:  # a repeat still on its way is taken here, not by the caller
            time.sleep(max(0.0, REPEAT_S - (interrupts.clock() - interrupts.first)))
        for signum, handler_before in previous.items():
            signal.signal(signum, handler_before)


def _run_local(units: list[list[dict]], jobs: int, threads: int, done, fresh_processes: bool = False) -> None:
    """Each unit (one run, or runs that train as one group) in a pool process, ``jobs`` at a time."""
    context = multiprocessing.get_context("spawn")
    # fresh_processes: one process per run, so that a run's peak memory and first-step costs are its own
    fresh = {"max_tasks_per_child": 1} if fresh_processes and sys.version_info >= (3, 11) else {}
    with ProcessPoolExecutor(max_workers=min(jobs, len(units)), mp_context=context,
                             initializer=init_pool_worker, initargs=(threads,), **fresh) as pool:
        futures = {pool.submit(run_tasks, unit): unit for unit in units}
        reported = set()
        try:
            for future in as_completed(futures):
                reported.add(future)
                _report(futures[future], future.result, done)
        except KeyboardInterrupt:
            # one SIGINT to each worker (they left the terminal's process group): a run finishes its
            # epoch, checkpoints and returns "interrupted"; a second Ctrl-C stops them at once
            for future in futures:
                future.cancel()
            _interrupt_workers(pool)
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            except KeyboardInterrupt:
                _interrupt_workers(pool, signal.SIGTERM)  # at once: a run keeps the checkpoint it wrote last
                raise _StoppedAtOnce from None
            for future, unit in futures.items():
                if future not in reported and future.done() and not future.cancelled() and future.exception() is None:
                    _report(unit, future.result, done)
            raise


def _report(unit: list[dict], answers_of, done) -> None:
    """``done(task, answer, error)`` for each run of a finished unit, ``answers_of()`` its answers (a run that
    an interruption kept from starting has no answer: nothing to report)."""
    try:
        answers = answers_of()
    except Exception as err:  # noqa: BLE001  (recorded; the other runs go on)
        for task in unit:
            done(task, None, err)
        return
    for task, answer in zip(unit, answers):
        done(task, answer, None)


class _StoppedAtOnce(KeyboardInterrupt):
    """A second Ctrl-C while the runs were finishing their epochs: they stop at once, each keeping the
    checkpoint it wrote last."""


def _interrupt_workers(pool, signum: int = signal.SIGINT) -> None:
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            os.kill(process.pid, signum)
        except (OSError, AttributeError):
            pass


def ray_connect(address: str, cpus: int | None = None) -> bool:
    """Connect to a Ray cluster: ``address`` "auto" joins the running one (``ray
    start``, or RAY_ADDRESS) and else starts a local one with ``cpus`` CPUs; any
    other address is joined.  An already initialised Ray is used as it is.
    Returns whether this call initialised Ray (and so should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address == "auto":
        try:
            ray.init(address="auto")
        except ConnectionError:
            ray.init(num_cpus=cpus or cpu_count(), include_dashboard=False)
    else:
        ray.init(address=address)
    return True


def _run_ray(units: list[list[dict]], threads: int, gpus: float, jobs: int | None, done,
             fresh_processes: bool = False) -> None:
    import ray

    # max_calls = 1: Ray starts a new worker process for every run (0: workers are reused)
    remote = ray.remote(num_cpus=threads, num_gpus=gpus, max_retries=0, max_calls=int(fresh_processes))(run_tasks)
    queue, pending = list(units), {}
    limit = jobs or len(units)
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                unit = queue.pop(0)
                pending[remote.remote(unit)] = unit
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                _report(pending.pop(ref), lambda: ray.get(ref), done)
    except KeyboardInterrupt:
        # a running task gets a KeyboardInterrupt through its SIGINT handler: it checkpoints and stops
        for ref in pending:
            ray.cancel(ref)
        if pending:
            try:
                ray.wait(list(pending), num_returns=len(pending), timeout=60)
            except KeyboardInterrupt:
                for ref in pending:
                    ray.cancel(ref, force=True)  # at once: a run keeps the checkpoint it wrote last
                raise _StoppedAtOnce from None
        raise


# ---------------------------------------------------------------- the sweep
def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_sweep(sweep: Sweep, *, jobs: int | None = None, threads: int | None = None, ray: str | None = None,
              gpus_per_run: float = 0.0, log=_stderr, dry_run: bool = False,
              fresh_processes: bool = False, together: bool = False) -> SweepReport:
    """Run every planned run of ``sweep`` that is not finished, then write the
    table (OUT/summary.md, summary.csv, runs.csv).

    ``jobs``: local worker processes (default half the cores, 1 on a 2-core
    machine), or with Ray the most runs in flight (default: as many as Ray
    schedules).  ``threads``: torch threads per run (default max(1, cores //
    jobs), cores being this machine's or the Ray cluster's CPUs).  ``ray``:
    None (local pool), "auto" or a cluster address.  ``fresh_processes``: the
    local pool (Python >= 3.11) and Ray start a new process for every run, so
    a run's peak memory and first-step costs are its own.  ``together``: see
    :func:`run_sweeps`.  Raises SweepError (nothing started) when the sweep is
    invalid or a run folder holds other settings."""
    return run_sweeps([sweep], jobs=jobs, threads=threads, ray=ray, gpus_per_run=gpus_per_run, log=log,
                      dry_run=dry_run, fresh_processes=fresh_processes, together=together)[0]


def run_sweeps(sweeps: list[Sweep], *, jobs: int | None = None, threads: int | None = None, ray: str | None = None,
               gpus_per_run: float = 0.0, log=_stderr, dry_run: bool = False,
               fresh_processes: bool = False, together: bool = False) -> list[SweepReport]:
    """:func:`run_sweep` for several sweeps (each its own output folder and table) whose
    unfinished runs share ONE pool: ``jobs`` runs at a time over all of them.  The
    paper benchmarks run their (problem, grouping) cells this way.

    ``together``: unfinished runs whose specs differ only in their update chain (``catalog.CHAIN_STATEMENTS``:
    the same problem and points; the seed too, where the points do not depend on it) and that all start fresh
    or all resume train as one group in one
    worker (`pinnspec.engine.RunGroup`: in lockstep, every run's losses and G as one batched graph); ``jobs``
    then counts workers, each training one run or one group."""
    reports, stale = [], []
    for sweep in sweeps:
        runs = plan(sweep)
        out = os.path.dirname(runs[0].run_dir) if runs else os.path.abspath(sweep.out or sweep.default_out())
        actions, changed = {}, {}
        for run in runs:
            try:
                actions[run.name], changes = _action(run)
            except SweepError as err:
                actions[run.name] = "stale"
                stale.append(str(err))
                continue
            if changes and actions[run.name] == "resume":
                changed[run.name] = changes
        reports.append(SweepReport(out=out, runs=runs, actions=actions, execution_changed=changed))
    if len({r.out for r in reports}) != len(reports):
        raise SweepError("two sweeps of one call write the same output folder")
    todo = [(report, run) for report in reports for run in report.runs if report.actions[run.name] != "skip"]
    summaries = []
    for report in reports:
        counts = {a: sum(v == a for v in report.actions.values()) for a in ("skip", "resume", "fresh")}
        summaries.append(f"sweep: {len(report.runs)} runs in {report.out}: {counts['skip']} finished (skipped), "
                         f"{counts['resume']} to resume, {counts['fresh']} to start")
    if dry_run:
        for summary, report in zip(summaries, reports):
            log(summary)
            for run in report.runs:
                log(f"  {report.actions[run.name]:6s} {run.name}")
    for report in reports:
        for run in report.runs:
            changes = report.execution_changed.get(run.name)
            if not changes:
                continue
            how = ", ".join(f"{k} {before} -> {after}" for k, (before, after) in changes.items())
            log(f"sweep: {run.run_dir} resumes with other execution settings ({how}): from there on it is not bit for "
                f"bit the run it would have been")
    if stale:
        more = f" (and {len(stale) - 1} more run folders like it)" if len(stale) > 1 else ""
        raise SweepError(stale[0] + more)
    if dry_run:
        return reports

    tasks = [{"name": r.name, "run_dir": r.run_dir, "source": r.source, "filename": r.filename,
              "base_dir": r.base_dir, "action": report.actions[r.name]} for report, r in todo]
    units = _units(tasks, together)
    grouped = [len(unit) for unit in units if len(unit) > 1]
    if together and tasks or grouped:
        log(f"sweep: {sum(grouped)} of {len(tasks)} runs train in {len(grouped)} group(s) (each in one worker, "
            f"in lockstep, their losses and G as one batched graph)"
            + ("" if together else ": runs that trained in groups resume in them"))
    with contextlib.ExitStack() as locks:
        for sweep, report in zip(sweeps, reports):
            os.makedirs(report.out, exist_ok=True)
            locks.enter_context(_Lock(report.out))
            atomic_write_text(os.path.join(report.out, "sweep.json"), json.dumps({
                "spec": os.path.abspath(sweep.spec), "grid": sweep.grid, "fixed": sweep.fixed,
                "seeds": sorted({r.seed for r in report.runs}), "runs": [r.name for r in report.runs],
                "version": __version__}, indent=2) + "\n")
        shut_down_ray = False
        try:
            if todo:
                if ray:
                    shut_down_ray = ray_connect(ray)
                    import ray as ray_module

                    cpus = int(ray_module.cluster_resources().get("CPU", 1))
                    threads = threads or max(1, cpus // (jobs or cpus))
                    largest = max((n["Resources"].get("CPU", 0) for n in ray_module.nodes() if n.get("Alive")),
                                  default=0)
                    if threads > largest:  # Ray would wait for such a node forever
                        raise SweepError(f"--threads {threads}: no node of the Ray cluster has that many CPUs "
                                         f"(the largest has {largest:g})")
                    where = f"Ray ({ray}, {cpus} CPUs), {threads} torch thread(s) per run"
                else:
                    cores = cpu_count()
                    jobs = jobs or default_jobs(cores)
                    threads = threads or max(1, cores // jobs)
                    where = f"{min(jobs, len(units))} local process(es) x {threads} torch thread(s)"
                for summary in summaries:
                    log(f"{summary}; on {where}")
                for task in tasks:
                    task["threads"] = threads
                owner = {task["run_dir"]: report for task, (report, _) in zip(tasks, todo)}
                root = os.path.commonpath([r.out for r in reports])  # the runs named from there: case/method/seed
                label = (lambda task: task["name"]) if len(reports) == 1 else \
                    (lambda task: os.path.relpath(task["run_dir"], root))
                finished = [0]
                started = time.perf_counter()

                def done(task, answer, error):
                    finished[0] += 1
                    prefix = f"[{finished[0]}/{len(tasks)}] {label(task)}"
                    outcomes = owner[task["run_dir"]].outcomes
                    if error is not None:
                        text = f"{type(error).__name__}: {error}"
                        if isinstance(error, BrokenProcessPool):
                            text += (" (a worker process died: out of memory, killed, or a script that calls "
                                     "run_sweep without `if __name__ == \"__main__\":`, which spawned workers need)")
                        outcomes[task["name"]] = {"error": text}
                        log(f"{prefix}: FAILED: {text}")
                        return
                    outcomes[task["name"]] = answer
                    log(f"{prefix}: {_describe(answer)}")

                try:
                    with _one_ctrl_c():
                        if ray:
                            _run_ray(units, threads, gpus_per_run, jobs, done, fresh_processes)
                        else:
                            _run_local(units, jobs, threads, done, fresh_processes)
                except KeyboardInterrupt as stop:
                    for report in reports:
                        report.interrupted = True
                    if isinstance(stop, _StoppedAtOnce):
                        log("stopped at once (a second interrupt): each run in progress keeps the checkpoint it wrote "
                            "last; run the same command again to continue from there")
                    else:
                        log("interrupted: the runs in progress checkpointed; run the same command again to continue")
                log(f"sweep: {finished[0]} run(s) in {time.perf_counter() - started:.1f} s")
            else:
                for summary in summaries:
                    log(summary)
        finally:
            if shut_down_ray:
                import ray as ray_module

                ray_module.shutdown()
        from ._table import read_run

        for sweep, report in zip(sweeps, reports):
            keys = list(sweep.grid)
            report.rows = [read_run(run) for run in report.runs]
            report.table = summarize(report.rows, keys)
            report.paths = write_tables(report.out, report.rows, keys, title=os.path.basename(sweep.spec))
    return reports


def _units(tasks: list[dict], together: bool) -> list[list[dict]]:
    """The tasks as units of work: each run alone, or (``together``) the runs that differ only in their update
    chain (and in their seed, where the points do not depend on it: `PointPlan.seeds_share_points`) and share
    their action, in order of their first run.  A run that resumes from a checkpoint it wrote in a group resumes
    with the runs of that group that resume now, with ``together`` or without: alone, it would train in its lane
    of its group's graph, every lane computed (`Trainer.run`)."""
    units: dict[tuple, list[dict]] = {}
    shared: dict[tuple, bool] = {}  # (what the run trains but its seed) -> whether every seed has the same points
    for task in tasks:
        group = _group_of(task)
        if group is not None:  # with the other runs of its group that resume now
            units.setdefault(("group", group), []).append(task)
            continue
        if not together:
            units[(task["run_dir"],)] = [task]
            continue
        try:
            statements, execution = what_it_trains(task["source"], CHAIN_STATEMENTS, ("seed",))
            problem = (statements, tuple(sorted(execution.items())), task["base_dir"], task["action"])
            if problem not in shared:
                shared[problem] = _seed_free(task)
            key = (problem, None if shared[problem] else _seed_of(task["source"]))
        except (SpecError, OSError, ValueError):
            key = (task["run_dir"],)
        units.setdefault(key, []).append(task)
    return list(units.values())


def _group_of(task: dict) -> str | None:
    """The id of the group the task's run resumes in, where it trained in one (its result.json, written at each
    checkpoint, says so); else None."""
    if task["action"] != "resume":
        return None
    try:
        result = read_json(os.path.join(task["run_dir"], "result.json"))
    except (OSError, ValueError):
        return None
    group = result.get("group")
    if result.get("execution") not in GROUP_STRATEGIES or not isinstance(group, dict):
        return None
    return str(group.get("group"))


def _seed_of(source: str) -> str | None:
    """The seed a spec's `train` statement gives (None: the default)."""
    statements, _ = what_it_trains(source)
    return next((dict(s[1]) for s in statements if isinstance(s, tuple)), {}).get("seed")


def _seed_free(task: dict) -> bool:
    """Whether a task's spec trains every seed on the same points (two seeds' draws compared)."""
    from ..lang import loads
    from ..sampling import PointPlan

    spec = loads(task["source"], filename=task["filename"], base_dir=task["base_dir"])
    return PointPlan(spec.ir).seeds_share_points((0, 1))


def _describe(answer: dict) -> str:
    result = answer["result"]
    how = f"resumed from epoch {answer['resumed_from']}, " if answer.get("action") == "resume" else ""
    text = f"{result['status']} ({how}{result['epochs_done']}/{result['epochs']} epochs, {answer['wall_s']:.1f} s)"
    if result["status"] == "completed" and result.get("rel_l2") is not None:
        text += f", rel_l2 {float(result['rel_l2']):.3e}"
    elif result.get("message"):
        text += f": {result['message']}"
    return text
