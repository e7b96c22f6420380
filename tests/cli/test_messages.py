"""Messages that point at the right place: an override's error names the option as typed, a
missing folder is called missing, `check DIR` checks what is inside, `--version`."""

from pathlib import Path

import pytest

from cli_process import ROOT, TINY, cli, user_error

import pinnspec


def test_a_bad_flag_is_named_as_typed():
    lines = user_error(cli("train", TINY, "--epochs", "-5"))
    assert lines[0].startswith("error: --epochs -5: 'epochs' must be")
    assert "(with overrides)" not in lines[0]


def test_a_bad_set_value_is_named_as_typed():
    lines = user_error(cli("train", TINY, "--set", "epochs=-5"))
    assert lines[0].startswith("error: --set epochs=-5: 'epochs' must be")
    lines = user_error(cli("train", TINY, "--set", "optimizer=adma(lr = 1e-3)"))
    assert lines == ["error: --set 'optimizer=adma(lr = 1e-3)': unknown optimizer 'adma'; did you mean 'adam'?"]
    lines = user_error(cli("train", TINY, "--set", "epoch=3"))
    assert lines == ["error: --set epoch=3: unknown setting 'epoch'; did you mean 'epochs'?"]


def test_an_error_in_the_files_own_line_keeps_its_place(tmp_path):
    spec = tmp_path / "gua.pinn"
    text = Path(TINY).read_text().replace("optimizer adam(lr = 5e-3)", "optimizer adam(lr = 5e-3)\n"
                                          "align gua(rho_m = 0.5)")
    spec.write_text(text)
    line = text.splitlines().index("align gua(rho_m = 0.5)") + 1
    lines = user_error(cli("train", spec, "--optimizer", "sgd"))
    assert lines[0].startswith(f"{spec}:{line}:") and "'sgd'" in lines[0]
    assert lines[1] == "  align gua(rho_m = 0.5)"


def test_missing_folders_are_called_missing(tmp_path):
    for command in (["eval"], ["train", "--resume"]):
        assert user_error(cli(*command, tmp_path / "nope")) == [f"{tmp_path / 'nope'}: error: no such directory"]
        assert user_error(cli(*command, tmp_path)) == [f"{tmp_path}: error: no checkpoint.pt here "
                                                       "(is it a run directory?)"]


def test_check_a_directory_checks_every_spec_below_it_in_order(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "z.pinn").write_text("problem z\nspace x in [0, 1]\nfield u\nequation pde: u_xx = w\n")
    (tmp_path / "sub" / "a.pinn").write_text("problem a\nspace x in [0, 1]\nfeild u\n")
    (tmp_path / "good.pinn").write_text("problem g\nspace x in [0, 1]\nfield u\nequation pde: u_xx = 0\n")
    errors = [line for line in user_error(cli("check", tmp_path)) if ": error: " in line]
    assert errors == [f"{tmp_path / 'sub' / 'a.pinn'}:3:1: error: unknown statement 'feild'; did you mean 'field'?",
                      f"{tmp_path / 'z.pinn'}:4:22: error: unknown field 'w' (fields are: u)"]
    proc = cli("check", ROOT / "specs", ROOT / "examples")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_check_an_empty_directory_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    assert user_error(cli("check", tmp_path)) == [f"{tmp_path}: error: no .pinn file in this directory or below it"]


def test_version():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout == f"pinnspec {pinnspec.__version__}\n"


@pytest.mark.parametrize("settings, first", [
    ([], "1. eager: "), (["--set", "compile=on"], "1. one graph: "), (["--set", "compile=graphs"], "1. one graph: "),
    (["--set", "compile=on", "--set", "surgery=pcgrad"], "1. losses compiled, chain eager: "),
])
def test_show_stage_step_prints_the_execution_plan(settings, first):
    proc = cli("show", ROOT / "specs" / "burgers.pinn", "--stage", "step", *settings)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("how a step of 'burgers' runs (compile = ")
    assert lines[1].strip().startswith(first) and lines[1].endswith("<- runs now")
