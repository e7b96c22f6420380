"""Coefficient tables in compiled problems: interpolated on the host when points are drawn, read by the
kernels as a per-point input ("table"), at periodic partners too, through verify and the engine's unit.

The tables hold linear functions, so linear interpolation is exact and the oracle is the function."""

import numpy as np
import torch

import pinnspec
from pinnspec.compiler._verify import verify
from pinnspec.engine._compiled import set_sums

SPEC = """problem varcoef
space x in [0, 1], y in [0, 1]
field u
let a = table("kappa.csv", column = "a")
let ax = table("kappa.csv", column = "ax")
let ay = table("kappa.csv", column = "ay")
let f = (1 + x + 2*y)*(-2*pi^2*sin(pi*x)*sin(pi*y)) + pi*cos(pi*x)*sin(pi*y) + 2*pi*sin(pi*x)*cos(pi*y)
equation pde: a*lap(u) + ax*u_x + ay*UY = f
boundary walls on boundary: u = 0
exact u = sin(pi*x)*sin(pi*y)
points pde 300, walls 80
"""


def kappa(points):  # [N, 2] -> [N]: the table's function
    return 1 + points[:, 0] + 2 * points[:, 1]


def write_kappa(folder, n=6):
    axis = np.linspace(0, 1, n)
    x, y = (a.reshape(-1) for a in np.meshgrid(axis, axis, indexing="ij"))
    rows = "\n".join(f"{xi!r},{yi!r},{1 + xi + 2 * yi!r},1,2" for xi, yi in zip(x.tolist(), y.tolist()))
    (folder / "kappa.csv").write_text("x,y,a,ax,ay\n" + rows + "\n")


def compiled(folder, text):
    write_kappa(folder)
    return pinnspec.compile(pinnspec.loads(text, filename=str(folder / "varcoef.pinn")))


def test_the_table_is_a_per_point_kernel_input(tmp_path):
    problem = compiled(tmp_path, SPEC.replace("UY", "u_y"))
    kernel = problem.condition_kernels["pde"].kernels[0]
    assert {inp.name for inp in kernel.inputs if inp.kind == "table"} == {"a", "ax", "ay"}
    points = problem.sample(0, dtype=torch.float64)
    s = points.sets[problem.condition_kernels["pde"].set_index]
    columns = problem.condition_kernels["pde"].point_columns
    x = s.x.detach().numpy()
    np.testing.assert_allclose(s.observed[:, columns.index(("table", "a", False))].numpy(), kappa(x),
                               rtol=0, atol=1e-12)
    again = problem.sample(0, dtype=torch.float64).sets[problem.condition_kernels["pde"].set_index]
    assert torch.equal(s.observed, again.observed)


def test_verify_sees_the_interpolated_coefficient(tmp_path):
    problem = compiled(tmp_path, SPEC.replace("UY", "u_y"))
    checks = verify(problem)
    assert all(c.passed for c in checks), [(c.name, c.relative) for c in checks]
    assert checks[0].rms < 1e-12


def test_verify_names_a_planted_error(tmp_path):
    problem = compiled(tmp_path, SPEC.replace("UY", "u_x"))  # ay*u_x for ay*u_y
    assert not {c.name: c.passed for c in verify(problem)}["pde"]


def test_the_engine_unit_reads_the_table_from_the_points(tmp_path):
    """What `compile = on` traces: the per-set unit gets the points' host columns as they are."""
    problem = compiled(tmp_path, SPEC.replace("UY", "u_y"))
    index = problem.condition_kernels["pde"].set_index
    s = problem.sample(0, dtype=torch.float64).sets[index]
    sums = set_sums(problem, index, problem.exact, s.x, s.partner, s.observed, s.face_slices, s.normals,
                    {})
    assert float(sums[0]) < 1e-20


PERIODIC = """problem ring
space x in [-1, 1]
time t in [0, 1]
field u
let a = table("a.csv")
equation pde: u_t + u_x = 0
periodic per on x: a*u_x
exact u = sin(pi*(x - t))
points per 50
"""


def test_periodic_pairs_read_the_table_at_both_ends(tmp_path):
    (tmp_path / "a.csv").write_text("x,a\n-1,1\n0,2\n1,3\n")  # a = 2 + x
    problem = pinnspec.compile(pinnspec.loads(PERIODIC, filename=str(tmp_path / "ring.pinn")))
    points = problem.sample(0, dtype=torch.float64)
    residuals = problem.residuals(problem.exact, points)
    s = points.sets[problem.condition_kernels["per"].set_index]
    t = s.x[:, 1].detach()
    u_x = np.pi * torch.cos(np.pi * (-1 - t))  # the same at x = -1 and x = 1
    expected = (1.0 - 3.0) * u_x  # a(-1) u_x - a(1) u_x
    torch.testing.assert_close(residuals["per"][:, 0], expected, rtol=0, atol=1e-12)
