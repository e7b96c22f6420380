"""What a `.pinn` file may name, with its keyword arguments, for the checks of the language front end (which
never imports torch).

The built-in networks, optimizers, surgery methods, alignments, schedules, samplers and references are declared
once, where they are defined, by their registry's decorator (``@SURGERY.register("cagrad")``); `BUILTINS` reads
their names and keyword arguments from that source (`pinnspec._declared`), and a registry imports a built-in's
module the first time it is asked for.  Names registered at run time (plugins, user code) are known too: the
checker asks the registries.  This module holds the rest: the choices of string arguments, the settings, the
defaults of a spec without a statement.

Each entry of `BUILTINS`: name -> {argument: default}.  ``REQUIRED`` marks an argument that has no default.
"""

from __future__ import annotations

import inspect
from typing import Any

from ._declared import REQUIRED, declared
from .registry import REGISTRIES, load_plugins, signature_parameters

_EMPTY = inspect.Parameter.empty

#: GUA's state-alignment coefficients (rho_m, rho_v) per built-in optimizer: the paper's values (Appendix E.4,
#: "Performance across Optimizers").  A built-in optimizer not listed has no state alignment in the paper.
#: The optimizers' ``alignment_defaults`` are these entries.
GUA_STATE_ALIGNMENT: dict[str, tuple[float, float]] = {
    "adam": (0.1, 0.03),
    "adamw": (0.1, 0.03),
    "rmsprop": (0.0, 0.5),
    "soap": (0.03, 0.003),
}

#: Number arguments that also take a tuple of numbers, (kind, name, argument): the Fourier embedding's one
#: sigma per input
TUPLE_ARGUMENTS = frozenset(("model", name, "fourier") for name in ("fourier_mlp", "modified_mlp", "pirate_net"))

#: Arguments that take one of a fixed set of names: (kind, name, argument) -> choices.
#: the second-order stages (`SECOND_ORDER_STAGES`): L-BFGS, then the dense inverse-Hessian methods
QUASI_NEWTON_STAGES = ("lbfgs", "bfgs", "ssbfgs", "ssbroyden")

CHOICES: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("model", "mlp", "activation"): ("tanh", "sin", "gelu", "silu"),
    ("model", "mlp", "init"): ("xavier", "xavier_uniform"),
    **{("model", name, "activation"): ("tanh", "sin", "gelu", "silu")
       for name in ("fourier_mlp", "modified_mlp", "pirate_net", "adaptive_mlp")},
    **{("model", name, "init"): ("xavier", "xavier_uniform")
       for name in ("fourier_mlp", "modified_mlp", "pirate_net", "adaptive_mlp")},
    ("model", "adaptive_mlp", "slope"): ("global", "layer", "neuron"),
    ("surgery", "amtl", "scale"): ("min", "median", "rmse"),
    ("surgery", "amtl", "reduce"): ("mean", "sum"),
    ("align", "gua", "metric"): ("adam", "euclidean"),
    **{("stage", name, "line_search"): ("strong_wolfe", "none") for name in QUASI_NEWTON_STAGES},
    # the adaptive samplers' candidates and refills: random samplers, exact counts (pinnspec.sampling._adaptive)
    **{("sampler", name, "base"): ("uniform", "lhs", "sobol", "halton") for name in ("rad", "rard", "r3")},
}

#: `train KEY = VALUE`: key -> (kind, default). kind: "int", "name", "choice:a|b".
TRAIN_SETTINGS: dict[str, tuple[str, Any]] = {
    "epochs": ("int", 1000),
    "grouping": ("name", None),
    "seed": ("int", 0),
    "device": ("choice:auto|cpu|cuda", "auto"),
    "dtype": ("choice:float32|float64", "float32"),
    "checkpoint_every": ("int", 1000),
    "engine": ("choice:auto|autograd|forward", "auto"),
    # fewer, larger kernels (CompiledProblem.stacking): on, the forward engine's hidden layers take one product
    # over every derivative row, a point set's tasks are pulled back in one batched pass; sets, also one network
    # pass over every point set and one batched pullback of all tasks (m times the backward's arithmetic);
    # auto: on on CUDA, off elsewhere
    "stack": ("choice:auto|on|off|sets", "auto"),
    # auto: on where the run is long enough to win back its first, compiling step (pinnspec.engine._autocompile)
    "compile": ("choice:off|on|graphs|auto", "off"),
    # a run stops as diverged when its loss exceeds this factor times its lowest loss so far (0: never)
    "diverge_factor": ("number", 1e6),
    # when a chain that needs only the weighted sum of the task gradients (surgery none, align none) forms G
    # and the conflict statistics: at validation epochs (the other steps take one backward pass of the sum)
    # or at every step
    "diagnostics": ("choice:validation|every", "validation"),
    # a wall-time budget for the whole run (`train time = 10 min`; s, min or h), which its stages share
    # (pinnspec.engine._budget); None: the epochs alone end the run
    "time": ("duration", None),
    # discrepancy: the run ends at the first epoch of its last stage where every data condition with stated
    # noise fits its observations to their noise (mean square misfit <= K sigma^2, K observed fields; Morozov's
    # discrepancy principle: fitting further fits the noise; pinnspec.engine._budget.DiscrepancyStop); balance: at
    # the first epoch of its last stage where the tasks without noisy observations weigh at most a thousandth of
    # those with them (pinnspec.engine._budget.BalanceStop); never: the epochs and the time budget alone end it
    "stop": ("choice:never|discrepancy|balance", "never"),
    # checked: a run whose memory estimate passes the machine's available memory is refused before anything is
    # allocated (pinnspec.engine._memory); unchecked: it runs anyway
    "memory": ("choice:checked|unchecked", "checked"),
}
#: the units of a wall time (`10 min`) -> seconds
DURATION_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
#: `recipe NAME(args)`: a recipe expands into the training statements a spec leaves out (pinnspec.lang._recipe);
#: name -> {argument: default}; time: the run's wall-time budget (None: the recipe's epoch counts)
RECIPES: dict[str, dict[str, Any]] = {"strong": {"time": None}}
#: the `train` settings that say how a run executes, not what it trains: a stopped run of a sweep or bench may
#: resume with other values of these (the continuation is then not bit for bit the uninterrupted run)
EXECUTION_SETTINGS = ("device", "compile", "engine", "stack", "checkpoint_every", "diagnostics", "memory")
#: the statements of the update chain: runs whose specs differ only in these (same problem and points; the seed
#: too where the points do not depend on it) may train as one group, their losses and G as one batched graph
#: (pinnspec.engine._group)
CHAIN_STATEMENTS = ("surgery", "align", "optimizer", "schedule", "weights")
#: how a group's run steps (`result.json`'s execution): its losses and G from the group's batched graph, its
#: update chain compiled apart or eagerly
GROUP_STRATEGIES = ("batched runs", "batched runs, chain eager")

