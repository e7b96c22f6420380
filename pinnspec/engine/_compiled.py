"""The losses under torch.compile: per point set units, and the losses with G as one function.

Both need the forward derivative engine (torch.compile does not support the double backward of nested
autograd) and pinnspec's MLP (``pinnspec.forward.supports``).  The execution plan (`_execute`) decides
whether they are used; this module only builds and runs them.
"""

from __future__ import annotations

import functools
import math

import torch

from .._compiling import aot_cacheable, compiled, own_code
from ..compiler import CompiledProblem, Losses, Points, TorchPointSet
from ..forward import forward_values, plain_tanh

__all__ = ["BatchedGradients", "CompiledLosses", "FusedGradients", "set_sums"]


def set_sums(problem: CompiledProblem, index: int, model, x, partner, observed, face_slices, normals, params
             ) -> tuple[torch.Tensor, ...]:
    """The per-condition sums of squared residuals on one point set: the unit ``compile = on`` compiles
    (forward derivative propagation, residual kernels, squares, sums; its backward compiles with it).
    ``normals`` [N, d_space]: the outward normals on parts of a domain's boundary, else None."""
    s = TorchPointSet(x, face_slices, partner, observed, normals=normals)
    residuals = problem.set_residuals(index, model, s, params, engine="forward")
    return tuple(problem.condition_sum(name, r, x) for name, r in residuals.items())


