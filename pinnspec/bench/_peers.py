"""``pinnspec bench peers``: pinnspec beside DeepXDE (and PINA where it installs) on DeepXDE's Burgers example.

The problem, network, point counts and loss are DeepXDE's (its ``examples/pinn_forward/Burgers.py``):
u_t + u u_x = (0.01/pi) u_xx on x in [-1, 1], t in [0, 0.99], u(x, 0) = -sin(pi x), u(+-1, t) = 0; a tanh MLP
[2] + [20] x 3 + [1]; 2,540 domain, 80 boundary and 160 initial Hammersley points drawn once; the loss the mean
squared PDE residual over every training point (domain, boundary and initial: DeepXDE's ``TimePDE``) plus the
boundary and the initial condition's; Adam at 1e-3.  Each run is a fresh interpreter with one torch thread
and pinnspec's allocator settings (``pinnspec._malloc``, for every contender), one after another (never two at
once).  Beside the libraries, the problem written directly in plain torch (`BurgersByHand`: pinnspec's eager
arithmetic by hand -- u_x and u_t - nu u_xx carried forward through the layers, one backward pass,
``torch.optim.Adam``): the floor of pinnspec's eager step in torch.  pinnspec trains eagerly, with ``compile =
on`` and with ``compile = auto``, after one short compiled run that warms the compile cache (untimed).
Reported: ms per iteration and the loop's seconds (the training call's wall time: DeepXDE's ``model.train``,
pinnspec's ``Trainer.run``, each with its own loss reports every 1,000 iterations), their ratios to DeepXDE's
(of the medians, and per seed: each run's over the DeepXDE run of its seed, a minute or two before it, median
over the seeds), the set-up seconds before the loop (problem, network, optimizer; ``compile = auto``'s
decision; a compiled run's loading of the compiler's modules) and set-up plus loop with its ratio, and the
rel-L2 of the final model on one 256 x 100 grid against the Cole-Hopf solution (pinnspec's
``cole_hopf_burgers``), over the seeds.

What differs: each tool draws its own points of the same counts (Hammersley; PINA, which has no Hammersley
sampler, Latin hypercube) and initialises its own network (DeepXDE: Glorot normal; pinnspec and the plain
torch run: Xavier uniform; PINA: torch's default).  PINA (pina-mathlab, on PyTorch Lightning) writes DeepXDE's
pooled PDE loss as three conditions weighed by their shares of the points.  DeepXDE and PINA are an optional
extra (``pip install pinnspec[peers]``); without DeepXDE the bench says so and exits 1, without PINA it leaves
PINA out (unless ``--contenders`` names it).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time

from ._cli import EXIT_OK, BenchError, Parser, positive, run_main
from ._report import markdown_table, write_outputs

__all__ = ["main", "build_parser", "SPEC", "summarize"]

NU = 0.01 / math.pi
#: DeepXDE's Burgers example as a spec: the PDE restated on the boundary and initial points and pooled with the
#: interior's (DeepXDE's TimePDE evaluates the PDE on every training point)
SPEC = """problem burgersdeepxde
space x in [-1, 1]
time  t in [0, 0.99]
field u
let nu = 0.01/pi
let residual = u_t + u*u_x - nu*u_xx
equation burgers: residual = 0
initial  ic: u = -sin(pi*x)
boundary walls on x = -1, x = 1: u = 0
boundary burgerswalls on x = -1, x = 1: residual = 0
initial  burgersic: residual = 0
grouping deepxde = [pool(burgers, burgerswalls, burgersic), walls, ic]
points burgers 2540, walls 80, ic 160, burgerswalls 80, burgersic 160
sampler hammersley
resample never
reference cole_hopf_burgers(nu = nu)
validate test every 1000
model     mlp(width = 20, depth = 3, activation = tanh, init = xavier)
optimizer adam(lr = 1e-3)
schedule  constant
train     epochs = 5000, seed = 0, grouping = deepxde
"""

BY_HAND = "torch by hand"  # the problem in plain torch with pinnspec's eager arithmetic (`BurgersByHand`)
CONTENDERS = ("deepxde", "pina", BY_HAND, "pinnspec eager", "pinnspec compile = on", "pinnspec compile = auto")
#: the peers besides pinnspec, with the module that tells whether each is installed and how to install it
PEERS = {"deepxde": ("deepxde", "pip install 'pinnspec[peers]' (DeepXDE with its torch backend)"),
         "pina": ("pina", "pip install 'pinnspec[peers]' (PINA, pina-mathlab)")}
#: the compile setting of each pinnspec contender
COMPILE = {"pinnspec eager": "off", "pinnspec compile = on": "on", "pinnspec compile = auto": "auto"}


def build_parser() -> Parser:
    p = Parser(prog="pinnspec bench peers", description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=positive, default=5000, help="Adam iterations per run (default 5000)")
    p.add_argument("--seeds", type=positive, default=3, help="seeds 0 .. N-1 per contender (default 3)")
    p.add_argument("--contenders", default=None,
                   help=f"comma-separated, of: {', '.join(CONTENDERS)} (default: all; PINA where it is installed)")
    p.add_argument("--out", help="also write peers.md and peers.csv here")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def _run(args) -> int:
    from ._common import run_fresh

    contenders = select(args.contenders, lambda module: run_fresh(
        "pinnspec.bench._peers", ["--has", module], env=_ONE_THREAD).returncode == 0)
    if any(COMPILE.get(c, "off") != "off" for c in contenders):
        # a warm compile cache, as a user's second run has it: one short compiled run first, untimed (it also
        # records its first step, which `compile = auto` reads)
        warm = run_fresh("pinnspec.bench._peers", ["--worker", "pinnspec compile = on", "0", "3"], env=_ONE_THREAD)
        if warm.returncode != 0:
            raise BenchError(f"the compile cache's warm-up run failed:\n{warm.stderr.strip()[-2000:]}")
    runs = []
    for seed in range(args.seeds):  # the contenders interleaved, seed by seed: drifts of the machine hit all alike
        for contender in contenders:
            done = run_fresh("pinnspec.bench._peers", ["--worker", contender, str(seed), str(args.iterations)],
                             env=_ONE_THREAD)
            if done.returncode != 0:
                raise BenchError(f"{contender}, seed {seed} failed:\n{done.stderr.strip()[-2000:]}")
            record = json.loads(done.stdout.strip().splitlines()[-1])
            runs.append(record)
            print(f"{contender}, seed {seed}: {record['ms_per_iteration']:.2f} ms/iteration, "
                  f"{record['loop_s']:.1f} s, rel-L2 {record['rel_l2']:.3e}", flush=True)
    rows = summarize(runs, contenders)
    text = markdown(rows, args.iterations, args.seeds)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_outputs(args.out, "peers", text, list(rows[0]), rows)
    return EXIT_OK


def select(contenders: str | None, installed) -> list[str]:
    """The contenders to run: ``contenders`` (comma-separated), else all, PINA only where ``installed(module)``
    says it is (and a line that it is left out); a named peer that is not installed, or an unknown name, is a
    `BenchError`."""
    names = [c.strip() for c in (contenders or ",".join(CONTENDERS)).split(",") if c.strip()]
    unknown = [c for c in names if c not in CONTENDERS]
    if unknown:
        raise BenchError(f"unknown contender {', '.join(unknown)} (known: {', '.join(CONTENDERS)})")
    for peer in [c for c in names if c in PEERS]:
        module, install = PEERS[peer]
        if installed(module):
            continue
        if peer == "pina" and contenders is None:  # PINA where it installs
            print(f"PINA is not installed ({install}): left out", flush=True)
            names.remove(peer)
            continue
        raise BenchError(f"{peer} is not installed: {install}, or leave it out with --contenders")
    return names


_ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "DDE_BACKEND": "pytorch"}


def summarize(runs: list[dict], contenders: list[str]) -> list[dict]:
    """One row per contender: medians over the seeds of ms per iteration and loop seconds, their ratio to
    DeepXDE's (None without it), the median over the seeds of each run's ms per iteration over DeepXDE's of
    the same seed (``ratio_ms_paired``) and over the hand-written step's (``ratio_hand_paired``: what pinnspec's
    own code adds to the same arithmetic; None without that contender), and the rel-L2's mean, spread (min, max)
    and seeds."""
    by = {c: [r for r in runs if r["contender"] == c] for c in contenders}
    base = by.get("deepxde")
    base_ms = statistics.median(r["ms_per_iteration"] for r in base) if base else None
    base_s = statistics.median(r["loop_s"] for r in base) if base else None
    base_total = statistics.median(r["setup_s"] + r["loop_s"] for r in base) if base else None
    base_by_seed = {r["seed"]: r["ms_per_iteration"] for r in base} if base else {}  # seed -> DeepXDE's ms
    hand_by_seed = {r["seed"]: r["ms_per_iteration"] for r in by.get(BY_HAND, [])}  # seed -> the by-hand step's ms
    rows = []
    for contender, its in by.items():
        ms = statistics.median(r["ms_per_iteration"] for r in its)
        loop = statistics.median(r["loop_s"] for r in its)
        total = statistics.median(r["setup_s"] + r["loop_s"] for r in its)
        errors = [r["rel_l2"] for r in its]
        # each run over the DeepXDE run of its seed, a minute or two before it: a slow drift of the machine's
        # speed over the sitting cancels in each ratio
        paired = [r["ms_per_iteration"] / base_by_seed[r["seed"]] for r in its if r["seed"] in base_by_seed]
        over_hand = [r["ms_per_iteration"] / hand_by_seed[r["seed"]] for r in its if r["seed"] in hand_by_seed]
        rows.append({"contender": contender, "seeds": len(its), "setup_s": statistics.median(r["setup_s"] for r in its),
                     "ms_per_iteration": ms,
                     "ratio_ms": ms / base_ms if base_ms else None,
                     "ratio_ms_paired": statistics.median(paired) if paired else None,
                     "ratio_hand_paired": statistics.median(over_hand) if over_hand else None, "loop_s": loop,
                     "ratio_loop": loop / base_s if base_s else None, "total_s": total,
                     "ratio_total": total / base_total if base_total else None,
                     "rel_l2_mean": statistics.fmean(errors),
                     "rel_l2_min": min(errors), "rel_l2_max": max(errors),
                     "execution": its[0].get("execution", "")})
    return rows


def markdown(rows: list[dict], iterations: int, seeds: int) -> str:
    x = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    table = markdown_table(
        ["run", "set-up s", "ms / iteration", "vs DeepXDE", "per seed vs DeepXDE", "per seed vs by hand", "loop s",
         "vs DeepXDE", "set-up + loop s", "vs DeepXDE", "rel-L2 (mean; min-max)", "how"],
        [[r["contender"], f"{r['setup_s']:.1f}", f"{r['ms_per_iteration']:.2f}", x(r["ratio_ms"]),
          x(r["ratio_ms_paired"]), x(r["ratio_hand_paired"]), f"{r['loop_s']:.1f}",
          x(r["ratio_loop"]), f"{r['total_s']:.1f}", x(r["ratio_total"]),
          f"{r['rel_l2_mean']:.3e}; {r['rel_l2_min']:.2e}-{r['rel_l2_max']:.2e}", r["execution"]] for r in rows])
    head = (f"DeepXDE's Burgers example, {iterations} Adam iterations, medians over {seeds} seed(s), one thread "
            "per run, one run at a time:")
    return "\n".join([head, ""] + table) + "\n"


# ====================================================================== one run, in its own interpreter
def _test_grid():
    """The reference's own grid (Raissi's 256 x 100 points, t up to 0.99): the spec's test points too."""
    from ..references import cole_hopf_burgers

    return cole_hopf_burgers(nu=NU).grid()  # [N, 2]


