"""The installed package: every subpackage listed, the grammar inside the wheel."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "pinnspec").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"]["pinnspec.grammar"] == "grammar"


@pytest.mark.slow
def test_wheel_ships_the_grammar_and_the_installed_package_finds_it(tmp_path, checkout_build):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("pinnspec-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "pinnspec/grammar/pinnspec.lark" in names
        zf.extractall(tmp_path / "site")
    # import from the unpacked wheel only (not the checkout), far from the source tree
    code = ("import pinnspec, pinnspec.lang as L; assert 'site' in pinnspec.__file__, pinnspec.__file__; "
            "L.build_parser(strict=True); "
            "print(L.loads('problem p\\nspace x in [0, 1]\\nfield u\\nequation pde: u_xx = 0\\n').name)")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r}); {code}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "p"
