"""``pinnspec bench overhead``: what surgery, GUA and the diagnostics cost per step.

    pinnspec bench overhead [--epochs 20] [--sizes epoch,1000000] [--tasks 2,3,5,8,12,20,40]
                            [--methods none,pcgrad,...] [--device cpu|cuda|auto] [--out DIR]

On random G ([m, p], float32, from a seeded ``torch.Generator``) this times,
for every p in ``--sizes`` ("epoch" = the parameter count of the spec's
network, 10401 for Burgers) and every m in ``--tasks``:

* each surgery method ``surgery.make(name)(G, state)``;
* GUA's projection ``align.project(u, G, metric)`` with the Euclidean and the
  Adam metric (sqrt(v_hat) + eps of an Adam state);
* ``GUA(metric=adam).align(u, G, state, Adam)`` as the engine calls it: the
  conflict gate, the projection and the Adam state alignment;
* the state alignment alone, ``Adam.aligned_state`` (independent of m);
* the per-step diagnostics the engine records with alignment on:
  ``conflicts(G, a, u, p)``, ||p - u|| > 0 and cos(p, u).

u is built to conflict with g_1 (cos = -0.1), so the projection always runs:
the numbers are the cost of a step in which GUA acts.  Each is reported in
milliseconds and as a fraction of one training epoch of the spec
(``Trainer.step``, surgery none, align none, same process, median of
``--epochs`` epochs, half measured before the components and half after).
The epochs of grouping two (m = 2) and three (m = 3) are both measured, and
the same epochs with the spec's surgery and alignment (config + gua) give an
end-to-end check of the component sum.
"""

from __future__ import annotations

import math
import os

import torch

from ._cli import EXIT_OK, BenchError, Parser, run_main
from ._common import (Table, add_common_arguments, clock, environment, environment_lines, find_spec, load_spec,
                      median, ms, percent, quiet_gc, setup, time_call, write_csv, write_markdown)

SURGERY_METHODS = ("none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config", "mconfig")
DEFAULT_TASKS = (2, 3, 5, 8, 12, 20, 40)
TARGET_FRACTION = 0.05
RHO_M, RHO_V = 0.1, 0.03


def build_parser() -> Parser:
    p = Parser(prog="pinnspec bench overhead",
               description="Time every surgery method, the GUA projection (both metrics), the Adam state alignment "
                           "and the step diagnostics on random G, as fractions of one Burgers epoch.")
    add_common_arguments(p, epochs=20, warmup=3)
    p.add_argument("--sizes", default="epoch,1000000", metavar="P,...",
                   help="parameter counts p ('epoch' = the spec's network, 10401); default epoch,1000000")
    p.add_argument("--tasks", default=",".join(map(str, DEFAULT_TASKS)), metavar="M,...",
                   help="numbers of losses m (default 2,3,5,8,12,20,40)")
    p.add_argument("--methods", default=",".join(SURGERY_METHODS), metavar="NAME,...",
                   help="surgery methods (default: all built-in ones)")
    p.add_argument("--min-time", type=float, default=0.1, metavar="S",
                   help="time each cell for at least this many seconds (default 0.1, at least 5 calls)")
    p.add_argument("--points", type=int, default=10_000, metavar="N_F",
                   help="interior points of the epoch (default 10000, the spec's)")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    """``pinnspec bench overhead ARGS``; returns the exit code."""
    return run_main(build_parser(), run, argv)


# ====================================================================== the epoch
def _trainers(spec_path: str, device: torch.device, seed: int, epochs: int, points: int) -> dict:
    from ..engine import Trainer

    out = {}
    for grouping in ("two", "three"):
        for kind, overrides in (("base", {"surgery": "none", "align": "none"}), ("full", {})):
            spec = load_spec(spec_path, points={"burgers": points},
                             overrides={"grouping": grouping, "device": device.type, "seed": seed, "epochs": epochs,
                                        "dtype": "float32", **overrides})
            out[(kind, grouping)] = Trainer(spec)
    return out


class _Epochs:
    """Interleaved Trainer.step rounds over the four trainers; per-trainer lists of seconds."""

    def __init__(self, trainers: dict, device: torch.device):
        self.trainers = trainers
        self.device = device
        self.epoch = 0
        self.times: dict = {key: [] for key in trainers}

    def run(self, rounds: int, *, timed: bool = True) -> None:
        keys = list(self.trainers)
        for i in range(rounds):
            order = keys if i % 2 == 0 else keys[::-1]
            with quiet_gc():
                for key in order:
                    start = clock(self.device)
                    self.trainers[key].step(self.epoch)
                    if timed:
                        self.times[key].append(clock(self.device) - start)
            self.epoch += 1

    def median(self, key) -> float:
        return median(self.times[key])

    def paired_ratio(self, a, b) -> float:
        return median([x / y for x, y in zip(self.times[a], self.times[b])])


