"""Sweeps: a grid of training runs (spec x settings x seeds) on a local process
pool or a Ray cluster, restartable, summarised in one table.

    from pinnspec.sweep import Sweep, run_sweep
    sweep = Sweep("specs/burgers.pinn", grid={"surgery": ["config", "pcgrad"], "align": ["gua", "none"]},
                  seeds=[0, 1, 2], fixed={"epochs": 2000}, out="runs/sweep-burgers")
    report = run_sweep(sweep, jobs=1)             # or ray="auto"
    report.table                                  # per setting: mean/std of rel_l2, rates, time

    pinnspec sweep sweeps/burgers.toml            # the command line: pinnspec.sweep.main(argv)

Importing this package loads neither torch nor ray.
"""

from __future__ import annotations

from ._cli import main
from ._grid import Run, Sweep, SweepError, _slug as slug, parse_seeds, plan, run_name, split_values
from ._sweep import SweepReport, cpu_count, default_jobs, execution_changes, run_action, run_sweep, run_sweeps
from ._worker import set_threads, watch_parent
from ._table import markdown, read_run, summarize

__all__ = ["Sweep", "Run", "SweepError", "SweepReport", "plan", "run_name", "slug", "parse_seeds", "split_values",
           "cpu_count", "default_jobs", "set_threads", "watch_parent", "run_action", "execution_changes",
           "run_sweep", "run_sweeps", "summarize", "read_run", "markdown", "main"]
