"""``recipe strong`` (or ``recipe strong(time = 10 min)``, or ``--recipe`` on the command line): the training
statements a spec leaves out, chosen from the spec itself, written out as ordinary statements with a reason each.

What `strong` writes (each only where the spec does not say; see `recipe_choices`):

* ``enforce``: every Dirichlet, initial and periodic condition whose transform checks pass (tried one at a time
  in file order, each kept while the spec still checks with those kept before it);
* ``model``: a tanh network of 3 hidden layers (width 32, 8 more per further field of one network, at most 48; 20
  under a budget of less than 3 minutes; where observations state their noise, no wider than round(n^(1/d)) for
  their n rows in d coordinates, at least `MIN_NOISY_WIDTH`; `field a(x, y)` gives a network of its own); a
  Fourier-feature network with a scale per coordinate where the problem's own data oscillate (a sin or cos of a
  coordinate with at least `OSCILLATING_PERIODS` periods across its interval, found symbolically in the conditions
  and the `let` definitions, or a coefficient table's dominant oscillation, found by a short spectral probe,
  `sampling.dominant_frequencies`; never in a reference or an exact solution);
* ``sampler rad(k = 1, c = 1)`` and ``resample every 500``, at most 8,192 points at a time for an equation and 2,048
  for another condition; ``schedule cosine(lr_min = 1e-4)``;
* ``surgery config`` where the spec has observations with noise (`data ...: u, noise = 0.1`);
* the stages: Adam (lr 5e-3) for 2,000 epochs, then a quasi-Newton finisher in float64 on points new every 500
  epochs: dense self-scaled Broyden while the network has at most `DENSE_PARAMETERS` parameters, L-BFGS beyond;
  4,000 epochs without a budget; with one, until the budget is spent (the stages share it: `train time`);
* a grouping without the conditions that restate an equation on a boundary or at the initial time (the PDE's
  loss on the interior), the equations weighed 10 times where the observations carry noise (``noise = ...``).
  With noisy observations, ``train stop = balance`` too: the run ends where the equations' loss falls to a
  thousandth of the observations' (a quasi-Newton stage fits their noise from there).

The expansion is a spec's text: the `recipe` statement commented out, the chosen statements appended below a
header, one comment line of reasons above each.  It is what ``pinnspec show --stage recipe`` prints and what a
run saves as its ``config.pinn``; running that file repeats the run.  Written in the file, the recipe fills in
what the spec leaves out (a statement written in the spec wins); given on the command line (``--recipe``), it
replaces the spec's training statements of the kinds it chooses, except those given on the command line too.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import sympy

from .. import ir
from ..sampling import TableColumns, dominant_frequencies, load_data, load_table, table_interpolator
from . import _ast as A

#: the dense quasi-Newton finisher keeps a [p, p] matrix: self-scaled Broyden up to this many parameters, L-BFGS beyond
DENSE_PARAMETERS = 8000
#: a coordinate along which the problem's data oscillate this many periods or more gets Fourier features
OSCILLATING_PERIODS = 6
ADAM_EPOCHS = 2000
QUASI_NEWTON_EPOCHS = 4000
#: a quasi-Newton stage under a time budget runs until the budget is spent, at most this many epochs
QUASI_NEWTON_CAP = 100_000
RESAMPLE_EVERY = 500
#: with points drawn anew every `RESAMPLE_EVERY` epochs, at most this many at a time for an equation, and for
#: another condition (the counts the wins on PINNacle's 3-D cases used: a quarter of PINNacle's there)
EQUATION_POINTS, CONDITION_POINTS = 8192, 2048
#: the weight of the equations' tasks where the observations carry noise
NOISY_DATA_PDE_WEIGHT = 10
#: the narrowest network the noisy observations' width rule gives
MIN_NOISY_WIDTH = 8
#: a budget below this many seconds gets the smaller network
SHORT_BUDGET_S = 180.0
GROUPING_NAME = "strongtasks"
HEADER = "# --- recipe {call}: the statements below, each with why ({precedence}) ---"


@dataclass(frozen=True)
class Choice:
    """One statement of a recipe: its keyword (``train`` settings as ``train:NAME``), its text, and why."""

    kind: str
    text: str
    reason: str


def recipe_choices(base, recipe: ir.CallSpec, taken: set[str], trial) -> list[Choice]:
    """The statements recipe ``recipe`` writes for the checked spec ``base`` (no recipe statement in it), leaving
    out the kinds in ``taken`` (statement keywords; ``train:NAME`` for a train setting).  ``trial(extra_lines)``
    is None where ``base``'s text with ``extra_lines`` appended checks, else its first error (for `enforce`)."""
    problem: ir.Problem = base.ir
    budget = recipe.options.get("time") or problem.training.setting("time")  # the recipe's, else `train time`
    choices: list[Choice] = []

    def add(kind: str, text: str, reason: str) -> None:
        if kind not in taken:
            choices.append(Choice(kind, text, reason))

    enforced, refused = _enforceable(problem, trial) if "enforce" not in taken else ([], {})
    if enforced:
        others = [c.name + (f" ({refused[c.name]})" if c.name in refused else "") for c in problem.conditions
                  if c.kind in ("initial", "boundary", "periodic") and c.name not in enforced
                  and not _restates_equation(problem, c)]
        left = f"; left as losses: {', '.join(others)}" if others else ""
        add("enforce", f"enforce {', '.join(enforced)}",
            f"built in: the Dirichlet, initial and periodic conditions whose transform checks pass{left}")
    noisy = [c.name for c in problem.conditions if c.noise]

    kinds = {c.name: c.kind for c in problem.conditions}
    periodic = any(kinds[n] == "periodic" for n in enforced) or bool(problem.periodic_embeddings)
    model, parameters, model_reason = _model(problem, budget, periodic)
    add("model", f"model {model}", model_reason)
    adaptive = problem.training.weights.name != "rba"  # per-point weights need fixed points
    if adaptive:
        add("sampler", "sampler rad(k = 1, c = 1)",
            "residual-based adaptive distribution (Wu et al. 2023): new points drawn where the residual is large")
        add("resample", f"resample every {RESAMPLE_EVERY}", f"the points are drawn anew every {RESAMPLE_EVERY} epochs")
    if adaptive and "points" not in taken and "resample" not in taken:
        capped = _capped_points(problem)
        if capped is not None:
            add("points", f"points {capped}",
                f"points new every {RESAMPLE_EVERY} epochs: at most {EQUATION_POINTS:,} at a time for an equation and "
                f"{CONDITION_POINTS:,} for another condition, so that an epoch costs less and more of them fit")
    add("schedule", "schedule cosine(lr_min = 1e-4)", "the learning rate decays along a cosine to 1e-4 over each stage")
    if noisy:
        add("surgery", "surgery config",
            f"ConFIG on the tasks: the noisy observations ({', '.join(noisy)}) and the PDE pull apart, and their "
            "gradients are combined without conflict (Liu et al. 2024)")

    grouping = _grouping(problem, noisy, set(enforced)) if "train:grouping" not in taken else None
    if grouping is not None:
        text, reason = grouping
        add("train:grouping", f"grouping {GROUPING_NAME} = [{text}]\ntrain grouping = {GROUPING_NAME}", reason)
        if noisy:
            add("train:stop", "train stop = balance",
                f"the run ends where the equations' loss falls to a thousandth of the noisy observations' "
                f"({', '.join(noisy)}): from there a quasi-Newton step only fits their noise")

    resampled = adaptive and "resample" not in taken
    if not taken & {"stage", "optimizer", "train:epochs"}:
        finisher = "ssbroyden" if parameters <= DENSE_PARAMETERS else "lbfgs"
        why = (f"self-scaled Broyden (Urban, Stefanou & Pons 2025): {parameters:,} parameters, a dense "
               f"{parameters:,} x {parameters:,} matrix" if finisher == "ssbroyden" else
               f"L-BFGS: {parameters:,} parameters, over the {DENSE_PARAMETERS:,} of a dense finisher")
        epochs = QUASI_NEWTON_CAP if budget else QUASI_NEWTON_EPOCHS
        span = (f"until the time is spent (at most {QUASI_NEWTON_CAP:,} epochs)" if budget
                else f"for {QUASI_NEWTON_EPOCHS:,} epochs")
        points, where = (f", resample = {RESAMPLE_EVERY}", f", on points new every {RESAMPLE_EVERY} epochs") \
            if resampled else ("", "")
        add("stage", f"stage adam(lr = 5e-3) epochs = {ADAM_EPOCHS}\nstage {finisher} epochs = {epochs}, "
                     f"dtype = float64{points}",
            f"Adam at 5e-3 for {ADAM_EPOCHS:,} epochs, then {why}, in float64, {span}{where}")
    elif "optimizer" not in taken and "stage" not in taken:
        add("optimizer", "optimizer adam(lr = 5e-3)", "Adam at 5e-3 (the spec gives its epochs)")
    if budget:
        add("train:time", f"train time = {_duration_text(budget)}",
            "the run's wall-time budget: the stages share it (each but the last at most its share of what is "
            "left when it begins), the last runs until it is spent")
    return choices


