"""``pinnspec bench q4``: the paper's Q4 (does optimizer-state alignment add to direction alignment?).

Section "Q4: State Alignment Mechanism" and Appendix "Optimizer-State Alignment"
(app:optimizer_state_alignment): ConFIG + Adam with five alignment variants,

    none         no GUA                                   align none
    (0, 0)       direction alignment only                 gua(rho_m = 0, rho_v = 0)
    soft         the spec's own soft state alignment      the spec's ``align gua(...)`` statement
    (1, 0)       exact first-moment alignment             gua(rho_m = 1, rho_v = 0)
    (1, 1)       exact alignment of both Adam moments     gua(rho_m = 1, rho_v = 1)

where the state alignment is m <- (1 - rho_m) m_bar + rho_m m~, v <- (1 - rho_v) v_bar + rho_v v~ toward the
moments m~, v~ rebuilt from the applied update p (Eq. state_alignment_generic).  The (0, 0), (1, 0) and
(1, 1) statements keep the spec's other GUA arguments (the projection metric).  One
:class:`pinnspec.sweep.Sweep` per (problem, grouping) over ``align`` under ``OUT/runs/PROBLEM-GROUPING``
(restartable).  Writes ``OUT/q4.md``, ``OUT/q4.csv`` and ``OUT/q4.png``: relative L2 mean ± std over seeds
per variant and Imp. % = 100 (1 - E_variant / E_none).

The paper shows Q4 as a figure only (fig:state_alignment).  Its "none" and "soft" variants are the same
experiments as the ConFIG rows of tab:full_q2_results, whose numbers are shown beside them; the other three
variants have no published numbers.
"""

from __future__ import annotations

import argparse
import math
import os

from . import _paper
from ._cli import BenchError, run_main
from ._paper_runs import (Cell, base_name, fixed_settings, gua_statement, improvement, parser, run_cells, selection,
                          split_grid)
from ._report import chain, grouped, markdown_table, panel_figure, pct, sci, write_outputs

#: variant -> (label, (rho_m, rho_v) or None: the spec's own soft statement); "none" is no GUA at all
VARIANTS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "none": ("no GUA", None),
    "direction": ("(0, 0) direction only", (0.0, 0.0)),
    "soft": ("soft ρ", None),
    "exact_m": ("(1, 0) exact m", (1.0, 0.0)),
    "exact_mv": ("(1, 1) exact m, v", (1.0, 1.0)),
}
#: the variants that are the same experiments as the ConFIG rows of tab:full_q2_results (align none / gua)
PAPER_TABLE_ALIGN = {"none": "none", "soft": "gua"}
FIGURE_ONLY = "figure only"
COLUMNS = ["problem", "grouping", "method", "optimizer", "variant", "align", "rho_m", "rho_v", "runs", "completed",
           "diverged", "rel_l2_mean", "rel_l2_std", "imp", "R_u", "R_p", "paper_rel_l2_mean", "paper_rel_l2_std",
           "paper_imp", "paper_source"]


def build_parser() -> argparse.ArgumentParser:
    return parser("pinnspec bench q4",
                  "Q4: state-alignment ablation with ConFIG + Adam: no GUA, (rho_m, rho_v) = (0, 0), the spec's soft "
                  "rho, (1, 0), (1, 1); rel-L2 and Imp.% vs no GUA.",
                  methods=("config",), optimizers=(), out_default=os.path.join("runs", "bench-q4"))


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def gua_arguments(spec_path: str) -> tuple[tuple[str, object], ...]:
    """The arguments of the spec's own ``align gua(...)`` other than rho_m and rho_v (e.g. the metric); () when
    the spec does not align with GUA."""
    from ..lang import load

    align = load(spec_path).ir.training.align
    if align.name != "gua":
        return ()
    return tuple((k, v) for k, v in align.kwargs if k not in ("rho_m", "rho_v"))


def variant_statements(spec_path: str) -> dict[str, str]:
    """variant -> the ``align`` statement it runs (the keys of :data:`VARIANTS`, in order)."""
    from ..ir import CallSpec

    kept = gua_arguments(spec_path)
    statements = {}
    for variant, (_, rho) in VARIANTS.items():
        if variant == "none":
            statements[variant] = "none"
        elif variant == "soft":
            statements[variant] = gua_statement(spec_path)
        else:
            statements[variant] = str(CallSpec("gua", kept + (("rho_m", rho[0]), ("rho_v", rho[1]))))
    return statements


