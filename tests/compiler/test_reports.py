"""`report` statements: the quadrature of each region against integrals known in closed form.

The model is the spec's exact solution (``CompiledProblem.exact``), so the integrands are known functions
and every value below is an independent closed form (no quadrature on the test side)."""

import math

import pytest
import torch

from pinnspec.compiler import compile_spec
from pinnspec.compiler._verify import format_checks, verify
from pinnspec.lang import loads

R = 0.3
DISK = f"""problem disk
space x in [-1, 1], y in [-1, 1]
shape rim = disk(center = (0, 0), radius = {R})
domain inside = rim
field u
equation pde: lap(u) = 4
exact u = x^2 + y^2
report flux = integral(rim, dn(u))
"""


def _reports(text, **kwargs):
    problem = compile_spec(loads(text))
    return problem, problem.reports(problem.exact, **kwargs)


def test_circle_integrals_are_exact_to_rounding():
    """On the rim of a disk of radius R about 0 (the domain's outer boundary, outward normal radial):
    the integral of x^2 is pi R^3 and the flux of grad(u) for u = x^2 + y^2 is 2R * 2 pi R = 4 pi R^2;
    on a hole's rim of the same radius the outward normal points into the hole: the flux is -4 pi R^2."""
    disk = DISK + """report second = integral(rim, x^2)
report normals = integral(rim, normal(x)*x + normal(y)*y)
report average = mean(rim, u)
"""
    _, values = _reports(disk)
    assert values["second"] == pytest.approx(math.pi * R ** 3, rel=1e-12)
    assert values["flux"] == pytest.approx(4 * math.pi * R ** 2, rel=1e-12)
    assert values["normals"] == pytest.approx(2 * math.pi * R ** 2, rel=1e-12)  # n . x = R on the circle
    assert values["average"] == pytest.approx(R ** 2, rel=1e-12)
    hole = disk.replace("domain inside = rim", "domain plate = box - rim")
    _, values = _reports(hole)
    assert values["flux"] == pytest.approx(-4 * math.pi * R ** 2, rel=1e-12)
    assert values["second"] == pytest.approx(math.pi * R ** 3, rel=1e-12)


def test_off_centre_circle_and_nonpolynomial_integrand():
    """A disk centred at (0.2, 0.1): the integral of exp(x) over its rim is 2 pi R e^0.2 I0(R)
    (I0 the modified Bessel function, from its integral representation)."""
    spec = f"""problem offset
space x in [-1, 1], y in [-1, 1]
shape hole = disk(center = (0.2, 0.1), radius = {R})
domain plate = box - hole
field u
equation pde: lap(u) = 0
exact u = exp(x)*cos(y)
report r = integral(hole, exp(x))
"""
    bessel_i0 = sum((R / 2) ** (2 * k) / math.factorial(k) ** 2 for k in range(30))
    _, values = _reports(spec)
    assert values["r"] == pytest.approx(2 * math.pi * R * math.exp(0.2) * bessel_i0, rel=1e-12)


def test_box_sides_polygon_edges_and_box_interior():
    """Gauss–Legendre on sides and edges; the divergence theorem on a triangle: the outward flux of
    grad(u), u = x^2 + y^2, through its three edges is the integral of lap(u) = 4 over it, 4 * area."""
    box = """problem sides
space x in [0, 1], y in [0, 2]
field u
equation pde: lap(u) = 0
exact u = x^3*y^2
report right = integral(x = 1, u)
report bottom = integral(y = 0, dn(u) + normal(y)*u)
report top = integral(y = 2, y^5*exp(x))
"""
    _, values = _reports(box)
    assert values["right"] == pytest.approx(8 / 3, rel=1e-13)
    assert values["bottom"] == pytest.approx(0.0, abs=1e-14)
    assert values["top"] == pytest.approx(32 * (math.e - 1), rel=1e-13)
    triangle = """problem tri
space x in [0, 2], y in [0, 1]
shape tri = polygon(vertices = ((0, 0), (2, 0), (0.5, 1)))
domain inside = tri
field u
equation pde: lap(u) = 4
exact u = x^2 + y^2
report flux = integral(tri, dn(u))
report perimeter = integral(tri, 1)
report area = integral(inside, 1)
"""
    _, values = _reports(triangle)
    assert values["flux"] == pytest.approx(4 * 1.0, rel=1e-12)
    assert values["perimeter"] == pytest.approx(2 + math.hypot(1.5, 1) + math.hypot(0.5, 1), rel=1e-12)
    assert values["area"] == pytest.approx(1.0, rel=2e-2)  # midpoints inside a polygon: first order
    square = """problem all
space x in [0, 1], y in [0, 2]
domain all = box
field u
equation pde: lap(u) = 0
exact u = x*y
report moment = integral(all, u*x^2*y)
report side = integral(x = 1, u)
"""
    _, values = _reports(square)
    assert values["moment"] == pytest.approx(1 / 4 * 8 / 3, rel=1e-13)
    assert values["side"] == pytest.approx(2.0, rel=1e-13)


def test_sphere_in_three_dimensions():
    """On the sphere of radius R: the integral of z^2 is 4 pi R^4 / 3, of 1 is 4 pi R^2."""
    spec = f"""problem ball
space x in [-1, 1], y in [-1, 1], z in [-1, 1]
shape b = ball(center = (0, 0, 0), radius = {R})
domain inside = b
field u
equation pde: lap(u) = 6
exact u = x^2 + y^2 + z^2
report second = integral(b, z^2)
report flux = integral(b, dn(u))
"""
    _, values = _reports(spec)
    assert values["second"] == pytest.approx(4 * math.pi * R ** 4 / 3, rel=1e-12)
    assert values["flux"] == pytest.approx(2 * R * 4 * math.pi * R ** 2, rel=1e-12)


def test_time_params_and_constants_around_the_integral():
    spec = """problem heat
space x in [0, 1]
time t in [0, 1]
field u
param k = 2
equation pde: u_t = k*u_xx
exact u = x*exp(t)
report end = 3*integral(x = 1, u, t = 0.5)/k
report start = integral(x = 0, dn(u), t = 0)
"""
    problem, values = _reports(spec)
    assert values["end"] == pytest.approx(3 * math.exp(0.5) / 2, rel=1e-13)
    assert values["start"] == pytest.approx(-1.0, rel=1e-13)
    trained = problem.reports(problem.exact, {"k": torch.tensor(4.0)})
    assert trained["end"] == pytest.approx(3 * math.exp(0.5) / 4, rel=1e-13)


def test_a_network_float32_and_verify_prints_the_reports():
    problem = compile_spec(loads(DISK))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    values = problem.reports(net)
    assert set(values) == {"flux"} and math.isfinite(values["flux"])
    checks = verify(problem)
    assert checks.reports["flux"] == pytest.approx(4 * math.pi * R ** 2, rel=1e-12)
    assert "flux = " in format_checks(checks, "title")


def test_a_spec_without_reports():
    problem = compile_spec(loads("problem p\nspace x in [0, 1]\nfield u\nequation e1: u_xx = 0\nexact u = x\n"))
    assert problem.reports(problem.exact) == {}
