"""``pinnspec bench gum``: the paper's Q1 (optimizer-induced gradient-update misalignment).

ConFIG x each optimizer (no alignment: GUM measures the optimizer's own conflicts) on every
``--problems`` x ``--groupings`` x ``--seeds``; each (problem, grouping) is one
:class:`pinnspec.sweep.Sweep` under ``OUT/runs/PROBLEM-GROUPING``, so running the same command again
skips the finished runs and resumes the interrupted ones.  Writes ``OUT/gum.md``, ``OUT/gum.csv``
and ``OUT/gum.png``: the measured R_g, R_a, R_u (mean over seeds, %) next to the paper's
(Table tab:optimizer_gum and tab:optimizer_sources_remaining, :mod:`pinnspec.bench._paper`).

The helpers here (problem specs, the sweep per cell, argument parsing) are shared with
``pinnspec bench q2`` (:mod:`pinnspec.bench._q2`).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import _paper
from ._cli import EXIT_OK, BenchError, Parser, positive, run_main

DEFAULT_PROBLEMS = ("burgers", "schrodinger")
DEFAULT_GROUPINGS = ("two", "three")
DEFAULT_EPOCHS = 200
SPECS_OWN = "the spec's own"
#: --validate test: the paper's selection protocol (validate on the test points every 100 epochs)
VALIDATE = {"spec": None, "test": "test every 100"}


# ====================================================================== arguments (shared with q2)
def parser(prog: str, description: str, *, methods: tuple[str, ...], optimizers: tuple[str, ...],
           out_default: str, methods_help: str = "", optimizers_help: str = "") -> argparse.ArgumentParser:
    """The flags every paper benchmark takes (gum, q2, q3, q4, q5, q6): ``--problems``, ``--groupings``,
    ``--methods``, ``--optimizers``, ``--seeds``, ``--epochs``, ``--device``, ``--jobs``, ``--out`` ...
    An empty default (``()``) means the spec's own statement."""
    p = Parser(prog=prog, description=description)
    p.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS), metavar="LIST",
                   help=f"comma-separated spec names under specs/ (default {','.join(DEFAULT_PROBLEMS)}; "
                        f"the paper's: {','.join(_paper.PROBLEMS)})")
    p.add_argument("--groupings", default=",".join(DEFAULT_GROUPINGS), metavar="LIST",
                   help="comma-separated groupings (default two,three)")
    p.add_argument("--methods", default=",".join(methods), metavar="LIST",
                   help=f"comma-separated surgery methods, arguments allowed{methods_help} "
                        f"(default {','.join(methods) or SPECS_OWN})")
    p.add_argument("--optimizers", default=",".join(optimizers), metavar="LIST",
                   help=f"comma-separated optimizers, arguments allowed{optimizers_help} "
                        f"(default {','.join(optimizers) or SPECS_OWN})")
    p.add_argument("--seeds", default="0", metavar="LIST", help="seeds: 0,1,2 or 0-4 (default 0; the paper: 0-4)")
    p.add_argument("--epochs", type=positive, default=DEFAULT_EPOCHS, metavar="N",
                   help=f"training epochs per run (default {DEFAULT_EPOCHS}; the paper trains far longer)")
    p.add_argument("--validate", choices=sorted(VALIDATE), default="spec",
                   help="checkpoint selection: the spec's own validate statement (default), or 'test': the "
                        "paper's protocol (validate = \"test every 100\")")
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu", help="default cpu")
    p.add_argument("--jobs", type=positive, default=None, metavar="N",
                   help="runs at a time, in local worker processes shared by every (problem, grouping) "
                        "cell (default: half the cores)")
    p.add_argument("--threads", type=positive, default=None, metavar="N", help="torch threads per run")
    p.add_argument("--spec", action="append", default=[], metavar="NAME=PATH",
                   help="the spec file of problem NAME (adds a problem or replaces specs/NAME.pinn); repeatable")
    p.add_argument("--out", metavar="DIR", default=out_default, help=f"output folder (default {out_default})")
    return p


def names(text: str, what: str) -> list[str]:
    from ..sweep._plan import split_values

    values = [v for v in split_values(text) if v]
    if not values:
        raise BenchError(f"{what}: no values")
    if len(set(values)) != len(values):
        raise BenchError(f"{what}: a value is listed twice")
    return values


def seeds(text: str) -> list[int]:
    from ..sweep._plan import parse_seeds

    return parse_seeds(text)


def spec_paths(problems: list[str], extra: list[str]) -> dict[str, str]:
    """problem -> spec file: ``--spec NAME=PATH`` first, else specs/NAME.pinn under the working
    directory or the checkout."""
    given: dict[str, str] = {}
    for item in extra:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise BenchError(f"--spec {item}: expected NAME=PATH")
        given[name.strip()] = path.strip()
    roots = [Path.cwd() / "specs", Path(__file__).resolve().parents[2] / "specs"]
    paths = {}
    for problem in problems:
        if problem in given:
            path = given[problem]
            if not os.path.isfile(path):
                raise BenchError(f"--spec {problem}={path}: no such spec file")
            paths[problem] = path
            continue
        for root in roots:
            if (root / f"{problem}.pinn").is_file():
                paths[problem] = str(root / f"{problem}.pinn")
                break
        else:
            raise BenchError(f"problem '{problem}': cannot find specs/{problem}.pinn (looked in "
                             f"{', '.join(str(r) for r in roots)}); pass --spec {problem}=PATH")
    return paths


@dataclass(frozen=True)
class Selection:
    """What a paper benchmark's command line selects (``--problems`` ... ``--seeds``)."""

    problems: list[str]
    groupings: list[str]
    methods: list[str]
    optimizers: list[str | None]  # [None]: the spec's own optimizer
    seeds: list[int]
    paths: dict[str, str]  # problem -> spec file


