"""The package's import graph, read from the source with `ast`: no import cycle among pinnspec's modules, the
layers go one way (lang -> ir -> compiler -> engine), and a package reaches another only through its public
__init__."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pinnspec"
#: what each package may not import (at any level: module or function)
FORBIDDEN = {
    "pinnspec.lang": ("pinnspec.compiler", "pinnspec.engine", "pinnspec.forward", "pinnspec.models",
                      "pinnspec.sweep", "pinnspec.bench", "pinnspec.plots", "pinnspec.cli", "pinnspec.tune"),
    "pinnspec.ir": ("pinnspec.lang", "pinnspec.compiler", "pinnspec.engine", "pinnspec.sweep", "pinnspec.bench",
                    "pinnspec.tune"),
    "pinnspec.registry": ("pinnspec.lang", "pinnspec.compiler", "pinnspec.engine"),
    "pinnspec.catalog": ("pinnspec.lang", "pinnspec.compiler", "pinnspec.engine"),
    "pinnspec.compiler": ("pinnspec.lang", "pinnspec.engine", "pinnspec.sweep", "pinnspec.bench", "pinnspec.cli",
                          "pinnspec.tune"),
    "pinnspec.engine": ("pinnspec.sweep", "pinnspec.bench", "pinnspec.plots", "pinnspec.cli", "pinnspec.tune"),
    # the editor runs the checks of `pinnspec check` only (no torch)
    "pinnspec.editor": ("pinnspec.compiler", "pinnspec.engine", "pinnspec.forward", "pinnspec.models",
                        "pinnspec.surgery", "pinnspec.optim", "pinnspec.align", "pinnspec.sweep", "pinnspec.bench",
                        "pinnspec.plots", "pinnspec.cli", "pinnspec.tune"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """(imported pinnspec module, at module level?, line) for every import the module runs (not those under
    ``if TYPE_CHECKING:``, which only a type checker reads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    top_level |= {id(n) for node in tree.body if isinstance(node, ast.If) for n in ast.walk(node)
                  if not _type_checking(node)}
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking(node)
                   for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target.startswith("pinnspec"):
                found.append((target, id(node) in top_level, node.lineno))
    return found


def _type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _graph():
    modules = _modules()
    return modules, {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _owner(module: str, modules) -> str:
    """The module an import loads: a package's __init__ is loaded with any of its modules."""
    return module if module in modules else module.rpartition(".")[0]


def test_no_import_cycle():
    """Neither at module level nor through imports inside functions (which would hide one: two modules that
    need each other are one module, or share a third)."""
    modules, imports = _graph()
    edges = {}
    for name, found in imports.items():
        for target, _, _ in found:
            parts = _owner(target, modules).split(".")
            for k in range(2, len(parts) + 1):  # importing a.b.c runs a/b/__init__ first
                step = ".".join(parts[:k])
                if step in modules and step != name and not name.startswith(step + "."):
                    edges.setdefault(name, set()).add(step)
    assert _cycles(edges) == []


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_the_layers_go_one_way(layer):
    modules, imports = _graph()
    wrong = [f"{name}:{line} imports {target}" for name, found in imports.items()
             if name == layer or name.startswith(layer + ".")
             for target, _, line in found if target.startswith(FORBIDDEN[layer])]
    assert wrong == []


#: modules that reach into another package's private modules, and why
REACHES_IN = {"pinnspec.bench._profile": "it times the engine's step by wrapping the internals it calls"}


def test_packages_reach_each_other_through_their_public_init():
    modules, imports = _graph()
    private = []
    for name, found in imports.items():
        if name in REACHES_IN:
            continue
        mine = ".".join(name.split(".")[:2])
        for target, _, line in found:
            parts = target.split(".")
            other = ".".join(parts[:2])
            if other != mine and any(p.startswith("_") and p != "__init__" for p in parts[2:]):
                private.append(f"{name}:{line} imports {target}")
    assert private == []
