"""The compile backend every graph of pinnspec takes (pinnspec/_compiling.py)."""

import pytest
import torch

from pinnspec._compiling import BACKEND_VARIABLE, compile_backend, compiled


@pytest.mark.parametrize("value, backend", [("", "inductor"), ("aot_eager", "aot_eager"), (" inductor ", "inductor")])
def test_the_backend_is_inductor_unless_the_variable_names_another(monkeypatch, value, backend):
    monkeypatch.setenv(BACKEND_VARIABLE, value)
    assert compile_backend() == backend


def test_an_unknown_backend_is_one_line_naming_the_variable(monkeypatch):
    monkeypatch.setenv(BACKEND_VARIABLE, "inductr")
    with pytest.raises(ValueError, match=rf"^{BACKEND_VARIABLE}='inductr' is not a torch.compile backend \(known: "
                                         r"inductor, .*aot_eager"):
        compile_backend()


@pytest.mark.inductor
def test_a_test_marked_inductor_compiles_on_inductor():
    """tests/conftest.py: a test marked inductor compiles on it (the suite on eager otherwise)."""
    assert compile_backend() == "inductor"


def test_a_compiled_function_on_aot_eager_equals_eager_and_drops_inductors_mode(monkeypatch):
    monkeypatch.setenv("PINNSPEC_COMPILE_BACKEND", "aot_eager")
    f = compiled(lambda x: torch.tanh(x) * x.sum(), mode="reduce-overhead", dynamic=False)
    x = torch.linspace(-1, 1, 7, dtype=torch.float64)
    torch.testing.assert_close(f(x), torch.tanh(x) * x.sum(), rtol=0, atol=0)
