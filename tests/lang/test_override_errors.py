"""A diagnostic in an override names the option as the user wrote it; one in the file's own
lines keeps the file's name, line, column and caret."""

from pathlib import Path

import pytest

import pinnspec
from pinnspec.lang import SpecError
from pinnspec.lang._overrides import OverrideDiagnostic, apply_overrides, flag_text, set_text

TINY = Path(__file__).resolve().parents[1] / "engine" / "data" / "tiny.pinn"


@pytest.fixture(scope="module")
def tiny():
    return pinnspec.load(TINY)


def error_of(spec, overrides, written=None) -> SpecError:
    with pytest.raises(SpecError) as info:
        apply_overrides(spec, overrides, written)
    return info.value


def test_a_train_setting_names_its_flag(tiny):
    err = error_of(tiny, {"epochs": -5, "seed": 3}, {"epochs": flag_text("epochs", -5), "seed": flag_text("seed", 3)})
    assert isinstance(err.errors[0], OverrideDiagnostic)
    assert err.render().startswith("error: --epochs -5: 'epochs' must be")  # not --seed: it is fine


def test_a_statement_names_its_set_value(tiny):
    err = error_of(tiny, {"surgery": "pcgrd"}, {"surgery": set_text("surgery", "pcgrd")})
    assert err.render() == "error: --set surgery=pcgrd: unknown surgery 'pcgrd'; did you mean 'pcgrad'?"


def test_without_written_forms_an_override_is_named_key_equals_value(tiny):
    assert error_of(tiny, {"optimizer": "adma"}).render() == (
        "error: optimizer=adma: unknown optimizer 'adma'; did you mean 'adam'?")
    assert error_of(tiny, {"epoch": 3}).render() == "error: epoch=3: unknown setting 'epoch'; did you mean 'epochs'?"


def test_values_with_spaces_are_quoted_as_a_shell_would():
    assert flag_text("optimizer", "adam(lr = 1e-3)") == "--optimizer 'adam(lr = 1e-3)'"
    assert set_text("validate", "test every 10") == "--set 'validate=test every 10'"


def test_an_error_in_the_files_own_line_keeps_file_line_and_caret(tmp_path):
    path = tmp_path / "gua.pinn"
    path.write_text(TINY.read_text().replace("optimizer adam(lr = 5e-3)",
                                             "optimizer adam(lr = 5e-3)\nalign gua(rho_m = 0.5)"))
    err = error_of(pinnspec.load(path), {"optimizer": "sgd"}, {"optimizer": flag_text("optimizer", "sgd")})
    line = path.read_text().splitlines().index("align gua(rho_m = 0.5)") + 1
    head, shown, caret = err.render().splitlines()
    assert head.startswith(f"{path}:{line}:") and "'sgd'" in head
    assert shown == "  align gua(rho_m = 0.5)" and caret.strip() == "^"


def test_a_good_override_keeps_the_spec_checked(tiny):
    spec = apply_overrides(tiny, {"epochs": 7, "surgery": "pcgrad"}, {"epochs": "--epochs 7"})
    assert spec.ir.training.options["epochs"] == 7 and "surgery pcgrad" in spec.source


def test_points_override_replaces_the_counts(tiny):
    spec = apply_overrides(tiny, {"points": "pde 50, walls 8, ic 6"})
    assert dict(spec.ir.sampling.points) == {"pde": 50, "walls": 8, "ic": 6}
    assert dict(tiny.ir.sampling.points) == {"pde": 200, "walls": 40, "ic": 40}
    err = error_of(tiny, {"points": "pdf 50"}, {"points": set_text("points", "pdf 50")})
    assert err.render() == "error: --set 'points=pdf 50': unknown condition 'pdf'; did you mean 'pde'?"
