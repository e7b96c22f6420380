"""``pinnspec bench q6``: the paper's Q6 (task-cardinality scaling), on a generated multi-label data set.

Paper: Sec. "Q6: Task-Cardinality Scaling" and Appendix "Multi-task Learning Details"
(``app:mtl_details``, Table ``tab:celeba_training_settings``).  The paper trains on CelebA (40 binary
facial attributes, the first m in annotation order, m in {2, 3, 5, 10, 20, 30, 40}) and compares
ConFIG with ConFIG + GUA in mean F1, training time and peak GPU memory.  Nothing is downloaded here:
:func:`synthetic_attributes` generates a stand-in deterministically from ``--data-seed`` -- latent
factors -> nonlinear input features, and 40 correlated binary attributes of different prevalence
that share latent factors with opposite signs and have task-specific nonlinear parts, so that the
tasks compete for a shared representation.

The model (:class:`MultiTaskMLP`) is a shared trunk MLP (``--depth`` ReLU layers of ``--width``,
standing in for the paper's convolutional backbone and its two fully connected layers) and m
task-specific linear heads; each task's loss is binary cross-entropy.  One step
(:class:`pinnspec.engine.MultiTaskOptimizer`), as the appendix describes ("GUA is applied to the same
shared parameters after task-gradient aggregation and optimizer proposal. The task-specific
classification heads are updated by the native optimizer but are not modified by GUA"):

    L = BCE per task on a batch                               [m]
    G_all = loss_gradients(L, shared + heads)                 [m, p_s + p_h]   (m backward passes)
    G = G_all[:, :p_s];  g_heads = sum_i G_all[i, p_s:]       [m, p_s], [p_h]  (loss i reaches head i only)
    a = surgery(G);  u, s~ = optimizer.propose(a, s)          [p_s]            (ConFIG, Adam)
    p, s = alignment.align(u, G, s~, optimizer)               [p_s]            (GUA, or none: p = u)
    u_h, s_h = optimizer.propose(g_heads, s_h)                [p_h]            (the same optimizer, own state)
    theta_s -= lr p;  theta_h -= lr u_h

The heads take the plain gradient of the summed loss (no surgery, no GUA) through their own copy of
the optimizer state; for an element-wise optimizer such as Adam this is the same as one optimizer over
all parameters whose shared part alone is constructed by surgery and aligned by GUA.  The GUA
projection solves its dual by active-set enumeration for m <= 8 and by an active-set NNLS above (the
paper's projection-solver appendix, "For CelebA settings with m > 8"; ``pinnspec.align``'s
``ENUMERATION_MAX_TASKS``).

Every configuration (m, method, optimizer, align, seed) runs in a fresh interpreter
(``python -m pinnspec.bench._q6 --worker CONFIG_JSON``), ``--jobs`` at a time: its peak memory is
its own -- ``torch.cuda.max_memory_allocated`` on CUDA, the RSS high-water mark on CPU (reset after
setup, :mod:`pinnspec._rss`).  Time per step is the median over the steps after the first
``--warmup-steps``, timed around the step proper (batch, forward, G, surgery, proposal, alignment,
apply); the per-step conflict diagnostics and the per-epoch test evaluation are outside the timed
region.  On CUDA the table shows the wall clock (after a synchronisation); on CPU it shows the
process's CPU time per step, which other load on a shared machine does not inflate (the wall clock
is in the CSV).  Writes ``OUT/q6.md``, ``OUT/q6.csv`` (one row per m), ``OUT/q6.png`` and ``OUT/runs/*.json``
(one per configuration).
"""

from __future__ import annotations

import argparse
import contextlib
import ast
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from . import _paper
from ._cli import EXIT_OK, EXIT_USER, BenchError, nonnegative, positive, run_main
from ._paper_runs import base_name, names, parser, seeds
from ._report import cell, markdown_table, panel_figure, pct, write_outputs

#: The paper's Q6 settings and findings (``pinnspec/bench/paper_findings.json``): its per-m F1, time and memory
#: are in a figure only (fig:celeba_task_scaling); these are the numbers its text and Table
#: tab:celeba_training_settings state.
PAPER_Q6 = _paper.Q6

ATTRIBUTES = 40  # CelebA's binary attributes (paper line 2677)
LATENT = 12  # latent factors behind the generated attributes
ALIGNS = ("none", "gua")
DEFAULT_TASKS = PAPER_Q6["task_counts"]["value"]
DEFAULT_EPOCHS = PAPER_Q6["epochs"]["value"]
EVAL_BATCH = 8192
#: the default --optimizers: Adam (the paper's optimizer) at 1e-3, since a CPU run takes a few hundred steps where
#: the paper's CelebA epochs take thousands at 3e-4 (a bare ``adam`` runs at the paper's 3e-4)
CPU_OPTIMIZER = "adam(lr = 1e-3)"
#: --validate: which epoch's test F1 a run reports (the paper evaluates every epoch, line 2684)
VALIDATE = {"spec": "last", "test": "best"}

COLUMNS = ["method", "optimizer", "m", "seeds", "completed", "solver", "params_shared", "params_heads",
           "base_f1_mean", "base_f1_std", "gua_f1_mean", "gua_f1_std", "delta_f1",
           "base_step_ms", "gua_step_ms", "time_ratio", "base_step_cpu_ms", "gua_step_cpu_ms", "cpu_time_ratio",
           "base_peak_mib", "gua_peak_mib", "memory_ratio",
           "base_growth_mib", "gua_growth_mib", "growth_ratio",
           "base_R_g", "base_R_a", "base_R_u", "gua_R_g", "gua_R_a", "gua_R_u", "gua_R_p", "gua_projected",
           "paper_f1", "paper_memory_overhead_pct", "paper_source"]


