"""Golden tests: every spec and example lowers to the expected problem.

Two independent checks:
* residuals written here from the paper (Appendix C) / the example's README,
  parsed by SymPy's own parser (not ours), compared as SymPy expressions;
* the full ``pinnspec show --stage ir`` text against files in golden/
  (regenerate with PINNSPEC_UPDATE_GOLDEN=1 after an intended change, and
  review the diff).
"""

import os
import random
from pathlib import Path

import pytest
import sympy
from sympy.parsing.sympy_parser import convert_xor, parse_expr, rationalize, standard_transformations

from pinnspec import ir
from pinnspec.lang import load
from pinnspec.lang._show import format_ir

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
ALL_FILES = sorted(ROOT.glob("specs/*.pinn")) + sorted(ROOT.glob("examples/*/*.pinn"))

BELTRAMI = {
    "us": "-(exp(x)*sin(y + z) + exp(z)*cos(x + y))*exp(-t)",
    "vs": "-(exp(y)*sin(z + x) + exp(x)*cos(y + z))*exp(-t)",
    "ws": "-(exp(z)*sin(x + y) + exp(y)*cos(z + x))*exp(-t)",
    "ps": "-1/2*(exp(2*x) + exp(2*y) + exp(2*z) + 2*sin(x + y)*cos(z + x)*exp(y + z)"
          " + 2*sin(y + z)*cos(x + y)*exp(z + x) + 2*sin(z + x)*cos(y + z)*exp(x + y))*exp(-2*t)",
}
KOV_LAM = "(20 - sqrt(400 + 4*pi^2))"
KOV = {
    "us": f"1 - exp({KOV_LAM}*x)*cos(2*pi*y)",
    "vs": f"{KOV_LAM}/(2*pi)*exp({KOV_LAM}*x)*sin(2*pi*y)",
    "ps": f"1/2*(1 - exp(2*{KOV_LAM}*x))",
}
P5 = "sin(pi/2*x1) + sin(pi/2*x2) + sin(pi/2*x3) + sin(pi/2*x4) + sin(pi/2*x5)"


def _sub(text, table):
    for k, v in table.items():
        text = text.replace(k, f"({v})")
    return text


