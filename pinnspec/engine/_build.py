"""What a run is built from: its device, its network (`build_model`), its stages' limits, and how its step runs
(`describe_execution`, what ``pinnspec show --stage step`` prints)."""

from __future__ import annotations

import torch

from ..compiler import compile_spec
from ..models import TENSOR_OPS, FieldGroups, PeriodicEmbedding
from ..optim import DENSE_LIMIT_BYTES, dense_bytes
from ..registry import MODELS
from ._chain import UpdateChain
from ._execute import plan_execution
from ._stages import objective_compiles

__all__ = ["DTYPES", "resolve_device", "build_model", "check_dense_stages", "describe_execution"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_device(device: str | None) -> torch.device:
    device = device or "auto"
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda was asked for, but torch sees no CUDA device (use --device cpu or auto)")
    return torch.device(device)


def build_model(spec, problem, *, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The spec's network, initialised from its seed (on the CPU: the same network on every device), with
    the spec's hard constraints on its outputs (`enforce`)."""
    t = spec.ir.training
    init = torch.Generator().manual_seed(int(t.setting("seed")))
    periodic = tuple((problem.coordinates.index(e.coordinate), e.lo, e.hi - e.lo) for e in spec.ir.periodic_embeddings)
    factory = MODELS.get(t.model.name)(**t.model.options)
    if spec.ir.field_coordinates:
        return problem.constrained(_field_groups(spec, factory, init, dtype, device, periodic))
    trunk = factory.build(problem.dim + len(periodic), len(spec.ir.fields), generator=init, dtype=dtype,
                          device=device)
    net = PeriodicEmbedding(trunk, problem.dim, periodic) if periodic else trunk  # `enforce` of a periodic condition
    if getattr(factory, "pi_init", False):
        _physics_informed_init(spec, problem, trunk, net)
    return problem.constrained(net)


def _field_groups(spec, factory, init, dtype, device, periodic) -> FieldGroups:
    """``field a(x, y)``: one network of the spec's model per set of coordinates, drawn in the order of
    each set's first field (`FieldGroups`)."""
    ir_problem = spec.ir
    if periodic:
        raise ValueError("a periodic `enforce` and fields of some coordinates only (field a(...)) do not combine "
                         "yet: keep the periodic condition as a loss, or let every field depend on every coordinate")
    if getattr(factory, "pi_init", False):
        raise ValueError("pi_init = true fits one output layer to the initial data; it does not combine with "
                         "fields of some coordinates only (field a(...))")
    names = [c.name for c in ir_problem.coordinates]
    by_columns: dict[tuple[int, ...], list[int]] = {}
    for f, field in enumerate(ir_problem.fields):
        columns = tuple(names.index(c) for c in ir_problem.coordinates_of(field))
        by_columns.setdefault(columns, []).append(f)

    def setting(columns):  # a per-coordinate Fourier scale keeps its columns' scales
        return factory.on_columns(columns, len(names)) if hasattr(factory, "on_columns") else factory

    groups = tuple((columns, tuple(fields), setting(columns).build(len(columns), len(fields), generator=init,
                                                                   dtype=dtype, device=device))
                   for columns, fields in by_columns.items())
    return FieldGroups(len(names), len(ir_problem.fields), groups)


def _physics_informed_init(spec, problem, trunk, net) -> None:
    """PirateNet's physics-informed initialisation (``pi_init = true``): the output row of each field an
    initial condition sets is fitted by least squares to its data on 2048 points of that condition (drawn from
    the spec's seed); a field with a hard constraint keeps its draw (its initial data holds already)."""
    constrained = {h.field for h in spec.ir.hard_constraints}
    data = problem.initial_values(2048, int(spec.ir.training.setting("seed")))
    for field, (x, values) in data.items():
        if problem.fields[field] in constrained:
            continue
        device = next(trunk.parameters()).device
        x = x.to(device)
        inputs = net.embed(TENSOR_OPS, x.to(net.angle_weight.dtype)) if net is not trunk else x  # what the trunk reads
        trunk.fit_output(field, inputs.to(torch.float64), values.to(device))


def describe_execution(spec) -> str:
    """How a training step of ``spec`` runs: its execution plan (`plan_execution`), as
    ``pinnspec show --stage step`` prints it.  Nothing is compiled or trained."""
    t = spec.ir.training
    device = resolve_device(t.setting("device"))
    dtype = torch.float64 if t.setting("dtype") == "float64" else torch.float32
    grouping = spec.ir.grouping()
    problem = compile_spec(spec.ir, grouping.name)
    model = build_model(spec, problem, device=device, dtype=dtype)
    plan = plan_execution(problem, model, UpdateChain.from_training(spec.ir.training), grouping=grouping.name,
                          num_losses=grouping.m, device=device)
    text = plan.describe(plan.candidates[0].name)
    if t.stages:  # the plan above is the first first-order stage's; each stage in order
        lines = [f"stages ({len(t.stages)}), each from where the one before it ended:"]
        objective = "one compiled graph" if objective_compiles(t, problem, model) else "eagerly"
        for k, stage in enumerate(t.stages):
            how = (f"its line search on the host, f and its gradient by {objective}, the task losses' weighted sum "
                   "at fixed points; no surgery or alignment" if stage.second_order
                   else "the update chain with this stage's optimizer, planned as above")
            lines.append(f"  {k + 1}. {stage}: {how}")
        text += "\n" + "\n".join(lines)
    return text


def check_dense_stages(stages, parameters: int) -> None:
    """Refuses a bfgs-family stage whose dense [p, p] inverse Hessian (p = ``parameters``) would pass
    `DENSE_LIMIT_BYTES`."""
    for k, stage in enumerate(stages):
        if stage.second_order and stage.optimizer.name != "lbfgs":
            size = dense_bytes(parameters, DTYPES[stage.dtype])
            if size > DENSE_LIMIT_BYTES:
                raise ValueError(
                    f"stage {k + 1} ({stage.optimizer.name}) keeps a dense {parameters:,} x {parameters:,} inverse "
                    f"Hessian: {size / 1024 ** 3:.1f} GiB, over the {DENSE_LIMIT_BYTES / 1024 ** 3:.0f} GiB limit; "
                    "use `stage lbfgs(...)` (memory 2 x history x p) or a smaller network")
