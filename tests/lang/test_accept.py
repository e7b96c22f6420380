"""Valid specs that use the corners of the language (docs/reference.md) are accepted."""

from pathlib import Path

import pytest
import sympy

from pinnspec import ir
from pinnspec.lang import loads, load

DATA = Path(__file__).parent / "data"
HEAD = "problem p\nspace x in [-1, 1]\ntime t in [0, 1]\nfield u\n"

ACCEPTED = [
    ("continuation in brackets", HEAD + "equation pde: u_t + (u *\n   u_x) = 0\ngrouping g = [\n  pde,\n]\n"),
    ("tabs and comments", HEAD + "equation\tpde:\tu_t = 0   # a comment with = and : inside\n# only a comment\n"),
    ("both power operators", HEAD + "equation pde: u_t + u^2 + u**3 + 2^-1*u = 0\n"),
    ("right-assoc power", HEAD + "equation pde: u_t = 2^3^2*u\n"),
    ("unary minus below power", HEAD + "equation pde: u_t = -x^2*u\n"),
    ("constants", HEAD + "equation pde: u_t = e^x*pi*u\n"),
    ("every function", HEAD + "equation pde: u_t = sin(x)+cos(x)+tan(x)+exp(x)+log(2+x)+sqrt(2+x)+abs(x)+tanh(x)"
     "+sinh(x)+cosh(x)+arcsin(x/2)+arccos(x/2)+arctan(x)+sign(x)+min(x,u)+max(x,u,1)+heaviside(x)\n"),
    ("d with a product", HEAD + "equation pde: d(u*x, x, t) = 0\n"),
    ("time before space", "problem p\ntime t in [0, 1]\nspace x in [0, 1]\nfield u\nequation pde: u_t = u_xx\n"),
    ("negative param", HEAD + "param k = -1.5e-2\nequation pde: u_t = k*u_xx\n"),
    ("signed exponent numbers", HEAD + "equation pde: u_t = 2.5E+4*u + 1.*u + .5*u\n"),
    ("no training statements", HEAD + "equation pde: u_t = 0\n"),
    ("bare and called settings", HEAD + "equation pde: u_t = 0\nsurgery pcgrad\nalign none\nschedule constant\n"
     "optimizer sgd(lr = 0.1)\nsampler halton\n"),
    ("resample never", HEAD + "equation pde: u_t = 0\nresample never\n"),
    ("test count", HEAD + "equation pde: u_t = 0\ntest 500\nvalidate 200 every 10\n"),
    ("weights in loss and grouping", HEAD + "equation pde: u_t = 0\ninitial ic: u = 0\nloss L = 0.5*pde + 2*ic\n"
     "grouping g = [3*L + pool(pde, ic), 1e-1*ic]\n"),
    ("multi-face with list", HEAD + "equation pde: u_t = 0\nboundary b on x = -1, x = 1: u = 0, u_x = 0\n"),
    ("face value expression", "problem p\nspace x in [0, pi]\nfield u\nequation pde: u_xx = 0\nboundary b on x = pi: u = 0\n"),
    ("keyword names in calls with underscores", HEAD + "equation pde: u_t = 0\nalign gua(metric = adam, rho_m = 0.1, rho_v = 0.03)\n"),
    ("tuple and string values", HEAD + "equation pde: u_t = 0\nmodel mlp(activation = \"tanh\", width = 8)\n"),
    ("a field of some coordinates", "problem p\nspace x in [0, 1], y in [0, 1]\ntime t in [0, 1]\n"
     "field u, k(y, x), c(t)\nequation pde: u_t = d(k*u_x, x) + c*u_yy\n"),
    ("repeated space/field/points/exact", "problem p\nspace x in [0, 1]\nspace y in [0, 1]\nfield u\nfield v\n"
     "equation a: u_x = 0\nequation b: v_y = 0\npoints a 10\npoints b 20\nexact u = 1\nexact v = 2\n"),
]


@pytest.mark.parametrize("text", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_accepted(text):
    loads(text, filename="ok.pinn")


def test_everything_spec_with_crlf_line_endings():
    spec = load(DATA / "everything_crlf.pinn")
    problem = spec.ir
    assert [c.name for c in problem.coordinates] == ["x", "y", "t"]
    w = problem.condition("w")
    assert [str(f) for f in w.region.faces] == ["x = -1", "x = 1", "y = 0"]
    assert len(w.face_residuals) == 3
    assert problem.grouping().labels == ("2*N + B", "ic")
    assert problem.training.options == {"epochs": 1000, "grouping": "g", "seed": 3, "device": "cpu", "dtype": "float64"}
    assert isinstance(problem.condition("p").region, ir.PeriodicPairs)


def test_power_and_minus_precedence():
    spec = loads(HEAD + "let a = -2^2\nlet b = 2^3^2\nequation pde: u_t = a*u + b*u\n")
    lets = dict(spec.ir.lets)
    assert lets["a"] == -4 and lets["b"] == 512


def test_a_field_of_some_coordinates_is_a_function_of_those_only():
    spec = loads("problem p\nspace x in [0, 1], y in [0, 1]\ntime t in [0, 1]\nfield u, k(y, x), c(t)\n"
                 "equation pde: u_t = d(k*u_x, x) + c*u_yy + k_t + d(c, x)\n", filename="ok.pinn")
    assert spec.ir.field_coordinates == (("k", ("x", "y")), ("c", ("t",)))  # the problem's coordinate order
    assert str(spec.ir.field_function("k")) == "k(x, y)" and str(spec.ir.field_function("u")) == "u(x, y, t)"
    (residual,) = spec.ir.condition("pde").residuals
    assert "Derivative(k(x, y), t)" not in str(residual) and "Derivative(c(t), x)" not in str(residual)
    assert [w.message for w in spec.warnings] == ["'k_t' is 0: the field k(x, y) does not depend on t"]
    listed_all = loads("problem p\nspace x in [0, 1]\ntime t in [0, 1]\nfield u(t, x)\nequation pde: u_t = u_xx\n",
                       filename="ok.pinn")
    assert listed_all.ir.field_coordinates == ()  # every coordinate: a plain field


def test_d_may_name_a_param_and_d_of_stays_the_derivative():
    spec = loads(HEAD + "param d = 0.1\nequation pde: u_t = d*d(u_x, x)\n")
    (residual,) = spec.ir.condition("pde").residuals
    x, t = sympy.symbols("x t", real=True)
    u = sympy.Function("u")(x, t)
    assert sympy.simplify(residual - (u.diff(t) - sympy.Symbol("d", real=True) * u.diff(x, 2))) == 0
    assert dict(spec.ir.params) == {"d": 0.1}
