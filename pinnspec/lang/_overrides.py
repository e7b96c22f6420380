"""Command-line overrides (``--set key=value``, ``--optimizer CALL``, ...).

An override is written as the statement it replaces and appended to the
spec's text, after the statements it replaces are blanked out.  The result is
checked like any spec, so a bad override gets the same error with a "did you
mean" hint, and the resolved text is exactly what a run saves as its
``config.pinn``: running that file repeats the run.

A diagnostic in an appended line names the option the user typed
(``error: --epochs -5: 'epochs' must be ...``) rather than a line the file
does not have; one in the file's own lines keeps its file:line:col and caret.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from .. import catalog
from . import _ast as A
from ._diagnostics import Diagnostic, SpecError

#: keys that replace a whole statement; the value is the statement's text after the keyword
STATEMENT_KEYS = ("model", "optimizer", "schedule", "surgery", "align", "weights", "stage", "causal", "enforce",
                  "points", "sampler", "resample", "test", "validate", "recipe")
#: keys whose statement may repeat: the value lists them separated by ';' and replaces every one
REPEATED_KEYS = ("stage", "causal")
HEADER = "# --- command-line overrides ---"
#: what a diagnostic in the appended lines names when no single override wrote its place
ALL_OVERRIDES = "the command-line overrides"


@dataclass(frozen=True)
class OverrideDiagnostic(Diagnostic):
    """A diagnostic about an override: rendered as ``error: OPTION: message`` (no file line to show)."""

    option: str = ALL_OVERRIDES

    def render(self, source: str | None = None) -> str:
        return f"{self.severity}: {self.option}: {self.message}"


def flag_text(key: str, value: object) -> str:
    """How ``--KEY VALUE`` was typed (the name a diagnostic gives it)."""
    return f"--{key} {shlex.quote(str(value))}"


def set_text(key: str, value: object) -> str:
    """How ``--set KEY=VALUE`` was typed."""
    return f"--set {shlex.quote(f'{key}={value}')}"


def apply_overrides(spec, overrides: dict[str, object], written: dict[str, str] | None = None):
    """A new checked Spec: ``spec`` with ``overrides`` applied (key -> value text).

    Keys: the training statements (``optimizer = "adam(lr = 1e-3)"``; ``stage`` replaces every stage
    statement, its value the stages separated by ';': ``"adam epochs = 100; lbfgs epochs = 50"``, and with
    them an ``optimizer`` statement and ``train epochs``, which stages exclude; ``causal``
    likewise: ``"pde(eps = 1)"``, ``"none"``), ``sampler``,
    ``points`` ("pde 4096, walls 512": every count the spec's `points` gives), ``resample`` ("every 10" | "never"),
    ``test``, ``validate`` ("test every 100"),
    and every ``train`` setting (``epochs``, ``grouping``, ``seed``, ...).
    ``written``: how the user wrote each override (key -> ``"--epochs -5"``,
    ``"--set epochs=-5"``), named by its errors and warnings; default ``key=value``.
    """
    from . import checked, expand_recipe  # local: the package imports this module

    overrides = {k: v for k, v in overrides.items() if v is not None}
    if not overrides:
        return spec
    written = {k: (written or {}).get(k) or f"{k}={v}" for k, v in overrides.items()}
    _reject_unknown_keys(overrides, written)
    text, places = _resolved_text(spec, overrides, written)
    filename, base_dir = f"{spec.filename} (with overrides)", spec.ir.source_dir
    try:
        resolved = checked(text, filename, base_dir)
        if resolved.ir.training.recipe is not None:  # a recipe on the command line replaces the spec's choices
            given = {f"train:{k}" if k in catalog.TRAIN_SETTINGS else k for k in overrides if k != "recipe"}
            resolved = expand_recipe(resolved, replace="recipe" in overrides, explicit=frozenset(given),
                                     check=lambda t: checked(t, filename, base_dir))
    except SpecError as err:
        raise SpecError([places.relocate(d) for d in err.diagnostics], err.source) from None
    return dataclasses.replace(resolved, warnings=tuple(places.relocate(w) for w in resolved.warnings))


def _reject_unknown_keys(overrides: dict[str, object], written: dict[str, str]) -> None:
    keys = list(STATEMENT_KEYS) + list(catalog.TRAIN_SETTINGS)
    unknown = [k for k in overrides if k not in keys]
    if not unknown:
        return
    from ..registry import did_you_mean

    hint = did_you_mean(unknown[0], keys)
    more = f"; did you mean '{hint}'?" if hint else f" (keys are: {', '.join(keys)})"
    raise SpecError([OverrideDiagnostic("error", f"unknown setting '{unknown[0]}'{more}", A.Span(1, 1, 1, 2),
                                        option=written[unknown[0]])], None)


@dataclass
class _Places:
    """Where the overrides sit in the resolved text: the file keeps lines 1..``file_lines``;
    ``columns[line]`` lists (first column, end column, option) of each override on an appended line."""

    filename: str
    file_lines: int
    columns: dict[int, list[tuple[int, int, str]]] = dataclasses.field(default_factory=dict)

    def add(self, line: int, column: int, text: str, option: str) -> None:
        self.columns.setdefault(line, []).append((column, column + len(text), option))

    def relocate(self, diagnostic: Diagnostic) -> Diagnostic:
        if diagnostic.line <= self.file_lines:
            return dataclasses.replace(diagnostic, filename=self.filename)
        entries = self.columns.get(diagnostic.line, [])
        options = [o for first, end, o in entries if first <= diagnostic.column < end] or [o for *_, o in entries]
        return OverrideDiagnostic(diagnostic.severity, diagnostic.message, diagnostic.span, diagnostic.filename,
                                  option=", ".join(options) or ALL_OVERRIDES)


def _resolved_text(spec, overrides: dict[str, object], written: dict[str, str]) -> tuple[str, _Places]:
    """The spec's text with the replaced statements commented out and the overrides appended."""
    lines = spec.source.splitlines()
    places = _Places(spec.filename, len(lines))
    train_overrides = {k: str(v) for k, v in overrides.items() if k in catalog.TRAIN_SETTINGS}
    replaced = {k for k in overrides if k in STATEMENT_KEYS}
    # stages name their optimizers and epochs: `stage` also replaces an `optimizer` statement and `train epochs`
    stages_given = "stage" in overrides and "optimizer" not in overrides
    if stages_given:
        replaced.add("optimizer")
    train_epochs = any(kw.name.name == "epochs" for st in spec.ast.statements if st.keyword == "train"
                       for kw in st.settings)
    replaces_train = bool(train_overrides) or (stages_given and train_epochs)
    kept_train = _comment_out_replaced(spec, lines, replaced, replaces_train)
    if stages_given:
        kept_train.pop("epochs", None)
    added = [HEADER]
    for key in STATEMENT_KEYS:
        if key not in overrides:
            continue
        values = [v.strip() for v in str(overrides[key]).split(";")] if key in REPEATED_KEYS else [overrides[key]]
        for value in values:
            added.append(f"{key} {value}")
            places.add(len(lines) + len(added), 1, added[-1], written[key])
    if train_overrides or (replaces_train and kept_train):
        added.append(_train_line(len(lines) + len(added) + 1, {**kept_train, **train_overrides}, written, places))
    return "\n".join(lines + added) + "\n", places


def _comment_out_replaced(spec, lines: list[str], replaced_kinds: set[str], replaces_train: bool) -> dict[str, str]:
    """Comments out (in ``lines``) the statements the overrides replace; returns the settings of a
    replaced ``train`` statement (name -> value text), which the new one keeps unless overridden."""
    kept_train: dict[str, str] = {}
    for st in spec.ast.statements:
        kind = st.keyword
        if kind in replaced_kinds or (kind == "train" and replaces_train):
            if kind == "train":
                for kw in st.settings:
                    kept_train[kw.name.name] = kw.value.span.text(spec.source)
            for i in range(st.span.line - 1, st.span.end_line):
                lines[i] = "# (replaced by a command-line override) " + lines[i]
    return kept_train


def _train_line(line: int, settings: dict[str, str], written: dict[str, str], places: _Places) -> str:
    """``train k = v, ...``, each overridden setting's columns recorded in ``places``."""
    text = "train "
    for i, (key, value) in enumerate(settings.items()):
        part = f"{key} = {value}"
        if key in written:
            places.add(line, len(text) + 1, part, written[key])
        text += part + (", " if i < len(settings) - 1 else "")
    return text


def what_it_trains(source: str, leave_out: tuple[str, ...] = (), settings_left_out: tuple[str, ...] = ()
                   ) -> tuple[tuple, dict[str, str]]:
    """A spec's statements as written (comments and layout aside; the `train` statement without its execution
    settings (``catalog.EXECUTION_SETTINGS``) and ``settings_left_out``, its other settings in any order;
    statements whose keyword is in ``leave_out`` left out), and its execution settings, name -> value text."""
    from ._parser import parse

    tree = parse(source)
    statements, execution = [], {}
    for statement in tree.statements:
        if statement.keyword in leave_out:
            continue
        if statement.keyword != "train":
            statements.append(" ".join(statement.span.text(source).split()))
            continue
        others = {}
        for setting in statement.settings:
            if setting.name.name in settings_left_out:
                continue
            value = " ".join(setting.value.span.text(source).split())
            (execution if setting.name.name in catalog.EXECUTION_SETTINGS else others)[setting.name.name] = value
        statements.append(("train", tuple(sorted(others.items()))))
    return tuple(statements), execution