def _capped_points(problem: ir.Problem) -> str | None:
    """The spec's point counts, each at most `EQUATION_POINTS` (equations) or `CONDITION_POINTS` (others), as a
    `points` statement's text; None where none is over."""
    kinds = {c.name: c.kind for c in problem.conditions}
    counts = [(name, min(count, EQUATION_POINTS if kinds.get(name) == "equation" else CONDITION_POINTS), count)
              for name, count in problem.sampling.points]
    if all(capped == count for _, capped, count in counts):
        return None
    return ", ".join(f"{name} {capped}" for name, capped, _ in counts)


def _duration_text(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("min", 60.0)):
        if seconds >= size and (seconds / size) == round(seconds / size, 6):
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


# ====================================================================== enforce
def _enforceable(problem: ir.Problem, trial) -> tuple[list[str], dict[str, str]]:
    """The conditions `enforce` takes together, in file order: each Dirichlet-like initial or boundary condition
    (no derivative in it) and each periodic one, kept where the spec checks with it and those kept before it; and
    for each one tried and not kept, why (the check's error, without its advice)."""
    kept: list[str] = []
    refused: dict[str, str] = {}
    for condition in problem.conditions:
        if condition.kind not in ("initial", "boundary", "periodic"):
            continue
        if condition.kind != "periodic" and any(r.atoms(sympy.Derivative) for r in condition.residuals):
            continue
        error = trial([f"enforce {', '.join(kept + [condition.name])}"])
        if error is None:
            kept.append(condition.name)
        else:
            refused[condition.name] = error.removesuffix("; keep one of them as a loss").removesuffix(
                "; keep the condition as a loss")
    return kept, refused


