"""The compiled residuals against an independent path, and their gradients.

Path A (pinnspec): derivative plan (nested autograd) + generated kernels.
Path B (here): the same model written as a SymPy expression, the residual
differentiated symbolically with sympy.diff and evaluated by lambdify(numpy).
"""

from pathlib import Path

import numpy as np
import pytest
import sympy
import torch

import pinnspec
from pinnspec import ir

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(ROOT.glob("specs/*.pinn")) + sorted(ROOT.glob("examples/*/*.pinn"))


class RandomFeatures(torch.nn.Module):
    """u_f(X) = sum_k c_fk sin(w_fk . X + b_fk): smooth, every derivative non-zero."""

    def __init__(self, d, n_fields, k=3, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = torch.nn.Parameter(torch.randn(n_fields, k, d, generator=g, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.randn(n_fields, k, generator=g, dtype=torch.float64))
        self.c = torch.nn.Parameter(torch.randn(n_fields, k, generator=g, dtype=torch.float64))

    def forward(self, x):  # [N, d] -> [N, F]
        phase = torch.einsum("fkd,nd->nfk", self.w, x) + self.b
        return (self.c * torch.sin(phase)).sum(-1)

    def sympy_fields(self, symbols):
        w, b, c = (t.detach().numpy() for t in (self.w, self.b, self.c))
        return [sum(float(c[f, k]) * sympy.sin(sum(float(w[f, k, j]) * s for j, s in enumerate(symbols)) + float(b[f, k]))
                    for k in range(w.shape[1])) for f in range(w.shape[0])]


def sympy_residual(problem_ir, exprs, model, params):
    """Residual components with the fields replaced by the model: numpy callables."""
    symbols = problem_ir.symbols
    fields = model.sympy_fields(symbols)
    replace = {problem_ir.field_function(f): fe for f, fe in zip(problem_ir.fields, fields)}
    observed = [ir.observed(f) for f in problem_ir.fields]
    normals = [ir.normal(c.name) for c in problem_ir.space]  # a domain's boundary: the outward normal per point
    tables = [ir.table_value(t.name) for t in problem_ir.tables]  # coefficient tables: per-point inputs
    out = []
    for e in exprs:
        e = e.subs(replace).doit().subs({sympy.Symbol(n, real=True): v for n, v in params.items()})
        out.append(sympy.lambdify(list(symbols) + observed + normals + tables, e, "numpy"))
    return out


def table_columns(problem_ir, x):
    """Every coefficient table at the points x [n, d], interpolated here with scipy's griddata (linear on a
    Delaunay triangulation, nearest where that gives nothing): [n, tables]."""
    from scipy.interpolate import griddata

    columns = []
    for t in problem_ir.tables:
        path = Path(problem_ir.source_dir) / t.path
        rows = np.genfromtxt(path, delimiter=",", names=True)
        nodes = np.stack([rows[c] for c in t.coordinate_columns], axis=1)  # [rows, k]
        at = x[:, [problem_ir.coordinates.index(next(c for c in problem_ir.coordinates if c.name == n))
                   for n in t.coordinates]]  # [n, k]
        linear = griddata(nodes, rows[t.value_column], at, method="linear")
        nearest = griddata(nodes, rows[t.value_column], at, method="nearest")
        columns.append(np.where(np.isnan(linear), nearest, linear))
    return np.stack(columns, axis=1) if columns else np.zeros((len(x), 0))


def evaluate_b(fns, x, observed, normals, tables):
    """fns take (*coordinates, *observed values of every field, *normal components, *table values)."""
    args = [x[:, i] for i in range(x.shape[1])] + [observed[:, i] for i in range(observed.shape[1])]
    args += [normals[:, i] for i in range(normals.shape[1])] + [tables[:, i] for i in range(tables.shape[1])]
    return np.stack([np.broadcast_to(fn(*args), (len(x),)) for fn in fns], axis=1)


def observed_columns(problem_ir, cond, s, n):
    """The observed values in field order (zeros where a field is not observed)."""
    full = np.zeros((n, len(problem_ir.fields)))
    if isinstance(cond.region, ir.DataPoints):
        for j, f in enumerate(cond.region.fields):
            full[:, problem_ir.fields.index(f)] = s.observed[:, j].numpy()
    return full


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_autograd_residuals_equal_symbolic_residuals(path):
    problem = pinnspec.compile(path)
    p = problem.ir
    model = RandomFeatures(len(p.coordinates), len(p.fields))
    params = {name: value + 0.25 for name, value in p.params}
    param_t = {name: torch.tensor(v, dtype=torch.float64) for name, v in params.items()}
    points = problem.sample(3, seed=1, dtype=torch.float64)
    actual = problem.residuals(model, points, param_t)
    for cond in p.conditions:
        s = points.sets[problem.point_plan.set_index(cond.name)]
        x = s.x.detach().numpy()
        obs = observed_columns(p, cond, s, len(x))
        normals = np.zeros((len(x), len(p.space))) if s.normals is None else s.normals.numpy()
        tables = table_columns(p, x)
        if cond.face_residuals:
            expected = np.concatenate([evaluate_b(sympy_residual(p, res, model, params), x[rows], obs[rows],
                                                  normals[rows], tables[rows])
                                       for res, rows in zip(cond.face_residuals, s.face_slices)])
        else:
            fns = sympy_residual(p, cond.residuals, model, params)
            expected = evaluate_b(fns, x, obs, normals, tables)
            if isinstance(cond.region, ir.PeriodicPairs):
                partner = s.partner.detach().numpy()
                expected = expected - evaluate_b(fns, partner, obs, normals, table_columns(p, partner))
        got = actual[cond.name].detach().numpy()
        assert got.shape == expected.shape
        # an enforced condition's residual is zero up to the rounding of O(1) values (1e-16): the floor 1e-6 makes
        # that 1e-15 where SymPy's float64 evaluation of the same transform comes out exactly 0
        scale = np.abs(expected).max() + 1e-6
        assert np.abs(got - expected).max() <= 1e-9 * scale, f"{path.stem}.{cond.name}"


@pytest.mark.parametrize("path", FILES + sorted(ROOT.glob("benchmarks/pinnacle/cases/*.pinn")), ids=lambda p: p.stem)
def test_one_pass_over_every_set_gives_each_sets_residuals(path):
    """`all_set_residuals` (the network and its derivatives evaluated once, on every set's points and periodic
    partners together, as a stacked step takes them) equals `set_residuals` set by set: per-face kernels,
    normals, tables, observed data and periodic partners read their own rows of the one pass."""
    from pinnspec.models import mlp

    problem = pinnspec.compile(path)
    model = mlp(width=8, depth=3).build(problem.dim, len(problem.fields), generator=torch.Generator().manual_seed(0),
                                        dtype=torch.float64)
    params = {name: value + 0.25 for name, value in problem.init_params(dtype=torch.float64).items()}
    points = problem.sample(0, seed=1, dtype=torch.float64)
    together = problem.all_set_residuals(model, [points.sets[index] for index in problem.by_set], params,
                                         engine="forward")
    one_by_one = problem.residuals(model, points, params, engine="forward")
    assert together.keys() == one_by_one.keys() == problem.condition_kernels.keys()
    for name, residuals in one_by_one.items():
        torch.testing.assert_close(together[name], residuals, rtol=1e-12, atol=1e-12, msg=name)
