"""pinnspec: physics-informed neural networks written as text.

    import pinnspec
    spec = pinnspec.load("specs/burgers.pinn")    # parse + check; raises pinnspec.SpecError

Importing ``pinnspec`` (or ``pinnspec.lang``) loads no torch; the torch-based
stages (``pinnspec.surgery``, ``pinnspec.optim``, ``pinnspec.align``, ...)
load on first use.
"""

from __future__ import annotations

import importlib

from .lang import Spec, SpecError, load, loads

__version__ = "0.1.0"
__all__ = ["Spec", "SpecError", "load", "loads", "__version__"]

_LAZY_SUBMODULES = {"surgery", "optim", "align", "references", "ir", "catalog", "registry", "lang", "cli"}


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pinnspec' has no attribute '{name}'")