# spec -> coordinates, fields, {condition: (kind, [residual components])}, {grouping: task labels}, points
SPECS = {
    "burgers": (
        ("x", "t"), ("u",),
        {
            "burgers": ("equation", ["u_t + u*u_x - 0.01/pi*u_xx"]),
            "ic": ("initial", ["u + sin(pi*x)"]),
            "walls": ("boundary", ["u"]),
        },
        {"two": ["N", "pool(walls, ic)"], "three": ["N", "B", "I"]},
        {"burgers": 10000, "walls": 250, "ic": 250},
    ),
    "schrodinger": (
        ("x", "t"), ("u", "v"),
        {
            "real": ("equation", ["u_t + 1/2*v_xx + (u^2 + v^2)*v"]),
            "imag": ("equation", ["v_t - 1/2*u_xx - (u^2 + v^2)*u"]),
            "ic": ("initial", ["u - 2/cosh(x)", "v"]),
            "pbc": ("periodic", ["u", "v", "u_x", "v_x"]),
        },
        {"two": ["N", "pool(pbc, ic)"], "three": ["N", "B", "I"]},
        {"real": 20000, "imag": 20000, "pbc": 500, "ic": 500},
    ),
    "kovasznay": (
        ("x", "y"), ("u", "v", "p"),
        {
            "momx": ("equation", ["u*u_x + v*u_y + p_x - 1/40*(u_xx + u_yy)"]),
            "momy": ("equation", ["u*v_x + v*v_y + p_y - 1/40*(v_xx + v_yy)"]),
            "cont": ("equation", ["u_x + v_y"]),
            "bc": ("boundary", [_sub("u - us", KOV), _sub("v - vs", KOV), _sub("p - ps", KOV)]),
        },
        {"two": ["N", "B"]},
        {"momx": 20000, "momy": 20000, "cont": 20000, "bc": 1000},
    ),
    "heat_ms": (
        ("x", "y", "t"), ("u",),
        {
            "heat": ("equation", ["u_t - 1/(500*pi)^2*u_xx - 1/pi^2*u_yy"]),
            "ic": ("initial", ["u - sin(20*pi*x)*sin(pi*y)"]),
            "bc": ("boundary", ["u"]),
        },
        {"two": ["N", "pool(bc, ic)"], "three": ["N", "B", "I"]},
        {"heat": 20000, "bc": 2000, "ic": 2000},
    ),
    "beltrami": (
        ("x", "y", "z", "t"), ("u", "v", "w", "p"),
        {
            "momx": ("equation", ["u_t + u*u_x + v*u_y + w*u_z + p_x - (u_xx + u_yy + u_zz)"]),
            "momy": ("equation", ["v_t + u*v_x + v*v_y + w*v_z + p_y - (v_xx + v_yy + v_zz)"]),
            "momz": ("equation", ["w_t + u*w_x + v*w_y + w*w_z + p_z - (w_xx + w_yy + w_zz)"]),
            "cont": ("equation", ["u_x + v_y + w_z"]),
            "ic": ("initial", [_sub(f"{f} - {f}s", BELTRAMI) for f in "uvwp"]),
            "bc": ("boundary", [_sub(f"{f} - {f}s", BELTRAMI) for f in "uvwp"]),
        },
        {"two": ["N", "pool(bc, ic)"], "three": ["N", "B", "I"]},
        {"momx": 25000, "momy": 25000, "momz": 25000, "cont": 25000, "bc": 5000, "ic": 5000},
    ),
    "poisson5d": (
        ("x1", "x2", "x3", "x4", "x5"), ("u",),
        {
            "poisson": ("equation", [f"u_x1x1 + u_x2x2 + u_x3x3 + u_x4x4 + u_x5x5 + pi^2/4*({P5})"]),
            "bc": ("boundary", [f"u - ({P5})"]),
        },
        {"two": ["N", "B"]},
        {"poisson": 20000, "bc": 5000},
    ),
}

# example -> coordinates, fields, {condition: (kind, [components] or {face: [components]})}
EXAMPLES = {
    "poisson2d_mixed": (
        ("x", "y"), ("u",),
        {
            "poisson": ("equation", ["-(u_xx + u_yy) - (pi^2/9 - 1)*exp(y)*sin(pi*x/3)"]),
            "dir": ("boundary", ["u - 1"]),
            "neu": ("boundary", ["u_x - pi/6*exp(y)"]),  # outward normal on x = 1 is +x
            "robin": ("boundary", {"y = 0": ["-u_y + u - 1 - 2*y*exp(y)*sin(pi*x/3)"],
                                   "y = 1": ["u_y + u - 1 - 2*y*exp(y)*sin(pi*x/3)"]}),
        },
    ),
    "advection_periodic": (
        ("x", "t"), ("u",),
        {
            "advdiff": ("equation", ["u_t + u_x - 0.02*u_xx"]),
            "ic": ("initial", ["u - sin(2*pi*x)"]),
            "pbc": ("periodic", ["u", "u_x"]),
        },
    ),
    "inverse_heat": (
        ("x", "t"), ("u",),
        {
            "heat": ("equation", ["u_t - k*u_xx"]),
            "walls": ("boundary", ["u"]),
            "obs": ("data", ["u - u_obs"]),
        },
    ),
    "oscillator": (
        ("t",), ("u",),
        {
            "osc": ("equation", ["u_tt + 2*(1/10)*2*u_t + 2^2*u"]),
            "ic": ("initial", ["u - 1", "u_t"]),
        },
    ),
    "helmholtz3d": (
        ("x", "y", "z"), ("u",),
        {
            "helmholtz": ("equation", ["u_xx + u_yy + u_zz + 4*u - (4 - 3*pi^2)*sin(pi*x)*sin(pi*y)*sin(pi*z) - 4*x*y*z"]),
            "bc": ("boundary", ["u - x*y*z"]),
        },
    ),
    "annulus": (  # dn(u) on a domain's boundary: the per-point outward normal n_x, n_y
        ("x", "y"), ("u",),
        {
            "laplace": ("equation", ["u_xx + u_yy"]),
            "rim": ("boundary", ["u"]),
            "hole": ("boundary", ["n_x*u_x + n_y*u_y + 1/sqrt(x^2 + y^2)"]),
        },
    ),
    "plate_holes": (
        ("x", "y"), ("u",),
        {
            "laplace": ("equation", ["u_xx + u_yy"]),
            "outer": ("boundary", ["u - 1"]),
            "rims": ("boundary", ["u"]),
        },
    ),
    "lshape": (
        ("x", "y"), ("u",),
        {
            "laplace": ("equation", ["u_xx + u_yy"]),
            "edges": ("boundary", ["u - (x^2 + y^2)^(1/3)*cos(2/3*acos(Min(Max((y - x)/sqrt(2*(x^2 + y^2)), -1), 1)))"]),
        },
    ),
    "wave1d": (
        ("x", "t"), ("u",),
        {
            "wave": ("equation", ["u_tt - u_xx"]),
            "ic": ("initial", ["u - sin(pi*x) - 1/2*sin(3*pi*x)", "u_t"]),
            "walls": ("boundary", ["u"]),
        },
    ),
}

