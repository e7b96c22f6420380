"""``pinnspec bench q2``: the paper's Q2 (does GUA help every gradient-surgery method?).

Each surgery method (``none`` is the paper's plain-Adam control) x align {none, gua} on every
``--problems`` x ``--groupings`` x ``--seeds``, with the spec's optimizer (Adam in the shipped
specs); one :class:`pinnspec.sweep.Sweep` per (problem, grouping) under ``OUT/runs/PROBLEM-GROUPING``
(restartable).  ``gua`` means the spec's own ``align gua(...)`` statement when it has one (the paper's
rho_m, rho_v per PDE), else plain ``gua``.  Writes ``OUT/q2.md``, ``OUT/q2.csv`` and ``OUT/q2.png``:
relative L2 mean ± std over seeds, Imp. % = 100 (1 - E_GUA / E_base), and R_g→R_a→R_u→R_p, next to
the paper's (Tables tab:full_q2_results and tab:pinn_conflict_rates, :mod:`pinnspec.bench._paper`).
"""

from __future__ import annotations

import argparse
import math
import os

from . import _paper
from ._cli import run_main
from ._paper_runs import Cell, base_name, fixed_settings, gua_statement, improvement, parser, run_cells, selection
from ._report import chain, grouped, markdown_table, panel_figure, pct, sci, write_outputs

ALIGNS = ("none", "gua")
COLUMNS = ["problem", "grouping", "method", "align", "optimizer", "runs", "completed", "rel_l2_mean", "rel_l2_std", "imp",
           "R_g", "R_a", "R_u", "R_p", "paper_rel_l2_mean", "paper_rel_l2_std", "paper_imp", "paper_R_g",
           "paper_R_a", "paper_R_u", "paper_R_p"]


def build_parser() -> argparse.ArgumentParser:
    return parser("pinnspec bench q2",
                  "Q2: surgery methods x {base, +GUA}; rel-L2, Imp.% and conflict rates next to the paper's.",
                  methods=_paper.METHODS, optimizers=(), methods_help=" (none = the optimizer alone)",
                  out_default=os.path.join("runs", "bench-q2"))


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def _run(args) -> int:
    chosen = selection(args)
    problems, groupings, methods, optimizers = chosen.problems, chosen.groupings, chosen.methods, chosen.optimizers
    seed_list, paths = chosen.seeds, chosen.paths
    cells = []
    for problem in problems:
        gua = gua_statement(paths[problem])
        for grouping, optimizer in ((g, o) for g in groupings for o in optimizers):
            cell_name = f"{problem}-{grouping}" + (f"-{base_name(optimizer)}" if optimizer else "")
            extra = {"optimizer": optimizer} if optimizer else {}
            cells.append(Cell((problem, grouping, optimizer), paths[problem],
                              os.path.join(args.out, "runs", cell_name), {"surgery": methods, "align": ["none", gua]},
                              fixed_settings(args, grouping=grouping, **extra)))
    tables, exit_code = run_cells(cells, seed_list, args)
    rows = []
    for (problem, grouping, optimizer), table in zip((c.key for c in cells), tables):
        found = {(e["surgery"], "none" if e["align"] == "none" else "gua"): e for e in table}
        for method in methods:
            base = found.get((method, "none"), {}).get("rel_l2_mean")
            for align in ALIGNS:
                entry = found.get((method, align), {})
                key = (problem, grouping, base_name(method), align)
                p_l2 = _paper.q2_l2(*key) or (None, None, None)
                p_rates = _paper.q2_rates(*key) or (None, None, None, None)
                rows.append({
                    "problem": problem, "grouping": grouping, "method": method, "align": align,
                    "optimizer": optimizer or "spec",
                    "runs": entry.get("runs", 0), "completed": entry.get("completed", 0),
                    "rel_l2_mean": entry.get("rel_l2_mean"), "rel_l2_std": entry.get("rel_l2_std"),
                    "imp": improvement(base, entry.get("rel_l2_mean")) if align == "gua" else None,
                    **{r: pct(entry.get(f"{r}_mean")) for r in ("R_g", "R_a", "R_u", "R_p")},
                    "paper_rel_l2_mean": p_l2[0], "paper_rel_l2_std": p_l2[1], "paper_imp": p_l2[2],
                    **{f"paper_{r}": v for r, v in zip(("R_g", "R_a", "R_u", "R_p"), p_rates)},
                })
    text = markdown(rows, args, seed_list)
    written = write_outputs(args.out, "q2", text, COLUMNS, rows, figure(rows))
    print(text)
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}")
    return exit_code


