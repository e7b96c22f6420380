"""The summed one graph, traced by pinnspec rather than captured by torch.compile.

A summing run (`UpdateChain.sums_tasks`) steps between validations by one pure function of tensors: the task
losses, the gradient of their weighted sum and the chain's summed step (`summed_step`).  Here that
function is traced once per input signature by ``make_fx`` (on fake tensors: nothing is computed, a
data-dependent branch fails the trace instead of being baked in), the graph is compiled by inductor
(``torch._inductor.standalone_compile``; its FX-graph and kernel caches make a later process's compile a
load) and then called directly.  What torch.compile spends on every first step (interpreting the Python
bytecode of the step, ~2 s for DeepXDE's Burgers) and on every step (checking ~900 guards on the objects the
step reads, ~0.2 ms) is replaced by a trace of 0.3-0.8 s and a check of the step's own inputs: the structure
and non-tensor values of the arguments and every tensor's shape, dtype and device (`signature`).  A new
signature traces again; more than `MAX_SIGNATURES` mean the inputs change every step, and the step demotes.

The chain states' step counts enter as 0-d float64 tensors filled from the state's ints at every call (as in
the one CUDA graph: an int would be a constant of the graph) and come back as tensors, fetched with the
losses in one vector the graph packs (`packed`).  The network's buffers (Fourier frequencies, embeddings) and
the spec's data tables are read while tracing and stay constants of the graph: they are fixed when the run is
built.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

import torch
from torch.utils import _pytree as pytree

from .._compiling import compile_backend, settle_cpu_isa
from ._chain import ChainState, UpdateChain
from ._compiled import CompiledLosses
from ._step import SUMMED_ONE_GRAPH, Demote, StepContext, StepOut, _has_step, _reason, packed

__all__ = ["TracedSummedGraph", "MAX_SIGNATURES"]

#: distinct input signatures a step may trace before it demotes (a resampling that changes the point counts
#: is one more; one per step would be a run that never reuses its graph)
MAX_SIGNATURES = 4


class _Dataclass:
    """The marker of a dataclass written as a tuple ``(marker, cls, {field: value})``, so that torch's pytree
    flattens its tensors (a frozen chain state is a leaf to pytree)."""


_MARK = _Dataclass()
#: in a graph's output leaves: the next tensor the graph returns
_RETURNED = _Dataclass()


def _tree(obj):
    """``obj`` with every dataclass instance (a chain state) written as ``(_MARK, cls, {field: value})``."""
    return _rebuilt(obj, lambda x: (_MARK, type(x), {f.name: _tree(getattr(x, f.name)) for f in fields(x)})
                    if is_dataclass(x) and not isinstance(x, type) else None)


def _untree(obj):
    """The inverse of `_tree`."""
    return _rebuilt(obj, lambda x: x[1](**{k: _untree(v) for k, v in x[2].items()})
                    if isinstance(x, tuple) and len(x) == 3 and x[0] is _MARK else None)


def _rebuilt(obj, special):
    """``obj`` rebuilt through NamedTuples, lists, tuples and dicts, where ``special(part)`` (not None) replaces a
    part; other leaves as they are."""
    replaced = special(obj)
    if replaced is not None:
        return replaced
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a NamedTuple: pytree keeps its type
        return type(obj)(*(_rebuilt(v, special) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_rebuilt(v, special) for v in obj)
    if isinstance(obj, dict):
        return {k: _rebuilt(v, special) for k, v in obj.items()}
    return obj


def signature(leaves: list, spec) -> tuple:
    """What a traced graph was specialised on: the arguments' structure, their non-tensor values and every
    tensor's shape, dtype and device."""
    return (spec, tuple(_fingerprint(x) for x in leaves))


def _fingerprint(x) -> tuple:
    """A leaf as `signature` compares it: a tensor's shape, dtype and device; a number's or string's value; a
    slice's bounds; any other object's identity (a class, a marker)."""
    if isinstance(x, torch.Tensor):
        return tuple(x.shape), x.dtype, x.device
    if isinstance(x, slice):
        return slice, x.start, x.stop, x.step
    return type(x), x if isinstance(x, (int, float, bool, str)) else id(x)


