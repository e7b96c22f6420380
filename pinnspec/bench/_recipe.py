"""``pinnspec bench recipe``: each spec's own configuration beside ``recipe strong`` at equal wall time.

For each spec and seed: the spec trains as it is written (``--epochs N`` caps its epochs; a spec that trains in
stages gets its stages' epochs scaled to N in all, in their proportions, each at least 1), then again with
``--recipe 'strong(time = T s)'``, T the first run's training time, so that both had the same time.  Each run is
``pinnspec train`` in a fresh interpreter with ``--threads`` torch threads, one after another (never two at once);
a run whose folder already holds a completed result is not trained again.  Reported: the test rel-L2 of each
run's final model (the model at its last epoch: neither is chosen by the reference), the epochs and training
seconds of each, and their ratio; a spec without a reference shows "-".  A run that fails is a row saying why
(the bench goes on with the next spec, and exits 1 at the end).  Writes ``OUT/recipe.md`` and ``OUT/recipe.csv``.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os

from ._cli import BenchError, Parser, positive, run_main
from ._report import markdown_table, sci, write_outputs

__all__ = ["main", "build_parser"]

DEFAULT_SPECS = "specs/*.pinn"
COLUMNS = ["spec", "seed", "own_rel_l2", "own_epochs", "own_seconds", "recipe_rel_l2", "recipe_epochs",
           "recipe_seconds", "ratio", "failed"]


def build_parser() -> Parser:
    p = Parser(prog="pinnspec bench recipe", description=__doc__.split("\n\n")[0])
    p.add_argument("--specs", default=DEFAULT_SPECS, metavar="GLOB[,GLOB...]",
                   help=f"the specs (comma-separated paths or globs; default {DEFAULT_SPECS})")
    p.add_argument("--epochs", type=positive, default=None, metavar="N",
                   help="cap each spec's own configuration at N epochs (default: the spec's own)")
    p.add_argument("--seeds", type=positive, default=1, metavar="K", help="seeds 0 .. K-1 (default 1)")
    p.add_argument("--threads", type=positive, default=1, metavar="T", help="torch threads per run (default 1)")
    p.add_argument("--out", default=os.path.join("runs", "bench-recipe"), metavar="DIR",
                   help="output folder (default runs/bench-recipe)")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def spec_paths(text: str) -> list[str]:
    paths: list[str] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        found = sorted(glob.glob(item)) if any(c in item for c in "*?[") else [item]
        if not found or not all(os.path.isfile(p) for p in found):
            raise BenchError(f"--specs: no spec file matches '{item}'")
        paths += [p for p in found if p not in paths]
    return paths


def capped(path: str, epochs: int | None) -> list[str]:
    """The ``pinnspec train`` options that cap the spec at ``path`` at ``epochs`` epochs (none for None): ``--epochs``,
    or for a spec in stages a ``--set stage=...`` with each stage's epochs scaled to ``epochs`` in all."""
    if not epochs:
        return []
    from ..lang import SpecError, load

    try:
        stages = load(path).ir.training.stages
    except SpecError as err:
        raise BenchError(str(err)) from None
    if not stages:
        return ["--epochs", str(epochs)]
    total = sum(stage.epochs for stage in stages)
    scaled = [dataclasses.replace(stage, epochs=max(1, round(stage.epochs * epochs / total))) for stage in stages]
    return ["--set", "stage=" + "; ".join(stage.statement() for stage in scaled)]


def _train(argv: list[str], run_dir: str, threads: int) -> dict:
    """``pinnspec train ARGV --out RUN_DIR`` in a fresh interpreter (skipped where RUN_DIR holds a completed run);
    its result.json."""
    from ._common import run_fresh

    result_path = os.path.join(run_dir, "result.json")
    if os.path.isfile(result_path):
        with open(result_path, encoding="utf-8") as fh:
            done = json.load(fh)
        if done.get("status") == "completed":
            return done
    overwrite = ["--overwrite"] if os.path.isdir(run_dir) and os.listdir(run_dir) else []
    threads_env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    proc = run_fresh("pinnspec", ["train", *argv, "--out", run_dir, "--quiet", *overwrite], env=threads_env)
    if proc.returncode != 0 or not os.path.isfile(result_path):
        raise BenchError(f"pinnspec train {' '.join(argv)} failed (exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    with open(result_path, encoding="utf-8") as fh:
        return json.load(fh)


def _seconds(seconds: float) -> str:
    """A budget of ``seconds`` as the recipe reads it: plain decimals, to 0.1 ms (a short run is not 0 s)."""
    return f"{max(seconds, 1e-4):.4f}".rstrip("0").rstrip(".")


def _run(args) -> int:
    rows = []
    for path in spec_paths(args.specs):
        stem = os.path.splitext(os.path.basename(path))[0]
        for seed in range(args.seeds):
            folder = os.path.join(args.out, "runs", stem, f"seed{seed}")
            try:
                own_argv = [path, "--seed", str(seed)] + capped(path, args.epochs)
                own = _train(own_argv, os.path.join(folder, "own"), args.threads)
                seconds = float(own["train_time_s"])
                recipe = _train([path, "--seed", str(seed), "--recipe", f"strong(time = {_seconds(seconds)} s)"],
                                os.path.join(folder, "recipe"), args.threads)
            except BenchError as err:
                rows.append({**dict.fromkeys(COLUMNS), "spec": path, "seed": seed, "failed": str(err)})
                print(f"{path} seed {seed}: {err}", flush=True)
                continue
            own_error, recipe_error = own.get("rel_l2_final"), recipe.get("rel_l2_final")
            ratio = recipe_error / own_error if own_error and recipe_error is not None else None
            rows.append({"spec": path, "seed": seed, "own_rel_l2": own_error, "own_epochs": own["epochs_done"],
                         "own_seconds": seconds, "recipe_rel_l2": recipe_error,
                         "recipe_epochs": recipe["epochs_done"], "recipe_seconds": float(recipe["train_time_s"]),
                         "ratio": ratio, "failed": ""})
            print(f"{path} seed {seed}: own {sci(own_error)} in {seconds:.0f} s, recipe {sci(recipe_error)} in "
                  f"{float(recipe['train_time_s']):.0f} s", flush=True)
    text = markdown(rows, args)
    paths = write_outputs(args.out, "recipe", text, COLUMNS, rows)
    print(text)
    print(f"wrote {paths['markdown']} and {paths['csv']}")
    return 1 if any(r["failed"] for r in rows) else 0


def markdown(rows: list[dict], args) -> str:
    cap = f", the own configuration capped at {args.epochs} epochs" if args.epochs else ""
    lines = ["# pinnspec bench recipe", "",
             f"Each spec as written, then `--recipe 'strong(time = T s)'` with T the first run's training time"
             f"{cap}; {args.threads} torch thread(s) per run, one run at a time. Test rel-L2 of each run's final "
             "model.", ""]
    cells = [[r["spec"], r["seed"], sci(r["own_rel_l2"]), r["own_epochs"], f"{r['own_seconds']:.0f}",
              sci(r["recipe_rel_l2"]), r["recipe_epochs"], f"{r['recipe_seconds']:.0f}",
              "-" if r["ratio"] is None else f"{r['ratio']:.3g}"] for r in rows if not r["failed"]]
    lines += markdown_table(["spec", "seed", "own rel-L2", "own epochs", "own s", "recipe rel-L2", "recipe epochs",
                             "recipe s", "recipe / own"], cells, left=1)
    lines += [""] + [f"- {r['spec']} seed {r['seed']}: {r['failed']}" for r in rows if r["failed"]]
    return "\n".join(lines) + "\n"
