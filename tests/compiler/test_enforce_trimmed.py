"""`enforce` on an L-shaped domain and an L-shaped polygon (trimmed distances at the re-entrant corner): the
constrained output satisfies the walls for any network, the rewritten residuals (SymPy's chain rule through
the trimmed distances, second order) equal nested autograd through A + D * N, `verify` passes, and a short
Poisson run reaches the analytic solution."""

import pytest
import torch

from pinnspec.compiler import CompiledProblem
from pinnspec.compiler._verify import verify
from pinnspec.engine import Trainer, build_model
from pinnspec.lang import loads

#: u* = x^2 + y^2 + x y (1 - x^2)(1 - y^2): its last term vanishes on every edge of the L, so the walls' data
#: x^2 + y^2 is not the solution inside and the network has to learn the rest
POISSON = """problem lpoisson
space x in [-1, 1], y in [-1, 1]
{domain}
field u
equation pde: lap(u) = 4 - 6*x*y*(2 - x^2 - y^2)
boundary walls on boundary: u = x^2 + y^2
points pde 1024, walls 256
exact u = x^2 + y^2 + x*y*(1 - x^2)*(1 - y^2)
test 2000
model mlp(width = 20, depth = 2)
optimizer adam(lr = 1e-2)
enforce walls
train epochs = {epochs}, seed = 0, dtype = float64
"""
L_SHAPE = "shape notch = box(lo = (0, -1), hi = (1, 0))\ndomain L = box - notch"
POLYGON = "shape ell = polygon(vertices = ((-1, -1), (0, -1), (0, 0), (1, 0), (1, 1), (-1, 1)))\ndomain L = ell"


@pytest.mark.parametrize("domain", [L_SHAPE, POLYGON], ids=["box - notch", "polygon"])
def test_the_walls_hold_for_any_network_and_the_rewritten_residuals_equal_autograd(domain):
    spec = loads(POISSON.format(domain=domain, epochs=2))
    written, rewritten = CompiledProblem(spec, enforce=False), CompiledProblem(spec)
    model = build_model(spec, written, device=torch.device("cpu"), dtype=torch.float64)
    with torch.no_grad():  # an arbitrary network: large random weights
        for p in model.parameters():
            p.normal_(0.0, 2.0, generator=torch.Generator().manual_seed(1))
    points = written.sample(0, 0, dtype=torch.float64)
    residuals = written.residuals(model, points, engine="autograd")  # nested autograd through A + D * N
    assert residuals["walls"].abs().max() <= 1e-12
    assert residuals["pde"].abs().max() > 1e-2  # the network itself is not the solution
    for engine in ("autograd", "forward"):
        again = rewritten.residuals(model, points, engine=engine)  # the bare network through the rewritten kernels
        assert torch.allclose(again["pde"], residuals["pde"], rtol=1e-9, atol=1e-9), engine
    inside = points.sets[written.condition_kernels["pde"].set_index].x.detach()
    _, distance = written.constraint_transform(inside)
    assert (distance > 0).all() and torch.isfinite(distance).all()


@pytest.mark.parametrize("domain", [L_SHAPE, POLYGON], ids=["box - notch", "polygon"])
def test_verify_runs_the_walls_through_the_constrained_output(domain):
    checks = {c.name: c for c in verify(CompiledProblem(loads(POISSON.format(domain=domain, epochs=2))))}
    assert checks["walls (enforced)"].passed and checks["walls (enforced)"].rtol == 1e-10
    assert checks["pde"].passed and checks["walls"].passed


def test_a_short_poisson_run_on_the_l_shape_reaches_the_analytic_solution():
    trainer = Trainer(loads(POISSON.format(domain=L_SHAPE, epochs=300)))
    result = trainer.run()
    assert trainer.grouping.labels == ("pde",)
    assert trainer.run_state.history[-1]["loss:walls"] < 1e-25  # the walls hold by construction
    assert result.rel_l2 < 0.08  # 5.3e-2 after 300 epochs (the conditions as losses: 1.1e-1)


def test_where_a_trimmed_wall_meets_another_condition_the_output_is_the_data():
    """Two conditions on an L (left and bottom walls one, the rest another, data agreeing at their corners): at
    the corners where both distances vanish the blend is finite and equals the data there (it would be 0/0)."""
    spec = loads(POISSON.format(domain=L_SHAPE, epochs=2).replace(
        "boundary walls on boundary: u = x^2 + y^2",
        "boundary walls on x = -1, y = -1: u = x^2 + y^2\nboundary rest on x = 1, y = 1, notch: u = x^2 + y^2")
        .replace("enforce walls", "enforce walls, rest").replace("points pde 1024, walls 256",
                                                                 "points pde 1024, walls 128, rest 128"))
    written = CompiledProblem(spec, enforce=False)
    model = build_model(spec, written, device=torch.device("cpu"), dtype=torch.float64)
    corners = torch.tensor([[-1.0, 1.0], [0.0, -1.0], [1.0, 0.0], [0.0, 0.0], [-1.0, -1.0], [1.0, 1.0]],
                           dtype=torch.float64)  # [6, 2]: where the two conditions' parts meet, and the L's corners
    with torch.no_grad():
        values = model(corners)[:, 0]
    assert torch.isfinite(values).all()
    assert torch.allclose(values, (corners ** 2).sum(1), rtol=0, atol=1e-9)


def test_walls_whose_data_has_kinks_are_enforced_with_the_kinks_second_derivative_taken_as_zero():
    """Data with min/max (the derivative of a kink is a jump, its second a DiracDelta SymPy cannot print for
    torch): the rewritten residual compiles and equals nested autograd through A + D * N off the kink."""
    spec = loads(POISSON.format(domain=L_SHAPE, epochs=2).replace("u = x^2 + y^2", "u = max(x, y)^2"))
    written, rewritten = CompiledProblem(spec, enforce=False), CompiledProblem(spec)
    model = build_model(spec, written, device=torch.device("cpu"), dtype=torch.float64)
    points = written.sample(0, 0, dtype=torch.float64)
    residuals = written.residuals(model, points, engine="autograd")
    assert residuals["walls"].abs().max() <= 1e-12
    again = rewritten.residuals(model, points, engine="autograd")["pde"]
    assert torch.isfinite(again).all()
    assert torch.allclose(again, residuals["pde"], rtol=1e-9, atol=1e-9)