def _reference(points):
    from ..references import cole_hopf_burgers

    return cole_hopf_burgers(nu=NU)(points)  # [N, 1]


def _rel_l2(prediction, reference) -> float:
    import numpy as np

    return float(np.linalg.norm(prediction - reference) / np.linalg.norm(reference))


def run_deepxde(seed: int, iterations: int) -> dict:
    """DeepXDE's example as its docs write it (torch backend), timed around ``model.train``."""
    import deepxde as dde
    import numpy as np

    built = time.perf_counter()
    dde.config.set_random_seed(seed)
    geomtime = dde.geometry.GeometryXTime(dde.geometry.Interval(-1, 1), dde.geometry.TimeDomain(0, 0.99))

    def pde(x, y):
        dy_x = dde.grad.jacobian(y, x, i=0, j=0)
        dy_t = dde.grad.jacobian(y, x, i=0, j=1)
        dy_xx = dde.grad.hessian(y, x, i=0, j=0)
        return dy_t + y * dy_x - NU * dy_xx

    bc = dde.icbc.DirichletBC(geomtime, lambda x: 0, lambda _, on_boundary: on_boundary)
    ic = dde.icbc.IC(geomtime, lambda x: -np.sin(np.pi * x[:, 0:1]), lambda _, on_initial: on_initial)
    data = dde.data.TimePDE(geomtime, pde, [bc, ic], num_domain=2540, num_boundary=80, num_initial=160)
    net = dde.nn.FNN([2] + [20] * 3 + [1], "tanh", "Glorot normal")
    model = dde.Model(data, net)
    model.compile("adam", lr=1e-3)
    started = time.perf_counter()
    model.train(iterations=iterations, display_every=1000, verbose=0)
    loop = time.perf_counter() - started
    grid = _test_grid()
    return {"setup_s": started - built, "loop_s": loop, "rel_l2": _rel_l2(model.predict(grid), _reference(grid)),
            "execution": "deepxde"}


