"""The command line of ``pinnspec tune``."""

from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pinnspec tune",
        description="Search the recipe's open choices (network width and depth, Adam's learning rate, the Fourier "
                    "scales) for a spec, each trial an ordinary run with an equal share of --time, judged on the "
                    "residual at held-out points (never the reference); writes OUT/tune.md, tune.csv, best.set.")
    p.add_argument("file", metavar="SPEC")
    p.add_argument("--time", required=True, metavar="T", help="the whole search's wall time, e.g. '30 min'")
    p.add_argument("--trials", type=int, default=6, metavar="N", help="trials, the recipe's own first (default 6)")
    p.add_argument("--seed", type=int, default=0, help="the sampler's and every trial's seed (default 0)")
    p.add_argument("--set", dest="set_values", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting for every trial, as train --set takes it (e.g. device=cpu)")
    p.add_argument("--out", metavar="DIR", default=None, help="output folder (default runs/tune-SPEC_STEM)")
    return p


def main(argv: list[str] | None = None) -> int:
    from ..lang import SpecError
    from ._tune import TuneError, tune

    args = build_parser().parse_args(argv)
    try:
        if args.trials < 1:
            raise ValueError(f"--trials must be at least 1, got {args.trials}")
        overrides = {}
        for item in args.set_values:
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--set expects KEY=VALUE, got '{item}'")
            overrides[key.strip()] = value.strip()
        out = args.out or os.path.join("runs", f"tune-{os.path.splitext(os.path.basename(args.file))[0]}")
        tune(args.file, time=args.time, trials=args.trials, seed=args.seed, out=out, overrides=overrides,
             log=lambda line: print(line, file=sys.stderr))
    except (ValueError, TuneError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except SpecError as err:
        print(err.render(), file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {err.filename}: {err.strerror}", file=sys.stderr)
        return 1
    print(open(os.path.join(out, "tune.md"), encoding="utf-8").read(), end="")
    return 0
