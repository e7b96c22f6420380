"""docs/extending.md's worked plugin, run as a user would install it: its code blocks written to a folder with the
metadata pip writes for the `pinnspec` entry-point group, then `pinnspec check` and `pinnspec train` of its spec
in fresh interpreters (plugins load once per process)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def _files() -> dict[str, str]:
    """The doc's code blocks that name a file after their language: path -> text."""
    blocks = re.findall(r"^```(\w+) (\S+)\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {path: text for _, path, text in blocks}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The plugin on a folder of sys.path, as `pip install` leaves it: the package and its dist-info."""
    site = tmp_path_factory.mktemp("site")
    for path, text in _files().items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text, encoding="utf-8")
    dist = site / "pinnspec_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pinnspec-demo\nVersion: 0.1\n")
    entry = re.search(r'\[project\.entry-points\.pinnspec\]\n(\w+) = "(\w+)"', DOC.read_text(encoding="utf-8"))
    (dist / "entry_points.txt").write_text(f"[pinnspec]\n{entry[1]} = {entry[2]}\n")
    return site


def _pinnspec(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "pinnspec", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


def test_the_doc_holds_the_plugin_and_its_spec():
    assert set(_files()) == {"pinnspec_demo/__init__.py", "demo.pinn"}


def test_check_knows_the_plugins_names_and_suggests_them(installed, tmp_path):
    done = _pinnspec(installed, "check", "demo.pinn", cwd=installed)
    assert done.returncode == 0, done.stderr
    wrong = tmp_path / "wrong.pinn"
    wrong.write_text(_files()["demo.pinn"].replace("model     sine_net(", "model     sine_nets("))
    done = _pinnspec(installed, "check", str(wrong), cwd=tmp_path)
    assert done.returncode != 0 and "did you mean 'sine_net'?" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_plugin_trains(installed, tmp_path):
    done = _pinnspec(installed, "train", "demo.pinn", "--out", str(tmp_path / "run"), "--quiet", cwd=installed)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed" and result["epochs_done"] == 10
    assert result["model"] == "sine_net(width = 16)" and result["surgery"] == "mean()"
    assert result["optimizer"].startswith("sign_sgd(") and result["rel_l2"] is not None