def run_pina(seed: int, iterations: int) -> dict:
    """The same problem, network, point counts and loss in PINA (pina-mathlab), timed around its trainer's
    ``train``: the PDE's conditions on the interior, boundary and initial points weighed by their shares of
    the 2,780 points (DeepXDE's pooled mean), the boundary and initial conditions at weight 1; Latin-hypercube
    points drawn once (PINA has no Hammersley sampler); Adam at 1e-3, full batch, one step per epoch, without
    validation, logging, progress bar or checkpoints."""
    import warnings

    warnings.filterwarnings("ignore")  # PINA's and Lightning's deprecation notes and tips
    import numpy as np
    import torch
    from pina import Condition, Trainer
    from pina.domain import CartesianDomain
    from pina.equation import Equation
    from pina.equation.zoo import FixedValue
    from pina.model import FeedForward
    from pina.operator import grad, laplacian
    from pina.optim import TorchOptimizer
    from pina.problem import SpatialProblem, TimeDependentProblem
    from pina.solver import PhysicsInformedSingleModelSolver
    from pina.weighting import ScalarWeighting

    built = time.perf_counter()
    torch.manual_seed(seed)
    np.random.seed(seed)

    def burgers(x, u):
        return grad(u, x, d=["t"]) + u * grad(u, x, d=["x"]) - NU * laplacian(u, x, d=["x"])

    def initial(x, u):
        return u + torch.sin(torch.pi * x["x"])

    space, times = CartesianDomain({"x": [-1, 1]}), CartesianDomain({"t": [0, 0.99]})

    class Burgers(TimeDependentProblem, SpatialProblem):
        output_variables = ["u"]
        spatial_domain, temporal_domain = space, times
        domains = {"D": space.update(times), "walls": space.partial().update(times),
                   "t0": space.update(CartesianDomain({"t": 0}))}
        conditions = {"D": Condition(domain="D", equation=Equation(burgers)),
                      "walls_pde": Condition(domain="walls", equation=Equation(burgers)),
                      "t0_pde": Condition(domain="t0", equation=Equation(burgers)),
                      "walls": Condition(domain="walls", equation=FixedValue(0.0)),
                      "t0": Condition(domain="t0", equation=Equation(initial))}

    problem = Burgers()
    counts = {"D": 2540, "walls": 80, "t0": 160}
    for domain, n in counts.items():
        problem.discretise_domain(n, "lh", domains=[domain])
    pooled = sum(counts.values())
    weights = {"D": counts["D"] / pooled, "walls_pde": counts["walls"] / pooled, "t0_pde": counts["t0"] / pooled,
               "walls": 1.0, "t0": 1.0}
    model = FeedForward(input_dimensions=2, output_dimensions=1, inner_size=20, n_layers=3, func=torch.nn.Tanh)
    solver = PhysicsInformedSingleModelSolver(problem=problem, model=model,
                                              optimizer=TorchOptimizer(torch.optim.Adam, lr=1e-3),
                                              weighting=ScalarWeighting(weights=weights))
    trainer = Trainer(solver, max_epochs=iterations, accelerator="cpu", batch_size=None, train_size=1.0,
                      val_size=0.0, test_size=0.0, enable_progress_bar=False, logger=False,
                      enable_model_summary=False, enable_checkpointing=False)
    started = time.perf_counter()
    trainer.train()
    loop = time.perf_counter() - started
    grid = _test_grid()  # columns x, t: PINA's input variables in its order
    with torch.no_grad():
        prediction = model(torch.as_tensor(grid, dtype=torch.float32)).double().numpy()
    return {"setup_s": started - built, "loop_s": loop, "rel_l2": _rel_l2(prediction, _reference(grid)),
            "execution": "pina"}


