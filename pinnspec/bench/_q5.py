"""``pinnspec bench q5``: the paper's Q5 (what does GUA cost in time and memory?).

Each surgery method (default ConFIG, the paper's) x align {none, gua} on every ``--problems`` x
``--groupings`` x ``--seeds``, through :class:`pinnspec.sweep.Sweep` (one per (problem, grouping)
under ``OUT/runs/PROBLEM-GROUPING``, restartable).  Every run is its own process, so its peak memory
is its own: on CUDA ``torch.cuda.max_memory_allocated`` (the paper's "peak GPU memory"), on CPU the
RSS high-water mark from the start of training (which also holds the interpreter, torch and the
compiler, the same for both arms).
Time is the run's training-loop wall time (validation included, setup excluded).

Writes ``OUT/q5.md``, ``OUT/q5.csv`` and ``OUT/q5.png``: per cell, rel-L2, time and peak memory of each
arm and the ratios +GUA / base (rel-L2, time, memory: the three ratios of the paper's
Figure fig:overhead).  The paper publishes Q5 as a figure only; its text's claims are quoted in the
Markdown (:data:`PAPER_CLAIMS`).

Run the arms on an otherwise idle machine with ``--jobs 1`` for timings you quote: runs that share
cores time each other.
"""

from __future__ import annotations

import argparse
import math
import os

from . import _paper
from ._cli import run_main
from ._paper_runs import Cell, base_name, fixed_settings, gua_statement, parser, run_cells, selection, split_grid
from ._report import markdown_table, panel_figure, sci, write_outputs

#: What the paper says of Q5 (Figure fig:overhead has no published numbers).
PAPER_CLAIMS = (
    "GUA introduces additional training-time overhead while adding little peak GPU memory overhead "
    "(paper §Q5: GUA Overhead, line 687).",
    "The projection's parameter-dimensional cost is O(m^2 p) for the Gram matrix, then a small dual solve "
    "(paper line 680).",
)
COLUMNS = ["problem", "grouping", "method", "optimizer", "runs", "base_rel_l2", "gua_rel_l2", "l2_ratio",
           "base_time_s", "gua_time_s", "time_ratio", "base_peak_mb", "gua_peak_mb", "memory_ratio", "gua_R_p",
           "device"]


def build_parser() -> argparse.ArgumentParser:
    return parser("pinnspec bench q5",
                  "Q5: training time and peak memory with and without GUA (ratios +GUA / base).",
                  methods=("config",), optimizers=(), out_default=os.path.join("runs", "bench-q5"))


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def ratio(gua: float | None, base: float | None) -> float | None:
    if gua is None or base is None or not (math.isfinite(gua) and math.isfinite(base)) or base == 0:
        return None
    return gua / base


def _run(args) -> int:
    args.fresh_processes = True  # each run's peak memory its own
    chosen = selection(args)
    problems, groupings, methods, optimizers = chosen.problems, chosen.groupings, chosen.methods, chosen.optimizers
    seed_list, paths = chosen.seeds, chosen.paths
    cells = []
    for problem in problems:
        gua = gua_statement(paths[problem])
        for grouping in groupings:
            grid, fixed = split_grid({"surgery": methods, **({"optimizer": optimizers} if optimizers[0] else {})})
            grid["align"] = ["none", gua]
            cells.append(Cell((problem, grouping, gua), paths[problem],
                              os.path.join(args.out, "runs", f"{problem}-{grouping}"), grid,
                              fixed_settings(args, grouping=grouping, **fixed)))
    tables, exit_code = run_cells(cells, seed_list, args)
    rows = []
    for (problem, grouping, gua), table in zip((c.key for c in cells), tables):
        for method in methods:
            for optimizer in optimizers:
                def arm(align, method=method, optimizer=optimizer):
                    for e in table:
                        if (e.get("surgery", method) == method and e["align"] == align
                                and e.get("optimizer", optimizer) == optimizer):
                            return e
                    return {}

                base, plus = arm("none"), arm(gua)
                rows.append({
                    "problem": problem, "grouping": grouping, "method": method, "optimizer": optimizer or "spec",
                    "runs": f"{plus.get('completed', 0)}/{plus.get('runs', 0)} + "
                            f"{base.get('completed', 0)}/{base.get('runs', 0)}",
                    "base_rel_l2": base.get("rel_l2_mean"), "gua_rel_l2": plus.get("rel_l2_mean"),
                    "l2_ratio": ratio(plus.get("rel_l2_mean"), base.get("rel_l2_mean")),
                    "base_time_s": base.get("train_time_s_mean"), "gua_time_s": plus.get("train_time_s_mean"),
                    "time_ratio": ratio(plus.get("train_time_s_mean"), base.get("train_time_s_mean")),
                    "base_peak_mb": base.get("peak_memory_mb_mean"), "gua_peak_mb": plus.get("peak_memory_mb_mean"),
                    "memory_ratio": ratio(plus.get("peak_memory_mb_mean"), base.get("peak_memory_mb_mean")),
                    "gua_R_p": None if plus.get("R_p_mean") is None else 100.0 * plus["R_p_mean"],
                    "device": args.device,
                })
    text = markdown(rows, args, seed_list)
    written = write_outputs(args.out, "q5", text, COLUMNS, rows, figure(rows))
    print(text)
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}")
    return exit_code


