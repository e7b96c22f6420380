"""Count the kernels one compiled training step of each PINNacle case launches, the arithmetic of its matrix
products and the memory traffic of its kernels, and put the step on a GPU's roofline (docs/results.md, "What
limits the GPU run").

On the CPU, torch.compile's generated code calls one Python-visible function per fused kernel and one per matrix
product; cProfile counts those calls over a few steps of the one-graph step (``train compile = on``), after the
compiling.  A GPU's generated code fuses about the same way, so the count is the number of kernels a GPU step
launches to within a few.  Each case trains at 1/DIVIDE of its point counts (the count does not depend on them),
the method's surgery and alignment as `pinnspec bench pinnacle` sets them, with each ``train stack`` setting asked
for.  The arithmetic and the traffic are those of one step's losses and G at the case's full point counts (the
update chain's, O(m p), are left out: under 0.1 %), the same for every method: the arithmetic is torch's
FlopCounterMode over the matrix products (`FusedGradients`, run eagerly); the traffic is inductor's own estimate
for the compiled graph (``metrics.num_bytes_accessed``: every buffer each fused kernel or matrix product reads or
writes, counted once per kernel).

The roofline time of a step on ``--gpu`` (NVIDIA's datasheet figures: float32 without tensor cores, and HBM
bandwidth) is the matrix products at the larger of their arithmetic and their traffic, plus the other kernels'
traffic, each at the peak rate: a floor for the step's GPU time, whatever the launching costs.

``--measure host`` times instead the whole training step (`Trainer.step`: the compiled graph's call and guards,
the one fetch of the step's values, the history row) at 4 points per set, where the kernels themselves take
little: the host's share of a step, less the GPU's launch calls, with the summary the host time of every run's
``--epochs`` epochs over ``--cores`` cores.

``--together`` adds, per case, its methods as one group (`pinnspec bench pinnacle --together`: every method's
losses and G as one batched graph, each method's update chain its own): the kernels, or the host time, of one epoch
of all of them.

    OMP_NUM_THREADS=1 python benchmarks/pinnacle/count_kernels.py [--cases all] [--methods adam,config,config+gua]
           [--stack off,on,sets] [--measure kernels,traffic,host] [--steps 10] [--divide 64]
           [--gpu h200|h100-sxm|h100-pcie] [--epochs 20000] [--cores 16] [--together]

Prints one line per case, method and stack setting: the strategy the step ran by, the fused kernels and the
matrix products per step, their sum, GFLOP and GB per step and the roofline microseconds on ``--gpu``; then, per
stack setting, one epoch of every line's run together, and ``--epochs`` epochs of each at every GPU's roofline.
Each compile takes 20-60 s on one CPU thread (all cases, methods and settings: 31 min on a 2-core VM).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import logging
import os
import re
import statistics
import time
import warnings

import torch
from torch._inductor import config as inductor_config
from torch._inductor import metrics as inductor_metrics
from torch._inductor.scheduler import ExternKernelSchedulerNode
from torch.utils.flop_counter import FlopCounterMode

from pinnspec.bench._pinnacle import CASES, case_names, method_settings
from pinnspec.engine import RunGroup, Trainer
from pinnspec.engine._compiled import FusedGradients
from pinnspec.lang import load
from pinnspec.lang._overrides import apply_overrides

HERE = os.path.dirname(os.path.abspath(__file__))
PRODUCTS = {"<built-in method torch.mm>", "<built-in method torch.addmm>", "<built-in method torch.bmm>"}
#: float32 TFLOP/s (no tensor cores) and HBM TB/s, NVIDIA's datasheets
GPUS = {"h200": (67.0, 4.8), "h100-sxm": (67.0, 3.35), "h100-pcie": (51.0, 2.0)}
MIN_POINTS = 4  # the fewest points `small_points` leaves a set
HOST_DIVIDE = 10 ** 9  # the host-time measurement's divisor: every set at MIN_POINTS


def small_points(path: str, divide: int) -> str:
    """The case's ``points`` statement with every count divided by ``divide`` (at least MIN_POINTS)."""
    with open(path, encoding="utf-8") as fh:
        statement = re.search(r"^points (.*)$", fh.read(), re.M).group(1).split("#")[0]
    pairs = (item.split() for item in statement.split(","))
    return ", ".join(f"{name} {max(MIN_POINTS, int(count) // divide)}" for name, count in pairs)


def case_trainer(path: str, method: str, stack: str, epochs: int, *, divide: int = 1, device: str = "cpu",
                 compile: str = "on") -> Trainer:
    """The case's spec as `pinnspec bench pinnacle` trains it with ``method``, for ``epochs`` epochs validated once at
    the end, every point count divided by ``divide`` (1: as the case has them)."""
    overrides = {"compile": compile, "device": device, "stack": stack, "epochs": str(epochs),
                 "validate": f"test every {epochs}", **method_settings(method)}
    if divide > 1:
        overrides["points"] = small_points(path, divide)
    return Trainer(apply_overrides(load(path), overrides))