def hammersley(n: int):
    """``n`` points [n, 2] of the 2-D Hammersley set inside (0, 1)^2: (i / (n + 1), the base-2 radical inverse of
    i) for i = 1 .. n -- pinnspec's ``Hammersley`` sampler of n + 1 points without its point at the origin (as
    corners are left out)."""
    from ..sampling import Hammersley

    return Hammersley()(n + 1, 2)[1:]


def radical_inverse(n: int):
    """The base-2 radical inverse (van der Corput) of 1 .. n, [n]: the second column of `hammersley`."""
    return hammersley(n)[:, 1]


class BurgersByHand:
    """DeepXDE's Burgers example trained directly in plain torch, no library in the step (its points, drawn once,
    are `hammersley`'s): the arithmetic of pinnspec's eager step, as a careful person would write it by hand.

    The tanh MLP [2] + [20] x 3 + [1] (Xavier-uniform weights, zero biases, drawn from a generator seeded with the
    seed) carries two of u's input derivatives forward through its layers: u_x and the linear part of the PDE,
    L u = u_t - nu u_xx, as one row (the residual is L u + u u_x).  A hidden layer maps h and its rows h_x, L h
    (each [N, w]) to z = h W^T + b, z_x = h_x W^T, L z = (L h) W^T, then with t = tanh z and s = 1 - t^2 (tanh';
    tanh'' = -2 t s): h' = t, h'_x = s z_x, L h' = s L z + 2 nu t s z_x^2.  One backward pass of the loss gives the
    parameters' gradient; ``torch.optim.Adam`` (lr 1e-3, its other settings the defaults) steps."""

    def __init__(self, seed: int, width: int = 20, depth: int = 3):
        import numpy as np
        import torch

        generator = torch.Generator().manual_seed(seed)
        sizes = [2] + [width] * depth + [1]
        self.layers = []
        for fan_in, fan_out in zip(sizes, sizes[1:]):
            weight = torch.empty(fan_out, fan_in)
            torch.nn.init.xavier_uniform_(weight, generator=generator)
            self.layers.append((weight.requires_grad_(), torch.zeros(fan_out, requires_grad=True)))
        # 2,540 domain points on [-1, 1] x [0, 0.99]; 80 on the walls x = -1, 1 (alternating), t a van der Corput
        # sequence; 160 at t = 0, x a van der Corput sequence
        domain = hammersley(2540) * [2.0, 0.99] + [-1.0, 0.0]
        walls = np.stack([np.where(np.arange(80) % 2 == 0, -1.0, 1.0), 0.99 * radical_inverse(80)], axis=1)
        initial = np.stack([2.0 * radical_inverse(160) - 1.0, np.zeros(160)], axis=1)
        self.x = torch.as_tensor(np.concatenate([domain, walls, initial]), dtype=torch.float32)  # [2780, 2]
        self.initial_u = -torch.sin(math.pi * self.x[2620:, :1])  # [160, 1]
        self.optimizer = torch.optim.Adam([p for layer in self.layers for p in layer], lr=1e-3)

    def derivatives(self, x):
        """(u, u_x, u_t - nu u_xx), each [N, 1], at x [N, 2]."""
        import torch
        from torch.nn import functional as F

        (w, b), hidden, (w_out, b_out) = self.layers[0], self.layers[1:-1], self.layers[-1]
        t = torch.tanh(F.linear(x, w, b))  # [N, w]; the first layer's z_x, z_t are its weight's columns, z_xx = 0
        s = 1 - t * t
        h, hx, hL = t, s * w[:, 0], s * w[:, 1] + 2 * NU * t * s * (w[:, 0] * w[:, 0])
        for w, b in hidden:
            z, zx, zL = F.linear(h, w, b), F.linear(hx, w), F.linear(hL, w)
            t = torch.tanh(z)
            s = 1 - t * t
            h, hx, hL = t, s * zx, s * zL + 2 * NU * t * s * zx * zx
        return F.linear(h, w_out, b_out), F.linear(hx, w_out), F.linear(hL, w_out)

    def loss(self):
        """DeepXDE's loss: the mean squared PDE residual over all 2,780 points, the walls' u^2, the initial
        condition's (u + sin(pi x))^2."""
        u, ux, Lu = self.derivatives(self.x)
        residual = Lu + u * ux  # [2780, 1]
        return (residual.square().mean() + u[2540:2620].square().mean()
                + (u[2620:] - self.initial_u).square().mean())

    def train(self, iterations: int, report_every: int = 1000) -> list[float]:
        """Adam for ``iterations`` steps; the loss read back every ``report_every`` (DeepXDE's display)."""
        reported = []
        for step in range(iterations):
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss()
            loss.backward()
            self.optimizer.step()
            if step % report_every == 0 or step == iterations - 1:
                reported.append(float(loss.detach()))
        return reported

    def predict(self, points):
        import torch
        from torch.nn import functional as F

        h = torch.as_tensor(points, dtype=torch.float32)
        with torch.no_grad():
            for w, b in self.layers[:-1]:
                h = torch.tanh(F.linear(h, w, b))
            return F.linear(h, *self.layers[-1]).double().numpy()