class CompiledLosses:
    """The torch.compile'd losses of one problem and model, in ``mode`` ("default" or, for CUDA graphs,
    "reduce-overhead"): one unit per point set (with its backward), and `FusedGradients` compiled whole."""

    def __init__(self, problem: CompiledProblem, model, mode: str):
        self.problem, self.model, self.mode = problem, model, mode
        # one compiled unit per point set, each with its own code object: torch.compile keeps its cache
        # (and its limit of 8 recompiles) per code object, and many problems and sets share a process
        self.units = {index: compiled(own_code(set_sums), mode=mode, dynamic=False)
                      for index in problem.by_set}
        self.fused_unit = compiled(own_code(FusedGradients.__call__), mode=mode, dynamic=False)
        self.summed_unit = compiled(own_code(FusedGradients.summed), mode=mode, dynamic=False)
        self._fused: dict[str | None, FusedGradients] = {}  # grouping -> the last one built
        #: the network adds its own loss term (outside the per-set graphs): G does not come from one pass
        self.model_term = bool(problem.model_terms(model))
        # build the derivative programs (memoised plain-Python objects) before tracing: a program built
        # during the first trace leaves a guard on the memo dict that the second call fails, and every
        # set would be compiled twice (and checked against two cache entries at every call)
        parameter = next(model.parameters())
        with torch.no_grad():
            for plan in (*(problem.plans[index] for index in problem.by_set), problem.union_plan):
                forward_values(problem.network(model), plan, parameter.new_zeros(2, problem.dim))

    def losses(self, points: Points, params: dict[str, torch.Tensor], grouping: str | None) -> Losses:
        """The losses of ``grouping`` by the per-set units (inputs detached: a compiled backward would
        otherwise also compute the unneeded gradients with respect to the points)."""
        problem, sums = self.problem, {}
        for index, cks in problem.by_set.items():
            s = points.sets[index]
            partner = s.partner.detach() if s.partner is not None else None
            with aot_cacheable():
                out = self.units[index](problem, index, self.model, s.x.detach(), partner, s.observed,
                                        s.face_slices, s.normals, params)
            sums.update(zip((ck.condition for ck in cks), out))
        return problem.with_model_terms(problem.losses_from_sums(sums, problem.counts(points), grouping), self.model)

    def fused(self, params: dict[str, torch.Tensor], grouping: str | None) -> "FusedGradients | None":
        """The grouping's `FusedGradients` (built once), or None where the network adds its own loss term
        (outside the per-set graphs)."""
        if self.model_term:
            return None
        fused = self._fused.get(grouping)
        if fused is None or fused.param_names != list(params):
            fused = self._fused[grouping] = FusedGradients(self.problem, self.model, params, grouping)
        return fused

    def losses_and_gradients(self, points: Points, params: dict[str, torch.Tensor], grouping: str | None,
                             theta: torch.Tensor) -> tuple[Losses, torch.Tensor] | None:
        """The losses and G [m, p] by one compiled graph; None where the network adds its own loss term.
        ``theta`` [p]: the model's parameters then ``params``' values, flattened in that order (the trainer's)."""
        fused = self.fused(params, grouping)
        if fused is None:
            return None
        inputs, counts = fused.inputs(points)
        with aot_cacheable():
            tasks, conditions, G = self.fused_unit(fused, theta.detach(), inputs, counts)  # [m], [C], [m, p]
        return fused.losses(tasks, conditions), G

    def summed(self, points: Points, params: dict[str, torch.Tensor], grouping: str | None, theta: torch.Tensor,
               weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """(tasks [m], conditions [C], the gradient of sum_i weights_i tasks_i [p]) by one compiled graph
        (`FusedGradients.summed`: one pullback per point set), what a quasi-Newton stage's objective takes;
        None where the network adds its own loss term."""
        fused = self.fused(params, grouping)
        if fused is None:
            return None
        inputs, counts = fused.inputs(points)
        with aot_cacheable():
            return self.summed_unit(fused, theta.detach(), inputs, counts, weights)


class _ModelUnit(torch.nn.Module):
    """The model as the one submodule of a module whose call is ``sums(model, *args)``: what
    `torch.func.functional_call` runs with the weights read from theta."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        # the weights' names and shapes, read once (not walked through the modules at every step)
        self.names = [name for name, _ in model.named_parameters()]
        self.shapes = [tuple(t.shape) for t in model.parameters()]

    def forward(self, sums, *args):
        return sums(self.model, *args)


def _one_set_sums(model, problem: CompiledProblem, index: int, args: tuple, params) -> tuple[torch.Tensor, ...]:
    """Set ``index``'s per-condition sums (`set_sums`), ``args`` its entry of `FusedGradients.inputs`."""
    x, partner, observed, face_slices, normals = args
    return set_sums(problem, index, model, x, partner, observed, face_slices, normals, params)


def _one_pass_sums(model, problem: CompiledProblem, k: int, inputs: list[tuple], params) -> tuple[torch.Tensor, ...]:
    """The per-condition sums of the sets of ``problem.passes[k]`` (``inputs``: their entries of
    `FusedGradients.inputs`, in its order), the network run once over their points (`pass_residuals`)."""
    sets = [TorchPointSet(x, face_slices, partner, observed, normals=normals)
            for x, partner, observed, face_slices, normals in inputs]
    residuals = problem.pass_residuals(k, model, sets, params, engine="forward")
    return tuple(problem.condition_sum(ck.condition, residuals[ck.condition], s.x)
                 for s, index in zip(sets, problem.passes[k][0]) for ck in problem.by_set[index])


def _all_sets_sums(model, problem: CompiledProblem, inputs: list[tuple], params) -> tuple[torch.Tensor, ...]:
    """Every condition's sum of squared residuals (sets in ``by_set`` order, each set's conditions in order), the
    network run once over every set's points (`CompiledProblem.all_set_residuals`)."""
    sets = [TorchPointSet(x, face_slices, partner, observed, normals=normals)
            for x, partner, observed, face_slices, normals in inputs]
    residuals = problem.all_set_residuals(model, sets, params, engine="forward")
    return tuple(problem.condition_sum(ck.condition, residuals[ck.condition], s.x)
                 for s, cks in zip(sets, problem.by_set.values()) for ck in cks)


class FusedGradients:
    """The task losses [m], the condition losses [C] (``condition_kernels`` order) and G [m, p] of one
    grouping, by one pass over every point set: a pure function of theta and the points.

    The conditions' sums of squared residuals come through `torch.func.vjp`, which also gives their pullback.
    A task's loss is linear in the sums (`CompiledProblem.task_coefficients`), so task i's row of G is the
    pullback of task i's coefficients.  Two forms, same G (`CompiledProblem.stacking`):
    * one network pass per point set and, per task the set feeds, one pullback (``stack = off``, the faster on
      the CPU) or (``on``) one `torch.func.vmap`'d pullback of all of them, as many kernels as one pullback
      (NS2d-C's adam step, counted on the CPU: 144 kernels against 227); a row of G is the sum of its sets'
      shares;
    * (``sets``) one network pass over every set's points together (`CompiledProblem.all_set_residuals`) and
      one vmapped pullback of the m tasks' cotangents: G whole, in 31-65 % of ``on``'s kernels (PINNacle's
      cases), with m times the backward pass's arithmetic.
    The gradients are part of the same function, so torch.compile makes losses and G one graph with no
    autograd engine between them (and the one-graph step adds the update chain to that graph)."""

    def __init__(self, problem: CompiledProblem, model, params: dict[str, torch.Tensor], grouping: str | None):
        self.problem = problem
        self.unit = _ModelUnit(model)
        self.grouping = grouping
        self.param_names = list(params)
        self.shapes = self.unit.shapes + [tuple(t.shape) for t in params.values()]
        self.sizes = [math.prod(shape) for shape in self.shapes]
        self.m = len(problem.grouping(grouping).tasks)
        #: per set (``by_set`` order): its conditions, and the tasks it feeds
        self.conditions = [[ck.condition for ck in cks] for cks in problem.by_set.values()]
        self.feeds = problem.tasks_of_sets(grouping)

    def inputs(self, points: Points) -> tuple[list[tuple], dict[str, int]]:
        """The per-set arguments (points detached: nothing differentiates with respect to them) and the
        divisors of the means."""
        sets = (points.sets[index] for index in self.problem.by_set)
        inputs = [(s.x.detach(), None if s.partner is None else s.partner.detach(), s.observed, s.face_slices,
                   s.normals) for s in sets]
        counts = self.problem.counts(points)
        # the coefficients for these counts, cached here and not first while tracing (a cache filled inside
        # the traced call would leave a guard that the next call fails, and the graph would compile twice)
        self.problem.task_coefficients(counts, self.grouping)
        return inputs, counts

    def losses(self, tasks: torch.Tensor, conditions: torch.Tensor) -> Losses:
        return Losses(list(tasks.unbind()), dict(zip(self.problem.condition_kernels, conditions.unbind())),
                      self.problem.ir.grouping(self.grouping).name, stacked=tasks)

    def __call__(self, theta: torch.Tensor, inputs: list[tuple], counts: dict[str, int]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        coefficients = self.problem.task_coefficients(counts, self.grouping)  # per task: {condition: c}
        stacking = self.problem.stacking(theta.device)
        if stacking == "sets":
            sums, G = self._merged(theta, inputs, coefficients)
        else:
            sums, G = self._per_set(theta, inputs, coefficients, batched=stacking == "on")
        return (*self._stacked_losses(sums, counts), G)

    def summed(self, theta: torch.Tensor, inputs: list[tuple], counts: dict[str, int], weights: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The task losses [m], the condition losses [C] and the gradient [p] of f = sum_i weights_i L_i
        (``weights`` [m]): f is linear in the conditions' sums too, so its gradient is one pullback per point
        set of the weighted coefficients (not m rows of G summed)."""
        coefficients = self.problem.task_coefficients(counts, self.grouping)  # per task: {condition: c}
        combined = {}  # condition -> sum_i weights_i c_i (a 0-d tensor)
        for i, row in enumerate(coefficients):
            for condition, c in row.items():
                term = weights[i] * c
                combined[condition] = term if condition not in combined else combined[condition] + term
        if self.problem.stacking(theta.device) == "sets":
            sums, g = self._merged(theta, inputs, (combined,))
            g = g[0]
        else:
            sums, g = self._per_pass(theta, inputs, combined)
        return (*self._stacked_losses(sums, counts), g)

    def _per_pass(self, theta: torch.Tensor, inputs: list[tuple], coefficients: dict
                  ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """(condition -> its sum, the gradient [p] of sum_c coefficients[c] sum_c): one network pass and one
        pullback per entry of `CompiledProblem.passes`, the sets one pool joins together (as the eager summed
        step evaluates them), each other set alone."""
        position = {index: k for k, index in enumerate(self.problem.by_set)}  # set -> its entry of ``inputs``
        sums, rows = {}, []
        for k, (indices, _) in enumerate(self.problem.passes):
            names = [name for index in indices for name in self.conditions[position[index]]]
            sums_of_pass = functools.partial(self._call, _one_pass_sums, k, [inputs[position[i]] for i in indices])
            if not any(self.feeds[position[index]] for index in indices):  # no task uses them: their losses only
                sums.update(zip(names, sums_of_pass(theta.detach())))
                continue
            values, pullback = torch.func.vjp(sums_of_pass, theta)
            sums.update(zip(names, values))
            rows.append(pullback(tuple(_filled(v, coefficients.get(c, 0.0)) for v, c in zip(values, names)))[0])
        return sums, rows[0] if len(rows) == 1 else torch.stack(rows).sum(dim=0)  # [p]

    def _stacked_losses(self, sums: dict[str, torch.Tensor], counts: dict[str, int]
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """(tasks [m], conditions [C]) from the conditions' sums (detached)."""
        losses = self.problem.losses_from_sums({name: value.detach() for name, value in sums.items()}, counts,
                                               self.grouping)
        tasks = torch.stack(losses.task_list)  # [m]
        conditions = torch.stack([losses.conditions[name] for name in self.problem.condition_kernels])  # [C]
        return tasks, conditions

    def _per_set(self, theta: torch.Tensor, inputs: list[tuple], coefficients, batched: bool
                 ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """(condition -> its sum, G [m, p]): a network pass per set, a pullback per task it feeds (``batched``:
        one vmapped pullback of a set's tasks).  ``coefficients``: per task {condition: c} (a number)."""
        sums, shares = {}, [[] for _ in coefficients]  # condition -> its sum; task -> its sets' rows [p]
        for index, names, fed, args in zip(self.problem.by_set, self.conditions, self.feeds, inputs):
            sums_of_set = functools.partial(self._call, _one_set_sums, index, args)
            if not fed:  # conditions no task of this grouping uses: their losses only
                sums.update(zip(names, sums_of_set(theta.detach())))
                continue
            values, pullback = torch.func.vjp(sums_of_set, theta)
            sums.update(zip(names, values))
            # per task, its coefficients on the set's conditions, filled on the device (no copy from the host)
            cotangents = [[_filled(v, coefficients[i].get(c, 0.0)) for v, c in zip(values, names)] for i in fed]
            if batched and len(fed) > 1:  # one backward pass with k cotangents: fewer, larger kernels
                columns = tuple(torch.stack(column) for column in zip(*cotangents))  # per condition [k]
                rows = torch.func.vmap(pullback)(columns)[0].unbind(0)  # k x [p]
            else:
                rows = [pullback(tuple(cotangent))[0] for cotangent in cotangents]  # k x [p]
            for i, row in zip(fed, rows):
                shares[i].append(row)
        G = torch.stack([rows[0] if len(rows) == 1 else torch.stack(rows).sum(dim=0) for rows in shares])  # [m, p]
        return sums, G

    def _merged(self, theta: torch.Tensor, inputs: list[tuple], coefficients
                ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """(condition -> its sum, G [k, p]): one network pass over every set, one pullback of the k tasks'
        cotangents (vmapped where k > 1).  ``coefficients``: per task {condition: c} (a number or a 0-d tensor)."""
        names = [name for names in self.conditions for name in names]
        values, pullback = torch.func.vjp(functools.partial(self._call, _all_sets_sums, inputs), theta)
        if len(coefficients) == 1:  # the summed step's one row
            return dict(zip(names, values)), pullback(tuple(_filled(v, coefficients[0].get(c, 0.0))
                                                            for v, c in zip(values, names)))[0][None]  # [1, p]
        # per condition, the k tasks' coefficients [k], filled on the device (no copy from the host)
        columns = tuple(torch.stack([_filled(v, row.get(c, 0.0)) for row in coefficients])
                        for v, c in zip(values, names))
        return dict(zip(names, values)), torch.func.vmap(pullback)(columns)[0]  # [k, p]

    def _call(self, sums, *args) -> tuple[torch.Tensor, ...]:
        """``sums(model, problem, *args[:-1], params)``, the network's weights and the params read from
        ``theta = args[-1]`` [p] (through `torch.func.functional_call`)."""
        *args, theta = args
        pieces = [piece.view(shape) for piece, shape in zip(theta.split(self.sizes), self.shapes)]
        names = self.unit.names
        weights = {"model." + name: piece for name, piece in zip(names, pieces)}
        params = dict(zip(self.param_names, pieces[len(names):]))
        return tuple(torch.func.functional_call(self.unit, weights, (sums, self.problem, *args, params)))


def _filled(like: torch.Tensor, value) -> torch.Tensor:
    """``like``'s shape and dtype filled with ``value`` (a number, or a 0-d tensor), on its device."""
    return torch.full_like(like, value) if isinstance(value, (int, float)) else value.to(like.dtype).expand_as(like)


class BatchedGradients:
    """The task losses [R, m], the condition losses [R, C] and G [R, m, p] of R models of one problem on the same
    points, by one compiled graph: `FusedGradients` vmapped over the models' parameters (`torch.func.vmap`), so
    each layer of the R networks is one batched matrix product and every kernel serves all R models.  ``fused``:
    built on any one of the models (its weights are read from ``thetas``, never from the module)."""

    def __init__(self, fused: FusedGradients, mode: str):
        self.fused, self.mode = fused, mode
        self.compiled = compiled(own_code(_vmapped), mode=mode, dynamic=False)

    def __call__(self, thetas: torch.Tensor, points: Points) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``thetas`` [R, p]: each model's parameters, flattened as the trainer flattens them."""
        inputs, counts = self.fused.inputs(points)
        with plain_tanh():
            return self.compiled(self.fused, thetas.detach(), inputs, counts)


def _vmapped(fused: FusedGradients, thetas: torch.Tensor, inputs: list[tuple], counts: dict[str, int]):
    return torch.func.vmap(fused, in_dims=(0, None, None))(thetas, inputs, counts)  # [R, m], [R, C], [R, m, p]
