"""`compile = auto` (pinnspec.engine._autocompile): compiled where the run's epochs win back the first, compiling
step; the decision said once and recorded in config.pinn; the first compiled step's time recorded for the next
decision; the compile cache in the user's cache folder."""

import json
import os
from pathlib import Path

import pytest
import torch

from pinnspec.engine import Trainer
from pinnspec.engine import _autocompile
from pinnspec.engine._autocompile import COLD_FIRST_STEP_S, CompileRecords, compile_key, decide_compile
from pinnspec.lang import apply_overrides, loads

TINY = Path(__file__).parent / "data" / "tiny.pinn"
CPU = torch.device("cpu")


def tiny(**settings):
    return apply_overrides(loads(TINY.read_text(), filename=str(TINY)), {"compile": "auto", **settings})


def test_a_short_run_is_not_compiled_and_a_long_one_is(tmp_path):
    records = CompileRecords(str(tmp_path / "records.json"))
    short, why = decide_compile(tiny(epochs=10), CPU, records=records)
    assert short.ir.training.setting("compile") == "off" and "not compiled: 10 epochs x" in why
    assert f"~{COLD_FIRST_STEP_S['cpu']:.1f} s for the first step (an empty compile cache)" in why
    long, why = decide_compile(tiny(epochs=10 ** 8), CPU, records=records)
    assert long.ir.training.setting("compile") == "on" and why.startswith("compile = auto: compiled: 100,000,000")
    assert "train" in long.source and "compile = on" in long.source  # what config.pinn records


def test_the_decision_reads_this_problems_last_first_step(tmp_path):
    records = CompileRecords(str(tmp_path / "records.json"))
    spec = tiny(epochs=2000)
    records.put(compile_key(spec, CPU), 1e-9)  # a first step that costs nothing: any saving pays
    decided, why = decide_compile(spec, CPU, records=records)
    assert decided.ir.training.setting("compile") == "on" and "(this problem's last first step)" in why
    assert compile_key(tiny(epochs=5, seed=3), CPU) == compile_key(spec, CPU)  # epochs and seed leave the graphs as they are
    assert compile_key(apply_overrides(spec, {"points": "pde 100, walls 40, ic 40"}), CPU) != compile_key(spec, CPU)


def test_a_run_that_cannot_compile_says_why():
    decided, why = decide_compile(tiny(epochs=10 ** 8, engine="autograd"), CPU,
                                  records=CompileRecords(os.devnull + ".missing"))
    assert decided.ir.training.setting("compile") == "off"
    assert why.startswith("compile = auto: not compiled (compile = on needs the forward engine")


def test_records_survive_garbage_and_the_trainer_writes_its_first_compiled_step(tmp_path, monkeypatch, capsys):
    path = tmp_path / "first-steps.json"
    path.write_text("not json")
    assert CompileRecords(str(path)).read() == {}
    monkeypatch.setenv("PINNSPEC_CACHE_DIR", str(tmp_path))
    spec = tiny(epochs=3, compile="on")
    Trainer(spec).run()
    recorded = json.loads(path.read_text())
    assert list(recorded) == [compile_key(spec, CPU)] and recorded[compile_key(spec, CPU)] > 0
    run = Trainer(tiny(epochs=10 ** 6))  # decided on from that record
    assert run.spec.ir.training.setting("compile") == "on"
    assert "compile = auto: compiled" in capsys.readouterr().err


def test_the_compile_cache_goes_to_the_users_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("PINNSPEC_CACHE_DIR", str(tmp_path))
    _autocompile.use_compile_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "torch")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/elsewhere")
    _autocompile.use_compile_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/elsewhere"  # the user's own setting stays


@pytest.mark.parametrize("value", ["auto", "on", "off", "graphs"])
def test_compile_takes_auto(value):
    assert tiny(compile=value).ir.training.setting("compile") == value
