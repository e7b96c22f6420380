"""Training in stages: a first-order stage then a quasi-Newton one (L-BFGS, or self-scaled Broyden drawing new
points) in float64; the switch starts where the first stage ended; a run stopped inside either stage resumes bit for
bit; `--set stage=...` replaces the stages."""

import csv
import math

from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.engine._artifacts import load_checkpoint
from pinnspec.engine._points import PointStream
from pinnspec.engine._stages import QuasiNewtonStage
from pinnspec.lang import loads
from pinnspec.lang._overrides import apply_overrides

#: u_t = 0.1 u_xx on [0, 1]^2, u = sin(pi x) at t = 0, u = 0 on both walls (the engine tests' heat problem)
HEAT_CONDITIONS = (Path(__file__).parent / "data" / "heat_conditions.pinn").read_text()
SPEC = HEAT_CONDITIONS + """loss N = pde
loss B = walls
loss I = ic
grouping three = [N, B, I]
points pde 100, walls 20, ic 20
exact u = sin(pi*x)*exp(-0.1*pi^2*t)
test 200
validate 50 every 5
model     mlp(width = 8, depth = 2)
schedule  constant
surgery   config
align     gua
{weights}
stage adam(lr = 5e-3) epochs = 30
{second}
train     grouping = three, seed = 0, device = cpu, checkpoint_every = 4
"""


LBFGS_STAGE = "stage lbfgs(history = 10, max_evals = 10) epochs = 12, dtype = float64"
SSBROYDEN_STAGE = "stage ssbroyden(max_evals = 10) epochs = 12, dtype = float64, resample = 4"


#: the equation points from `rad`, redrawn from the model's residual every 10 epochs of the first stage
RAD = "sampler rad(k = 1, c = 1)\nresample every 10\n"


def _spec(weights: str = "", second: str = LBFGS_STAGE, sampler: str = ""):
    return loads(SPEC.replace("points pde", sampler + "points pde").format(weights=weights, second=second))


def _history(run_dir) -> list[dict]:
    with open(run_dir / "history.csv") as f:
        return list(csv.DictReader(f))


