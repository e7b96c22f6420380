"""One PINNacle run alone on a device: its step's time against its roofline, and the kernels the device's time
goes to (docs/results.md, "What limits the GPU run").

The table's GPU run shares one GPU among 24 runs and reached 38 % of the roofline; this script says what one run
reaches alone, and which kernels take the device's time: the whole step's wall time (median of ``--steps`` steps
after five to compile and warm up, each step ending in its one fetch of the step's values), the device's time of
the kernels in it (torch.profiler over five more steps) and the step's roofline on ``--gpu``
(count_kernels.py: the arithmetic and inductor's traffic estimate of the losses and G, compiled for the device).

    python benchmarks/pinnacle/profile_step.py [--case burgers1d] [--method adam] [--stack on] [--compile on]
           [--device cuda] [--gpu h100-sxm] [--steps 50] [--top 12] [--divide 1] [--together adam,config,...]

``--divide`` shrinks every point count (a quick look on the CPU), the roofline's with them.  ``--together``
times instead one epoch of the case's methods as one group (`pinnspec bench pinnacle --together`), against R
times one run's roofline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from count_kernels import GPUS, GroupSteps, arithmetic_and_traffic, case_trainer, roofline_seconds  # noqa: E402

from pinnspec.bench._pinnacle import CASES, case_names  # noqa: E402

WARM_UP = 5
PROFILED = 5


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", default="burgers1d")
    p.add_argument("--method", default="adam")
    p.add_argument("--stack", default="on")
    p.add_argument("--compile", default="on")
    p.add_argument("--device", default="cuda")
    p.add_argument("--gpu", choices=sorted(GPUS), default="h100-sxm", help="the roofline's peak rates")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--top", type=int, default=12, help="kernels listed, by device time")
    p.add_argument("--divide", type=int, default=1, help="every point count divided by this (at least 4)")
    p.add_argument("--together", metavar="METHODS", default=None,
                   help="these methods (comma-separated) as one group, in place of --method")
    args = p.parse_args()
    (case,) = case_names(args.case)
    path = os.path.join(HERE, "cases", f"{case}.pinn")
    epochs = WARM_UP + args.steps + PROFILED
    trainer = case_trainer(path, args.method, args.stack, epochs, divide=args.divide, device=args.device,
                           compile=args.compile)
    gflop, gb, gb_products = arithmetic_and_traffic(trainer)  # the same for every method
    runs = 1
    if args.together:
        methods = args.together.split(",")
        trainer, runs = GroupSteps(path, methods, args.stack, epochs, divide=args.divide, device=args.device,
                                   compile=args.compile), len(methods)
    roofline = runs * roofline_seconds(gflop, gb, gb_products, args.gpu)

    for epoch in range(WARM_UP):
        trainer.step(epoch)
    times = []
    for epoch in range(WARM_UP, WARM_UP + args.steps):
        _sync(args.device)
        start = time.perf_counter()
        trainer.step(epoch)  # ends in the step's one fetch: the device has finished the step
        times.append(time.perf_counter() - start)
    step = statistics.median(times)

    cuda = args.device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for epoch in range(WARM_UP + args.steps, epochs):
            trainer.step(epoch)
        _sync(args.device)
    if cuda:  # the kernels, from the device's own timeline
        events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]  # kernels, copies
        device_us = sum(e.time_range.elapsed_us() for e in events) / PROFILED
        by_name: dict[str, list[float]] = {}
        for e in events:
            by_name.setdefault(e.name, []).append(e.time_range.elapsed_us())
    else:  # on the CPU: the operators' own time
        averages = prof.key_averages()
        device_us = sum(a.self_cpu_time_total for a in averages) / PROFILED
        by_name = {a.key: [a.self_cpu_time_total / a.count] * a.count for a in averages if a.count}
    kernels = sum(len(v) for v in by_name.values()) / PROFILED

    what = f"{args.together} together" if args.together else args.method
    print(f"{CASES[case].label} {what}, stack {args.stack}, compile {args.compile} "
          f"({trainer.execution.current}), {args.device}: {torch.__version__}"
          + (f", {torch.cuda.get_device_name()}" if cuda else ""))
    print(f"step {step * 1e3:.3f} ms (median of {args.steps}); {'kernels' if cuda else 'operators'} "
          f"{kernels:.0f} per step, {device_us / 1e3:.3f} ms of {'device' if cuda else 'CPU'} time")
    print(f"roofline on {args.gpu}: {roofline * 1e6:.0f} us ({runs} x {gflop:.1f} GFLOP, {gb:.3f} GB, products "
          f"{gb_products:.3f} GB): the step reaches {roofline / step:.1%} of it"
          + (f", its kernels {roofline / (device_us * 1e-6):.1%}" if cuda else ""))
    rows = sorted(by_name.items(), key=lambda item: -sum(item[1]))[:args.top]
    for name, durations in rows:
        total = sum(durations) / PROFILED
        print(f"  {total:9.1f} us/step  {len(durations) / PROFILED:5.1f} calls  {statistics.mean(durations):8.2f} us "
              f"each  {name[:90]}")


if __name__ == "__main__":
    main()
