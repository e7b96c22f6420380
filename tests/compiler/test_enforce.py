"""`enforce`: the output transform reproduces the enforced data exactly for any network; the residuals the
rewritten problem computes from the bare network (SymPy's chain rule, both derivative engines) equal nested
autograd through the constrained model on the conditions as written; periodic embeddings make the periodic
condition vanish; the enforced conditions leave the tasks."""

import math

import pytest
import torch

from pinnspec.compiler import CompiledProblem
from pinnspec.compiler._verify import verify
from pinnspec.engine import Trainer
from pinnspec.engine import build_model
from pinnspec.lang import loads

HEAT = """problem heat
space x in [0, 1]
time  t in [0, 1]
field u
equation pde: u_t - 0.1*u_xx = 0
initial  ic: u = sin(pi*x) + x
boundary left on x = 0: u = t^2
boundary right on x = 1: u = 1 + exp(t) - 1
grouping two = [pde, pool(left, right, ic)]
points pde 64, left 16, right 16, ic 16
exact u = sin(pi*x)*exp(-0.1*pi^2*t) + x + (1 - x)*t^2 + x*(exp(t) - 1)
model mlp(width = 8, depth = 2)
enforce {enforced}
train epochs = 5, grouping = two, seed = 0, dtype = float64{more}
"""

#: a steady 2-D problem with Dirichlet data on all four faces (compatible at the corners): a Coons patch
PLATE = """problem plate
space x in [0, 1], y in [0, 2]
field u
equation pde: u_xx + u_yy = 0
boundary walls on boundary: u = x^2 - y^2 + x*y
points pde 64, walls 64
exact u = x^2 - y^2 + x*y
model mlp(width = 8, depth = 2)
enforce walls
train epochs = 3, seed = 0, dtype = float64
"""


def _trainer(text: str) -> Trainer:
    return Trainer(loads(text))


@pytest.mark.parametrize("enforced", ["ic", "left, right", "ic, left, right"])
def test_the_constrained_output_satisfies_the_enforced_conditions_for_any_network(enforced):
    spec = loads(HEAT.format(enforced=enforced, more=""))
    written = CompiledProblem(spec, enforce=False)  # the conditions as written
    model = build_model(spec, written, device=torch.device("cpu"), dtype=torch.float64)
    with torch.no_grad():  # an arbitrary network: large random weights
        for p in model.parameters():
            p.normal_(0.0, 2.0, generator=torch.Generator().manual_seed(1))
    points = written.sample(0, 0, dtype=torch.float64)
    residuals = written.residuals(model, points, engine="autograd")
    for name in spec.ir.enforced:
        assert residuals[name].abs().max() <= 1e-12, name
    assert residuals["pde"].abs().max() > 1e-3  # the network itself is not the solution


@pytest.mark.parametrize("engine", ["autograd", "forward"])
@pytest.mark.parametrize("text", [HEAT.format(enforced="ic, left, right", more=""), PLATE], ids=["heat", "plate"])
def test_rewritten_residuals_equal_autograd_through_the_constrained_model(text, engine):
    spec = loads(text)
    rewritten, written = CompiledProblem(spec), CompiledProblem(spec, enforce=False)
    model = build_model(spec, rewritten, device=torch.device("cpu"), dtype=torch.float64)
    points = rewritten.sample(0, 0, dtype=torch.float64)
    a = rewritten.residuals(model, points, engine=engine)  # the bare network through the rewritten kernels
    b = written.residuals(model, points, engine="autograd")  # nested autograd through A + D * N
    for name in a:
        assert torch.allclose(a[name], b[name], rtol=1e-10, atol=1e-12), name


def test_verify_checks_the_transform_reproduces_the_data():
    spec = loads(PLATE)
    checks = {c.name: c for c in verify(CompiledProblem(spec))}
    assert checks["walls (enforced)"].passed and checks["walls (enforced)"].rtol == 1e-10
    assert checks["pde"].passed and checks["walls"].passed  # the exact solution, on the conditions as written


def test_enforced_conditions_leave_the_tasks_and_their_logged_loss_vanishes(capsys):
    trainer = _trainer(HEAT.format(enforced="ic, left, right", more=""))
    assert trainer.grouping.labels == ("pde",)
    trainer.run()
    assert "enforce: ic, left, right hold by construction" in capsys.readouterr().err
    last = trainer.run_state.history[-1]
    assert all(last[f"loss:{c}"] < 1e-25 for c in ("ic", "left", "right"))
    partial = _trainer(HEAT.format(enforced="left", more=""))
    assert partial.grouping.labels == ("pde", "pool(right, ic)")


