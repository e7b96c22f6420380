"""pinnspec: physics-informed neural networks written as text.

    import pinnspec
    spec = pinnspec.load("specs/burgers.pinn")    # parse + check; raises pinnspec.SpecError

Importing ``pinnspec`` (or ``pinnspec.lang``) loads no torch; the torch-based
stages (``pinnspec.surgery``, ``pinnspec.optim``, ``pinnspec.align``, ...)
load on first use.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["Spec", "SpecError", "load", "loads", "compile", "train", "__version__"]


def compile(spec):  # noqa: A001  (the public name of the stage)
    """Compile a spec (or a path to a .pinn file) into a torch problem:
    ``problem.sample(epoch)``, ``problem.losses(model, points)``, ``problem.reference(x)``."""
    from .compiler import compile_spec
    from .lang import Spec, load

    return compile_spec(spec if isinstance(spec, Spec) else load(spec))



def train(spec, **kwargs):
    """Train a spec; see :func:`pinnspec.engine.train` (returns a :class:`pinnspec.engine.Result`)."""
    from .engine import train as _train

    return _train(spec, **kwargs)


_LAZY_SUBMODULES = {"surgery", "optim", "align", "references", "sampling", "models", "compiler", "engine", "forward", "sweep", "bench", "plots", "ir", "catalog",
                    "registry", "lang", "cli"}
_LANG_NAMES = {"Spec", "SpecError", "load", "loads"}


def __getattr__(name: str):
    # lazy, so that `import pinnspec.surgery` loads neither lark nor sympy
    if name in _LANG_NAMES:
        return getattr(importlib.import_module(".lang", __name__), name)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pinnspec' has no attribute '{name}'")
