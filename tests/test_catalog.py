"""The catalogue the language checks against (read from the decorators' source) equals what the code registers."""

import pytest

from pinnspec import catalog
from pinnspec.registry import REGISTRIES

@pytest.mark.parametrize("kind", list(catalog.BUILTINS))
def test_catalog_equals_registry(kind):
    registry = REGISTRIES[kind]  # a built-in's module is imported when its entry is first asked for
    for name, args in catalog.BUILTINS[kind].items():  # the declarations read from the source, against the code
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


def test_a_builtin_is_imported_the_first_time_it_is_asked_for():
    """No side-effect imports: a fresh interpreter gets every built-in from its registry, which imports the module
    its decorator is in (`pinnspec._declared`); reading the declarations loads no torch."""
    import subprocess
    import sys

    code = ("import sys\nfrom pinnspec import catalog\nfrom pinnspec.registry import REGISTRIES\n"
            "names = {k: sorted(v) for k, v in catalog.BUILTINS.items()}\nassert 'torch' not in sys.modules\n"
            "for kind, found in names.items():\n"
            "    for name in found:\n"
            "        assert REGISTRIES[kind].entry(name).name == name\n"
            "print(sum(map(len, names.values())))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 39  # 5 networks, 8 optimizers, 8 surgery methods, 2 alignments, 4 schedules,
    #                               9 samplers, 3 references


def test_declared_defaults_are_read_as_python_computes_them():
    import ast

    from pinnspec._declared import _value

    constants = {"NU": 0.01 / 3.141592653589793}
    assert _value(ast.parse("NU * 2", mode="eval").body, constants) == 0.02 / 3.141592653589793
    assert _value(ast.parse("math.pi / 2", mode="eval").body, {}) == 1.5707963267948966
    assert _value(ast.parse("(-1, 2.5, None)", mode="eval").body, {}) == (-1, 2.5, None)
    with pytest.raises(ValueError, match="cannot read without running the module: f"):
        _value(ast.parse("f(1)", mode="eval").body, {})
