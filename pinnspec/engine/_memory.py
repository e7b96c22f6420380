"""A run's memory, estimated before anything is allocated (`check_memory`, called by the Trainer once the spec
is compiled and before its network is built): a run that cannot fit in the machine's memory is refused with one
line naming the setting that takes the most and the estimate; ``train memory = unchecked`` goes past it.

What is counted (bytes; b: the bytes of the run's widest dtype, its stages' included; 8 for the host's float64
arrays):

    points      per point set: N x d (host, float64, and device) and the training graph's activations,
                N x R x H x ACTIVATION_COPIES x b: R derivative rows (the value and each derivative its plan
                takes), H the units of the network (the sum of the output widths of its [out, in] weights)
    test        N_test x (d + 2 F) float64 on the host (points, reference, prediction) and N_test x (d + F) on
                the device; a grid: prod(counts) points (before the domain cuts it); and one network pass over a
                batch of EVAL_BATCH test or validation points, EVAL_BATCH x H x b
    validation  N_val x (d + F), as the test points
    model       P x b x (MODEL_COPIES + m): the weights, their gradient, the optimizer's states, the best
                checkpoint's copy, and the m task gradients (G [m, P])
    stage       a bfgs-family stage's dense [P, P] inverse Hessian (and its update's temporary of the same size)

The constants are measured (docs/training.md, "Memory"): on the CPU the estimate is within a factor 2 of the
resident-set growth of ordinary runs.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import torch
from torch.overrides import TorchFunctionMode

from ._monitor import EVAL_BATCH

__all__ = ["MemoryEstimate", "estimate_memory", "available_memory", "check_memory"]

#: the tensors the training graph keeps per hidden unit, point and derivative row (pre-activation, activation,
#: the activation's derivatives the backward passes read)
ACTIVATION_COPIES = 3
#: copies of the parameters besides G: weights, gradient, two optimizer moments, the best checkpoint, a spare
MODEL_COPIES = 6


class Term(NamedTuple):
    setting: str  # the setting as a user writes it ("points pde 1000000000", "model mlp(width = 1000000)")
    host: int  # bytes in the machine's memory
    device: int  # bytes on the run's device (the host's too on the CPU)


class MemoryEstimate(NamedTuple):
    terms: tuple[Term, ...]
    cuda: bool

    @property
    def host(self) -> int:
        """Bytes in RAM (on the CPU, everything)."""
        return sum(t.host + (0 if self.cuda else t.device) for t in self.terms)

    @property
    def device(self) -> int:
        """Bytes on the GPU (0 on the CPU)."""
        return sum(t.device for t in self.terms) if self.cuda else 0

    def largest(self, on_device: bool) -> Term:
        return max(self.terms, key=lambda t: t.device if on_device else t.host + (0 if self.cuda else t.device))


def _meta_model(spec, problem, dtype: torch.dtype) -> torch.nn.Module | None:
    """The spec's network with no storage (torch's meta device); None for a model that cannot be built so."""
    from ._build import build_model

    try:
        with torch.device("meta"), _NoDraws():
            return build_model(spec, problem, device=torch.device("meta"), dtype=dtype)
    except Exception:  # noqa: BLE001 - a model whose construction reads data (pi_init): estimated without it
        return None


class _NoDraws(TorchFunctionMode):
    """Random in-place fills as no-ops, in this thread only (a torch function mode): on the meta device they hold
    no values, and a seeded draw there would load torch's reference kernels (seconds) to draw nothing."""

    FILLS = frozenset({"normal_", "uniform_", "exponential_", "random_", "bernoulli_", "geometric_", "cauchy_",
                       "log_normal_"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.FILLS:  # torch.nn.init's passes the tensor by keyword
            return args[0] if args else next(iter((kwargs or {}).values()))
        return func(*args, **(kwargs or {}))


def estimate_memory(spec, problem, *, device: torch.device, dtype: torch.dtype) -> MemoryEstimate:
    """The memory a run of ``spec`` (compiled: ``problem``) takes, by setting (see the module's docstring)."""
    p = spec.ir
    t = p.training
    stages = t.stage_list()
    b = max(torch.finfo(dtype).bits, *(torch.finfo(getattr(torch, s.dtype)).bits for s in stages)) // 8  # the widest
    d, F = len(p.coordinates), len(p.fields)
    cuda = device.type == "cuda"
    model = _meta_model(spec, problem, dtype)
    P = sum(x.numel() for x in model.parameters()) + len(p.params) if model is not None else len(p.params)
    H = sum(x.shape[0] for x in model.parameters() if x.dim() == 2) if model is not None else 0  # [out, in] weights
    m = p.grouping().m
    terms = []
    for s in problem.point_plan.sets:
        if s.count is None:  # a data file's rows: read with the file, small next to sampled sets
            continue
        plan = problem.plans.get(s.index)
        rows = 1 + (len(plan.steps) * d if plan is not None else 0)
        graph = s.count * rows * H * ACTIVATION_COPIES * b
        names = ", ".join(s.conditions)
        terms.append(Term(f"points {names} {s.count}", s.count * d * 8, s.count * (d + F) * b + graph))
    test = p.test
    n_test = math.prod(test.grid) if test.grid else (test.uniform or test.count or 10_000)
    n_val = 0 if p.validation.on_test else p.validation.count
    forward = min(max(n_test, n_val), EVAL_BATCH) * H * b  # a network pass over a batch of test or validation points
    terms.append(Term(f"test {test}", n_test * (d + 2 * F) * 8, n_test * (d + F) * b + forward))
    v = p.validation
    if not v.on_test:
        terms.append(Term(f"validate {v.count} every {v.every}", v.count * (d + F) * 8, v.count * (d + F) * b))
    terms.append(Term(f"model {t.model}", 0, P * b * (MODEL_COPIES + m)))
    for stage in stages:
        if stage.second_order and stage.optimizer.name != "lbfgs":
            width = torch.finfo(getattr(torch, stage.dtype)).bits // 8
            terms.append(Term(f"stage {stage.optimizer}", 0, 2 * P * P * width))
    return MemoryEstimate(tuple(terms), cuda)


def available_memory() -> int:
    """Bytes of RAM available to a new allocation: MemAvailable of /proc/meminfo, else the free pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2 ** 62  # unknown: nothing is refused


def _gib(n: int) -> str:
    return f"{n / 2 ** 30:,.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:,.0f} MiB"


def check_memory(spec, problem, *, device: torch.device, dtype: torch.dtype) -> MemoryEstimate:
    """Raise a ValueError (one line: the setting that takes the most, the estimate, what is available, how to
    go on) when the run's estimate passes the machine's available RAM, or the GPU's free memory on CUDA;
    nothing is checked with ``train memory = unchecked``.  Returns the estimate."""
    estimate = estimate_memory(spec, problem, device=device, dtype=dtype)
    if spec.ir.training.setting("memory") == "unchecked":
        return estimate
    checks = [("RAM", estimate.host, available_memory(), False)]
    if estimate.cuda:
        checks.append((f"{device} memory", estimate.device, torch.cuda.mem_get_info(device)[0], True))
    for where, needed, free, on_device in checks:
        if needed > free:
            term = estimate.largest(on_device)
            size = term.device if on_device else term.host + (0 if estimate.cuda else term.device)
            raise ValueError(
                f"`{term.setting}` takes about {_gib(size)}: the run needs about {_gib(needed)}, more than the "
                f"{_gib(free)} of {where} available; lower it, or add `train memory = unchecked` (--set "
                f"memory=unchecked) to run anyway")
    return estimate
