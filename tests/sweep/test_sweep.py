"""pinnspec sweep: a 2 x 2 grid on the local pool gives a 4-row table; a restart
skips finished runs; an interrupted run (with a checkpoint) is resumed and ends
like an uninterrupted one; a diverged run is counted, not averaged; a Ray
cluster gives the same numbers; an invalid grid key stops everything; a
stopped run resumes with other execution settings, not with other training."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pinnspec._files import read_csv
from pinnspec.sweep import (Run, Sweep, SweepError, execution_changes, main, markdown, plan, read_run, run_sweep,
                            run_sweeps, summarize)

TINY = Path(__file__).resolve().parents[1] / "engine" / "data" / "tiny.pinn"
FIXED = ["--set", "epochs=20", "--set", "checkpoint_every=5"]
GRID = ["--grid", "surgery=config,pcgrad", "--grid", "align=gua,none", *FIXED, "--seeds", "0", "--threads", "1"]
VOLATILE = {"train_time_s", "peak_memory_mb", "run_dir", "message"}


def without_time(rows):
    return [{k: v for k, v in row.items() if not k.startswith(("train_time_s", "peak_memory_mb"))} for row in rows]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "local"
    assert main([str(TINY), *GRID, "--jobs", "2", "--out", str(out)]) == 0
    return out


def test_local_pool_runs_the_grid_into_one_table(local):
    table = read_csv(local / "summary.csv")
    assert [(r["surgery"], r["align"]) for r in table] == [("config", "gua"), ("config", "none"),
                                                           ("pcgrad", "gua"), ("pcgrad", "none")]
    for row in table:
        assert (row["runs"], row["completed"], row["diverged"], row["stopped"], row["not_run"]) == ("1", "1", "0", "0", "0")
        assert 0 < float(row["rel_l2_mean"]) < 10 and 0 <= float(row["R_u_mean"]) <= 1
        assert (row["R_p_mean"] == "") == (row["align"] == "none")
    for name in ("surgery=config__align=gua__seed=0", "surgery=pcgrad__align=none__seed=0"):
        assert json.loads((local / name / "result.json").read_text())["status"] == "completed"
    markdown = (local / "summary.md").read_text()
    assert sum(line.startswith("| `") for line in markdown.splitlines()) == 4
    assert len(read_csv(local / "runs.csv")) == 4


def test_restart_skips_finished_runs(local, capsys):
    results = sorted(local.glob("*/result.json"))
    before = {p: p.stat().st_mtime_ns for p in results}
    table = (local / "summary.csv").read_text()
    assert main([str(TINY), *GRID, "--out", str(local)]) == 0
    assert "4 finished (skipped), 0 to resume, 0 to start" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in results} == before
    assert (local / "summary.csv").read_text() == table


def test_several_sweeps_share_one_pool_and_give_their_own_tables(local, tmp_path):
    """run_sweeps: the two halves of the grid as two sweeps run in one 2-process pool (one run of each
    at a time) and give the rows the one sweep gave."""
    fixed = {"epochs": "20", "checkpoint_every": "5"}
    halves = [Sweep(str(TINY), grid={"align": ["gua", "none"]}, seeds=[0], fixed={**fixed, "surgery": surgery},
                    out=str(tmp_path / surgery)) for surgery in ("config", "pcgrad")]
    lines = []
    reports = run_sweeps(halves, jobs=2, threads=1, log=lines.append)
    assert [r.exit_code for r in reports] == [0, 0]
    assert sum("2 to start; on 2 local process(es)" in line for line in lines) == 2
    assert sum(": completed (20/20 epochs" in line for line in lines) == 4
    whole = {(r["surgery"], r["align"]): r for r in read_csv(local / "summary.csv")}
    for surgery, report in zip(("config", "pcgrad"), reports):
        assert (tmp_path / surgery / "summary.csv").is_file()
        for row in report.table:
            same = whole[(surgery, row["align"])]
            for key in ("rel_l2_mean", "R_g_mean", "R_u_mean"):
                assert float(row[key]) == pytest.approx(float(same[key]), rel=1e-6)
    with pytest.raises(SweepError, match="same output folder"):
        run_sweeps([halves[0], halves[0]], jobs=1, threads=1)


def _train_until_ctrl_c_at_epoch_10(run: Run) -> None:
    """Train the planned run into its folder as a sweep would, stopped by Ctrl-C after epoch 10."""
    import torch

    import pinnspec

    def ctrl_c_at_epoch_10(line):
        if line.startswith("epoch 10/"):
            signal.raise_signal(signal.SIGINT)  # the trainer finishes the epoch, checkpoints, stops

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        spec = pinnspec.loads(run.source, filename=run.filename, base_dir=run.base_dir)
        partial = pinnspec.train(spec, out=run.run_dir, log=ctrl_c_at_epoch_10)
    finally:
        torch.set_num_threads(threads)
    assert partial.status == "interrupted" and partial.epochs_done == 10
    assert os.path.isfile(os.path.join(run.run_dir, "checkpoint.pt"))


def test_interrupted_run_is_resumed_and_a_diverged_run_is_counted(local, tmp_path):
    sweep = Sweep(TINY, grid={"surgery": ["config"], "align": ["gua"], "optimizer": ["adam(lr = 5e-3)", "sgd(lr = 1e6)"]},
                  seeds=[0], fixed={"epochs": 20, "checkpoint_every": 5}, out=tmp_path / "resume")
    adam, sgd = plan(sweep)
    _train_until_ctrl_c_at_epoch_10(adam)

    report = run_sweep(sweep, jobs=1, threads=1, log=lambda line: None)
    assert report.actions == {adam.name: "resume", sgd.name: "fresh"}
    assert report.outcomes[adam.name]["resumed_from"] == 10
    resumed = json.loads(Path(adam.run_dir, "result.json").read_text())
    full = local / "surgery=config__align=gua__seed=0"
    uninterrupted = json.loads((full / "result.json").read_text())
    assert resumed["status"] == "completed"
    assert {k: v for k, v in resumed.items() if k not in VOLATILE} == \
           {k: v for k, v in uninterrupted.items() if k not in VOLATILE}
    assert Path(adam.run_dir, "history.csv").read_text() == (full / "history.csv").read_text()

    assert json.loads(Path(sgd.run_dir, "result.json").read_text())["status"] == "diverged"
    table = {row["optimizer"]: row for row in report.table}
    assert (table["sgd(lr = 1e6)"]["completed"], table["sgd(lr = 1e6)"]["diverged"]) == (0, 1)
    assert table["sgd(lr = 1e6)"]["rel_l2_mean"] is None
    assert table["adam(lr = 5e-3)"]["rel_l2_mean"] == resumed["rel_l2"]
    assert "0/1 (1 diverged)" in Path(report.paths["markdown"]).read_text()
    again = run_sweep(sweep, log=lambda line: None)  # both finished: nothing runs
    assert set(again.actions.values()) == {"skip"} and again.outcomes == {}


def test_a_stopped_run_resumes_with_other_execution_settings_but_not_with_other_training(local, tmp_path):
    """How a run executes (device, compile, engine, checkpoint_every) may change when a sweep resumes it; what it
    trains may not.  The continuation with the forward engine ends where the uninterrupted autograd run did."""
    def sweep(**fixed):
        return Sweep(TINY, grid={"surgery": ["config"], "align": ["gua"]}, seeds=[0],
                     fixed={"epochs": 20, "checkpoint_every": 5, **fixed}, out=tmp_path / "moved")

    (first,) = plan(sweep(engine="autograd"))
    _train_until_ctrl_c_at_epoch_10(first)
    (moved,) = plan(sweep(engine="forward", checkpoint_every=4))
    lines = []
    report = run_sweep(sweep(engine="forward", checkpoint_every=4), jobs=1, threads=1, log=lines.append)
    assert report.actions == {moved.name: "resume"} and report.outcomes[moved.name]["resumed_from"] == 10
    assert report.execution_changed == {moved.name: {"checkpoint_every": ("5", "4"), "engine": ("autograd", "forward")}}
    assert any(f"{moved.run_dir} resumes with other execution settings (checkpoint_every 5 -> 4, engine autograd -> "
               f"forward)" in line for line in lines)
    assert Path(moved.run_dir, "config.pinn").read_text() == moved.source  # the settings it ended with
    resumed = json.loads(Path(moved.run_dir, "result.json").read_text())
    uninterrupted = json.loads((local / "surgery=config__align=gua__seed=0" / "result.json").read_text())
    assert resumed["status"] == "completed" and resumed["epochs_done"] == 20
    assert resumed["rel_l2"] == pytest.approx(uninterrupted["rel_l2"], rel=1e-3)

    # comments and layout are not settings; the epochs are what the run trains
    commented = Run(moved.name, moved.setting, 0, moved.run_dir, "# a note\n" + moved.source.replace(" = ", "  =  "),
                    moved.filename, moved.base_dir)
    assert execution_changes(commented) == {}
    with pytest.raises(SweepError, match=r"trains something else than the planned spec\); give another --out"):
        run_sweep(sweep(engine="forward", checkpoint_every=4, epochs=30), jobs=1, threads=1, log=lines.append)


def _start_long_sweep(out: Path, *args: str) -> subprocess.Popen:
    """`pinnspec sweep` of the tiny spec at 100,000 epochs (stopped by the test), one worker of one thread, in
    a session of its own (the test kills what is left)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-m", "pinnspec", "sweep", str(TINY), "--set", "epochs=100000",
                             "--jobs", "1", "--threads", "1", "--out", str(out), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_sweep_interrupted_twice_at_once_waits_for_its_runs_to_checkpoint(tmp_path):
    """Two SIGINTs 0.2 s apart to the driver (what `timeout -s INT` sends): one interrupt, passed on once; the run
    finishes its epoch, checkpoints and is reported stopped, its worker starts no other run (the next seed,
    already queued to it), and the driver exits 130 after it."""
    out = tmp_path / "twice"
    proc = _start_long_sweep(out, "--set", "checkpoint_every=50", "--seeds", "0,1")
    checkpoint = out / "seed=0" / "checkpoint.pt"
    deadline = time.time() + 120
    while not checkpoint.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert checkpoint.exists(), proc.stderr.read() if proc.poll() is not None else "no checkpoint in 120 s"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # a driver that does not stop: the test fails, nothing keeps running
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    result = json.loads((out / "seed=0" / "result.json").read_text())
    assert result["status"] == "interrupted" and result["epochs_done"] >= 50, err
    import torch

    assert torch.load(checkpoint, weights_only=False)["epoch"] == result["epochs_done"]
    assert f"[1/2] seed=0: interrupted ({result['epochs_done']}/100000 epochs" in err
    assert not (out / "seed=1").exists()
    assert "| (spec) | 0/2 (1 stopped, 1 not run) |" in (out / "summary.md").read_text()