EXACT = {
    "kovasznay": {"u": KOV["us"], "v": KOV["vs"], "p": KOV["ps"]},
    "heat_ms": {"u": "sin(20*pi*x)*sin(pi*y)*exp(-(400/250000 + 1)*t)"},
    "beltrami": {f: BELTRAMI[f + "s"] for f in "uvwp"},
    "poisson5d": {"u": P5},
}


def sympy_namespace(coords, fields):
    """Names for SymPy's parser: coordinates, fields u(x, t), and every
    derivative up to order 2 written as u_x, u_xy, ..."""
    symbols = [sympy.Symbol(c, real=True) for c in coords]
    ns = dict(zip(coords, symbols))
    for f in fields:
        fn = sympy.Function(f)(*symbols)
        ns[f] = fn
        for a in coords:
            ns[f"{f}_{a}"] = sympy.Derivative(fn, ns[a])
            for b in coords:
                ns[f"{f}_{a}{b}"] = sympy.Derivative(fn, ns[a], ns[b])
    return ns


def parse(text, ns):
    return parse_expr(text, local_dict=ns, transformations=standard_transformations + (convert_xor, rationalize))


def assert_same(actual, expected, label):
    """Equal as expressions: expand to zero, else equal at random values of
    every atom (coordinates, fields and derivatives alike)."""
    if sympy.expand(actual - expected) == 0:
        return
    derivatives = {d: sympy.Dummy() for d in actual.atoms(sympy.Derivative) | expected.atoms(sympy.Derivative)}
    a, b = actual.xreplace(derivatives), expected.xreplace(derivatives)
    undef = sympy.core.function.AppliedUndef
    functions = {f: sympy.Dummy() for f in a.atoms(undef) | b.atoms(undef)}
    a, b = a.xreplace(functions), b.xreplace(functions)
    rng = random.Random(0)
    for _ in range(5):
        values = {s: rng.uniform(-1, 1) for s in (a.free_symbols | b.free_symbols)}
        va, vb = complex(a.evalf(subs=values)), complex(b.evalf(subs=values))
        assert abs(va - vb) <= 1e-12 * (1 + abs(va)), f"{label}: {actual} != {expected}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_lowers_to_the_paper_problem(name):
    coords, fields, conditions, groupings, points = SPECS[name]
    problem = load(ROOT / "specs" / f"{name}.pinn").ir
    assert tuple(c.name for c in problem.coordinates) == coords
    assert problem.fields == fields
    ns = sympy_namespace(coords, fields)
    assert {c.name for c in problem.conditions} == set(conditions)
    for cond in problem.conditions:
        kind, expected = conditions[cond.name]
        assert cond.kind == kind
        assert len(cond.residuals) == len(expected)
        for actual, text in zip(cond.residuals, expected):
            assert_same(actual, parse(text, ns), f"{name}.{cond.name}")
    assert {g.name: list(g.labels) for g in problem.groupings} == groupings
    assert problem.default_grouping == "two"
    assert dict(problem.sampling.points) == points
    if name in EXACT:
        assert isinstance(problem.reference, ir.ExactReference)
        for field, expr in problem.reference.solution:
            assert_same(expr, parse(EXACT[name][field], ns), f"{name} exact {field}")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_lowers_to_the_expected_problem(name):
    coords, fields, conditions = EXAMPLES[name]
    problem = load(ROOT / "examples" / name / f"{name}.pinn").ir
    assert tuple(c.name for c in problem.coordinates) == coords
    assert problem.fields == fields
    ns = sympy_namespace(coords, fields)
    ns.update({p: sympy.Symbol(p, real=True) for p, _ in problem.params})
    ns.update({f"{f}_obs": ir.observed(f) for f in fields})
    ns.update({f"n_{c.name}": ir.normal(c.name) for c in problem.space})
    assert {c.name for c in problem.conditions} == set(conditions)
    for cond in problem.conditions:
        kind, expected = conditions[cond.name]
        assert cond.kind == kind
        if isinstance(expected, dict):
            faces = [str(f) for f in cond.region.faces]
            assert faces == list(expected)
            per_face = zip(cond.face_residuals, expected.values())
        else:
            assert cond.face_residuals is None
            per_face = [(cond.residuals, expected)]
        for residuals, texts in per_face:
            assert len(residuals) == len(texts)
            for actual, text in zip(residuals, texts):
                assert_same(actual, parse(text, ns), f"{name}.{cond.name}")


