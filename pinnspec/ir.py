"""The problem IR: a checked `.pinn` file as SymPy expressions and plain data.

No torch here.  The compiler turns this into residual kernels and samplers.

Conventions
-----------
* Coordinates are SymPy symbols in declaration order: space coordinates,
  then the time coordinate (if any).  Points are ``[N, d]`` in that order.
* A field ``u`` is the applied function ``u(x, t)`` of every coordinate; its
  derivatives are ``Derivative(u(x, t), x, x)``.  ``let`` names are inlined;
  ``param`` names are plain symbols (trainable scalars).
* A condition's residual components: for ``A = B`` the component is ``A - B``.
  ``periodic``: the component ``E`` means ``E(at lo) - E(at hi)`` at matched
  points.  ``data``: ``u - u^obs`` where the symbol ``u^obs`` is the observed
  column.  On a :class:`DomainBoundary`, ``dn(u)`` is ``n_x*u_x + n_y*u_y + ...``
  with ``n_x = normal("x")`` the outward normal per point.  On a union of faces, ``face_residuals`` holds one tuple per face
  (``dn`` is resolved per face); ``residuals`` is then the first face's.
* Losses and groupings are expanded into weighted sums of *atoms*: a
  condition's loss (sum over components of the mean squared residual) or a
  pool (one mean over the union of the members' points).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import sympy


# ------------------------------------------------------------------ geometry


@dataclass(frozen=True)
class Coordinate:
    name: str
    lo: float
    hi: float
    is_time: bool = False

    @property
    def symbol(self) -> sympy.Symbol:
        return sympy.Symbol(self.name, real=True)


@dataclass(frozen=True)
class Face:
    """One face of the space box: ``coordinate = lo`` or ``coordinate = hi``."""

    coordinate: str
    side: str  # "lo" | "hi"
    value: float

    @property
    def normal_sign(self) -> int:
        """Outward normal along the coordinate: -1 on the lower face, +1 on the upper."""
        return -1 if self.side == "lo" else 1

    def __str__(self) -> str:
        return f"{self.coordinate} = {self.value:g}"


@dataclass(frozen=True)
class Interior:
    """The space box times the time interval."""

    def __str__(self) -> str:
        return "interior"


@dataclass(frozen=True)
class FaceRegion:
    """A union of faces of the space box, times the time interval."""

    faces: tuple[Face, ...]

    def __str__(self) -> str:
        return "faces " + ", ".join(str(f) for f in self.faces)


@dataclass(frozen=True)
class InitialSlice:
    """The space box at the start of the time interval."""

    time: str
    value: float

    def __str__(self) -> str:
        return f"initial slice {self.time} = {self.value:g}"


@dataclass(frozen=True)
class PeriodicPairs:
    """Matched points on the two ends of ``coordinate`` (other coordinates equal)."""

    coordinate: str
    lo: float
    hi: float

    def __str__(self) -> str:
        return f"periodic pairs {self.coordinate} = {self.lo:g} | {self.hi:g}"


@dataclass(frozen=True)
class DataPoints:
    """Rows of a CSV/NPZ file: coordinate columns and observed field columns."""

    path: str
    fields: tuple[str, ...]
    noise: float | None = None  # the standard deviation of the observations' noise, when the spec states it

    def __str__(self) -> str:
        noise = "" if self.noise is None else f", noise sd {self.noise:g}"
        return f"data {self.path} ({', '.join(self.fields)}{noise})"


@dataclass(frozen=True)
class Domain:
    """The region of a spec with a ``domain`` statement: a shape of :mod:`pinnspec.geometry`
    over the space coordinates, its primitives named as in the spec (``box``: the space box).

    expression: the combination as written (``box - hole1 - hole2``);
    shapes:     every declared shape it uses, as ``(name, primitive as written with its values)``.
    """

    name: str
    shape: Any
    expression: str
    shapes: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return f"domain {self.name}"


@dataclass(frozen=True)
class DomainInterior:
    """The domain times the time interval (equations of a spec with a ``domain``)."""

    domain: Domain

    def __str__(self) -> str:
        return f"interior of {self.domain.name}"


@dataclass(frozen=True)
class DomainBoundary:
    """Parts of the domain's boundary (times the time interval).

    parts: indices into ``domain.boundary_parts(shape)``, each lying on the domain's boundary;
    on:    what the selector named, for messages (``hole1``, ``x = -0.5``, ``boundary``).
    ``dn`` on it is ``n . grad u`` with the outward normal ``normal(coordinate)`` per point.
    """

    domain: Domain
    parts: tuple[int, ...]
    on: tuple[str, ...]

    def __str__(self) -> str:
        return f"boundary of {self.domain.name} on {', '.join(self.on)}"


@dataclass(frozen=True)
class DomainInitialSlice:
    """The domain at the start of the time interval."""

    domain: Domain
    time: str
    value: float

    def __str__(self) -> str:
        return f"{self.domain.name} at {self.time} = {self.value:g}"


Region = Union[Interior, FaceRegion, InitialSlice, PeriodicPairs, DataPoints, DomainInterior, DomainBoundary,
               DomainInitialSlice]


@dataclass(frozen=True)
class Condition:
    name: str
    kind: str  # "equation" | "initial" | "boundary" | "periodic" | "data"
    region: Region
    residuals: tuple[sympy.Expr, ...]
    face_residuals: tuple[tuple[sympy.Expr, ...], ...] | None = None
    line: int = 0

    @property
    def n_components(self) -> int:
        return len(self.residuals)

    @property
    def noise(self) -> float | None:
        """The standard deviation of the observations' noise, where a data condition states it (else None)."""
        return self.region.noise if isinstance(self.region, DataPoints) else None


