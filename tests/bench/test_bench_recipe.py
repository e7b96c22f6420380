"""`pinnspec bench recipe`: a spec as written, then with the recipe for the same training time."""

import csv
import json

from pinnspec import bench

SPEC = """problem heat
space x in [0, 1]
time t in [0, 1]
field u
equation pde: u_t - 0.1*u_xx = 0
initial ic: u = sin(pi*x)
boundary walls on x = 0, x = 1: u = 0
points pde 64, walls 16, ic 16
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
test 100
model mlp(width = 8, depth = 2)
train epochs = 40, device = cpu
"""


def test_a_spec_that_does_not_exist_is_one_error(tmp_path, capsys):
    assert bench.main("recipe", ["--specs", str(tmp_path / "none.pinn"), "--out", str(tmp_path)]) == 1
    assert "no spec file matches" in capsys.readouterr().err


def test_the_recipe_gets_the_time_the_spec_took_and_a_spec_whose_run_fails_is_a_row(tmp_path, capsys):
    """The recipe runs for the seconds the spec's own run took.  A spec that does not check is a row saying why and
    the bench goes on (exit 1 at the end); a spec in stages gets ``--epochs 30`` as its stages' epochs scaled in
    proportion (40 + 20 -> 20 + 10).  Run again, nothing trains."""
    broken = tmp_path / "abroken.pinn"
    broken.write_text(SPEC.replace("field u", "field u, u"))
    staged = tmp_path / "heat.pinn"
    staged.write_text(SPEC.replace("train epochs = 40, device = cpu", "stage adam(lr = 1e-3) epochs = 40\n"
                                   "stage lbfgs(history = 10) epochs = 20, dtype = float64\ntrain device = cpu"))
    out = tmp_path / "out"
    argv = ["--specs", f"{broken},{staged}", "--epochs", "30", "--out", str(out)]
    assert bench.main("recipe", argv) == 1
    table = (out / "recipe.md").read_text()
    assert f"- {broken} seed 0:" in table and "is already declared" in table
    assert f"| {staged} | 0 |" in table
    runs = out / "runs" / "heat" / "seed0"
    config = (runs / "own" / "config.pinn").read_text()
    assert ") epochs = 20, dtype = float32" in config and ") epochs = 10, dtype = float64" in config
    own = json.loads((runs / "own" / "result.json").read_text())
    assert own["epochs_done"] == 30
    assert json.loads((runs / "recipe" / "result.json").read_text())["status"] == "completed"
    recipe_config = (runs / "recipe" / "config.pinn").read_text()
    assert f"recipe strong(time = {own['train_time_s']:.4f}".rstrip("0").rstrip(".") + " s)" in recipe_config
    rows = list(csv.DictReader(open(out / "recipe.csv")))
    assert [(r["spec"], bool(r["failed"])) for r in rows] == [(str(broken), True), (str(staged), False)]
    assert bench.main("recipe", argv) == 1  # again: both runs of the staged spec are done, nothing trains
    assert json.loads((runs / "own" / "result.json").read_text()) == own
