"""Count the kernels one compiled training step of each PINNacle case launches, and the arithmetic of its matrix
products (docs/results.md, "What limits the GPU run").

On the CPU, torch.compile's generated code calls one Python-visible function per fused kernel and one per matrix
product; cProfile counts those calls over a few steps of the one-graph step (``train compile = on``), after the
compiling.  A GPU's generated code fuses about the same way, so the count is the number of kernels a GPU step
launches to within a few.  Each case trains at 1/DIVIDE of its point counts (the count does not depend on them),
the method's surgery and alignment as `pinnspec bench pinnacle` sets them, with each ``train stack`` setting asked
for.  The arithmetic is torch's FlopCounterMode over the losses and G of one step (`FusedGradients`, run eagerly)
at the case's full point counts: the matrix products' floating-point operations (the update chain's, O(m p),
are left out; they are under 0.1 % of them).

    OMP_NUM_THREADS=1 python benchmarks/pinnacle/count_kernels.py [--cases all] [--methods adam,config,config+gua]
                                                                   [--stack off,on,sets] [--steps 10] [--divide 64]

Prints one line per case, method and stack setting: the strategy the step ran by, the fused kernels and the
matrix products per step, their sum, and GFLOP per step.  Each compile takes 20-60 s on one CPU thread.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import re

import torch
from torch.utils.flop_counter import FlopCounterMode

from pinnspec.bench._pinnacle import CASES, case_names, method_settings
from pinnspec.engine import Trainer
from pinnspec.engine._compiled import FusedGradients
from pinnspec.lang import load
from pinnspec.lang._overrides import apply_overrides

HERE = os.path.dirname(os.path.abspath(__file__))
PRODUCTS = {"<built-in method torch.mm>", "<built-in method torch.addmm>", "<built-in method torch.bmm>"}


def small_points(path: str, divide: int) -> str:
    """The case's ``points`` statement with every count divided by ``divide`` (at least 4)."""
    with open(path, encoding="utf-8") as fh:
        statement = re.search(r"^points (.*)$", fh.read(), re.M).group(1).split("#")[0]
    pairs = (item.split() for item in statement.split(","))
    return ", ".join(f"{name} {max(4, int(count) // divide)}" for name, count in pairs)


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


def gigaflops(trainer: Trainer) -> float:
    """The matrix products' GFLOP of one step's losses and G, as the compiled step computes them."""
    fused = FusedGradients(trainer.problem, trainer.model, trainer.params, trainer.grouping.name)
    inputs = fused.inputs(trainer._points_for(0))
    with FlopCounterMode(display=False) as counter:
        fused(trainer._theta_flat(), *inputs)
    return counter.get_total_flops() / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="all")
    p.add_argument("--methods", default="adam,config,config+gua")
    p.add_argument("--stack", default="off,on,sets", help="train stack settings to count (default off,on,sets)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--divide", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(1)
    for case in case_names(args.cases):
        path = os.path.join(HERE, "cases", f"{case}.pinn")
        for method in args.methods.split(","):
            for stack in args.stack.split(","):
                overrides = {"points": small_points(path, args.divide), "compile": "on", "device": "cpu",
                             "stack": stack, "epochs": str(5 + args.steps), "validate": f"test every {5 + args.steps}",
                             **method_settings(method)}
                trainer = Trainer(apply_overrides(load(path), overrides))
                kernels, products = count(trainer, args.steps)
                full = Trainer(apply_overrides(load(path), {"device": "cpu", "stack": stack,
                                                            **method_settings(method)}))
                print(f"{CASES[case].label:12s} {method:11s} stack {stack:4s} {trainer.execution.current:15s} "
                      f"fused kernels {kernels:5.0f}  matrix products {products:5.0f}  total {kernels + products:5.0f}"
                      f"  GFLOP {gigaflops(full):6.1f}", flush=True)


if __name__ == "__main__":
    main()
