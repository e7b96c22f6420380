"""The compiled problem: points, residuals and the m losses of a grouping.

    problem = pinnspec.compile(spec)
    points  = problem.sample(epoch)                       # fresh points (pure in seed, epoch)
    points  = problem.sample(epoch, residual=problem.residual_function(model))  # rad, rard, r3: adaptive
    losses  = problem.losses(model, points, params)       # losses.tasks: [m], grouping order
    problem.reference(x)                                  # [N, d] -> [N, n_fields]

Loss meaning: a condition's loss is the mean over its points of the per-point
sum of squared residual components; a pool is one mean over the union of its
members' points; a task is a weighted sum of those.

This is the lowered problem only: how a training step runs it (torch.compile,
fused gradients, data-parallel shards) is the engine's (``pinnspec.engine``).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import sympy
import torch

from .. import ir
from ..forward import forward_values
from ..registry import REFERENCES
from ..sampling import (AdaptiveSampler, PointPlan, PointSet, TableColumns, TableInterpolator, box_points, domain_points,
                        grid_points, inside_domain, load_reference, sample_region, table_interpolator,
                        uniform_interior_points)
from ._causal import CausalChunks
from ._enforce import HardConstrained, constrained_problem
from ._codegen import Kernel, build_kernels, generate_kernel
from ._operators import find_operators
from ._derivatives import DerivativePlan
from ._reports import ReportEvaluator
from ._values import AdaptiveHistory, ConditionKernels, Losses, Points, TorchPointSet, added_up, host_to_device

#: Fixed streams for the test and validation points: the same for every training seed.
TEST_STREAM, VALIDATION_STREAM = 7_000_001, 7_000_002
#: The stream of an adaptive sampler's candidates and choices: ``default_rng([seed, block, set, ADAPTIVE_STREAM])``
ADAPTIVE_STREAM = 7_000_003
#: Points per residual evaluation of an adaptive sampler (bounds the memory of the derivatives' graphs)
RESIDUAL_CHUNK = 4096
DEFAULT_TEST_POINTS = 10_000


class CompiledProblem:
    def __init__(self, problem, *, enforce: bool = True, grouping: str | None = None):
        """``enforce``: rewrite the residuals for the spec's hard constraints (`constrained_problem`): the
        problem a `HardConstrained` network trains on; False: the conditions as written (``verify`` runs the
        exact solution through them).  ``grouping``: compile only the conditions its tasks use, and the
        enforced ones (they hold by construction; their losses are logged as a check); a condition in no
        task (`left_out`) is then neither evaluated nor logged: the points it shares with others carry no
        derivative rows for it.  None: every condition.  The points are drawn for every condition either way
        (a sampler's base draws are the same whichever grouping trains; an adaptive sampler redraws from the
        residuals of the compiled conditions alone, those that train).  ``problem``: the checked problem's IR
        (``ir.Problem``), or a checked spec holding it (``.ir``)."""
        #: the problem as written (before `enforce` rewrites its residuals)
        self.written: ir.Problem = getattr(problem, "ir", problem)
        self.ir: ir.Problem = constrained_problem(self.written) if enforce else self.written
        self.enforces = enforce and bool(self.written.hard_constraints)
        p = self.ir
        used = None if grouping is None else set(p.enforced).union(*(t.conditions for t in p.grouping(grouping).tasks))
        conditions = tuple(c for c in p.conditions if used is None or c.name in used)
        #: the conditions not compiled (in no task of ``grouping``), in the spec's order
        self.left_out = tuple(c.name for c in p.conditions if used is not None and c.name not in used)
        self.fields = p.fields
        self.coordinates = tuple(c.name for c in p.coordinates)
        self.dim = len(self.coordinates)
        self.point_plan = PointPlan(p)
        self.seed = int(p.training.setting("seed"))
        #: how input derivatives are computed: "autograd" (nested reverse mode, any model),
        #: "forward" (Taylor propagation through pinnspec's MLP), "auto" (forward when the model allows)
        self.engine = p.training.setting("engine")
        #: "auto" | "on" | "off" | "sets": how steps stack their kernels (`stacking`)
        self.stack = p.training.setting("stack")
        self._notified = False
        self._feeds: dict[str | None, tuple[tuple[int, ...], ...]] = {}  # grouping -> `tasks_of_sets`
        self._coefficients: dict[tuple, tuple[dict[str, float], ...]] = {}  # `task_coefficients`

        def residual_groups(cond: ir.Condition):
            return cond.face_residuals if cond.face_residuals else (cond.residuals,)

        # per point set: the fields whose derivatives enter every residual there through one linear operator
        on_set: dict[int, list] = {}
        for cond in conditions:
            on_set.setdefault(self.point_plan.set_index(cond.name), []).extend(
                r for group in residual_groups(cond) for r in group)
        #: set index -> field index -> LinearOperator (read as one value by the kernels on that set)
        self.operators = {index: find_operators(residuals, p) for index, residuals in on_set.items()}
        pending: list[tuple[ir.Condition, list[Kernel]]] = []
        all_kernels: list[Kernel] = []
        for cond in conditions:
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
        if p.hard_constraints:
            all_kernels.append(generate_kernel("hard_constraints", tuple(e for h in p.hard_constraints
                                                                         for e in (h.extension, h.distance)),
                                               p, all_coordinates=True))
        built, self.kernel_source = build_kernels(all_kernels, p.name)
        by_name = {k.name: k for k in built}
        self.exact_kernel = by_name.get("exact_solution")
        self._constraint_kernel = by_name.get("hard_constraints")

        self.condition_kernels: dict[str, ConditionKernels] = {}
        needs: dict[int, set] = {s.index: set() for s in self.point_plan.sets}
        #: point set index -> the coefficient tables its kernels read, in first-use order
        self.set_tables: dict[int, tuple[str, ...]] = {}
        for cond, ks in pending:
            idx = self.point_plan.set_index(cond.name)
            read = [inp.key for k in ks for inp in k.inputs if inp.kind == "table"]
            self.set_tables[idx] = tuple(dict.fromkeys(self.set_tables.get(idx, ()) + tuple(read)))
        self._interpolators: dict[str, TableInterpolator] = {}
        for cond, ks in pending:
            idx = self.point_plan.set_index(cond.name)
            kernels = tuple(by_name[k.name] for k in ks)
            for k in kernels:
                needs[idx].update(inp.key for inp in k.inputs if inp.kind == "value")
            observed = cond.region.fields if isinstance(cond.region, ir.DataPoints) else ()
            periodic = isinstance(cond.region, ir.PeriodicPairs)
            tables = self.set_tables[idx]
            columns = (tuple(("observed", f) for f in observed) + tuple(("table", t, False) for t in tables)
                       + (tuple(("table", t, True) for t in tables) if periodic else ()))
            self.condition_kernels[cond.name] = ConditionKernels(
                cond.name, idx, kernels, per_face=len(kernels) > 1, periodic=periodic, observed_fields=observed,
                point_columns=columns)
        self.plans = {i: DerivativePlan.build(n, self.fields, self.coordinates) for i, n in needs.items()}
        #: every set's needs together: what `all_set_residuals` evaluates on all the points at once
        self.union_plan = DerivativePlan.build(set().union(*needs.values()), self.fields, self.coordinates)
        time = p.time
        #: condition -> its causal weighting over time chunks (`causal` statements of compiled conditions)
        self.causal: dict[str, CausalChunks] = {
            c.condition: CausalChunks(c.eps, c.chunks, self.coordinates.index(time.name), float(time.lo),
                                      float(time.hi)) for c in p.causal if c.condition in self.condition_kernels}
        #: point set index -> the kernels of the conditions evaluated on it (sets in first-use order)
        self.by_set: dict[int, list[ConditionKernels]] = {}
        for ck in self.condition_kernels.values():
            self.by_set.setdefault(ck.set_index, []).append(ck)
        #: the joint eager residuals' network passes (`residuals`): the sets a pool of the grouping joins (a PDE's
        #: loss over the interior, boundary and initial points) in one pass with their plans' union, each other
        #: set alone; (set indices in ``by_set`` order, the pass's plan)
        self.passes = self._passes(p.grouping(grouping), needs)
        #: the point sets an adaptive sampler (`rad`, `rard`, `r3`) redraws from the residual: those whose
        #: conditions are all equations; every other set is drawn by its base sampler
        self.adaptive: AdaptiveSampler | None = (self.point_plan.sampler
                                                 if isinstance(self.point_plan.sampler, AdaptiveSampler) else None)
        self.adaptive_sets: tuple[int, ...] = () if self.adaptive is None else tuple(
            s.index for s in self.point_plan.sets if s.index in self.by_set
            and not s.is_data and all(p.condition(name).kind == "equation" for name in s.conditions))
        self._generator = None
        self._file_rows = None  # a reference file's (points, values), read once
        self._test = None
        self._validation = None
        self._report_evaluator: ReportEvaluator | None = None

    # ================================================================== points
    def sample(self, epoch: int, seed: int | None = None, *, device="cpu", dtype=torch.float32,
               residual=None, block: int | None = None, adaptive: dict[int, np.ndarray] | None = None,
               history: AdaptiveHistory | None = None) -> Points:
        """The points of ``epoch`` as tensors: a pure function of seed and epoch, except the equation sets
        of an adaptive sampler (``rad``, ``rard``, ``r3``), which follow ``residual(set_index, x [n, d]) ->
        |r| [n]`` (:meth:`residual_function` of the model at this epoch) from the first resampling on, starting
        from ``history`` (the `Points.history` of the caller's last draw; None: a fresh run).
        Without ``residual`` every set is its sampler's base draw.  ``block`` replaces the resampling block
        of ``epoch`` (`PointPlan.sample`).  ``adaptive``: the adaptive sets' points of this block as an earlier
        draw chose them (``Points.adaptive``, kept in a checkpoint), taken as they are."""
        seed = self.seed if seed is None else int(seed)
        block = self.point_plan.block(int(epoch)) if block is None else int(block)
        sets = self.point_plan.sample(seed, int(epoch), block)
        chosen = None
        if self.adaptive is not None and (residual is not None or adaptive is not None):
            if adaptive is None:
                sets, history = self.adapted(seed, int(epoch), sets, residual, block, history)
            else:
                sets = [PointSet(np.ascontiguousarray(adaptive[index], dtype=np.float64))
                        if index in self.adaptive_sets else s for index, s in enumerate(sets)]
            chosen = {index: sets[index].x for index in self.adaptive_sets}
        points = self.points(epoch, sets, device=device, dtype=dtype)
        points.block, points.adaptive, points.history = block, chosen, history
        return points

    def adapted(self, seed: int, epoch: int, sets: list[PointSet], residual, block: int | None = None,
                history: AdaptiveHistory | None = None) -> tuple[list[PointSet], AdaptiveHistory]:
        """``sets`` (the point plan's draws of ``epoch``) with the adaptive sets redrawn by the spec's adaptive
        sampler, and the history after this draw.  Block 0 keeps the base draw.  In a later block a set starts
        from its points of the last block drawn before it in ``history`` (`rard`, `r3`; the base draw of this
        block where none was: a fresh run, or a checkpoint without the history), and the same block drawn again
        starts from the same points: equal residuals give equal sets.
        The candidates and choices come from ``default_rng([seed, block, set, ADAPTIVE_STREAM])``."""
        block = self.point_plan.block(epoch) if block is None else int(block)
        sets, history = list(sets), dict(history or {})
        for index in self.adaptive_sets:
            planned = self.point_plan.sets[index]
            drawn = sets[index].x  # [count, d]: the base sampler's points of this block
            last = history.get(index)
            if last is not None and last[0] == seed and last[1] == block:
                current = last[2]  # this block again: from the same points
            elif last is not None and last[0] == seed and last[1] < block:
                current = last[3]  # the points of the last block drawn
            else:
                current = drawn
            if block == 0:
                points = drawn
            else:
                rng = np.random.default_rng([seed, block, index, ADAPTIVE_STREAM])

                def draw(n: int, region=planned.region, rng=rng) -> np.ndarray:
                    return sample_region(region, self.point_plan.coordinates, n, self.adaptive.base, rng).x

                points = self.adaptive.adapt(current, planned.count, draw, lambda x, index=index: residual(index, x),
                                             rng)
            history[index] = (seed, block, current, points)
            sets[index] = PointSet(np.ascontiguousarray(points))
        return sets, history

    def points(self, epoch: int, sets: list[PointSet], *, device="cpu", dtype=torch.float32,
               totals: list[int] | None = None) -> Points:
        """Host point sets as tensors on ``device``; ``totals``: each set's whole size where ``sets`` are
        parts of them (the divisors of the means: see `TorchPointSet.count`)."""
        if totals is not None and self.adaptive is not None:
            raise ValueError(f"the adaptive sampler '{self.adaptive.name}' redraws points from the residual of one "
                             "process's model: data-parallel runs (point sets split over ranks) do not take it")
        totals = totals or [None] * len(sets)
        return Points(int(epoch), [self._to_torch(index, s, device, dtype, total)
                                   for index, (s, total) in enumerate(zip(sets, totals))])

    def _to_torch(self, index: int, s: PointSet, device, dtype, total: int | None = None) -> TorchPointSet:
        def t(a):
            return None if a is None else host_to_device(a, dtype, device)

        x = t(s.x).requires_grad_(True)
        partner = t(s.partner)
        if partner is not None:
            partner.requires_grad_(True)
        return TorchPointSet(x, s.face_slices, partner, t(self.host_columns(index, s)), total, t(s.normals))

    # ================================================================== coefficient tables
    def host_columns(self, index: int, s: PointSet) -> np.ndarray | None:
        """[N, n_columns]: the per-point values of point set ``index`` known on the host, in the order of its
        conditions' ``point_columns``: a data condition's observed fields, then every table the set's kernels
        read, at the points and (periodic pairs) at the partners.  Interpolated here, when the points are
        drawn, so that a training step reads the values as one more input (no host work, no device sync)."""
        tables = self.set_tables.get(index, ())
        if not tables:
            return s.observed
        parts = ([] if s.observed is None else [s.observed]) + [self.table_values(t, s.x) for t in tables]
        if s.partner is not None:
            parts += [self.table_values(t, s.partner) for t in tables]
        return np.column_stack(parts)  # [N, n_columns]

    def table_values(self, name: str, x: np.ndarray) -> np.ndarray:
        """The coefficient table ``name`` at points ``x`` ([N, d], every coordinate) -> [N] float64."""
        table = next(t for t in self.ir.tables if t.name == name)
        if name not in self._interpolators:  # read once (and shared with `check`: table_interpolator caches)
            path = table.path if os.path.isabs(table.path) else os.path.join(self.ir.source_dir or ".", table.path)
            columns = TableColumns(table.coordinates, table.coordinate_columns, table.value_column)
            self._interpolators[name] = table_interpolator(path, columns, table.method)
        x = np.asarray(x, dtype=np.float64)  # [N, d]
        if table.at:  # read at expressions of the coordinates
            symbols = [sympy.Symbol(c, real=True) for c in self.coordinates]
            read = sympy.lambdify(symbols, list(table.at), modules="numpy")(*x.T)
            at = np.column_stack([np.broadcast_to(np.asarray(v, dtype=np.float64), x.shape[:1]) for v in read])
            return self._interpolators[name](at)  # [N]
        spanned = [self.coordinates.index(c) for c in table.coordinates]  # the table's coordinates in x
        return self._interpolators[name](x[:, spanned])

    # ================================================================== params
    def init_params(self, *, device="cpu", dtype=torch.float32) -> dict[str, torch.nn.Parameter]:
        """The spec's trainable scalars (``param``), at their initial values."""
        return {name: torch.nn.Parameter(torch.tensor(value, dtype=dtype, device=device))
                for name, value in self.ir.params}

    # ================================================================== residuals and losses
    def residuals(self, model, points: Points, params: dict[str, torch.Tensor] | None = None, *,
                  engine: str | None = None, joint: bool = False) -> dict[str, torch.Tensor]:
        """condition -> residuals [N, n_components] on its points (``engine``: the derivative engine,
        default the spec's): one network pass per point set, or (``joint``) per entry of `passes`, the sets a
        pool joins in one pass (the same values to rounding)."""
        params = params or {}
        if not joint:
            return {condition: r for index in self.by_set
                    for condition, r in self.set_residuals(index, model, points.sets[index], params,
                                                           engine=engine).items()}
        return {condition: r for k, (indices, _) in enumerate(self.passes)
                for condition, r in self.pass_residuals(k, model, [points.sets[i] for i in indices], params,
                                                        engine=engine).items()}

    def pass_residuals(self, k: int, model, sets: list[TorchPointSet], params: dict[str, torch.Tensor], *,
                       engine: str | None = None) -> dict[str, torch.Tensor]:
        """condition -> residuals of the sets of ``passes[k]`` (their points ``sets``, in its order) by one network
        pass."""
        indices, plan = self.passes[k]
        if len(indices) == 1:
            return self.set_residuals(indices[0], model, sets[0], params, engine=engine)
        return self._joint_residuals(model, indices, sets, plan, params, engine)

    def _passes(self, grouping: ir.Grouping, needs: dict[int, set]) -> list[tuple[tuple[int, ...], DerivativePlan]]:
        """`passes`: the compiled sets joined where one pool of ``grouping`` holds conditions of several."""
        group = {index: index for index in self.by_set}  # set -> a representative (union-find)

        def root(index: int) -> int:
            while group[index] != index:
                index = group[index]
            return index

        for task in grouping.tasks:
            for _, atom in task.terms:
                if isinstance(atom, ir.PoolLoss):
                    joined = [root(self.condition_kernels[c].set_index) for c in atom.conditions
                              if c in self.condition_kernels]
                    for other in joined[1:]:
                        group[other] = joined[0]
        members: dict[int, list[int]] = {}
        for index in self.by_set:
            members.setdefault(root(index), []).append(index)
        return [(tuple(indices), self.plans[indices[0]] if len(indices) == 1 else
                 DerivativePlan.build(set().union(*(needs[i] for i in indices)), self.fields, self.coordinates))
                for indices in members.values()]

    def set_residuals(self, index: int, model, s: TorchPointSet, params: dict[str, torch.Tensor], *,
                      engine: str | None = None) -> dict[str, torch.Tensor]:
        """condition -> residuals [N, n_components] of the conditions on point set ``index`` (points ``s``)."""
        plan = self.plans[index]
        values = self.derivatives(model, plan, s.x, engine=engine)
        partner_values = self.derivatives(model, plan, s.partner, engine=engine) if s.partner is not None else None
        return self._residuals_of_set(index, s, values, partner_values, params)

    def all_set_residuals(self, model, sets: list[TorchPointSet], params: dict[str, torch.Tensor], *,
                          engine: str | None = None) -> dict[str, torch.Tensor]:
        """condition -> residuals [N, n_components] of every condition, ``sets`` the points of ``by_set``'s sets in
        its order: what `set_residuals` gives set by set, with the network and its derivatives evaluated once, on
        every set's points and periodic partners together (the union of the sets' derivative plans).  One pass
        instead of one per set: fewer, larger kernels, and derivatives computed where no condition reads them
        (`FusedGradients` takes it with ``train stack = sets``: `stacking`)."""
        return self._joint_residuals(model, tuple(self.by_set), sets, self.union_plan, params, engine)

    def _joint_residuals(self, model, indices: tuple[int, ...], sets: list[TorchPointSet], plan: DerivativePlan,
                         params: dict[str, torch.Tensor], engine: str | None) -> dict[str, torch.Tensor]:
        """The residuals of the sets ``indices`` (points ``sets``) by one network pass of ``plan`` (their needs'
        union) over their points and periodic partners together."""
        blocks = [s.x for s in sets] + [s.partner for s in sets if s.partner is not None]  # points, then partners
        values = self.derivatives(model, plan, torch.cat(blocks), engine=engine)
        pieces = {key: value.split([len(b) for b in blocks]) for key, value in values.items()}  # key -> per block
        out, partner_block = {}, len(sets)
        for block, (index, s) in enumerate(zip(indices, sets)):
            needs = self.plans[index].needs
            partner_values = None
            if s.partner is not None:
                partner_values = {key: pieces[key][partner_block] for key in needs}
                partner_block += 1
            out.update(self._residuals_of_set(index, s, {key: pieces[key][block] for key in needs}, partner_values,
                                              params))
        return out

    def _residuals_of_set(self, index: int, s: TorchPointSet, values: dict, partner_values: dict | None,
                          params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """condition -> residuals of the conditions on set ``index`` from the derivative values at its points and
        (periodic sets) at their partners."""
        out = {}
        for ck in self.by_set[index]:
            r = self._evaluate(ck, s, s.x, values, params)
            if ck.periodic:
                r = r - self._evaluate(ck, s, s.partner, partner_values, params, partner=True)
            out[ck.condition] = r
        return out

    def stacking(self, device) -> str:
        """How steps on ``device`` stack their kernels (``train stack``; ``auto``: ``on`` on CUDA, else ``off``):
        * ``off``: one matrix product per derivative row, one network pass per point set, one pullback per task
          (on the CPU the fastest: PNd's compiled step 1.42 s against 1.65 s stacked, one thread);
        * ``on``: the forward engine's hidden layers take one product over the value and every derivative row
          (layout ``stack``, `pinnspec.forward`), and the compiled step pulls the tasks of a point set that feeds
          several back in one batched pass (`pinnspec.engine._compiled.FusedGradients`): fewer, larger kernels,
          the same arithmetic;
        * ``sets``: ``on``, and the compiled step evaluates the network once over every point set together
          (`all_set_residuals`) and pulls all m tasks back in one batched pass: 31-65 % of ``on``'s kernels for
          2.0-3.3 times its arithmetic and 1.8-3.1 times its memory traffic (PINNacle's cases: docs/results.md,
          "What limits the GPU run")."""
        if self.stack == "auto":
            return "on" if torch.device(device).type == "cuda" else "off"
        return self.stack

    def stacked(self, device) -> bool:
        """Whether steps on ``device`` stack the forward engine's rows (`stacking` ``on`` or ``sets``)."""
        return self.stacking(device) != "off"

    def derivatives(self, model, plan: DerivativePlan, x: torch.Tensor, *, engine: str | None = None) -> dict:
        """The values the plan needs, by the derivative engine (``engine``, default the spec's); of the network
        under a `HardConstrained` model where the residuals are rewritten for it."""
        engine = engine or self.engine
        model = self.network(model)
        # auto: forward propagation where it was measured to win: third and higher derivatives (1.6-3.2x),
        # and a plan with a linear operator (Burgers, u_t - nu u_xx one row: eager epoch 0.89 of the
        # hand-written one, against 1.05 with nested autograd, `pinnspec bench speed --threads 1`); with
        # plain second derivatives it tied nested autograd in time and held ~1.5x the memory
        wants_forward = engine == "forward" or (engine == "auto" and (plan.max_order >= 3 or bool(plan.operators)))
        if wants_forward:
            from ..forward import supports

            if supports(model):
                return forward_values(model, plan, x, layout="stack" if self.stacked(x.device) else "rows")
            if engine == "forward" and not self._notified:
                self._notified = True
                print(f"pinnspec: the forward derivative engine does not cover {type(model).__name__}; "
                      "using nested autograd", file=sys.stderr)
        return plan.evaluate(model(x), x)

    def _evaluate(self, ck: ConditionKernels, s: TorchPointSet, x, values, params, *, partner: bool = False
                  ) -> torch.Tensor:
        """``partner``: ``x`` are the periodic partners of the set's points (a table is read there)."""
        if not ck.per_face:
            return _columns(self._call(ck.kernels[0], x, values, params, s, ck, slice(None), partner))
        parts = [_columns(self._call(k, x, values, params, s, ck, rows, partner))
                 for k, rows in zip(ck.kernels, s.face_slices)]
        return torch.cat(parts, dim=0)

    @staticmethod
    def _call(kernel: Kernel, x, values, params, s: TorchPointSet, ck: ConditionKernels, rows: slice,
              partner: bool = False):
        args = []
        every = rows == slice(None)  # a value as it is: ``value[:]`` would be one more view and, backwards, a copy
        for inp in kernel.inputs:
            if inp.kind == "value":
                args.append(values[inp.key] if every else values[inp.key][rows])
            elif inp.kind == "coordinate":
                args.append(x[rows, inp.key])
            elif inp.kind == "param":
                args.append(params[inp.key])
            elif inp.kind == "normal":
                if s.normals is None:
                    raise ValueError(f"{ck.condition}: its kernel reads the outward normal, and its points carry "
                                     "none (point sets of a domain's boundary carry them: PointSet.normals)")
                args.append(s.normals[rows, inp.key])
            elif inp.kind == "table":
                if s.observed is None:
                    raise ValueError(f"{ck.condition}: its kernel reads the table '{inp.key}', and its points carry "
                                     "no table values (CompiledProblem.points interpolates them)")
                args.append(s.observed[rows, ck.point_columns.index(("table", inp.key, partner))])
            else:  # observed
                args.append(s.observed[rows, ck.observed_fields.index(inp.key)])
        return kernel.fn(*args)

    def initial_values(self, n: int, seed: int) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """field index -> (x [n, d], its value [n]) on the points of an initial condition that sets it
        (a component of the form FIELD = DATA), float64 on the CPU: what a physics-informed initialisation
        fits.  A component's form is read from its residual at constant fields (0, then each unit vector):
        it sets field f with data -r(0) where r(e_f) - r(0) = 1 and r(e_j) - r(0) = 0 for j != f."""
        out: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        rng = np.random.default_rng([int(seed), 7])
        params = {name: value.detach() for name, value in self.init_params(dtype=torch.float64).items()}
        fields = len(self.fields)

        def constant(values):
            row = torch.tensor(values, dtype=torch.float64)  # [F]
            return lambda x: x.sum(dim=1, keepdim=True) * 0 + row  # derivatives by x: 0

        for condition in self.ir.conditions:
            if condition.kind != "initial":
                continue
            points = sample_region(condition.region, self.point_plan.coordinates, n, "uniform", rng)
            if condition.name in self.left_out:  # drawn all the same: the next condition's points do not move
                continue
            ck = self.condition_kernels[condition.name]
            s = self._to_torch(ck.set_index, points, "cpu", torch.float64)
            at = {}
            for key, values in [("zero", [0.0] * fields)] + [(f, [float(f == j) for j in range(fields)])
                                                               for f in range(fields)]:
                with torch.enable_grad():
                    at[key] = self.set_residuals(ck.set_index, constant(values), s, params, engine="autograd")[
                        condition.name].detach()  # [n, components]
            for k in range(at["zero"].shape[1]):
                slopes = [at[f][:, k] - at["zero"][:, k] for f in range(fields)]  # [n] each
                unit = [f for f in range(fields) if torch.allclose(slopes[f], torch.ones_like(slopes[f]))]
                if len(unit) == 1 and all(torch.allclose(slopes[j], torch.zeros_like(slopes[j]))
                                          for j in range(fields) if j != unit[0]):
                    out.setdefault(unit[0], (s.x.detach(), -at["zero"][:, k]))
        return out

    def network(self, model):
        """The module whose outputs the residual kernels read: the network inside a `HardConstrained` model
        when this problem's residuals are rewritten for its constraints, else ``model``."""
        return model.net if self.enforces and isinstance(model, HardConstrained) else model

    def constraint_transform(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [N, d] -> (A [N, k], D [N, k]): the extensions and distances of the k constrained fields."""
        columns = [x[:, i] for i in range(self.dim)]
        values = [v.expand(len(x)) if v.dim() == 0 else v for v in self._constraint_kernel.fn(*columns)]
        values = [torch.as_tensor(v, dtype=x.dtype, device=x.device).expand(len(x)) for v in values]
        return torch.stack(values[0::2], dim=1), torch.stack(values[1::2], dim=1)

    def constrained(self, net):
        """``net`` with the spec's hard constraints applied to its outputs (`HardConstrained`), or ``net``."""
        if not self.written.hard_constraints:
            return net
        columns = tuple(self.fields.index(h.field) for h in self.written.hard_constraints)
        return HardConstrained(net, self.constraint_transform, columns)

    def residual_magnitudes(self, index: int, x: np.ndarray, model, params: dict[str, torch.Tensor] | None = None,
                            *, chunk: int = RESIDUAL_CHUNK, engine: str | None = None) -> np.ndarray:
        """|r| ``[n]`` float64 at the points ``x`` ``[n, d]`` of point set ``index``: the root of the sum of
        squares of every residual component of every condition on the set, by ``model`` (its device and
        dtype) in chunks of ``chunk`` points.  Autograd runs for the derivatives in x (the model's
        parameters are not changed and no gradient is kept); the values are detached."""
        x = np.asarray(x, dtype=np.float64)  # [n, d]
        weight = next(iter(model.parameters()), None) if isinstance(model, torch.nn.Module) else None
        device, dtype = (weight.device, weight.dtype) if weight is not None else ("cpu", torch.float32)
        params = params or {}
        parts = []
        for start in range(0, len(x), chunk):
            s = self._to_torch(index, PointSet(x[start:start + chunk]), device, dtype)
            with torch.enable_grad():
                residuals = self.set_residuals(index, model, s, params, engine=engine)
            squares = sum(self.point_squares(r.detach()) for r in residuals.values())  # [chunk]
            parts.append(squares.sqrt().to(torch.float64).cpu().numpy())
        return np.concatenate(parts) if parts else np.zeros(0)

    def residual_function(self, model, params: dict[str, torch.Tensor] | None = None):
        """``residual(set_index, x [n, d]) -> |r| [n]`` (:meth:`residual_magnitudes`) of ``model`` as it is
        when called: what :meth:`sample` gives an adaptive sampler."""
        return lambda index, x: self.residual_magnitudes(index, x, model, params)

    @staticmethod
    def point_squares(residuals: torch.Tensor) -> torch.Tensor:
        """[N, C] -> [N]: the per-point sum of squared components."""
        return (residuals * residuals).sum(dim=1)  # its backward two products, cheaper than square's pow

    def condition_sum(self, condition: str, residuals: torch.Tensor, x: torch.Tensor, point_weights=None,
                      causal_weights: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """The sum of squared residuals [N, C] of ``condition`` at its points x [N, d], the numerator of its
        mean; for a causally weighted condition, N times its causal loss (`CausalChunks`), so that dividing
        by the count gives that loss.  ``point_weights(condition, squares [N]) -> multipliers [N]`` (detached)
        scales each point's square first (residual-based attention: the trainer's `_attend`);
        ``causal_weights``: condition -> fixed chunk weights [M] in place of those of the residuals now."""
        if point_weights is None and condition not in self.causal and residuals.shape[1] == 1:
            return (residuals * residuals).sum()  # one component: the per-point sum over it is the square itself
        squares = self.point_squares(residuals)  # [N]
        if point_weights is not None:
            squares = squares * point_weights(condition, squares.detach())
        causal = self.causal.get(condition)
        if causal is None:
            return squares.sum()
        return causal.loss(squares, x, (causal_weights or {}).get(condition)) * squares.shape[0]

    def causal_weights(self, model, points: Points, params: dict[str, torch.Tensor] | None = None, *,
                       engine: str | None = None) -> dict[str, torch.Tensor]:
        """condition -> its causal weights w [M] (detached) on ``points``, for every causally weighted one."""
        out = {}
        for index, cks in self.by_set.items():
            names = [ck.condition for ck in cks if ck.condition in self.causal]
            if not names:
                continue
            s = points.sets[index]
            residuals = self.set_residuals(index, model, s, params or {}, engine=engine)
            for name in names:
                causal = self.causal[name]
                out[name] = causal.weights(causal.chunk_losses(self.point_squares(residuals[name].detach()), s.x))
        return out

    def losses(self, model, points: Points, params: dict[str, torch.Tensor] | None = None,
               grouping: str | None = None, *, engine: str | None = None, point_weights=None,
               causal_weights: dict[str, torch.Tensor] | None = None, joint: bool = False) -> Losses:
        """The m task losses (and every condition's) of ``grouping`` on ``points``, eagerly (``engine``: the
        derivative engine, default the spec's; ``point_weights``, ``causal_weights``: see `condition_sum`;
        ``joint``: see `residuals`)."""
        residuals = self.residuals(model, points, params, engine=engine, joint=joint)
        sums = {name: self.condition_sum(name, r, points.sets[self.condition_kernels[name].set_index].x,
                                         point_weights, causal_weights)
                for name, r in residuals.items()}
        return self.with_model_terms(self.losses_from_sums(sums, self.counts(points), grouping), model)

    @staticmethod
    def model_terms(model) -> list:
        """The network's own loss terms (``loss_term()`` of its modules: `adaptive_mlp`'s slope recovery)."""
        terms = (m.loss_term() for m in model.modules() if hasattr(m, "loss_term")) if isinstance(
            model, torch.nn.Module) else ()
        return [t for t in terms if t is not None]

    def with_model_terms(self, losses: Losses, model) -> Losses:
        """``losses`` with the network's own loss terms added to the first task (the conditions unchanged)."""
        terms = self.model_terms(model)
        if not terms:
            return losses
        tasks = [losses.task_list[0] + sum(terms)] + list(losses.task_list[1:])
        return Losses(tasks, losses.conditions, losses.grouping)

    def grouping(self, name: str | None = None) -> ir.Grouping:
        """The spec's grouping ``name`` (None: the default), when every condition it uses is compiled."""
        g = self.ir.grouping(name)
        missing = [c for task in g.tasks for c in task.conditions if c in self.left_out]
        if missing:
            raise ValueError(f"grouping '{g.name}' uses {', '.join(dict.fromkeys(missing))}, which this problem "
                             "left out (it was compiled for another grouping's conditions)")
        return g

    def counts(self, points: Points) -> dict[str, int]:
        """condition -> the divisor of its mean: its set's points (on a shard, the whole set's)."""
        return {name: points.sets[ck.set_index].count for name, ck in self.condition_kernels.items()}

    def losses_from_sums(self, sums: dict[str, torch.Tensor], counts: dict[str, int], grouping: str | None
                         ) -> Losses:
        """The losses of ``grouping`` from every condition's sum of squared residuals and its divisor."""
        # sum / count rather than mean: on a shard, count is the whole set's (see `TorchPointSet.count`)
        conditions = {name: sums[name] / counts[name] for name in sums}
        g = self.grouping(grouping)
        tasks = []
        for task in g.tasks:
            terms = []
            for weight, atom in task.terms:
                if isinstance(atom, ir.PoolLoss):
                    value = added_up(sums[c] for c in atom.conditions) / sum(counts[c] for c in atom.conditions)
                else:
                    value = conditions[atom.condition]
                terms.append(value if weight == 1 else weight * value)
            tasks.append(added_up(terms))
        return Losses(tasks, conditions, g.name)

    def task_coefficients(self, counts: dict[str, int], grouping: str | None = None) -> tuple[dict[str, float], ...]:
        """Per task of ``grouping``, {condition: c}: the task's loss is the sum over its conditions of c times the
        condition's sum of squared residuals.  `losses_from_sums` is linear in the sums; these are its partial
        derivatives, read off by evaluating it on unit sums (so the weights, means and pools are written once)."""
        key = (grouping, tuple(counts.items()))
        if key not in self._coefficients:
            rows: list[dict[str, float]] = [{} for _ in self.grouping(grouping).tasks]
            for condition in counts:
                unit = {name: float(name == condition) for name in counts}
                for row, value in zip(rows, self.losses_from_sums(unit, counts, grouping).task_list):
                    if value:
                        row[condition] = float(value)
            self._coefficients[key] = tuple(rows)
        return self._coefficients[key]

    def tasks_of_sets(self, grouping: str | None = None) -> tuple[tuple[int, ...], ...]:
        """The tasks each point set (in ``by_set`` order) feeds in ``grouping``, in task order (a set that
        feeds none: ()).  A task's row of G is the sum of its sets' gradients of that task's loss."""
        if grouping not in self._feeds:
            feeds: dict[int, set[int]] = {index: set() for index in self.by_set}
            for i, task in enumerate(self.grouping(grouping).tasks):
                for _, atom in task.terms:
                    for c in (atom.conditions if isinstance(atom, ir.PoolLoss) else (atom.condition,)):
                        feeds[self.condition_kernels[c].set_index].add(i)
            self._feeds[grouping] = tuple(tuple(sorted(feeds[index])) for index in self.by_set)
        return self._feeds[grouping]

    # ================================================================== reports
    def reports(self, model, params: dict[str, torch.Tensor | float] | None = None, *, device=None,
                dtype=None) -> dict[str, float]:
        """Every ``report`` of the spec for ``model`` (a network, or any function of ``[N, d]`` points ->
        ``[N, n_fields]`` such as :meth:`exact`), in file order: ``{name: value}`` (an empty dict for a spec
        without reports).  ``params``: the trained ``param`` values by name (tensors or numbers; default the
        spec's initial values).  The integrals are quadratures (docs/reference.md, ``report``) evaluated in the
        model's dtype on its device (``device``, ``dtype`` override them; a plain function: float64 on the
        CPU), summed in float64.  The model is not changed; its mode (train/eval) is left as it is."""
        if self._report_evaluator is None:
            self._report_evaluator = ReportEvaluator(self)
        return self._report_evaluator.evaluate(model, params, device=device, dtype=dtype)

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
            self._generator = REFERENCES.get(call.name)(**call.options)
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
        """(points [N, d], values [N, F]) of a reference file (CSV, NPZ or a COMSOL text export, its columns
        matched to the coordinates and fields by name, else by order), read once."""
        if self._file_rows is None:
            path = self.point_plan.data_path(ir.DataPoints(self.ir.reference.path, self.fields))
            self._file_rows = load_reference(path, self.ir.coordinates, self.fields)
        return self._file_rows

    def test_points(self) -> np.ndarray:
        """The test points [N, d] (fixed for every seed; see docs/reference.md)."""
        if self._test is None:
            t = self.ir.test
            coords = self.ir.coordinates
            domain = self.ir.domain
            if t.grid:
                self._test = grid_points(coords, t.grid)
                if domain is not None:
                    self._test = inside_domain(domain, self._test)
            elif t.uniform:
                self._test = uniform_interior_points(coords, t.uniform)
            elif t.count:
                self._test = self._box_or_domain_points(t.count, TEST_STREAM)
            elif isinstance(self.ir.reference, ir.GeneratedReference):
                self._test = np.asarray(self._generator_instance().grid(), dtype=np.float64)
            elif isinstance(self.ir.reference, ir.FileReference):
                self._test = self._file_reference()[0]
            else:
                self._test = self._box_or_domain_points(DEFAULT_TEST_POINTS, TEST_STREAM)
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
                self._validation = self._box_or_domain_points(v.count, VALIDATION_STREAM)
        return self._validation

    def _box_or_domain_points(self, n: int, stream: int) -> np.ndarray:
        """``n`` LHS points of a fixed stream in the box, or inside the domain where the spec declares one."""
        if self.ir.domain is not None:
            return domain_points(self.ir.domain, self.ir.coordinates, n, np.random.default_rng(stream))
        return box_points(self.ir.coordinates, n, np.random.default_rng(stream))

    # ================================================================== inspection
    def describe_plan(self) -> str:
        lines = [f"derivative plan for problem {self.ir.name} (coordinates: {', '.join(self.coordinates)})"]
        for s in self.point_plan.sets:
            count = "all rows" if s.count is None else f"{s.count} points"
            names = [c for c in s.conditions if c not in self.left_out]
            lines.append(f"set {s.index}: {s.region}, {count} -> {', '.join(names) or 'nothing (left out)'}")
            for line in self.plans[s.index].describe():
                lines.append(f"  {line}")
            if isinstance(s.region, ir.PeriodicPairs):
                lines.append("  (evaluated on both ends of the periodic pairs)")
        if self.left_out:
            lines.append(f"left out (in no task of the grouping): {', '.join(self.left_out)}")
        return "\n".join(lines)


def _columns(outputs) -> torch.Tensor:
    """A kernel's outputs (each [N]) as the columns of [N, C]; a single one as a view of it (``stack`` copies)."""
    return outputs[0].unsqueeze(1) if len(outputs) == 1 else torch.stack(outputs, dim=1)


def _lookup_rows(pts: np.ndarray, vals: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Reference values at rows of a reference file (exact match, to 1e-9)."""
    index = {tuple(np.round(p, 9)): i for i, p in enumerate(pts)}
    try:
        rows = [index[tuple(np.round(p, 9))] for p in x]
    except KeyError:
        raise ValueError("a file reference is known only at the file's own points") from None
    return vals[rows]
