"""`train stop = discrepancy`: a run ends after the first epoch where every data condition with stated noise fits
its observations to the noise (loss <= K sigma^2); `train stop = balance`: after the first epoch of the last stage
where the other tasks' loss is at most a thousandth of the noisy observations' tasks'.  The oracle is the run's own
history, read row by row."""

import csv

import numpy as np
import pytest

from pinnspec.cli._main import _summary
from pinnspec.engine import Trainer, load_run
from pinnspec.engine._budget import BALANCE_RATIO, BalanceStop, DiscrepancyStop
from pinnspec.lang import apply_overrides, loads

SIGMA = 0.1
SPEC = """problem noisy
space x in [0, 1]
time  t in [0, 1]
field u
equation heat: u_t = u_xx
data obs from "{path}": u, noise = 0.1
exact u = exp(-t)*sin(x)
points heat 64
model mlp(width = 16, depth = 2)
optimizer adam(lr = 1e-2)
schedule constant
train epochs = 600, seed = 0, device = cpu, checkpoint_every = 50{extra}
"""


@pytest.fixture
def observations(tmp_path):
    """60 noisy observations of exp(-t) sin(x): a 16-wide network fits them to their noise within 600 epochs."""
    rng = np.random.default_rng(1)
    x, t = rng.uniform(size=60), rng.uniform(size=60)  # [60]
    u = np.exp(-t) * np.sin(x) + rng.normal(0.0, SIGMA, size=60)
    path = tmp_path / "obs.csv"
    np.savetxt(path, np.stack([x, t, u], axis=1), delimiter=",", header="x,t,u", comments="")
    return path


def _spec(path, extra=", stop = discrepancy"):
    return loads(SPEC.format(path=path.as_posix(), extra=extra))


def _obs_losses(run_dir) -> list[float]:
    with open(run_dir / "history.csv") as f:
        return [float(row["loss:obs"]) for row in csv.DictReader(f)]


def test_the_run_ends_where_the_observations_first_fit_their_noise(tmp_path, observations):
    result = Trainer(_spec(observations), str(tmp_path / "run")).run()
    losses = _obs_losses(tmp_path / "run")
    assert result.status == "completed" and result.epochs == result.epochs_done == len(losses) < 600
    assert losses[-1] <= SIGMA ** 2 and all(loss > SIGMA ** 2 for loss in losses[:-1])
    assert f"fit their noise after epoch {len(losses)}" in result.message
    assert result.message in _summary(result)  # the command line's summary says why the run ended
    # without the stop the same run goes on past that epoch, the same up to it
    plain = Trainer(_spec(observations, extra=""), str(tmp_path / "plain")).run()
    assert plain.epochs_done == 600 and _obs_losses(tmp_path / "plain")[: len(losses)] == losses


def test_a_stopped_run_resumes_as_a_completed_run(tmp_path, observations):
    first = Trainer(_spec(observations), str(tmp_path / "run")).run()
    resumed = load_run(str(tmp_path / "run"))
    assert resumed.epochs == first.epochs_done and resumed.run().epochs_done == first.epochs_done


def test_the_thresholds_count_the_observed_fields(tmp_path):
    """Two observed fields with sd 0.5: the loss at the exact fields is 2 * 0.25 on average."""
    (tmp_path / "uv.csv").write_text("x,u,v\n0.1,1,2\n0.5,3,4\n", encoding="utf-8")
    spec = loads(f"""problem two
space x in [0, 1]
field u, v
equation a: u = v
data obs from "{(tmp_path / 'uv.csv').as_posix()}": u, v, noise = 0.5
train stop = discrepancy
""")
    stop = DiscrepancyStop.of(spec.ir)
    assert stop.thresholds == (("obs", 0.5),)
    assert stop.reached({"loss:obs": 0.5}) and not stop.reached({"loss:obs": 0.51}) and not stop.reached({})


def test_runs_that_stop_at_the_noise_do_not_train_as_a_group(observations):
    from pinnspec.engine._group import group_blocker

    trainers = [Trainer(apply_overrides(_spec(observations), {"surgery": s})) for s in ("none", "pcgrad")]
    assert "stop = discrepancy" in group_blocker(trainers)