def _pool_workers(driver: int) -> list[int]:
    """The pids of a sweep driver's pool processes (its spawned children, not the resource tracker)."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path("/proc", entry, "stat").read_text()
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == driver and b"spawn_main" in cmdline:
            pids.append(int(entry))
    return pids


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only: the test finds the pool's worker "
                                                             "process in /proc to hold it with SIGSTOP")
def test_a_second_ctrl_c_stops_the_sweep_at_once_and_says_so(tmp_path):
    """A SIGINT more than REPEAT_S after the first is a second Ctrl-C: the driver stops waiting for the runs to
    checkpoint and says that each keeps the checkpoint it wrote last, not that they checkpointed.  The worker
    is held (SIGSTOP) so that its epoch cannot end between the two."""
    out = tmp_path / "again"
    proc = _start_long_sweep(out, "--seeds", "0")
    workers = []
    try:
        deadline = time.time() + 120
        while not (out / "seed=0" / "config.pinn").exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)  # config.pinn: the run is training
        workers = _pool_workers(proc.pid)
        assert len(workers) == 1, workers
        os.kill(workers[0], signal.SIGSTOP)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        os.kill(workers[0], signal.SIGCONT)
        _, err = proc.communicate(timeout=30)
    finally:
        for pid in [proc.pid, *workers]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "stopped at once (a second interrupt): each run in progress keeps the checkpoint it wrote last" in err
    assert "the runs in progress checkpointed" not in err


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie that no one reaps counts as ended)."""
    try:
        return Path("/proc", str(pid), "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait_for_training(proc: subprocess.Popen, run: Path) -> list[int]:
    """Wait until ``run`` trains (its config.pinn is written) and has a checkpoint; the driver's pool workers."""
    deadline = time.time() + 120
    while not (run / "checkpoint.pt").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert (run / "checkpoint.pt").exists(), proc.stderr.read() if proc.poll() is not None else "none in 120 s"
    return _pool_workers(proc.pid)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only: the test finds the pool's worker "
                                                             "process in /proc")
