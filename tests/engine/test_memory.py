"""A run that cannot fit in memory is refused before anything is allocated, in one line naming the setting and
the estimate; `train memory = unchecked` goes past the check; the estimate is within a factor 2 of the
resident-set growth of an ordinary run, measured in a fresh process."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pinnspec._rss import read_status
from pinnspec.cli import main
from pinnspec.compiler import compile_spec
from pinnspec.engine import Trainer
from pinnspec.engine import _memory
from pinnspec.lang import apply_overrides, load

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")

#: (override, the setting the refusal names)
TOO_BIG = [
    ({"points": "pde 1e9"}, "`points pde 1000000000` takes about 1,870.1 GiB"),
    ({"model": "mlp(width = 1000000)"}, "`model mlp(width = 1000000"),
    ({"test": "1000000000"}, "`test 1000000000 points` takes about 4"),
    ({"test": "grid 100000, 100000"}, "`test grid 100000 x 100000` takes about 4"),
    ({"validate": "2147483648 every 100"}, "`validate 2147483648 every 100` takes about 72.0 GiB"),
]


@pytest.mark.parametrize("override, named", TOO_BIG, ids=[next(iter(o)) + " " + next(iter(o.values()))
                                                           for o, _ in TOO_BIG])
def test_a_run_too_big_for_the_machine_is_refused_at_once(override, named, monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 16 * 2 ** 30)
    spec = apply_overrides(load(TINY), {"device": "cpu", **override})
    rss = read_status()["VmRSS"]
    started = time.perf_counter()
    with pytest.raises(ValueError) as info:
        Trainer(spec)
    assert time.perf_counter() - started < 1.0
    assert read_status()["VmRSS"] - rss < 200 * 2 ** 20  # nothing large was allocated
    message = str(info.value)
    assert named in message and "\n" not in message, message
    assert message.endswith("more than the 16.0 GiB of RAM available; lower it, or add `train memory = unchecked` "
                            "(--set memory=unchecked) to run anyway")


def test_the_refusal_through_the_command_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 16 * 2 ** 30)
    out = tmp_path / "run"
    assert main(["train", TINY, "--set", "points=pde 1e9", "--out", str(out), "--quiet", "--device", "cpu"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{TINY}: error: `points pde 1000000000` takes about"), lines
    assert not out.exists()


def test_memory_unchecked_goes_past_the_check(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 2 ** 10)  # 1 KiB: every run is too big
    spec = apply_overrides(load(TINY), {"device": "cpu", "epochs": 2})
    with pytest.raises(ValueError, match="more than the 0 MiB of RAM available"):
        Trainer(spec)
    result = Trainer(apply_overrides(spec, {"memory": "unchecked"})).run()
    assert result.status == "completed"


def test_the_largest_term_is_the_one_named():
    spec = apply_overrides(load(TINY), {"points": "pde 100000, walls 40, ic 40", "device": "cpu"})
    problem = compile_spec(spec.ir, "three")
    estimate = _memory.estimate_memory(spec, problem, device=torch.device("cpu"), dtype=torch.float32)
    # tiny: d = 2, F = 1, the pde's plan differentiates u and u_x by (x, t): 1 + 2 x 2 rows; mlp 16 x 2 layers
    hidden = 16 + 16 + 1
    pde = next(t for t in estimate.terms if t.setting == "points pde 100000")
    assert pde.host == 100000 * 2 * 8
    assert pde.device == 100000 * 3 * 4 + 100000 * 5 * hidden * _memory.ACTIVATION_COPIES * 4
    assert estimate.largest(on_device=False) is pde


MEASURE = """
import sys
from pinnspec._rss import read_status
from pinnspec.engine import Trainer
from pinnspec.engine._memory import estimate_memory
from pinnspec.lang import apply_overrides, load

spec = load(sys.argv[1])
Trainer(apply_overrides(spec, {"epochs": 3, "device": "cpu"})).run()  # torch's own first-use memory
spec = apply_overrides(spec, {"epochs": 12, "device": "cpu", "points": "pde 20000, walls 400, ic 400",
                              "model": "mlp(width = 64, depth = 4)"})
base = read_status()["VmRSS"]
trainer = Trainer(spec)
estimate = estimate_memory(spec, trainer.problem, device=trainer.device, dtype=trainer.dtype).host
trainer.run()
print(estimate, read_status()["VmHWM"] - base)
"""


def test_the_estimate_is_within_a_factor_2_of_an_ordinary_run():
    """The oracle: the process's resident-set high-water mark, grown from before the Trainer was built."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, TINY], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    estimate, grown = map(int, proc.stdout.split()[-2:])
    assert 0.5 < estimate / grown < 2.0, (estimate, grown)


@pytest.mark.parametrize("model", ["mlp(width = 16, depth = 2)", "fourier_mlp(width = 32, depth = 2)",
                                   "modified_mlp(width = 32, depth = 3)", "pirate_net(width = 32)"])
def test_the_parameters_counted_without_storage_are_the_networks(model):
    """The oracle: the network built for real; the draws of a seed are the same after the count."""
    from pinnspec.engine import build_model

    spec = apply_overrides(load(TINY), {"model": model, "device": "cpu"})
    problem = compile_spec(spec.ir, "three")
    net = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float64)
    estimate = _memory.estimate_memory(spec, problem, device=torch.device("cpu"), dtype=torch.float64)
    m = spec.ir.grouping().m
    assert estimate.terms[-1].device == sum(p.numel() for p in net.parameters()) * 8 * (_memory.MODEL_COPIES + m)
    again = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float64)  # the initialisers are back
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), again.parameters()))


def test_on_cuda_the_device_part_is_checked_against_the_gpus_free_memory(monkeypatch):
    """No GPU needed: the free memory torch would report is given; the host keeps only the float64 arrays."""
    monkeypatch.setattr(_memory, "available_memory", lambda: 64 * 2 ** 30)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (8 * 2 ** 30, 80 * 2 ** 30))
    spec = apply_overrides(load(TINY), {"points": "pde 1e7"})
    problem = compile_spec(spec.ir, "three")
    with pytest.raises(ValueError, match=r"`points pde 10000000` takes about 18.\d GiB: the run needs about 18.\d GiB, "
                                         r"more than the 8.0 GiB of cuda memory available"):
        _memory.check_memory(spec, problem, device=torch.device("cuda"), dtype=torch.float32)
    estimate = _memory.estimate_memory(spec, problem, device=torch.device("cuda"), dtype=torch.float32)
    assert estimate.host == sum(t.host for t in estimate.terms) < 2 ** 30