def normal(coordinate: str) -> sympy.Symbol:
    """The symbol standing for the outward normal's component along a space coordinate
    (a per-point input on a :class:`DomainBoundary`)."""
    return sympy.Symbol(f"n_{coordinate}", real=True)


def table_value(name: str) -> sympy.Symbol:
    """The symbol standing for the value of the coefficient table ``name`` (a ``let NAME = table(...)``)
    at each point: a per-point input, interpolated from the table's file on the host."""
    return sympy.Symbol(f"{name}^table", real=True)


def without_jumps(value: sympy.Expr) -> sympy.Expr:
    """``value`` with the derivatives of jumps (DiracDelta and its derivatives, from heaviside, sign or inside(),
    and from min or max differentiated twice) taken as 0, their value away from the jump."""
    return value.replace(lambda e: isinstance(e, sympy.DiracDelta), lambda e: sympy.Integer(0)) \
        if value.has(sympy.DiracDelta) else value


@dataclass(frozen=True)
class Table:
    """A coefficient field given on the points of a file (``let NAME = table("FILE", ...)``).

    coordinates:        the spec coordinates the table spans, in coordinate order (the space
                        coordinates, or the space coordinates and time);
    coordinate_columns: the file column holding each of them;
    value_column:       the file column of the values;
    method:             "linear" (multilinear on a grid, Delaunay-linear on scattered points) | "nearest";
    at:                 where the file is read: one expression of the spec's coordinates per coordinate the
                        table spans (``table(..., at = ((x + 1)/2, (y + 1)/2))``); () reads it at the point.
    """

    name: str
    path: str
    coordinates: tuple[str, ...]
    coordinate_columns: tuple[str, ...]
    value_column: str
    method: str = "linear"
    at: tuple[sympy.Expr, ...] = ()

    def __str__(self) -> str:
        at = f", read at ({', '.join(map(str, self.at))})" if self.at else ""
        return (f'table "{self.path}" ({self.value_column} over {", ".join(self.coordinates)}, '
                f'{self.method}{at})')


def observed(field_name: str) -> sympy.Symbol:
    """The symbol standing for the observed value of a field in a data condition."""
    return sympy.Symbol(f"{field_name}^obs", real=True)


# ------------------------------------------------------------------ reports


def report_integral(report: str, index: int) -> sympy.Symbol:
    """The symbol standing for the value of the ``index``-th integral (or mean) of ``report`` in
    :attr:`Report.value`."""
    return sympy.Symbol(f"{report}[{index}]", real=True)