# ====================================================================== the data
@dataclass(frozen=True)
class SyntheticData:
    """A generated stand-in for CelebA's attribute table (CPU tensors, float32)."""

    x_train: "torch.Tensor"  # [n_train, d]
    y_train: "torch.Tensor"  # [n_train, 40]   0/1
    x_test: "torch.Tensor"  # [n_test, d]
    y_test: "torch.Tensor"  # [n_test, 40]
    prevalence: "torch.Tensor"  # [40]          the target fraction of positives per attribute


def synthetic_attributes(seed: int, *, train: int, test: int, features: int) -> SyntheticData:
    """A multi-label classification set with ``ATTRIBUTES`` correlated binary attributes, a pure function
    of its arguments (one ``torch.Generator`` seeded with ``seed``; float64 arithmetic on the CPU).

    * latent factors z ~ N(0, I) ([n, LATENT]); the inputs are a random two-layer tanh map of z plus
      noise, standardised with the training split's statistics ([n, features]);
    * attribute j: logit_j = <c_j, z> + gamma_j z_a(j) z_b(j) + 0.5 noise, where c_j loads two latent
      factors with random signs (attributes sharing a factor are positively or negatively correlated)
      plus a small dense part, and the product term is a task-specific nonlinearity;
    * y_j = 1[logit_j > threshold_j], the threshold at the (1 - pi_j) quantile of the training split,
      pi_j ~ U(0.05, 0.5) (CelebA's attributes range from rare to balanced).

    Like CelebA's annotation order, the attribute order is fixed: an m-task experiment uses the first m.
    """
    import torch

    if min(train, test, features) < 1:
        raise ValueError("synthetic_attributes: train, test and features must be >= 1")
    g = torch.Generator().manual_seed(int(seed))
    f64 = torch.float64
    n = train + test
    z = torch.randn(n, LATENT, generator=g, dtype=f64)  # [n, k]
    hidden = 4 * LATENT
    lift = torch.randn(LATENT, hidden, generator=g, dtype=f64) * (2.0 / math.sqrt(LATENT))  # [k, h]
    mix = torch.randn(hidden, features, generator=g, dtype=f64) / math.sqrt(hidden)  # [h, d]
    x = torch.tanh(z @ lift) @ mix + 0.1 * torch.randn(n, features, generator=g, dtype=f64)  # [n, d]
    mean, std = x[:train].mean(dim=0), x[:train].std(dim=0).clamp_min(1e-12)
    x = (x - mean) / std

    primary = torch.randint(0, LATENT, (ATTRIBUTES, 2), generator=g)  # [40, 2]  the two loaded factors
    signs = torch.randint(0, 2, (ATTRIBUTES, 2), generator=g, dtype=f64) * 2 - 1  # [40, 2]
    loading = 0.3 * torch.randn(ATTRIBUTES, LATENT, generator=g, dtype=f64) / math.sqrt(LATENT)  # [40, k]
    rows = torch.arange(ATTRIBUTES)
    loading[rows, primary[:, 0]] += signs[:, 0]
    loading[rows, primary[:, 1]] += 0.6 * signs[:, 1]
    pairs = torch.stack([torch.randperm(LATENT, generator=g)[:2] for _ in range(ATTRIBUTES)])  # [40, 2]
    gamma = 0.5 + torch.rand(ATTRIBUTES, generator=g, dtype=f64)  # [40]
    logits = z @ loading.T + gamma * z[:, pairs[:, 0]] * z[:, pairs[:, 1]]  # [n, 40]
    logits = logits + 0.5 * torch.randn(n, ATTRIBUTES, generator=g, dtype=f64)
    prevalence = 0.05 + 0.45 * torch.rand(ATTRIBUTES, generator=g, dtype=f64)  # [40]
    thresholds = torch.stack([torch.quantile(logits[:train, j], 1.0 - float(prevalence[j]))
                              for j in range(ATTRIBUTES)])  # [40]
    y = (logits > thresholds).to(torch.float32)  # [n, 40]
    x = x.to(torch.float32)
    return SyntheticData(x[:train].contiguous(), y[:train].contiguous(), x[train:].contiguous(),
                         y[train:].contiguous(), prevalence.to(torch.float32))