def _imp(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _rates(row: dict, prefix: str = "") -> str:
    values = [row[f"{prefix}R_g"], row[f"{prefix}R_a"], row[f"{prefix}R_u"]]
    if row["align"] == "gua":
        values.append(row[f"{prefix}R_p"])
    return "-" if all(v is None for v in values) else chain(values)


def markdown(rows: list[dict], args, seed_list: list[int]) -> str:
    lines = ["# pinnspec bench q2: gradient surgery x {base, +GUA}", "",
             f"{args.epochs} epochs per run, seeds {','.join(map(str, seed_list))}, device {args.device}, "
             f"validate: {args.validate}.  rel-L2: mean ± sample std over the completed seeds; Imp. % = "
             f"100 (1 - E_GUA / E_base); conflict rates in %.  The paper's numbers (Tables tab:full_q2_results, "
             f"tab:pinn_conflict_rates) come from full-length training over five seeds.", ""]
    cells = []
    for r in rows:
        method = _paper.LABELS.get(base_name(r["method"]), r["method"]) if r["method"] == base_name(r["method"]) \
            else r["method"]
        cells.append([r["problem"], r["grouping"], method, "+GUA" if r["align"] == "gua" else "base",
                      f"{r['completed']}/{r['runs']}", sci(r["rel_l2_mean"], r["rel_l2_std"]), _imp(r["imp"]),
                      _rates(r), sci(r["paper_rel_l2_mean"], r["paper_rel_l2_std"]), _imp(r["paper_imp"]),
                      _rates(r, "paper_")])
    lines += markdown_table(["problem", "grouping", "method", "align", "runs", "rel-L2", "Imp. %",
                             "R_g→R_a→R_u(→R_p)", "paper rel-L2", "paper Imp. %", "paper R_g→R_a→R_u(→R_p)"],
                            cells, left=4)
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """One panel per (problem, grouping): mean rel-L2 per method, base and +GUA (bars, log scale), the
    paper's (dots)."""
    colors = {"none": "tab:gray", "gua": "tab:red"}

    def draw(ax, cell):
        (problem, grouping), members = cell
        methods = list(dict.fromkeys(r["method"] for r in members))
        xs = {m: i for i, m in enumerate(methods)}
        any_value = False
        for align, shift in (("none", -0.2), ("gua", 0.2)):
            mine = [r for r in members if r["align"] == align]
            bars = [(xs[r["method"]] + shift, r["rel_l2_mean"]) for r in mine
                    if r["rel_l2_mean"] is not None and r["rel_l2_mean"] > 0 and math.isfinite(r["rel_l2_mean"])]
            if bars:
                any_value = True
                ax.bar(*zip(*bars), width=0.4, color=colors[align], alpha=0.8,
                       label="measured " + ("+GUA" if align == "gua" else "base"))
            paper = [(xs[r["method"]] + shift, r["paper_rel_l2_mean"]) for r in mine if r["paper_rel_l2_mean"]]
            if paper:
                any_value = True
                ax.plot(*zip(*paper), "o", color="black" if align == "gua" else "dimgray", markersize=4,
                        label="paper " + ("+GUA" if align == "gua" else "base"))
        if any_value:
            ax.set_yscale("log")
        ax.set_xticks(list(xs.values()), [_paper.LABELS.get(base_name(m), m) for m in methods], rotation=45,
                      ha="right", fontsize=7)
        ax.set_ylabel("relative L2 error")
        ax.set_title(_paper.setting_label(problem, grouping), fontsize=9)
        ax.legend(fontsize=6)

    return panel_figure(grouped(rows, lambda r: (r["problem"], r["grouping"]), ("(none)", "")), draw)
