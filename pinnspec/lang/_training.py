"""Training statements: ``model``, ``optimizer``, ``schedule``, ``surgery``, ``align``, ``weights``, ``train``,
``stage`` and ``causal``, each call checked against :mod:`pinnspec.catalog` (the names a spec may use, their
arguments and defaults)."""

from __future__ import annotations

from typing import Any

from .. import catalog, ir
from ..registry import did_you_mean
from . import _ast as A
from ._context import Context
from ._expr import CONSTANTS
from ._groupings import DEFAULT_GROUPING

_BAD = object()  # a value found wrong (reported)

_WHOLE = (lambda v: v == int(v) and v >= 1, "a whole number of at least 1", int)
#: the range checks of the `weights` calls' and the second-order stages' arguments: key -> (valid?, what it
#: must be, its type)
_ARGUMENT_RULES = {
    "every": _WHOLE, "points": _WHOLE, "history": _WHOLE, "max_evals": _WHOLE,
    "alpha": (lambda v: 0 <= v < 1, "at least 0 and less than 1", float),
    "eta": (lambda v: v > 0, "above 0", float),
    "gamma": (lambda v: 0 < v < 1, "above 0 and below 1", float),
    "lr": (lambda v: v > 0, "above 0", float),
}


def call_setting(ctx: Context, kind: str, statements) -> ir.CallSpec:
    """The call of a statement of ``kind`` (its first statement, checked), else the catalog's default."""
    if statements:
        call = validated_call(ctx, kind, statements[0].call)
        if call is not None and kind == "weights":
            call = _checked_arguments(ctx, call, statements[0].call)
        if call is not None:
            return call
    default = catalog.DEFAULTS[kind]
    if kind == "weights":
        return ir.CallSpec(default)  # `weights none`: no arguments shown or stored
    defaults = _known(kind)[default]
    return ir.CallSpec(default, tuple(defaults.items()))


def _checked_arguments(ctx: Context, spec: ir.CallSpec, call: A.Call) -> ir.CallSpec | None:
    """The ranges of `_ARGUMENT_RULES` (a `weights` call, a second-order stage's): located errors; the
    values in their types."""
    spans = {kw.name.name: kw.value.span for kw in call.kwargs}
    ok, checked = True, []
    for key, value in spec.kwargs:
        rule = _ARGUMENT_RULES.get(key)
        if rule is None:
            checked.append((key, value))
            continue
        valid, what, kind = rule
        if not valid(value):
            ctx.diag.error(spans.get(key, call.span), f"{spec.name}({key} = ...) must be {what}, got {value:g}")
            ok = False
        checked.append((key, kind(value)))
    return ir.CallSpec(spec.name, tuple(checked)) if ok else None


def validated_call(ctx: Context, kind: str, call: A.Call) -> ir.CallSpec | None:
    """``call`` checked against the names of ``kind`` and their arguments, with the defaults filled in; None
    (reported) when it names no such thing or an argument is wrong."""
    known = _known(kind)
    name = call.func.name
    if name not in known:
        hint = did_you_mean(name, known)
        more = f"; did you mean '{hint}'?" if hint else f" (known: {', '.join(sorted(known))})"
        if kind == "reference" and name == "none":  # a spec without a reference solution has no statement
            more = ("; a spec without a reference solution leaves the 'reference' statement out (it then has no "
                    "test error, and the kept model is chosen on its residual at held-out points)")
        ctx.diag.error(call.func.span, f"unknown {kind} '{name}'{more}")
        return None
    params = known[name]
    ok = True
    if call.args:
        example = next(iter(params), "key")
        ctx.diag.error(call.args[0].span, f"{kind} arguments are given by keyword, e.g. {name}({example} = ...)")
        ok = False
    values: dict[str, Any] = {}
    for kw in call.kwargs:
        key = kw.name.name
        if key not in params:
            hint = did_you_mean(key, params)
            more = f"; did you mean '{hint}'?" if hint else (f" (it takes: {', '.join(params)})" if params else " (it takes none)")
            ctx.diag.error(kw.name.span, f"{name}() has no argument '{key}'{more}")
            ok = False
            continue
        if key in values:
            ctx.diag.error(kw.name.span, f"the argument '{key}' is given twice")
            ok = False
            continue
        value = _setting_value(ctx, kw.value, f"{name}({key} = ...)", params[key],
                               tuples=(kind, name, key) in catalog.TUPLE_ARGUMENTS)
        if value is _BAD:
            ok = False
            continue
        choices = catalog.CHOICES.get((kind, name, key))
        if choices and value not in choices:
            hint = did_you_mean(str(value), choices)
            more = f"; did you mean '{hint}'?" if hint else ""
            ctx.diag.error(kw.value.span, f"{name}({key} = ...) must be one of {', '.join(choices)}{more}")
            ok = False
            continue
        values[key] = value
    for key, default in params.items():
        if default is catalog.REQUIRED and key not in values:
            ctx.diag.error(call.span, f"{name}() needs the argument '{key}'")
            ok = False
    if not ok:
        return None
    merged = {k: values.get(k, v) for k, v in params.items() if not (v is catalog.REQUIRED and k not in values)}
    return ir.CallSpec(name, tuple(merged.items()))


