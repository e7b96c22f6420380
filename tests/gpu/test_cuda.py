"""The CUDA path (skipped without a GPU; run on a lent GPU machine by ``.ci/gpu-check``).

What the CPU suite checks, here on CUDA: training with every surgery method and GUA, runs trained as a group,
the forward engine against nested autograd, the compiled losses (inductor, and CUDA
graphs) and the one-graph step against the eager ones, same seed -> same run, and resume from a checkpoint."""

from pathlib import Path

import pytest
import torch

import pinnspec
from pinnspec.engine import Trainer, loss_gradients, resume
from pinnspec.engine._execute import TwoGraphs
from pinnspec.lang._overrides import apply_overrides

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "engine" / "data" / "tiny.pinn"
BURGERS = ROOT / "specs" / "burgers.pinn"
SURGERY = ["none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config", "mconfig"]


def _spec(path, **settings):
    return apply_overrides(pinnspec.load(path), {"device": "cuda", **settings})


def test_device_auto_picks_cuda():
    trainer = Trainer(apply_overrides(pinnspec.load(TINY), {"device": "auto", "epochs": 1}))
    assert trainer.device.type == "cuda"
    assert all(t.device.type == "cuda" for t in trainer.theta)


@pytest.mark.parametrize("surgery", SURGERY)
def test_every_surgery_with_gua_trains_on_cuda(surgery):
    result = Trainer(_spec(TINY, surgery=surgery, align="gua", epochs=12)).run()
    assert result.status == "completed" and result.device.startswith("cuda")
    assert result.rates["R_p"] == 0.0  # GUA leaves no conflicting update on CUDA either
    assert result.peak_memory_mb > 0


def test_same_seed_same_run_on_cuda():
    a = Trainer(_spec(TINY, epochs=15)).run()
    b = Trainer(_spec(TINY, epochs=15)).run()
    assert a.rel_l2 == b.rel_l2 and a.rates == b.rates


def test_resume_on_cuda_is_bit_identical(tmp_path):
    whole = Trainer(_spec(TINY, epochs=20), out=str(tmp_path / "whole")).run()
    first = Trainer(_spec(TINY, epochs=20, checkpoint_every=10), out=str(tmp_path / "split"))
    step = first.step

    def interrupted_after_ten(epoch):  # as Ctrl-C during epoch 9: finish it, checkpoint, stop
        row = step(epoch)
        first._stop_requested = epoch == 9
        return row

    first.step = interrupted_after_ten
    assert first.run().status == "interrupted"
    resumed = resume(str(tmp_path / "split"))
    assert resumed.epochs_done == 20 and resumed.rel_l2 == whole.rel_l2


