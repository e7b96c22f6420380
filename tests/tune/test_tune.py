"""`pinnspec tune`: trials of the recipe's open choices, each an ordinary run with a share of the time, scored on
the held-out residual; trial 0 is the recipe itself; the winner is written as `--set` lines that train."""

import csv
from pathlib import Path

import pytest

pytest.importorskip("optuna")

from pinnspec.lang import apply_overrides, load  # noqa: E402
from pinnspec.tune import Choice, recipe_choice, recipe_spec, tune  # noqa: E402
from pinnspec.tune import _tune  # noqa: E402

#: the engine tests' heat problem, with a Neumann condition (which the recipe leaves a loss) and a test
SPEC = (Path(__file__).parents[1] / "engine" / "data" / "heat_conditions.pinn").read_text() + """boundary flux on x = 0: u_x = pi*exp(-0.1*pi^2*t)
points pde 96, walls 16, ic 16, flux 16
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
test 200
train device = cpu
"""


@pytest.fixture
def spec_path(tmp_path) -> Path:
    path = tmp_path / "heat.pinn"
    path.write_text(SPEC)
    return path


def test_trials_are_scored_on_held_out_residuals_and_the_winner_trains(spec_path, tmp_path):
    out = tmp_path / "tune"
    report = tune(str(spec_path), time="8 s", trials=2, seed=0, out=str(out), log=lambda line: None)
    rows = report["rows"]
    base = recipe_spec(str(spec_path), {})
    recipe = recipe_choice(base)
    assert (rows[0]["width"], rows[0]["depth"], rows[0]["lr"]) == (recipe.width, recipe.depth, recipe.lr)
    complete = [r for r in rows if r["state"] == "complete"]
    assert report["winner"] == min(complete, key=lambda r: r["held_out"])  # the residual chooses, not rel_l2
    with open(out / "tune.csv") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)
    settings = dict(line.split(" = ", 1) for line in (out / "best.set").read_text().splitlines()
                    if not line.startswith("#"))
    winner = apply_overrides(load(spec_path), {"recipe": "strong", **settings})
    assert winner.ir.training.model.options["width"] == report["winner"]["width"]
    assert winner.ir.training.stages[0].optimizer.options["lr"] == pytest.approx(report["winner"]["lr"])
    assert "Winner: trial" in (out / "tune.md").read_text()


def test_a_trial_the_pruner_stops_ends_early(spec_path, tmp_path):
    class Pruning:
        def __init__(self):
            self.reports = []

        def report(self, value, step):
            self.reports.append((step, value))

        def should_prune(self):
            return True

    base = recipe_spec(str(spec_path), {})
    spec = apply_overrides(base, {**Choice(16, 2, 5e-3, None).overrides(base), "time": "60 s"})
    trial = Pruning()
    row, value = _tune._trial(spec, str(tmp_path / "run"), trial)
    assert row["state"] == "pruned" and row["epochs"] == _tune.REPORT_EVERY + 1  # the epoch in progress ends
    assert trial.reports[0][0] == _tune.REPORT_EVERY and trial.reports[0][1] > 0


def test_choices_write_only_what_differs_from_the_defaults(spec_path):
    base = recipe_spec(str(spec_path), {})
    overrides = Choice(24, 2, 3e-3, None).overrides(base)
    assert overrides["model"] == "mlp(width = 24, depth = 2)"  # tanh and xavier are mlp's defaults
    assert overrides["stage"].startswith("adam(lr = 0.003) epochs = 2000, dtype = float32; ssbroyden epochs = ")
