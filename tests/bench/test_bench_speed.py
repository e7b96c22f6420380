"""bench speed: the hand-written baseline solves the same problem; a tiny run end to end."""

import csv
import math

import pytest
import torch

from pinnspec import bench
from pinnspec.bench import _speed
from pinnspec.bench._common import find_spec, load_spec
from pinnspec.bench._profile import instrument, profile_pair

pytestmark = pytest.mark.usefixtures("one_thread")  # one torch thread (conftest.py)

CPU = torch.device("cpu")


def _pair(grouping="three", points=64):
    trainer = _speed.build_trainer(find_spec(), points=points, grouping=grouping, surgery=None, align=None,
                                   device=CPU, seed=0, epochs=10)
    hand = _speed.build_hand(points=points, grouping=grouping, device=CPU, seed=0)
    return trainer, hand


@pytest.mark.parametrize("grouping", ["two", "three"])
def test_hand_written_baseline_is_the_same_problem(grouping):
    trainer, hand = _pair(grouping)
    same_weights, loss_difference, weight_difference = _speed.same_problem(trainer, hand)
    assert same_weights and weight_difference == 0.0
    assert loss_difference < 1e-5
    assert hand.num_params == sum(trainer.numels) == 10401
    losses = hand.step()
    assert len(losses) == trainer.grouping.m and all(math.isfinite(v) for v in losses)


def test_hand_written_points_lie_where_the_spec_puts_them():
    hand = _speed.build_hand(points=101, grouping="three", device=CPU, seed=3)
    x_f, x_b, x_i = hand.sample()
    assert x_f.shape == (101, 2) and x_f.requires_grad
    assert (x_f[:, 0].abs() <= 1).all() and (x_f[:, 1] >= 0).all() and (x_f[:, 1] <= 1).all()
    assert x_b.shape == (250, 2) and set(x_b[:, 0].tolist()) == {-1.0, 1.0}
    assert int((x_b[:, 0] == -1).sum()) == 125
    assert x_i.shape == (250, 2) and (x_i[:, 1] == 0).all()
    # a Latin hypercube: one point per stratum in every column
    strata = torch.floor((x_f[:, 1].detach().double()) * 101).long()
    assert sorted(strata.tolist()) == list(range(101))


def test_points_override_changes_only_the_counts():
    spec = load_spec(find_spec(), points={"burgers": 123}, overrides={"grouping": "three"})
    assert dict(spec.ir.sampling.points) == {"burgers": 123, "walls": 250, "ic": 250}
    assert spec.ir.training.options["grouping"] == "three"


def test_instrumented_step_times_every_stage_and_restores_the_trainer():
    from pinnspec.engine import _execute

    trainer, hand = _pair(points=32)
    model, loss_gradients, chain = trainer.model, _execute.loss_gradients, trainer.execution.ctx.chain
    trainer.step(0)
    ours, theirs = profile_pair(trainer, hand, CPU, epochs=2, first_epoch=1)
    for stage in ("sample points", "network forward", "input derivatives", "residuals + losses",
                  "loss-specific gradients", "surgery", "optimizer proposal", "alignment (GUA)", "apply update",
                  "diagnostics (conflicts)", "rest", "total"):
        assert ours[stage] >= 0 or stage == "rest", stage
    assert ours["total"] > 0 and theirs["total"] > 0 and "optimizer + apply" in theirs
    assert trainer.model is model and _execute.loss_gradients is loss_gradients
    assert trainer.execution.ctx.chain is chain and trainer.execution.ctx.model is model
    assert "losses" not in vars(trainer.problem) and "_sample" not in vars(trainer)
    trainer.step(3)  # still a working trainer
    with pytest.raises(RuntimeError), instrument(trainer, CPU):
        raise RuntimeError  # restored on errors too
    assert trainer.model is model and _execute.loss_gradients is loss_gradients


