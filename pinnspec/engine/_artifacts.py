"""Run-directory files, written atomically (temp file in the same folder + rename).

A run directory holds:

    config.pinn      the resolved spec (the file's text plus command-line overrides)
    result.json      the result (rewritten at every checkpoint; ``status`` says how far it got)
    history.csv      one row per epoch
    checkpoint.pt    everything needed to resume bit for bit (the last good state)
    predictions.npz  test points, reference and prediction at the best-validation checkpoint
    plots/           PNG plots (``pinnspec plot``)
    manifest.json    the files above that the run wrote (what ``overwrite`` removes)
    .pinnspec.lock   "PID HOST" of the process writing the run, while it writes

The manifest and the lock are `pinnspec._rundir`'s.
"""

from __future__ import annotations

import io
import os
from typing import Any, NamedTuple

import torch

from .._files import (UnsafeCheckpoint, atomic_write_bytes, atomic_write_text, read_csv, read_json,  # noqa: F401
                      save_npz, write_csv, write_json)
from .._rundir import (MANIFEST, RunFileError, directory_entries, holds_run, read_result, remove_run_files,
                       remove_temporary)


def save_torch(path: str, obj: Any) -> None:
    """``obj`` (tensors and plain values only: see `load_checkpoint`) written atomically."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load_checkpoint(path: str, map_location: Any = "cpu") -> dict:
    """A checkpoint, loaded with ``torch.load(weights_only=True)``: tensors, numbers, strings and containers
    only, so a run directory someone shares cannot run code here.  pinnspec's checkpoints hold nothing else;
    any other content is refused with `UnsafeCheckpoint` (a ValueError naming the file)."""
    import pickle

    try:
        return torch.load(path, weights_only=True, map_location=map_location)
    except (pickle.UnpicklingError, RuntimeError, AttributeError, EOFError, TypeError) as err:
        reason = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise UnsafeCheckpoint(
            f"{path}: refused: not a checkpoint pinnspec wrote, or one that holds more than tensors and plain "
            f"values ({reason}); nothing in it was run. Use a checkpoint from a run you trust, or train again"
        ) from None


_STATUS_WORDS = {"completed": "a finished", "interrupted": "an interrupted", "diverged": "a diverged",
                 "running": "an unfinished"}


class Remedies(NamedTuple):
    """How the caller continues, replaces or avoids a run (``{path}``: the run directory)."""

    resume: str
    elsewhere: str
    replace: str


CLI_REMEDIES = Remedies("continue it with 'pinnspec train --resume {path}'", "choose another --out DIR",
                        "add --overwrite to replace it")
PYTHON_REMEDIES = Remedies("continue it with pinnspec.engine.resume('{path}')", "choose another out=",
                           "pass overwrite=True to replace it")


class RunDirInUse(ValueError):
    """The run directory to write already holds files: training would overwrite them."""


def claim_run_dir(path: str, overwrite: bool = False, remedies: Remedies = CLI_REMEDIES) -> list[str]:
    """Make ``path`` ready to hold a new run (call it holding the directory's `RunLock`): a missing or empty
    directory is fine; one with files raises :class:`RunDirInUse` (what is there and how to go on), unless
    ``overwrite`` and it holds a run: then the files that run recorded as its own are removed
    (`pinnspec._rundir.remove_run_files`), and the ``.tmp-*`` files a killed run left; a user's other files stay.  ``overwrite`` on a directory that holds
    no run raises :class:`RunDirInUse` and removes nothing.  Returns the names removed."""
    if not os.path.exists(path):
        return []
    if not os.path.isdir(path):
        raise RunDirInUse(f"{path} is a file, not a directory; {remedies.elsewhere}")
    entries = directory_entries(path)
    if not entries:
        return []
    if overwrite:
        if not holds_run(path):
            raise RunDirInUse(f"{path} holds no pinnspec run (no {MANIFEST}, no result.json beside a config.pinn): "
                              f"--overwrite replaces a run's own files only, so nothing was removed; "
                              f"{remedies.elsewhere}")
        return remove_run_files(path) + remove_temporary(path)
    steps = [remedies.elsewhere, remedies.replace]
    if _resumable(path):
        steps.insert(0, remedies.resume.format(path=path))
    raise RunDirInUse(f"{path} {_describe_contents(path, entries)}: {', '.join(steps[:-1])} or {steps[-1]}")


def _run_status(path: str) -> dict | None:
    """result.json of a run directory, or None when it is missing or unreadable."""
    try:
        return read_result(path)
    except RunFileError:
        return None


def _resumable(path: str) -> bool:
    result = _run_status(path) or {}
    return os.path.isfile(os.path.join(path, "checkpoint.pt")) and result.get("status") != "completed"


def _describe_contents(path: str, entries: list[str]) -> str:
    result = _run_status(path)
    if result is not None and result.get("status") in _STATUS_WORDS:
        return (f"holds {_STATUS_WORDS[result['status']]} run (result.json: {result['status']}, "
                f"{result.get('epochs_done', '?')}/{result.get('epochs', '?')} epochs)")
    shown = ", ".join(entries[:4]) + (f" and {len(entries) - 4} more" if len(entries) > 4 else "")
    return f"is not empty (it holds {shown})"


def to_device(tree, device: torch.device):
    """Every tensor of a nested dict/list/tuple, moved to ``device`` (bit for bit)."""
    if isinstance(tree, torch.Tensor):
        return tree.to(device)
    if isinstance(tree, dict):
        return {k: to_device(v, device) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_device(v, device) for v in tree)
    return tree
