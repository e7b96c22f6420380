"""``pinnspec bench speed``: one Burgers epoch, pinnspec against hand-written torch.

    pinnspec bench speed [--epochs 30] [--warmup 5] [--points 10000] [--grouping three]
                         [--surgery CALL] [--align CALL] [--dtype float32|float64|both]
                         [--device cpu|cuda|auto] [--out DIR]

Contenders (both in this process, same allocator settings and thread count):

* pinnspec: ``Trainer.step`` on specs/burgers.pinn with grouping ``three``
  (m = 3) and the spec's surgery (config) and alignment (gua) unless
  overridden: sampling, losses, G [m, p], surgery, Adam proposal, GUA,
  apply, diagnostics.
* hand-written: :class:`~pinnspec.bench._handwritten.HandWrittenBurgers`,
  the same problem in plain torch (same network and initial weights, same
  point counts drawn fresh each epoch, m separate gradients, torch Adam on
  their sum): the same work minus surgery and GUA.

Timing: warm-up epochs for each, then ``--epochs`` rounds of one epoch each,
alternating which goes first (ABBA...); the cyclic garbage collector is kept
out of the timed epochs.  The headline ratio is the median over rounds of
pinnspec's time / the hand-written time *of the same round*: the two epochs
of a round are adjacent in time, so slow phases of a shared machine hit both.

Precision (``--dtype``): both contenders run in float32 (default) or float64
(``train dtype = float64``: network, parameters, points, the forward engine
and the compiled step; the hand-written network and points in float64 too).
``--dtype both`` builds a float32 and a float64 pair in the same process and
interleaves all four epochs in every round (pinnspec and hand-written of one
dtype, then of the other; the order reversed every other round); besides each
dtype's own table it reports, per contender, the median over rounds of the
float64 epoch / the float32 epoch of the same round.  The plate's sampling and
torch.profiler's table are of the first dtype (float32); the per-stage
breakdown and the memory subprocesses are run for each dtype.

Sampling of a domain that is not a box: the points of a 4-hole plate (the
domain of examples/plate_holes: the square [-0.5, 0.5]^2 less four disks of
radius 0.1 at (+-0.3, +-0.3)), ``--plate-points`` interior points (default
10,000) and 1024 + 1024 on the square and the rims, drawn as a training epoch
draws them (``Problem.sample``: the spec's sampler, rejection into the domain,
boundary points with their normals, the copy to tensors on the device), fresh
points each time, ``--epochs`` times after the timed rounds; its median is
printed against the median pinnspec epoch of the same run, as a fraction.

Memory: each contender runs again in a fresh subprocess (one after the other,
never at the same time): after its setup the kernel's RSS high-water mark is
reset (``/proc/self/clear_refs``), ``--memory-epochs`` epochs run, and the
report gives the high-water mark (VmHWM) and its growth over the RSS after
setup; on CUDA also ``torch.cuda.max_memory_allocated`` over the epochs.
tracemalloc would not see torch's CPU allocations, and a shared process would
mix the two contenders' heaps.  "Setup" includes two steps, so a compiled
contender has built its graphs before the measured epochs.  With compile on, a third fresh
process measures what torch.compile itself adds to any process's RSS (dynamo,
inductor, one tiny compiled function), printed with the compiled peak less it:
an estimate of what the compiled training holds beyond the compiler.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np
import torch

from ._cli import EXIT_OK, BenchError, Parser, run_main
from ._common import (Table, add_common_arguments, clock, environment,
                      environment_lines, find_spec, load_spec, median, ms, percent, quantile, quiet_gc, run_fresh,
                      setup, write_csv, write_markdown)
from ._handwritten import HandWrittenBurgers
from ._profile import STAGES, profile_pair, torch_profile

TARGET_RATIO = 1.05  # eager pinnspec (m gradients, surgery, GUA, diagnostics) against the hand-written epoch
TARGET_COMPILED = 0.60  # the same with the forward engine and torch.compile (CPU)
TARGET_GPU_MS = 3.0  # a Burgers epoch on a GPU, where small-MLP epochs are launch-bound
N_B, N_I = 250, 250
PLATE = os.path.join("examples", "plate_holes", "plate_holes.pinn")  # the 4-hole plate
PLATE_BOUNDARY = {"outer": 1024, "rims": 1024}  # its boundary points, as the example draws them


def build_parser() -> Parser:
    p = Parser(prog="pinnspec bench speed",
               description="Time one Burgers epoch through pinnspec's Trainer.step against a hand-written torch "
                           "implementation of the same problem (interleaved in one process); memory in subprocesses.")
    add_common_arguments(p, epochs=30, warmup=5)
    p.add_argument("--points", type=int, default=10_000, metavar="N_F",
                   help="interior (collocation) points per epoch (default 10000; walls and initial keep 250 each)")
    p.add_argument("--grouping", choices=["two", "three"], default="three", help="m = 2 or 3 losses (default three)")
    p.add_argument("--surgery", metavar="CALL", default=None, help="pinnspec's surgery (default: the spec's, config)")
    p.add_argument("--align", metavar="CALL", default=None, help="pinnspec's alignment (default: the spec's, gua)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float32", "float64", "both"], default="float32",
                   help="floating-point type of both contenders (train dtype = ...; default float32); both: a "
                        "float32 and a float64 pair interleaved in one process, with the float64 / float32 "
                        "epoch-time ratio")
    p.add_argument("--engine", choices=["auto", "autograd", "forward"], default="auto",
                   help="pinnspec's derivative engine (train engine = ...; default auto)")
    p.add_argument("--stack", choices=["auto", "on", "off", "sets"], default="auto",
                   help="fewer, larger kernels (train stack = ...): on, the forward engine's hidden layers as "
                        "one product over every derivative row, a point set's losses pulled back together; sets, "
                        "also one network pass over every point set (more arithmetic); default auto: on on CUDA")
    p.add_argument("--compile", choices=["off", "on", "graphs"], default="off",
                   help="torch.compile pinnspec's step: losses, G and the update chain (train compile = ...; "
                        "needs the forward engine; "
                        "graphs: also CUDA graphs on CUDA; default off). The compile time is reported, not timed")
    p.add_argument("--plate-points", type=int, default=10_000, metavar="N",
                   help="interior points of the 4-hole plate whose sampling is timed against the epoch "
                        "(default 10000, with 1024 + 1024 boundary points; 0 skips it)")
    p.add_argument("--memory-epochs", type=int, default=3, metavar="N",
                   help="epochs per memory subprocess (default 3; 0 skips the memory measurement)")
    p.add_argument("--profile", type=int, default=10, metavar="N",
                   help="interleaved epochs for the per-stage breakdown (default 10; 0 skips it)")
    p.add_argument("--torch-profile", type=int, default=0, metavar="N",
                   help="also print torch.profiler's operator table over N epochs of each contender")
    return p


def main(argv: list[str] | None = None) -> int:
    """``pinnspec bench speed ARGS``; returns the exit code."""
    return run_main(build_parser(), run, argv)


# ====================================================================== contenders
def build_trainer(spec_path: str, *, points: int, grouping: str, surgery: str | None, align: str | None,
                  device: torch.device, seed: int, epochs: int, engine: str = "auto", compile: str = "off",
                  dtype: str = "float32", stack: str = "auto"):
    from ..engine import Trainer

    overrides = {"grouping": grouping, "surgery": surgery, "align": align, "device": device.type, "seed": seed,
                 "epochs": max(int(epochs), 1), "dtype": dtype, "engine": engine, "stack": stack,
                 "compile": compile}
    return Trainer(load_spec(spec_path, points={"burgers": points}, overrides=overrides))


def build_hand(*, points: int, grouping: str, device: torch.device, seed: int,
               dtype: str = "float32") -> HandWrittenBurgers:
    return HandWrittenBurgers(points, N_B, N_I, grouping=grouping, seed=seed, device=device,
                              dtype=getattr(torch, dtype))


def compiled_parts(trainer) -> str:
    """How pinnspec's step runs now: the execution plan's current strategy (after any fallback)."""
    current = trainer.execution.current
    reason = next((c.reason for c in trainer.plan.candidates if c.name == current), "")
    return f"{current} ({reason})" if reason else current


def same_problem(trainer, hand: HandWrittenBurgers) -> tuple[bool, float, float]:
    """Both at their initial weights, on pinnspec's epoch-0 points: (same weights?, max relative loss
    difference, max weight difference).  Checks that the baseline solves the same problem."""
    theta = [t.detach() for t in trainer.theta]
    weights = [w.detach() for w in hand.params]
    same_shapes = len(theta) == len(weights) and all(a.shape == b.shape for a, b in zip(theta, weights))
    weight_diff = max((float((a - b).abs().max()) for a, b in zip(theta, weights)), default=math.inf) \
        if same_shapes else math.inf
    points = trainer.problem.sample(0, trainer.seed, device=trainer.device, dtype=trainer.dtype)
    by_condition = {c: points.sets[s.index].x for s in trainer.problem.point_plan.sets for c in s.conditions}
    ours = trainer.problem.losses(trainer.model, points, trainer.params, trainer.grouping.name).tasks.detach()
    x_f = by_condition["burgers"].detach().clone().requires_grad_(True)
    theirs = torch.stack(hand.losses(x_f, by_condition["walls"].detach(), by_condition["ic"].detach()))
    theirs = theirs.detach().double().cpu()
    ours = ours.double().cpu()
    relative = float(((ours - theirs).abs() / theirs.abs().clamp_min(1e-30)).max())
    return same_shapes and weight_diff == 0.0, relative, weight_diff


# ====================================================================== the run
DTYPES = {"float32": ("float32",), "float64": ("float64",), "both": ("float32", "float64")}
F64_F32 = "float64/float32"  # the key of the per-round float64 / float32 ratios (--dtype both)


def run(args) -> int:
    if args.points < 1:
        raise BenchError(f"--points must be >= 1, got {args.points}")
    if args.plate_points < 0:
        raise BenchError(f"--plate-points must be >= 0 (0 skips the plate's sampling), got {args.plate_points}")
    device, allocator = setup(args)
    env = environment(device, allocator)
    spec_path = find_spec(args.spec)
    dtypes = DTYPES[args.dtype]
    both = len(dtypes) > 1
    total_epochs = 1 + args.warmup + args.epochs + args.profile + args.torch_profile
    pairs = {dt: (build_trainer(spec_path, points=args.points, grouping=args.grouping, surgery=args.surgery,
                                align=args.align, device=device, seed=args.seed, epochs=total_epochs,
                                engine=args.engine, compile=args.compile, dtype=dt, stack=args.stack),
                  build_hand(points=args.points, grouping=args.grouping, device=device, seed=args.seed, dtype=dt))
             for dt in dtypes}
    first = dtypes[0]
    trainer = pairs[first][0]
    t = trainer.spec.ir.training
    setting = {"points": f"{args.points} + {N_B} + {N_I}", "grouping": f"{args.grouping} (m = {trainer.grouping.m})",
               "surgery": str(t.surgery), "align": str(t.align), "optimizer": str(t.optimizer),
               "model": str(t.model), "params": sum(trainer.numels),
               "derivative engine": trainer.plan.engine or trainer.problem.engine,
               "stack": "on" if trainer.problem.stacked(device) else "off",
               "compile": trainer.plan.mode or "off", "dtype": args.dtype}

    def key(name: str, dt: str) -> str:  # the first dtype's settings keep their names; the other's get a suffix
        return name if dt == first else f"{name}_{dt}"

    print("pinnspec bench speed: one Burgers epoch, pinnspec Trainer.step vs hand-written torch")
    for line in environment_lines(env):
        print("  " + line)
    print(f"  spec {spec_path}: {setting['points']} points, grouping {setting['grouping']}, surgery "
          f"{setting['surgery']}, align {setting['align']}, optimizer {setting['optimizer']}, "
          f"{setting['model']} ({setting['params']} parameters), derivative engine {setting['derivative engine']} "
          f"(stack {setting['stack']}), "
          f"torch.compile {setting['compile']}, dtype {' and '.join(dtypes)}")
    for dt in dtypes:
        same_weights, loss_difference, _ = same_problem(*pairs[dt])
        print(f"  same problem{f' ({dt})' if both else ''}: initial weights "
              f"{'identical' if same_weights else 'DIFFERENT'}, losses at epoch 0 on the same points agree to "
              f"{loss_difference:.1e} (relative)")
    print(f"  {args.warmup} warm-up + {args.epochs} timed epochs each"
          f"{' (float32 and float64 pairs)' if both else ''}, interleaved ...", flush=True)

    epoch = 0
    for dt in dtypes:
        trainer, hand = pairs[dt]
        started = clock(device)
        trainer.step(epoch)  # the first step compiles (compile = on)
        setting[key("first_step_s", dt)] = round(clock(device) - started, 3)
        if trainer.plan.mode:
            setting[key("compiled", dt)] = compiled_parts(trainer)  # after the first step: a fallback shows here
            print(f"  first step{f' ({dt})' if both else ''} (torch.compile, mode {trainer.plan.mode}): "
                  f"{setting[key('first_step_s', dt)]:.1f} s; compiled: {setting[key('compiled', dt)]}", flush=True)
        hand.step()
    epoch += 1
    for _ in range(args.warmup):
        for trainer, hand in pairs.values():
            trainer.step(epoch)
            hand.step()
        epoch += 1
    rounds = {dt: [] for dt in dtypes}
    per_round = []  # --dtype both: float64 / float32 of each contender, same round
    for i in range(args.epochs):
        order = [(dt, who) for dt in dtypes for who in ("pinnspec", "hand")]
        if i % 2:
            order.reverse()
        seconds, rows = {}, {}
        with quiet_gc():
            for dt, who in order:
                trainer, hand = pairs[dt]
                start = clock(device)
                if who == "pinnspec":
                    rows[dt] = trainer.step(epoch)
                else:
                    hand.step()
                seconds[dt, who] = clock(device) - start
        epoch += 1
        for dt in dtypes:
            p, h = seconds[dt, "pinnspec"], seconds[dt, "hand"]
            rounds[dt].append({"round": i, "dtype": dt, "first": "pinnspec" if i % 2 == 0 else "hand",
                               "pinnspec_s": p, "hand_s": h, "ratio": p / h, "projected": rows[dt].get("projected")})
        if both:
            per_round.append({who: seconds["float64", who] / seconds["float32", who] for who in ("pinnspec", "hand")})
    stats = {dt: _statistics(rounds[dt]) for dt in dtypes}
    if both:
        stats[F64_F32] = _dtype_statistics(per_round, stats)
    aligned = [r["projected"] for r in rounds[first] if r["projected"] is not None]
    if aligned:
        setting["gua_projected"] = f"{sum(aligned)}/{len(aligned)} timed epochs"

    trainer, hand = pairs[first]
    plate_note = None
    if args.plate_points:
        plate_note = _plate_sampling_line(args, device, trainer.dtype, stats[first], setting)
        print(f"  {plate_note}", flush=True)

    stages = None
    if args.profile and trainer.plan.mode:
        # the breakdown times the network and the derivatives through a model proxy: inside a compiled
        # graph those stages are fused, and the proxy is not the MLP the compiled units were built for
        print("  per-stage breakdown: skipped (compile is on; its stages are fused into the compiled graphs)")
    elif args.profile:
        print(f"  per-stage breakdown over {args.profile} interleaved epochs"
              f"{' per dtype' if both else ''} ...", flush=True)
        stages = {}
        for dt in dtypes:
            stages[dt] = profile_pair(*pairs[dt], device, epochs=args.profile, first_epoch=epoch)
        epoch += args.profile
    profiles = None
    if args.torch_profile:
        profiles = {
            "pinnspec": torch_profile(trainer.step, device, epochs=args.torch_profile, first_epoch=epoch),
            "hand-written": torch_profile(lambda _, h=hand: h.step(), device, epochs=args.torch_profile, first_epoch=0),
        }
        epoch += args.torch_profile
    trainer_compiled = trainer.plan.mode is not None
    del trainer, hand, pairs

    memory, compiler = None, None
    if args.memory_epochs > 0:
        print(f"  memory: each contender{' and dtype' if both else ''} in a fresh subprocess, "
              f"{args.memory_epochs} epochs ...", flush=True)
        config = {"spec": spec_path, "points": args.points, "grouping": args.grouping, "surgery": args.surgery,
                  "align": args.align, "device": str(device), "seed": args.seed, "epochs": args.memory_epochs,
                  "threads": torch.get_num_threads(), "malloc": args.malloc, "engine": args.engine,
                  "stack": args.stack, "compile": args.compile}
        try:
            memory = {dt: {who: measure_memory(who, {**config, "dtype": dt}) for who in ("pinnspec", "hand")}
                      for dt in dtypes}
            if trainer_compiled:
                compiler = measure_memory("compiler", config)
        except RuntimeError as err:  # the timings stand without it
            memory, compiler = None, None
            print(f"note: no memory numbers: {err}", file=sys.stderr)

    tables = _report(stats, memory, stages, setting, env, dtypes)
    print()
    for table in tables:
        print(table.text())
        print()
    compiler_note = None
    if memory and compiler:
        footprint = compiler["footprint"]
        setting["compiler_footprint_mib"] = round(footprint / 2**20, 1)
        compiler_note = (f"memory: torch.compile itself (dynamo, inductor, a tiny compiled function; a fresh "
                         f"process) adds {_mib(footprint)} MiB of RSS to any compiled process; pinnspec's epoch peak "
                         f"less that (an estimate of the training's own): "
                         + ", ".join(f"{_mib(memory[dt]['pinnspec']['peak'] - footprint)} MiB"
                                     + (f" ({dt})" if both else "") for dt in dtypes))
        print(compiler_note)
    target = TARGET_COMPILED if trainer_compiled else TARGET_RATIO
    ratio = stats[first]["ratio"]
    in_dtype = "" if first == "float32" else f" in {first}"
    verdict = (f"target: median ratio <= {target:.2f} on CPU{' (compiled)' if trainer_compiled else ''} -> measured "
               f"{ratio:.3f}{in_dtype}: {'met' if ratio <= target else 'MISSED'}")
    if device.type != "cpu":
        epoch_ms = 1e3 * stats[first]["pinnspec"]["median"]
        verdict = (f"median ratio {ratio:.3f} on {device}{in_dtype}; pinnspec epoch {epoch_ms:.2f} ms against the "
                   f"GPU target of {TARGET_GPU_MS:.1f} ms: {'met' if epoch_ms <= TARGET_GPU_MS else 'MISSED'}")
    print(verdict)
    dtype_note = None
    if both:
        r = stats[F64_F32]
        dtype_note = (f"float64 / float32 (median over rounds of the float64 epoch / the float32 epoch of the same "
                      f"round): pinnspec {r['pinnspec']['median']:.3f} (p25 {r['pinnspec']['p25']:.3f}, p75 "
                      f"{r['pinnspec']['p75']:.3f}), hand-written {r['hand']['median']:.3f} (p25 "
                      f"{r['hand']['p25']:.3f}, p75 {r['hand']['p75']:.3f})")
        print(dtype_note)
    if "gua_projected" in setting:
        print(f"GUA changed the proposal (projection active) in {setting['gua_projected']} of pinnspec"
              f"{f' ({first})' if both else ''}")
    if profiles:
        for who, (text, _, _) in profiles.items():
            print(f"\ntorch.profiler, {who}{f' ({first})' if both else ''}, {args.torch_profile} epochs "
                  f"(self time):\n{text}")
        print(products_bound(profiles["pinnspec"], profiles["hand-written"], 1e3 * stats[first]["hand"]["median"]))
    if args.out:
        _write(args.out, env, tables, "\n\n".join(filter(None, [verdict, dtype_note, plate_note, compiler_note])),
               stats, rounds, memory, stages, setting, dtypes)
        print(f"written to {args.out}/speed.md, speed.csv, speed_epochs.csv"
              + (", speed_stages.csv" if stages else ""))
    return EXIT_OK


def find_plate() -> str | None:
    """examples/plate_holes/plate_holes.pinn under the working directory or the checkout; None if neither."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for candidate in (os.path.join(os.getcwd(), PLATE), os.path.join(root, PLATE)):
        if os.path.isfile(candidate):
            return candidate
    return None


