"""The losses under torch.compile: per point set units, and the losses with G as one function.

Both need the forward derivative engine (torch.compile does not support the double backward of nested
autograd) and pinnspec's MLP (``pinnspec.forward.supports``).  The execution plan (`_execute`) decides
whether they are used; this module only builds and runs them.
"""

from __future__ import annotations

import math

import torch

from .._compiling import aot_cacheable, own_code
from ..compiler import CompiledProblem, Losses, Points, TorchPointSet
from ..forward import forward_values

__all__ = ["CompiledLosses", "FusedGradients", "set_sums"]


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
        self.units = {index: torch.compile(own_code(set_sums), mode=mode, dynamic=False, fullgraph=True)
                      for index in problem.by_set}
        self.fused_unit = torch.compile(own_code(FusedGradients.__call__), mode=mode, dynamic=False,
                                        fullgraph=True)
        self._fused: dict[str | None, FusedGradients] = {}  # grouping -> the last one built
        #: the network adds its own loss term (outside the per-set graphs): G does not come from one pass
        self.model_term = bool(problem.model_terms(model))
        # build the derivative programs (memoised plain-Python objects) before tracing: a program built
        # during the first trace leaves a guard on the memo dict that the second call fails, and every
        # set would be compiled twice (and checked against two cache entries at every call)
        parameter = next(model.parameters())
        with torch.no_grad():
            for index in problem.by_set:
                forward_values(problem.network(model), problem.plans[index], parameter.new_zeros(2, problem.dim))

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
        """The grouping's `FusedGradients` (built once), or None where a set feeds two tasks or the network adds
        its own loss term (outside the per-set graphs)."""
        owners = self.problem.task_of_sets(grouping)
        if owners is None or self.model_term:
            return None
        fused = self._fused.get(grouping)
        if fused is None or fused.param_names != list(params):
            fused = self._fused[grouping] = FusedGradients(self.problem, self.model, params, grouping, owners)
        return fused

    def losses_and_gradients(self, points: Points, params: dict[str, torch.Tensor], grouping: str | None,
                             theta: torch.Tensor) -> tuple[Losses, torch.Tensor] | None:
        """The losses and G [m, p] by one compiled graph; None where a set feeds two tasks.  ``theta`` [p]:
        the model's parameters then ``params``' values, flattened in that order (the trainer's)."""
        fused = self.fused(params, grouping)
        if fused is None:
            return None
        inputs, counts = fused.inputs(points)
        with aot_cacheable():
            tasks, conditions, G = self.fused_unit(fused, theta.detach(), inputs, counts)  # [m], [C], [m, p]
        return fused.losses(tasks, conditions), G


class _ModelUnit(torch.nn.Module):
    """The model as the one submodule of a module whose call is one set's `set_sums`: what
    `torch.func.functional_call` runs with a set's own copy of the weights."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        # the weights' names and shapes, read once (not walked through the modules at every step)
        self.names = [name for name, _ in model.named_parameters()]
        self.shapes = [tuple(t.shape) for t in model.parameters()]

    def forward(self, problem, index, x, partner, observed, face_slices, normals, params):
        return set_sums(problem, index, self.model, x, partner, observed, face_slices, normals, params)


class FusedGradients:
    """The task losses [m], the condition losses [C] (``condition_kernels`` order) and G [m, p] of one
    grouping, by one pass over every point set: a pure function of theta and the points.

    Set s evaluates its losses with its own copy of theta (row s of a [S, p] expansion of theta, through
    `torch.func.functional_call`), so the gradient of the tasks' sum with respect to the copies is one
    gradient per set, [S, p], and a task's row of G is the sum of its sets' rows (each set feeds one task:
    `CompiledProblem.task_of_sets`).  The means, pools and weighted sums that make the task losses are
    inside; `torch.func.grad` makes the gradient part of the same function, so that torch.compile makes
    losses and G one graph with no autograd engine between them (and the one-graph step adds the update
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
        sets = (points.sets[index] for index in self.problem.by_set)
        inputs = [(s.x.detach(), None if s.partner is None else s.partner.detach(), s.observed, s.face_slices,
                   s.normals) for s in sets]
        return inputs, self.problem.counts(points)

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
        for index, row, (x, partner, observed, face_slices, normals) in zip(problem.by_set, copies, inputs):
            pieces = [piece.view(shape) for piece, shape in zip(row.split(self.sizes), self.shapes)]
            weights = {"model." + name: piece for name, piece in zip(names, pieces)}
            params = dict(zip(self.param_names, pieces[len(names):]))
            sums.extend(torch.func.functional_call(self.unit, weights, (problem, index, x, partner, observed,
                                                                        face_slices, normals, params)))
        losses = problem.losses_from_sums(
            dict(zip((ck.condition for cks in problem.by_set.values() for ck in cks), sums)), counts,
            self.grouping)
        tasks = torch.stack(losses.task_list)  # [m]
        conditions = torch.stack([losses.conditions[name] for name in problem.condition_kernels])  # [C]
        return tasks.sum(), (tasks.detach(), conditions.detach())