def coefficients(spec_path: str, statement: str, optimizer: str | None = None) -> tuple[float, float] | None:
    """(rho_m, rho_v) that the ``align`` statement uses in the spec (with ``optimizer`` when given, else the
    spec's own): its explicit values, else the optimizer's paper defaults (``GUA.coefficients``); None for
    ``none`` or an optimizer without state alignment."""
    from ..lang import SpecError, load
    from ..lang import apply_overrides
    from ..registry import ALIGN, OPTIMIZERS

    overrides = {"align": statement, **({"optimizer": optimizer} if optimizer else {})}
    try:
        training = apply_overrides(load(spec_path), overrides).ir.training
    except SpecError as err:
        raise BenchError(f"{spec_path} with align {statement}"
                         f"{f' and optimizer {optimizer}' if optimizer else ''}:\n{err.render()}") from None
    if training.align.name == "none":
        return None
    stage = ALIGN.get(training.align.name)(**training.align.options)
    try:
        return stage.coefficients(OPTIMIZERS.get(training.optimizer.name)(**training.optimizer.options))
    except ValueError as err:  # explicit rho with an optimizer the paper defines no state alignment for
        raise BenchError(f"{err} (bench q4 needs an optimizer with state alignment: adam, adamw, rmsprop, soap)") \
            from None


def _run(args) -> int:
    chosen = selection(args)
    problems, groupings, methods, optimizers = chosen.problems, chosen.groupings, chosen.methods, chosen.optimizers
    seed_list, paths = chosen.seeds, chosen.paths
    cells, context = [], []
    for problem in problems:
        statements = variant_statements(paths[problem])
        for grouping, optimizer in ((g, o) for g in groupings for o in optimizers):
            rho = {v: coefficients(paths[problem], s, optimizer) for v, s in statements.items()}
            cell_name = f"{problem}-{grouping}" + (f"-{base_name(optimizer)}" if optimizer else "")
            grid, fixed = split_grid({"surgery": methods})
            grid = {"align": list(statements.values()), **grid}
            extra = {"optimizer": optimizer} if optimizer else {}
            cells.append(Cell((problem, grouping, optimizer), paths[problem], os.path.join(args.out, "runs", cell_name),
                              grid, fixed_settings(args, grouping=grouping, **fixed, **extra)))
            context.append((statements, rho))
    tables, exit_code = run_cells(cells, seed_list, args)
    rows = []
    for cell, (statements, rho), table in zip(cells, context, tables):
        problem, grouping, optimizer = cell.key
        by_statement = {s: v for v, s in statements.items()}
        found = {(e.get("surgery", methods[0]), by_statement[e["align"]]): e for e in table}
        for method in methods:
            base = found.get((method, "none"), {}).get("rel_l2_mean")
            for variant, statement in statements.items():
                entry = found.get((method, variant), {})
                rows.append({
                    "problem": problem, "grouping": grouping, "method": method, "optimizer": optimizer or "spec",
                    "variant": variant, "align": statement,
                    "rho_m": None if rho[variant] is None else rho[variant][0],
                    "rho_v": None if rho[variant] is None else rho[variant][1],
                    "runs": entry.get("runs", 0), "completed": entry.get("completed", 0),
                    "diverged": entry.get("diverged", 0),
                    "rel_l2_mean": entry.get("rel_l2_mean"), "rel_l2_std": entry.get("rel_l2_std"),
                    "imp": None if variant == "none" else improvement(base, entry.get("rel_l2_mean")),
                    "R_u": pct(entry.get("R_u_mean")), "R_p": pct(entry.get("R_p_mean")),
                    **paper_columns(problem, grouping, method, optimizer, variant),
                })
    text = markdown(rows, args, seed_list)
    written = write_outputs(args.out, "q4", text, COLUMNS, rows, figure(rows))
    print(text)
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}")
    return exit_code