def time_plate_sampling(path: str, interior: int, *, draws: int, device: torch.device, dtype: torch.dtype,
                        seed: int = 0) -> list[float]:
    """Seconds per draw of the plate's points for an epoch (``Problem.sample``, fresh points each draw:
    the epochs 1, 2, ...; epoch 0 first, untimed, for numpy's and scipy's first-call costs)."""
    from ..compiler import compile_spec

    spec = load_spec(path, points={"laplace": interior, **PLATE_BOUNDARY})
    problem = compile_spec(spec.ir)
    problem.sample(0, seed, device=device, dtype=dtype)
    seconds = []
    with quiet_gc():
        for epoch in range(1, draws + 1):
            start = clock(device)
            problem.sample(epoch, seed, device=device, dtype=dtype)
            seconds.append(clock(device) - start)
    return seconds


def _plate_sampling_line(args, device: torch.device, dtype: torch.dtype, stats: dict, setting: dict) -> str:
    """Time the plate's sampling (into ``setting``); the line that reports it against the epoch."""
    path = find_plate()
    if path is None:
        return f"sampling of the 4-hole plate: skipped (no {PLATE} in the working directory or the checkout)"
    draws = max(args.epochs, 3)
    seconds = median(time_plate_sampling(path, args.plate_points, draws=draws, device=device, dtype=dtype,
                                         seed=args.seed))
    epoch = stats["pinnspec"]["median"]
    boundary = sum(PLATE_BOUNDARY.values())
    setting["plate_sampling_s"] = seconds
    setting["plate_sampling_of_epoch"] = seconds / epoch
    return (f"sampling, 4-hole plate ({PLATE}): {args.plate_points} interior + {boundary} boundary points in "
            f"{ms(seconds)} ms (median of {draws} draws) = {seconds / epoch:.3f} of one pinnspec epoch "
            f"({ms(epoch)} ms, the median above)")