class GroupSteps:
    """A case's methods as one `RunGroup` (``--together``), stepped an epoch at a time like a trainer
    (`RunGroup.step`)."""

    def __init__(self, path: str, methods: list[str], stack: str, epochs: int, *, divide: int = 1, device: str = "cpu",
                 compile: str = "on"):
        self.trainers = [case_trainer(path, method, stack, epochs, divide=divide, device=device, compile=compile)
                         for method in methods]
        self.group = RunGroup(self.trainers)

    @property
    def execution(self):
        return self.trainers[0].execution

    def step(self, epoch: int) -> None:
        self.group.step(epoch)


def count(trainer: Trainer, steps: int) -> tuple[float, float]:
    """(fused kernels, matrix products) per step, over ``steps`` steps after five to compile and warm up."""
    for epoch in range(5):
        trainer.step(epoch)
    profile = cProfile.Profile()
    profile.enable()
    for epoch in range(5, 5 + steps):
        trainer.step(epoch)
    profile.disable()
    profile.create_stats()
    kernels = products = 0
    for (where, _, name), (_, calls, *_) in profile.stats.items():
        if where == "~" and name.endswith(".kernel>"):  # inductor's C++ kernels: "<built-in method ....kernel>"
            kernels += calls
        elif name in PRODUCTS:
            products += calls
    return kernels / steps, products / steps