def _num(value, fmt: str) -> str:
    return "-" if value is None or not math.isfinite(value) else format(value, fmt)


def markdown(rows: list[dict], args, seed_list: list[int]) -> str:
    memory = "CUDA max allocated" if args.device == "cuda" else \
        "the RSS high-water mark during training (CUDA max allocated on a GPU)"
    lines = ["# pinnspec bench q5: GUA's time and memory overhead", "",
             f"{args.epochs} epochs per run, seeds {','.join(map(str, seed_list))}, device {args.device}, "
             f"{args.jobs or 'default'} local job(s). Time: the training loop's wall time (mean over seeds); memory: "
             f"{memory} (mean over seeds). Ratios are +GUA / base.", ""]
    cells = [[r["problem"], r["grouping"], _paper.LABELS.get(base_name(r["method"]), r["method"]), r["runs"],
              f"{sci(r['base_rel_l2'])} → {sci(r['gua_rel_l2'])} ({_num(r['l2_ratio'], '.3f')})",
              f"{_num(r['base_time_s'], '.1f')} → {_num(r['gua_time_s'], '.1f')} ({_num(r['time_ratio'], '.3f')})",
              f"{_num(r['base_peak_mb'], '.0f')} → {_num(r['gua_peak_mb'], '.0f')} "
              f"({_num(r['memory_ratio'], '.3f')})",
              _num(r["gua_R_p"], ".1f")] for r in rows]
    lines += markdown_table(["problem", "grouping", "method", "runs (+GUA + base)", "rel-L2 base → +GUA (ratio)",
                             "time s base → +GUA (ratio)", "peak MiB base → +GUA (ratio)", "+GUA R_p %"],
                            cells, left=4)
    lines += ["", "The paper (Figure fig:overhead, no numbers published):"] + [f"- {c}" for c in PAPER_CLAIMS]
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """One panel per ratio (rel-L2, time, memory): +GUA / base per (problem, grouping, method)."""
    labels = [f"{_paper.LABELS.get(r['problem'], r['problem'])} {_paper.LABELS.get(r['grouping'], r['grouping'])}"
              + ("" if r["method"] == "config" else f" {r['method']}") for r in rows]

    def draw(ax, panel):
        key, title = panel
        values = [(i, r[key]) for i, r in enumerate(rows) if r[key] is not None]
        if values:
            ax.bar(*zip(*values), color="tab:red", alpha=0.8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(rows)), labels, rotation=45, ha="right", fontsize=7)
        ax.set_title(f"{title} (+GUA / base)", fontsize=9)

    return panel_figure([("l2_ratio", "rel-L2 ratio"), ("time_ratio", "training-time ratio"),
                         ("memory_ratio", "peak-memory ratio")], draw)