def products_bound(pinnspec: tuple[str, float, float], hand: tuple[str, float, float], hand_ms: float) -> str:
    """What the matrix products alone cost: pinnspec's products (self time under the profiler, which
    inflates them little) over the unprofiled median hand-written epoch ``hand_ms`` bound the ratio
    from below, however fast every other operator gets."""
    _, products, _ = pinnspec
    _, hand_products, hand_total = hand
    return (f"matrix products (self time under the profiler, per epoch): pinnspec {products:.2f} ms, hand-written "
            f"{hand_products:.2f} ms (of {hand_total:.2f} ms profiled); pinnspec's products alone are "
            f"{products / hand_ms:.3f} of the unprofiled hand-written epoch ({hand_ms:.2f} ms): no ratio below "
            f"that without fewer or faster products")


def _statistics(rounds: list[dict]) -> dict:
    p = [r["pinnspec_s"] for r in rounds]
    h = [r["hand_s"] for r in rounds]
    ratios = [r["ratio"] for r in rounds]
    return {
        "pinnspec": {"median": median(p), "p25": quantile(p, 0.25), "p75": quantile(p, 0.75), "min": min(p)},
        "hand": {"median": median(h), "p25": quantile(h, 0.25), "p75": quantile(h, 0.75), "min": min(h)},
        "ratio": median(ratios), "ratio_p25": quantile(ratios, 0.25), "ratio_p75": quantile(ratios, 0.75),
        "ratio_of_medians": median(p) / median(h), "ratio_of_mins": min(p) / min(h), "rounds": len(rounds),
    }