def run_by_hand(seed: int, iterations: int) -> dict:
    """`BurgersByHand`, timed around its training loop."""
    built = time.perf_counter()
    model = BurgersByHand(seed)
    started = time.perf_counter()
    model.train(iterations)
    loop = time.perf_counter() - started
    grid = _test_grid()
    return {"setup_s": started - built, "loop_s": loop, "rel_l2": _rel_l2(model.predict(grid), _reference(grid)),
            "execution": "plain torch, the same arithmetic"}


def run_pinnspec(seed: int, iterations: int, compile_setting: str) -> dict:
    """The spec above through the public API, timed around ``Trainer.run`` (a compiled run's first step
    compiles inside the loop's time; ``compile = auto`` decides when the Trainer is built, before it)."""
    from ..engine import Trainer
    from ..lang import apply_overrides, loads

    built = time.perf_counter()
    spec = apply_overrides(loads(SPEC, filename="peers.pinn"),
                           {"seed": seed, "epochs": iterations, "compile": compile_setting, "device": "cpu"})
    trainer = Trainer(spec)
    started = time.perf_counter()
    trainer.run()
    loop = time.perf_counter() - started
    grid = _test_grid()
    import torch

    prediction = trainer.evaluation.predict(torch.as_tensor(grid, dtype=trainer.dtype)).double().numpy()
    return {"setup_s": started - built, "loop_s": loop, "rel_l2": _rel_l2(prediction, _reference(grid)),
            "execution": trainer.execution.current}


def _worker(argv: list[str]) -> int:
    if argv[0] == "--has":
        import importlib.util

        return 0 if importlib.util.find_spec(argv[1]) is not None else 1
    contender, seed, iterations = argv[1], int(argv[2]), int(argv[3])
    import torch

    from .._malloc import tune_allocator

    torch.set_num_threads(1)
    tune_allocator()  # every contender under the same allocator settings (a pinnspec Trainer applies them too)
    if contender == "deepxde":
        record = run_deepxde(seed, iterations)
    elif contender == "pina":
        record = run_pina(seed, iterations)
    elif contender == BY_HAND:
        record = run_by_hand(seed, iterations)
    else:
        record = run_pinnspec(seed, iterations, COMPILE[contender])
    record.update(contender=contender, seed=seed, iterations=iterations,
                  ms_per_iteration=1e3 * record["loop_s"] / iterations)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