def _setting_value(ctx: Context, node: A.Expr, where: str, default: Any, tuples: bool = False):
    """A call argument as a plain value: number, name (as a string), string or tuple (where the argument's
    default is one, or ``tuples``: a number argument of `catalog.TUPLE_ARGUMENTS`, which takes numbers)."""
    if isinstance(node, A.Duration):  # a wall time: `time = 10 min` alone (elsewhere the expression's error)
        seconds = duration_seconds(ctx, node, where) if where.endswith("(time = ...)") else ctx.constant(node, where)
        return _BAD if seconds is None else seconds
    if isinstance(node, A.String):
        value: Any = node.value
    elif isinstance(node, A.Name) and node.id not in ctx.lets and node.id not in CONSTANTS:
        value = node.id
    elif isinstance(node, A.TupleExpr):
        number = isinstance(default, (int, float)) and not isinstance(default, bool)
        if number and not tuples:
            ctx.diag.error(node.span, f"{where} expects a number, got a tuple")
            return _BAD
        items = [_setting_value(ctx, i, where, 0.0 if number else None) for i in node.items]
        return _BAD if _BAD in items else tuple(items)
    else:
        number = ctx.constant(node, where)
        if number is None:
            return _BAD
        value = int(number) if number == int(number) and isinstance(default, int) and not isinstance(default, bool) else number
    if isinstance(default, bool) or default is None or default is catalog.REQUIRED:
        return value
    if isinstance(default, (int, float)) and not isinstance(value, (int, float)):
        ctx.diag.error(node.span, f"{where} expects a number, got '{value}'")
        return _BAD
    if isinstance(default, str) and not isinstance(value, str):
        ctx.diag.error(node.span, f"{where} expects a name, got {value:g}")
        return _BAD
    return value


#: the `train stop` rules that read the observations' stated noise, and what each does
STOPS_ON_NOISE = {
    "discrepancy": "ends the run when the observations are fitted to their noise",
    "balance": "ends the run when the equations' loss falls to a thousandth of the noisy observations'",
}


def training(ctx: Context, by_kind) -> ir.Training:
    """The training statements: the calls of each kind, the `train` settings and the stages."""
    calls = {kind: call_setting(ctx, kind, [s for s in by_kind.get(kind, [])])
             for kind in ("model", "optimizer", "schedule", "surgery", "align", "weights")}
    settings: dict[str, Any] = {}
    for st in by_kind.get("train", []):  # `train` statements add up
        _keyword_settings(ctx, st.settings, catalog.TRAIN_SETTINGS, "train", "settings are", settings)
    settings = {key: value for key, value in settings.items() if value is not _BAD}
    if settings.get("stop") in STOPS_ON_NOISE and not any(c.noise for c in ctx.conditions.values()):
        where = next(kw for st in by_kind["train"] for kw in st.settings if kw.name.name == "stop")
        ctx.diag.error(where.span, f"stop = {settings['stop']} {STOPS_ON_NOISE[settings['stop']]}: it needs a data "
                       "condition that states its noise ('data NAME from \"FILE\": u, noise = 0.1'); leave 'stop' "
                       "out otherwise")
    stages = _stages(ctx, by_kind, settings)
    if stages:
        first_order = [stage for stage in stages if not stage.second_order]
        if first_order:
            calls["optimizer"] = first_order[0].optimizer
        settings["epochs"] = sum(stage.epochs for stage in stages)
        if calls["align"].name == "gua" and len({stage.optimizer.name for stage in first_order}) > 1:
            ctx.diag.error(by_kind["stage"][0].span,
                           "with 'align gua' every first-order stage uses the same optimizer (gua's state "
                           f"alignment is the optimizer's): the stages use {', '.join(s.optimizer.name for s in first_order)}")
    calls["align"] = _resolved_alignment(ctx, calls["align"], calls["optimizer"], by_kind.get("align", []))
    _check_fourier_scales(ctx, calls["model"], by_kind.get("model", []))
    recipe = next((validated_call(ctx, "recipe", st.call) for st in by_kind.get("recipe", [])[:1]), None)
    return ir.Training(settings=tuple(settings.items()), stages=stages, recipe=recipe, **calls)


