"""`pinnspec bench recipe`: a spec as written, then with the recipe for the same training time."""

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


def test_the_recipe_gets_the_time_the_spec_took(tmp_path, capsys):
    spec = tmp_path / "heat.pinn"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    assert bench.main("recipe", ["--specs", str(spec), "--out", str(out)]) == 0
    own = json.loads((out / "runs" / "heat" / "seed0" / "own" / "result.json").read_text())
    recipe = json.loads((out / "runs" / "heat" / "seed0" / "recipe" / "result.json").read_text())
    config = (out / "runs" / "heat" / "seed0" / "recipe" / "config.pinn").read_text()
    assert f"recipe strong(time = {own['train_time_s']:.4f}".rstrip("0").rstrip(".") + " s)" in config
    assert own["epochs_done"] == 40 and recipe["status"] == "completed"
    rows = (out / "recipe.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith(f"{spec},0,")
    # again: both runs are done, nothing trains
    assert bench.main("recipe", ["--specs", str(spec), "--out", str(out)]) == 0
    assert json.loads((out / "runs" / "heat" / "seed0" / "own" / "result.json").read_text()) == own


def test_a_spec_that_does_not_exist_is_one_error(tmp_path, capsys):
    assert bench.main("recipe", ["--specs", str(tmp_path / "none.pinn"), "--out", str(tmp_path)]) == 1
    assert "no spec file matches" in capsys.readouterr().err


def test_a_spec_whose_run_fails_is_a_row_and_the_next_spec_trains(tmp_path, capsys):
    """A staged spec refuses ``--epochs`` (each stage gives its own): its row says so; the other spec still runs."""
    staged = tmp_path / "astaged.pinn"
    staged.write_text(SPEC.replace("train epochs = 40, device = cpu", "stage adam(lr = 1e-3) epochs = 40\ntrain device = cpu"))
    plain = tmp_path / "heat.pinn"
    plain.write_text(SPEC)
    out = tmp_path / "out"
    assert bench.main("recipe", ["--specs", f"{staged},{plain}", "--epochs", "20", "--out", str(out)]) == 1
    table = (out / "recipe.md").read_text()
    assert f"- {staged} seed 0: pinnspec train" in table and "exclude each other" in table
    assert f"| {plain} | 0 |" in table
    assert json.loads((out / "runs" / "heat" / "seed0" / "recipe" / "result.json").read_text())["status"] == "completed"
