"""torch.compile helpers shared by the compiled losses and the compiled update chain."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import types

import torch

from ._files import atomic_write_text

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
    if backend == "inductor":
        settle_cpu_isa()
        # the compiler's own modules (~0.6 s to import on the 2-core VM) load while the run is built, not inside
        # its first step
        for module in ("torch._inductor.compile_fx", "torch._inductor.standalone_compile"):
            importlib.import_module(module)
    return torch.compile(fn, backend=backend, mode=mode if backend == "inductor" else None, dynamic=dynamic,
                         fullgraph=fullgraph)


def cache_root() -> str:
    """pinnspec's cache folder: $PINNSPEC_CACHE_DIR, else pinnspec/ in the user's cache ($XDG_CACHE_HOME, else
    ~/.cache)."""
    if os.environ.get("PINNSPEC_CACHE_DIR"):
        return os.environ["PINNSPEC_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pinnspec")


def use_compile_cache() -> None:
    """torch's compile cache (inductor's kernels, the FX and AOTAutograd graphs) in the user's cache folder,
    where it outlives /tmp's clean-ups: unless TORCHINDUCTOR_CACHE_DIR is set already."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(cache_root(), "torch"))


_isa_settled = False


def settle_cpu_isa() -> None:
    """Spare each process inductor's probe of the CPU's vector instructions (~1 s on the 2-core VM: it builds
    and loads a test library per instruction set) once a probe on this machine agreed with the CPU's flags.

    Inductor generates C++ for the widest vector instruction set that the CPU's flags report and that, unless
    ``cpp.vec_isa_ok`` is set, its probe builds and loads.  The first process on a machine (torch's version, the
    CPU's flags and the C++ compiler: `_isa_key`) probes; where the probe picks what the flags alone pick, it
    records that in pinnspec's cache folder and sets ``vec_isa_ok`` for its compiles, and later processes with
    the record set it without probing.  The setting is part of inductor's cache keys: every process compiles
    with it set (or, where the probe disagreed, never).  TORCHINDUCTOR_VEC_ISA_OK, where set, decides instead."""
    global _isa_settled
    if _isa_settled:
        return
    _isa_settled = True
    try:
        from torch._inductor import config, cpu_vec_isa

        if config.cpp.vec_isa_ok is not None:
            return
        path = os.path.join(cache_root(), "cpu-isa.json")
        records = _read_json(path)
        key = _isa_key(config.cpp.cxx)
        if key in records:
            config.cpp.vec_isa_ok = True if records[key] is True else None
            return
        probed = str(cpu_vec_isa.pick_vec_isa())
        cpu_vec_isa.valid_vec_isa_list.cache_clear()
        config.cpp.vec_isa_ok = True
        agrees = str(cpu_vec_isa.pick_vec_isa()) == probed
        if not agrees:  # the probe rejected an instruction set the flags report: probe in every process
            config.cpp.vec_isa_ok = None
            cpu_vec_isa.valid_vec_isa_list.cache_clear()
        records[key] = agrees
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_text(path, json.dumps(records, indent=1, sort_keys=True))
    except (ImportError, AttributeError, OSError):  # another torch's internals, or no cache folder: probe
        return


def _isa_key(compilers) -> str:
    """torch's version, the machine, the CPU's flags and the C++ compilers inductor may pick (path, size,
    mtime), hashed."""
    import hashlib
    import platform
    import shutil

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            flags = next((line for line in fh if line.startswith(("flags", "Features"))), "")
    except OSError:
        flags = platform.processor()
    found = []
    for name in (os.environ.get("CXX"), *(c for c in compilers if c)):
        where = shutil.which(name) if name else None
        if where:
            stat = os.stat(where)
            found.append((where, stat.st_size, stat.st_mtime_ns))
    text = repr((torch.__version__, platform.machine(), flags.strip(), found))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


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
