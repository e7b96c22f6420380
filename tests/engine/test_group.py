"""`RunGroup`: runs that differ only in their update chain, trained in lockstep with their losses and G as one
batched graph.  The oracle is each run trained alone, eagerly (no compiled graph): the batched graph rounds
differently, so the histories agree to rounding, not bit for bit; a group resumed from its checkpoints goes on bit
for bit."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.engine import RunGroup, Trainer, group_blocker, load_run
from pinnspec.engine._artifacts import load_checkpoint
from pinnspec.engine._step import BATCHED
from pinnspec.lang._overrides import apply_overrides

TINY = Path(__file__).resolve().parent / "data" / "tiny.pinn"
#: two runs everywhere: every test's group compiles the same batched graph (inductor's cache serves the repeats)
CHAINS = [{"surgery": "none", "align": "none"}, {"surgery": "config", "align": "gua"}]


def _trainer(out=None, log=None, **settings) -> Trainer:
    """A run of the tiny spec, compiled; G at every step (`diagnostics = every`), as in a group, so that a run
    alone and in a group take the same strategy."""
    spec = apply_overrides(pinnspec.load(TINY), {"device": "cpu", "dtype": "float64", "compile": "on",
                                                 "epochs": "6", "validate": "100 every 3", "diagnostics": "every",
                                                 **settings})
    return Trainer(spec, out, log=log)


@pytest.mark.inductor
def test_a_group_trains_each_run_as_it_trains_alone():
    """The oracle: each run alone and eagerly (`compile = off`: no compiled graph at all)."""
    alone = [_trainer(compile="off", **chain) for chain in CHAINS]
    for trainer in alone:
        trainer.run()
    together = [_trainer(**chain) for chain in CHAINS]
    results = RunGroup(together).run()
    assert [r.status for r in results] == ["completed"] * 2
    assert {r.execution for r in results} == {BATCHED}
    for a, b in zip(alone, together):
        assert len(a.run_state.history) == len(b.run_state.history) == 6
        for row_a, row_b in zip(a.run_state.history, b.run_state.history):
            assert row_b["loss"] == pytest.approx(row_a["loss"], rel=1e-9)
            assert [row_b[f"task{i}"] for i in range(3)] == pytest.approx([row_a[f"task{i}"] for i in range(3)],
                                                                          rel=1e-9)
        torch.testing.assert_close(b.theta_flat(), a.theta_flat(), rtol=1e-8, atol=1e-10)
    # the chains took different steps: the group did not train one run twice
    assert not torch.equal(together[0].theta_flat(), together[1].theta_flat())


def test_a_resumed_group_goes_on_bit_for_bit(tmp_path):
    uninterrupted = [_trainer(str(tmp_path / "a" / str(k)), checkpoint_every="3", **c) for k, c in enumerate(CHAINS)]
    RunGroup(uninterrupted).run()
    # the second run's first validation (after epoch 3, when the first run has gone through its epoch) asks the
    # group to stop, as Ctrl-C does: every run stops at epoch 3
    stopper = []
    stopped = [_trainer(str(tmp_path / "b" / str(k)), checkpoint_every="3", **c,
                        log=(lambda line: stopper[0].request_stop()) if k == 1 else None)
               for k, c in enumerate(CHAINS)]
    stopper.append(RunGroup(stopped))
    assert [r.status for r in stopper[0].run()] == ["interrupted"] * 2
    assert [t.run_state.epoch for t in stopped] == [3, 3]
    resumed = [load_run(str(tmp_path / "b" / str(k))) for k in range(2)]
    assert [r.status for r in RunGroup(resumed).run()] == ["completed"] * 2
    for a, b in zip(uninterrupted, resumed):
        assert torch.equal(a.theta_flat(), b.theta_flat())
        assert [row["loss"] for row in a.run_state.history] == [row["loss"] for row in b.run_state.history]


def test_a_group_whose_batched_results_are_overwritten_by_the_next_epoch_trains_the_same(monkeypatch):
    """Under `compile = graphs` the batched graph is a CUDA graph, whose outputs live in buffers that its next
    replay overwrites: no run may keep them (in its chain's state, say) past its epoch.  Emulated here: the
    results copied into the same buffers at every call; the runs end as a plain group's, bit for bit."""
    from pinnspec.engine import _compiled

    plain = [_trainer(**chain) for chain in CHAINS]
    RunGroup(plain).run()
    compute, buffers = _compiled.BatchedGradients.__call__, []

    def into_the_same_buffers(self, thetas, points):
        results = compute(self, thetas, points)
        if not buffers:
            buffers.extend(torch.empty_like(r) for r in results)
        for buffer, result in zip(buffers, results):
            buffer.copy_(result)
        return tuple(buffers)

    monkeypatch.setattr(_compiled.BatchedGradients, "__call__", into_the_same_buffers)
    replayed = [_trainer(**chain) for chain in CHAINS]
    RunGroup(replayed).run()
    for a, b in zip(plain, replayed):
        assert torch.equal(a.theta_flat(), b.theta_flat())


def test_a_run_that_diverges_stops_alone():
    trainers = [_trainer(optimizer="sgd(lr = 1e12)", diverge_factor="10"), _trainer(diverge_factor="10")]
    results = RunGroup(trainers).run()
    assert results[0].status == "diverged" and "diverge" in results[0].message.lower()
    assert results[1].status == "completed"
    assert trainers[0].run_state.epoch < 6 and trainers[1].run_state.epoch == 6
    assert results[0].train_time_s < results[1].train_time_s  # its own time, not the time the group went on
    assert results[0].group["group"] == results[1].group["group"] and [r.group["lane"] for r in results] == [0, 1]


@pytest.mark.inductor
def test_a_group_hands_the_collector_back_after_its_runs_and_when_one_cannot_begin(monkeypatch):
    import gc

    assert gc.get_freeze_count() == 0
    RunGroup([_trainer(**chain) for chain in CHAINS]).run()
    assert gc.get_freeze_count() == 0
    trainers = [_trainer(**chain) for chain in CHAINS]

    def fails(**_):
        raise OSError("the run directory cannot be written")

    monkeypatch.setattr(trainers[1], "begin_run", fails)
    with pytest.raises(OSError):
        RunGroup(trainers).run()
    assert gc.get_freeze_count() == 0


def test_a_group_built_and_never_trained_leaves_its_runs_as_they_were():
    trainers = [_trainer(**chain) for chain in CHAINS]
    RunGroup(trainers)
    assert [t.run_state.group_lane for t in trainers] == [None, None]
    result = trainers[0].run()
    assert (result.status, result.execution, result.group) == ("completed", "one graph", None)


def test_a_run_resumed_without_its_groups_diverged_run_goes_on_bit_for_bit(tmp_path, capsys):
    """A group of two whose first run diverges at its first step, stopped (as Ctrl-C does) after epoch 3: the other
    run, resumed on its own, goes on in its lane of the group's batched graph (the diverged run's lane a copy) and
    ends as the uninterrupted group's run did, bit for bit (alone, its own graph rounds otherwise: 6e-17)."""
    diverging = {"optimizer": "sgd(lr = 1e12)", "diverge_factor": "10"}

    def group(name, log=None):
        return [_trainer(str(tmp_path / name / "0"), checkpoint_every="3", **diverging),
                _trainer(str(tmp_path / name / "1"), checkpoint_every="3", diverge_factor="10", log=log)]

    uninterrupted = group("a")
    assert [r.status for r in RunGroup(uninterrupted).run()] == ["diverged", "completed"]
    stopper = []  # the second run's first validation (after epoch 3) asks the group to stop
    stopper.append(RunGroup(group("b", log=lambda line: stopper[0].request_stop())))
    assert [r.status for r in stopper[0].run()] == ["diverged", "interrupted"]
    resumed = load_run(str(tmp_path / "b" / "1"))
    assert (resumed.run_state.epoch, resumed.run_state.group_lane[:2]) == (3, (1, 2))
    capsys.readouterr()
    result = resumed.run()
    assert (result.status, result.execution) == ("completed", BATCHED)
    assert "goes on in its lane 2 of the group's batched graph" in capsys.readouterr().err
    assert torch.equal(resumed.theta_flat(), uninterrupted[1].theta_flat())
    assert [row["loss"] for row in resumed.run_state.history] == [row["loss"] for row in uninterrupted[1].run_state.history]


def test_a_run_of_a_group_that_cannot_go_on_in_its_lane_goes_on_alone_and_says_so(tmp_path, capsys):
    """Its checkpoint loaded into a run that no longer compiles (`compile = off`): it trains alone, eagerly."""
    RunGroup([_trainer(str(tmp_path / str(k)), epochs="3", **chain) for k, chain in enumerate(CHAINS)]).run()
    trainer = _trainer(str(tmp_path / "0"), compile="off", **CHAINS[0])
    trainer.load_state_dict(load_checkpoint(str(tmp_path / "0" / "checkpoint.pt")))
    assert trainer.run_state.group_lane[:2] == (0, 2)
    capsys.readouterr()
    assert trainer.run().status == "completed" and trainer.run_state.epoch == 6
    err = capsys.readouterr().err
    assert "trained in a group of 2 runs and goes on alone" in err and "compile = on or graphs" in err
    assert trainer.run_state.group_lane is None and "group" not in trainer.state_dict()


def test_runs_of_other_seeds_group_where_their_points_do_not_depend_on_the_seed():
    """Hammersley points drawn once (PINNacle's protocol): seeds 0 and 1 share the points, each run starts from
    its own seed's weights; each trains as it does alone and eagerly."""
    runs = [dict(CHAINS[0], seed="0"), dict(CHAINS[1], seed="1")]
    sampling = {"sampler": "hammersley", "resample": "never"}
    alone = [_trainer(compile="off", **sampling, **run) for run in runs]
    for trainer in alone:
        trainer.run()
    together = [_trainer(**sampling, **run) for run in runs]
    assert [r.status for r in RunGroup(together).run()] == ["completed"] * 2
    for a, b in zip(alone, together):
        assert [row["loss"] for row in b.run_state.history] == pytest.approx([row["loss"] for row in a.run_state.history], rel=1e-9)
        torch.testing.assert_close(b.theta_flat(), a.theta_flat(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("settings, blocked", [
    ({"seed": "1"}, "the seeds 0, 1 train on other points"),  # tiny.pinn's sampler draws from the seed
    ({"points": "pde 100, walls 40, ic 40"}, "another problem, points or settings"),
    ({"compile": "off"}, "compile = on or graphs"),
    ({"stage": "adam(lr = 1e-3) epochs = 3; lbfgs epochs = 3", "epochs": None}, "stages"),
])
def test_what_keeps_runs_from_a_group(settings, blocked):
    """Settings in which the second run differs from the first (compile and stages: both runs)."""
    both = {k: v for k, v in settings.items() if k in ("compile", "stage", "epochs")}
    trainers = [_trainer(**both), _trainer(surgery="config", **settings)]
    reason = group_blocker(trainers)
    assert reason is not None and blocked in reason
    with pytest.raises(ValueError, match="cannot train as one group"):
        RunGroup(trainers)


@pytest.mark.parametrize("mode, falls_back", [("reduce-overhead", True), ("default", False)])
def test_a_batched_cuda_graph_that_cannot_be_recorded_leaves_each_run_its_own(monkeypatch, mode, falls_back):
    """Under `compile = graphs` on a GPU an op that a CUDA graph cannot hold fails in the first calls with a CUDA
    error (a RuntimeError): each run then takes its own plan.  Without CUDA graphs such an error is the runs' own
    and stops them.  (The failure is a stand-in: `compile = graphs` records CUDA graphs on a GPU only.)"""
    from pinnspec.engine import _compiled

    def fails(self, thetas, points):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing (a test's stand-in)")

    monkeypatch.setattr(_compiled.BatchedGradients, "__call__", fails)
    notices = []
    group = RunGroup([_trainer(), _trainer(optimizer="adam(lr = 1e-2)")], notice=notices.append)
    group.batched.mode = mode
    if not falls_back:
        with pytest.raises(RuntimeError, match="a test's stand-in"):
            group.run()
        return
    assert [r.execution for r in group.run()] == ["one graph"] * 2
    assert len(notices) == 1 and "cannot be recorded as a CUDA graph (" in notices[0]


def test_runs_whose_networks_have_other_fixed_tensors_do_not_group():
    """A Fourier-feature network's matrix is drawn from the seed and not trained: the batched graph reads one
    network's, so seeds 0 and 1 (on Hammersley points, which do not depend on the seed) cannot share it."""
    settings = {"sampler": "hammersley", "resample": "never",
                "model": "fourier_mlp(width = 8, depth = 2, features = 4)"}
    reason = group_blocker([_trainer(seed="0", **settings), _trainer(seed="1", surgery="config", **settings)])
    assert reason is not None and "other fixed (untrained) tensors" in reason and "Fourier" in reason
    assert group_blocker([_trainer(seed="0", **settings), _trainer(seed="0", surgery="config", **settings)]) is None


def test_a_group_needs_two_runs():
    assert "at least two runs (or a run that trained in one)" in group_blocker([_trainer()])


def test_a_batched_graph_that_does_not_compile_leaves_each_run_its_own(monkeypatch):
    from pinnspec.engine import _compiled

    def fails(self, thetas, points):
        raise torch._dynamo.exc.Unsupported("a test's stand-in for a failed trace")

    monkeypatch.setattr(_compiled.BatchedGradients, "__call__", fails)
    notices = []
    # two plain Adam runs (one graph to compile, which the second run and the run alone find in inductor's cache)
    trainers = [_trainer(), _trainer(optimizer="adam(lr = 1e-2)")]
    results = RunGroup(trainers, notice=notices.append).run()
    assert [r.status for r in results] == ["completed"] * 2
    assert [r.execution for r in results] == ["one graph"] * 2
    assert len(notices) == 1 and "batched losses do not compile (a test's stand-in" in notices[0]
    assert [t.run_state.group_lane for t in trainers] == [None, None]  # trained on their own: no lane to resume in
    alone = _trainer(optimizer="adam(lr = 1e-2)")
    alone.run()
    assert torch.equal(alone.theta_flat(), trainers[1].theta_flat())  # its own graph: the run alone, bit for bit
