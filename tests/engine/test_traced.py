"""The summed one graph traced by make_fx (pinnspec.engine._traced): its argument trees, its signature, one
trace per signature, the demotion when inputs keep changing; and the CPU's vector-ISA probe settled once per
machine (pinnspec._compiling.settle_cpu_isa)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch.utils import _pytree as pytree

from pinnspec import _compiling
from pinnspec.engine import Trainer, _traced
from pinnspec.engine._chain import ChainState, Checks
from pinnspec.engine._traced import _tree, _untree, signature
from pinnspec.lang import apply_overrides, loads
from pinnspec.optim._first_order import AdamState

TINY = Path(__file__).parent / "data" / "tiny.pinn"


def trainer(**overrides) -> Trainer:
    settings = {"dtype": "float64", "epochs": 12, **overrides}
    return Trainer(apply_overrides(loads(TINY.read_text(), filename=str(TINY)), settings))


@dataclass(frozen=True)
class Nested:
    inner: AdamState
    scale: float


def test_a_tree_of_states_flattens_to_its_tensors_and_comes_back_whole():
    adam = AdamState(step=torch.tensor(3.0, dtype=torch.float64), exp_avg=torch.arange(4.0),
                     exp_avg_sq=torch.ones(4))
    value = (torch.zeros(2), [(torch.ones(3), None, slice(0, 2))], ChainState(None, adam, torch.ones(2)),
             Nested(adam, 0.5), Checks(*(torch.zeros(1) for _ in range(5))))
    leaves, spec = pytree.tree_flatten(_tree(value))
    assert sum(isinstance(x, torch.Tensor) for x in leaves) == 1 + 1 + 4 + 3 + 5
    back = _untree(pytree.tree_unflatten(leaves, spec))
    assert type(back[2]) is ChainState and type(back[2].optimizer) is AdamState and type(back[3]) is Nested
    assert type(back[4]) is Checks and back[3].scale == 0.5 and back[1][0][2] == slice(0, 2)
    for a, b in zip(pytree.tree_leaves(_tree(back)), leaves):
        assert a is b or a == b


def test_the_signature_tells_shapes_dtypes_numbers_and_slices_apart():
    def sig(*value):
        return signature(*pytree.tree_flatten(_tree(value)))

    base = sig(torch.zeros(3), 2, slice(0, 3), None)
    assert base == sig(torch.ones(3), 2, slice(0, 3), None)  # values of tensors are inputs, not specialised on
    for other in [sig(torch.zeros(4), 2, slice(0, 3), None), sig(torch.zeros(3, dtype=torch.float64), 2,
                                                                   slice(0, 3), None),
                  sig(torch.zeros(3), 3, slice(0, 3), None), sig(torch.zeros(3), 2, slice(0, 2), None),
                  sig(torch.zeros(3), 2, slice(0, 3), torch.zeros(1))]:
        assert other != base


def test_a_run_traces_its_summed_step_once_and_steps_as_the_eager_run():
    compiled, eager = trainer(compile="on"), trainer()
    compiled.run(), eager.run()
    summed = compiled.execution._summed
    assert isinstance(summed, _traced.TracedSummedGraph) and len(summed.graphs) == 1 and summed.calls == 10
    torch.testing.assert_close(compiled.theta_flat(), eager.theta_flat(), rtol=1e-10, atol=1e-12)
    assert compiled.chain_state.optimizer.step == eager.chain_state.optimizer.step == 12


@pytest.mark.parametrize("example", ["advection_periodic", "coefficient_table"])
def test_buffers_and_data_tables_are_constants_of_the_traced_graph(example):
    """A periodic embedding's buffers and a coefficient read from a data table, traced into the graph: the
    same steps as the eager run (float64)."""
    path = Path(__file__).parents[2] / "examples" / example / f"{example}.pinn"
    settings = {"epochs": 6, "surgery": "none", "align": "none", "dtype": "float64", "seed": 0}
    runs = [Trainer(apply_overrides(loads(path.read_text(), filename=str(path)), dict(settings, compile=c)))
            for c in ("on", "off")]
    for run in runs:
        run.run()
    assert runs[0].execution.current == "summed one graph" and runs[0].execution._summed.calls == 5
    torch.testing.assert_close(runs[0].theta_flat(), runs[1].theta_flat(), rtol=1e-12, atol=1e-14)


def test_inputs_that_keep_changing_demote_to_the_summed_graph(monkeypatch, capsys):
    monkeypatch.setattr(_traced, "MAX_SIGNATURES", 0)
    compiled, eager = trainer(compile="on"), trainer()
    compiled.run(), eager.run()
    assert compiled.execution.current == "summed graph"
    assert "the summed step's inputs changed 0 times" in capsys.readouterr().err
    torch.testing.assert_close(compiled.theta_flat(), eager.theta_flat(), rtol=1e-10, atol=1e-12)


# ====================================================================== the vector-ISA probe, once per machine
@pytest.fixture
def fresh_isa(monkeypatch, tmp_path):
    """A process that has not settled the probe yet, with no TORCHINDUCTOR_VEC_ISA_OK and its own cache folder;
    the probe itself replaced by ``picks`` (what inductor would pick with vec_isa_ok None, then True)."""
    from torch._inductor import config, cpu_vec_isa

    monkeypatch.setenv("PINNSPEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config.cpp, "vec_isa_ok", None)
    monkeypatch.setattr(_compiling, "_isa_settled", False)
    probes = []

    def install(picks):
        def pick():
            probes.append(config.cpp.vec_isa_ok)
            return picks[config.cpp.vec_isa_ok]
        monkeypatch.setattr(cpu_vec_isa, "pick_vec_isa", pick)

    yield install, probes, config, tmp_path / "cpu-isa.json"
    cpu_vec_isa.valid_vec_isa_list.cache_clear()


def test_a_probe_that_agrees_with_the_flags_is_recorded_and_spared_next_time(fresh_isa, monkeypatch):
    install, probes, config, record = fresh_isa
    install({None: "avx2", True: "avx2"})
    _compiling.settle_cpu_isa()
    assert probes == [None, True] and config.cpp.vec_isa_ok is True
    assert list(json.loads(record.read_text()).values()) == [True]
    monkeypatch.setattr(_compiling, "_isa_settled", False)  # the next process on this machine
    monkeypatch.setattr(config.cpp, "vec_isa_ok", None)
    _compiling.settle_cpu_isa()
    assert probes == [None, True] and config.cpp.vec_isa_ok is True  # no probe


def test_a_probe_that_disagrees_leaves_inductor_probing(fresh_isa, monkeypatch):
    install, probes, config, record = fresh_isa
    install({None: "avx2", True: "avx512"})  # the compiler could not build what the CPU reports
    _compiling.settle_cpu_isa()
    assert config.cpp.vec_isa_ok is None and list(json.loads(record.read_text()).values()) == [False]
    monkeypatch.setattr(_compiling, "_isa_settled", False)
    _compiling.settle_cpu_isa()
    assert probes == [None, True] and config.cpp.vec_isa_ok is None


def test_a_set_vec_isa_ok_decides(fresh_isa, monkeypatch):
    install, probes, config, record = fresh_isa
    install({})
    monkeypatch.setattr(config.cpp, "vec_isa_ok", False)  # TORCHINDUCTOR_VEC_ISA_OK=0, as the suite sets it
    _compiling.settle_cpu_isa()
    assert probes == [] and not record.exists() and config.cpp.vec_isa_ok is False
