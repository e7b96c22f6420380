"""The compiled problem: points, residuals and the m losses of a grouping.

    problem = pinnspec.compile(spec)
    points  = problem.sample(epoch)                       # fresh points (pure in seed, epoch)
    losses  = problem.losses(model, points, params)       # losses.tasks: [m], grouping order
    problem.reference(x)                                  # [N, d] -> [N, n_fields]

Loss meaning (LANGUAGE.md §6): a condition's loss is the mean over its points
of the per-point sum of squared residual components; a pool is one mean over
the union of its members' points; a task is a weighted sum of those.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
import torch

from .. import ir
from .._compiling import aot_cacheable, own_code
from ..forward import forward_values
from ..registry import REFERENCES, UnknownNameError
from ..sampling import PointPlan, PointSet, box_points, grid_points, read_columns
from ._codegen import Kernel, build_kernels, generate_kernel
from ._operators import find_operators
from ._plan import DerivativePlan

#: Fixed streams for the test and validation points: the same for every training seed.
TEST_STREAM, VALIDATION_STREAM = 7_000_001, 7_000_002
DEFAULT_TEST_POINTS = 10_000


@dataclass
class TorchPointSet:
    x: torch.Tensor  # [N, d], requires grad (inputs of the derivative plan)
    face_slices: tuple[slice, ...] | None = None
    partner: torch.Tensor | None = None  # [N, d] periodic partner points
    observed: torch.Tensor | None = None  # [N, n_observed]
    total: int | None = None  # points in the whole set (> N on a shard of a data-parallel run)

    @property
    def count(self) -> int:
        """The divisor of this set's means: every point of the set, on every rank."""
        return len(self.x) if self.total is None else self.total


@dataclass
class Points:
    epoch: int
    sets: list[TorchPointSet]


@dataclass
class Losses:
    task_list: list[torch.Tensor]  # m scalars, in grouping order (differentiate these one by one:
    #                                a row of a stacked tensor back-propagates zeros through every task)
    conditions: dict[str, torch.Tensor]  # condition -> scalar loss (its own mean)
    grouping: str
    stacked: torch.Tensor | None = None  # the task losses as one [m] tensor, where they were computed as one

    @property
    def tasks(self) -> torch.Tensor:  # [m]
        return torch.stack(self.task_list) if self.stacked is None else self.stacked


@dataclass(frozen=True)
class ConditionKernels:
    """The kernels of one condition: one, or one per face (``dn`` on a union of faces)."""

    condition: str
    set_index: int
    kernels: tuple[Kernel, ...]
    per_face: bool
    periodic: bool
    observed_fields: tuple[str, ...] = ()


def host_to_device(a, dtype, device) -> torch.Tensor:
    """A host array as a tensor on ``device``.  To a GPU through pinned memory and an asynchronous
    copy: a copy from pageable memory would first wait for every kernel queued on the stream."""
    device = torch.device(device)
    if device.type != "cuda":
        return torch.as_tensor(a, dtype=dtype, device=device)
    return torch.as_tensor(a).to(dtype).pin_memory().to(device, non_blocking=True)