def paper_columns(problem: str, grouping: str, method: str, optimizer: str | None, variant: str) -> dict:
    """The paper's numbers for a row: the ConFIG rows of tab:full_q2_results for "none" and "soft" (with the
    spec's Adam, the paper's setting), "figure only" for the variants it shows in fig:state_alignment alone."""
    empty = {"paper_rel_l2_mean": None, "paper_rel_l2_std": None, "paper_imp": None, "paper_source": ""}
    if base_name(method) != "config" or (optimizer is not None and base_name(optimizer) != "adam"):
        return empty
    if variant not in PAPER_TABLE_ALIGN:
        return {**empty, "paper_source": FIGURE_ONLY}
    published = _paper.q2_l2(problem, grouping, "config", PAPER_TABLE_ALIGN[variant])
    if published is None:
        return empty
    return {"paper_rel_l2_mean": published[0], "paper_rel_l2_std": published[1], "paper_imp": published[2],
            "paper_source": "tab:full_q2_results"}


def _rho(row: dict) -> str:
    return "-" if row["rho_m"] is None else f"({row['rho_m']:g}, {row['rho_v']:g})"


def _imp(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def markdown(rows: list[dict], args, seed_list: list[int]) -> str:
    lines = ["# pinnspec bench q4: state-alignment ablation (ConFIG + Adam)", "",
             f"{args.epochs} epochs per run, seeds {','.join(map(str, seed_list))}, device {args.device}, "
             f"validate: {args.validate}.  rel-L2: mean ± sample std over the completed seeds; Imp. % = 100 (1 - "
             f"E_variant / E_none); R_u→R_p in %.  The paper shows Q4 as a figure only (fig:state_alignment); its "
             f"\"no GUA\" and \"soft ρ\" variants are the ConFIG rows of tab:full_q2_results (full-length training, "
             f"five seeds), shown beside them.", ""]
    cells = []
    for r in rows:
        setting = r["grouping"]
        if r["method"] != "config" or r["optimizer"] != "spec":
            setting += f" ({r['method']}, optimizer {r['optimizer']})"
        runs = f"{r['completed']}/{r['runs']}" + (f" ({r['diverged']} diverged)" if r["diverged"] else "")
        rates = "-" if r["R_u"] is None else chain([r["R_u"]] + ([r["R_p"]] if r["R_p"] is not None else []))
        paper = sci(r["paper_rel_l2_mean"], r["paper_rel_l2_std"]) if r["paper_rel_l2_mean"] is not None else \
            (FIGURE_ONLY if r["paper_source"] == FIGURE_ONLY else "-")
        cells.append([r["problem"], setting, VARIANTS[r["variant"]][0], _rho(r), runs,
                      sci(r["rel_l2_mean"], r["rel_l2_std"]), _imp(r["imp"]), rates, paper, _imp(r["paper_imp"])])
    lines += markdown_table(["problem", "grouping", "variant", "(ρ_m, ρ_v)", "runs", "rel-L2", "Imp. % vs none",
                             "R_u→R_p", "paper rel-L2", "paper Imp. %"], cells, left=4)
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """One panel per (problem, grouping): mean rel-L2 per variant with the std over seeds (bars, log scale), the
    paper's tab:full_q2_results numbers for no GUA and soft rho (dots)."""
    colors = {"none": "tab:gray", "direction": "tab:blue", "soft": "tab:red", "exact_m": "tab:orange",
              "exact_mv": "tab:purple"}

    def draw(ax, cell):
        key, members = cell
        xs = list(range(len(members)))
        any_value = False
        for x, r in zip(xs, members):
            mean, std = r["rel_l2_mean"], r["rel_l2_std"]
            if mean is not None and mean > 0 and math.isfinite(mean):
                any_value = True
                ax.bar(x, mean, width=0.7, color=colors[r["variant"]], alpha=0.85,
                       yerr=None if std is None else [[min(std, 0.9 * mean)], [std]], capsize=3)
            if r["paper_rel_l2_mean"]:
                any_value = True
                ax.plot(x, r["paper_rel_l2_mean"], "o", color="black", markersize=5,
                        label="paper (tab:full_q2_results)" if r["variant"] == "none" else None)
        if any_value:
            ax.set_yscale("log")
        ax.set_xticks(xs, [VARIANTS[r["variant"]][0] for r in members], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("relative L2 error")
        title = _paper.setting_label(key[0], key[1])
        if key[2] and (key[2] != "config" or key[3] != "spec"):
            title += f" ({key[2]}, {key[3]})"
        ax.set_title(title, fontsize=9)
        if any(r["paper_rel_l2_mean"] for r in members):
            ax.legend(fontsize=6, loc="best")

    return panel_figure(grouped(rows, lambda r: (r["problem"], r["grouping"], r["method"], r["optimizer"]),
                                ("(none)", "", "", "")), draw)