# ====================================================================== grouping
def _restates_equation(problem: ir.Problem, condition: ir.Condition) -> bool:
    """A boundary or initial condition whose residuals are an equation's (the PDE asked at boundary points)."""
    if condition.kind not in ("boundary", "initial"):
        return False
    return any(e.kind == "equation" and e.residuals == condition.residuals for e in problem.conditions)


def _grouping(problem: ir.Problem, noisy: list[str], enforced: set[str]) -> tuple[str, str] | None:
    """The spec's grouping without the conditions that restate an equation on the boundary, the equations
    weighed `NOISY_DATA_PDE_WEIGHT` times where observations are noisy, and without the ``enforced`` conditions
    (they leave every task anyway): (its tasks as written, the reason); None where that is the spec's grouping as
    it stands."""
    grouping = problem.grouping()
    restating = {c.name for c in problem.conditions if _restates_equation(problem, c)}
    equations = {c.name for c in problem.conditions if c.kind == "equation"}
    tasks, changed = [], False
    for task in grouping.tasks:
        terms = []
        for weight, atom in task.terms:
            if isinstance(atom, ir.PoolLoss):
                members = tuple(n for n in atom.conditions if n not in restating | enforced)
                changed |= any(n in restating for n in atom.conditions)
                if not members:
                    continue
                atom = ir.PoolLoss(members) if len(members) > 1 else ir.ConditionLoss(members[0])
            elif atom.condition in restating | enforced:
                changed |= atom.condition in restating
                continue
            terms.append((weight, atom))
        if not terms:
            continue
        if noisy and all(c in equations for c in ir.WeightedSum(tuple(terms)).conditions):
            terms = [(w * NOISY_DATA_PDE_WEIGHT, a) for w, a in terms]
            changed = True
        tasks.append(str(ir.WeightedSum(tuple(terms))))
    if not changed or not tasks:
        return None
    reasons = []
    if restating:
        reasons.append(f"the PDE's loss on the interior: {', '.join(sorted(restating))} restate an equation on "
                       "the boundary and are left out")
    if noisy:
        reasons.append(f"the observations ({', '.join(noisy)}) carry noise: the equations weigh "
                       f"{NOISY_DATA_PDE_WEIGHT} times, so that the fit follows the PDE rather than the noise")
    return ", ".join(tasks), "; ".join(reasons) + f" (the spec's grouping '{grouping.name}' otherwise)"