def _dtype_statistics(per_round: list[dict], stats: dict) -> dict:
    """float64 / float32 per contender: quantiles of the per-round ratios, the ratio of the medians and of
    the minima (``stats``: each dtype's :func:`_statistics`)."""
    out = {}
    for who in ("pinnspec", "hand"):
        r = [row[who] for row in per_round]
        a, b = stats["float64"][who], stats["float32"][who]
        out[who] = {"median": median(r), "p25": quantile(r, 0.25), "p75": quantile(r, 0.75),
                    "of_medians": a["median"] / b["median"], "of_mins": a["min"] / b["min"]}
    return out


def _mib(n):
    return "-" if n is None else f"{n / 2**20:.1f}"


def _report(stats, memory, stages, setting, env, dtypes=("float32",)) -> list[Table]:
    both = len(dtypes) > 1
    label = {"pinnspec": f"pinnspec Trainer.step ({setting['surgery']}, {setting['align'].split('(')[0]})",
             "hand": "hand-written torch (Adam on the sum)"}
    cuda = env["device"].startswith("cuda")
    mem_cols = ["RSS after setup MiB", "epoch peak RSS MiB", "growth MiB"] + (["CUDA peak alloc MiB"] if cuda else [])
    mem_keys = ["rss_setup", "peak", "growth"] + (["cuda_peak"] if cuda else [])
    rounds = stats[dtypes[0]]["rounds"]
    table = Table(["contender", "median ms", "p25 ms", "p75 ms", "min ms"] + mem_cols,
                  title=f"one epoch, {setting['points']} points, grouping {setting['grouping']}, "
                        f"{rounds} interleaved rounds, {' and '.join(dtypes)}; allocator: {env['allocator']}; "
                        f"torch {env['torch']}, torch threads {env['threads']}, {env['device']}")
    for dt in dtypes:
        s_dt, mem_dt = stats[dt], (memory[dt] if memory else None)
        tag = f", {dt}" if both else ""
        for who in ("pinnspec", "hand"):
            s = s_dt[who]
            mem = mem_dt[who] if mem_dt else {}
            cells = [_mib(mem.get(k)) for k in mem_keys]
            name = label[who][:-1] + tag + ")"
            table.add(name, ms(s["median"]), ms(s["p25"]), ms(s["p75"]), ms(s["min"]), *cells)
        ratio_cells = ["-"] * len(mem_cols)
        if mem_dt:
            ratio_cells = [_ratio(mem_dt["pinnspec"].get(k), mem_dt["hand"].get(k)) for k in mem_keys]
        table.add(f"ratio pinnspec / hand-written (per round{tag})", f"{s_dt['ratio']:.3f}",
                  f"{s_dt['ratio_p25']:.3f}", f"{s_dt['ratio_p75']:.3f}", f"{s_dt['ratio_of_mins']:.3f}",
                  *ratio_cells)
        table.add(f"ratio of the medians{tag}", f"{s_dt['ratio_of_medians']:.3f}", "", "", "",
                  *([""] * len(mem_cols)))
    if both:
        for who, name in (("pinnspec", "pinnspec"), ("hand", "hand-written")):
            r = stats[F64_F32][who]
            cells = ["-"] * len(mem_cols)
            if memory:
                cells = [_ratio(memory["float64"][who].get(k), memory["float32"][who].get(k)) for k in mem_keys]
            table.add(f"float64 / float32, {name} (per round)", f"{r['median']:.3f}", f"{r['p25']:.3f}",
                      f"{r['p75']:.3f}", f"{r['of_mins']:.3f}", *cells)
    tables = [table]
    for dt in (dtypes if stages else ()):
        ours, theirs = stages[dt]
        total = ours.get("total", math.nan)
        st = Table(["stage", "pinnspec ms", "hand-written ms", "difference ms", "% of pinnspec epoch"],
                   title=f"where the time goes{f' ({dt})' if both else ''} (medians per stage; instrumented "
                         f"epochs, allocator: {env['allocator']}; torch threads {env['threads']}, {env['device']})")
        for stage in STAGES + ("total",):
            if stage not in ours and stage not in theirs:
                continue
            a, b = ours.get(stage), theirs.get(stage)
            diff = (a or 0.0) - (b or 0.0)
            st.add(stage, ms(a, 3) if a is not None else "-", ms(b, 3) if b is not None else "-", ms(diff, 3),
                   percent((a or 0.0) / total, 1))
        tables.append(st)
    return tables