#: `weights NAME(args)`: the loss-balancing stage of the update chain (pinnspec.engine._weights), name ->
#: {argument: default}; every and points are whole numbers >= 1, 0 <= alpha < 1 (checked when a spec is read)
WEIGHTS: dict[str, dict[str, Any]] = {
    "none": {},
    "gradnorm": {"every": 100, "alpha": 0.9},
    "ntk": {"every": 100, "alpha": 0.9, "points": 256},
    # per-point weights (residual-based attention); needs fixed points (`resample never`); eta > 0, 0 < gamma < 1
    "rba": {"eta": 1e-3, "gamma": 0.999},
}

#: `stage NAME(args) KEY = VALUE, ...`: a stage runs one of the optimizers above (first-order: the update chain
#: with the spec's weights, surgery and alignment) or a second-order method of this table on the weighted sum of
#: the task losses (pinnspec.engine._stages).  name -> {argument: default}
SECOND_ORDER_STAGES: dict[str, dict[str, Any]] = {
    # line_search: strong_wolfe | none; max_evals: objective evaluations per iteration (line search)
    "lbfgs": {"history": 50, "line_search": "strong_wolfe", "lr": 1.0, "max_evals": 25},
    # dense inverse Hessian (p x p numbers): BFGS, self-scaled BFGS, self-scaled Broyden (pinnspec.optim._quasi_newton)
    **{name: {"line_search": "strong_wolfe", "lr": 1.0, "max_evals": 25} for name in QUASI_NEWTON_STAGES[1:]},
}
#: a stage's settings: key -> (kind, default); epochs is required, dtype defaults to the `train` dtype
STAGE_SETTINGS: dict[str, tuple[str, Any]] = {
    "epochs": ("int", REQUIRED),
    "dtype": ("choice:float32|float64", None),
    # a quasi-Newton stage's points: new ones every N of its epochs (the spec's sampler, its memory kept);
    # without it the stage keeps the points of its first epoch
    "resample": ("int", None),
}

#: `causal CONDITION(args)`: argument -> default (jaxpi's causal_tol and num_chunks); eps >= 0, chunks >= 1
CAUSAL: dict[str, Any] = {"eps": 1.0, "chunks": 32}

#: What a spec without the statement gets.
DEFAULTS = {
    "model": "mlp",
    "optimizer": "adam",
    "schedule": "warmup_cosine",
    "surgery": "none",
    "align": "none",
    "weights": "none",
    "sampler": "lhs",
}


def __getattr__(name: str):
    if name == "BUILTINS":  # read from the source on first use (a tenth of a second), not at import
        return builtins()
    raise AttributeError(f"module 'pinnspec.catalog' has no attribute '{name}'")


def builtins() -> dict[str, dict[str, dict[str, Any]]]:
    """kind -> built-in name -> {argument: default}, as the decorators declare them (`pinnspec._declared`)."""
    return {kind: {name: dict(d.arguments) for name, d in sorted(names.items())}
            for kind, names in declared().items() if kind != "function"}


def known(kind: str) -> dict[str, dict[str, Any]]:
    """Every name of ``kind`` (built-ins and registered ones) -> its arguments."""
    load_plugins()
    names = {name: dict(args) for name, args in builtins().get(kind, {}).items()}
    registry = REGISTRIES.get(kind)
    if registry is not None:
        for name in registry.names():
            if name not in names:
                params = signature_parameters(registry.get(name))
                names[name] = {k: (REQUIRED if v is _EMPTY else v) for k, v in params.items()}
    return names

