"""Run-directory files, written atomically (temp file in the same folder + rename).

A run directory holds:

    config.pinn      the resolved spec (the file's text plus command-line overrides)
    result.json      the result (rewritten at every checkpoint; ``status`` says how far it got)
    history.csv      one row per epoch
    checkpoint.pt    everything needed to resume bit for bit (the last good state)
    predictions.npz  test points, reference and prediction at the best-validation checkpoint
    plots/           PNG plots (``pinnspec plot``)
"""

from __future__ import annotations

import io
from typing import Any

import torch

from .._files import (atomic_write_bytes, atomic_write_text, read_csv, read_json, save_npz,  # noqa: F401
                      write_csv, write_json)


def save_torch(path: str, obj: Any) -> None:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())