class TracedSummedGraph:
    """A summing run's summed step as one graph traced by make_fx and compiled by inductor (see the module);
    the compile backend ``eager`` or ``aot_eager`` (the test suite's) runs the traced graph without inductor."""

    name = SUMMED_ONE_GRAPH

    def __init__(self, ctx: StepContext, losses: CompiledLosses):
        self.ctx, self.compiled_losses = ctx, losses
        #: signature -> (the compiled graph, the output's structure, its leaves: `_RETURNED` for each tensor)
        self.graphs: dict[tuple, tuple] = {}
        #: (points, fused, counts, the per-set inputs, their tensors, their part of the signature) of the last
        #: call: a block of epochs steps on one `Points` object, flattened once
        self.points: tuple | None = None
        self.calls = 0  # completed calls

    def __call__(self, theta, points, state, queued) -> StepOut | None:
        """The step, or None where the network adds its own loss term (outside the compiled sets)."""
        ctx = self.ctx
        fused = self.compiled_losses.fused(ctx.params, ctx.grouping)
        if fused is None:
            return None
        if self.points is None or self.points[0] is not points or self.points[1] is not fused:
            inputs, counts = fused.inputs(points)
            leaves, spec = pytree.tree_flatten(inputs)
            self.points = (points, fused, counts, inputs, _tensors(leaves),
                           (id(fused), tuple(sorted(counts.items())), signature(leaves, spec)))
        _, _, counts, inputs, point_tensors, point_key = self.points
        # the step counts as tensors, from the state's ints at every call (an eager validation step may have
        # counted one in between); filled on the device, never copied from the host
        states = {name: replace(s, step=torch.full((), float(s.step), dtype=torch.float64, device=theta.device))
                  if _has_step(s) else s for name, s in (("surgery", state.surgery), ("optimizer", state.optimizer))}
        leaves, spec = pytree.tree_flatten(_tree((theta.detach(), states["surgery"], states["optimizer"],
                                                  state.weights)))
        key = (point_key, signature(leaves, spec))
        entry = self.graphs.get(key)
        if entry is None:
            if len(self.graphs) >= MAX_SIGNATURES:
                raise Demote("step", f"the summed step's inputs changed {MAX_SIGNATURES} times (traced once each); "
                                     "the losses and the update chain compile apart")
            entry = self.graphs[key] = self._compile(fused, counts, inputs, leaves, spec)
        graph, out_spec, out_leaves = entry
        outputs = iter(graph(*_tensors(leaves), *point_tensors))
        self.calls += 1
        queued()
        tasks, conditions, logged, fetched, step = _untree(pytree.tree_unflatten(
            [next(outputs) if x is _RETURNED else x for x in out_leaves], out_spec))
        steps = {name: getattr(step.state, name).step for name, s in states.items() if _has_step(s)}
        step = step._replace(state=step.state._replace(weights=state.weights))  # the caller's tensor
        return StepOut(fused.losses(tasks, conditions), logged, None, step, steps, fetched)

    def _compile(self, fused, counts: dict[str, int], inputs: list, leaves: list, spec) -> tuple:
        """(the graph of the summed step for these states (``leaves`` of ``spec``) and per-set inputs, compiled;
        the structure of its outputs; their leaves, `_RETURNED` where the graph returns a tensor)."""
        from torch.fx.experimental.proxy_tensor import make_fx

        ctx = self.ctx
        point_leaves, point_spec = pytree.tree_flatten(inputs)
        state_tensors = _tensors(leaves)
        out = []  # the outputs' structure and leaves, found while tracing

        def step(*tensors):
            theta, surgery, optimizer, weights = _untree(_refilled(leaves, spec, tensors[:len(state_tensors)]))
            sets = _refilled(point_leaves, point_spec, tensors[len(state_tensors):])
            tasks, conditions, chain_step = summed_step(ctx.chain, fused, theta, sets, counts, surgery, optimizer,
                                                        weights)
            logged = ctx.logged(fused.losses(tasks, conditions))
            steps = [s.step for s in chain_step.state[:2] if _has_step(s)]  # surgery's, optimizer's
            fetched = packed(tasks, logged, chain_step.checks, steps)
            flat, structure = pytree.tree_flatten(_tree((tasks, conditions, logged, fetched, chain_step)))
            out[:] = [structure, [_RETURNED if isinstance(x, torch.Tensor) else x for x in flat]]
            return _tensors(flat)

        tensors = state_tensors + _tensors(point_leaves)
        try:
            graph = make_fx(step, tracing_mode="fake")(*tensors)
            if compile_backend() == "inductor":
                graph = _inductor_compiled(graph, tensors)
        except Exception as err:  # noqa: BLE001 -- any failure to trace or compile: the next strategy runs
            raise Demote("step", f"the summed step does not trace as one graph ({_reason(err)}); the losses and "
                                 "the update chain compile apart") from None
        return graph, out[0], out[1]


def _inductor_compiled(graph: torch.fx.GraphModule, tensors: list[torch.Tensor]):
    """``graph`` compiled by inductor for ``tensors``' shapes.  On the CPU with its C++ wrapper (the kernels
    called from one generated C++ function, not a Python one: DeepXDE's Burgers step 1.92-1.99 ms against
    2.16-2.23, one thread), or, where that fails to build, the Python one."""
    settle_cpu_isa()
    compile_ = lambda: torch._inductor.standalone_compile(graph, tensors, dynamic_shapes="from_example_inputs")  # noqa: E731
    if all(x.device.type == "cpu" for x in tensors):
        try:
            with torch._inductor.config.patch(cpp_wrapper=True):
                return compile_()
        except Exception:  # noqa: BLE001 -- the C++ wrapper did not build: the Python one
            pass
    return compile_()


def _tensors(leaves: list) -> list[torch.Tensor]:
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def _refilled(leaves: list, spec, tensors):
    """The tree of ``leaves`` (``spec``) with its tensors replaced by ``tensors``, in order."""
    filled = iter(tensors)
    return pytree.tree_unflatten([next(filled) if isinstance(x, torch.Tensor) else x for x in leaves], spec)


def summed_step(chain: UpdateChain, fused, theta, inputs, counts, surgery_state, optimizer_state, weights=None):
    """The summed step: (tasks [m], conditions [C], the chain's summed step) from the gradient of
    sum_i lambda_i L_i (lambda = ``weights``, or 1), a pure function of its arguments (traced whole)."""
    lam = weights.to(theta.dtype) if weights is not None else theta.new_ones(fused.m)  # [m]
    tasks, conditions, g = fused.summed(theta, inputs, counts, lam)
    return tasks, conditions, chain.update_summed(g, theta, ChainState(surgery_state, optimizer_state, weights))