# ====================================================================== the components
def _conflicting_proposal(G: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random u with cos(g_1, u) = -0.1: it conflicts, so GUA projects."""
    z = torch.randn(G.shape[1], generator=generator, dtype=torch.float64)
    g = G[0].detach().cpu().to(torch.float64)
    g = g / g.norm()
    z = z - (z @ g) * g  # orthogonal to g_1
    u = z + (-0.1 / math.sqrt(1 - 0.01)) * z.norm() * g
    return u.to(G.dtype).to(G.device)


def _adam_state(optimizer, p: int, device: torch.device, generator: torch.Generator):
    """An Adam state after a few proposals of random directions (positive second moments)."""
    state = optimizer.init(torch.zeros(p, device=device))
    for _ in range(3):
        a = torch.randn(p, generator=generator).to(device)
        _, state = optimizer.propose(a, state)
    return state


def _diagnostics(G, a, u, p):
    """The per-step diagnostics with alignment on (what `UpdateChain.update` returns as its checks)."""
    from ..align import conflicts

    indicators = conflicts(G, a, u, p)
    changed = bool((p - u).norm() > 0)
    u64, p64 = u.double(), p.double()
    cos_pu = float(u64 @ p64 / (u64.norm() * p64.norm() + 1e-30))
    return indicators, changed, cos_pu


def components(p: int, m: int, methods: list[str], device: torch.device, seed: int, min_time: float) -> dict:
    """component name -> list of seconds per call, for one (p, m)."""
    from .. import surgery as surgery_module
    from ..align import GUA, conflicting, project
    from ..optim import Adam

    generator = torch.Generator().manual_seed(seed * 1_000_003 + p * 101 + m)
    G = torch.randn(m, p, generator=generator).to(device)  # [m, p]
    u = _conflicting_proposal(G, generator)  # [p]
    optimizer = Adam()
    state = _adam_state(optimizer, p, device, generator)
    theta = torch.randn(p, generator=generator).to(device)
    chain = torch.Generator(device=device).manual_seed(seed + 1)
    out: dict[str, list[float]] = {}
    timed = lambda fn: time_call(fn, device, min_time=min_time, min_reps=5)  # noqa: E731

    for name in methods:
        method = surgery_module.make(name)
        surgery_state = method.init(m, p, dtype=G.dtype, device=device)
        out[f"surgery {name}"] = timed(lambda: method(G, surgery_state, generator=chain))
    metric = optimizer.metric(state)
    out["project, euclidean metric"] = timed(lambda: project(u, G))
    out["project, adam metric"] = timed(lambda: project(u, G, metric))
    out["conflict gate"] = timed(lambda: conflicting(G, u))
    projected = project(u, G, metric)
    out["state alignment (adam)"] = timed(
        lambda: optimizer.aligned_state(state, projected, rho_m=RHO_M, rho_v=RHO_V, params=theta))
    for name, gua in (("GUA.align, euclidean", GUA(metric="euclidean", rho_m=RHO_M, rho_v=RHO_V)),
                      ("GUA.align, adam", GUA(metric="adam", rho_m=RHO_M, rho_v=RHO_V))):
        out[name] = timed(lambda: gua.align(u, G, state, optimizer, params=theta))
    a = surgery_module.make("config")(G)[0]
    p_adam = GUA(metric="adam", rho_m=RHO_M, rho_v=RHO_V).align(u, G, state, optimizer, params=theta)[0]
    out["diagnostics"] = timed(lambda: _diagnostics(G, a, u, p_adam))
    out["_projection_active"] = [float(bool((p_adam - u).norm() > 0))]
    return out


# ====================================================================== the run
def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BenchError(f"{what} expects whole numbers separated by commas, got '{text}'") from None
    if not values or min(values) < 1:
        raise BenchError(f"{what} expects whole numbers >= 1, got '{text}'")
    return values


def run(args) -> int:
    from ..registry import SURGERY

    methods = [x.strip() for x in args.methods.split(",") if x.strip()]
    unknown = [x for x in methods if x not in SURGERY.names()]
    if unknown:
        raise BenchError(f"unknown surgery method '{unknown[0]}' (known: {', '.join(SURGERY.names())})")
    tasks = _int_list(args.tasks, "--tasks")
    if args.points < 1:
        raise BenchError(f"--points must be >= 1, got {args.points}")
    size_tokens = [x.strip() for x in args.sizes.split(",") if x.strip()]
    if not size_tokens:
        raise BenchError("--sizes lists no parameter count")
    for token in size_tokens:
        if token != "epoch":
            _int_list(token, "--sizes")
    device, allocator = setup(args)
    env = environment(device, allocator)
    spec_path = find_spec(args.spec)
    first_half = args.epochs // 2
    trainers = _trainers(spec_path, device, args.seed, args.warmup + args.epochs, args.points)
    n_params = sum(trainers[("base", "three")].numels)
    sizes = list(dict.fromkeys(n_params if x == "epoch" else _int_list(x, "--sizes")[0] for x in size_tokens))

    print("pinnspec bench overhead: surgery, GUA and diagnostics as a fraction of one Burgers epoch")
    for line in environment_lines(env):
        print("  " + line)
    t = trainers[("full", "three")].spec.ir.training
    print(f"  epoch: Trainer.step of {spec_path} ({n_params} parameters, {args.points} + 250 + 250 points); "
          f"base = surgery none, align none; full = {t.surgery} + {t.align}")
    print(f"  {args.warmup} warm-up + {args.epochs} timed epochs of 4 trainers (base/full x grouping two/three), "
          "interleaved; components on random G between the two halves ...", flush=True)

    epochs = _Epochs(trainers, device)
    epochs.run(args.warmup, timed=False)
    epochs.run(first_half)
    cells: dict[tuple[int, int], dict] = {}
    for p in sizes:
        for m in tasks:
            cells[(p, m)] = components(p, m, methods, device, args.seed, args.min_time)
        print(f"  p = {p}: done", flush=True)
    epochs.run(args.epochs - first_half)
    del trainers

    base = {g: epochs.median(("base", g)) for g in ("two", "three")}
    full = {g: epochs.median(("full", g)) for g in ("two", "three")}
    end_to_end = {g: epochs.paired_ratio(("full", g), ("base", g)) - 1 for g in ("two", "three")}
    denominator = base["three"]

    tables = []
    epoch_table = Table(["epoch (Trainer.step)", "grouping two (m = 2) ms", "grouping three (m = 3) ms"],
                        title=f"one Burgers epoch, median of {args.epochs}; allocator: {env['allocator']}; "
                              f"torch {env['torch']}, torch threads {env['threads']}, {env['device']}")
    epoch_table.add("base: surgery none, align none", ms(base["two"]), ms(base["three"]))
    epoch_table.add(f"full: {t.surgery} + {t.align.name}",
                    ms(full["two"]), ms(full["three"]))
    epoch_table.add("full / base - 1 (median per round)", percent(end_to_end["two"], 1),
                    percent(end_to_end["three"], 1))
    tables.append(epoch_table)

    names = [k for k in next(iter(cells.values())) if not k.startswith("_")]
    rows = []
    for p in sizes:
        table = Table(["component"] + [f"m = {m}" for m in tasks],
                      title=f"p = {p}: median ms per call (% of the grouping-three base epoch, "
                            f"{ms(denominator)} ms); allocator: {env['allocator']}; torch threads {env['threads']}, "
                            f"{env['device']}")
        for name in names:
            cells_row = []
            for m in tasks:
                seconds = median(cells[(p, m)][name])
                cells_row.append(f"{ms(seconds, 3)} ({percent(seconds / denominator, 2)})")
                rows.append({"p": p, "m": m, "component": name, "median_s": seconds,
                             "fraction_of_epoch": seconds / denominator, "calls": len(cells[(p, m)][name]),
                             "epoch_s": denominator})
            table.add(name, *cells_row)
        tables.append(table)

    # the headline: config + GUA + diagnostics at m = 2 and 3 against the matching epoch
    headline = Table([f"p = {n_params}", "config ms", "GUA.align (adam) ms", "diagnostics ms", "sum ms",
                      "epoch ms", "sum / epoch", f"target <= {TARGET_FRACTION:.0%}"],
                     title="surgery + GUA + diagnostics at m <= 3 (GUA projecting every step: the worst case); "
                           f"allocator: {env['allocator']}; torch threads {env['threads']}, {env['device']}")
    verdicts = []
    for m, grouping in ((2, "two"), (3, "three")):
        if (n_params, m) not in cells or "surgery config" not in cells[(n_params, m)]:
            continue
        c = cells[(n_params, m)]
        parts = [median(c["surgery config"]), median(c["GUA.align, adam"]), median(c["diagnostics"])]
        total = sum(parts)
        fraction = total / base[grouping]
        verdicts.append(fraction <= TARGET_FRACTION)
        headline.add(f"m = {m} (grouping {grouping})", *(ms(x, 3) for x in parts), ms(total, 3), ms(base[grouping]),
                     percent(fraction, 2), "met" if fraction <= TARGET_FRACTION else "MISSED")
        rows.append({"p": n_params, "m": m, "component": "config + GUA.align adam + diagnostics", "median_s": total,
                     "fraction_of_epoch": fraction, "calls": "", "epoch_s": base[grouping]})
    if headline.rows:
        tables.append(headline)

    print()
    for table in tables:
        print(table.text())
        print()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        notes = ("Random G (float32, seeded torch.Generator); u conflicts with g_1 (cos = -0.1), so the projection "
                 "and the state alignment run in every call. Epoch: Trainer.step median in the same process; "
                 "fractions use the grouping-three base epoch except the m <= 3 summary, which uses the epoch "
                 "of the matching grouping.")
        write_markdown(os.path.join(args.out, "overhead.md"), "pinnspec bench overhead", env,
                       [tb.markdown() for tb in tables] + [notes])
        common = {k: env[k] for k in ("torch", "device", "threads", "allocator")}
        write_csv(os.path.join(args.out, "overhead.csv"),
                  ["p", "m", "component", "median_s", "fraction_of_epoch", "calls", "epoch_s"] + list(common),
                  [{**row, **common} for row in rows])
        print(f"written to {args.out}/overhead.md, overhead.csv")
    return EXIT_OK
