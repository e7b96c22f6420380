"""``pinnspec sweep``: the command line of a sweep."""

from __future__ import annotations

import argparse
import sys

from ._grid import COMMAND_LINE, Sweep, SweepError, parse_seeds, split_values

EXIT_OK, EXIT_USER = 0, 1

DESCRIPTION = """\
A grid of training runs: spec x settings x seeds.  FILE is a sweep file (.toml)
or a spec (.pinn); the flags add to (and override) what a sweep file says.
Every run gets a folder OUT/<key=value>__...__seed=<s>; a run whose result.json
says completed (or diverged) is skipped when the sweep is run again, one with a
checkpoint is resumed.  The table goes to OUT/summary.md and OUT/summary.csv.

  pinnspec sweep specs/burgers.pinn --grid surgery=config,pcgrad --grid align=gua,none \\
      --seeds 0,1,2 --set epochs=2000 --out runs/sweep-burgers
  pinnspec sweep sweeps/burgers.toml --jobs 2
  pinnspec sweep sweeps/burgers.toml --ray auto
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a bad command line is a user error: exit 1
        self.print_usage(sys.stderr)
        self.exit(EXIT_USER, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pinnspec sweep", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="a sweep file (.toml) or a spec (.pinn)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a grid axis: any training statement or train setting, e.g. --grid surgery=config,pcgrad "
                        "--grid optimizer='adam(lr = 1e-3),sgd' (commas inside parentheses do not split)")
    p.add_argument("--set", dest="set_values", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting for every run, e.g. --set epochs=2000 --set grouping=two")
    p.add_argument("--seeds", metavar="LIST", help="seeds, e.g. 0,1,2 or 0-4 (default: the spec's seed)")
    p.add_argument("--out", metavar="DIR", help="the sweep's folder (default: runs/sweep-<name>)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="local worker processes (default: half the cores, 1 on a 2-core machine); with --ray, "
                        "the most runs in flight (default: as many as the cluster schedules)")
    p.add_argument("--threads", type=int, metavar="T",
                   help="torch threads per run (default: max(1, cores // jobs), cores of this machine or of the "
                        "Ray cluster); the same T on the same kind of machine gives the same numbers")
    p.add_argument("--ray", metavar="auto|ADDRESS",
                   help="run on a Ray cluster (pip install 'pinnspec[ray]'): 'auto' joins the running cluster "
                        "or starts a local one; every node must see the spec and OUT at the same paths")
    p.add_argument("--gpus-per-run", type=float, default=0.0, metavar="G",
                   help="with --ray: GPUs each run asks for (default 0)")
    p.add_argument("--together", action="store_true",
                   help="runs that differ only in their update chain (surgery, align, optimizer, schedule, weights; and "
                        "seed, where the points do not depend on it) train as one group in one worker: in lockstep, their losses and G as one batched graph "
                        "(compile = on or graphs; on a GPU, fewer and larger kernels)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and what would happen to each; run nothing")
    return p


def _pairs(items: list[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SweepError(f"{flag} expects KEY=VALUE, got '{item}'")
        pairs.append((key.strip(), value.strip()))
    return pairs


def sweep_from_args(args) -> Sweep:
    """The sweep a command line describes (a sweep file plus the flags)."""
    if args.file.endswith(".toml"):
        base = Sweep.from_file(args.file)
        spec, grid, fixed, seeds, out, origin = base.spec, dict(base.grid), dict(base.fixed), base.seeds, base.out, \
            base.origin
    else:
        spec, grid, fixed, seeds, out, origin = args.file, {}, {}, None, None, COMMAND_LINE
    for key, value in _pairs(args.grid, "--grid"):
        values = split_values(value)
        if any(not v for v in values):
            raise SweepError(f"--grid {key}: error: an empty value in '{value}'")
        grid[key] = values
        fixed.pop(key, None)
    for key, value in _pairs(args.set_values, "--set"):
        fixed[key] = value
        grid.pop(key, None)
    if args.seeds is not None:
        seeds = parse_seeds(args.seeds)
    if args.out is not None:
        out = args.out
    return Sweep(spec=spec, grid=grid, seeds=seeds, fixed=fixed, out=out, origin=origin)


def main(argv: list[str] | None = None) -> int:
    """``pinnspec sweep ARGS``: 0 when every run finished (completed or diverged),
    1 for a user error (nothing started) or when a run failed, 130 on Ctrl-C."""
    from ..lang import SpecError
    from ._sweep import run_sweep
    from ._table import markdown

    args = build_parser().parse_args(argv)
    for flag in ("jobs", "threads"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            print(f"pinnspec sweep: error: --{flag} must be at least 1", file=sys.stderr)
            return EXIT_USER
    if args.gpus_per_run and not args.ray:
        print("pinnspec sweep: error: --gpus-per-run is for Ray runs (--ray auto|ADDRESS)", file=sys.stderr)
        return EXIT_USER
    try:
        sweep = sweep_from_args(args)
        report = run_sweep(sweep, jobs=args.jobs, threads=args.threads, ray=args.ray,
                           gpus_per_run=args.gpus_per_run, dry_run=args.dry_run, together=args.together)
    except SweepError as err:
        print(str(err), file=sys.stderr)
        return EXIT_USER
    except SpecError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_USER
    except ImportError as err:
        if args.ray and getattr(err, "name", None) == "ray":
            print("pinnspec sweep: error: --ray needs Ray: pip install 'pinnspec[ray]'", file=sys.stderr)
            return EXIT_USER
        raise
    if args.dry_run:
        return EXIT_OK
    print(markdown(report.table, list(sweep.grid)), end="")
    print(f"\nwritten to {report.paths['markdown']}, {report.paths['csv']} and {report.paths['runs']}")
    for name in report.failed:
        print(f"error: run {name} failed: {report.outcomes[name]['error']}", file=sys.stderr)
    return report.exit_code