# ====================================================================== the model
class MultiTaskMLP:
    """Shared trunk (``depth`` ReLU layers of ``width``) and m linear heads, as explicit leaf tensors.

    ``shared``: the trunk's [W, b] per layer; ``heads``: [W_h ([m, width]), b_h ([m])] -- row i of
    W_h and entry i of b_h are task i's head.  Initialised as torch.nn.Linear does (uniform with bound
    1/sqrt(fan_in)), from the passed generator only.
    """

    def __init__(self, features: int, width: int, depth: int, tasks: int, *, generator, device, dtype):
        import torch

        def linear(fan_in: int, fan_out: int):
            bound = 1.0 / math.sqrt(fan_in)
            weight = torch.empty(fan_out, fan_in, dtype=dtype).uniform_(-bound, bound, generator=generator)
            bias = torch.empty(fan_out, dtype=dtype).uniform_(-bound, bound, generator=generator)
            return [weight.to(device).requires_grad_(True), bias.to(device).requires_grad_(True)]

        self.shared = []
        fan_in = features
        for _ in range(depth):
            self.shared += linear(fan_in, width)
            fan_in = width
        self.heads = linear(fan_in, tasks)
        self.params = self.shared + self.heads
        self.shared_numel = sum(t.numel() for t in self.shared)
        self.heads_numel = sum(t.numel() for t in self.heads)

    def __call__(self, x):
        """Task logits [n, m] for inputs x [n, d]."""
        import torch

        h = x
        for weight, bias in zip(self.shared[0::2], self.shared[1::2]):
            h = torch.relu(torch.nn.functional.linear(h, weight, bias))  # [n, width]
        return torch.nn.functional.linear(h, self.heads[0], self.heads[1])  # [n, m]


def task_losses(model: MultiTaskMLP, x, y):
    """Binary cross-entropy per task, averaged over the batch: a list of m scalars (the paper's task
    losses, app:mtl_details).  ``x``: [n, d], ``y``: [n, m]."""
    import torch

    per_sample = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y, reduction="none")  # [n, m]
    return list(per_sample.mean(dim=0).unbind())


def task_gradients(model: MultiTaskMLP, x, y):
    """(G [m, p_s], g_heads [p_h], losses [m]): the loss-specific gradients w.r.t. the shared trunk, and
    the heads' gradient of the summed loss (loss i reaches head i only, so summing the head blocks of
    the m rows gives each head its own task's gradient)."""
    import torch

    from ..engine import multitask_gradients

    losses = task_losses(model, x, y)
    G, g_heads = multitask_gradients(losses, model.shared, model.heads)  # [m, p_s], [p_h]
    return G, g_heads, torch.stack([loss.detach() for loss in losses])


def f1_per_task(model: MultiTaskMLP, x, y):
    """F1 = 2 TP / (2 TP + FP + FN) per task on (x [n, d], y [n, m]), prediction = logit > 0; a task with
    no positive labels and no positive predictions scores 0 (sklearn's zero_division=0).  [m], float64."""
    import torch

    with torch.no_grad():
        logits = torch.cat([model(x[i: i + EVAL_BATCH]) for i in range(0, len(x), EVAL_BATCH)])  # [n, m]
    predicted = logits > 0
    truth = y > 0.5
    tp = (predicted & truth).sum(dim=0).double()  # [m]
    fp = (predicted & ~truth).sum(dim=0).double()
    fn = (~predicted & truth).sum(dim=0).double()
    denominator = 2 * tp + fp + fn
    return torch.where(denominator > 0, 2 * tp / denominator.clamp_min(1), torch.zeros_like(tp)).cpu()


# ====================================================================== one run
@dataclass(frozen=True)
class RunConfig:
    """One configuration; a worker process gets it as JSON."""

    tasks: int
    method: str = "config"
    optimizer: str = "adam"
    align: str = "none"
    seed: int = 0
    data_seed: int = 0
    epochs: int = DEFAULT_EPOCHS
    samples: int = 4096
    test_samples: int = 4096
    features: int = 64
    width: int = 128
    depth: int = 2
    batch_size: int = PAPER_Q6["batch_size"]["value"]
    warmup_steps: int = 5
    report: str = "last"  # "last" epoch's test F1, or the "best" epoch's
    device: str = "cpu"
    threads: int = 1


