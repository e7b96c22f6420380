"""Running the ``pinnspec`` command as a user would (``python -m pinnspec`` calls the same `main`), for the tests
in tests/cli: in this process, its exit code and its stdout and stderr captured.  A fresh interpreter per command
cost ~2.3 s of the suite's time each (importing torch); the tests that need a process of their own (a signal, a
second writer, a killed run) start one themselves."""

import contextlib
import io
import os
import subprocess
from pathlib import Path

from pinnspec.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "tests" / "engine" / "data" / "tiny.pinn")
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def cli(*args) -> subprocess.CompletedProcess:
    """``pinnspec ARGS``: (exit code, stdout, stderr), as the process would give them."""
    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's usage errors and --help
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return subprocess.CompletedProcess(["pinnspec", *argv], code, out.getvalue(), err.getvalue())


def user_error(proc) -> list[str]:
    """stderr's lines of a command that failed as a user error (exit 1, no traceback)."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr.splitlines()