@dataclass(frozen=True)
class ReportIntegral:
    """One ``integral(PART, EXPR)`` or ``mean(PART, EXPR)`` of a report.

    reduction: "integral" (the integral over the region) | "mean" (the integral over the region's measure);
    region:    FaceRegion (faces of the space box), DomainBoundary (parts of a domain's boundary; the
               integrand may read the outward normal ``normal(c)``) or DomainInterior (the domain itself);
    integrand: of fields, their derivatives, coordinates, params, tables and (on a boundary) normals;
    time:      the value of the time coordinate the integral is taken at (None: a steady problem).
    """

    symbol: sympy.Symbol
    reduction: str
    region: "Region"
    integrand: sympy.Expr
    time: float | None = None

    def __str__(self) -> str:
        at = f" at time {self.time:g}" if self.time is not None else ""
        return f"{self.reduction} over {self.region}{at}"


@dataclass(frozen=True)
class Report:
    """``report NAME = EXPR``: a number computed from the trained fields after training.

    value: a constant expression of the integrals' symbols (:func:`report_integral`) and params."""

    name: str
    value: sympy.Expr
    integrals: tuple[ReportIntegral, ...]
    line: int = 0


# ------------------------------------------------------------------ losses


@dataclass(frozen=True)
class ConditionLoss:
    """Sum over the condition's components of the mean squared residual."""

    condition: str

    def __str__(self) -> str:
        return self.condition


@dataclass(frozen=True)
class PoolLoss:
    """One mean over the union of the members' points (components summed)."""

    conditions: tuple[str, ...]

    def __str__(self) -> str:
        return f"pool({', '.join(self.conditions)})"


Atom = Union[ConditionLoss, PoolLoss]


@dataclass(frozen=True)
class WeightedSum:
    """sum_k weight_k * atom_k."""

    terms: tuple[tuple[float, Atom], ...]

    def __str__(self) -> str:
        parts = [str(a) if w == 1 else f"{w:g}*{a}" for w, a in self.terms]
        return " + ".join(parts)

    @property
    def conditions(self) -> tuple[str, ...]:
        names: list[str] = []
        for _, atom in self.terms:
            members = atom.conditions if isinstance(atom, PoolLoss) else (atom.condition,)
            names.extend(n for n in members if n not in names)
        return tuple(names)


@dataclass(frozen=True)
class Grouping:
    """The tasks handed to gradient surgery, in order (one g_i per task)."""

    name: str
    tasks: tuple[WeightedSum, ...]
    labels: tuple[str, ...]  # each task as written, e.g. "N", "pool(walls, ic)"

    @property
    def m(self) -> int:
        return len(self.tasks)

    def tasks_holding(self, conditions) -> tuple[int, ...]:
        """The indices of the tasks that hold any of ``conditions`` (names)."""
        wanted = set(conditions)
        return tuple(i for i, task in enumerate(self.tasks) if wanted & set(task.conditions))


# ------------------------------------------------------------------ everything else


@dataclass(frozen=True)
class CallSpec:
    """``name(key = value, ...)`` with plain Python values (float, int, str, tuple)."""

    name: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.kwargs)

    def __str__(self) -> str:
        args = ", ".join(f"{k} = {_fmt(v)}" for k, v in self.kwargs)
        return f"{self.name}({args})"