def parse_call(text: str) -> tuple[str, dict]:
    """``adam`` -> ("adam", {}); ``gua(metric = euclidean, rho_m = 0.1)`` -> ("gua", {"metric": "euclidean",
    "rho_m": 0.1}): a registry name with keyword arguments (numbers, strings, bare words)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise BenchError(f"'{text}': expected NAME or NAME(key = value, ...)") from None
    if isinstance(node, ast.Name):
        return node.id, {}
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)) or node.args:
        raise BenchError(f"'{text}': expected NAME or NAME(key = value, ...)")
    kwargs = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise BenchError(f"'{text}': expected NAME or NAME(key = value, ...)")
        if isinstance(keyword.value, ast.Name):
            kwargs[keyword.arg] = keyword.value.id
            continue
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError):
            raise BenchError(f"'{text}': the value of {keyword.arg} is not a number or a word") from None
    return node.func.id, kwargs


def paper_optimizer(text: str) -> str:
    """A bare optimizer name runs at the paper's learning rate 3e-4 (tab:celeba_training_settings);
    a call with arguments is kept as given."""
    name, kwargs = parse_call(text)
    return f"{name}(lr = {PAPER_Q6['lr']['value']:g})" if not kwargs else text


def build_chain(config: RunConfig):
    """The update chain (surgery, optimizer, alignment) from the registries, as ``pinnspec.engine.Trainer``
    builds it."""
    from ..registry import ALIGN, OPTIMIZERS, SURGERY, UnknownNameError

    built = []
    for registry, text in ((SURGERY, config.method), (OPTIMIZERS, config.optimizer), (ALIGN, config.align)):
        name, kwargs = parse_call(text)
        try:
            built.append(registry.get(name)(**kwargs))
        except UnknownNameError as err:
            raise BenchError(str(err)) from None
        except (TypeError, ValueError) as err:
            raise BenchError(f"'{text}': {err}") from None
    from ..engine import UpdateChain

    chain = UpdateChain(*built)
    if chain.uses_hessian:
        raise BenchError(f"'{config.optimizer}': q6 runs first-order optimizers (this one needs Hessian estimates)")
    return chain


class MultiTaskTraining:
    """One configuration's :class:`MultiTaskMLP` and its :class:`pinnspec.engine.MultiTaskOptimizer` (the
    module docstring's step): surgery, proposal and alignment on the shared parameters, the optimizer's plain
    proposal on the heads (app:mtl_details), at the optimizer's constant lr (the paper's table names no
    schedule)."""

    def __init__(self, config: RunConfig, *, device):
        import torch

        from ..engine import MultiTaskOptimizer

        chain = build_chain(config)
        init = torch.Generator().manual_seed(config.seed)  # CPU: the same network on every device
        self.model = MultiTaskMLP(config.features, config.width, config.depth, config.tasks, generator=init,
                                  device=device, dtype=torch.float32)
        self.optimizer = MultiTaskOptimizer(chain, self.model.shared, self.model.heads, tasks=config.tasks,
                                            generator=torch.Generator().manual_seed(config.seed + 2))  # PCGrad orders
        self.aligned = chain.aligned

    def step(self, x, y):
        """One step on the batch (x [B, d], y [B, m]): a ``pinnspec.engine.MultiTaskStep``."""
        return self.optimizer.step(lambda: task_losses(self.model, x, y))


def train_run(config: RunConfig, *, measure_memory: bool = False, data: SyntheticData | None = None) -> dict:
    """Train one configuration; its test F1, time per step, conflict rates (and peak memory).

    ``measure_memory``: reset the peak counters after the setup (data, model, states) and read them
    after training -- meaningful only in a fresh process (the worker).  ``data``: the generated set
    when the caller already has it (must be ``synthetic_attributes(config.data_seed, ...)``).
    """
    import torch

    from .._malloc import tune_allocator
    from ..align import ENUMERATION_MAX_TASKS, conflicts
    from ._common import clock, median, quiet_gc, resolve_device
    from .._rss import read_status, reset_peak

    if not 1 <= config.tasks <= ATTRIBUTES:
        raise BenchError(f"m = {config.tasks}: the data set has {ATTRIBUTES} attributes (1 <= m <= {ATTRIBUTES})")
    tune_allocator()
    torch.set_num_threads(int(config.threads))
    device = resolve_device(config.device)
    if data is None:
        data = synthetic_attributes(config.data_seed, train=config.samples, test=config.test_samples,
                                    features=config.features)
    m = config.tasks
    x_train, y_train = data.x_train.to(device), data.y_train[:, :m].contiguous().to(device)  # [n, d], [n, m]
    x_test, y_test = data.x_test.to(device), data.y_test[:, :m].contiguous().to(device)
    training = MultiTaskTraining(config, device=device)
    shuffle = torch.Generator().manual_seed(config.seed + 1)  # batch order
    memory: dict = {}
    if measure_memory:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            memory["setup"] = torch.cuda.memory_allocated(device)  # data, model, optimizer states
        else:
            memory["setup"] = read_status()["VmRSS"]
        memory["hwm_reset"] = reset_peak()

    step_seconds: list[float] = []  # wall clock (after the device's queued work)
    step_cpu_seconds: list[float] = []  # this process's CPU time: what a shared CPU's other load does not inflate
    counts = {"R_g": 0, "R_a": 0, "R_u": 0, "R_p": 0}
    diagnosed = projected = 0
    f1_by_epoch: list[list[float]] = []
    status, message = "completed", ""
    @contextlib.contextmanager
    def timed():  # the step alone: wall clock after the device's queued work, and this process's CPU time
        with quiet_gc():
            started, started_cpu = clock(device), time.process_time()
            yield
            step_seconds.append(clock(device) - started)
            step_cpu_seconds.append(time.process_time() - started_cpu)

    def diagnose(epoch: int, k: int, record) -> bool:  # outside the timed step: Appendix C.7's indicators
        nonlocal status, message, diagnosed, projected
        if not (bool(torch.isfinite(record.losses).all()) and bool(torch.isfinite(record.p).all())):
            status, message = "diverged", f"non-finite loss or update at epoch {epoch}, step {k}"
            return False
        indicators = conflicts(record.G, record.a, record.u, record.p if training.aligned else None)
        diagnosed += 1
        for key, value in indicators.items():
            counts[key] += int(bool(value))
        projected += int(training.aligned and bool((record.p - record.u).norm() > 0))
        return True

    training.optimizer.fit(lambda xb, yb: task_losses(training.model, xb, yb), x_train, y_train,
                           epochs=config.epochs, batch_size=config.batch_size, shuffle=shuffle, around_step=timed,
                           after_step=diagnose,
                           after_epoch=lambda _: f1_by_epoch.append(f1_per_task(training.model, x_test, y_test).tolist()))

    if measure_memory:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            memory["peak"] = torch.cuda.max_memory_allocated(device)
            memory["kind"] = "cuda max_memory_allocated"
        else:
            memory["peak"] = read_status()["VmHWM"]
            memory["kind"] = "RSS high-water mark"
        memory["growth"] = memory["peak"] - memory["setup"]  # what training added over the setup

    means = [sum(f) / len(f) for f in f1_by_epoch]  # mean F1 per epoch
    chosen = None
    if means:
        chosen = len(means) - 1 if config.report == "last" else max(range(len(means)), key=means.__getitem__)
    timed = step_seconds[config.warmup_steps:] or step_seconds
    timed_cpu = step_cpu_seconds[config.warmup_steps:] or step_cpu_seconds
    return {
        "config": asdict(config), "status": status, "message": message,
        "f1": means[chosen] if chosen is not None else None,
        "f1_per_task": f1_by_epoch[chosen] if chosen is not None else None,
        "f1_by_epoch": means, "reported_epoch": chosen,
        "step_ms": 1e3 * median(timed) if timed else None,
        "step_cpu_ms": 1e3 * median(timed_cpu) if timed_cpu and device.type == "cpu" else None, "steps": len(step_seconds), "steps_timed": len(timed),
        "train_s": sum(step_seconds),
        "rates": {k: (v / diagnosed if diagnosed else None) for k, v in counts.items()} | (
            {} if training.aligned else {"R_p": None}),
        "conflicting_steps": counts, "diagnosed": diagnosed,
        "projected": (projected / diagnosed if diagnosed and training.aligned else None),
        "solver": ("enumerate" if m <= ENUMERATION_MAX_TASKS else "nnls") if training.aligned else None,
        "params_shared": training.model.shared_numel, "params_heads": training.model.heads_numel,
        "memory": memory or None, "device": str(device), "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


# ====================================================================== workers
def run_worker(config: RunConfig) -> dict:
    """``train_run`` in a fresh interpreter (its peak memory is its own); the worker's JSON result."""
    from ._common import run_fresh

    started = time.perf_counter()
    done = run_fresh("pinnspec.bench._q6", ["--worker", json.dumps(asdict(config))],
                     {"OMP_NUM_THREADS": str(config.threads)})
    if done.returncode != 0:
        lines = done.stdout.strip().splitlines()
        try:
            return {"config": asdict(config), "status": "failed", **json.loads(lines[-1])}
        except (IndexError, json.JSONDecodeError):
            return {"config": asdict(config), "status": "failed",
                    "message": (done.stderr.strip() or done.stdout.strip())[-2000:]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def _worker_main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--worker":
        print("usage: python -m pinnspec.bench._q6 --worker CONFIG_JSON", file=sys.stderr)
        return EXIT_USER
    config = RunConfig(**json.loads(argv[1]))
    try:
        result = train_run(config, measure_memory=True)
    except BenchError as err:
        print(json.dumps({"message": str(err)}))
        return EXIT_USER
    print(json.dumps(result))
    return EXIT_OK


# ====================================================================== the command
def build_parser() -> argparse.ArgumentParser:
    p = parser("pinnspec bench q6",
               "Q6: task-cardinality scaling on a generated multi-label data set (a CelebA stand-in, no "
               "downloads): ConFIG vs ConFIG + GUA per number of tasks m; mean F1, time per step, peak "
               "memory and conflict rates.",
               methods=("config",), optimizers=(CPU_OPTIMIZER,),
               optimizers_help=" (a bare name runs at the paper's lr 3e-4, e.g. --optimizers adam at paper "
                               "scale; the default's 1e-3 suits the few hundred steps of a CPU run; first-order "
                               "optimizers only)",
               out_default=os.path.join("runs", "bench-q6"))
    p.set_defaults(problems="synthetic", groupings="first", epochs=DEFAULT_EPOCHS)
    helps = {
        "--problems": "the data set: 'synthetic' only (generated, see --data-seed; no downloads)",
        "--groupings": "'first' only: an m-task run uses the first m attributes (see --tasks)",
        "--epochs": f"training epochs per run (default {DEFAULT_EPOCHS}, the paper's)",
        "--validate": "which epoch's test F1 a run reports: 'spec' (default) the last epoch's, 'test' the "
                      "best epoch's (the paper evaluates every epoch)",
        "--spec": "not used by q6 (refused)",
        "--threads": "torch threads per run (default 1)",
        "--seeds": "seeds of the initialisation and batch order: 0,1,2 or 0-2 (default 0; the paper's: 0,1,2)",
        "--jobs": "configurations run at once, each in its own process (default: half the cores); timings of "
                  "concurrent runs share the machine",
    }
    for action in p._actions:
        if action.option_strings and action.option_strings[0] in helps:
            action.help = helps[action.option_strings[0]]
    default_tasks = ",".join(map(str, DEFAULT_TASKS))
    p.add_argument("--tasks", default=default_tasks, metavar="LIST",
                   help=f"task counts m, 1..{ATTRIBUTES} (default {default_tasks}, the paper's)")
    p.add_argument("--gua", default="gua", metavar="CALL", help="the alignment of the +GUA runs (default gua: "
                   "the Adam metric, (rho_m, rho_v) = (0.1, 0.03))")
    p.add_argument("--samples", type=positive, default=RunConfig.samples, metavar="N",
                   help=f"training examples (default {RunConfig.samples})")
    p.add_argument("--test-samples", type=positive, default=RunConfig.test_samples, metavar="N",
                   help=f"held-out test examples (default {RunConfig.test_samples})")
    p.add_argument("--features", type=positive, default=RunConfig.features, metavar="D",
                   help=f"input features (default {RunConfig.features})")
    p.add_argument("--width", type=positive, default=RunConfig.width, metavar="W",
                   help=f"trunk width (default {RunConfig.width})")
    p.add_argument("--depth", type=positive, default=RunConfig.depth, metavar="L",
                   help=f"trunk layers (default {RunConfig.depth})")
    p.add_argument("--batch-size", type=positive, default=RunConfig.batch_size, metavar="B",
                   help=f"batch size (default {RunConfig.batch_size}, the paper's)")
    p.add_argument("--warmup-steps", type=nonnegative, default=RunConfig.warmup_steps, metavar="N",
                   help=f"first steps left out of the time per step (default {RunConfig.warmup_steps})")
    p.add_argument("--data-seed", type=nonnegative, default=RunConfig.data_seed, metavar="S",
                   help="seed of the generated data set (default 0; --seeds vary the initialisation and batch order)")
    return p


def main(argv: list[str] | None = None) -> int:
    """``pinnspec bench q6 ARGS``; returns the exit code."""
    return run_main(build_parser(), _run, argv)


def task_counts(text: str) -> list[int]:
    values = names(text, "--tasks")
    counts = []
    for value in values:
        if not value.isdigit() or not 1 <= int(value) <= ATTRIBUTES:
            raise BenchError(f"--tasks: '{value}' is not a task count 1..{ATTRIBUTES}")
        counts.append(int(value))
    return counts


def plan(args) -> list[RunConfig]:
    """Every configuration of the command line, in the order they run: m, seed, method, optimizer, align."""
    if names(args.problems, "--problems") != ["synthetic"]:
        raise BenchError(f"--problems {args.problems}: q6 runs on its generated data set 'synthetic' only "
                         "(no downloads)")
    if names(args.groupings, "--groupings") != ["first"]:
        raise BenchError(f"--groupings {args.groupings}: q6 takes the first m attributes ('first'); "
                         "choose m with --tasks")
    if args.spec:
        raise BenchError("--spec: q6 generates its data set and takes no spec files")
    methods = names(args.methods, "--methods")
    optimizers = [paper_optimizer(o) for o in names(args.optimizers, "--optimizers")]
    if parse_call(args.gua)[0] == "none":
        raise BenchError("--gua: the +GUA runs need an alignment other than none")
    from ._common import resolve_device

    device = str(resolve_device(args.device))
    threads = args.threads or 1  # a small MLP gains little from intra-op threads; on a busy CPU they make times swing
    common = dict(data_seed=args.data_seed, epochs=args.epochs, samples=args.samples, test_samples=args.test_samples,
                  features=args.features, width=args.width, depth=args.depth, batch_size=args.batch_size,
                  warmup_steps=args.warmup_steps, report=VALIDATE[args.validate], device=device, threads=threads)
    configs = [RunConfig(tasks=m, method=method, optimizer=optimizer, align=align, seed=seed, **common)
               for m in task_counts(args.tasks) for seed in seeds(args.seeds) for method in methods
               for optimizer in optimizers for align in ("none", args.gua)]
    for config in {(c.method, c.optimizer, c.align): c for c in configs}.values():
        build_chain(config)  # a bad name or argument fails here, before any run starts
    return configs


def _run(args) -> int:
    configs = plan(args)
    jobs = args.jobs or max(1, (os.cpu_count() or 1) // 2)
    print(f"pinnspec bench q6: {len(configs)} runs, {jobs} at a time, {configs[0].threads} torch thread(s) each, "
          f"device {configs[0].device}", flush=True)
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)

    def one(config: RunConfig) -> dict:
        result = run_worker(config)
        from .._files import write_json

        write_json(os.path.join(args.out, "runs", run_name(config) + ".json"), result)
        align = "+GUA" if config.align != "none" else "base"
        if result["status"] == "completed":
            memory = result.get("memory") or {}
            print(f"  m = {config.tasks:2d} seed {config.seed} {config.method} / {config.optimizer} {align}: "
                  f"F1 {result['f1']:.4f}, {result['step_ms']:.2f} ms/step"
                  + (f" ({result['step_cpu_ms']:.2f} CPU)" if result.get("step_cpu_ms") is not None else "") +
                  f", peak {_mib(memory.get('peak'))} MiB, "
                  f"R_u {pct(result['rates']['R_u']):.1f}%", flush=True)
        else:
            print(f"  m = {config.tasks:2d} seed {config.seed} {config.method} / {config.optimizer} {align}: "
                  f"{result['status']}: {result.get('message', '')}", flush=True)
        return result

    if jobs == 1:
        results = [one(c) for c in configs]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each thread waits on its own worker process
            results = list(pool.map(one, configs))
    rows = summarize(results)
    text = markdown(rows, args, configs, jobs)
    written = write_outputs(args.out, "q6", text, COLUMNS, rows, figure(rows, configs[0].device.startswith("cuda")))
    print(text)
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}")
    failed = [r for r in results if r["status"] == "failed"]
    for r in failed:
        print(f"run {run_name(RunConfig(**r['config']))} failed:\n{r.get('message', '')}", file=sys.stderr)
    return EXIT_USER if failed else EXIT_OK


