"""Running ``python -m pinnspec`` as a user would (one thread, output captured), for the tests in tests/cli."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def cli(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pinnspec", *map(str, args)], env=ENV, capture_output=True,
                          text=True, **kwargs)


def user_error(proc) -> list[str]:
    """stderr's lines of a command that failed as a user error (exit 1, no traceback)."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr.splitlines()
