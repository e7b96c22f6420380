"""torch.compile helpers shared by the compiled losses and the compiled update chain."""

from __future__ import annotations

import contextlib
import itertools
import os
import types

import torch

_copies = itertools.count()

#: the environment variable that names torch.compile's backend for every graph pinnspec compiles
BACKEND_VARIABLE = "PINNSPEC_COMPILE_BACKEND"


def compile_backend() -> str:
    """torch.compile's backend: ``inductor`` (generated C++/Triton kernels), unless ``PINNSPEC_COMPILE_BACKEND``
    names another of torch's (``aot_eager``: the same captured and differentiated graph run by torch's eager
    kernels -- a run that differs from ``inductor`` only there points at the code generator; the test suite
    uses it for most of its compiled-equals-eager checks).  Read when a graph is built."""
    name = os.environ.get(BACKEND_VARIABLE, "").strip() or "inductor"
    known = list(dict.fromkeys(["inductor", *torch._dynamo.list_backends(exclude_tags=())]))
    if name not in known:
        raise ValueError(f"{BACKEND_VARIABLE}={name!r} is not a torch.compile backend (known: {', '.join(known)})")
    return name


def compiled(fn, *, mode: str | None = None, dynamic: bool | None = None, fullgraph: bool = True):
    """``torch.compile(fn)`` on the backend `compile_backend` names; ``mode`` (e.g. "reduce-overhead" for CUDA
    graphs) is inductor's and is dropped on another backend."""
    backend = compile_backend()
    return torch.compile(fn, backend=backend, mode=mode if backend == "inductor" else None, dynamic=dynamic,
                         fullgraph=fullgraph)


def own_code(fn):
    """A copy of ``fn`` with a code object of its own (same body, a numbered name).

    torch.compile keeps its cache, and its limit of 8 recompiles, per code object: one copy per
    compiled unit keeps many point sets, problems or trainers in one process (a sweep worker) from
    sharing one cache and running eagerly once it is full."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{next(_copies)}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def aot_cacheable():
    """Let AOTAutograd's on-disk cache keep the graphs that hold the compiled tanh, an
    ``autograd.Function`` (pinnspec.forward._activations): the losses, alone or in the trainer's one-graph
    step.  torch leaves such graphs out by default, and every new process then traces and partitions
    them again (measured, Burgers at N_f = 10k, one thread, warm caches: the one-graph step's first call
    4.7 s with the switch, 6.9 s without).  Dynamo traces the function's forward and backward into the graph that is
    the cache key, so a changed backward is a different key; the switch's authors verified the traced
    function pure in its inputs (pytorch/pytorch#149751) and keep it off by default only while they
    test it on more models.  Older torch has no such switch: nothing to do."""
    config = torch._functorch.config
    if not hasattr(config, "autograd_cache_allow_custom_autograd_functions"):
        return contextlib.nullcontext()
    return config.patch(autograd_cache_allow_custom_autograd_functions=True)


def symbolic(sources: str):
    """While tracing, treat these inputs (torch.compile source names, comma-separated) as symbolic and
    everything else as static: e.g. a step count that changes every call, beside tensors whose shapes
    never do.  A torch without ``dynamic_sources`` makes such an int symbolic at its first change instead
    (automatic dynamic shapes): one recompile, then the same graph."""
    config = getattr(torch.compiler, "config", None)
    if config is None or not hasattr(config, "dynamic_sources"):
        return contextlib.nullcontext()
    return config.patch(dynamic_sources=sources)
