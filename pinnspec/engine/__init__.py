"""The training engine: the update chain surgery -> optimizer proposal -> alignment -> apply.

    result = pinnspec.train("specs/burgers.pinn", epochs=2000, surgery="config", align="gua")
"""

from __future__ import annotations

import os

from ._gradients import loss_gradients
from ._trainer import Result, Trainer, TrainingDiverged, resolve_device

__all__ = ["train", "resume", "Result", "Trainer", "TrainingDiverged", "loss_gradients", "resolve_device"]


def _as_spec(spec):
    from ..lang import Spec, load

    return spec if isinstance(spec, Spec) else load(spec)


def train(spec, *, epochs=None, surgery=None, optimizer=None, align=None, grouping=None, seed=None,
          device=None, dtype=None, out=None, overrides=None, progress=False, log=None) -> Result:
    """Train a spec (a path or ``pinnspec.load(...)``); every argument overrides
    the spec's own training statement.  ``surgery``/``optimizer``/``align`` take a
    name or a call (``"cagrad(c = 0.4)"``).  ``out``: a run directory to write
    (result.json, history.csv, checkpoint.pt, config.pinn, predictions.npz)."""
    from ..lang._overrides import apply_overrides

    given = {"epochs": epochs, "surgery": surgery, "optimizer": optimizer, "align": align, "grouping": grouping,
             "seed": seed, "device": device, "dtype": dtype, **(overrides or {})}
    spec = apply_overrides(_as_spec(spec), given)
    return Trainer(spec, out, progress=progress, log=log).run()


def resume(run_dir: str, *, progress=False, log=None) -> Result:
    """Continue a run from its last checkpoint (bit for bit, same device)."""
    import torch

    from ..lang import load

    spec = load(os.path.join(run_dir, "config.pinn"))
    trainer = Trainer(spec, run_dir, progress=progress, log=log)
    trainer.load_state_dict(torch.load(os.path.join(run_dir, "checkpoint.pt"), weights_only=False,
                                       map_location=trainer.device))
    return trainer.run()