@pytest.mark.parametrize("spec", [BURGERS, ROOT / "specs" / "schrodinger.pinn"])
def test_forward_engine_equals_autograd_on_cuda(spec):
    trainer = Trainer(_spec(spec, dtype="float64", epochs=1))
    points = trainer.points.at(0)
    values = {}
    for engine in ("autograd", "forward"):
        losses = trainer.problem.losses(trainer.model, points, trainer.params, trainer.grouping.name, engine=engine)
        values[engine] = (losses.tasks.detach(), loss_gradients(losses.task_list, trainer.theta))
    torch.testing.assert_close(values["forward"][0], values["autograd"][0], rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(values["forward"][1], values["autograd"][1], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("mode", ["on", "graphs"])
def test_compiled_losses_equal_eager_on_cuda(mode):
    trainer = Trainer(_spec(BURGERS, compile=mode, grouping="three", epochs=6))
    assert trainer.plan.mode == ("reduce-overhead" if mode == "graphs" else "default")
    units = trainer.execution.compiled_losses()
    for epoch in range(3):  # CUDA graphs record on the first calls and replay after
        points = trainer.points.at(epoch)
        eager = trainer.problem.losses(trainer.model, points, trainer.params, "three", engine=trainer.plan.engine)
        eager_G = loss_gradients(eager.task_list, trainer.theta)
        compiled = units.losses(points, trainer.params, "three")
        compiled_G = loss_gradients(compiled.task_list, trainer.theta)
        torch.testing.assert_close(compiled.tasks, eager.tasks, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(compiled_G, eager_G, rtol=1e-3, atol=1e-6)
        # every set in one compiled unit, one backward pass (what the trainer's step takes)
        fused, fused_G = units.losses_and_gradients(points, trainer.params, "three", trainer.theta_flat())
        torch.testing.assert_close(fused.tasks, eager.tasks, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(fused_G, eager_G, rtol=1e-3, atol=1e-6)
        trainer.step(epoch)
    assert trainer.run().status == "completed"


@pytest.mark.parametrize("mode", ["on", "graphs"])
def test_compiled_update_chain_equals_eager_on_cuda(mode, capsys):
    """surgery -> proposal -> GUA -> diagnostics compiled on CUDA (never run on a GPU when written:
    a failure here that the trainer turned into its eager fallback shows as the notice)."""
    trainer = Trainer(_spec(BURGERS, compile=mode, grouping="three", epochs=8))
    assert "two graphs" in [c.name for c in trainer.plan.candidates]
    chain = TwoGraphs(trainer.execution.ctx, trainer.execution.compiled_losses(), compile_chain=True).chain
    for epoch in range(5):
        points = trainer.points.at(epoch)
        losses = trainer.problem.losses(trainer.model, points, trainer.params, "three")
        G = loss_gradients(losses.task_list, trainer.theta)
        theta = trainer.theta_flat()
        compiled = chain(G.clone(), theta, None, trainer.chain_state.surgery, trainer.chain_state.optimizer)
        eager = trainer.chain.update(G.clone(), theta, trainer.chain_state)
        torch.testing.assert_close(compiled.p, eager.p, rtol=1e-4, atol=1e-7)
        for a, b in zip(compiled.checks, eager.checks):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
        trainer._apply(1e-3, eager.p)
        trainer.chain_state = eager.state
    assert trainer.run().status == "completed"
    assert "does not compile" not in capsys.readouterr().err


@pytest.mark.parametrize("mode, grouping", [("on", "three"), ("graphs", "two"), ("graphs", "three")])
def test_the_one_graph_step_equals_eager_on_cuda(mode, grouping, capsys):
    """Losses, G and the update chain as one compiled graph on CUDA; with ``graphs`` one CUDA graph, its
    step counts device tensors (ConFIG at m = 2 in closed form, at m = 3 by an LU solve without error
    checks).  (A failure the trainer turned into its fallback shows as the notice.)"""
    eager = Trainer(_spec(BURGERS, grouping=grouping, epochs=6, dtype="float64"))
    compiled = Trainer(_spec(BURGERS, compile=mode, grouping=grouping, epochs=6, dtype="float64"))
    assert compiled.execution.current == ("one CUDA graph" if mode == "graphs" else "one graph")
    for epoch in range(6):
        a, b = eager.step(epoch), compiled.step(epoch)
        for key in ["loss"] + [f"task{i}" for i in range(compiled.grouping.m)]:
            assert b[key] == pytest.approx(a[key], rel=1e-9), key
    for x, y in zip(eager.theta, compiled.theta):
        torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-12)
    assert compiled.execution.current == ("one CUDA graph" if mode == "graphs" else "one graph")
    assert "does not compile" not in capsys.readouterr().err


@pytest.mark.parametrize("stack", ["auto", "sets"])
@pytest.mark.parametrize("mode", ["on", "graphs"])
def test_a_set_that_feeds_two_tasks_is_one_stacked_graph_on_cuda(mode, stack, schrodinger_four, capsys):
    """Schroedinger's two equations as tasks of their own share the interior point set.  Stacked (``stack =
    auto``, ``on`` on CUDA: one product per hidden layer, one vmapped pullback of the two tasks; ``sets``: one
    network pass over every set, one vmapped pullback of the four tasks) the step is one graph, with ``graphs``
    one CUDA graph, and equals the eager steps with ``stack = off``."""
    path = schrodinger_four
    eager = Trainer(_spec(path, grouping="four", stack="off", epochs=6, dtype="float64"))
    compiled = Trainer(_spec(path, grouping="four", compile=mode, stack=stack, epochs=6, dtype="float64"))
    assert compiled.problem.stacked("cuda") and not eager.problem.stacked("cuda")
    assert compiled.execution.current == ("one CUDA graph" if mode == "graphs" else "one graph")
    for epoch in range(6):
        a, b = eager.step(epoch), compiled.step(epoch)
        for key in ["loss"] + [f"task{i}" for i in range(4)]:
            assert b[key] == pytest.approx(a[key], rel=1e-9), key
    for x, y in zip(eager.theta, compiled.theta):
        torch.testing.assert_close(y, x, rtol=1e-9, atol=1e-12)
    assert compiled.execution.current == ("one CUDA graph" if mode == "graphs" else "one graph")
    assert "does not compile" not in capsys.readouterr().err


@pytest.mark.parametrize("m", [2, 3])
def test_config_and_gua_queue_without_a_synchronisation(m):
    """ConFIG (m = 2 closed form, m = 3 an LU solve without error checks) and GUA (enumeration on the
    device) run with CUDA's sync debug mode set to error: neither waits for the GPU."""
    from pinnspec.align import GUA
    from pinnspec.optim import Adam
    from pinnspec.surgery import make as make_surgery

    gen = torch.Generator(device="cuda").manual_seed(0)
    p_dim = 10_401
    G = torch.randn(m, p_dim, device="cuda", generator=gen)
    theta = torch.randn(p_dim, device="cuda", generator=gen)
    optimizer = Adam()
    state = optimizer.init(theta)
    for _ in range(3):
        _, state = optimizer.propose(torch.randn(p_dim, device="cuda", generator=gen), state)
    surgery = make_surgery("config")
    GUA().align(-G[0], G, state, optimizer, params=theta)  # warm: the active-set masks are cached on the device
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        a = surgery(G)[0]
        u, tentative = optimizer.propose(a, state, params=theta)
        p, aligned = GUA().align(-G[0] + 0.1 * u, G, tentative, optimizer, params=theta)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    from pinnspec.align import conflicting

    assert not conflicting(G, p)


def test_points_reach_the_gpu_intact():
    """Points go to the GPU through pinned memory and an asynchronous copy: the same values as the
    CPU sample, epoch after epoch (the pinned buffers are not reused before their copies end)."""
    from pinnspec.compiler import CompiledProblem

    problem = CompiledProblem(pinnspec.load(BURGERS))
    for epoch in range(4):
        on_gpu = problem.sample(epoch, 0, device="cuda")
        on_cpu = problem.sample(epoch, 0, device="cpu")
        for g, c in zip(on_gpu.sets, on_cpu.sets):
            assert g.x.device.type == "cuda" and g.x.requires_grad
            assert torch.equal(g.x.detach().cpu(), c.x.detach())


def test_a_sweep_resumes_a_cuda_run_from_its_checkpoint(tmp_path):
    """A sweep worker loads the checkpoint of an interrupted CUDA run and ends it as the uninterrupted run."""
    import json
    import signal

    from pinnspec.sweep import Sweep, run_sweep
    from pinnspec.sweep._grid import plan

    fixed = {"epochs": 20, "checkpoint_every": 5, "device": "cuda"}
    split = Sweep(TINY, seeds=[0], fixed=fixed, out=tmp_path / "split")
    (run,) = plan(split)

    def ctrl_c_at_epoch_10(line):
        if line.startswith("epoch 10/"):
            signal.raise_signal(signal.SIGINT)  # the trainer finishes the epoch, checkpoints, stops

    spec = pinnspec.loads(run.source, filename=run.filename, base_dir=run.base_dir)
    assert pinnspec.train(spec, out=run.run_dir, log=ctrl_c_at_epoch_10).status == "interrupted"
    report = run_sweep(split, jobs=1, threads=1, log=lambda line: None)
    assert report.actions == {run.name: "resume"} and report.outcomes[run.name]["resumed_from"] == 10
    whole = run_sweep(Sweep(TINY, seeds=[0], fixed=fixed, out=tmp_path / "whole"), jobs=1, threads=1,
                      log=lambda line: None)
    (full,) = whole.runs
    resumed, uninterrupted = (json.loads(Path(r.run_dir, "result.json").read_text()) for r in (run, full))
    assert resumed["status"] == "completed" and resumed["rel_l2"] == uninterrupted["rel_l2"]


def test_a_group_queues_every_runs_step_without_a_synchronisation():
    """One epoch of a group up to its one wait (`RunGroup._launch`: the batched losses and G, then adam's and
    ConFIG + GUA's chains) with CUDA's sync debug mode set to error, after three epochs to compile."""
    from pinnspec.engine import RunGroup

    trainers = [Trainer(_spec(TINY, compile="on", epochs=10, **chain))
                for chain in ({"surgery": "none"}, {"surgery": "config", "align": "gua"})]
    group = RunGroup(trainers)
    for epoch in range(3):
        group.step(epoch)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        launched = group._launch(3, trainers)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    rows = [trainer.step(3, queued) for trainer, queued in zip(trainers, launched)]
    assert all(row["loss"] > 0 for row in rows)


@pytest.mark.parametrize("mode", ["on", "graphs"])
def test_a_group_trains_each_run_as_alone_on_cuda(mode, capsys):
    """`RunGroup` on CUDA (``graphs``: the batched losses recorded as a CUDA graph, whose outputs the next replay
    overwrites): adam, ConFIG and ConFIG + GUA in lockstep, each as it trains alone, to rounding (float64)."""
    from pinnspec.engine import RunGroup

    chains = [{"surgery": "none"}, {"surgery": "config"}, {"surgery": "config", "align": "gua"}]

    def trainer(chain):
        return Trainer(_spec(TINY, compile=mode, epochs=6, dtype="float64", **chain))

    alone = [trainer(chain) for chain in chains]
    for t in alone:
        t.run()
    together = [trainer(chain) for chain in chains]
    results = RunGroup(together).run()
    assert [r.execution for r in results] == ["batched runs"] * 3 and "do not compile" not in capsys.readouterr().err
    for a, b in zip(alone, together):
        assert [row["loss"] for row in b.run_state.history] == pytest.approx([row["loss"] for row in a.run_state.history], rel=1e-9)
        torch.testing.assert_close(b.theta_flat(), a.theta_flat(), rtol=1e-8, atol=1e-10)