class CompiledProblem:
    def __init__(self, spec):
        self.spec = spec
        self.ir: ir.Problem = spec.ir
        p = self.ir
        self.fields = p.fields
        self.coordinates = tuple(c.name for c in p.coordinates)
        self.dim = len(self.coordinates)
        self.point_plan = PointPlan(p)
        self.seed = int(p.training.options.get("seed", 0))
        #: how input derivatives are computed: "autograd" (nested reverse mode, any model),
        #: "forward" (Taylor propagation through pinnspec's MLP), "auto" (forward when the model allows)
        self.engine = p.training.options.get("engine", "auto")
        #: torch.compile of the per-set losses (needs the forward engine): "off" | "on" | "graphs" (on CUDA
        #: also CUDA graphs); see `compile_losses`
        self.compile = p.training.options.get("compile", "off")
        self._notified = False
        self._compiled = None  # set index -> its torch.compile'd loss unit, once `compile_losses` enabled them
        self._fused = None  # `FusedGradients` compiled (see `losses_and_gradients`)
        self._fused_gradients: dict[str | None, FusedGradients] = {}  # grouping -> the last one built
        self._owners: dict[str | None, tuple[int, ...] | None] = {}  # grouping -> `task_of_sets`
        self.compile_mode: str | None = None

        def residual_groups(cond: ir.Condition):
            return cond.face_residuals if cond.face_residuals else (cond.residuals,)

        # per point set: the fields whose derivatives enter every residual there through one linear operator
        on_set: dict[int, list] = {}
        for cond in p.conditions:
            on_set.setdefault(self.point_plan.set_index(cond.name), []).extend(
                r for group in residual_groups(cond) for r in group)
        #: set index -> field index -> LinearOperator (read as one value by the kernels on that set)
        self.operators = {index: find_operators(residuals, p) for index, residuals in on_set.items()}
        pending: list[tuple[ir.Condition, list[Kernel]]] = []
        all_kernels: list[Kernel] = []
        for cond in p.conditions:
            groups = residual_groups(cond)
            operators = self.operators[self.point_plan.set_index(cond.name)]
            ks = [generate_kernel(f"residual_{cond.name}" + (f"_face{i}" if len(groups) > 1 else ""), res, p,
                                  operators=operators)
                  for i, res in enumerate(groups)]
            pending.append((cond, ks))
            all_kernels.extend(ks)
        exact_kernel = None
        if isinstance(p.reference, ir.ExactReference):
            exact_kernel = generate_kernel("exact_solution", tuple(e for _, e in p.reference.solution), p,
                                           all_coordinates=True)
            all_kernels.append(exact_kernel)
        built, self.kernel_source = build_kernels(all_kernels, p.name)
        by_name = {k.name: k for k in built}
        self.exact_kernel = by_name.get("exact_solution")

        self.condition_kernels: dict[str, ConditionKernels] = {}
        needs: dict[int, set] = {s.index: set() for s in self.point_plan.sets}
        for cond, ks in pending:
            idx = self.point_plan.set_index(cond.name)
            kernels = tuple(by_name[k.name] for k in ks)
            for k in kernels:
                needs[idx].update(inp.key for inp in k.inputs if inp.kind == "value")
            observed = cond.region.fields if isinstance(cond.region, ir.DataPoints) else ()
            self.condition_kernels[cond.name] = ConditionKernels(
                cond.name, idx, kernels, per_face=len(kernels) > 1,
                periodic=isinstance(cond.region, ir.PeriodicPairs), observed_fields=observed)
        self.plans = {i: DerivativePlan.build(n, self.fields, self.coordinates) for i, n in needs.items()}
        self._by_set: dict[int, list[ConditionKernels]] = {}
        for ck in self.condition_kernels.values():
            self._by_set.setdefault(ck.set_index, []).append(ck)
        self._generator = None
        self._test = None
        self._validation = None

    # ================================================================== points
    def sample(self, epoch: int, seed: int | None = None, *, device="cpu", dtype=torch.float32,
               shard: tuple[int, int] | None = None) -> Points:
        """The points of ``epoch`` (a pure function of seed and epoch), as tensors.

        ``shard = (rank, world)``: this rank's rows of every set (data-parallel
        training); the shards of all ranks are exactly the single-process sample,
        and losses divide by the whole set's count, so summing the ranks' losses
        and gradients gives the single-process ones."""
        sets = self.point_plan.sample(self.seed if seed is None else int(seed), int(epoch))
        if shard is not None:
            sets = [_shard(s, *shard) for s in sets]
        return Points(int(epoch), [self._to_torch(s, device, dtype, total) for s, total in
                                   (sets if shard is not None else [(s, None) for s in sets])])

    @staticmethod
    def _to_torch(s: PointSet, device, dtype, total: int | None = None) -> TorchPointSet:
        def t(a):
            return None if a is None else host_to_device(a, dtype, device)

        x = t(s.x).requires_grad_(True)
        partner = t(s.partner)
        if partner is not None:
            partner.requires_grad_(True)
        return TorchPointSet(x, s.face_slices, partner, t(s.observed), total)

    # ================================================================== params
    def init_params(self, *, device="cpu", dtype=torch.float32) -> dict[str, torch.nn.Parameter]:
        """The spec's trainable scalars (``param``), at their initial values."""
        return {name: torch.nn.Parameter(torch.tensor(value, dtype=dtype, device=device))
                for name, value in self.ir.params}

    # ================================================================== residuals and losses
    def residuals(self, model, points: Points, params: dict[str, torch.Tensor] | None = None
                  ) -> dict[str, torch.Tensor]:
        """condition -> residuals [N, n_components] on its points."""
        params = params or {}
        out: dict[str, torch.Tensor] = {}
        for index, cks in self._by_set.items():
            s = points.sets[index]
            plan = self.plans[index]
            values = self.derivatives(model, plan, s.x)
            partner_values = self.derivatives(model, plan, s.partner) if s.partner is not None else None
            for ck in cks:
                r = self._evaluate(ck, s, s.x, values, params)
                if ck.periodic:
                    r = r - self._evaluate(ck, s, s.partner, partner_values, params)
                out[ck.condition] = r
        return out

    def derivatives(self, model, plan: DerivativePlan, x: torch.Tensor) -> dict:
        """The values the plan needs, by the problem's derivative engine."""
        # auto: forward propagation where it was measured to win: third and higher derivatives (1.6-3.2x),
        # and a plan with a linear operator (Burgers, u_t - nu u_xx one row: eager epoch 0.89 of the
        # hand-written one, against 1.05 with nested autograd, `pinnspec bench speed --threads 1`); with
        # plain second derivatives it tied nested autograd in time and held ~1.5x the memory
        wants_forward = self.engine == "forward" or (
            self.engine == "auto" and (plan.max_order >= 3 or bool(plan.operators)))
        if wants_forward:
            from ..forward import supports

            if supports(model):
                return forward_values(model, plan, x)
            if self.engine == "forward" and not self._notified:
                self._notified = True
                print(f"pinnspec: the forward derivative engine does not cover {type(model).__name__}; "
                      "using nested autograd", file=sys.stderr)
        return plan.evaluate(model(x), x)

    def _evaluate(self, ck: ConditionKernels, s: TorchPointSet, x, values, params) -> torch.Tensor:
        if not ck.per_face:
            return torch.stack(self._call(ck.kernels[0], x, values, params, s, ck, slice(None)), dim=1)
        parts = [torch.stack(self._call(k, x, values, params, s, ck, rows), dim=1)
                 for k, rows in zip(ck.kernels, s.face_slices)]
        return torch.cat(parts, dim=0)

    @staticmethod
    def _call(kernel: Kernel, x, values, params, s: TorchPointSet, ck: ConditionKernels, rows: slice):
        args = []
        for inp in kernel.inputs:
            if inp.kind == "value":
                args.append(values[inp.key][rows])
            elif inp.kind == "coordinate":
                args.append(x[rows, inp.key])
            elif inp.kind == "param":
                args.append(params[inp.key])
            else:  # observed
                args.append(s.observed[rows, ck.observed_fields.index(inp.key)])
        return kernel.fn(*args)

    @staticmethod
    def point_squares(residuals: torch.Tensor) -> torch.Tensor:
        """[N, C] -> [N]: the per-point sum of squared components."""
        return residuals.square().sum(dim=1)

    def losses(self, model, points: Points, params: dict[str, torch.Tensor] | None = None,
               grouping: str | None = None, *, compiled: bool = True) -> Losses:
        """The m task losses (and every condition's) of ``grouping`` on ``points``.

        ``compiled``: use the torch.compile'd per-set losses when `compile_losses`
        enabled them (False forces the eager path, e.g. for a Hessian estimate,
        which needs double backward)."""
        if compiled and self._compiled is not None:
            sums = self._compiled_sums(model, points, params or {})
        else:
            residuals = self.residuals(model, points, params)
            sums = {name: self.point_squares(r).sum() for name, r in residuals.items()}
        return self._losses_from_sums(sums, self._counts(points), grouping)

    def _counts(self, points: Points) -> dict[str, int]:
        """condition -> the divisor of its mean: its set's points (on a shard, the whole set's; see `sample`)."""
        return {name: points.sets[ck.set_index].count for name, ck in self.condition_kernels.items()}

    def _losses_from_sums(self, sums: dict[str, torch.Tensor], counts: dict[str, int], grouping: str | None
                          ) -> Losses:
        # sum / count rather than mean: on a shard, count is the whole set's (see `sample`)
        conditions = {name: sums[name] / counts[name] for name in sums}
        g = self.ir.grouping(grouping)
        tasks = []
        for task in g.tasks:
            total = 0
            for weight, atom in task.terms:
                if isinstance(atom, ir.PoolLoss):
                    value = sum(sums[c] for c in atom.conditions) / sum(counts[c] for c in atom.conditions)
                else:
                    value = conditions[atom.condition]
                total = total + weight * value
            tasks.append(total)
        return Losses(tasks, conditions, g.name)

    def task_of_sets(self, grouping: str | None = None) -> tuple[int, ...] | None:
        """The task each point set (in ``_by_set`` order) feeds in ``grouping`` (-1: none), or None when a
        set feeds two or more tasks.  Where every set feeds at most one task, a task's gradient is the sum
        of its sets' gradients, which one backward pass yields (`losses_and_gradients`)."""
        if grouping not in self._owners:
            owner: dict[int, int] = {}
            split = True
            for i, task in enumerate(self.ir.grouping(grouping).tasks):
                for _, atom in task.terms:
                    for c in (atom.conditions if isinstance(atom, ir.PoolLoss) else (atom.condition,)):
                        split = split and owner.setdefault(self.condition_kernels[c].set_index, i) == i
            self._owners[grouping] = tuple(owner.get(index, -1) for index in self._by_set) if split else None
        return self._owners[grouping]

    def fused_gradients(self, model, params: dict[str, torch.Tensor], grouping: str | None
                        ) -> "FusedGradients | None":
        """The losses and G [m, p] of ``grouping`` by ONE pass over every point set, as a pure function
        of (theta, the points) that torch.compile takes whole: the unit `losses_and_gradients` compiles
        and the trainer's one-graph step calls.  None where it does not apply: a set feeds two tasks
        (`task_of_sets`), so its gradient does not split by task."""
        owners = self.task_of_sets(grouping)
        if owners is None:
            return None
        fused = self._fused_gradients.get(grouping)
        if fused is None or fused.unit.model is not model or fused.param_names != list(params):
            fused = self._fused_gradients[grouping] = FusedGradients(self, model, params, grouping, owners)
        return fused

    def losses_and_gradients(self, model, points: Points, params: dict[str, torch.Tensor], grouping: str | None,
                             theta: torch.Tensor) -> tuple[Losses, torch.Tensor] | None:
        """The losses and G [m, p] by one compiled graph (`FusedGradients`); None where that does not apply
        (the losses are not compiled, or a set feeds two tasks): then `losses` and `loss_gradients` (one
        backward pass per task) give the same.  ``theta`` [p]: the model's parameters then ``params``'
        values, flattened in that order (the trainer's)."""
        fused = self.fused_gradients(model, params, grouping) if self._fused is not None else None
        if fused is None:
            return None
        inputs, counts = fused.inputs(points)
        with aot_cacheable():
            tasks, conditions, G = self._fused(fused, theta.detach(), inputs, counts)  # [m], [C], [m, p]
        return fused.losses(tasks, conditions), G

    # ================================================================== torch.compile
    def compile_losses(self, model, *, device: torch.device | str = "cpu", optimizer_needs_hessian: bool = False
                       ) -> str | None:
        """Turn on torch.compile for the losses when the spec says ``compile = on`` or ``graphs``.

        What is compiled: per point set, the forward derivative propagation, the
        residual kernels and the per-condition sums of squares (one graph per set;
        its backward is compiled too).  The nested-autograd plan cannot be compiled
        (torch.compile does not support double backward), so this needs the forward
        engine: the model must be pinnspec's MLP (``pinnspec.forward.supports``) and
        the engine ``auto`` or ``forward``.  ``graphs`` on CUDA uses the mode
        ``reduce-overhead`` (CUDA graphs: one launch per compiled graph); on the CPU it
        is ``on``.  Returns None when compiled, else the reason it is not (the caller
        prints it as a one-line notice); ``compile = off`` returns None too."""
        if self.compile == "off":
            return None
        from ..forward import supports

        if self.engine == "autograd":
            return (f"compile = {self.compile} needs the forward engine (engine = auto or forward); "
                    "training eagerly with autograd")
        if not supports(model):
            return (f"compile = {self.compile}: the forward derivative engine does not cover {type(model).__name__}; "
                    "training eagerly with nested autograd")
        cuda = torch.device(device).type == "cuda"
        self.compile_mode = "reduce-overhead" if cuda and self.compile == "graphs" else "default"
        self.engine = "forward"  # compiled means the forward engine, even where auto would pick autograd
        # one compiled unit per point set, each with its own code object: torch.compile keeps its cache
        # (and its limit of 8 recompiles) per code object, and many problems and sets share a process
        self._compiled = {index: torch.compile(own_code(_set_sums), mode=self.compile_mode, dynamic=False,
                                               fullgraph=True) for index in self._by_set}
        self._fused = torch.compile(own_code(FusedGradients.__call__), mode=self.compile_mode, dynamic=False,
                                    fullgraph=True)
        # build the derivative programs (memoised plain-Python objects) before tracing: a program built
        # during the first trace leaves a guard on the memo dict that the second call fails, and every
        # set would be compiled twice (and checked against two cache entries at every call)
        parameter = next(model.parameters())
        with torch.no_grad():
            for index in self._by_set:
                forward_values(model, self.plans[index], parameter.new_zeros(2, self.dim))
        if optimizer_needs_hessian:
            return (f"compile = {self.compile}: the Hessian-estimate steps of this optimizer run eagerly "
                    "(double backward does not compile); the other steps are compiled")
        return None

    def stop_compiling(self) -> None:
        """Back to the eager losses (the forward engine stays): what a failed compile falls back to."""
        self._compiled, self._fused, self.compile_mode = None, None, None

    def _compiled_sums(self, model, points: Points, params) -> dict[str, torch.Tensor]:
        """condition -> its sum of squared residuals, by the compiled units (inputs detached: a compiled
        backward would otherwise also compute the unneeded gradients with respect to the points)."""
        sums = {}
        for index, cks in self._by_set.items():
            s = points.sets[index]
            partner = None if s.partner is None else s.partner.detach()
            with aot_cacheable():
                out = self._compiled[index](self, index, model, s.x.detach(), partner, s.observed, s.face_slices,
                                            params)
            sums.update(zip((ck.condition for ck in cks), out))
        return sums

    # ================================================================== reference
    def exact(self, x: torch.Tensor) -> torch.Tensor:
        """The ``exact`` solution as a torch function of [N, d] points -> [N, n_fields]
        (differentiable in x: ``pinnspec verify`` runs it through the training path)."""
        if self.exact_kernel is None:
            raise ValueError(f"the problem '{self.ir.name}' has no 'exact' solution")
        columns = [x[:, i] for i in range(self.dim)]
        return torch.stack(self.exact_kernel.fn(*columns), dim=1)

    def _generator_instance(self):
        if self._generator is None:
            call = self.ir.reference.generator
            try:
                make = REFERENCES.get(call.name)
            except UnknownNameError:
                _register_builtin_references()
                make = REFERENCES.get(call.name)
            self._generator = make(**call.options)
        return self._generator

    @property
    def has_reference(self) -> bool:
        """Whether the spec gives a reference solution ('exact' or 'reference'); without one a run trains
        and predicts, but has no test error."""
        return self.ir.reference is not None

    def reference(self, points) -> torch.Tensor:
        """Reference values at ``points`` ([N, d], coordinates in declaration order,
        space then time) -> [N, n_fields], float64 on the points' device."""
        x = torch.as_tensor(points)
        ref = self.ir.reference
        if isinstance(ref, ir.ExactReference):
            with torch.no_grad():
                return self.exact(x.detach().to(torch.float64))
        if isinstance(ref, ir.GeneratedReference):
            values = self._generator_instance()(x.detach().cpu().numpy().astype(np.float64))
            return torch.as_tensor(values, dtype=torch.float64, device=x.device)
        if isinstance(ref, ir.FileReference):
            pts, vals = self._file_reference()
            return torch.as_tensor(_lookup_rows(pts, vals, x.detach().cpu().numpy()), dtype=torch.float64,
                                   device=x.device)
        raise ValueError(f"the problem '{self.ir.name}' has no reference solution (add 'exact' or 'reference')")

    def _file_reference(self):
        ref = self.ir.reference
        path = self.point_plan.data_path(ir.DataPoints(ref.path, self.fields))
        columns = read_columns(path)
        missing = [c for c in self.coordinates + self.fields if c not in columns]
        if missing:
            raise ValueError(f"reference file '{ref.path}' has no column {missing[0]!r}")
        pts = np.stack([np.ravel(columns[c]) for c in self.coordinates], axis=1).astype(np.float64)
        vals = np.stack([np.ravel(columns[f]) for f in self.fields], axis=1).astype(np.float64)
        return pts, vals

    def test_points(self) -> np.ndarray:
        """The test points [N, d] (fixed for every seed; see docs/language.md)."""
        if self._test is None:
            t = self.ir.test
            coords = self.ir.coordinates
            if t.grid:
                self._test = grid_points(coords, t.grid)
            elif t.count:
                self._test = box_points(coords, t.count, np.random.default_rng(TEST_STREAM))
            elif isinstance(self.ir.reference, ir.GeneratedReference):
                self._test = np.asarray(self._generator_instance().grid(), dtype=np.float64)
            elif isinstance(self.ir.reference, ir.FileReference):
                self._test = self._file_reference()[0]
            else:
                self._test = box_points(coords, DEFAULT_TEST_POINTS, np.random.default_rng(TEST_STREAM))
        return self._test

    def validation_points(self) -> np.ndarray:
        if self._validation is None:
            v = self.ir.validation
            if v.on_test:
                self._validation = self.test_points()
            elif isinstance(self.ir.reference, ir.FileReference):
                pts = self._file_reference()[0]
                rng = np.random.default_rng(VALIDATION_STREAM)
                self._validation = pts[rng.choice(len(pts), size=min(v.count, len(pts)), replace=False)]
            else:
                self._validation = box_points(self.ir.coordinates, v.count, np.random.default_rng(VALIDATION_STREAM))
        return self._validation

    # ================================================================== inspection
    def describe_plan(self) -> str:
        lines = [f"derivative plan for problem {self.ir.name} (coordinates: {', '.join(self.coordinates)})"]
        for s in self.point_plan.sets:
            count = "all rows" if s.count is None else f"{s.count} points"
            lines.append(f"set {s.index}: {s.region}, {count} -> {', '.join(s.conditions)}")
            for line in self.plans[s.index].describe():
                lines.append(f"  {line}")
            if isinstance(s.region, ir.PeriodicPairs):
                lines.append("  (evaluated on both ends of the periodic pairs)")
        return "\n".join(lines)