def _check_fourier_scales(ctx: Context, model: ir.CallSpec, statements) -> None:
    """``fourier = (s_1, ..., s_k)``: one scale per input the network reads (the coordinates; with a periodic
    `enforce`, the other coordinates then cos and sin of each periodic one, as `pinnspec.models.PeriodicEmbedding` feeds it)."""
    scales = model.options.get("fourier")
    if not isinstance(scales, tuple) or not statements:
        return
    periodic = {e.coordinate for e in ctx.periodic_embeddings}
    names = [c.name for c in ctx.coordinates]
    inputs = [n for n in names if n not in periodic] + [f"{f} {n}" for n in names if n in periodic
                                                          for f in ("cos", "sin")]
    if len(scales) != len(inputs):
        span = next((kw.value.span for kw in statements[0].call.kwargs if kw.name.name == "fourier"),
                    statements[0].call.span)
        ctx.diag.error(span, f"fourier gives {len(scales)} scales, but the network reads {len(inputs)} inputs "
                       f"({', '.join(inputs)}): give one scale per input, in that order")


def _keyword_settings(ctx: Context, keyword_args, table, what: str, listing: str, into: dict[str, Any]) -> dict[str, Any]:
    """``KEY = VALUE`` settings of a ``train`` or ``stage`` statement (``table``: key -> (kind, default))
    added to ``into``, each key at most once; a bad value is kept as _BAD (reported)."""
    for kw in keyword_args:
        key = kw.name.name
        if not _known_key(ctx, kw.name, table, f"unknown {what} setting", listing):
            continue
        if key in into:
            ctx.diag.error(kw.name.span, f"the {what} setting '{key}' is given twice")
            continue
        into[key] = _train_value(ctx, key, kw.value, table[key][0])
    return into


def _known_key(ctx: Context, name: A.Ident, known, what: str, listing: str) -> bool:
    """Whether ``name`` is a key of ``known``; else the located error ``WHAT 'NAME'`` with a "did you
    mean" or, without a close key, ``(LISTING: the keys)``."""
    if name.name in known:
        return True
    hint = did_you_mean(name.name, known)
    more = f"; did you mean '{hint}'?" if hint else f" ({listing}: {', '.join(known)})"
    ctx.diag.error(name.span, f"{what} '{name.name}'{more}")
    return False


def causal(ctx: Context, by_kind) -> tuple[ir.Causal, ...]:
    """The `causal` statements: each names an equation of a spec with time, at most once; ``causal none``
    (alone) weights nothing."""
    statements = by_kind.get("causal", [])
    if len(statements) == 1 and statements[0].call.func.name == "none" and statements[0].call.bare:
        return ()
    out: dict[str, ir.Causal] = {}
    for st in statements:
        ident, call = st.call.func, st.call
        if ident.name == "none":
            ctx.diag.error(ident.span, "'causal none' turns causal weighting off: it cannot be combined with "
                           "other 'causal' statements")
            continue
        if not ctx.is_condition(ident, "causal"):
            continue
        kind = ctx.condition_kinds.get(ident.name)
        if kind != "equation":
            ctx.diag.error(ident.span, f"causal weighting applies to equations; '{ident.name}' is "
                           f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} condition")
            continue
        if not any(c.is_time for c in ctx.coordinates):
            ctx.diag.error(ident.span, "causal weighting needs a time coordinate ('time t in [A, B]')")
            continue
        if ident.name in out:
            ctx.diag.error(ident.span, f"'{ident.name}' is weighted causally twice")
            continue
        values = dict(catalog.CAUSAL)
        ok = True
        for kw in call.kwargs:
            key = kw.name.name
            if not _known_key(ctx, kw.name, catalog.CAUSAL, f"causal {ident.name}() has no argument", "it takes"):
                ok = False
                continue
            number = ctx.constant(kw.value, f"causal {ident.name}({key} = ...)")
            if number is None:
                ok = False
            elif key == "chunks" and not (number == int(number) and number >= 1):
                ctx.diag.error(kw.value.span, f"causal {ident.name}(chunks = ...) must be a whole number of at "
                               f"least 1, got {number:g}")
                ok = False
            elif key == "eps" and not number >= 0:
                ctx.diag.error(kw.value.span, f"causal {ident.name}(eps = ...) must be at least 0, got {number:g}")
                ok = False
            else:
                values[key] = number
        for arg in call.args:
            ctx.diag.error(arg.span, f"causal arguments are given by keyword, e.g. {ident.name}(eps = 1)")
            ok = False
        if ok:
            out[ident.name] = ir.Causal(ident.name, float(values["eps"]), int(values["chunks"]))
    return tuple(out.values())


