"""The built-in things pinnspec registers, read from the source of the modules that define them (with `ast`, not
imported): the names and keyword arguments the language front end checks a spec against without loading torch,
and the module a registry imports a built-in from the first time it is asked for.

A built-in is declared once, where it is defined, by its registry's decorator::

    @SURGERY.register("cagrad")
    @dataclass(frozen=True)
    class CAGrad(Surgery):
        c: float = 0.5

Its keyword arguments are a dataclass's fields (its bases' first), a class's ``__init__`` parameters, or a
function's parameters, each with its default (`REQUIRED` where it has none).  A default is read as Python would
compute it from literals, ``math`` constants and the module's own constants; anything else is refused when the
index is built (a test reads every built-in).
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["REQUIRED", "Declared", "declared"]

#: the registries' names in pinnspec.registry -> the `.pinn` kind they serve
REGISTRY_KINDS = {"MODELS": "model", "OPTIMIZERS": "optimizer", "SURGERY": "surgery", "ALIGN": "align",
                  "SCHEDULES": "schedule", "SAMPLERS": "sampler", "REFERENCES": "reference", "FUNCTIONS": "function"}
#: an argument without a default
REQUIRED = object()
PACKAGE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Declared:
    """One built-in: its kind, name, the module that registers it, and its keyword arguments (name -> default)."""

    kind: str
    name: str
    module: str
    arguments: dict[str, Any]


@lru_cache(maxsize=1)
def declared() -> dict[str, dict[str, Declared]]:
    """kind -> name -> `Declared`, for every registry decorator in pinnspec's modules (read once per process)."""
    found: dict[str, dict[str, Declared]] = {}
    for folder, _, files in os.walk(PACKAGE):
        for file in sorted(files):
            path = os.path.join(folder, file)
            if not file.endswith(".py"):
                continue
            with open(path, encoding="utf-8") as fh:
                if ".register(" not in fh.read():
                    continue
            module = _module_name(path)
            tree = _parsed(module)
            constants = _constants(tree)
            for node in tree.body:
                for kind, name in _registrations(node):
                    found.setdefault(kind, {})[name] = Declared(kind, name, module,
                                                                _arguments(node, module, constants))
    return found


@lru_cache(maxsize=None)
def _parsed(module: str) -> ast.Module:
    path = os.path.join(os.path.dirname(PACKAGE), *module.split("."))
    path = os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py"
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), filename=path)


def _module_name(path: str) -> str:
    relative = os.path.relpath(path, os.path.dirname(PACKAGE))[: -len(".py")]
    parts = relative.split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _registrations(node) -> list[tuple[str, str]]:
    """(kind, name) of each ``@REGISTRY.register("name")`` on a top-level class or function."""
    if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
        return []
    found = []
    for decorator in node.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "register" and isinstance(decorator.func.value, ast.Name)
                and decorator.func.value.id in REGISTRY_KINDS):
            name = ast.literal_eval(decorator.args[0]) if decorator.args else node.name
            found.append((REGISTRY_KINDS[decorator.func.value.id], name))
    return found


def _arguments(node, module: str, constants: dict) -> dict[str, Any]:
    """A function's parameters; a class's ``__init__`` parameters (its own, else a base's), or a dataclass's
    fields."""
    if isinstance(node, ast.FunctionDef):
        return _parameters(node, constants, skip_self=False)
    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
    if init is not None:
        return _parameters(init, constants, skip_self=True)
    if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return _fields(node, module, constants)
    for base, where in _bases(node, module):
        return _arguments(base, where, _constants(_parsed(where)))
    return {}


def _bases(node: ast.ClassDef, module: str) -> list[tuple[ast.ClassDef, str]]:
    """The class's bases that pinnspec defines, with their modules: in the same module, or imported from one of
    pinnspec's (``from ._base import Optimizer``)."""
    found = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            where = _defining_module(base.id, module)
            if where is not None:
                match = next((c for c in _parsed(where).body if isinstance(c, ast.ClassDef) and c.name == base.id),
                             None)
                if match is not None:
                    found.append((match, where))
    return found


def _defining_module(name: str, module: str) -> str | None:
    """The pinnspec module whose class ``name`` is in scope in ``module``."""
    tree = _parsed(module)
    if any(isinstance(c, ast.ClassDef) and c.name == name for c in tree.body):
        return module
    package = module.rpartition(".")[0] if not _is_package(module) else module
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.startswith("pinnspec"):
                return _defining_module(name, source)
    return None


def _is_package(module: str) -> bool:
    return os.path.isdir(os.path.join(os.path.dirname(PACKAGE), *module.split(".")))


def _parameters(function: ast.FunctionDef, constants: dict, *, skip_self: bool) -> dict[str, Any]:
    """A function's keyword-passable parameters and their defaults, in order."""
    a = function.args
    positional = a.args[1:] if skip_self else a.args
    defaults = [REQUIRED] * (len(a.args) - len(a.defaults)) + [_value(d, constants) for d in a.defaults]
    out = {p.arg: d for p, d in zip(a.args, defaults) if p in positional}
    out.update({p.arg: REQUIRED if d is None else _value(d, constants) for p, d in zip(a.kwonlyargs, a.kw_defaults)})
    return out


def _fields(node: ast.ClassDef, module: str, constants: dict) -> dict[str, Any]:
    """A dataclass's init fields and their defaults, its bases' first (a field a subclass declares again keeps
    its place and takes the new default)."""
    out: dict[str, Any] = {}
    for base, where in _bases(node, module):
        out.update(_fields(base, where, _constants(_parsed(where))))
    for item in node.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
            continue
        if "ClassVar" in ast.unparse(item.annotation):
            continue
        value = item.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
            keywords = {k.arg: k.value for k in value.keywords}
            if "init" in keywords and ast.literal_eval(keywords["init"]) is False:
                continue
            value = keywords.get("default")
        out[item.target.id] = REQUIRED if value is None else _value(value, constants)
    return out


def _constants(tree: ast.Module) -> dict[str, Any]:
    """The module's top-level NAME = value assignments that `_value` can read."""
    out: dict[str, Any] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None)
        if isinstance(target, ast.Name):
            try:
                out[target.id] = _value(node.value, out)
            except ValueError:
                pass
    return out


_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


def _value(node: ast.expr, constants: dict) -> Any:
    """A default's value: literals, tuples, + - * / ** of them, ``math`` constants and the module's constants."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_value(e, constants) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _value(node.operand, constants)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.left, constants), _value(node.right, constants))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math":
        return getattr(math, node.attr)
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    raise ValueError(f"a default pinnspec cannot read without running the module: {ast.unparse(node)}")
