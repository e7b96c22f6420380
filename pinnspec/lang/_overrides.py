"""Command-line overrides (``--set key=value``, ``--optimizer CALL``, ...).

An override is written as the statement it replaces and appended to the
spec's text, after the statements it replaces are blanked out.  The result is
checked like any spec, so a bad override gets the same located error with a
"did you mean" hint, and the resolved text is exactly what a run saves as its
``config.pinn``: running that file repeats the run.
"""

from __future__ import annotations

from .. import catalog
from . import _ast as A
from ._diagnostics import Diagnostic, SpecError

#: keys that replace a whole statement; the value is the statement's text after the keyword
STATEMENT_KEYS = ("model", "optimizer", "schedule", "surgery", "align", "sampler", "resample", "test", "validate")
HEADER = "# --- command-line overrides ---"


def apply_overrides(spec, overrides: dict[str, object]):
    """A new checked Spec: ``spec`` with ``overrides`` applied (key -> value text).

    Keys: the training statements (``optimizer = "adam(lr = 1e-3)"``), ``sampler``,
    ``resample`` ("every 10" | "never"), ``test``, ``validate`` ("test every 100"),
    and every ``train`` setting (``epochs``, ``grouping``, ``seed``, ...).
    """
    from . import loads  # local: the package imports this module

    overrides = {k: v for k, v in overrides.items() if v is not None}
    if not overrides:
        return spec
    unknown = [k for k in overrides if k not in STATEMENT_KEYS and k not in catalog.TRAIN_SETTINGS]
    if unknown:
        from ..registry import did_you_mean

        keys = list(STATEMENT_KEYS) + list(catalog.TRAIN_SETTINGS)
        hint = did_you_mean(unknown[0], keys)
        more = f"; did you mean '{hint}'?" if hint else f" (keys are: {', '.join(keys)})"
        raise SpecError([Diagnostic("error", f"unknown override '{unknown[0]}'{more}", A.Span(1, 1, 1, 2),
                                    "--set")], None)
    lines = spec.source.splitlines()
    replaced_kinds = {k for k in overrides if k in STATEMENT_KEYS}
    train_overrides = {k: v for k, v in overrides.items() if k in catalog.TRAIN_SETTINGS}
    kept_train: dict[str, str] = {}
    for st in spec.ast.statements:
        kind = st.keyword
        if kind in replaced_kinds or (kind == "train" and train_overrides):
            if kind == "train":
                for kw in st.settings:
                    kept_train[kw.name.name] = kw.value.span.text(spec.source)
            for i in range(st.span.line - 1, st.span.end_line):
                lines[i] = "# (replaced by a command-line override) " + lines[i]
    added = [HEADER]
    for key in STATEMENT_KEYS:
        if key in overrides:
            added.append(f"{key} {overrides[key]}")
    if train_overrides:
        merged = {**kept_train, **{k: str(v) for k, v in train_overrides.items()}}
        added.append("train " + ", ".join(f"{k} = {v}" for k, v in merged.items()))
    text = "\n".join(lines + added) + "\n"
    return loads(text, filename=f"{spec.filename} (with overrides)", base_dir=spec.ir.source_dir)