def _set_sums(problem: CompiledProblem, index: int, model, x, partner, observed, face_slices, params
              ) -> tuple[torch.Tensor, ...]:
    """The per-condition sums of squared residuals on one point set: the unit ``compile = on`` compiles
    (forward derivative propagation, residual kernels, squares, sums; its backward compiles with it)."""
    s = TorchPointSet(x, face_slices, partner, observed)
    plan = problem.plans[index]
    values = forward_values(model, plan, x)
    partner_values = forward_values(model, plan, partner) if partner is not None else None
    sums = []
    for ck in problem._by_set[index]:
        r = problem._evaluate(ck, s, x, values, params)
        if ck.periodic:
            r = r - problem._evaluate(ck, s, partner, partner_values, params)
        sums.append(r.square().sum())
    return tuple(sums)


class _ModelUnit(torch.nn.Module):
    """The model as the one submodule of a module whose call is one set's `_set_sums`: what
    `torch.func.functional_call` runs with a set's own copy of the weights."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        # the weights' names and shapes, read once (not walked through the modules at every step)
        self.names = [name for name, _ in model.named_parameters()]
        self.shapes = [tuple(t.shape) for t in model.parameters()]

    def forward(self, problem, index, x, partner, observed, face_slices, params):
        return _set_sums(problem, index, self.model, x, partner, observed, face_slices, params)


class FusedGradients:
    """The task losses [m], the condition losses [C] (``condition_kernels`` order) and G [m, p] of one
    grouping, by one pass over every point set: a pure function of theta and the points.

    Set s evaluates its losses with its own copy of theta (row s of a [S, p] expansion of theta, through
    `torch.func.functional_call`), so the gradient of the tasks' sum with respect to the copies is one
    gradient per set, [S, p], and a task's row of G is the sum of its sets' rows (each set feeds one task:
    `CompiledProblem.task_of_sets`).  The means, pools and weighted sums that make the task losses are
    inside; `torch.func.grad` makes the gradient part of the same function, so that torch.compile makes
    losses and G one graph with no autograd engine between them (and the trainer's step adds the update
    chain to that graph)."""

    def __init__(self, problem: CompiledProblem, model, params: dict[str, torch.Tensor], grouping: str | None,
                 owners: tuple[int, ...]):
        self.problem = problem
        self.unit = _ModelUnit(model)
        self.grouping = grouping
        self.param_names = list(params)
        self.shapes = self.unit.shapes + [tuple(t.shape) for t in params.values()]
        self.sizes = [math.prod(shape) for shape in self.shapes]
        m = len(problem.ir.grouping(grouping).tasks)
        #: per task, the sets (rows of the [S, p] per-set gradients) whose gradients add up to its row of G
        self.rows = [[row for row, task in enumerate(owners) if task == i] for i in range(m)]

    def inputs(self, points: Points) -> tuple[list[tuple], dict[str, int]]:
        """The per-set arguments (points detached: nothing differentiates with respect to them) and the
        divisors of the means."""
        sets = (points.sets[index] for index in self.problem._by_set)
        inputs = [(s.x.detach(), None if s.partner is None else s.partner.detach(), s.observed, s.face_slices)
                  for s in sets]
        return inputs, self.problem._counts(points)

    def losses(self, tasks: torch.Tensor, conditions: torch.Tensor) -> Losses:
        return Losses(list(tasks.unbind()), dict(zip(self.problem.condition_kernels, conditions.unbind())),
                      self.problem.ir.grouping(self.grouping).name, stacked=tasks)

    def __call__(self, theta: torch.Tensor, inputs: list[tuple], counts: dict[str, int]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        copies = theta.unsqueeze(0).expand(len(inputs), -1)  # [S, p]
        per_set, (tasks, conditions) = torch.func.grad(self._every_set_losses, has_aux=True)(
            copies, inputs, counts)  # [S, p], ([m], [C])
        G = torch.stack([per_set[r[0]] if len(r) == 1 else per_set[r].sum(dim=0) for r in self.rows])  # [m, p]
        return tasks, conditions, G

    def _every_set_losses(self, copies, inputs, counts):
        """(the tasks' sum, (tasks [m], conditions [C])), set s evaluated with row s of ``copies``."""
        problem, names = self.problem, self.unit.names
        sums = []
        for index, row, (x, partner, observed, face_slices) in zip(problem._by_set, copies, inputs):
            pieces = [piece.view(shape) for piece, shape in zip(row.split(self.sizes), self.shapes)]
            weights = {"model." + name: piece for name, piece in zip(names, pieces)}
            params = dict(zip(self.param_names, pieces[len(names):]))
            sums.extend(torch.func.functional_call(self.unit, weights, (problem, index, x, partner, observed,
                                                                        face_slices, params)))
        losses = problem._losses_from_sums(
            dict(zip((ck.condition for cks in problem._by_set.values() for ck in cks), sums)), counts,
            self.grouping)
        tasks = torch.stack(losses.task_list)  # [m]
        conditions = torch.stack([losses.conditions[name] for name in problem.condition_kernels])  # [C]
        return tasks.sum(), (tasks.detach(), conditions.detach())


def _shard(s: PointSet, rank: int, world: int) -> tuple[PointSet, int]:
    """This rank's rows of a point set (per face for a union of faces), and the set's size."""
    def rows(n: int) -> np.ndarray:
        return np.array_split(np.arange(n), world)[rank]

    if s.face_slices is None:
        index = rows(len(s.x))
        faces = None
    else:
        parts, faces, start = [], [], 0
        for f in s.face_slices:
            mine = np.arange(f.start, f.stop)[rows(f.stop - f.start)]
            parts.append(mine)
            faces.append(slice(start, start + len(mine)))
            start += len(mine)
        index = np.concatenate(parts)
        faces = tuple(faces)
    pick = (lambda a: None if a is None else a[index])  # noqa: E731
    return PointSet(s.x[index], faces, pick(s.partner), pick(s.observed)), len(s.x)


def _lookup_rows(pts: np.ndarray, vals: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Reference values at rows of a reference file (exact match, to 1e-9)."""
    index = {tuple(np.round(p, 9)): i for i, p in enumerate(pts)}
    try:
        rows = [index[tuple(np.round(p, 9))] for p in x]
    except KeyError:
        raise ValueError("a file reference is known only at the file's own points") from None
    return vals[rows]


def _register_builtin_references():
    from .. import references  # noqa: F401  (registers cole_hopf_burgers, nls)