def _ratio(a, b) -> str:
    """A memory ratio; none against less than 1 MiB (a growth of nearly nothing)."""
    if a is None or b is None or b < 2**20:
        return "-"
    return f"{a / b:.3f}"


MEMORY_COLUMNS = {"setup_rss_bytes": "rss_setup", "epoch_peak_rss_bytes": "peak", "rss_growth_bytes": "growth",
                  "cuda_peak_bytes": "cuda_peak"}


def _write(out, env, tables, verdict, stats, rounds, memory, stages, setting, dtypes=("float32",)) -> None:
    os.makedirs(out, exist_ok=True)
    sections = [t.markdown() for t in tables] + [verdict]
    sections.append("Ratio per round: pinnspec's epoch / the hand-written epoch of the same round (the two run "
                    "back to back, alternating which goes first); the ratio row's min column is the ratio of the "
                    "minima. Memory: each contender alone in a fresh subprocess; RSS after setup (imports, "
                    "network, optimizer; pinnspec also its compiler and parser), then the RSS high-water mark over "
                    "the epochs after a reset (/proc/self/clear_refs) and its growth over the setup RSS."
                    + (" float64 / float32: the float64 epoch of a contender over its float32 epoch of the same "
                       "round (all four epochs of a round back to back); its min column is the ratio of the minima, "
                       "its memory columns the ratios of the two dtypes' numbers." if len(dtypes) > 1 else ""))
    write_markdown(os.path.join(out, "speed.md"), "pinnspec bench speed", env, sections)
    common = {**{k: env[k] for k in ("torch", "device", "threads", "allocator")}, **setting}
    rows = []
    for dt in dtypes:
        mem_dt = memory[dt] if memory else None
        for who in ("pinnspec", "hand"):
            mem = mem_dt[who] if mem_dt else {}
            rows.append({"contender": who, **common, "dtype": dt, "median_s": stats[dt][who]["median"],
                         "p25_s": stats[dt][who]["p25"], "p75_s": stats[dt][who]["p75"],
                         "min_s": stats[dt][who]["min"], **{c: mem.get(k) for c, k in MEMORY_COLUMNS.items()}})
        rows.append({"contender": "ratio", **common, "dtype": dt, "median_s": stats[dt]["ratio"],
                     "p25_s": stats[dt]["ratio_p25"], "p75_s": stats[dt]["ratio_p75"],
                     "min_s": stats[dt]["ratio_of_mins"],
                     **{c: _ratio_value(mem_dt, k) for c, k in MEMORY_COLUMNS.items()}})
    if len(dtypes) > 1:
        for who in ("pinnspec", "hand"):
            r = stats[F64_F32][who]
            pair = {"pinnspec": memory["float64"][who], "hand": memory["float32"][who]} if memory else None
            rows.append({"contender": f"{F64_F32} {who}", **common, "dtype": F64_F32, "median_s": r["median"],
                         "p25_s": r["p25"], "p75_s": r["p75"], "min_s": r["of_mins"],
                         **{c: _ratio_value(pair, k) for c, k in MEMORY_COLUMNS.items()}})
    columns = ["contender", "dtype", "median_s", "p25_s", "p75_s", "min_s"] + list(MEMORY_COLUMNS) + \
        [c for c in common if c != "dtype"]
    write_csv(os.path.join(out, "speed.csv"), columns, rows)
    write_csv(os.path.join(out, "speed_epochs.csv"),
              ["round", "dtype", "first", "pinnspec_s", "hand_s", "ratio", "projected"],
              [row for dt in dtypes for row in rounds[dt]])
    if stages:
        write_csv(os.path.join(out, "speed_stages.csv"), ["stage", "dtype", "pinnspec_s", "hand_s"],
                  [{"stage": s, "dtype": dt, "pinnspec_s": stages[dt][0].get(s), "hand_s": stages[dt][1].get(s)}
                   for dt in dtypes for s in STAGES + ("total",) if s in stages[dt][0] or s in stages[dt][1]])