# ====================================================================== network
def _model(problem: ir.Problem, budget: float | None, periodic: bool) -> tuple[str, int, str]:
    """The network's call, its parameter count and why."""
    inputs = len(problem.coordinates)
    networks = _networks(problem)  # coordinates -> fields: one network each (`field a(x, y)`)
    # the width follows the fields of one network: two networks of one field each are 32 wide, not 40
    width = min(32 + 8 * (max(len(fields) for fields in networks.values()) - 1), 48)
    size_reason = f"{_count(inputs, 'input')}, {_count(len(problem.fields), 'field')}"
    if budget is not None and budget < SHORT_BUDGET_S:
        width = 20
        size_reason += f", a budget under {SHORT_BUDGET_S / 60:g} minutes (a small network takes more steps)"
    observations = _noisy_observations(problem)
    resolved = max(round(observations ** (1 / inputs)), MIN_NOISY_WIDTH) if observations else width
    if resolved < width:
        width = resolved
        size_reason += (f", {observations:,} noisy observations in {_count(inputs, 'coordinate')}: {width} wide, the "
                        f"features they resolve along each (n^(1/d)), so that the network has less room to follow "
                        f"their noise")
    depth = 3
    frequencies = _frequencies(problem)
    tabulated = {}  # coordinate -> the table whose spectrum gives its highest frequency
    for name, (frequency, table) in _table_frequencies(problem).items():
        if frequency > frequencies.get(name, 0.0):
            frequencies[name], tabulated[name] = frequency, table
    oscillating = {c.name: k for c in problem.coordinates if (k := frequencies.get(c.name, 0.0))
                   and k * (c.hi - c.lo) / (2 * math.pi) >= OSCILLATING_PERIODS}
    if oscillating and not periodic:
        width = max(width, 48)
        features = 32
        scales = tuple(_fourier_scale(c, frequencies.get(c.name, 0.0)) for c in problem.coordinates)
        parameters = sum(_mlp_parameters(2 * features, len(fields), width, depth) for fields in networks.values())
        found = ", ".join(f"{name}: {k / math.pi:.3g} pi" + (f" in the table '{tabulated[name]}'" if name in tabulated
                                                            else "") for name, k in oscillating.items())
        call = (f"fourier_mlp(width = {width}, depth = {depth}, fourier = ({', '.join(f'{s:.3g}' for s in scales)}),"
                f" features = {features})")
        return call, parameters, (f"{size_reason}; the data oscillate (angular frequency {found}): Fourier "
                                  f"features, a scale per coordinate of 2/3 its highest frequency, else 1 over its "
                                  f"length ({parameters:,} parameters)")
    extra = sum(1 for c in problem.periodic_embeddings) if periodic else 0
    parameters = sum(_mlp_parameters(len(coords) + (extra if len(coords) == inputs else 0), len(fields), width, depth)
                     for coords, fields in networks.items())
    call = f"mlp(width = {width}, depth = {depth}, activation = tanh, init = xavier)"
    what = (f"a small tanh network ({parameters:,} parameters)" if len(networks) == 1 else
            f"{len(networks)} small tanh networks, one per set of coordinates ({parameters:,} parameters in all)")
    return call, parameters, f"{size_reason}: {what}"


