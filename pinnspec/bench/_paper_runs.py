"""What the paper benches (gum, q2 ... q6) share: their command line (``--problems`` ... ``--seeds``), the
problems' spec files, and the sweeps they run, one per (problem, grouping[, ...]) cell, in one pool."""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import _paper
from ._cli import EXIT_OK, BenchError, Parser, positive

DEFAULT_PROBLEMS = ("burgers", "schrodinger")
DEFAULT_GROUPINGS = ("two", "three")
DEFAULT_EPOCHS = 200
SPECS_OWN = "the spec's own"
#: --validate test: the paper's selection protocol (validate on the test points every 100 epochs)
VALIDATE = {"spec": None, "test": "test every 100"}


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
    from ..sweep import split_values

    values = [v for v in split_values(text) if v]
    if not values:
        raise BenchError(f"{what}: no values")
    if len(set(values)) != len(values):
        raise BenchError(f"{what}: a value is listed twice")
    return values


def seeds(text: str) -> list[int]:
    from ..sweep import parse_seeds

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
    """The settings every run of a paper benchmark shares; the paper's plain runs (surgery none, no alignment)
    count their conflict statistics at every step, as its tables do (`train diagnostics = every`)."""
    fixed = {"epochs": str(args.epochs), "device": args.device, "diagnostics": "every", **more}
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


def gua_statement(spec_path: str) -> str:
    """The spec's own ``align`` value when it is a GUA one (keeps the paper's rho per PDE), else ``gua``."""
    with open(spec_path, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"^[ \t]*align[ \t]+(gua\b[^#\n]*)", text, flags=re.MULTILINE)
    return m.group(1).strip() if m else "gua"


def improvement(base: float | None, gua: float | None) -> float | None:
    """Imp. % = 100 (1 - E_GUA / E_base)."""
    if base is None or gua is None or not (math.isfinite(base) and math.isfinite(gua)) or base == 0:
        return None
    return 100.0 * (1.0 - gua / base)


def base_name(value: str) -> str:
    """``sgd(lr = 1e-2)`` -> ``sgd``: the registry name a paper row is looked up by."""
    return re.split(r"[\s(]", value.strip(), maxsplit=1)[0]