def _ratio_value(memory, key):
    """``memory["pinnspec"][key] / memory["hand"][key]`` (None without both, or against less than 1 MiB)."""
    if not memory or memory["pinnspec"].get(key) is None or (memory["hand"].get(key) or 0) < 2**20:
        return None
    return memory["pinnspec"][key] / memory["hand"][key]


# ====================================================================== memory (subprocesses)
def measure_memory(who: str, config: dict) -> dict:
    """Run ``pinnspec.bench._memory`` for one contender in a fresh interpreter; its JSON result."""
    started = time.perf_counter()
    done = run_fresh("pinnspec.bench._memory", [json.dumps({**config, "contender": who})],
                     {"PINNSPEC_MALLOC": "off"} if config["malloc"] == "stock" else None)
    if done.returncode != 0:
        raise RuntimeError(f"the memory subprocess for {who} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def memory_probe(config: dict) -> dict:
    """Inside the subprocess: build one contender, reset the RSS high-water mark, run epochs."""
    from .._malloc import tune_allocator
    from .._rss import read_status, reset_peak

    tune_allocator()
    torch.set_num_threads(int(config["threads"]))
    device = torch.device(config["device"])
    if config["contender"] == "compiler":
        return compiler_footprint(device)
    if config["contender"] == "pinnspec":
        trainer = build_trainer(config["spec"], points=config["points"], grouping=config["grouping"],
                                surgery=config["surgery"], align=config["align"], device=device, seed=config["seed"],
                                epochs=config["epochs"] + 3, engine=config.get("engine", "auto"),
                                compile=config.get("compile", "off"), dtype=config.get("dtype", "float32"),
                                stack=config.get("stack", "auto"))
        # two steps before the measured epochs, as the timing's warm-up: a compiled contender (compile = on)
        # has built its graphs, and the zero-rate first step is behind it
        trainer.step(0)
        trainer.step(1)

        def step(epoch):
            trainer.step(epoch + 2)
    else:
        hand = build_hand(points=config["points"], grouping=config["grouping"], device=device, seed=config["seed"],
                          dtype=config.get("dtype", "float32"))
        hand.step()  # as pinnspec's first two steps, before the measured epochs
        hand.step()

        def step(epoch):
            hand.step()
    np.random.default_rng(0)  # numpy's lazy imports happen during setup, not in the measured epochs
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        cuda_base = torch.cuda.memory_allocated(device)
    before = read_status()
    exact = reset_peak()
    for epoch in range(int(config["epochs"])):
        step(epoch)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    after = read_status()
    # without the reset (kernels before 4.0, no /proc) VmHWM also covers the setup: growth is then an upper bound
    result = {"contender": config["contender"], "rss_setup": before["VmRSS"], "peak": after["VmHWM"],
              "growth": after["VmHWM"] - before["VmRSS"], "hwm_reset": exact, "rss_end": after["VmRSS"]}
    if device.type == "cuda":
        result["cuda_peak"] = torch.cuda.max_memory_allocated(device) - cuda_base
    return result


def compiler_footprint(device: torch.device) -> dict:
    """Inside the subprocess: the RSS that torch.compile itself adds to a process (dynamo, inductor,
    their caches and a compiled forward + backward of one tiny layer): carried by any compiled process,
    whatever its size, and part of a compiled contender's RSS."""
    from .._rss import read_status

    before = read_status()["VmRSS"]
    layer = torch.compile(lambda x, w: torch.tanh(x @ w).sum(), fullgraph=True)
    w = torch.randn(8, 8, device=device, requires_grad=True)
    layer(torch.randn(16, 8, device=device), w).backward()
    after = read_status()
    return {"contender": "compiler", "rss_setup": after["VmRSS"], "footprint": after["VmRSS"] - before}
