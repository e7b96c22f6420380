"""``pinnspec bench gum``: the paper's Q1 (optimizer-induced gradient-update misalignment).

ConFIG x each optimizer (no alignment: GUM measures the optimizer's own conflicts) on every
``--problems`` x ``--groupings`` x ``--seeds``; each (problem, grouping) is one
:class:`pinnspec.sweep.Sweep` under ``OUT/runs/PROBLEM-GROUPING``, so running the same command again
skips the finished runs and resumes the interrupted ones.  Writes ``OUT/gum.md``, ``OUT/gum.csv``
and ``OUT/gum.png``: the measured R_g, R_a, R_u (mean over seeds, %) next to the paper's
(Table tab:optimizer_gum and tab:optimizer_sources_remaining, :mod:`pinnspec.bench._paper`).

"""

from __future__ import annotations

import argparse
import os

from . import _paper
from ._cli import run_main
from ._paper_runs import Cell, base_name, fixed_settings, names, parser, run_cells, seeds, spec_paths, split_grid
from ._report import chain, grouped, markdown_table, panel_figure, pct, sci, write_outputs

# ====================================================================== gum
COLUMNS = ["problem", "grouping", "optimizer", "runs", "completed", "R_g", "R_a", "R_u", "paper_R_g", "paper_R_a",
           "paper_R_u", "rel_l2_mean", "rel_l2_std"]


def build_parser() -> argparse.ArgumentParser:
    return parser("pinnspec bench gum",
                  "Q1: ConFIG x optimizers, no alignment; measured R_g, R_a, R_u next to the paper's.",
                  methods=("config",), optimizers=_paper.OPTIMIZERS,
                  optimizers_help=" (a bare name runs at the paper's lr 1e-3; \"sgd(lr = 1e-2)\" as given)",
                  out_default=os.path.join("runs", "bench-gum"))


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def _run(args) -> int:
    problems = names(args.problems, "--problems")
    groupings = names(args.groupings, "--groupings")
    given = names(args.optimizers, "--optimizers")
    methods = names(args.methods, "--methods")
    calls = {_paper.paper_optimizer(o): o for o in given}  # the statement run -> the name as given
    seed_list = seeds(args.seeds)
    paths = spec_paths(problems, args.spec)
    grid, fixed = split_grid({"optimizer": list(calls), "surgery": methods})
    cells = [Cell((problem, grouping), paths[problem], os.path.join(args.out, "runs", f"{problem}-{grouping}"),
                  grid, fixed_settings(args, grouping=grouping, align="none", **fixed))
             for problem in problems for grouping in groupings]
    tables, exit_code = run_cells(cells, seed_list, args)
    rows = []
    for (problem, grouping), table in zip((c.key for c in cells), tables):
        for entry in table:
            run = entry.get("optimizer", fixed.get("optimizer"))
            optimizer = calls.get(run, run)
            if len(methods) > 1:  # a method other than the paper's ConFIG is named in the row
                optimizer = f"{optimizer} / {entry['surgery']}"
            paper = _paper.gum(problem, grouping, base_name(optimizer)) or (None, None, None)
            rows.append({"problem": problem, "grouping": grouping, "optimizer": optimizer,
                         "runs": entry["runs"], "completed": entry["completed"],
                         "R_g": pct(entry["R_g_mean"]), "R_a": pct(entry["R_a_mean"]),
                         "R_u": pct(entry["R_u_mean"]), "paper_R_g": paper[0], "paper_R_a": paper[1],
                         "paper_R_u": paper[2], "rel_l2_mean": entry["rel_l2_mean"],
                         "rel_l2_std": entry["rel_l2_std"]})
    written = write_outputs(args.out, "gum", markdown(rows, args, seed_list), COLUMNS, rows, figure(rows))
    print(markdown(rows, args, seed_list))
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}")
    return exit_code


def markdown(rows: list[dict], args, seed_list: list[int]) -> str:
    lines = ["# pinnspec bench gum: optimizer-induced GUM (ConFIG, no alignment)", "",
             f"{args.epochs} epochs per run, seeds {','.join(map(str, seed_list))}, device {args.device}, "
             f"validate: {args.validate}.  Conflict rates in %, mean over the completed seeds; the paper's "
             f"numbers (Table tab:optimizer_gum / tab:optimizer_sources_remaining) come from full-length "
             f"training over five seeds.", ""]
    cells = [[r["problem"], r["grouping"], f"`{r['optimizer']}`", f"{r['completed']}/{r['runs']}",
              chain((r["R_g"], r["R_a"], r["R_u"])),
              "-" if r["paper_R_g"] is None else chain((r["paper_R_g"], r["paper_R_a"], r["paper_R_u"])),
              sci(r["rel_l2_mean"], r["rel_l2_std"])] for r in rows]
    lines += markdown_table(["problem", "grouping", "optimizer", "runs", "R_g→R_a→R_u", "paper R_g→R_a→R_u",
                             "rel-L2"], cells, left=3)
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """One panel per (problem, grouping): measured R_g and R_u per optimizer (bars), the paper's (dots)."""
    from ..plots import R_COLORS

    def draw(ax, cell):
        (problem, grouping), members = cell
        xs = list(range(len(members)))
        for rate, shift in (("R_g", -0.2), ("R_u", 0.2)):
            ax.bar([x + shift for x in xs], [r[rate] or 0.0 for r in members], width=0.4, color=R_COLORS[rate],
                   alpha=0.8, label=f"{rate} measured")
            paper = [(x + shift, r[f"paper_{rate}"]) for x, r in zip(xs, members) if r[f"paper_{rate}"] is not None]
            if paper:
                ax.plot(*zip(*paper), "o", color="black" if rate == "R_g" else "dimgray", markersize=4,
                        label=f"{rate} paper")
        ax.set_xticks(xs, [base_name(r["optimizer"]) for r in members], rotation=45, ha="right", fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_ylabel("conflict rate (%)")
        ax.set_title(_paper.setting_label(problem, grouping), fontsize=9)
        ax.legend(fontsize=6)

    return panel_figure(grouped(rows, lambda r: (r["problem"], r["grouping"]), ("(none)", "")), draw)
