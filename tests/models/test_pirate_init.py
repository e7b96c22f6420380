"""PirateNet's physics-informed initialisation (``pirate_net(pi_init = true)``): the output layer solves the
least-squares problem for the spec's initial data (its normal equations hold), through the network's own
forward at initialisation, with and without random weight factorization and a periodic embedding."""

import pytest
import torch

from pinnspec.compiler import CompiledProblem
from pinnspec.engine import build_model
from pinnspec.lang import loads
from pinnspec.models._layers import TENSOR_OPS, embed

SPEC = """problem heat
space x in [-1, 1]
time  t in [0, 1]
field u, v
equation pde: u_t - 0.1*u_xx = 0
equation other: v_t - v_xx = 0
initial  ic: u = x^2*cos(pi*x), v_t = 0
periodic pbc on x: u
points pde 64, other 64, ic 64, pbc 16
model pirate_net(width = 32, blocks = 2, features = 32, rwf = {rwf}, pi_init = {pi_init})
{more}
train epochs = 1, seed = 0, dtype = float64
"""


def _fit_error(rwf: str, pi_init: str, more: str = "") -> tuple[float, torch.nn.Module, CompiledProblem]:
    spec = loads(SPEC.format(rwf=rwf, pi_init=pi_init, more=more))
    problem = CompiledProblem(spec)
    model = build_model(spec, problem, device=torch.device("cpu"), dtype=torch.float64)
    x, g = problem.initial_values(512, 1)[0]  # other points than the fit's
    with torch.no_grad():
        u = model(x)[:, 0]
    return float((u - g).norm() / g.norm()), model, problem


@pytest.mark.parametrize("rwf", ["true", "false"])
@pytest.mark.parametrize("more", ["", "enforce pbc"], ids=["plain", "periodic embedding"])
def test_the_output_layer_fits_the_initial_data(rwf, more):
    fitted, model, problem = _fit_error(rwf, "true", more)
    drawn, _, _ = _fit_error(rwf, "false", more)
    assert fitted < 2e-2 and drawn > 1.0  # on other points than the fit's
    # the normal equations of the fit: the residual at the fit's points is orthogonal to every feature
    trunk = model.inner if more else model
    x, g = problem.initial_values(2048, 0)[0]
    inputs = model.embed(TENSOR_OPS, x) if more else x
    features = embed(TENSOR_OPS, trunk.embedding, inputs)  # [n, dim]
    with torch.no_grad():
        residual = model(x)[:, 0] - g  # [n]
    assert (features.T @ residual).abs().max() <= 1e-8 * features.norm(dim=0).max() * g.norm()


def test_only_fields_with_value_data_are_fitted():
    spec = loads(SPEC.format(rwf="true", pi_init="true", more=""))
    values = CompiledProblem(spec).initial_values(16, 0)
    assert list(values) == [0]  # u = x^2 cos(pi x) sets u; v_t = 0 sets no value
