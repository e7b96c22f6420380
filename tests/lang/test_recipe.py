"""`recipe strong`: the training statements a spec leaves out, written out with a reason each.

Golden files hold the expansion of PINNacle's cases and the paper's specs (``pinnspec show --stage recipe``;
regenerate with PINNSPEC_UPDATE_GOLDEN=1 after an intended change and review the diff); the rest checks the
precedence of what a user writes, the wall-time values, and the recipe's arithmetic against independent counts."""

import math
import os
from pathlib import Path

import pytest
import sympy

from pinnspec.lang import SpecError, apply_overrides, load, loads
from pinnspec.lang import _recipe

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
CASES = sorted((ROOT / "benchmarks" / "pinnacle" / "cases").glob("*.pinn"))
PAPER = sorted((ROOT / "specs").glob("*.pinn"))

BURGERS = """problem burgers
space x in [-1, 1]
time t in [0, 1]
field u
equation pde: u_t + u*u_x - 0.01/pi*u_xx = 0
initial ic: u = -sin(pi*x)
boundary walls on x = -1, x = 1: u = 0
boundary flux on x = -1: u_x = 0
"""


def _statements(spec) -> list[str]:
    """The statements in force (comments and blank lines left out)."""
    return [line for line in spec.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("path", CASES + PAPER, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_expansion(path):
    spec = apply_overrides(load(path), {"recipe": "strong"})
    text = spec.source.replace(str(ROOT), "ROOT")
    golden = GOLDEN / f"recipe__{path.parent.name}__{path.stem}.txt"
    if os.environ.get("PINNSPEC_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    again = loads(spec.source, filename=str(path))  # the expansion is a spec: it repeats the run
    assert again.ir == spec.ir and again.ir.training.recipe is None


def test_in_the_file_a_written_statement_wins():
    spec = loads(BURGERS + "model mlp(width = 10, depth = 2)\ntrain epochs = 300\nrecipe strong\n")
    statements = _statements(spec)
    assert "model mlp(width = 10, depth = 2)" in statements  # the user's network, not the recipe's
    assert not any(s.startswith("model ") and "width = 32" in s for s in statements)
    assert not any(s.startswith("stage ") for s in statements)  # `train epochs` written: no stages
    assert "optimizer adam(lr = 5e-3)" in statements
    assert spec.ir.training.setting("epochs") == 300
    assert "enforce ic, walls" in statements  # the Neumann condition stays a loss
    assert spec.recipe == "strong"


def test_on_the_command_line_the_recipe_replaces_and_other_flags_win():
    spec = apply_overrides(loads(BURGERS + "model mlp(width = 10, depth = 2)\ntrain epochs = 300, seed = 3\n"),
                           {"recipe": "strong", "optimizer": None, "schedule": "constant"})
    statements = _statements(spec)
    assert "model mlp(width = 32, depth = 3, activation = tanh, init = xavier)" in statements
    assert "schedule constant" in statements and "schedule cosine(lr_min = 1e-4)" not in statements
    assert [s for s in statements if s.startswith("stage ")] == [
        "stage adam(lr = 5e-3) epochs = 2000", "stage ssbroyden epochs = 4000, dtype = float64, resample = 500"]
    assert spec.ir.training.setting("seed") == 3  # the spec's other train settings stay


def test_a_budget_ends_the_stages_by_time():
    spec = loads(BURGERS + "recipe strong(time = 10 min)\n")
    assert spec.ir.training.setting("time") == 600.0
    assert "train time = 10 min" in _statements(spec)
    assert spec.ir.training.stages[-1].epochs == _recipe.QUASI_NEWTON_CAP
    short = loads(BURGERS + "recipe strong(time = 90 s)\n")
    assert "width = 20" in short.ir.training.model.__str__()


@pytest.mark.parametrize("value, seconds", [("10 min", 600.0), ("90 s", 90.0), ("1.5 h", 5400.0), ("45", 45.0)])
def test_wall_times(value, seconds):
    assert loads(BURGERS + f"train time = {value}\n").ir.training.setting("time") == seconds


@pytest.mark.parametrize("line, message", [
    ("train time = 10 mins", "unknown unit of time 'mins'; did you mean 'min'?"),
    ("train time = 0 s", "'time' must be above 0"),
    ("train time = fast", "'time' is a wall time, e.g. 10 min"),
    ("train epochs = 10 min", "'epochs' is not a wall time"),
    ("model mlp(width = 10 x)", "a wall time (10 x) is a value of 'time' alone"),
    ("recipe strong(time = 3 weeks)", "unknown unit of time 'weeks'"),
    ("recipe strong(time = -5 min)", "unexpected 'min': a wall time is a number above 0 and a unit, as in 10 min"),
    ("train time = ten minutes", "unexpected 'minutes': a wall time is a number above 0 and a unit"),
    ("recipe strongest", "unknown recipe 'strongest'; did you mean 'strong'?"),
    ("recipe strong\nrecipe strong", "a second 'recipe' statement"),
])
def test_bad_recipes_and_times_are_located_errors(line, message):
    with pytest.raises(SpecError) as err:
        loads(BURGERS + line + "\n", filename="b.pinn")
    text = err.value.render()
    assert message in text and ("b.pinn:9:" in text or "b.pinn:10:" in text)


def test_parameter_count_matches_torch():
    torch = pytest.importorskip("torch")
    from pinnspec.models import MLP

    for inputs, outputs, width, depth in [(2, 1, 32, 3), (5, 3, 48, 4), (64, 1, 48, 3)]:
        net = MLP(inputs, outputs, width, depth, "tanh")
        assert _recipe._mlp_parameters(inputs, outputs, width, depth) == sum(p.numel() for p in net.parameters())
    del torch


def test_the_parameter_count_sums_the_networks_of_each_set_of_coordinates():
    """``field u, a(x, y)`` in (x, y, t): two networks; the count the recipe states is the built model's."""
    pytest.importorskip("torch")
    from pinnspec.engine import Trainer

    spec = apply_overrides(loads("""problem two
space x in [0, 1], y in [0, 1]
time t in [0, 1]
field u, a(x, y)
equation heat: u_t = a*u_xx + u_yy
"""), {"recipe": "strong", "device": "cpu"})
    reason = next(line for line in spec.source.splitlines() if "small tanh networks" in line)
    count = sum(p.numel() for p in Trainer(spec).model.parameters())
    assert f"2 small tanh networks, one per set of coordinates ({count:,} parameters in all)" in reason
    fourier = apply_overrides(loads(spec.source.split("# --- recipe")[0].replace("u_yy", "u_yy + sin(20*pi*x)")),
                              {"recipe": "strong", "device": "cpu"})  # the data oscillate: Fourier features
    count = sum(p.numel() for p in Trainer(fourier).model.parameters())
    assert "fourier_mlp" in fourier.source and f"({count:,} parameters)" in fourier.source


@pytest.mark.parametrize("fields, width", [("u, a", 40), ("u, a(x, y)", 32), ("u, v, a(x, y)", 40)])
def test_the_width_follows_the_fields_of_one_network(fields, width):
    """32 units, 8 more per further field of one network: `field u, a(x, y)` gives two networks of one field."""
    spec = apply_overrides(loads(f"""problem two
space x in [0, 1], y in [0, 1]
time t in [0, 1]
field {fields}
equation heat: u_t = a*u_xx + u_yy
"""), {"recipe": "strong"})
    assert f"model mlp(width = {width}, depth = 3, activation = tanh, init = xavier)" in _statements(spec)


@pytest.mark.parametrize("rows, noise, width", [(2500, ", noise = 0.1", 14), (400, ", noise = 0.1", 8),
                                                (100, ", noise = 0.1", 8), (100000, ", noise = 0.1", 40),
                                                (2500, "", 40)])
def test_noisy_observations_narrow_the_network_and_stop_the_run(tmp_path, rows, noise, width):
    """n noisy rows in d = 3 coordinates: round(n^(1/3)) units (at least 8, at most the recipe's 40), and `train
    stop = balance`; observations without stated noise change neither."""
    lines = ["x,y,t,u"] + [f"{k / rows},{(k * 7 % rows) / rows},{(k * 13 % rows) / rows},0" for k in range(rows)]
    (tmp_path / "obs.csv").write_text("\n".join(lines) + "\n")
    spec = apply_overrides(loads(f"""problem inv
space x in [0, 1], y in [0, 1]
time t in [0, 1]
field u, a
equation heat: u_t = a*u_xx + u_yy
data obs from "{(tmp_path / 'obs.csv').as_posix()}": u{noise}
"""), {"recipe": "strong"})
    assert f"model mlp(width = {width}, depth = 3, activation = tanh, init = xavier)" in _statements(spec)
    assert ("train stop = balance" in _statements(spec)) == bool(noise)


def test_frequencies_are_found_in_the_data():
    spec = load(ROOT / "benchmarks" / "pinnacle" / "cases" / "heat2dms.pinn")
    found = _recipe._frequencies(spec.ir)
    assert math.isclose(found["x"], 20 * math.pi) and math.isclose(found["y"], math.pi) and "t" not in found
    assert sympy.pi  # the exact solution (exp in t) is not read: t has no frequency


TABLE_SPEC = """problem tab
space x in [{lo}, 1], y in [{lo}, 1]
field u
let k = table("{path}", column = "k"{at})
equation pde: k*lap(u) = 1
boundary walls on boundary: u = 0
recipe strong
"""


@pytest.mark.parametrize("oscillates, lo, at, x_frequency", [
    (True, 0, "", 16 * math.pi),  # 8 periods across [0, 1]
    (True, -1, ", at = ((x + 1)/2, (y + 1)/2)", 8 * math.pi),  # the same 8 periods across [-1, 1]: half the frequency
    (False, 0, "", None),  # a plane
], ids=["table", "table read at (x + 1)/2", "plane"])
def test_a_tables_oscillation_is_found_by_its_spectrum(tmp_path, oscillates, lo, at, x_frequency):
    import numpy as np

    from pinnspec.sampling._spectrum import GRID_POINTS

    axis = np.linspace(0.0, 1.0, 101)
    x, y = (a.ravel() for a in np.meshgrid(axis, axis, indexing="ij"))
    k = 2 + (np.sin(2 * np.pi * 8 * x) * (1 + y) if oscillates else x + 2 * y)
    path = tmp_path / "k.csv"
    path.write_text("x,y,k\n" + "\n".join(f"{a:.17g},{b:.17g},{c:.17g}" for a, b, c in zip(x, y, k)) + "\n")
    spec = loads(TABLE_SPEC.format(lo=lo, path=path.as_posix(), at=at))
    model = next(line for line in _statements(spec) if line.startswith("model"))
    if not oscillates:
        assert model.startswith("model mlp(") and _recipe._table_frequencies(spec.ir) == {}
        return
    found, table = _recipe._table_frequencies(spec.ir)["x"]
    n = int(GRID_POINTS ** 0.5)
    assert table == "k" and abs(found - x_frequency) <= math.pi * (n - 1) / n / (1 - lo)  # half a bin, carried by at
    assert "in the table 'k'" in spec.source
    scales = [float(v) for v in model.split("fourier = (")[1].split(")")[0].split(",")]
    assert math.isclose(scales[0], 2 * found / 3, rel_tol=1e-2) and math.isclose(scales[1], 1 / (1 - lo), rel_tol=1e-2)


def test_the_recipe_is_not_read_from_the_reference():
    """The choices depend on the problem, never on its exact solution or reference (a user may not have one)."""
    with_exact = BURGERS + "exact u = sin(40*pi*x)\ntest 100\n"
    a = [s for s in _statements(loads(with_exact + "recipe strong\n")) if not s.startswith(("exact", "test"))]
    b = _statements(loads(BURGERS + "recipe strong\n"))
    assert a == b


def test_a_train_time_given_apart_is_the_recipes_budget():
    spec = apply_overrides(loads(BURGERS), {"recipe": "strong", "time": "2 min"})
    assert spec.ir.training.setting("time") == 120.0
    assert spec.ir.training.stages[-1].epochs == _recipe.QUASI_NEWTON_CAP
    assert "width = 20" in str(spec.ir.training.model)  # a budget under 3 minutes: the smaller network


def test_every_expansion_compiles_and_evaluates():
    """The recipe's transforms through the kernels (kovasznay's walls hold sqrt(400 + 4 pi^2): a torch function
    of a number the kernel held as a Python float was a TypeError)."""
    torch = pytest.importorskip("torch")
    import pinnspec

    spec = apply_overrides(load(ROOT / "specs" / "kovasznay.pinn"), {"recipe": "strong"})
    problem = pinnspec.compile(spec)
    from pinnspec.engine import build_model

    model = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float64)
    residuals = problem.residuals(model, problem.sample(0, 0, dtype=torch.float64))
    assert all(torch.isfinite(r).all() for r in residuals.values())