def host_seconds(trainer: Trainer, steps: int) -> float:
    """The median wall time of one step over ``steps`` steps, after five to compile and warm up."""
    for epoch in range(5):
        trainer.step(epoch)
    times = []
    for epoch in range(5, 5 + steps):
        start = time.perf_counter()
        trainer.step(epoch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compiled_traffic(compiled, *args) -> tuple[float, float]:
    """(GB, GB of the matrix products) that inductor estimates for the graphs ``compiled(*args)`` compiles:
    every buffer each kernel reads or writes, once per kernel.  Inductor estimates only while its metrics log is
    on, and only when it compiles (not on a cache hit): the log on without output, the caches off, this once."""
    log = logging.getLogger("torch._inductor.compile_fx.__inductor_metrics")
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False
    inductor_metrics.reset()
    try:
        with inductor_config.patch(force_disable_caches=True):
            compiled(*args)
    finally:
        log.setLevel(level)
        log.propagate = propagate
    products = sum(4 * words for node, words in inductor_metrics.nodes_num_elem  # counted in 4-byte words
                   if isinstance(node, ExternKernelSchedulerNode))
    return inductor_metrics.num_bytes_accessed / 1e9, products / 1e9


def arithmetic_and_traffic(trainer: Trainer) -> tuple[float, float, float]:
    """(GFLOP, GB, GB of the matrix products) of one step's losses and G at the trainer's point counts."""
    fused = FusedGradients(trainer.problem, trainer.model, trainer.params, trainer.grouping.name)
    with FlopCounterMode(display=False) as counter:
        fused(trainer.theta_flat(), *fused.inputs(trainer.points.at(0)))
    gb, gb_products = compiled_traffic(trainer.execution.compiled_losses().losses_and_gradients,
                                       trainer.points.at(0), trainer.params, trainer.grouping.name,
                                       trainer.theta_flat())
    return counter.get_total_flops() / 1e9, gb, gb_products


def roofline_seconds(gflop: float, gb: float, gb_products: float, gpu: str) -> float:
    """A step's GPU time at the peak rates: the products at the larger of arithmetic and traffic, the rest
    at their traffic."""
    tflops, tbs = GPUS[gpu]
    return max(gflop / (tflops * 1e3), gb_products / (tbs * 1e3)) + (gb - gb_products) / (tbs * 1e3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="all")
    p.add_argument("--methods", default="adam,config,config+gua")
    p.add_argument("--stack", default="off,on,sets", help="train stack settings to count (default off,on,sets)")
    p.add_argument("--measure", default="kernels,traffic",
                   help="kernels, traffic (arithmetic, traffic, roofline) and host (the step's host time at "
                        f"{MIN_POINTS} points per set); default kernels,traffic")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--divide", type=int, default=64)
    p.add_argument("--gpu", choices=sorted(GPUS), default="h200", help="the roofline's peak rates (default h200)")
    p.add_argument("--epochs", type=int, default=20000, help="epochs per run in the summary (default 20000)")
    p.add_argument("--cores", type=int, default=16, help="the GPU machine's host cores, for the host summary")
    p.add_argument("--together", action="store_true",
                   help="also each case's methods as one group (`pinnspec bench pinnacle --together`): one line per "
                        "case and stack setting, kernels and host time per epoch of all its methods")
    args = p.parse_args()
    measure = set(args.measure.split(","))
    if not measure or measure - {"kernels", "traffic", "host"}:
        p.error(f"--measure takes kernels, traffic and host, not {args.measure!r}")
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")  # the caches off, above
    stacks = args.stack.split(",")
    kernels_total = dict.fromkeys(stacks, 0.0)
    gflop_total, gb_total = dict.fromkeys(stacks, 0.0), dict.fromkeys(stacks, 0.0)
    roofline_total = {(stack, gpu): 0.0 for stack in stacks for gpu in GPUS}  # seconds per epoch of every run
    host_total = dict.fromkeys(stacks, 0.0)  # host seconds per epoch of every run
    together_kernels, together_host = dict.fromkeys(stacks, 0.0), dict.fromkeys(stacks, 0.0)  # the same, grouped
    for case in case_names(args.cases):
        path = os.path.join(HERE, "cases", f"{case}.pinn")
        for stack in stacks:
            if "traffic" in measure:
                full = Trainer(apply_overrides(load(path), {"device": "cpu", "compile": "on", "stack": stack}))
                gflop, gb, gb_products = arithmetic_and_traffic(full)
                roofline = {gpu: roofline_seconds(gflop, gb, gb_products, gpu) for gpu in GPUS}
            methods = args.methods.split(",")
            units = [(method, functools.partial(case_trainer, path, method, stack, 5 + args.steps))
                     for method in methods]
            if args.together:
                units.append(("together", functools.partial(GroupSteps, path, methods, stack, 5 + args.steps)))
            for label, build in units:
                single = label != "together"
                per = "step" if single else f"epoch of its {len(methods)} methods"
                line = [f"{CASES[case].label:12s} {label:11s} stack {stack:4s}"]
                if "kernels" in measure:
                    unit = build(divide=args.divide)
                    kernels, products = count(unit, args.steps)
                    (kernels_total if single else together_kernels)[stack] += kernels + products
                    line.append(f"{unit.execution.current:15s} fused kernels {kernels:5.0f}  matrix products "
                                f"{products:5.0f}  total {kernels + products:5.0f} per {per}")
                if "traffic" in measure and single:
                    gflop_total[stack] += gflop
                    gb_total[stack] += gb
                    for gpu in GPUS:
                        roofline_total[stack, gpu] += roofline[gpu]
                    line.append(f"GFLOP {gflop:6.1f}  GB {gb:6.3f} (products {gb_products:6.3f})"
                                f"  roofline {roofline[args.gpu] * 1e6:6.0f} us on {args.gpu}")
                if "host" in measure:
                    unit = build(divide=HOST_DIVIDE)
                    host = host_seconds(unit, args.steps)
                    (host_total if single else together_host)[stack] += host
                    line.append(f"{unit.execution.current:15s} host {host * 1e3:6.2f} ms per {per}")
                print("  ".join(line), flush=True)
    for stack in stacks:
        if args.together and "kernels" in measure:
            print(f"stack {stack}: one epoch of every run above, each case's methods together: "
                  f"{together_kernels[stack]:.0f} kernels")
        if args.together and "host" in measure:
            print(f"stack {stack}: {args.epochs} epochs of every run above, each case's methods together, take "
                  f"{together_host[stack] * args.epochs:.0f} s of host time at {MIN_POINTS} points per set")
        if measure & {"kernels", "traffic"}:
            print(f"stack {stack}: one epoch of every run above: "
                  + ", ".join(([f"{kernels_total[stack]:.0f} kernels"] if "kernels" in measure else [])
                              + ([f"{gflop_total[stack]:.0f} GFLOP, {gb_total[stack]:.1f} GB"]
                                 if "traffic" in measure else [])))
        if "host" in measure:
            cpu_seconds = host_total[stack] * args.epochs
            print(f"stack {stack}: {args.epochs} epochs of every run above take {cpu_seconds:.0f} s of host time "
                  f"at {MIN_POINTS} points per set: at least {cpu_seconds / args.cores:.0f} s on {args.cores} "
                  "cores")
    if "traffic" in measure:
        for gpu, (tflops, tbs) in GPUS.items():
            floors = ", ".join(f"{stack} {roofline_total[stack, gpu] * args.epochs:.0f} s" for stack in stacks)
            print(f"{args.epochs} epochs of every run above at the roofline of {gpu} ({tflops:g} TFLOP/s, "
                  f"{tbs:g} TB/s): {floors}")


if __name__ == "__main__":
    main()