def test_two_stages_switch_dtype_and_the_lbfgs_stage_descends(tmp_path, capsys):
    trainer = Trainer(_spec(), str(tmp_path / "run"))
    result = trainer.run()
    assert result.status == "completed" and result.epochs_done == 42 and result.dtype == "float32 then float64"
    assert all(p.dtype == torch.float64 for p in trainer.model.parameters())
    assert "stage 2/2: lbfgs" in capsys.readouterr().err
    history = _history(tmp_path / "run")
    assert [r["stage"] for r in history] == ["1"] * 30 + ["2"] * 12
    # at fixed points the L-BFGS objective (the summed task losses, unit weights) never increases
    lbfgs_rows = [r for r in history if r["stage"] == "2"]
    assert len(lbfgs_rows) == 12 and all(int(r["evaluations"]) >= 1 for r in lbfgs_rows)
    losses = [float(r["loss"]) for r in lbfgs_rows]
    assert all(b <= a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < 0.5 * float(history[29]["loss"])
    assert all(r["R_u"] == "" for r in lbfgs_rows)  # no surgery diagnostics in a second-order stage
    assert result.optimizer.startswith("adam(") and "lbfgs(" in result.optimizer


def test_the_switch_starts_where_the_stage_ended_with_a_reference_or_without():
    """Stage 2 begins from the state stage 1 ended in, not from the best checkpoint: that one is chosen by the
    rel-L2 on the reference where the spec has one (by the held-out residual where it has none), and the
    training would depend on what the spec knows of the solution.  The same spec trains the same with and
    without its reference.  Adam at 0.1, validated every epoch: the two runs' best checkpoints in stage 1 are
    epochs 27 and 28 (on the reference and on the held-out residual), so starting from them would part the runs."""
    spec = SPEC.replace("every 5", "every 1").replace("adam(lr = 5e-3)", "adam(lr = 1e-1)")
    without = spec.replace("exact u = sin(pi*x)*exp(-0.1*pi^2*t)\ntest 200\n", "")
    assert without != spec
    runs = [Trainer(loads(text.format(weights="", second=LBFGS_STAGE)), None) for text in (spec, without)]
    best_at_switch = []
    for trainer in runs:
        begin = trainer._begin_stage
        trainer._begin_stage = lambda k, t=trainer, begin=begin: (best_at_switch.append(t.run_state.best.epoch),
                                                                     begin(k))
        assert trainer.run().status == "completed"
    assert best_at_switch[0] != best_at_switch[1], best_at_switch
    losses = [[row["loss"] for row in trainer.run_state.history] for trainer in runs]
    assert len(losses[0]) == 42 and losses[0] == losses[1]


@pytest.mark.parametrize("stop_at, second, weights, sampler", [
    (20, LBFGS_STAGE, "weights gradnorm(every = 10)", ""),
    (35, LBFGS_STAGE, "weights gradnorm(every = 10)", ""),
    (35, SSBROYDEN_STAGE, "causal pde(eps = 5, chunks = 4)", ""),  # new points at 34 and 38
    (35, SSBROYDEN_STAGE.replace("resample = 4", "resample = 5"), "causal pde(eps = 5, chunks = 4)", ""),  # at 35
    (25, LBFGS_STAGE, "", RAD),  # rad points drawn at 20 from the model
    (35, SSBROYDEN_STAGE, "", RAD),  # the stage's rad points drawn at 34 from the model
    (35, SSBROYDEN_STAGE.replace("resample = 4", "resample = 5"), "", RAD),  # ... and at 35, after the resume
], ids=["inside adam", "inside lbfgs", "inside ssbroyden", "at a resampling of ssbroyden", "inside adam, rad",
        "inside ssbroyden, rad", "at a resampling of ssbroyden, rad"])
def test_resume_inside_a_stage_is_bit_identical(tmp_path, stop_at, second, weights, sampler):
    """Adaptive points (`rad`) depend on the model when they were drawn: the checkpoint keeps them."""
    straight = Trainer(_spec(weights, second, sampler), str(tmp_path / "straight"))
    straight.run()
    holder = {}

    def stop(line):  # the log line of each validation: stop after epoch `stop_at`
        if line.startswith(f"epoch {stop_at}/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(_spec(weights, second, sampler), str(tmp_path / "first"), log=stop)
    assert first.run().status == "interrupted"
    saved = load_checkpoint(str(tmp_path / "first" / "checkpoint.pt"))
    assert saved["epoch"] == stop_at and saved["stage"] == (1 if stop_at > 30 else 0)
    assert ("adaptive" in saved) == bool(sampler)
    resumed = Trainer(_spec(weights, second, sampler), str(tmp_path / "first"))
    resumed.load_state_dict(saved)
    resumed.run()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(a[k].dtype == torch.float64 and torch.equal(a[k], b[k]) for k in a)
    assert _history(tmp_path / "straight") == _history(tmp_path / "first")


@pytest.mark.parametrize("sampler, draws", [("", [(30, None)]), (RAD, [])], ids=["hammersley", "rad"])
def test_a_resume_inside_a_quasi_newton_stage_draws_its_points_once(tmp_path, monkeypatch, sampler, draws):
    """Loading a checkpoint of the L-BFGS stage (it begins at epoch 30) draws the stage's points once, from
    (seed, epoch), or not at all where the checkpoint keeps them (`rad`: drawn from the model of then)."""
    holder = {}

    def stop(line):
        if line.startswith("epoch 35/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(_spec("", LBFGS_STAGE, sampler), str(tmp_path / "run"), log=stop)
    assert first.run().status == "interrupted"
    saved = load_checkpoint(str(tmp_path / "run" / "checkpoint.pt"))
    resumed = Trainer(_spec("", LBFGS_STAGE, sampler), str(tmp_path / "run"))
    drawn, sample = [], PointStream.draw
    monkeypatch.setattr(PointStream, "draw", lambda self, *args: drawn.append(args) or sample(self, *args))
    resumed.load_state_dict(saved)
    assert drawn == draws and resumed.quasi_newton.objective is not None


@pytest.mark.parametrize("more", ["", "causal pde(eps = 5, chunks = 4)"], ids=["plain", "causal"])
def test_an_lbfgs_stage_minimises_the_weighted_sum_at_the_weights_of_the_switch(tmp_path, more):
    """f is a fixed function whose gradient the objective returns: frozen task weights and, for a causal
    condition, frozen chunk weights (weights that followed the residuals would break the line search)."""
    trainer = Trainer(_spec("weights gradnorm(every = 10)\n" + more), None)
    trainer.run()
    lam = trainer.quasi_newton.objective.weights
    assert lam is not None and not torch.allclose(lam, torch.ones_like(lam))
    theta = trainer.theta_flat()
    f, g = trainer.quasi_newton.objective(theta)
    tasks = trainer.quasi_newton.objective.logged(theta)[:3]
    assert math.isclose(float(f), float((lam.double() * tasks).sum()), rel_tol=1e-12)
    # the gradient against central finite differences along a random direction (float64)
    direction = torch.randn(theta.shape, generator=torch.Generator().manual_seed(0), dtype=theta.dtype)
    h = 1e-6
    slope = (float(trainer.quasi_newton.objective(theta + h * direction)[0]) - float(trainer.quasi_newton.objective(theta - h * direction)[0])) / (2 * h)
    assert math.isclose(slope, float(g @ direction), rel_tol=1e-6, abs_tol=1e-10)
    assert all(t.dtype == torch.float64 for t in trainer.theta)  # the objective did not change the parameters' type


#: the PDE stated again on the walls' points (one set), pooled with the interior's: that set feeds two tasks
RESTATED = ("boundary pdewalls on x = 0, x = 1: u_t - 0.1*u_xx = 0\n", ("grouping three = [N, B, I]",
            "grouping three = [pool(pde, pdewalls), B, I]"), ("points pde 100,", "points pde 100, pdewalls 20,"))


def test_a_compiled_quasi_newton_objective_equals_the_eager_one():
    """With ``compile = on`` a quasi-Newton stage's f and its gradient come from one compiled graph: one pullback
    per point set of the weighted coefficients, also where a set feeds two tasks (the walls' points here, with
    the PDE stated again on them and pooled): the eager objective's values."""
    text = (SPEC.format(weights="", second="").replace("stage adam(lr = 5e-3) epochs = 30", LBFGS_STAGE)
            .replace("loss N = pde", RESTATED[0] + "loss N = pde").replace(*RESTATED[1]).replace(*RESTATED[2]))
    trainer = Trainer(apply_overrides(loads(text), {"compile": "on"}), None)  # its first stage: the objective now
    objective = trainer.quasi_newton.objective
    objective.weights = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)  # task weights as a switch freezes them
    theta = trainer.theta_flat() + 0.01  # [p], float64
    f, g = objective(theta)
    assert objective.compiled is not None
    logged = objective.logged(theta)  # [m + C]
    eager_f, eager_g = objective._eager_call(theta)
    assert math.isclose(float(f), float(eager_f), rel_tol=1e-12)
    assert torch.allclose(g, eager_g, rtol=1e-10, atol=1e-14)
    assert torch.allclose(logged, objective.logged(theta), rtol=1e-12)  # the eager call's, kept last
    assert trainer.run().status == "completed"


def test_a_resume_inside_a_compiled_quasi_newton_stage_is_bit_identical(tmp_path):
    text = SPEC.format(weights="", second="").replace("stage adam(lr = 5e-3) epochs = 30", LBFGS_STAGE)
    spec = apply_overrides(loads(text), {"compile": "on"})
    straight = Trainer(spec, str(tmp_path / "straight"))
    straight.run()
    holder = {}

    def stop(line):
        if line.startswith("epoch 5/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(spec, str(tmp_path / "first"), log=stop)
    assert first.run().status == "interrupted" and first.quasi_newton.objective.compiled is not None
    resumed = Trainer(spec, str(tmp_path / "first"))
    resumed.load_state_dict(load_checkpoint(str(tmp_path / "first" / "checkpoint.pt")))
    resumed.run()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a) and resumed.quasi_newton.objective.compiled is not None
    assert _history(tmp_path / "straight") == _history(tmp_path / "first")


def test_an_objective_that_does_not_compile_runs_eagerly_and_says_so_once(monkeypatch, capsys):
    from pinnspec.engine._compiled import CompiledLosses

    text = SPEC.format(weights="", second="").replace("stage adam(lr = 5e-3) epochs = 30", SSBROYDEN_STAGE)
    spec = apply_overrides(loads(text), {"compile": "on"})
    assert Trainer(spec, None).quasi_newton.objective.compiled is not None  # its first evaluation: when it is built
    err = capsys.readouterr().err
    assert "stage 1/1: ssbroyden(" in err and "; it runs compiled" in err

    def planted(*args, **kwargs):
        raise torch._dynamo.exc.TorchDynamoException("a planted failure")

    monkeypatch.setattr(CompiledLosses, "summed", planted)
    trainer = Trainer(spec, None)  # 12 epochs, new points every 4: three objectives
    assert trainer.run().status == "completed" and trainer.quasi_newton.objective.compiled is None
    err = capsys.readouterr().err
    assert err.count("the quasi-Newton stage's objective does not compile (a planted failure); it runs eagerly") == 1
    assert "stage 1/1: ssbroyden(" in err and "; it runs eagerly" in err


def test_set_stage_replaces_every_stage():
    spec = apply_overrides(_spec(), {"stage": "adam(lr = 1e-3) epochs = 5; lbfgs epochs = 3, dtype = float64"})
    stages = spec.ir.training.stages
    assert [(s.optimizer.name, s.epochs, s.dtype) for s in stages] == [("adam", 5, "float32"), ("lbfgs", 3, "float64")]
    assert spec.ir.training.setting("epochs") == 8
    assert "stage adam(lr = 1e-3) epochs = 5" in spec.source


def test_a_spec_without_stages_is_one_stage():
    spec = loads(SPEC.replace("stage adam(lr = 5e-3) epochs = 30\n", "optimizer adam(lr = 5e-3)\n")
                 .replace("train     grouping", "train     epochs = 7, grouping").format(weights="", second=""))
    (stage,) = spec.ir.training.stage_list()
    assert (stage.optimizer.name, stage.epochs, stage.dtype) == ("adam", 7, "float32")
    assert not spec.ir.training.stages


def test_a_stalled_lbfgs_stage_stops_moving_with_a_notice(monkeypatch, capsys):
    from pinnspec.optim import _quasi_newton

    def no_decrease(self, objective, x, state):  # every line search fails, as at the precision floor
        return torch.zeros_like(x), state, _quasi_newton.StepInfo(0.0, 2, False, float(state.loss))

    monkeypatch.setattr(_quasi_newton.LBFGS, "step", no_decrease)
    trainer = Trainer(_spec(), None)
    trainer.run()
    rows = trainer.run_state.history[30:]
    assert [r["evaluations"] for r in rows] == [2, 2, 2] + [0] * 9
    assert trainer.quasi_newton.stopped.startswith("stopped at epoch 33: 3 line searches in a row")
    assert "stage 2 (lbfgs) stopped at epoch 33" in capsys.readouterr().err
    assert len({r["loss"] for r in rows}) == 1


def test_the_losses_plot_marks_the_stage_switch(tmp_path):
    from pinnspec.plots._losses import losses_figure
    from pinnspec.plots._run import read_run_files

    Trainer(_spec(), str(tmp_path / "run")).run()
    fig = losses_figure(read_run_files(tmp_path / "run"))
    top = fig.axes[0]
    assert "stage switch" in [t.get_text() for t in top.get_legend().get_texts()]
    switches = [line for line in top.get_lines() if line.get_label() == "stage switch"]
    assert [line.get_xdata()[0] for line in switches] == [30]
    assert " stage 2" in [t.get_text() for t in top.texts]


def test_the_conflicts_plot_shows_lbfgs_step_lengths_on_their_own_axis(tmp_path):
    from pinnspec.plots._conflicts import conflicts_figure
    from pinnspec.plots._run import read_run_files

    Trainer(_spec(), str(tmp_path / "run")).run()
    fig = conflicts_figure(read_run_files(tmp_path / "run"))
    lr_axis = next(a for a in fig.axes if a.get_ylabel() == "learning rate")
    (line,) = lr_axis.get_lines()
    assert max(line.get_xdata()) == 30 and max(line.get_ydata()) == pytest.approx(5e-3)  # the Adam stage only
    step_axis = next(a for a in fig.axes if a.get_ylabel() == "L-BFGS step length")
    assert min(step_axis.get_lines()[0].get_xdata()) == 31


def test_a_ssbroyden_stage_draws_new_points_every_resample_epochs_and_keeps_its_memory(capsys, monkeypatch):
    trainer = Trainer(_spec(second=SSBROYDEN_STAGE), None)
    seen = []
    draw = QuasiNewtonStage.objective_at

    def record(stage, epoch, points=None):
        draw(stage, epoch, points)
        seen.append((epoch, trainer.points.fixed.sets[0].x.detach().clone()))

    monkeypatch.setattr(QuasiNewtonStage, "objective_at", record)
    method = trainer.stages[1]
    trainer.run()
    assert "new points every 4 epochs" in capsys.readouterr().err and method.resample == 4
    assert [epoch for epoch, _ in seen] == [30, 34, 38]
    first, second, third = (x for _, x in seen)
    assert not torch.equal(first, second) and not torch.equal(second, third)
    # the first block's points are the point plan's at the stage's first epoch (the spec never resamples)
    assert torch.equal(first, trainer.problem.sample(30, 0, dtype=torch.float64).sets[0].x)
    assert trainer.quasi_newton.state.H.shape == (sum(trainer.numels),) * 2  # the inverse Hessian survived the new points
    assert all(row["evaluations"] >= 1 for row in trainer.run_state.history[30:])


def test_a_dense_stage_over_the_memory_limit_is_refused(monkeypatch):
    from pinnspec.engine import _build

    monkeypatch.setattr(_build, "DENSE_LIMIT_BYTES", 1000)
    with pytest.raises(ValueError, match=r"stage 2 \(ssbroyden\) keeps a dense .* use `stage lbfgs"):
        Trainer(_spec(second=SSBROYDEN_STAGE), None)


def test_resample_is_a_setting_of_quasi_newton_stages_only():
    from pinnspec.lang import SpecError

    with pytest.raises(SpecError, match="'resample' is a setting of quasi-Newton stages"):
        loads(SPEC.format(weights="", second=LBFGS_STAGE).replace("epochs = 30", "epochs = 30, resample = 5"))


def test_set_stage_on_a_spec_without_stages_replaces_its_optimizer_and_epochs():
    plain = loads(SPEC.replace("stage adam(lr = 5e-3) epochs = 30\n", "optimizer adam(lr = 5e-3)\n")
                  .replace("train     grouping", "train     epochs = 7, grouping").format(weights="", second=""))
    spec = apply_overrides(plain, {"stage": "adam epochs = 5; ssbroyden epochs = 3, dtype = float64, resample = 2"})
    assert [(s.optimizer.name, s.epochs, s.resample) for s in spec.ir.training.stages] == [
        ("adam", 5, None), ("ssbroyden", 3, 2)]
    assert spec.ir.training.setting("epochs") == 8 and spec.ir.training.setting("seed") == 0
    assert "train grouping = three, seed = 0" in spec.source  # the other train settings kept


def test_a_checkpoint_without_adaptive_points_restarts_the_quasi_newton_stage_on_new_ones(tmp_path):
    """A checkpoint written before checkpoints kept adaptive points (emulated: its `adaptive` entry removed): the
    stage's points are drawn anew from the loaded model, and f and its gradient are evaluated there instead of
    keeping the checkpoint's, whose stale f would fail every line search."""
    spec = _spec("", SSBROYDEN_STAGE, RAD)
    holder = {}

    def stop(line):
        if line.startswith("epoch 35/"):
            holder["trainer"]._stop_requested = True

    first = holder["trainer"] = Trainer(spec, str(tmp_path / "run"), log=stop)
    assert first.run().status == "interrupted"
    saved = load_checkpoint(str(tmp_path / "run" / "checkpoint.pt"))
    del saved["adaptive"]
    resumed = Trainer(spec, str(tmp_path / "run"))
    resumed.load_state_dict(saved)
    f, _ = resumed.quasi_newton.objective(resumed.theta_flat())
    assert float(resumed.quasi_newton.state.loss) == float(f) != float(first.quasi_newton.state.loss)  # f on the new points
    resumed.run()
    assert resumed.quasi_newton.stopped is None
    assert all(row["lr"] > 0 for row in resumed.run_state.history[35:38])  # accepted steps right after the resume