def _noisy_observations(problem: ir.Problem) -> int:
    """The rows of the data conditions that state their noise (0 where none does)."""
    rows = 0
    for condition in problem.conditions:
        if condition.noise:
            path = condition.region.path
            path = path if os.path.isabs(path) else os.path.join(problem.source_dir or ".", path)
            rows += len(load_data(path, problem.coordinates, condition.region.fields)[0])
    return rows


def _networks(problem: ir.Problem) -> dict[tuple[str, ...], list[str]]:
    """The fields of each set of coordinates, in order of first field: each set gets its own network."""
    networks: dict[tuple[str, ...], list[str]] = {}
    for field in problem.fields:
        networks.setdefault(problem.coordinates_of(field), []).append(field)
    return networks


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fourier_scale(coordinate: ir.Coordinate, frequency: float) -> float:
    return max(2 * frequency / 3, 1 / (coordinate.hi - coordinate.lo))


def _mlp_parameters(inputs: int, outputs: int, width: int, depth: int) -> int:
    """Weights and biases of ``depth`` hidden layers of ``width`` between ``inputs`` and ``outputs``."""
    sizes = [inputs] + [width] * depth + [outputs]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def _frequencies(problem: ir.Problem) -> dict[str, float]:
    """coordinate -> the highest angular frequency of a sin or cos of it in the problem's conditions and `let`
    definitions (|d arg / d c| where the argument is linear in c)."""
    symbols = {c.name: sympy.Symbol(c.name, real=True) for c in problem.coordinates}
    found: dict[str, float] = {}
    expressions = [r for c in problem.conditions for r in c.residuals] + [v for _, v in problem.lets]
    for expression in expressions:
        if not isinstance(expression, sympy.Basic):
            continue
        for function in expression.atoms(sympy.sin, sympy.cos):
            argument = function.args[0]
            for name, symbol in symbols.items():
                for free in argument.free_symbols:
                    if free.name != name:
                        continue
                    slope = sympy.diff(argument, free)
                    if slope.free_symbols:
                        continue
                    value = abs(float(slope))
                    if math.isfinite(value):
                        found[name] = max(found.get(name, 0.0), value)
    return found


def _table_frequencies(problem: ir.Problem) -> dict[str, tuple[float, str]]:
    """coordinate -> (the highest angular frequency of a coefficient table's dominant oscillation along it, that
    table): `dominant_frequencies` over the box of the table's rows, carried to the spec's coordinates through
    the table's ``at`` (a frequency times |d at / d c| where that is a constant)."""
    found: dict[str, tuple[float, str]] = {}
    symbols = {c.name: sympy.Symbol(c.name, real=True) for c in problem.coordinates}
    for table in problem.tables:
        path = table.path if os.path.isabs(table.path) else os.path.join(problem.source_dir or ".", table.path)
        columns = TableColumns(table.coordinates, table.coordinate_columns, table.value_column)
        points, _ = load_table(path, columns)  # [N, k]
        along = dominant_frequencies(table_interpolator(path, columns, table.method), points.min(0), points.max(0))
        reads = table.at or tuple(symbols[c] for c in table.coordinates)  # what each table coordinate is read at
        for frequency, argument in zip(along, reads):
            for name, symbol in symbols.items():
                slope = sympy.diff(argument, symbol)
                if frequency and not slope.free_symbols and (value := frequency * abs(float(slope))):
                    if value > found.get(name, (0.0, ""))[0]:
                        found[name] = (value, table.name)
    return found


