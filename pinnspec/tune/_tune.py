"""``pinnspec tune SPEC --time T``: a small search over a recipe's few open choices, judged on held-out residuals.

The spec is trained with its recipe (its own ``recipe`` statement, else ``recipe strong``); the search varies what
the recipe fixes by rule of thumb: the network's width and depth, Adam's learning rate and, where the recipe chose
Fourier features, one factor on all their scales.  Each trial is an ordinary run (``OUT/trials/NNN``) with an
equal share of the time, ``train time = T / trials``; trial 0 is the recipe as it stands.  Optuna's TPE sampler
proposes the trials (seeded: ``--seed``) and its median pruner stops a trial whose held-out residual, measured
every `REPORT_EVERY` epochs, trails the median of the earlier trials at the same epoch.

A trial's score is the summed task losses of its final model at held-out points: points drawn apart from any
training points (`pinnspec.engine.Evaluation.held_out`), the same for every trial.  A reference or an exact
solution never scores a trial; where the spec has one, the report gives the winner's and the recipe's test
errors after the choice, for information.  Writes ``OUT/tune.md``, ``OUT/tune.csv`` (one row per trial) and
``OUT/best.set`` (the winner as ``KEY = VALUE`` lines, as ``pinnspec train --set`` takes them).
"""

from __future__ import annotations

import math
import os
import time as clock
from dataclasses import dataclass

#: epochs between a trial's held-out measurements (what the pruner compares)
REPORT_EVERY = 250
WIDTHS = (16, 64, 8)  # low, high, step
DEPTHS = (2, 4)
LEARNING_RATES = (1e-3, 2e-2)
FOURIER_FACTORS = (0.5, 2.0)
COLUMNS = ["trial", "state", "width", "depth", "lr", "fourier_factor", "held_out", "epochs", "seconds",
           "rel_l2", "run_dir"]


class TuneError(Exception):
    """A user's mistake in the tune command (printed as one line)."""


@dataclass(frozen=True)
class Choice:
    """One trial's values of the open choices."""

    width: int
    depth: int
    lr: float
    fourier_factor: float | None  # None: the recipe's network has no Fourier features

    def overrides(self, base) -> dict[str, str]:
        """The ``--set`` values of this choice on the recipe's spec ``base``."""
        model = base.ir.training.model
        options = dict(model.kwargs)
        options.update(width=self.width, depth=self.depth)
        if self.fourier_factor is not None:
            scales = options["fourier"]
            scales = tuple(s * self.fourier_factor for s in scales) if isinstance(scales, tuple) else \
                scales * self.fourier_factor
            options["fourier"] = scales
        stages = list(base.ir.training.stages)
        first = stages[0]
        adam = dict(first.optimizer.kwargs)
        adam["lr"] = self.lr
        return {"model": _call("model", model.name, options),
                "stage": "; ".join([first.statement(_call("stage", first.optimizer.name, adam))]
                                   + [s.statement(_call("stage", s.optimizer.name, dict(s.optimizer.kwargs)))
                                      for s in stages[1:]])}


def _value(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_value(v) for v in value) + ")"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _call(kind: str, name: str, options: dict) -> str:
    """``name(key = value, ...)`` with the arguments that differ from their defaults (`catalog`)."""
    from .. import catalog

    defaults = catalog.SECOND_ORDER_STAGES.get(name) if kind == "stage" else None
    defaults = defaults or catalog.known("optimizer" if kind == "stage" else kind).get(name, {})
    given = {k: v for k, v in options.items() if k not in defaults or defaults[k] != v}
    return f"{name}({', '.join(f'{k} = {_value(v)}' for k, v in given.items())})" if given else name


def recipe_spec(path: str, overrides: dict[str, str]):
    """The spec at ``path`` with its recipe (``recipe strong`` where it has none) and ``overrides``."""
    from ..lang import apply_overrides, load

    spec = load(path)
    wanted = dict(overrides)
    if not spec.recipe and "recipe" not in wanted:
        wanted["recipe"] = "strong"
    spec = apply_overrides(spec, wanted)
    if not spec.ir.training.stages or spec.ir.training.stages[0].second_order:
        raise TuneError(f"{path}: tune searches the recipe's stages (Adam, then a quasi-Newton finisher); this spec "
                        "gives its own epochs or optimizer: leave them to the recipe")
    return spec


def recipe_choice(base) -> Choice:
    """The recipe's own values of the open choices (trial 0)."""
    model = base.ir.training.model.options
    fourier = model.get("fourier")
    return Choice(int(model["width"]), int(model["depth"]), float(base.ir.training.stages[0].optimizer.options["lr"]),
                  1.0 if base.ir.training.model.name == "fourier_mlp" and fourier else None)