def test_sigterm_to_the_driver_stops_its_runs_as_ctrl_c_does(tmp_path):
    """`kill` (SIGTERM) to a sweep's driver: its runs finish their epochs and checkpoint, as on Ctrl-C, the
    driver exits 130 and no worker is left training (they are outside its process group: a killed driver that
    did not pass the signal on would leave them running)."""
    out = tmp_path / "term"
    proc = _start_long_sweep(out, "--set", "checkpoint_every=50", "--seeds", "0")
    workers = []
    try:
        workers = _wait_for_training(proc, out / "seed=0")
        assert len(workers) == 1, workers
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        deadline = time.time() + 10
        while not _gone(workers[0]) and time.time() < deadline:
            time.sleep(0.05)
        assert _gone(workers[0])
    finally:
        for pid in [proc.pid, *workers]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    result = json.loads((out / "seed=0" / "result.json").read_text())
    assert result["status"] == "interrupted", err
    assert "interrupted: the runs in progress checkpointed" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux only: the test finds the pool's worker "
                                                             "process in /proc")
def test_a_worker_whose_driver_was_killed_checkpoints_and_exits(tmp_path):
    """SIGKILL to the driver (nothing passed on): its worker sees it re-parented, finishes the epoch,
    checkpoints and exits; the same command resumes the run from that checkpoint."""
    out = tmp_path / "orphan"
    proc = _start_long_sweep(out, "--set", "checkpoint_every=100000", "--seeds", "0")
    run = out / "seed=0"
    workers = []
    try:
        deadline = time.time() + 120
        while not (run / "config.pinn").exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)  # config.pinn: the run is training; its only checkpoint so far is none
        workers = _pool_workers(proc.pid)
        assert len(workers) == 1, workers
        time.sleep(0.5)
        proc.kill()
        proc.communicate(timeout=30)
        deadline = time.time() + 30
        while not _gone(workers[0]) and time.time() < deadline:
            time.sleep(0.05)
        assert _gone(workers[0]), "the orphaned worker still runs"
    finally:
        for pid in [proc.pid, *workers]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "interrupted" and 0 < result["epochs_done"] < 100000
    import torch

    assert torch.load(run / "checkpoint.pt", weights_only=False)["epoch"] == result["epochs_done"]


