"""The catalogue the language checks against equals what the code registers."""

import importlib

import pytest

from pinnspec import catalog
from pinnspec.registry import REGISTRIES

IMPLEMENTED_BY = {
    "model": "pinnspec.models",
    "optimizer": "pinnspec.optim",
    "surgery": "pinnspec.surgery",
    "align": "pinnspec.align",
    "sampler": "pinnspec.sampling",
    "reference": "pinnspec.references",
    "schedule": "pinnspec.engine",
}
@pytest.mark.parametrize("kind", list(catalog.BUILTINS))
def test_catalog_equals_registry(kind):
    importlib.import_module(IMPLEMENTED_BY[kind])
    registry = REGISTRIES[kind]
    assert set(catalog.BUILTINS[kind]) <= set(registry.names())
    for name, args in catalog.BUILTINS[kind].items():
        params = registry.entry(name).parameters()
        assert list(params) == list(args), f"{kind} {name}: code {list(params)} != catalogue {list(args)}"
        for key, default in args.items():
            assert params[key] == default, f"{kind} {name}({key}): code default {params[key]!r} != {default!r}"


def test_choices_name_catalogued_arguments():
    for (kind, name, arg), choices in catalog.CHOICES.items():
        assert arg in catalog.BUILTINS[kind][name]
        assert catalog.BUILTINS[kind][name][arg] in choices
