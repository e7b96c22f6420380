"""Compiled problems: losses, derivative plan, gradients, verify, reference, determinism."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import pinnspec
from pinnspec.cli import main
from pinnspec.compiler._verify import verify
from pinnspec.models import mlp

ROOT = Path(__file__).resolve().parents[2]
EXACT_SPECS = ["kovasznay", "heat_ms", "beltrami", "poisson5d"]
EXACT_EXAMPLES = ["poisson2d_mixed", "advection_periodic", "oscillator", "helmholtz3d", "wave1d", "annulus", "lshape",
                  "coefficient_table"]


def small_model(problem, dtype=torch.float64, seed=0):
    return mlp(width=8, depth=2).build(problem.dim, len(problem.fields), generator=torch.Generator().manual_seed(seed),
                                       dtype=dtype)


def test_losses_follow_the_language_meaning():
    problem = pinnspec.compile(ROOT / "specs" / "burgers.pinn")
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    res = problem.residuals(model, points)
    two = problem.losses(model, points, grouping="two")
    three = problem.losses(model, points, grouping="three")
    sq = {k: (v ** 2).sum(1) for k, v in res.items()}
    assert torch.allclose(two.tasks[0], sq["burgers"].mean())
    # the pool is ONE mean over the union of the points, not a sum of means
    pooled = torch.cat([sq["walls"], sq["ic"]]).mean()
    assert torch.allclose(two.tasks[1], pooled)
    assert not torch.allclose(two.tasks[1], sq["walls"].mean() + sq["ic"].mean())
    assert torch.allclose(three.tasks, torch.stack([sq["burgers"].mean(), sq["walls"].mean(), sq["ic"].mean()]))
    assert set(two.conditions) == {"burgers", "walls", "ic"}
    assert [len(s.x) for s in points.sets] == [10000, 250, 250]


def test_weights_and_summed_entries():
    problem = pinnspec.compile(ROOT / "examples" / "poisson2d_mixed" / "poisson2d_mixed.pinn")
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    c = problem.losses(model, points, grouping="two").conditions
    two = problem.losses(model, points, grouping="two").tasks
    split = problem.losses(model, points, grouping="split").tasks
    assert torch.allclose(two[1], 2 * c["dir"] + c["neu"] + c["robin"])
    assert torch.allclose(split[1], c["dir"] + c["neu"])


def test_multi_component_condition_sums_component_means():
    problem = pinnspec.compile(ROOT / "specs" / "kovasznay.pinn")
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    r = problem.residuals(model, points)["bc"]
    assert r.shape == (1000, 3)
    c = problem.losses(model, points).conditions["bc"]
    assert torch.allclose(c, sum((r[:, j] ** 2).mean() for j in range(3)))


def test_equations_of_a_system_share_one_point_set():
    problem = pinnspec.compile(ROOT / "specs" / "kovasznay.pinn")
    assert [s.conditions for s in problem.point_plan.sets] == [("momx", "momy", "cont"), ("bc",)]


@pytest.mark.parametrize("spec,calls", [("burgers", 2), ("schrodinger", 4), ("poisson5d", 6), ("beltrami", 13)])
def test_each_derivative_is_computed_once(spec, calls, monkeypatch):
    problem = pinnspec.compile(ROOT / "specs" / f"{spec}.pinn")
    problem.engine = "autograd"  # the nested-autograd plan (the forward engine makes no grad calls)
    counted = []
    real = torch.autograd.grad

    def counting(*args, **kwargs):
        counted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", counting)
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    problem.losses(model, points)
    periodic = sum(2 * problem.plans[s.index].n_grad_calls for s in problem.point_plan.sets
                   if type(s.region).__name__ == "PeriodicPairs")
    interior = problem.plans[0].n_grad_calls
    assert interior == calls
    assert len(counted) == sum(p.n_grad_calls for p in problem.plans.values()) + periodic - sum(
        problem.plans[s.index].n_grad_calls for s in problem.point_plan.sets
        if type(s.region).__name__ == "PeriodicPairs")


def test_gradcheck_of_a_residual_loss_wrt_weights():
    problem = pinnspec.compile(ROOT / "specs" / "burgers.pinn")
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    points.sets[0].x = points.sets[0].x[:20].detach().requires_grad_(True)
    names = [n for n, _ in model.named_parameters()]
    base = [p.detach().clone() for p in model.parameters()]

    def loss_of(*weights):
        state = dict(zip(names, weights))
        out = torch.func.functional_call(model, state, (points.sets[0].x,))
        values = problem.plans[0].evaluate(out, points.sets[0].x)
        k = problem.condition_kernels["burgers"].kernels[0]
        args = [values[i.key] if i.kind == "value" else points.sets[0].x[:, i.key] for i in k.inputs]
        (r,) = k.fn(*args)
        return (r ** 2).mean()

    inputs = tuple(b.requires_grad_(True) for b in base)
    assert torch.autograd.gradcheck(loss_of, inputs, eps=1e-6, atol=1e-6)


def test_param_gradients_flow():
    problem = pinnspec.compile(ROOT / "examples" / "inverse_heat" / "inverse_heat.pinn")
    model = small_model(problem, dtype=torch.float32)
    params = problem.init_params()
    losses = problem.losses(model, problem.sample(0), params)
    losses.tasks.sum().backward()
    assert params["k"].grad is not None and params["k"].grad.abs() > 0


#: the PDE stated again on the walls' points (one set: same part, same count), pooled by one grouping only
RESTATED = """problem restated
space x in [0, 1]
time  t in [0, 1]
field u
let residual = u_t - 0.1*u_xx
equation pde: residual = 0
initial  ic: u = sin(pi*x)
boundary walls on x = 0, x = 1: u = 0
boundary pdewalls on x = 0, x = 1: residual = 0
grouping pooled   = [pool(pde, pdewalls), walls, ic]
grouping interior = [pde, walls, ic]
points pde 64, walls 16, ic 16, pdewalls 16
model mlp(width = 8, depth = 2)
train epochs = 3, seed = 0, dtype = float64
"""


@pytest.mark.parametrize("stack", ["off", "on"])
def test_a_grouping_compiles_only_the_conditions_its_tasks_use(stack):
    from pinnspec.compiler import CompiledProblem
    from pinnspec.engine._compiled import FusedGradients

    spec = pinnspec.lang.loads(RESTATED, filename="restated.pinn")
    every, interior = CompiledProblem(spec), CompiledProblem(spec, grouping="interior")
    every.stack = interior.stack = stack
    assert every.left_out == () and interior.left_out == ("pdewalls",)
    assert list(interior.condition_kernels) == ["pde", "ic", "walls"]
    walls = interior.condition_kernels["walls"].set_index
    assert walls == every.condition_kernels["pdewalls"].set_index  # the walls' points carry no derivative rows
    assert interior.plans[walls].needs == ((0, ()),) and len(every.plans[walls].needs) > 1
    model = small_model(every)
    points, same = every.sample(0, dtype=torch.float64), interior.sample(0, dtype=torch.float64)
    assert all(torch.equal(a.x, b.x) for a, b in zip(points.sets, same.sets))  # the points do not depend on it
    for engine in ("autograd", "forward"):
        a = every.losses(model, points, grouping="interior", engine=engine)
        b = interior.losses(model, same, grouping="interior", engine=engine)
        assert torch.allclose(a.tasks, b.tasks, rtol=1e-13, atol=0) and set(b.conditions) == {"pde", "ic", "walls"}
    theta = torch.cat([t.detach().reshape(-1) for t in model.parameters()])  # [p]
    tasks, _, G = FusedGradients(every, model, {}, "interior")(theta, *FusedGradients(
        every, model, {}, "interior").inputs(points))
    fused = FusedGradients(interior, model, {}, "interior")
    tasks_b, conditions_b, G_b = fused(theta, *fused.inputs(same))  # [m], [C], [m, p]
    assert torch.allclose(tasks, tasks_b, rtol=1e-13, atol=0) and torch.allclose(G, G_b, rtol=1e-12, atol=1e-15)
    assert conditions_b.shape == (3,)
    with pytest.raises(ValueError, match="grouping 'pooled' uses pdewalls, which this problem left out"):
        interior.losses(model, same, grouping="pooled")


def test_a_left_out_condition_moves_no_initialisation_point_and_verify_still_checks_it(tmp_path, capsys):
    from pinnspec.compiler import CompiledProblem

    text = (RESTATED.replace("initial  ic:", "initial  ict: u_t = -0.1*pi^2*sin(pi*x)\ninitial  ic:")
            .replace("model mlp", "exact u = sin(pi*x)*exp(-0.1*pi^2*t)\nmodel mlp"))
    spec = pinnspec.lang.loads(text, filename="restated.pinn")
    every, interior = CompiledProblem(spec), CompiledProblem(spec, grouping="interior")
    assert interior.left_out == ("ict", "pdewalls")
    # the physics-informed initialisation fits ic on points drawn after ict's: the same with ict left out
    fitted, same = every.initial_values(32, seed=3), interior.initial_values(32, seed=3)
    assert list(fitted) == list(same) == [0]
    assert all(torch.equal(a, b) for a, b in zip(fitted[0], same[0]))
    checks = verify(interior)
    assert {c.name for c in checks} == {"pde", "ict", "ic", "walls", "pdewalls"} and all(c.passed for c in checks)
    path = tmp_path / "restated.pinn"
    path.write_text(text)
    assert main(["show", str(path), "--stage", "plan", "--set", "grouping=interior"]) == 0
    out = capsys.readouterr().out
    assert "left out (in no task of the grouping): ict, pdewalls" in out and "-> walls\n  needs: u\n" in out


def test_forward_and_autograd_engines_give_the_same_losses():
    problem = pinnspec.compile(ROOT / "specs" / "schrodinger.pinn")
    model = small_model(problem)
    points = problem.sample(0, dtype=torch.float64)
    problem.engine = "autograd"
    a = problem.losses(model, points).tasks
    problem.engine = "forward"
    f = problem.losses(model, points).tasks
    assert torch.allclose(a, f, rtol=1e-10)


def test_forward_engine_falls_back_for_other_models(capsys):
    problem = pinnspec.compile(ROOT / "specs" / "burgers.pinn")
    problem.engine = "forward"
    seq = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    points = problem.sample(0, dtype=torch.float64)
    problem.losses(seq, points)
    problem.losses(seq, points)
    assert capsys.readouterr().err.count("using nested autograd") == 1


def test_sampling_is_pure_in_seed_and_epoch():
    problem = pinnspec.compile(ROOT / "specs" / "burgers.pinn")
    a, b, c = problem.sample(5), problem.sample(5), problem.sample(6)
    assert torch.equal(a.sets[0].x, b.sets[0].x)
    assert not torch.equal(a.sets[0].x, c.sets[0].x)
    assert not torch.equal(a.sets[0].x, problem.sample(5, seed=1).sets[0].x)


@pytest.mark.parametrize("name", EXACT_SPECS)
def test_verify_passes_on_specs_with_an_exact_solution(name, capsys):
    assert main(["verify", str(ROOT / "specs" / f"{name}.pinn")]) == 0
    assert "FAIL" not in capsys.readouterr().out


@pytest.mark.parametrize("name", EXACT_EXAMPLES)
def test_verify_passes_on_examples(name):
    checks = verify(pinnspec.compile(ROOT / "examples" / name / f"{name}.pinn"))
    assert all(c.passed and c.judged for c in checks), [(c.name, c.relative) for c in checks]


def test_verify_on_a_tabulated_source_stops_at_the_interpolations_error():
    # examples/table_source: s = sin(16 pi x) on 801 nodes, interpolated linearly: the residual of the exact solution
    # is (256 pi^2 + pi^2) (s_h - s) sin(pi y), and |s_h - s| <= h^2 / 8 max|s''| = h^2 (16 pi)^2 / 8 (h = 1/800),
    # so its rms over the equation's scale lies under that bound and not far below it
    checks = {c.name: c for c in verify(pinnspec.compile(ROOT / "examples" / "table_source" / "table_source.pinn"),
                                        rtol=1e-3)}
    bound = (1 / 800) ** 2 * (16 * math.pi) ** 2 / 8
    assert checks["walls"].passed and checks["pde"].passed
    assert bound / 10 < checks["pde"].relative < bound


def test_verify_inverse_problem_needs_the_param_value():
    problem = pinnspec.compile(ROOT / "examples" / "inverse_heat" / "inverse_heat.pinn")
    unjudged = {c.name: c for c in verify(problem)}
    assert not unjudged["heat"].judged and "--param k=" in unjudged["heat"].note
    judged = verify(problem, params={"k": 0.1})
    assert all(c.passed and c.judged for c in judged)
    assert not all(c.passed for c in verify(problem, params={"k": 0.2}))


PLANTED = [
    # spec, text replaced, replacement, the condition that must be named
    ("kovasznay", "p_x - nu*(u_xx", "p_x + nu*(u_xx", "momx"),
    ("kovasznay", "u_x + v_y = 0", "u_x - v_y = 0", "cont"),
    ("heat_ms", "u_t - cx*u_xx - cy*u_yy", "u_t - cx*u_xx - 1.001*cy*u_yy", "heat"),
    ("beltrami", "w_t + u*w_x", "w_t - u*w_x", "momz"),
    ("beltrami", "initial  ic: u = ustar", "initial  ic: u = -ustar", "ic"),
    ("poisson5d", "lap(u) + f = 0", "lap(u) - f = 0", "poisson"),
    ("poisson5d", "boundary bc on boundary: u = ustar", "boundary bc on boundary: u = 1.01*ustar", "bc"),
]


@pytest.mark.parametrize("spec,old,new,condition", PLANTED)
def test_verify_names_a_planted_error(spec, old, new, condition, tmp_path, capsys):
    lines = (ROOT / "specs" / f"{spec}.pinn").read_text().splitlines()
    # plant the error in the statement, not in a comment that quotes it
    (i,) = [i for i, line in enumerate(lines) if old in line.split("#")[0]][:1]
    lines[i] = lines[i].replace(old, new)
    bad = tmp_path / f"{spec}.pinn"
    bad.write_text("\n".join(lines) + "\n")
    assert main(["verify", str(bad)]) == 1
    captured = capsys.readouterr()
    assert f"'{condition}'" in captured.err
    failed = [line.split()[0] for line in captured.out.splitlines() if line.endswith("FAIL")]
    assert failed == [condition]


def test_verify_without_exact_is_a_user_error(capsys):
    assert main(["verify", str(ROOT / "specs" / "burgers.pinn")]) == 1
    assert "has no 'exact' solution" in capsys.readouterr().err


def test_show_plan_and_kernel(capsys):
    burgers = str(ROOT / "specs" / "burgers.pinn")
    assert main(["show", burgers, "--stage", "plan"]) == 0
    out = capsys.readouterr().out
    assert "grad(u) -> u_x, u_t" in out and "needs: u, u_x, (u_t - 0.0031830989*u_xx)" in out
    assert main(["show", burgers, "--stage", "kernel"]) == 0
    out = capsys.readouterr().out
    # u_t and u_xx reach the residual only through u_t - nu u_xx: the kernel reads it as one value
    assert "def residual_burgers(u, u_x, Lu):\n    # Lu = u_t - 0.0031830988618379067*u_xx\n" in out
    assert "return (Lu + u*u_x,)" in out


def test_reference_of_each_kind():
    burgers = pinnspec.compile(ROOT / "specs" / "burgers.pinn")
    test = burgers.test_points()
    assert test.shape == (25600, 2) and np.isclose(test[:, 1].max(), 0.99)
    values = burgers.reference(torch.tensor(test))
    assert values.shape == (25600, 1) and torch.allclose(values[:256, 0], -torch.sin(np.pi * torch.tensor(test[:256, 0])))
    nls = pinnspec.compile(ROOT / "specs" / "schrodinger.pinn")
    assert nls.test_points().shape == (256 * 201, 2)
    ic = nls.reference(torch.tensor([[0.5, 0.0]], dtype=torch.float64))
    assert torch.allclose(ic, torch.tensor([[2 / np.cosh(0.5), 0.0]], dtype=torch.float64), atol=1e-6)
    kov = pinnspec.compile(ROOT / "specs" / "kovasznay.pinn")
    x = torch.tensor(kov.validation_points())
    lam = 20 - np.sqrt(400 + 4 * np.pi ** 2)
    u = 1 - torch.exp(lam * x[:, 0]) * torch.cos(2 * np.pi * x[:, 1])
    assert torch.allclose(kov.reference(x)[:, 0], u)
    assert kov.test_points().shape == (10000, 2)
    p5 = pinnspec.compile(ROOT / "specs" / "poisson5d.pinn")
    assert p5.test_points().shape == (8 ** 5, 5)


def test_file_reference(tmp_path):
    xs = np.linspace(0, 1, 11)
    np.savez(tmp_path / "ref.npz", x=xs, u=np.sin(xs))
    (tmp_path / "s.pinn").write_text('problem s\nspace x in [0, 1]\nfield u\nequation pde: u_xx + u = 0\n'
                                     'reference "ref.npz"\n')
    problem = pinnspec.compile(tmp_path / "s.pinn")
    test = problem.test_points()
    assert test.shape == (11, 1)
    assert torch.allclose(problem.reference(torch.tensor(test))[:, 0], torch.tensor(np.sin(xs)))


def test_plugin_function_and_reference_through_entry_points(tmp_path):
    """A tiny third-party package registers an expression function (with its
    SymPy derivative and torch implementation) and a reference generator."""
    site = tmp_path / "site"
    pkg = site / "myplugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import numpy as np, sympy, torch\n"
        "from pinnspec.registry import FUNCTIONS, REFERENCES\n"
        "class cube(sympy.Function):\n"
        "    nargs = 1\n"
        "    torch_impl = staticmethod(lambda x: x**3)\n"
        "    def fdiff(self, argindex=1):\n"
        "        return 3*self.args[0]**2\n"
        "class SinRef:\n"
        "    fields = ('u',)\n"
        "    coordinates = ('x',)\n"
        "    def __init__(self, k=1.0): self.k = k\n"
        "    def __call__(self, pts): return np.sin(self.k*pts[:, :1])\n"
        "    def grid(self): return np.linspace(0, 1, 5)[:, None]\n"
        "def register():\n"
        "    FUNCTIONS.add('cube', cube, replace=True)\n"
        "    REFERENCES.add('sinref', lambda k=1.0: SinRef(k), replace=True)\n")
    dist = site / "myplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pinnspec]\nmyplugin = myplugin:register\n")
    spec = tmp_path / "plug.pinn"
    spec.write_text("problem plug\nspace x in [0, 1]\nfield u\nequation pde: d(cube(u), x) = x\n"
                    "reference sinref(k = 2)\n")
    code = ("import torch, pinnspec\n"
            f"p = pinnspec.compile({str(spec)!r})\n"
            "print(p.kernel_source)\n"
            "print(p.reference(torch.tensor([[0.25]])).item())\n"
            "print(p.test_points().shape)\n")
    env = {"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "fn_cube" not in out.stdout  # d(cube(u), x) became 3*u**2*u_x through the SymPy derivative
    assert "3*u**2*u_x - x" in out.stdout
    assert "0.4794255" in out.stdout  # sin(2 * 0.25)
    assert "(5, 1)" in out.stdout
    # the function's torch implementation is used when the residual keeps it
    spec.write_text("problem plug\nspace x in [0, 1]\nfield u\nequation pde: cube(u) = x\n")
    out = subprocess.run([sys.executable, "-c", code.replace("print(p.reference(torch.tensor([[0.25]])).item())\n", "")
                          .replace("print(p.test_points().shape)\n", "")
                          + "m = lambda x: x\nprint(p.residuals(m, p.sample(0))['pde'][:2])\n"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "fn_cube(u)" in out.stdout


def test_min_and_max_compile_to_elementwise_torch():
    # SymPy's Min and Max are not Functions to its printer: the kernels must call ops.minimum / ops.maximum
    text = ("problem clamp\nspace x in [-2, 2]\nfield u\nequation pde: u = min(max(x, -1), 1, 0.5 + x^2)\n"
            "exact u = min(max(x, -1), 1, 0.5 + x^2)\n")
    problem = pinnspec.compile(pinnspec.lang.loads(text, filename="clamp.pinn"))
    x = torch.linspace(-2, 2, 41, dtype=torch.float64)[:, None]
    expected = np.minimum(np.minimum(np.clip(x[:, 0].numpy(), -1, 1), 1), 0.5 + x[:, 0].numpy() ** 2)
    np.testing.assert_array_equal(problem.exact(x)[:, 0].numpy(), expected)
    assert "ops.minimum(" in problem.kernel_source and "ops.maximum(" in problem.kernel_source
    assert all(c.passed for c in verify(problem))
