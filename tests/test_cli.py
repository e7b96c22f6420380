"""The command line: exit codes 0 / 1 (user error, no traceback) / 2 (internal)."""

import subprocess
import sys
from pathlib import Path

import pytest

from pinnspec.cli import main

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted(str(p) for p in ROOT.glob("specs/*.pinn"))
EXAMPLES = sorted(str(p) for p in ROOT.glob("examples/*/*.pinn"))


def test_check_is_silent_on_good_specs(capsys):
    assert main(["check", *SPECS, *EXAMPLES]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_check_reports_every_bad_file_and_exits_1(tmp_path, capsys):
    bad1 = tmp_path / "a.pinn"
    bad1.write_text("problem a\nspace x in [0, 1]\nfield u\nequation pde: u_xx + w = 0\n")
    bad2 = tmp_path / "b.pinn"
    bad2.write_text("problem b\nspace x in [0, 1]\nfield u\nequation pde: u_xx = 0\nsurgery pcgrd\n")
    assert main(["check", str(bad1), SPECS[0], str(bad2)]) == 1
    err = capsys.readouterr().err
    assert f"{bad1}:4:22: error: unknown field 'w'" in err
    assert f"{bad2}:5:9: error: unknown surgery 'pcgrd'; did you mean 'pcgrad'?" in err
    assert "Traceback" not in err


def test_warnings_do_not_fail_check(tmp_path, capsys):
    spec = tmp_path / "w.pinn"
    spec.write_text("problem w\nspace x in [0, 1]\nfield u\nequation pde: u_xx = 0\n"
                    "boundary bc on boundary: u = 0\nloss N = pde\n")
    assert main(["check", str(spec)]) == 0
    assert "warning: the condition 'bc' is used by no loss" in capsys.readouterr().err


def test_missing_file_is_a_user_error(capsys):
    assert main(["check", "no/such/file.pinn"]) == 1
    assert "cannot read the file" in capsys.readouterr().err


def test_show_stages(capsys):
    assert main(["show", SPECS[0], "--stage", "ast"]) == 0
    assert "SpecFile" in capsys.readouterr().out
    burgers = str(ROOT / "specs" / "burgers.pinn")
    assert main(["show", burgers, "--stage", "ir"]) == 0
    out = capsys.readouterr().out
    assert "u*u_x + u_t - u_xx/(100*pi) = 0" in out
    assert "two: m = 2, tasks [N, pool(walls, ic)]  (default)" in out


def test_bad_arguments_exit_1():
    proc = subprocess.run([sys.executable, "-m", "pinnspec", "show", SPECS[0], "--stage", "nope"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "invalid choice" in proc.stderr and "Traceback" not in proc.stderr


def test_console_script_and_module_entry_point(tmp_path):
    bad = tmp_path / "bad.pinn"
    bad.write_text("problem p\nspace x in [0, 1]\nfield u\nequation pde: u_xx = sinn(x)\n")
    proc = subprocess.run([sys.executable, "-m", "pinnspec", "check", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"{bad}:4:22: error: unknown function 'sinn'; did you mean 'sin'?",
        "  equation pde: u_xx = sinn(x)",
        "                       ^",
    ]


def test_internal_error_exits_2(monkeypatch, capsys):
    import pinnspec.cli._main as cli

    def boom(path):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "load", boom)
    assert main(["check", SPECS[0]]) == 2
    assert "internal error" in capsys.readouterr().err


TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")


def test_train_eval_and_summary(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", TINY, "--epochs", "20", "--out", str(out), "--quiet", "--align", "gua",
                 "--set", "surgery=config"]) == 0
    text = capsys.readouterr().out
    assert "tiny: completed after 20/20 epochs" in text and "R_p 0.0%" in text
    for name in ("result.json", "history.csv", "checkpoint.pt", "config.pinn", "predictions.npz"):
        assert (out / name).exists()
    assert "surgery config" in (out / "config.pinn").read_text()
    assert main(["eval", str(out)]) == 0
    assert capsys.readouterr().out.count("(matches result.json)") == 2


def test_train_bad_override_is_a_located_user_error(capsys):
    assert main(["train", TINY, "--set", "optimizer=adma", "--epochs", "1"]) == 1
    err = capsys.readouterr().err
    assert "unknown optimizer 'adma'; did you mean 'adam'?" in err and "Traceback" not in err
    assert main(["train", TINY, "--set", "epoch=3"]) == 1
    assert "did you mean 'epochs'?" in capsys.readouterr().err
    assert main(["train", TINY, "--set", "nonsense"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err


def test_train_bad_spec_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.pinn"
    bad.write_text("problem p\nspace x in [0, 1]\nfield u\nequation pde: u_xx = w\n")
    assert main(["train", str(bad)]) == 1
    assert "unknown field 'w'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["eval"], ["plot"], ["train", "--resume"]])
def test_missing_run_dir_is_a_user_error(command, tmp_path, capsys):
    assert main([*command, str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_bench_lists_the_benchmarks_and_suggests_names(capsys):
    assert main(["bench"]) == 1
    err = capsys.readouterr().err
    assert all(name in err for name in ("speed", "overhead", "gum", "q2", "q3", "q4", "q5", "q6"))
    assert main(["bench", "q22"]) == 1
    assert "did you mean 'q2'?" in capsys.readouterr().err