def test_the_stop_waits_for_the_last_stage(tmp_path, observations):
    """A first stage only starts the fit: its losses at or below the noise do not end the run, the last stage's
    first such epoch does (the plain Adam run reaches the noise within 600 epochs)."""
    text = (SPEC.format(path=observations.as_posix(), extra=", stop = discrepancy")
            .replace("optimizer adam(lr = 1e-2)\n", "").replace("train epochs = 600, ", "train ")
            + "stage adam(lr = 1e-2) epochs = 600\nstage lbfgs epochs = 50, dtype = float64\n")
    result = Trainer(loads(text), str(tmp_path / "run")).run()
    losses = _obs_losses(tmp_path / "run")
    assert min(losses[:600]) <= SIGMA ** 2  # the first stage reached the noise and went on
    assert result.status == "completed" and 600 < result.epochs_done == len(losses) < 650
    assert losses[-1] <= SIGMA ** 2 and all(loss > SIGMA ** 2 for loss in losses[600:-1])


def _staged(path, stop: str) -> str:
    """The noisy spec in two stages, Adam then L-BFGS in float64, its tasks [0.3*heat, obs]: the L-BFGS stage
    brings the equation's share of the loss from 1e-2 to under 1e-3 in a hundred or so epochs."""
    return (SPEC.format(path=path.as_posix(), extra=f", stop = {stop}, grouping = g")
            .replace("optimizer adam(lr = 1e-2)\n", "").replace("train epochs = 600, ", "train ")
            + "grouping g = [0.3*heat, obs]\n"
            + "stage adam(lr = 1e-2) epochs = 300\nstage lbfgs epochs = 300, dtype = float64\n")


def _tasks(run_dir) -> list[tuple[float, float]]:
    with open(run_dir / "history.csv") as f:
        return [(float(row["task0"]), float(row["task1"])) for row in csv.DictReader(f)]


def test_balance_ends_the_run_at_the_first_epoch_of_the_last_stage_within_the_ratio(tmp_path, observations,
                                                                                     monkeypatch):
    """The oracle is the unstopped run's history: the stopped run is the same up to the first epoch of the last
    stage where 0.3 heat <= ratio * obs, and ends there.  In this forward problem the equation and the noisy
    observations constrain one u and trade: the equation's share settles near 1e-2, so the test takes a ratio of
    5e-3 (the next test: the stop's own 1e-3 leaves such a run alone)."""
    monkeypatch.setattr("pinnspec.engine._budget.BALANCE_RATIO", 5e-3)
    plain = Trainer(loads(_staged(observations, "never")), str(tmp_path / "plain")).run()
    unstopped = _tasks(tmp_path / "plain")
    first = next(k for k in range(300, 600) if unstopped[k][0] <= 5e-3 * unstopped[k][1])
    result = Trainer(loads(_staged(observations, "balance")), str(tmp_path / "run")).run()
    assert plain.epochs_done == 600 and result.status == "completed" and result.epochs_done == first + 1
    assert _tasks(tmp_path / "run") == unstopped[: first + 1]
    assert f"after epoch {first + 1}" in result.message and "stop = balance" in result.message
    assert load_run(str(tmp_path / "run")).run().epochs_done == first + 1  # a stopped run resumes completed


def test_balance_leaves_a_run_whose_equations_constrain_the_observed_field(tmp_path, observations):
    plain = Trainer(loads(_staged(observations, "never")), str(tmp_path / "plain")).run()
    assert min(heat / obs for heat, obs in _tasks(tmp_path / "plain")[300:]) > BALANCE_RATIO
    result = Trainer(loads(_staged(observations, "balance")), str(tmp_path / "run")).run()
    assert result.epochs_done == plain.epochs_done == 600 and _tasks(tmp_path / "run") == _tasks(tmp_path / "plain")


def test_balance_compares_the_tasks_with_noisy_observations_to_the_others(tmp_path, observations):
    stop = BalanceStop.of(_spec(observations, extra=", stop = balance").ir, _spec(observations).ir.grouping())
    assert (stop.observed, stop.others) == ((1,), (0,))
    assert stop.reached({"task0": 1e-5, "task1": 1e-2}) and not stop.reached({"task0": 1.1e-5, "task1": 1e-2})
    # a grouping without a task of each kind: refused at check time (tests/lang/test_errors.py), and by the rule
    pooled = loads(SPEC.format(path=observations.as_posix(), extra=", stop = balance")
                   + "grouping one = [pool(heat, obs)]\n").ir
    with pytest.raises(ValueError, match="grouping 'one' has only tasks with noisy observations"):
        BalanceStop.of(pooled, pooled.grouping("one"))
    trainers = [Trainer(apply_overrides(_spec(observations, extra=", stop = balance"), {"surgery": s}))
                for s in ("none", "pcgrad")]
    from pinnspec.engine._group import group_blocker

    assert "stop = balance" in group_blocker(trainers)