def run_name(config: RunConfig) -> str:
    text = f"m={config.tasks}__{config.method}__{config.optimizer}__align={config.align}__seed={config.seed}"
    return re.sub(r"[^A-Za-z0-9=._-]+", "_", re.sub(r"\s+", "", text).replace(")", ""))


# ====================================================================== the table
def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, std


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _ratio(a, b) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def paper_cells(m: int) -> tuple[str, float | None, str]:
    """(the paper's F1 finding at m, its memory overhead in % at m, the source lines)."""
    counts = PAPER_Q6["task_counts"]["value"]
    if m not in counts:
        return "-", None, ""
    comparable = PAPER_Q6["f1_comparable_at"]["value"]
    # six of seven settings improved, comparable at 20: the other six are the improved ones
    finding = "comparable" if m == comparable else "improved"
    sources = [PAPER_Q6["f1_comparable_at" if m == comparable else "f1_improved_settings"]["source"]]
    memory = PAPER_Q6["memory_overhead_pct"]["value"].get(m)
    if memory is not None:
        sources.append(PAPER_Q6["memory_overhead_pct"]["source"])
    return finding, memory, "; ".join(sources)


def summarize(results: list[dict]) -> list[dict]:
    """One row per (method, optimizer, m): base and +GUA side by side (means over the completed seeds)."""
    groups: dict[tuple, dict[str, list[dict]]] = {}
    for r in results:
        c = r["config"]
        key = (c["method"], c["optimizer"], c["tasks"])
        groups.setdefault(key, {"none": [], "gua": []})["none" if c["align"] == "none" else "gua"].append(r)
    rows = []
    for (method, optimizer, m), by_align in groups.items():
        row: dict = {"method": method, "optimizer": optimizer, "m": m,
                     "seeds": len({r["config"]["seed"] for rs in by_align.values() for r in rs})}
        done = {k: [r for r in rs if r["status"] == "completed"] for k, rs in by_align.items()}
        row["completed"] = f"{len(done['none'])}+{len(done['gua'])}/{len(by_align['none']) + len(by_align['gua'])}"
        for align, prefix in (("none", "base"), ("gua", "gua")):
            runs = done[align]
            row[f"{prefix}_f1_mean"], row[f"{prefix}_f1_std"] = _mean_std([r["f1"] for r in runs])
            row[f"{prefix}_step_ms"] = _mean(r["step_ms"] for r in runs)
            row[f"{prefix}_step_cpu_ms"] = _mean(r.get("step_cpu_ms") for r in runs)
            row[f"{prefix}_peak_mib"] = _mean(_mib_value((r.get("memory") or {}).get("peak")) for r in runs)
            row[f"{prefix}_growth_mib"] = _mean(_mib_value((r.get("memory") or {}).get("growth")) for r in runs)
            for rate in ("R_g", "R_a", "R_u"):
                row[f"{prefix}_{rate}"] = pct(_mean(r["rates"][rate] for r in runs))
        gua_runs = done["gua"]
        row["gua_R_p"] = pct(_mean(r["rates"]["R_p"] for r in gua_runs))
        row["gua_projected"] = pct(_mean(r["projected"] for r in gua_runs))
        row["solver"] = gua_runs[0]["solver"] if gua_runs else None
        any_run = (done["none"] + gua_runs or [{}])[0]
        row["params_shared"], row["params_heads"] = any_run.get("params_shared"), any_run.get("params_heads")
        row["delta_f1"] = (None if row["base_f1_mean"] is None or row["gua_f1_mean"] is None
                           else row["gua_f1_mean"] - row["base_f1_mean"])
        row["time_ratio"] = _ratio(row["gua_step_ms"], row["base_step_ms"])
        row["cpu_time_ratio"] = _ratio(row["gua_step_cpu_ms"], row["base_step_cpu_ms"])
        row["memory_ratio"] = _ratio(row["gua_peak_mib"], row["base_peak_mib"])
        row["growth_ratio"] = _ratio(row["gua_growth_mib"], row["base_growth_mib"])
        row["paper_f1"], row["paper_memory_overhead_pct"], row["paper_source"] = paper_cells(m)
        rows.append(row)
    return rows


