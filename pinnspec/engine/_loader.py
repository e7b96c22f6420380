"""A saved run read back: every file ``eval`` and ``train --resume`` read goes through `open_run`, and the
checkpoint into a trainer through `restore`; a file that is missing, unreadable or from another run is a
`pinnspec._rundir.RunFileError`, one line naming the file and what is wrong with it."""

from __future__ import annotations

import os
from typing import NamedTuple

import torch

from .._rundir import RunFileError, read_config, read_result, run_dir_error, run_file
from ._artifacts import load_checkpoint

__all__ = ["SavedRun", "open_run", "restore"]

#: what every checkpoint pinnspec writes holds (`Trainer.state_dict`)
_REQUIRED = ("model", "params", "chain_generator", "epoch", "best", "counters", "history", "validations", "elapsed")


class SavedRun(NamedTuple):
    spec: object  # the checked spec of config.pinn (`pinnspec.lang.Spec`)
    checkpoint: dict  # checkpoint.pt (tensors and plain values only)
    checkpoint_path: str
    result: dict | None  # result.json; None where the run was killed before writing it


def open_run(run_dir: str) -> SavedRun:
    """The run in ``run_dir``: its config.pinn checked, its checkpoint.pt loaded safely (`load_checkpoint`)
    with the keys every checkpoint has, its result.json (if any) a result of the same problem."""
    from ..lang import loads

    path = run_file(run_dir, "checkpoint.pt")
    checkpoint = load_checkpoint(path)
    missing = list(_REQUIRED) if not isinstance(checkpoint, dict) else [k for k in _REQUIRED if k not in checkpoint]
    if missing:
        raise run_dir_error(path, f"not a checkpoint pinnspec wrote: it lacks {', '.join(map(repr, missing))}")
    text = read_config(run_dir)
    config = os.path.join(run_dir, "config.pinn")
    source_dir = checkpoint.get("source_dir")
    spec = loads(text, filename=config, base_dir=source_dir if isinstance(source_dir, str) else None)
    result = read_result(run_dir) if os.path.exists(os.path.join(run_dir, "result.json")) else None
    if result is not None and result.get("problem") not in (None, spec.ir.name):
        raise run_dir_error(os.path.join(run_dir, "result.json"),
                            f"the result of problem '{result.get('problem')}', but config.pinn trains problem "
                            f"'{spec.ir.name}': the files are from different runs")
    return SavedRun(spec, checkpoint, path, result)


def _shape(value) -> str:
    return "[" + ", ".join(map(str, value.shape)) + "]" if isinstance(value, torch.Tensor) else type(value).__name__


def _mismatch(model: torch.nn.Module, params: dict, checkpoint: dict) -> str | None:
    """The first parameter whose name or shape differs between the run's network (config.pinn) and the
    checkpoint, said in words; None when they agree."""
    saved, here = checkpoint["model"], model.state_dict()
    if not isinstance(saved, dict):
        return f"its 'model' is a {type(saved).__name__}, not the network's weights"
    for name, tensor in here.items():
        if name not in saved:
            return f"it has no weight '{name}', which config.pinn's network has ({_shape(tensor)})"
        if not isinstance(saved[name], torch.Tensor) or saved[name].shape != tensor.shape:
            return (f"its weight '{name}' is {_shape(saved[name])}, config.pinn's network has {_shape(tensor)}")
    extra = [name for name in saved if name not in here]
    if extra:
        return f"it has a weight '{extra[0]}' that config.pinn's network has not"
    if not isinstance(checkpoint["params"], dict) or set(checkpoint["params"]) != set(params):
        saved_names = sorted(checkpoint["params"]) if isinstance(checkpoint["params"], dict) else []
        return (f"its params are {', '.join(saved_names) or 'none'}, config.pinn's are "
                f"{', '.join(sorted(params)) or 'none'}")
    return None


def restore(trainer, saved: SavedRun) -> None:
    """The checkpoint into ``trainer`` (built from ``saved.spec``); a checkpoint of another spec, or one whose
    states do not fit, is a `RunFileError` naming the first parameter that differs."""
    fault = _mismatch(trainer.model, trainer.params, saved.checkpoint)
    if fault is not None:
        raise run_dir_error(saved.checkpoint_path, f"not a checkpoint of the spec in config.pinn: {fault}")
    try:
        trainer.load_state_dict(saved.checkpoint)
    except (KeyError, IndexError, RuntimeError, ValueError, TypeError, AttributeError) as err:
        if isinstance(err, RunFileError):
            raise
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise run_dir_error(saved.checkpoint_path, f"its states do not fit the run config.pinn describes "
                                                   f"({type(err).__name__}: {reason})") from None
