"""What a user meets first: a spec without a reference trains, a blow-up stops as diverged, every
artefact states the settings actually used, epochs are counted one way (from 1)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import pinnspec
from pinnspec.lang import loads

TINY = Path(__file__).parent / "data" / "tiny.pinn"


def _without_reference(tmp_path) -> Path:
    text = "".join(line for line in TINY.read_text().splitlines(keepends=True) if not line.startswith("exact"))
    path = tmp_path / "noref.pinn"
    path.write_text(text)
    return path


def test_a_spec_without_reference_trains_and_chooses_its_checkpoint_on_held_out_points(tmp_path, capsys):
    spec = _without_reference(tmp_path)
    assert not pinnspec.load(spec).warnings  # `check` says nothing about a missing reference
    out = tmp_path / "run"
    result = pinnspec.train(spec, epochs=30, out=str(out))
    assert result.status == "completed"
    saved = json.loads((out / "result.json").read_text())
    assert saved["rel_l2"] is None and saved["rel_l2_final"] is None and saved["best_validation"] is None
    assert saved["validation"] == "held-out residual"
    history = np.genfromtxt(out / "history.csv", delimiter=",", names=True)
    assert np.isnan(history["validation"]).all()
    # the chosen epoch is a validation epoch (every 10) whose model had the lowest loss then: losses fall here
    assert saved["best_epoch"] in (10, 20, 30)
    assert all(math.isfinite(v) for v in saved["rates"].values() if v is not None)
    with np.load(out / "predictions.npz") as data:
        assert "reference" not in data.files
        assert data["prediction"].shape == (len(data["points"]), 1)
    from pinnspec.cli import main  # eval says why there is no test error, and what chose the checkpoint

    assert main(["eval", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no reference: no test error" in printed and f"held-out points, epoch {saved['best_epoch']}" in printed


def test_the_checkpoint_without_reference_is_the_one_with_the_lowest_held_out_residual(tmp_path):
    """The value that chooses it is the summed task losses of the model at a validation epoch on held-out points
    (the same at every validation, none of them a training point): recomputed here from each validation's
    model, independently of the monitor."""
    from pinnspec.engine import Trainer

    trainer = Trainer(pinnspec.load(_without_reference(tmp_path)))
    trainer.epochs = 20
    held_out, training = trainer.evaluation.held_out(), trainer.points.at(0)
    for a, b in zip(held_out.sets, training.sets):
        assert a.x.shape == b.x.shape and not torch.equal(a.x, b.x)
    losses, validate = {}, trainer.monitor.validate

    def recorded(run, epoch, row, model, params, *args):
        value = trainer.problem.losses(model, held_out, params, trainer.grouping.name).tasks.sum()
        losses[epoch + 1] = float(value.detach().double())
        return validate(run, epoch, row, model, params, *args)

    trainer.monitor.validate = recorded
    result = trainer.run()
    assert sorted(losses) == [10, 20] and trainer.evaluation.held_out() is held_out
    assert result.best_epoch == min(losses, key=losses.get)
    assert trainer.run_state.best.validation == pytest.approx(losses[result.best_epoch], rel=1e-6)


def test_a_loss_that_blows_up_stops_the_run_as_diverged(tmp_path):
    result = pinnspec.train(TINY, epochs=30, optimizer="adam(lr = 1e6)", out=str(tmp_path),
                            overrides={"checkpoint_every": 1})
    assert result.status == "diverged"
    assert "exceeds diverge_factor = 1e+06 times its lowest value" in result.message
    assert result.message.startswith("training diverged at epoch ")
    assert "task " in result.message
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["status"] == "diverged"


def test_the_blow_up_check_is_a_setting_and_zero_turns_it_off():
    result = pinnspec.train(TINY, epochs=10, optimizer="adam(lr = 1e6)", overrides={"diverge_factor": "0"})
    assert result.status in ("completed", "diverged")
    assert "diverge_factor" not in result.message  # only a NaN can stop it now


def test_the_lowest_loss_the_blow_up_check_compares_against_survives_a_resume(tmp_path):
    from pinnspec.engine import load_run

    pinnspec.train(TINY, epochs=20, out=str(tmp_path))
    history = np.genfromtxt(tmp_path / "history.csv", delimiter=",", names=True)
    lowest, epoch, tasks = load_run(str(tmp_path)).run_state.lowest_loss
    assert lowest == pytest.approx(history["loss"].min(), rel=1e-6)
    assert epoch == history["epoch"][history["loss"].argmin()]
    assert tasks == pytest.approx([history[f"task{i}"][epoch - 1] for i in range(3)], rel=1e-6)


def _tiny_with(statements: str) -> str:
    """tiny.pinn without its optimizer statement, plus ``statements``."""
    kept = [line for line in TINY.read_text().splitlines(keepends=True) if not line.startswith("optimizer")]
    return "".join(kept) + statements


@pytest.mark.parametrize("optimizer, expected", [
    ("adam", "gua(metric = adam, rho_m = 0.1, rho_v = 0.03)"),
    ("adamw", "gua(metric = adam, rho_m = 0.1, rho_v = 0.03)"),
    ("rmsprop", "gua(metric = adam, rho_m = 0, rho_v = 0.5)"),
    ("soap", "gua(metric = adam, rho_m = 0.03, rho_v = 0.003)"),
    ("sgd", "gua(metric = adam)"),
    ("msgd", "gua(metric = adam)"),
])
def test_gua_states_the_coefficients_it_uses(optimizer, expected):
    spec = loads(_tiny_with(f"optimizer {optimizer}\nalign gua\n"), filename="t.pinn")
    assert str(spec.ir.training.align) == expected


def test_explicit_gua_coefficients_stay_and_an_optimizer_without_state_alignment_refuses_them():
    spec = loads(_tiny_with("align gua(rho_m = 0.5)\n"), filename="t.pinn")
    assert str(spec.ir.training.align) == "gua(metric = adam, rho_m = 0.5, rho_v = 0.03)"
    with pytest.raises(pinnspec.SpecError, match="'sgd' has no state alignment"):
        loads(_tiny_with("optimizer sgd\nalign gua(rho_m = 0.5)\n"), filename="t.pinn")


def test_result_json_of_a_defaulted_gua_holds_numbers(tmp_path):
    pinnspec.train(TINY, epochs=3, align="gua", out=str(tmp_path))
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["align"] == "gua(metric = adam, rho_m = 0.1, rho_v = 0.03)"
    assert "None" not in (tmp_path / "result.json").read_text()


def test_epochs_are_counted_from_one_everywhere(tmp_path):
    result = pinnspec.train(TINY, epochs=20, out=str(tmp_path))
    history = np.genfromtxt(tmp_path / "history.csv", delimiter=",", names=True)
    assert history["epoch"][0] == 1 and history["epoch"][-1] == 20 == result.epochs_done
    validated = history["epoch"][~np.isnan(history["validation"])]
    assert list(validated) == [10, 20]  # `validate 100 every 10`: after the 10th and the 20th epoch
    assert result.best_epoch in (10, 20)


def test_grouping_default_named_explicitly_is_one_task_per_loss():
    spec = loads(TINY.read_text().replace("grouping = three", "grouping = default"), filename="t.pinn")
    assert spec.ir.grouping().name == "default"
    assert spec.ir.grouping().labels == ("N", "B", "I")
