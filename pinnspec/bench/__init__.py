"""Benchmarks: ``pinnspec bench speed``, ``overhead``, the paper's ``gum``, ``q2`` ... ``q6``, and ``pinnacle``.

    from pinnspec import bench
    rc = bench.speed.main(["--epochs", "20"])       # exit code: 0 ok, 1 a bad command line
    rc = bench.main("overhead", ["--epochs", "10"])

* ``speed``: one Burgers training epoch through ``Trainer.step`` against a
  hand-written torch implementation of the same problem, interleaved in one
  process; prints the median time ratio and the peak-memory ratio.
* ``overhead``: every surgery method, the GUA projection (both metrics), the
  Adam state alignment and the per-step diagnostics on random G, as a
  fraction of one Burgers epoch measured in the same process.
* ``gum``: the paper's Q1 (ConFIG x optimizers, no alignment) through pinnspec.sweep; the measured
  conflict rates next to the paper's (its published tables are data files, ``pinnspec/bench/paper_*.csv``,
  read by ``pinnspec.bench._paper``).
* ``q2``: the paper's Q2 (surgery methods x {base, +GUA}); rel-L2, Imp.% and conflict rates next to
  the paper's.
* ``pinnacle``: the PINNacle benchmark's cases (``benchmarks/pinnacle/cases``) x methods, scored with
  PINNacle's metrics next to its published numbers; many runs per GPU with ``--jobs``.
* ``recipe``: each spec as written, then with ``--recipe 'strong(time = T)'`` for the same training time.
* ``peers``: DeepXDE's Burgers example trained by DeepXDE (an optional extra) and by pinnspec, one thread
  each, one run at a time: ms per iteration, loop seconds, their ratios, rel-L2 over the seeds.

Every bench's command line goes through one parser, ``run_main`` and ``BenchError``
(``pinnspec.bench._cli``); its table and figure through one writer each (``pinnspec.bench._report``).
Importing this package loads no torch; ``bench.speed`` / ``bench.overhead`` / ``bench.gum`` /
``bench.q2`` load on first use.
"""

from __future__ import annotations

import importlib

__all__ = ["BENCHMARKS", "main", "speed", "overhead", "gum", "q2", "q3", "q4", "q5", "q6", "pinnacle", "peers", "recipe"]

#: benchmark name -> one-line description (``pinnspec bench NAME``)
BENCHMARKS = {
    "speed": "one Burgers epoch: pinnspec Trainer.step vs hand-written torch (time and memory ratios)",
    "overhead": "surgery, GUA projection, state alignment and diagnostics as a fraction of one epoch",
    "gum": "Q1: ConFIG x optimizers, no alignment: measured R_g, R_a, R_u next to the paper's table",
    "q2": "Q2: surgery methods x {base, +GUA}: rel-L2, Imp.% and conflict rates next to the paper's tables",
    "q3": "Q3: same-state, norm-matched u, p, q: win rates of the worst relative one-step loss change",
    "q4": "Q4: state-alignment ablation: none, (0,0), soft rho, (1,0), (1,1)",
    "q5": "Q5: training time and peak memory with and without GUA",
    "q6": "Q6: task-cardinality scaling m = 2..40 on a synthetic multi-task model, ConFIG vs ConFIG + GUA",
    "pinnacle": "PINNacle's cases x methods: L2RE, L1RE, MSE next to PINNacle's published vanilla and best",
    "peers": "DeepXDE's Burgers example in DeepXDE and in pinnspec: ms per iteration, loop seconds, rel-L2",
    "recipe": "each spec's own configuration beside `recipe strong` at equal wall time: final-model rel-L2",
}


def main(name: str, argv: list[str] | None = None) -> int:
    """Run benchmark ``name`` with command-line arguments ``argv``; returns the exit code."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark '{name}' (known: {', '.join(BENCHMARKS)})")
    return __getattr__(name).main(argv)


def __getattr__(name: str):
    if name in BENCHMARKS:
        return importlib.import_module(f"._{name}", __name__)
    raise AttributeError(f"module 'pinnspec.bench' has no attribute '{name}'")
