"""The direction of imports: the language front end never loads torch."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_lang_loads_no_torch_and_no_compiler():
    mods = _modules_after("import pinnspec.lang")
    assert "torch" not in mods
    assert not any(m.startswith(("pinnspec.compile", "pinnspec.engine", "pinnspec.surgery")) for m in mods)


def test_loading_every_spec_loads_no_torch():
    code = ("import glob, pinnspec\n"
            "for f in sorted(glob.glob('specs/*.pinn') + glob.glob('examples/*/*.pinn')):\n"
            "    pinnspec.load(f)\n")
    assert "torch" not in _modules_after(code)


def test_cli_check_runs_without_torch():
    code = ("import glob, sys\nfrom pinnspec.cli import main\n"
            "rc = main(['check'] + sorted(glob.glob('specs/*.pinn')))\nassert rc == 0, rc\n")
    mods = _modules_after(code)
    assert "torch" not in mods
    assert "pinnspec.cli" in mods


def test_surgery_loads_no_lark_or_sympy():
    mods = _modules_after("import pinnspec.surgery, pinnspec.optim, pinnspec.align")
    assert "lark" not in mods and "sympy" not in mods


def test_public_names_resolve_lazily():
    mods = _modules_after("import pinnspec\nassert pinnspec.SpecError.__name__ == 'SpecError'")
    assert "torch" not in mods


@pytest.mark.parametrize("package", sorted(p.name for p in (ROOT / "pinnspec").iterdir()
                                           if (p / "__init__.py").exists()))
def test_every_package_imports_first_in_a_fresh_interpreter(package):
    """No import cycle that only the usual order (pinnspec, then its compiler) hides: e.g. the forward
    engine and the compiler's derivative plans share LinearOperator."""
    assert f"pinnspec.{package}" in _modules_after(f"import pinnspec.{package}")