def selection(args) -> Selection:
    """The checked selection of the shared flags (BenchError on a bad value)."""
    problems = names(args.problems, "--problems")
    return Selection(problems=problems, groupings=names(args.groupings, "--groupings"),
                     methods=names(args.methods, "--methods"),
                     optimizers=names(args.optimizers, "--optimizers") if args.optimizers else [None],
                     seeds=seeds(args.seeds), paths=spec_paths(problems, args.spec))


def split_grid(values: dict[str, list[str]]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(grid, fixed): a setting with one value is fixed (it then stays out of the run folders' names)."""
    grid = {k: v for k, v in values.items() if len(v) > 1}
    fixed = {k: v[0] for k, v in values.items() if len(v) == 1}
    return grid, fixed


def fixed_settings(args, **more) -> dict[str, str]:
    fixed = {"epochs": str(args.epochs), "device": args.device, **more}
    if VALIDATE[args.validate]:
        fixed["validate"] = VALIDATE[args.validate]
    return fixed


@dataclass(frozen=True)
class Cell:
    """One sweep of a paper benchmark (a (problem, grouping[, optimizer]) cell): its own run folder
    and table; ``key`` is what the benchmark files the table under."""

    key: tuple
    spec: str
    out: str
    grid: dict
    fixed: dict


def run_cells(cells: list[Cell], seed_list: list[int], args) -> tuple[list[list[dict]], int]:
    """Every cell's unfinished runs in ONE pool (``--jobs`` runs at a time over all cells); returns
    each cell's table (one entry per setting), in order, and the worst exit code."""
    from ..sweep import Sweep, run_sweeps

    sweeps = [Sweep(c.spec, grid=c.grid, seeds=seed_list, fixed=c.fixed, out=c.out) for c in cells]
    reports = run_sweeps(sweeps, jobs=args.jobs, threads=args.threads,
                         fresh_processes=getattr(args, "fresh_processes", False))
    return [r.table for r in reports], max((r.exit_code for r in reports), default=EXIT_OK)


def base_name(value: str) -> str:
    """``sgd(lr = 1e-2)`` -> ``sgd``: the registry name a paper row is looked up by."""
    return re.split(r"[\s(]", value.strip(), maxsplit=1)[0]


def pct(value) -> float | None:
    """A measured rate (a fraction) in percent; None when absent."""
    return None if value is None or not math.isfinite(value) else 100.0 * value


def cell(value, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


def sci(mean, std=None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.2e}" if std is None else f"{mean:.2e} ± {std:.1e}"


def chain(values) -> str:
    return "→".join(cell(v) for v in values)


def write_outputs(out: str, stem: str, markdown: str, columns: list[str], rows: list[dict], figure) -> dict:
    from .._files import atomic_write_text
    from ..plots._style import save
    from .._files import write_csv

    paths = {"markdown": os.path.join(out, f"{stem}.md"), "csv": os.path.join(out, f"{stem}.csv"),
             "plot": os.path.join(out, f"{stem}.png")}
    atomic_write_text(paths["markdown"], markdown)
    write_csv(paths["csv"], columns, rows)
    save(figure, paths["plot"])
    return paths


def panels(n: int, width: float = 4.2, height: float = 3.0):
    from ..plots._style import new_figure

    cols = min(n, 3)
    rows = max(1, math.ceil(n / cols))
    fig = new_figure(width * cols, height * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


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
             f"training over five seeds.", "",
             "| problem | grouping | optimizer | runs | R_g→R_a→R_u | paper R_g→R_a→R_u | rel-L2 |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        paper = "-" if r["paper_R_g"] is None else chain((r["paper_R_g"], r["paper_R_a"], r["paper_R_u"]))
        lines.append(f"| {r['problem']} | {r['grouping']} | `{r['optimizer']}` | {r['completed']}/{r['runs']} | "
                     f"{chain((r['R_g'], r['R_a'], r['R_u']))} | {paper} | {sci(r['rel_l2_mean'], r['rel_l2_std'])} |")
    return "\n".join(lines) + "\n"


def figure(rows: list[dict]):
    """One panel per (problem, grouping): measured R_g and R_u per optimizer (bars), the paper's (dots)."""
    from ..plots._style import R_COLORS

    cells = list(dict.fromkeys((r["problem"], r["grouping"]) for r in rows)) or [("(none)", "")]
    fig, axes = panels(len(cells))
    for ax, (problem, grouping) in zip(axes, cells):
        members = [r for r in rows if (r["problem"], r["grouping"]) == (problem, grouping)]
        xs = list(range(len(members)))
        for k, (rate, shift) in enumerate((("R_g", -0.2), ("R_u", 0.2))):
            ax.bar([x + shift for x in xs], [r[rate] or 0.0 for r in members], width=0.4, color=R_COLORS[rate],
                   alpha=0.8, label=f"{rate} measured")
            paper = [(x + shift, r[f"paper_{rate}"]) for x, r in zip(xs, members) if r[f"paper_{rate}"] is not None]
            if paper:
                ax.plot(*zip(*paper), "o", color="black" if rate == "R_g" else "dimgray", markersize=4,
                        label=f"{rate} paper")
        ax.set_xticks(xs, [base_name(r["optimizer"]) for r in members], rotation=45, ha="right", fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_ylabel("conflict rate (%)")
        ax.set_title(f"{_paper.LABELS.get(problem, problem)}, {_paper.LABELS.get(grouping, grouping)}", fontsize=9)
        ax.legend(fontsize=6)
    return fig