def _stages(ctx: Context, by_kind, settings: dict[str, Any]) -> tuple[ir.Stage, ...]:
    """The `stage` statements, checked: each names an optimizer or a second-order method with its
    arguments, and its settings (epochs required).  They exclude an `optimizer` statement and `train
    epochs` (each stage names its own)."""
    statements = by_kind.get("stage", [])
    if not statements:
        return ()
    for st in by_kind.get("optimizer", [])[:1]:
        ctx.diag.error(st.span, "'optimizer' and 'stage' statements exclude each other: the stages name the "
                       f"optimizers (write this one as the first stage, e.g. 'stage {st.call.func.name}(...) "
                       "epochs = 1000')")
    for st in by_kind.get("train", []):
        for kw in st.settings:
            if kw.name.name == "epochs":
                ctx.diag.error(kw.span, "'train epochs' and 'stage' statements exclude each other: each stage "
                               "gives its own epochs (stage NAME(...) epochs = N)")
    stages = []
    for st in statements:
        call = validated_call(ctx, "stage", st.call)
        if call is not None and call.name in catalog.SECOND_ORDER_STAGES:
            call = _checked_arguments(ctx, call, st.call)
        values = _keyword_settings(ctx, st.settings, catalog.STAGE_SETTINGS, "stage", "a stage takes", {})
        if "epochs" not in values:
            ctx.diag.error(st.span, "a stage needs its epochs, e.g. 'stage adam(lr = 1e-3) epochs = 1000'")
        if "resample" in values and call is not None and call.name not in catalog.SECOND_ORDER_STAGES:
            where = next(kw.span for kw in st.settings if kw.name.name == "resample")
            ctx.diag.error(where, f"'resample' is a setting of quasi-Newton stages ("
                           f"{', '.join(catalog.QUASI_NEWTON_STAGES)}); a first-order stage draws its points "
                           "as the spec's 'resample' says")
            continue
        if call is None or _BAD in values.values() or "epochs" not in values:
            continue
        stages.append(ir.Stage(call, values["epochs"], values.get("dtype", settings.get("dtype", "float32")),
                               values.get("resample")))
    return tuple(stages)


def _resolved_alignment(ctx: Context, align: ir.CallSpec, optimizer: ir.CallSpec, statements) -> ir.CallSpec:
    """``gua`` with the values a run uses: an unset rho_m / rho_v takes the paper's value for the
    spec's optimizer (catalog.GUA_STATE_ALIGNMENT), so that ``show``, result.json and plots state
    them; with a built-in optimizer that has no state alignment they are left out (and refused when
    given).  An optimizer registered at run time resolves its own defaults when the run starts."""
    if align.name != "gua" or optimizer.name not in catalog.BUILTINS["optimizer"]:
        return align
    options = align.options
    paper = catalog.GUA_STATE_ALIGNMENT.get(optimizer.name)
    if paper is None:
        if options.get("rho_m") or options.get("rho_v"):
            ctx.diag.error(statements[0].call.span,
                           f"gua: the optimizer '{optimizer.name}' has no state alignment (only "
                           f"{', '.join(catalog.GUA_STATE_ALIGNMENT)} have one): leave rho_m and rho_v unset")
        return ir.CallSpec("gua", tuple((k, v) for k, v in align.kwargs if k not in ("rho_m", "rho_v")))
    resolved = {"rho_m": paper[0], "rho_v": paper[1]}
    return ir.CallSpec("gua", tuple((k, resolved[k] if k in resolved and v is None else v)
                                    for k, v in align.kwargs))