def _fmt(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class ExactReference:
    solution: tuple[tuple[str, sympy.Expr], ...]  # field -> expression of the coordinates

    def __str__(self) -> str:
        return "exact " + ", ".join(f"{f} = {e}" for f, e in self.solution)


@dataclass(frozen=True)
class GeneratedReference:
    generator: CallSpec

    def __str__(self) -> str:
        return f"reference {self.generator}"


@dataclass(frozen=True)
class FileReference:
    path: str

    def __str__(self) -> str:
        return f'reference "{self.path}"'


Reference = Union[ExactReference, GeneratedReference, FileReference]


@dataclass(frozen=True)
class TestPoints:
    """``count`` random points, a ``grid`` (one count per coordinate), or about ``uniform`` points on a grid
    inside the box (`sampling.uniform_interior_points`); none: the reference's own points, else 10,000 LHS
    points."""

    count: int | None = None
    grid: tuple[int, ...] | None = None
    uniform: int | None = None

    def __str__(self) -> str:
        if self.grid:
            return "grid " + " x ".join(str(n) for n in self.grid)
        if self.uniform:
            return f"uniform {self.uniform} (a grid inside the box, as DeepXDE's uniform_points)"
        if self.count:
            return f"{self.count} points"
        return "default (the reference's own points, else 10000 LHS points)"


@dataclass(frozen=True)
class Validation:
    """Validate every ``every`` epochs on ``count`` fixed points, or on the test set."""

    every: int = 100
    count: int = 1000
    on_test: bool = False

    def __str__(self) -> str:
        where = "the test points" if self.on_test else f"{self.count} points"
        return f"every {self.every} epochs on {where}"


@dataclass(frozen=True)
class Sampling:
    points: tuple[tuple[str, int], ...]  # condition -> count (data conditions: all rows, absent)
    sampler: CallSpec
    resample_every: int | None  # None: never

    def count(self, condition: str) -> int | None:
        return dict(self.points).get(condition)


@dataclass(frozen=True)
class Stage:
    """One stage of training: ``epochs`` epochs of ``optimizer`` in ``dtype``.

    optimizer: a first-order optimizer (the update chain: weights, surgery, this optimizer's proposal,
               alignment) or a quasi-Newton method (``lbfgs``, ``bfgs``, ``ssbfgs``, ``ssbroyden``:
               `catalog.SECOND_ORDER_STAGES`), which minimises the weighted sum of the task losses at points
               fixed for ``resample`` epochs at a time (None: the whole stage)."""

    optimizer: CallSpec
    epochs: int
    dtype: str = "float32"
    resample: int | None = None

    @property
    def second_order(self) -> bool:
        from .catalog import SECOND_ORDER_STAGES

        return self.optimizer.name in SECOND_ORDER_STAGES

    def __str__(self) -> str:
        points = f", new points every {self.resample} epochs" if self.resample else ""
        return f"{self.optimizer} for {self.epochs} epochs in {self.dtype}{points}"

    def statement(self, call: str | None = None) -> str:
        """The stage as a spec writes it after ``stage`` (``call``: the optimizer's text, default its own)."""
        text = f"{call or self.optimizer} epochs = {self.epochs}, dtype = {self.dtype}"
        return text + (f", resample = {self.resample}" if self.resample else "")


@dataclass(frozen=True)
class Training:
    model: CallSpec
    optimizer: CallSpec
    schedule: CallSpec
    surgery: CallSpec
    align: CallSpec
    settings: tuple[tuple[str, Any], ...]  # epochs, grouping, seed, device, dtype, ...
    weights: CallSpec = CallSpec("none")  # the loss-balancing stage (`weights` statement)
    #: the `stage` statements in file order; () without them (one stage: the optimizer for `epochs` epochs).
    #: With stages, ``optimizer`` is the first first-order stage's, and the settings' epochs their sum.
    stages: tuple[Stage, ...] = ()
    #: `recipe NAME(...)` as written, before it is expanded (pinnspec.lang._recipe); None in a spec it expanded
    recipe: CallSpec | None = None

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.settings)

    def stage_list(self) -> tuple[Stage, ...]:
        """The stages a run goes through: the declared ones, or the one stage of a spec without."""
        return self.stages or (Stage(self.optimizer, int(self.setting("epochs")), str(self.setting("dtype"))),)

    def setting(self, key: str) -> Any:
        """A ``train`` setting: the spec's value, else its default (``catalog.TRAIN_SETTINGS``, where every
        default is stated once)."""
        from .catalog import TRAIN_SETTINGS

        return self.options.get(key, TRAIN_SETTINGS[key][1])


@dataclass(frozen=True)
class Causal:
    """``causal CONDITION(eps, chunks)``: the condition's loss weighted over time chunks (Wang, Sankaran &
    Perdikaris 2022): the time interval cut into ``chunks`` equal chunks, L_k the mean squared residual of the
    points in chunk k, w_k = exp(-eps * sum_{j<k} L_j) (no gradient through w), the loss mean_k w_k L_k."""

    condition: str
    eps: float
    chunks: int

    def __str__(self) -> str:
        return f"causal {self.condition}(eps = {self.eps:g}, chunks = {self.chunks})"


