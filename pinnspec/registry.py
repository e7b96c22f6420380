"""Name registries for everything a `.pinn` file can name by string.

A registry maps a name (``"pcgrad"``, ``"adam"``, ``"cole_hopf_burgers"``) to
an implementation. Implementations register themselves with a decorator::

    from pinnspec.registry import SURGERY

    @SURGERY.register("pcgrad")
    class PCGrad: ...

Unknown names raise :class:`UnknownNameError` with a "did you mean" hint.

This module never imports torch, sympy or lark: the language front end uses
it to check names.  The front end knows the built-in names (and their keyword
arguments) from :mod:`pinnspec.catalog` without importing the torch code that
implements them; a test keeps the catalogue and the registries equal.

Third-party packages register through the ``pinnspec`` entry-point group:
each entry point names a callable (or module) that, when loaded, registers
its things.  :func:`load_plugins` loads them once, lazily.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = [
    "Registry",
    "UnknownNameError",
    "did_you_mean",
    "load_plugins",
    "REGISTRIES",
    "FUNCTIONS",
    "REFERENCES",
    "SAMPLERS",
    "MODELS",
    "OPTIMIZERS",
    "SURGERY",
    "ALIGN",
    "SCHEDULES",
]


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to ``name``, or None when nothing is close."""
    candidates = list(candidates)
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in candidates}
        if name.lower() in lowered:
            return lowered[name.lower()]
    return matches[0] if matches else None


class UnknownNameError(KeyError):
    """A name that is not registered; ``str()`` carries the suggestion."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        self.suggestion = did_you_mean(name, self.known)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = f"unknown {self.kind} '{self.name}'"
        if self.suggestion:
            text += f"; did you mean '{self.suggestion}'?"
        elif self.known:
            text += f" (known: {', '.join(self.known)})"
        return text

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


@dataclass(frozen=True)
class Entry:
    name: str
    obj: Any

    def parameters(self) -> dict[str, Any]:
        """Keyword parameters of the registered callable: name -> default
        (``inspect.Parameter.empty`` when required)."""
        return signature_parameters(self.obj)


def signature_parameters(obj: Callable) -> dict[str, Any]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    params: dict[str, Any] = {}
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return params
    for i, (pname, p) in enumerate(sig.parameters.items()):
        if inspect.isclass(obj) and i == 0:
            continue  # self
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind == p.POSITIONAL_ONLY:
            continue
        params[pname] = p.default
    return params


class Registry:
    """One kind of named thing (surgery methods, optimizers, ...)."""

    def __init__(self, kind: str, statement: str):
        self.kind = kind
        self.statement = statement  # the `.pinn` keyword (and `pinnspec._declared` kind) it serves
        self._entries: dict[str, Entry] = {}

    def register(self, name: str | None = None, *, replace: bool = False):
        """Decorator: ``@REG.register("name")`` (default: the object's __name__)."""

        def decorate(obj):
            key = name or getattr(obj, "__name__")
            if key in self._entries and not replace and self._entries[key].obj is not obj:
                raise ValueError(f"{self.kind} '{key}' is already registered")
            self._entries[key] = Entry(key, obj)
            return obj

        return decorate

    def add(self, name: str, obj: Any, *, replace: bool = False) -> None:
        self.register(name, replace=replace)(obj)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        """The entry ``name``: a registered one, or a built-in whose module is imported now (its decorator
        registers it: `pinnspec._declared`), or a plugin's (loaded once)."""
        if name not in self._entries:
            builtin = _declared_builtins().get(self.statement, {}).get(name)
            if builtin is not None:
                importlib.import_module(builtin.module)
            else:
                load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._entries) from None

    def get(self, name: str) -> Any:
        return self.entry(name).obj

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


FUNCTIONS = Registry("function", "function")
REFERENCES = Registry("reference generator", "reference")
SAMPLERS = Registry("sampler", "sampler")
MODELS = Registry("model", "model")
OPTIMIZERS = Registry("optimizer", "optimizer")
SURGERY = Registry("surgery method", "surgery")
ALIGN = Registry("alignment", "align")
SCHEDULES = Registry("schedule", "schedule")

#: statement keyword in a .pinn file -> registry
REGISTRIES: dict[str, Registry] = {
    "function": FUNCTIONS,
    "reference": REFERENCES,
    "sampler": SAMPLERS,
    "model": MODELS,
    "optimizer": OPTIMIZERS,
    "surgery": SURGERY,
    "align": ALIGN,
    "schedule": SCHEDULES,
}

_plugins_loaded = False


def load_plugins(force: bool = False) -> list[str]:
    """Load every entry point of the ``pinnspec`` group once.

    An entry point may name a callable (called with no arguments) or a module
    (imported for its registration side effects).  Returns the names loaded.
    """
    global _plugins_loaded
    if _plugins_loaded and not force:
        return []
    _plugins_loaded = True
    from importlib.metadata import entry_points

    loaded = []
    for ep in entry_points(group="pinnspec"):
        target = ep.load()
        if callable(target) and not inspect.ismodule(target):
            target()
        loaded.append(ep.name)
    return loaded


def _declared_builtins():
    """kind -> name -> the built-in's declaration, read from the source (`pinnspec._declared`)."""
    from ._declared import declared

    return declared()