def _mib_value(n) -> float | None:
    return None if n is None else n / 2**20


def _mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


def _f1(mean, std) -> str:
    return "-" if mean is None else f"{mean:.4f} ± {std:.4f}"


def _x(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(rows: list[dict], args, configs: list[RunConfig], jobs: int) -> str:
    c = configs[0]
    cuda = c.device.startswith("cuda")
    memory_kind = "torch.cuda.max_memory_allocated" if cuda else "the process's RSS high-water mark"
    lines = ["# pinnspec bench q6: task-cardinality scaling, ConFIG vs ConFIG + GUA", "",
             f"Generated data (data seed {c.data_seed}: {c.samples} training / {c.test_samples} test examples, "
             f"{c.features} features, {ATTRIBUTES} attributes; an m-task run uses the first m); shared trunk "
             f"{c.depth} x {c.width} ReLU + m linear heads, BCE per task; {c.epochs} epochs, batch {c.batch_size}; "
             f"seeds {','.join(str(s) for s in sorted({x.seed for x in configs}))}; device {c.device}, "
             f"{c.threads} torch thread(s) per run, {jobs} run(s) at a time.  GUA ({args.gua}) acts on the shared "
             f"parameters; the heads take the optimizer's plain proposal.", "",
             f"F1: mean over the m tasks on the test split at the {c.report} epoch, mean ± std over seeds.  Time: "
             f"median per step after {c.warmup_steps} warm-up steps (diagnostics and evaluation excluded)"
             + (", wall clock after a device synchronisation.  " if cuda else
                ": the process's CPU time, which other load on a shared machine does not inflate (with one torch "
                "thread it is the step's compute time); 'wall ×' is the ratio of the wall-clock medians.  ") +
             f"Memory: {memory_kind} over training, each run in its own process"
             + ("" if cuda else " (on CPU it includes libtorch, so the ratio of the peaks hides what GUA adds: "
                "'growth' is the rise over the RSS after setup)") + ".  Conflict rates in % of the steps.  "
             f"The paper (CelebA, fig:celeba_task_scaling) gives its per-m numbers only in a figure; its text "
             f"states that GUA improves F1 in six of seven settings, is comparable at m = 20, and costs 4.2 % "
             f"more memory at m = 40 ({PAPER_Q6['memory_overhead_pct']['source']}).", ""]
    several = len({(r["method"], r["optimizer"]) for r in rows}) > 1
    time_key, time_ratio = ("step_ms", "time_ratio") if cuda else ("step_cpu_ms", "cpu_time_ratio")
    columns = ["m"] + (["method / optimizer"] if several else []) + [
        "F1 ConFIG", "F1 +GUA", "ΔF1", "ms/step ConFIG", "ms/step +GUA", "time ×"] + ([] if cuda else ["wall ×"]) + [
        "peak MiB ConFIG", "peak MiB +GUA", "memory ×"] + ([] if cuda else ["growth MiB ConFIG→+GUA"]) + [
        "R_g", "R_u ConFIG", "R_u +GUA", "R_p +GUA", "projected", "paper F1", "paper memory"]
    cells = []
    for r in rows:
        memory = "-" if r["paper_memory_overhead_pct"] is None else f"+{r['paper_memory_overhead_pct']:.1f} %"
        delta = "-" if r["delta_f1"] is None else f"{r['delta_f1']:+.4f}"
        cells.append(
            [r["m"]] + ([f"{r['method']} / {r['optimizer']}"] if several else []) +
            [_f1(r["base_f1_mean"], r["base_f1_std"]), _f1(r["gua_f1_mean"], r["gua_f1_std"]), delta,
             cell(r[f"base_{time_key}"], 2), cell(r[f"gua_{time_key}"], 2), _x(r[time_ratio])] +
            ([] if cuda else [_x(r["time_ratio"])]) +
            [cell(r["base_peak_mib"]), cell(r["gua_peak_mib"]), _x(r["memory_ratio"])] +
            ([] if cuda else [f"{cell(r['base_growth_mib'])}→{cell(r['gua_growth_mib'])}"]) +
            [cell(r["base_R_g"]), cell(r["base_R_u"]), cell(r["gua_R_u"]), cell(r["gua_R_p"]),
             cell(r["gua_projected"]), r["paper_f1"], memory])
    lines += markdown_table(columns, cells, left=0)
    solvers = sorted({(r["m"], r["solver"]) for r in rows if r["solver"]})
    if solvers:
        lines += ["", "GUA's dual solver per m: " + ", ".join(f"m = {m}: {s}" for m, s in solvers)
                  + " (active-set enumeration up to m = 8, NNLS above: the paper's projection-solver appendix)."]
    return "\n".join(lines) + "\n"


def figure(rows: list[dict], cuda: bool = False):
    """Four panels against m: mean F1, time per step (CPU time on CPU, wall clock on CUDA), peak memory
    (ConFIG and +GUA), and R_u / R_p."""
    time_key = "step_ms" if cuda else "step_cpu_ms"
    pairs = list(dict.fromkeys((r["method"], r["optimizer"]) for r in rows))
    colors = {"base": "tab:gray", "gua": "tab:red"}
    arms = (("base", "ConFIG"), ("gua", "+GUA"))

    def draw(ax, panel):
        what, title = panel
        for method, optimizer in pairs:
            mine = sorted((r for r in rows if (r["method"], r["optimizer"]) == (method, optimizer)),
                          key=lambda r: r["m"])
            label = "" if len(pairs) == 1 else f" ({base_name(method)}/{base_name(optimizer)})"
            if what == "f1":
                for prefix, name in arms:
                    points = [(r["m"], r[f"{prefix}_f1_mean"], r[f"{prefix}_f1_std"]) for r in mine
                              if r[f"{prefix}_f1_mean"] is not None]
                    if points:
                        xs, ys, es = zip(*points)
                        ax.errorbar(xs, ys, yerr=es, marker="o", color=colors[prefix], capsize=3, label=name + label)
            elif what == "rates":
                for key, color, name in (("base_R_u", "tab:green", "R_u ConFIG"), ("gua_R_u", "tab:olive", "R_u +GUA"),
                                         ("gua_R_p", "tab:red", "R_p +GUA")):
                    points = [(r["m"], r[key]) for r in mine if r[key] is not None]
                    if points:
                        ax.plot(*zip(*points), marker="o", color=color, label=name + label)
            else:  # a cost: time per step or peak memory
                for prefix, name in arms:
                    points = [(r["m"], r[f"{prefix}_{what}"]) for r in mine if r[f"{prefix}_{what}"] is not None]
                    if points:
                        ax.plot(*zip(*points), marker="o", color=colors[prefix], label=name + label)
        ax.set_xlabel("number of tasks m")
        ax.set_title(title, fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
        if what == "rates":
            ax.set_ylim(-5, 105)

    return panel_figure([("f1", "mean F1 (test) ↑"), (time_key, f"{'' if cuda else 'CPU '}time per step (ms) ↓"),
                         ("peak_mib", "peak memory (MiB) ↓"), ("rates", "conflict rates (%)")], draw, width=3.6)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