def tune(path: str, *, time: str, trials: int, seed: int, out: str, overrides: dict[str, str] | None = None,
         log=print) -> dict:
    """Run the search (``time``: its wall time as a spec writes it, e.g. ``"30 min"``); the report (rows, the
    winner, the recipe's trial); writes OUT/tune.md, .csv, best.set."""
    import optuna

    from ..lang import apply_overrides, flag_text

    base = recipe_spec(path, dict(overrides or {}))
    seconds = apply_overrides(base, {"time": time}, {"time": flag_text("time", time)}).ir.training.setting("time")
    default = recipe_choice(base)
    share = seconds / trials
    rows: list[dict] = []

    def objective(trial: optuna.Trial) -> float:
        width = trial.suggest_int("width", *WIDTHS[:2], step=WIDTHS[2])
        depth = trial.suggest_int("depth", *DEPTHS)
        lr = trial.suggest_float("lr", *LEARNING_RATES, log=True)
        factor = trial.suggest_float("fourier_factor", *FOURIER_FACTORS, log=True) \
            if default.fourier_factor is not None else None
        choice = Choice(width, depth, lr, factor)
        spec = apply_overrides(base, {**choice.overrides(base), "time": f"{share:.6g} s", "seed": str(seed)})
        run_dir = os.path.join(out, "trials", f"{trial.number:03d}")
        row, value = _trial(spec, run_dir, trial)
        rows.append({"trial": trial.number, "width": width, "depth": depth, "lr": lr, "fourier_factor": factor,
                     **row})
        log(f"trial {trial.number}: width {width}, depth {depth}, lr {lr:.3g}"
            + (f", fourier x{factor:.3g}" if factor is not None else "")
            + f": held-out residual {row['held_out']:.3e} ({row['state']}, {row['epochs']} epochs)")
        if row["state"] == "pruned":
            raise optuna.TrialPruned()
        return value

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=REPORT_EVERY))
    params = {"width": default.width, "depth": default.depth, "lr": default.lr}
    if default.fourier_factor is not None:
        params["fourier_factor"] = 1.0
    study.enqueue_trial(params)
    study.optimize(objective, n_trials=trials)
    complete = [r for r in rows if r["state"] == "complete" and math.isfinite(r["held_out"])]
    if not complete:
        raise TuneError("no trial completed (each diverged or was pruned): give more --time")
    winner = min(complete, key=lambda r: r["held_out"])
    recipe_row = rows[0]
    best = Choice(winner["width"], winner["depth"], winner["lr"], winner["fourier_factor"]).overrides(base)
    report = {"rows": rows, "winner": winner, "recipe": recipe_row, "settings": best}
    _write(out, path, report, seconds, trials, seed)
    return report


def _trial(spec, run_dir: str, trial) -> tuple[dict, float]:
    """Train one trial; its row and held-out residual (pruned trials stop early)."""
    from ..engine import Trainer

    trainer = Trainer(spec, run_dir, progress=False, log=None)
    pruned = False

    def measure() -> float:
        return trainer.monitor.held_out_loss(trainer.model, trainer.params, trainer.plan.engine)

    def before_epoch(epoch: int) -> None:
        nonlocal pruned
        if epoch and epoch % REPORT_EVERY == 0 and not pruned:
            trial.report(measure(), epoch)
            if trial.should_prune():
                pruned = True
                trainer.request_stop()

    started = clock.perf_counter()
    result = trainer.run(before_epoch=before_epoch)
    value = measure() if result.status != "diverged" else math.inf
    if not math.isfinite(value):
        value = math.inf
    state = "pruned" if pruned else ("diverged" if result.status == "diverged" else "complete")
    return {"state": state, "held_out": value, "epochs": result.epochs_done,
            "seconds": clock.perf_counter() - started, "rel_l2": result.rel_l2, "run_dir": run_dir}, value


def _write(out: str, path: str, report: dict, seconds: float, trials: int, seed: int) -> None:
    from .._files import atomic_write_text, write_csv

    winner, recipe = report["winner"], report["recipe"]
    lines = [f"# pinnspec tune {path}", "",
             f"{trials} trials of {seconds / trials:.0f} s each ({seconds:.0f} s in all), seed {seed}: width, depth, "
             "Adam's learning rate" + (" and a factor on the Fourier scales" if winner["fourier_factor"] is not None
                                       else "") + " around the recipe (trial 0). Score: the summed task losses of "
             "the final model at held-out points (never the reference).", "",
             "| trial | state | width | depth | lr | Fourier factor | held-out residual | epochs | seconds | test rel-L2 "
             "(not used) |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        factor = "-" if r["fourier_factor"] is None else f"{r['fourier_factor']:.3g}"
        rel = "-" if r["rel_l2"] is None else f"{r['rel_l2']:.3e}"
        lines.append(f"| {r['trial']} | {r['state']} | {r['width']} | {r['depth']} | {r['lr']:.3g} | {factor} | "
                     f"{r['held_out']:.3e} | {r['epochs']} | {r['seconds']:.0f} | {rel} |")
    lines += ["", f"Winner: trial {winner['trial']}, held-out residual {winner['held_out']:.3e} against the recipe's "
                  f"{recipe['held_out']:.3e} (trial 0, {recipe['state']})."]
    if winner["rel_l2"] is not None and recipe["rel_l2"] is not None:
        lines.append(f"Test rel-L2, after the choice: {winner['rel_l2']:.3e} against the recipe's "
                     f"{recipe['rel_l2']:.3e}.")
    lines += ["", "Train it: `pinnspec train " + path + " --recipe strong "
              + " ".join(f"--set '{k}={v}'" for k, v in report["settings"].items()) + "` (OUT/best.set holds them)."]
    os.makedirs(out, exist_ok=True)
    atomic_write_text(os.path.join(out, "tune.md"), "\n".join(lines) + "\n")
    write_csv(os.path.join(out, "tune.csv"), COLUMNS, report["rows"])
    best = [f"# pinnspec tune {path}: trial {winner['trial']} of {trials}, held-out residual {winner['held_out']:.3e}"]
    best += [f"{k} = {v}" for k, v in report["settings"].items()]
    atomic_write_text(os.path.join(out, "best.set"), "\n".join(best) + "\n")