def test_the_plates_sampling_is_set_against_the_epoch(tmp_path, capsys):
    """The 4-hole plate of examples/plate_holes at 10k interior points: its sampling time and its
    fraction of the pinnspec epoch of the same run, printed and in speed.csv."""
    out = tmp_path / "speed"
    rc = bench.speed.main(["--epochs", "2", "--warmup", "0", "--points", "32", "--profile", "0",
                           "--memory-epochs", "0", "--threads", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    line = next(line for line in text.splitlines() if "sampling, 4-hole plate" in line)
    assert "(examples/plate_holes/plate_holes.pinn): 10000 interior + 2048 boundary points in " in line
    assert "(median of 3 draws) = " in line and " of one pinnspec epoch (" in line
    assert "ratio pinnspec / hand-written" in text  # the rest of the report is still there
    [row] = [r for r in csv.DictReader(open(out / "speed.csv")) if r["contender"] == "pinnspec"]
    seconds, fraction = float(row["plate_sampling_s"]), float(row["plate_sampling_of_epoch"])
    assert 0 < seconds < 0.5
    assert fraction == pytest.approx(seconds / float(row["median_s"]))
    assert "sampling, 4-hole plate" in (out / "speed.md").read_text()


def test_each_draw_of_the_plates_points_is_timed():
    from pinnspec.bench._speed import PLATE_BOUNDARY, find_plate, time_plate_sampling

    seconds = time_plate_sampling(find_plate(), 500, draws=2, device=CPU, dtype=torch.float32)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
    assert PLATE_BOUNDARY == {"outer": 1024, "rims": 1024}


def test_plate_points_zero_skips_the_plates_sampling(capsys):
    rc = bench.speed.main(["--epochs", "1", "--warmup", "0", "--points", "16", "--profile", "0",
                           "--memory-epochs", "0", "--threads", "1", "--plate-points", "0"])
    assert rc == 0
    assert "4-hole plate" not in capsys.readouterr().out


def test_the_compilers_own_footprint_is_measured_in_a_fresh_process():
    """With compile on, the memory report sets torch.compile's own RSS apart (a fresh interpreter,
    since this test process may have loaded inductor already): dynamo and inductor are tens of MiB."""
    from pinnspec.bench._speed import measure_memory

    result = measure_memory("compiler", {"device": "cpu", "threads": 1, "malloc": "tuned"})
    assert result["contender"] == "compiler"
    assert 20 * 2**20 < result["footprint"] < result["rss_setup"]


@pytest.mark.parametrize("argv", [["--points", "0"], ["--epochs", "0"], ["--grouping", "four"],
                                  ["--device", "tpu"], ["--spec", "no/such.pinn", "--epochs", "1"],
                                  ["--plate-points", "-1"]])
def test_bad_command_lines_are_user_errors(argv, capsys):
    assert bench.speed.main(argv) == 1
    assert "error" in capsys.readouterr().err


def test_help_exits_zero(capsys):
    assert bench.main("speed", ["--help"]) == 0
    assert "--points" in capsys.readouterr().out
    with pytest.raises(ValueError):
        bench.main("nope", [])


def test_torch_profile_counts_the_matrix_products():
    from pinnspec.bench._profile import torch_profile

    a, b = torch.randn(256, 256), torch.randn(256, 256)
    table, products, total = torch_profile(lambda epoch: torch.tanh(a @ b).sum(), CPU, epochs=3, first_epoch=0)
    assert "aten::mm" in table
    assert 0 < products < total  # the tanh and the sum are not products
    text = _speed.products_bound((table, products, total), ("", 1.0, 4 * products), 4 * products)
    assert "pinnspec's products alone are 0.250 of the unprofiled hand-written epoch" in text


def test_the_report_says_what_of_the_step_is_compiled():
    """Built, not run (nothing compiles before the first step)."""
    def parts(surgery=None):
        trainer = _speed.build_trainer(find_spec(), points=64, grouping="three", surgery=surgery, align=None,
                                       device=CPU, seed=0, epochs=2, engine="forward", compile="on")
        return trainer, _speed.compiled_parts(trainer)

    assert parts()[1].startswith("one graph (losses, G and the update chain as one graph")
    assert parts("pcgrad")[1] == ("losses compiled, chain eager (every point set's losses and G as one graph; "
                                  "the update chain eagerly)")
    trainer, _ = parts()
    trainer.execution._demote("step")  # what a one graph that does not compile falls back to
    assert _speed.compiled_parts(trainer) == ("two graphs (every point set's losses and G as one graph; the "
                                              "update chain compiled apart)")
    trainer.execution._demote("losses")
    assert _speed.compiled_parts(trainer).startswith("eager (losses and G eagerly")


def test_float64_trainer_and_baseline_are_the_same_problem():
    """--dtype float64: pinnspec's float64 trainer and the float64 hand-written baseline start from the same
    weights and agree on the epoch-0 losses to float64 precision."""
    trainer = _speed.build_trainer(find_spec(), points=64, grouping="three", surgery=None, align=None, device=CPU,
                                   seed=0, epochs=4, dtype="float64")
    hand = _speed.build_hand(points=64, grouping="three", device=CPU, seed=0, dtype="float64")
    assert trainer.dtype == torch.float64 and all(w.dtype == torch.float64 for w in hand.params)
    same_weights, loss_difference, weight_difference = _speed.same_problem(trainer, hand)
    assert same_weights and weight_difference == 0.0
    assert loss_difference < 1e-12
    trainer.step(0)
    trainer.step(1)
    assert all(t.dtype == torch.float64 for t in trainer.theta)


def test_speed_end_to_end_with_both_dtypes_interleaved(tmp_path, capsys):
    """--dtype both: a float32 and a float64 pair in one process, each dtype's rows, the float64 / float32
    ratio per contender, in the printed table and in speed.csv / speed_epochs.csv / speed_stages.csv; the
    settings behind the figures (allocator, threads, device) printed."""
    out = tmp_path / "speed"
    rc = bench.speed.main(["--dtype", "both", "--epochs", "2", "--warmup", "0", "--points", "32", "--profile", "1",
                           "--memory-epochs", "1", "--plate-points", "0", "--threads", "1", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for needle in ("allocator:", "torch threads 1", "device cpu", "where the time goes",
                   "dtype float32 and float64", "same problem (float32): initial weights identical",
                   "same problem (float64): initial weights identical", "(config(), gua, float32)",
                   "(config(), gua, float64)", "ratio pinnspec / hand-written (per round, float64)",
                   "float64 / float32, pinnspec (per round)", "float64 / float32, hand-written (per round)",
                   "where the time goes (float64)", "float64 / float32 (median over rounds",
                   "target: median ratio <= 1.05"):
        assert needle in text, needle
    rows = list(csv.DictReader(open(out / "speed.csv")))
    assert [(r["contender"], r["dtype"]) for r in rows] == [
        ("pinnspec", "float32"), ("hand", "float32"), ("ratio", "float32"),
        ("pinnspec", "float64"), ("hand", "float64"), ("ratio", "float64"),
        ("float64/float32 pinnspec", "float64/float32"), ("float64/float32 hand", "float64/float32")]
    by = {(r["contender"], r["dtype"]): r for r in rows}
    for dtype in ("float32", "float64"):
        for who in ("pinnspec", "hand"):
            assert float(by[who, dtype]["median_s"]) > 0 and int(by[who, dtype]["epoch_peak_rss_bytes"]) > 0
            assert by[who, dtype]["allocator"]
        assert float(by["ratio", dtype]["median_s"]) > 0
    ratio = float(by["float64/float32 pinnspec", "float64/float32"]["median_s"])
    assert 0 < ratio < 100
    epochs = list(csv.DictReader(open(out / "speed_epochs.csv")))
    assert sorted((r["dtype"], r["round"]) for r in epochs) == [
        ("float32", "0"), ("float32", "1"), ("float64", "0"), ("float64", "1")]
    assert {r["dtype"] for r in csv.DictReader(open(out / "speed_stages.csv"))} == {"float32", "float64"}
    assert "float64 / float32" in (out / "speed.md").read_text() and (out / "speed.md").read_text().count("|") > 10


def test_speed_in_float64_alone(capsys):
    rc = bench.speed.main(["--dtype", "float64", "--epochs", "1", "--warmup", "0", "--points", "32", "--profile",
                           "0", "--memory-epochs", "0", "--plate-points", "0", "--threads", "1"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "dtype float64" in text and "-> measured " in text and " in float64: " in text
    assert "float64 / float32" not in text