@dataclass(frozen=True)
class HardConstraint:
    """A field that satisfies its enforced Dirichlet and initial conditions by construction:

        field = extension + distance * N

    N the network's output for the field; ``distance`` vanishes on every enforced face (and at the initial
    time), ``extension`` equals the conditions' data there (`pinnspec.lang._enforce`).  Both are expressions
    of the coordinates."""

    field: str
    extension: sympy.Expr
    distance: sympy.Expr
    conditions: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.field} = {self.extension} + ({self.distance})*N_{self.field}  [{', '.join(self.conditions)}]"


@dataclass(frozen=True)
class PeriodicCoordinate:
    """A space coordinate the network sees only through cos and sin of 2 pi (c - lo) / (hi - lo): every field
    and every derivative is periodic in it, so the periodic condition ``condition`` holds by construction
    (`enforce`; the network's input layer that does it is `pinnspec.models.PeriodicEmbedding`)."""

    coordinate: str
    lo: float
    hi: float
    condition: str

    def __str__(self) -> str:
        return f"{self.coordinate} embedded with period {self.hi - self.lo:g}  [{self.condition}]"


@dataclass(frozen=True)
class Problem:
    name: str
    coordinates: tuple[Coordinate, ...]
    fields: tuple[str, ...]
    params: tuple[tuple[str, float], ...]
    lets: tuple[tuple[str, sympy.Expr], ...]
    conditions: tuple[Condition, ...]
    losses: tuple[tuple[str, WeightedSum], ...]
    groupings: tuple[Grouping, ...]
    default_grouping: str
    sampling: Sampling
    reference: Reference | None
    test: TestPoints
    validation: Validation
    training: Training
    source_dir: str = field(default=".", compare=False)
    domain: Domain | None = None  # None: the space box
    tables: tuple[Table, ...] = ()  # the coefficient tables the conditions read (ir.table_value)
    reports: tuple[Report, ...] = ()  # `report` statements, in file order
    causal: tuple[Causal, ...] = ()  # the equations weighted causally (`causal` statements)
    #: `enforce`: the fields' output transforms and the periodic embeddings; the enforced conditions stay in
    #: ``conditions`` (their residuals vanish by construction) and leave every task of every grouping
    hard_constraints: tuple[HardConstraint, ...] = ()
    periodic_embeddings: tuple[PeriodicCoordinate, ...] = ()
    #: the fields of some coordinates only (``field a(x, y)``): name -> its coordinates, in the problem's
    #: coordinate order; every other field depends on every coordinate
    field_coordinates: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def enforced(self) -> tuple[str, ...]:
        """The conditions that hold by construction, in file order."""
        names = {c for h in self.hard_constraints for c in h.conditions} | {e.condition for e in self.periodic_embeddings}
        return tuple(c.name for c in self.conditions if c.name in names)

    # convenience --------------------------------------------------------
    @property
    def space(self) -> tuple[Coordinate, ...]:
        return tuple(c for c in self.coordinates if not c.is_time)

    @property
    def time(self) -> Coordinate | None:
        return next((c for c in self.coordinates if c.is_time), None)

    @property
    def symbols(self) -> tuple[sympy.Symbol, ...]:
        return tuple(c.symbol for c in self.coordinates)

    def coordinates_of(self, field: str) -> tuple[str, ...]:
        """The coordinates ``field`` depends on (all of them unless the spec lists some)."""
        return dict(self.field_coordinates).get(field, tuple(c.name for c in self.coordinates))

    def field_function(self, name: str) -> sympy.Expr:
        """``name`` applied to its coordinates: u(x, t); a(x) for ``field a(x)``."""
        kept = self.coordinates_of(name)
        return sympy.Function(name)(*(c.symbol for c in self.coordinates if c.name in kept))

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise KeyError(name)

    def grouping(self, name: str | None = None) -> Grouping:
        name = name or self.default_grouping
        for g in self.groupings:
            if g.name == name:
                return g
        raise KeyError(name)
