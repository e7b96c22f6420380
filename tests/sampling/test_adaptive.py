"""The residual-based adaptive samplers (rad, rard, r3) against closed forms.

The fixed "model" u(x) = x^3/3 on [0, 1] with the equation u_x = 0 has the residual r(x) = x^2, so the RAD
density of the chosen points is known in closed form: with uniform candidates it is
(x^(2k) / E[x^(2k)] + c) / (1 + c), E[x^(2k)] = 1/(2k + 1).
"""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

import pinnspec
from pinnspec.engine import Trainer
from pinnspec.lang._overrides import apply_overrides
from pinnspec.compiler._problem import ADAPTIVE_STREAM
from pinnspec.registry import SAMPLERS
from pinnspec.sampling import R3, RAD, RARD, ResidualNotFinite, r3_retained, rad_choice, rad_weights

SPEC = """
problem ramp
space x in [0, 1]
field u
equation pde: u_x = 0
boundary ends on x = 0, x = 1: u = 0
points pde {count}, ends 2
sampler {sampler}
resample every 10
exact u = 0
train epochs = 30, seed = {seed}, engine = autograd
"""


TINY = Path(__file__).resolve().parents[1] / "engine" / "data" / "tiny.pinn"


class Cubic(torch.nn.Module):
    """u(x) = x^3/3: the residual of u_x = 0 is x^2 (and of u = 0, x^3/3)."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.0, dtype=torch.float64))

    def forward(self, x):  # [N, 1] -> [N, 1]
        return self.scale * x ** 3 / 3


def compiled(sampler: str, count: int = 400, seed: int = 3, spec: str = SPEC):
    return pinnspec.compile(pinnspec.loads(spec.format(sampler=sampler, count=count, seed=seed)))


def rad_cdf(x: np.ndarray, k: float, c: float) -> np.ndarray:
    """The integral from 0 to x of the RAD density (x^(2k) (2k + 1) + c) / (1 + c) of r = x^2."""
    return (x ** (2 * k + 1) + c * x) / (1 + c)


def assert_density(x: np.ndarray, k: float, c: float, bins: int = 10) -> None:
    """Binned into ``bins`` bins of equal probability under the density (edges: its inverse CDF on a fine
    grid): a chi-square test at the 0.1% level, and every bin's count within 4 binomial sigmas of n / bins
    (with 10 bins, 3 sigmas would fail 2.7% of correct samplers; 4 sigmas, 0.06%)."""
    grid = np.linspace(0.0, 1.0, 100_001)
    edges = np.interp(np.linspace(0.0, 1.0, bins + 1), rad_cdf(grid, k, c), grid)
    observed, _ = np.histogram(x, bins=edges)
    expected = np.full(bins, len(x) / bins)
    sigma = np.sqrt(len(x) * (1 / bins) * (1 - 1 / bins))
    assert np.all(np.abs(observed - expected) <= 4 * sigma), (observed, expected)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


# ------------------------------------------------------------------ the pure selections


def test_rad_weights_are_the_papers_density():
    r = np.array([0.0, 1.0, -2.0, 3.0])
    for k, c in [(1.0, 1.0), (2.0, 0.0), (0.5, 3.0)]:
        power = np.abs(r) ** k
        assert np.allclose(rad_weights(r, k, c), power / power.mean() + c)
    assert np.array_equal(rad_weights(np.zeros(5), 2.0, 0.0), np.ones(5))  # no residual: uniform
    with pytest.raises(ValueError, match="not finite"):
        rad_weights(np.array([1.0, np.nan]), 1.0, 1.0)


@pytest.mark.parametrize("k, c", [(1.0, 1.0), (2.0, 0.0), (1.0, 0.0)])
def test_rad_choice_draws_the_rad_density(k, c):
    """2,000 of 200,000 uniform candidates (1%: the draw without replacement barely flattens the density)."""
    rng = np.random.default_rng(11)
    candidates = rng.random(200_000)  # [n]
    chosen = rad_choice(candidates ** 2, 2_000, k, c, rng)
    assert len(np.unique(chosen)) == 2_000  # without replacement
    assert_density(candidates[chosen], k, c)


def test_rad_choice_with_too_few_positive_weights_takes_them_all():
    magnitudes = np.array([0.0, 0.0, 5.0, 0.0, 1.0, 0.0])
    chosen = rad_choice(magnitudes, 4, 1.0, 0.0, np.random.default_rng(0))
    assert len(chosen) == 4 and {2, 4} <= set(chosen.tolist()) and len(set(chosen.tolist())) == 4


def test_r3_retains_exactly_the_points_above_the_mean():
    r = np.array([0.1, 0.5, 0.2, 0.9, 0.3])  # mean 0.4
    assert r3_retained(r).tolist() == [False, True, False, True, False]
    assert not r3_retained(np.full(4, 2.0)).any()  # none above an equal mean


def test_a_point_whose_residual_is_not_finite_is_never_drawn_and_too_many_is_divergence():
    """Where the spec's expressions are singular (|r| NaN or inf at a few candidates) those are left out; where
    too few finite candidates remain the resampling raises `ResidualNotFinite`."""
    rng = np.random.default_rng(3)
    draw = lambda n: rng.random((n, 1))  # noqa: E731
    singular = lambda x: np.where(x[:, 0] < 0.1, np.nan, np.where(x[:, 0] > 0.95, np.inf, x[:, 0]))  # noqa: E731
    for sampler in (RAD(), RARD(add=50)):
        points = sampler.adapt(np.full((10, 1), 0.5), 100, draw, singular, rng)
        assert np.isfinite(singular(points)).sum() == len(points) and len(points) in (100, 60)
    current = np.linspace(0.0, 1.0, 101)[:, None]  # [101, 1]: 10 with a NaN residual, 5 with an infinite one
    kept = R3().adapt(current, 101, lambda n: np.full((n, 1), 2.0), singular, rng)
    finite = current[(current[:, 0] >= 0.1) & (current[:, 0] <= 0.95), 0]  # [86]: the others are released
    assert np.array_equal(kept[kept[:, 0] <= 1.0, 0], finite[finite > finite.mean()])
    assert len(kept) == 101  # refilled
    with pytest.raises(ResidualNotFinite, match="not finite at 1000 of 1000 points"):
        RAD().adapt(np.zeros((10, 1)), 100, draw, lambda x: np.full(len(x), np.nan), rng)
    with pytest.raises(ResidualNotFinite, match="at least 100 finite"):
        RAD().adapt(np.zeros((10, 1)), 100, draw, lambda x: np.where(x[:, 0] < 0.95, np.nan, x[:, 0]), rng)


def test_samplers_are_registered_and_check_their_arguments():
    assert SAMPLERS.get("rad") is RAD and SAMPLERS.get("rard") is RARD and SAMPLERS.get("r3") is R3
    assert SAMPLERS.entry("rad").parameters() == {"k": 1.0, "c": 1.0, "pool": 10, "base": "uniform"}
    assert SAMPLERS.entry("rard").parameters() == {"k": 2.0, "c": 0.0, "add": 100, "pool": 10, "base": "uniform"}
    assert SAMPLERS.entry("r3").parameters() == {"base": "uniform"}
    for bad in [dict(base="grid"), dict(k=-1), dict(pool=0), dict(pool=2.5)]:
        with pytest.raises(ValueError):
            RAD(**bad)
    with pytest.raises(ValueError):
        RARD(add=0)
    # called as a unit-cube sampler it is its base sampler
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(R3(base="sobol")(16, 2, rng_a), SAMPLERS.get("sobol")()(16, 2, rng_b))


# ------------------------------------------------------------------ the compiler path


def test_residual_magnitudes_are_the_closed_form():
    problem = compiled("rad")
    x = np.linspace(0.0, 1.0, 7)[:, None]  # [7, 1]
    assert np.allclose(problem.residual_magnitudes(0, x, Cubic(), chunk=3), x[:, 0] ** 2, rtol=1e-12, atol=0)


def test_residual_magnitudes_of_a_system_are_the_root_of_the_sum_of_squares():
    system = SPEC.replace("equation pde: u_x = 0", "equation pde: u_x = 0\nequation zero: u = 0").replace(
        "points pde {count}", "points pde {count}, zero {count}")
    problem = compiled("r3", spec=system)
    assert problem.adaptive_sets == (0,) and problem.point_plan.sets[0].conditions == ("pde", "zero")
    x = np.linspace(0.0, 1.0, 5)[:, None]
    expected = np.sqrt(x[:, 0] ** 4 + (x[:, 0] ** 3 / 3) ** 2)
    assert np.allclose(problem.residual_magnitudes(0, x, Cubic()), expected, rtol=1e-12, atol=0)


class Draws:
    """Consecutive draws of one problem, each from the adaptive history of the one before (as a run's
    `PointStream` draws)."""

    def __init__(self, problem, residual):
        self.problem, self.residual, self.history = problem, residual, None

    def __call__(self, epoch):
        points = self.problem.sample(epoch, residual=self.residual, history=self.history)
        self.history = points.history
        return points


def test_rad_points_follow_the_residual_density():
    """Blocks 1..10 of rad(k = 1, c = 1, pool = 50): 4,000 points of density (3x^2 + 1)/2."""
    problem = compiled("rad(k = 1, c = 1, pool = 50)")
    draw = Draws(problem, problem.residual_function(Cubic()))
    x = np.concatenate([draw(10 * block).sets[0].x[:, 0].detach().numpy() for block in range(1, 11)])
    assert len(x) == 4_000
    assert_density(x, 1.0, 1.0)


def test_rad_draws_from_its_stream_and_keeps_block_zero_and_the_boundaries():
    problem = compiled("rad")
    draw = Draws(problem, problem.residual_function(Cubic()))
    base = [problem.point_plan.sample(3, epoch) for epoch in (0, 10)]
    first, second = (draw(epoch) for epoch in (0, 10))
    assert np.array_equal(first.sets[0].x.detach().numpy(), base[0][0].x.astype(np.float32))  # block 0: the base draw
    for points, plan in zip((first, second), base):  # the boundary: the base draw in every block
        assert np.array_equal(points.sets[1].x.detach().numpy(), plan[1].x.astype(np.float32))
    # block 1, recomputed here: 4,000 uniform candidates, then the RAD choice, from one generator
    rng = np.random.default_rng([3, 1, 0, ADAPTIVE_STREAM])
    candidates = rng.random((4_000, 1))
    expected = candidates[rad_choice(candidates[:, 0] ** 2, 400, 1.0, 1.0, rng)]
    assert np.allclose(second.sets[0].x.detach().numpy(), expected, rtol=0, atol=1e-7)  # float32 points


def test_r3_retains_the_points_above_the_mean_and_refills_to_the_count():
    problem = compiled("r3")
    draw = Draws(problem, problem.residual_function(Cubic()))
    previous = draw(0).sets[0].x.detach().numpy().astype(np.float64)
    for epoch in (10, 20):
        current = draw(epoch).sets[0].x.detach().numpy().astype(np.float64)
        before = draw.history[0][2]  # the float64 points the residual was computed on
        assert np.allclose(before, previous, rtol=0, atol=1e-7)
        above = before[before[:, 0] ** 2 > np.mean(before[:, 0] ** 2)]
        assert len(current) == 400 and 0 < len(above) < 400
        assert np.allclose(current[:len(above)], above, rtol=0, atol=1e-7)  # retained, in order
        refill = current[len(above):]
        assert not np.isin(refill[:, 0], before[:, 0]).any()  # fresh points
        previous = current


def test_rard_grows_by_add_and_keeps_its_points():
    problem = compiled("rard(add = 50, k = 2, c = 0)")
    draw = Draws(problem, problem.residual_function(Cubic()))
    sizes, previous = [], None
    for epoch in (0, 10, 20, 30):
        x = draw(epoch).sets[0].x.detach().numpy()
        if previous is not None:
            assert np.array_equal(x[:len(previous)], previous)
        sizes.append(len(x))
        previous = x
    assert sizes == [400, 450, 500, 550]
    again = draw(30).sets[0].x.detach().numpy()  # the same block again
    assert np.array_equal(again, previous)
    for epoch in range(40, 410, 10):  # 37 more blocks: 2,000 added points in all
        x = draw(epoch).sets[0].x.detach().numpy()
    assert len(x) == 2_400
    assert_density(x[400:, 0], 2.0, 0.0)  # density 5 x^4


@pytest.mark.parametrize("sampler", ["rad", "rard(add = 30)", "r3"])
def test_same_seed_same_points(sampler):
    runs = []
    for seed in (3, 3, 4):
        problem = compiled(sampler, seed=seed)
        draw = Draws(problem, problem.residual_function(Cubic()))
        runs.append([draw(epoch).sets[0].x.detach().numpy() for epoch in (0, 10, 20)])
    assert all(np.array_equal(a, b) for a, b in zip(runs[0], runs[1]))
    assert not any(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(runs[0], runs[2]))


def test_without_a_residual_the_sets_are_the_base_draw_and_shards_are_refused():
    problem = compiled("rard")
    sets = problem.point_plan.sample(3, 10)
    assert np.array_equal(problem.sample(10).sets[0].x.detach().numpy(), sets[0].x.astype(np.float32))
    with pytest.raises(ValueError, match="data-parallel"):
        problem.points(10, sets, totals=[len(s) for s in sets])


# ------------------------------------------------------------------ training


@pytest.mark.parametrize("sampler, size", [("rad", 200), ("rard(add = 20)", 240), ("r3", 200)])
def test_a_short_training_run_resamples_from_the_model(sampler, size):
    """The tiny heat spec, 30 epochs, points redrawn every 10: the trainer passes the model's residual (blocks
    1 and 2 are adaptive draws), the run completes, and a second run with the same seed is the same."""
    spec = apply_overrides(pinnspec.load(str(TINY)), {"sampler": sampler, "resample": "every 10", "epochs": 30})
    runs = []
    for _ in range(2):
        trainer = Trainer(spec)
        result = trainer.run()
        assert result.status == "completed" and math.isfinite(result.rel_l2)
        (index,) = trainer.problem.adaptive_sets
        _, block, before, after = trainer.points.history[index]
        assert block == 2 and len(after) == size
        kept = np.isin(after[:, 0], before[:, 0])  # [len(after)]: rows of the block before
        if sampler == "rad":
            assert not kept.any()  # fresh candidates
        elif sampler == "r3":
            assert 0 < kept.sum() < 200 and kept[:kept.sum()].all()  # retained first, then the refill
        else:
            assert np.array_equal(after[:len(before)], before)  # rard keeps every point
        runs.append((trainer.points.current.sets[index].x.detach().numpy(), [row["loss"] for row in trainer.run_state.history]))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


def test_a_resampling_with_no_finite_residual_stops_the_run_as_diverged(monkeypatch, tmp_path):
    """Every candidate's |r| NaN at the first adaptive draw (for epoch 11, drawn while epoch 10 runs): the run stops
    as diverged, saying why (not an internal error), and the last checkpoint written before it stays."""
    from pinnspec.compiler import CompiledProblem

    spec = apply_overrides(pinnspec.load(str(TINY)), {"sampler": "rad", "resample": "every 10", "epochs": 30,
                                                      "checkpoint_every": 5})
    monkeypatch.setattr(CompiledProblem, "residual_magnitudes", lambda self, index, x, *a, **k: np.full(len(x), np.nan))
    result = Trainer(spec, str(tmp_path)).run()
    assert result.status == "diverged"
    assert "training diverged at epoch 11: the residual is not finite at 2000 of 2000 points" in result.message
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["epoch"] == 5