# ====================================================================== the text
def expand(spec, *, replace: bool, explicit: frozenset[str] = frozenset(), check=None):
    """``spec`` (checked, with a `recipe` statement) with its recipe written out: a new checked spec.  ``replace``
    (a recipe given on the command line): the spec's statements of the kinds the recipe chooses are commented
    out, except the kinds in ``explicit`` (given on the command line too); otherwise the spec's statements win.
    ``check(text)`` checks a text (a Spec, or raises SpecError) without expanding a recipe again."""
    source = spec.source
    lines = source.splitlines()
    statements = [st for st in spec.ast.statements if st.keyword == "recipe"]
    call_text = " ".join(statements[-1].call.span.text(source).split())
    for st in statements:
        _comment_out(lines, st, "# (expanded below) ")
    base = check("\n".join(lines) + "\n")
    written = {st.keyword for st in base.ast.statements} | {
        f"train:{kw.name.name}" for st in base.ast.statements if isinstance(st, A.Train) for kw in st.settings}
    taken = set(explicit) if replace else written
    if replace and written & {"weights"} and "weights" not in explicit:
        taken.add("weights")  # the loss balancing is not the recipe's: it stays as written

    def trial(extra: list[str]) -> str | None:
        """None where the spec checks with ``extra`` appended (its own `enforce` left out), else the error."""
        from ._diagnostics import SpecError

        trial_lines = list(lines)
        for st in base.ast.statements:
            if st.keyword == "enforce":
                _comment_out(trial_lines, st, "# ")
        try:
            check("\n".join(trial_lines + extra) + "\n")
        except SpecError as error:
            return error.errors[0].message
        return None

    choices = recipe_choices(base, spec.ir.training.recipe, taken, trial)
    chosen = {c.kind for c in choices}
    if replace:
        chosen_settings = {c.kind.split(":", 1)[1] for c in choices if c.kind.startswith("train:")}
        if "stage" in chosen:
            chosen |= {"optimizer"}
            chosen_settings.add("epochs")
        kept = _replace_statements(base, lines, chosen, chosen_settings)
        if kept:
            choices.append(Choice("train", "train " + ", ".join(f"{k} = {v}" for k, v in kept.items()),
                                  "the spec's other train settings"))
    precedence = ("it replaces the spec's statements of these kinds" if replace
                  else "a statement the spec writes wins over the recipe's")
    block = ["", HEADER.format(call=call_text, precedence=precedence)]
    for choice in choices:
        block += [f"# {choice.reason}", choice.text]
    return dataclasses.replace(check("\n".join(lines + block) + "\n"), recipe=call_text)


def _comment_out(lines: list[str], statement: A.Statement, prefix: str) -> None:
    for i in range(statement.span.line - 1, statement.span.end_line):
        lines[i] = prefix + lines[i]


def _replace_statements(base, lines: list[str], kinds: set[str], settings: set[str]) -> dict[str, str]:
    """Comments out (in ``lines``) the statements of ``kinds`` and the `train` statements that set one of
    ``settings``; returns those train statements' other settings (name -> value text), which stay."""
    kept: dict[str, str] = {}
    for st in base.ast.statements:
        replaced = st.keyword in kinds or (
            isinstance(st, A.Grouping) and st.name.name == GROUPING_NAME and "grouping" in settings)
        if isinstance(st, A.Train):
            names = {kw.name.name for kw in st.settings}
            if not names & settings:
                continue
            kept.update({kw.name.name: kw.value.span.text(base.source) for kw in st.settings
                         if kw.name.name not in settings})
            replaced = True
        if replaced:
            _comment_out(lines, st, "# (replaced by the recipe) ")
    return kept