def duration_seconds(ctx: Context, node: A.Expr, where: str) -> float | None:
    """A wall time in seconds: ``10 min`` (units `catalog.DURATION_UNITS`) or a number of seconds; None (reported)
    unless above 0."""
    if isinstance(node, A.Duration):
        unit = node.unit.name
        if unit not in catalog.DURATION_UNITS:
            hint = did_you_mean(unit, catalog.DURATION_UNITS)
            more = f"did you mean '{hint}'?" if hint else f"the units are {', '.join(catalog.DURATION_UNITS)}"
            ctx.diag.error(node.unit.span, f"{where}: unknown unit of time '{unit}'; {more}")
            return None
        seconds = float(node.amount.text) * catalog.DURATION_UNITS[unit]
    elif isinstance(node, (A.Name, A.String)) and not (isinstance(node, A.Name) and node.id in ctx.lets):
        ctx.diag.error(node.span, f"{where} is a wall time, e.g. 10 min (s, min or h)")
        return None
    else:
        number = ctx.constant(node, where)
        if number is None:
            return None
        seconds = float(number)
    if not (0 < seconds < 1e9):
        ctx.diag.error(node.span, f"{where} must be above 0 (a wall time, e.g. 10 min), got {seconds:g} s")
        return None
    return seconds


def _train_value(ctx: Context, key: str, node: A.Expr, kind: str | None = None):
    """A `train` setting's value (``kind``: its kind, default `catalog.TRAIN_SETTINGS`'), or _BAD."""
    kind = kind or catalog.TRAIN_SETTINGS[key][0]
    if kind == "duration":
        seconds = duration_seconds(ctx, node, f"'{key}'")
        return _BAD if seconds is None else seconds
    if isinstance(node, A.Duration):
        ctx.diag.error(node.span, f"'{key}' is not a wall time: only 'time' takes one")
        return _BAD
    if kind in ("int", "number"):
        number = ctx.constant(node, f"'{key}'") if not isinstance(node, (A.Name, A.String)) or (
            isinstance(node, A.Name) and node.id in ctx.lets) else None
    if kind == "number":
        if number is None or not number >= 0:
            ctx.diag.error(node.span, f"'{key}' must be a number of at least 0")
            return _BAD
        return float(number)
    if kind == "int":
        minimum = 0 if key == "seed" else 1
        if number is None or number != int(number) or number < minimum:
            ctx.diag.error(node.span, f"'{key}' must be a whole number of at least {minimum}")
            return _BAD
        return int(number)
    if not isinstance(node, A.Name):
        ctx.diag.error(node.span, f"'{key}' expects a name")
        return _BAD
    if kind == "name":  # grouping
        groupings = [n for n, (k, _) in ctx.declared.items() if k == "grouping"]
        if node.id not in groupings and node.id != DEFAULT_GROUPING:
            hint = did_you_mean(node.id, groupings)
            more = f"; did you mean '{hint}'?" if hint else f" (groupings are: {', '.join(groupings) or 'none'})"
            ctx.diag.error(node.span, f"unknown grouping '{node.id}'{more}")
            return _BAD
        return node.id
    choices = kind.split(":", 1)[1].split("|")
    if node.id not in choices:
        hint = did_you_mean(node.id, choices)
        more = f"; did you mean '{hint}'?" if hint else ""
        ctx.diag.error(node.span, f"'{key}' must be one of {', '.join(choices)}{more}")
        return _BAD
    return node.id


def _known(kind: str) -> dict[str, dict[str, Any]]:
    """The names of a training statement's kind with their arguments (the weights stage: `catalog.WEIGHTS`)."""
    if kind == "weights":
        return {name: dict(args) for name, args in catalog.WEIGHTS.items()}
    if kind == "recipe":
        return {name: dict(args) for name, args in catalog.RECIPES.items()}
    if kind == "stage":  # the optimizers, then the second-order methods
        return {**catalog.known("optimizer"), **{n: dict(a) for n, a in catalog.SECOND_ORDER_STAGES.items()}}
    return catalog.known(kind)
