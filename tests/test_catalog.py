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
        table = catalog.SECOND_ORDER_STAGES if kind == "stage" else catalog.BUILTINS[kind]
        assert arg in table[name]
        assert table[name][arg] in choices


def test_tuple_arguments_are_catalogued_number_arguments():
    for kind, name, arg in catalog.TUPLE_ARGUMENTS:
        default = catalog.BUILTINS[kind][name][arg]
        assert isinstance(default, float), (kind, name, arg)


def test_second_order_stages_match_their_methods():
    """A stage's arguments are the method's own (the trainer builds it with them), with the same defaults."""
    import dataclasses

    from pinnspec.optim._quasi_newton import quasi_newton

    for name, arguments in catalog.SECOND_ORDER_STAGES.items():
        method = quasi_newton(name, {})
        defaults = {f.name: f.default for f in dataclasses.fields(method)}
        for key, value in arguments.items():
            assert defaults[key] == value, (name, key)