PERIODIC = """problem wave
space x in [-1, 1]
time  t in [0, 1]
field u
equation pde: u_t + u_x = 0
initial  ic: u = sin(pi*x)
periodic pbc on x: u, u_x, u_xx
points pde 64, ic 16, pbc 16
exact u = sin(pi*(x - t))
model {model}
enforce {enforced}
train epochs = 3, seed = 0, dtype = float64
"""


@pytest.mark.parametrize("model", ["mlp(width = 8, depth = 2)", "modified_mlp(width = 8, depth = 2, fourier = 1)"])
def test_a_periodic_embedding_makes_the_periodic_condition_vanish(model):
    trainer = _trainer(PERIODIC.format(model=model, enforced="pbc, ic"))
    points = trainer.problem.sample(0, 0, dtype=torch.float64)
    residuals = trainer.problem.residuals(trainer.model, points)
    assert residuals["pbc"].abs().max() < 1e-10 and residuals["ic"].abs().max() < 1e-12
    assert trainer.grouping.labels == ("pde",)
    assert sum(p.numel() for p in trainer.model.parameters()) == sum(
        p.numel() for p in trainer.model.net.inner.parameters())
    assert trainer.run().status == "completed"
    exact = verify(CompiledProblem(trainer.spec))
    assert all(c.passed for c in exact)


def test_the_forward_and_autograd_engines_agree_on_a_constrained_network():
    spec = loads(HEAT.format(enforced="ic, left, right", more=", engine = forward"))
    trainer = Trainer(spec)
    points = trainer.points.at(0)
    forward = trainer.problem.losses(trainer.model, points, engine="forward")
    autograd = trainer.problem.losses(trainer.model, points, engine="autograd")
    assert math.isclose(float(forward.tasks.sum().detach()), float(autograd.tasks.sum().detach()), rel_tol=1e-10)


def test_enforce_none_and_the_override():
    from pinnspec.lang._overrides import apply_overrides

    spec = loads(HEAT.format(enforced="ic, left, right", more=""))
    off = apply_overrides(spec, {"enforce": "none"})
    assert off.ir.hard_constraints == () and off.ir.grouping("two").labels == ("pde", "pool(left, right, ic)")
    assert apply_overrides(spec, {"enforce": "left"}).ir.enforced == ("left",)


#: a plate with a hole: the box's faces by the Boolean sum, the rim by (|x - c|^2 - r^2) / (2 r), blended
HOLE = """problem hole
space x in [0, 1], y in [0, 1]
shape hole = disk(center = (0.6, 0.4), radius = 0.15)
domain plate = box - hole
field u
equation pde: lap(u) = 0
boundary outer on box: u = 1 + x*y
boundary rim on hole: u = x - y
points pde 128, outer 64, rim 64
model mlp(width = 8, depth = 2)
enforce {enforced}
train epochs = 2, seed = 0, dtype = float64
"""


@pytest.mark.parametrize("enforced", ["outer, rim", "rim"])
def test_on_a_domain_the_constrained_output_satisfies_the_enforced_parts(enforced):
    spec = loads(HOLE.format(enforced=enforced))
    written, rewritten = CompiledProblem(spec, enforce=False), CompiledProblem(spec)
    model = build_model(spec, written, device=torch.device("cpu"), dtype=torch.float64)
    points = written.sample(0, 0, dtype=torch.float64)
    residuals = written.residuals(model, points, engine="autograd")
    for name in spec.ir.enforced:
        assert residuals[name].abs().max() <= 1e-12, name
    # the rewritten kernels on the bare network equal nested autograd through A + D * N
    again = rewritten.residuals(model, points, engine="autograd")
    assert torch.allclose(again["pde"], residuals["pde"], rtol=1e-9, atol=1e-10)
    # the distance is positive inside the domain: the network's value matters there
    inside = points.sets[written.condition_kernels["pde"].set_index].x.detach()
    _, distance = written.constraint_transform(inside)
    assert (distance > 0).all()


@pytest.mark.parametrize("text, phrase", [
    # two faces of the box whose data disagree at their corner, in a spec with a domain
    ("""problem corner
space x in [0, 1], y in [0, 1]
shape a = disk(center = (0.5, 0.5), radius = 0.1)
domain plate = box - a
field u
equation pde: lap(u) = 0
boundary left on x = 0: u = 1
boundary bottom on y = 0: u = 0
enforce left, bottom
""", "cannot satisfy 'left' and 'bottom' at once: at x = 0, y = 0.269787 the transform gives 0 where 'left' asks 1 "
        "(their data disagree where the faces meet: x = 0 ('left') and y = 0 ('bottom') meet at x = 0, y = 0 where "
        "their data are 1 and 0"),
])
def test_enforce_on_a_domain_refuses_what_it_cannot_build(text, phrase):
    from pinnspec.lang import SpecError

    with pytest.raises(SpecError) as err:
        loads(text)
    assert phrase in str(err.value)