def test_paper_groupings_pool_boundary_and_initial():
    problem = load(ROOT / "specs" / "burgers.pinn").ir
    two = problem.grouping("two")
    assert two.tasks[1].terms == ((1.0, ir.PoolLoss(("walls", "ic"))),)
    three = problem.grouping("three")
    assert [t.conditions for t in three.tasks] == [("burgers",), ("walls",), ("ic",)]


def test_specs_carry_the_paper_training_settings():
    rho = {"burgers": (0.1, 0.03), "schrodinger": (0.1, 0.03), "kovasznay": (0.7, 0.2),
           "heat_ms": (0.7, 0.2), "beltrami": (0.7, 0.2), "poisson5d": (0.5, 0.15)}
    epochs = {"burgers": 30000}
    for name, (rho_m, rho_v) in rho.items():
        t = load(ROOT / "specs" / f"{name}.pinn").ir.training
        assert t.align.name == "gua" and t.align.options["rho_m"] == rho_m and t.align.options["rho_v"] == rho_v
        assert t.options["epochs"] == epochs.get(name, 100000)
        assert t.model.options == {"width": 50, "depth": 5, "activation": "tanh", "init": "xavier"}
        assert t.optimizer.options == {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
        assert t.schedule.options == {"warmup": 100, "lr_min": 1e-4}
        assert t.surgery.name == "config"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.relative_to(ROOT).parts[0]}/{p.stem}")
def test_show_ir_matches_golden_file(path):
    text = format_ir(load(path).ir) + "\n"
    golden = GOLDEN / f"{path.relative_to(ROOT).parts[0]}__{path.stem}.txt"
    if os.environ.get("PINNSPEC_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden.name}: run with PINNSPEC_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text()