def test_ray_gives_the_same_table(local, tmp_path, capsys):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert main([str(TINY), *GRID, "--ray", "auto", "--out", str(tmp_path / "ray")]) == 0
    finally:
        ray.shutdown()
    assert "0 finished (skipped), 0 to resume, 4 to start; on Ray (auto, 2 CPUs)" in capsys.readouterr().err
    assert without_time(read_csv(tmp_path / "ray" / "summary.csv")) == without_time(read_csv(local / "summary.csv"))
    assert without_time(read_csv(tmp_path / "ray" / "runs.csv")) == without_time(read_csv(local / "runs.csv"))


def test_invalid_grid_key_is_an_error_naming_it(tmp_path, capsys):
    out = tmp_path / "bad"
    assert main([str(TINY), "--grid", "surgry=config,pcgrad", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "unknown setting 'surgry'; did you mean 'surgery'?" in err and "Traceback" not in err
    assert main([str(TINY), "--grid", "surgery=config,pcgrd", "--grid", "align=gua,none", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "2 of 4 runs have invalid settings; nothing was started" in err
    assert "unknown surgery 'pcgrd'; did you mean 'pcgrad'?" in err
    assert not out.exists()


def test_sweep_file_equals_the_command_line(tmp_path):
    (tmp_path / "s.toml").write_text(f'spec = "{TINY}"\nout = "runs/x"\nseeds = [0, 1]\n'
                                     '[grid]\nsurgery = ["config", "cagrad(c = 0.4)"]\nalign = ["gua", "none"]\n'
                                     '[fixed]\nepochs = 20\ngrouping = "two"\n')
    from_file = plan(Sweep.from_file(tmp_path / "s.toml"))
    from_flags = plan(Sweep(str(TINY), grid={"surgery": ["config", "cagrad(c = 0.4)"], "align": ["gua", "none"]},
                            seeds=[0, 1], fixed={"epochs": "20", "grouping": "two"}, out=tmp_path / "runs" / "x"))
    assert from_file == from_flags
    assert [r.name for r in from_file[:3]] == ["surgery=config__align=gua__seed=0", "surgery=config__align=none__seed=0",
                                               "surgery=cagrad-c-0.4__align=gua__seed=0"]
    (tmp_path / "bad.toml").write_text(f'spec = "{TINY}"\n[grid]\nsurgery = ["config"]\n[fixed]\nepoch = 20\n')
    with pytest.raises(SweepError, match=r"bad.toml: error: \[fixed\]: unknown setting 'epoch'; did you mean 'epochs'"):
        plan(Sweep.from_file(tmp_path / "bad.toml"))
    (tmp_path / "bad2.toml").write_text(f'spec = "{TINY}"\nseed = [0]\n')
    with pytest.raises(SweepError, match="unknown key 'seed'; did you mean 'seeds'"):
        Sweep.from_file(tmp_path / "bad2.toml")


def test_table_means_exclude_diverged_stopped_and_missing_runs(tmp_path):
    def run(seed, status, rel_l2=None, r_p=None):
        folder = tmp_path / f"align=gua__seed={seed}"
        if status:
            folder.mkdir()
            (folder / "result.json").write_text(json.dumps({
                "status": status, "epochs_done": 10, "rel_l2": rel_l2, "rel_l2_final": rel_l2, "train_time_s": 1.0,
                "rates": {"R_g": 0.5, "R_a": 0.25, "R_u": 0.5, "R_p": r_p}}))
        return Run(folder.name, (("align", "gua"),), seed, str(folder), "", "", "")

    rows = [read_run(r) for r in (run(0, "completed", 1.0, 0.0), run(1, "completed", 3.0, 0.5),
                                  run(2, "diverged", "nan"), run(3, None), run(4, "interrupted", 5.0))]
    (entry,) = summarize(rows, ["align"])
    assert (entry["runs"], entry["completed"], entry["diverged"], entry["stopped"], entry["not_run"]) == (5, 2, 1, 1, 1)
    assert "| `gua` | 2/5 (1 diverged, 1 stopped, 1 not run) |" in markdown(summarize(rows, ["align"]), ["align"])
    assert entry["rel_l2_mean"] == 2.0 and entry["rel_l2_std"] == pytest.approx(2 ** 0.5)
    assert entry["R_p_mean"] == 0.25 and entry["R_g_std"] == 0.0


def test_importing_the_package_loads_neither_torch_nor_ray():
    code = "import sys, pinnspec.sweep; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'ray')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_together_trains_the_runs_that_differ_in_their_chain_as_one_group(tmp_path, capsys):
    """``--together``: the two surgery methods train as one group (one worker, one batched graph); their results
    say so and match the run trained alone, eagerly, in this process.  (Which runs group: the next test.)"""
    import pinnspec
    from pinnspec.engine import Trainer
    from pinnspec.lang._overrides import apply_overrides

    out = tmp_path / "together"
    settings = {"epochs": "4", "compile": "on", "dtype": "float64"}
    assert main([str(TINY), "--grid", "surgery=config,pcgrad", "--seeds", "0", "--threads", "1", "--jobs", "1",
                 *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")], "--together",
                 "--out", str(out)]) == 0
    assert "2 of 2 runs train in 1 group(s)" in capsys.readouterr().err
    results = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/result.json")}
    # PCGrad's chain draws its order on the host: it does not compile
    assert {name: r["execution"] for name, r in results.items()} == {
        "surgery=config__seed=0": "batched runs", "surgery=pcgrad__seed=0": "batched runs, chain eager"}
    assert {r["status"] for r in results.values()} == {"completed"}
    alone = Trainer(apply_overrides(pinnspec.load(TINY), {**settings, "compile": "off", "surgery": "pcgrad"}))
    assert results["surgery=pcgrad__seed=0"]["rel_l2"] == pytest.approx(alone.run().rel_l2, rel=1e-8)


def test_runs_group_by_what_they_train_apart_from_their_chain():
    import pinnspec
    from pinnspec.lang._overrides import apply_overrides
    from pinnspec.sweep._sweep import _units

    def task(name, action="fresh", **overrides):
        source = apply_overrides(pinnspec.load(TINY), overrides).source
        return {"name": name, "run_dir": name, "source": source, "filename": str(TINY), "base_dir": str(TINY.parent),
                "action": action}

    tasks = [task("a", surgery="config"), task("b", surgery="pcgrad", align="gua"), task("c", optimizer="sgd"),
             task("d", action="resume", surgery="config"), task("e", points="pde 100, walls 40, ic 40")]
    assert [[t["name"] for t in unit] for unit in _units(tasks, together=True)] == [["a", "b", "c"], ["d"], ["e"]]
    assert [[t["name"] for t in unit] for unit in _units(tasks, together=False)] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    # seeds: apart where the points are the seed's own (tiny.pinn's sampler), together where they are not
    hammersley = {"sampler": "hammersley", "resample": "never"}
    seeds = [task("random0", seed="0"), task("random1", seed="1"), task("hammersley0", seed="0", **hammersley),
             task("hammersley1", seed="1", surgery="config", **hammersley)]
    assert [[t["name"] for t in unit] for unit in _units(seeds, together=True)] == [
        ["random0"], ["random1"], ["hammersley0", "hammersley1"]]


def test_runs_that_trained_in_a_group_resume_in_it(tmp_path):
    """Their result.json (written at each checkpoint) names their group: they resume as one unit with the runs of
    that group, with --together or without (alone, each would compute every lane of its group's graph), and
    never with another group's runs; a run that trained alone resumes alone."""
    import pinnspec
    from pinnspec.lang._overrides import apply_overrides
    from pinnspec.sweep._sweep import _units

    def task(name, execution, group=None, **overrides):
        run_dir = tmp_path / name
        run_dir.mkdir()
        lane = {"lane": 0, "lanes": 2, "group": group} if group else None
        (run_dir / "result.json").write_text(json.dumps({"status": "interrupted", "execution": execution,
                                                         "group": lane}))
        source = apply_overrides(pinnspec.load(TINY), overrides).source
        return {"name": name, "run_dir": str(run_dir), "source": source, "filename": str(TINY),
                "base_dir": str(TINY.parent), "action": "resume"}

    tasks = [task("a", "batched runs", "g1"), task("b", "batched runs, chain eager", "g1", surgery="pcgrad"),
             task("c", "one graph", surgery="config"), task("d", "batched runs", "g2", optimizer="sgd"),
             task("e", "batched runs", "g2")]
    for together in (False, True):
        assert [[t["name"] for t in unit] for unit in _units(tasks, together)] == [["a", "b"], ["c"], ["d", "e"]]
    tasks[3]["action"] = "fresh"  # a fresh start trains alone unless asked
    assert [[t["name"] for t in unit] for unit in _units(tasks, together=False)] == [["a", "b"], ["c"], ["d"], ["e"]]


def test_runs_that_cannot_form_a_group_train_one_after_another_in_the_worker(tmp_path, capsys):
    from pinnspec.sweep._worker import run_tasks

    import pinnspec
    from pinnspec.lang._overrides import apply_overrides

    def source(surgery):  # compile off (the default): no batched graph
        return apply_overrides(pinnspec.load(TINY), {"epochs": "2", "device": "cpu", "surgery": surgery}).source

    tasks = [{"name": name, "run_dir": str(tmp_path / name), "source": source(surgery), "filename": str(TINY),
              "base_dir": str(TINY.parent), "action": "fresh"} for name, surgery in (("a", "config"), ("b", "pcgrad"))]
    answers = run_tasks(tasks)
    assert "2 runs train one after another, not as a group" in capsys.readouterr().err
    assert [a["name"] for a in answers] == ["a", "b"] and [a["together"] for a in answers] == [1, 1]
    assert [a["result"]["status"] for a in answers] == ["completed", "completed"]
    assert [a["result"]["execution"] for a in answers] == ["eager", "eager"]
