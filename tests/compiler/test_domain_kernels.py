"""Residual kernels on a domain built from shapes: normals as kernel inputs.

Oracle: the annulus 1/4 < r < 1 with the exact solution u = log(r); on the
inner rim the domain's outward normal is -x/r, so dn(u) = -1/r there.  The
exact solution through the training path must give rounding-level residuals;
a wrong sign, or a constant shift, must give the residual worked out by hand.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

import pinnspec
from pinnspec.compiler import CompiledProblem
from pinnspec.compiler._verify import verify
from pinnspec.engine import build_model
from pinnspec.lang import loads

ANNULUS = Path(__file__).resolve().parents[2] / "examples" / "annulus" / "annulus.pinn"
LSHAPE = Path(__file__).resolve().parents[2] / "examples" / "lshape" / "lshape.pinn"


def _compiled(text=None):
    text = ANNULUS.read_text() if text is None else text
    return pinnspec.compile(loads(text, filename=str(ANNULUS)))


def _passes_verify(text: str, condition: str):
    """Compile ``text``, check that every condition passes verify, and return the point set of ``condition``."""
    problem = pinnspec.compile(loads(text, filename="spec.pinn"))
    checks = verify(problem)
    assert all(c.passed for c in checks), checks
    return problem.point_plan.sample(0, 0)[problem.condition_kernels[condition].set_index]


def _fails_verify(text: str, condition: str) -> bool:
    return not next(c for c in verify(pinnspec.compile(loads(text, filename="spec.pinn"))) if c.name == condition).passed


def test_exact_solution_passes_verify_with_normals():
    checks = {c.name: c for c in verify(_compiled(), seed=1)}
    assert set(checks) == {"laplace", "rim", "hole"}
    for check in checks.values():
        assert check.passed and check.relative < 1e-12, check


def test_a_wrong_sign_of_the_normal_derivative_fails_verify():
    text = ANNULUS.read_text().replace("dn(u) = -1/sqrt(x^2 + y^2)", "dn(u) = 1/sqrt(x^2 + y^2)")
    hole = next(c for c in verify(_compiled(text)) if c.name == "hole")
    # the residual is dn(u*) - 1/r = -2/r = -8 at every point of the rim r = 1/4
    assert not hole.passed
    assert hole.rms == pytest.approx(8.0, rel=1e-12) and hole.max_abs == pytest.approx(8.0, rel=1e-12)


def test_dirichlet_on_both_rims_passes_verify():
    text = ANNULUS.read_text().replace("boundary hole on inner: dn(u) = -1/sqrt(x^2 + y^2)",
                                       "boundary hole on inner: u = log(1/4)")
    assert all(c.passed for c in verify(_compiled(text)))


def test_the_neumann_kernel_reads_the_normal_components():
    problem = _compiled()
    (kernel,) = problem.condition_kernels["hole"].kernels
    assert [(k.kind, k.key, k.name) for k in kernel.inputs if k.kind == "normal"] == [("normal", 0, "n_x"),
                                                                                      ("normal", 1, "n_y")]
    (rim,) = problem.condition_kernels["rim"].kernels
    assert not any(k.kind == "normal" for k in rim.inputs)


def test_losses_of_a_shifted_solution_are_the_shift_squared():
    problem = _compiled()
    points = problem.sample(0, dtype=torch.float64)

    def shifted(x):
        return problem.exact(x) + 0.5

    losses = problem.losses(shifted, points).conditions
    assert float(losses["rim"].detach()) == pytest.approx(0.25, rel=1e-12)  # u - 0 = 0.5 on r = 1
    assert float(losses["hole"].detach()) < 1e-24 and float(losses["laplace"].detach()) < 1e-20  # a constant has no derivatives


def test_points_without_normals_are_refused_with_a_message():
    problem = _compiled()
    points = problem.sample(0, dtype=torch.float64)
    index = problem.condition_kernels["hole"].set_index
    points.sets[index].normals = None
    with pytest.raises(ValueError, match="reads the outward normal"):
        problem.residuals(problem.exact, points)


def test_test_and_validation_points_lie_inside_the_domain():
    problem = _compiled()
    domain = problem.ir.domain
    for pts in (problem.test_points(), problem.validation_points()):
        assert len(pts) > 0 and np.all(domain.shape.inside(pts))
    radius = np.linalg.norm(problem.test_points(), axis=1)
    assert radius.min() > 0.25 and radius.max() < 1.0
    grid = _compiled(ANNULUS.read_text().replace("test 2000", "test grid 41, 41")).test_points()
    assert np.all(domain.shape.inside(grid)) and 0 < len(grid) < 41 * 41


def test_lshape_exact_solution_is_the_corner_singularity_and_passes_verify():
    problem = pinnspec.compile(LSHAPE)
    x = problem.test_points()
    assert np.all(~((x[:, 0] >= 0) & (x[:, 1] <= 0)))  # nothing in the removed quadrant
    # r^(2/3) sin(2 theta / 3) with theta in [0, 2 pi) by numpy's atan2 (the spec measures the angle from the bisector)
    theta = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi)
    expected = np.hypot(x[:, 0], x[:, 1]) ** (2 / 3) * np.sin(2 * theta / 3)
    got = problem.exact(torch.as_tensor(x, dtype=torch.float64))[:, 0].numpy()
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert all(c.passed for c in verify(problem))
    # the walls enforced (as the recipe does): the extension's Laplacian is finite in float32 next to the
    # bisector, where an angle written as arccos((y - x)/(sqrt(2) r)) has an unbounded derivative
    spec = loads(LSHAPE.read_text() + "enforce edges\n", filename=str(LSHAPE))
    enforced = CompiledProblem(spec)
    model = build_model(spec, enforced, device=torch.device("cpu"), dtype=torch.float32)
    near = np.linspace(-0.99, -0.01, 99)[:, None] * np.array([[1.0, -1.0]])  # [99, 2]: on the bisector
    near = np.concatenate([near, near + [[0.0, 3e-4]], near - [[3e-4, 0.0]]])  # [297, 2]: and beside it
    magnitudes = enforced.residual_magnitudes(enforced.condition_kernels["laplace"].set_index, near, model)
    assert np.isfinite(magnitudes).all()


def test_neumann_on_a_sphere_in_three_dimensions_passes_verify():
    # u = 1/r is harmonic in 3-D; on the sphere r = 1/2 the outward normal points into the hole, -x/r,
    # so dn(u) = -du/dr = 1/r^2 = 4
    text = ("problem shell\nspace x in [-1, 1], y in [-1, 1], z in [-1, 1]\n"
            "shape core = ball(center = (0, 0, 0), radius = 0.5)\ndomain shell = box - core\nfield u\n"
            "equation laplace: lap(u) = 0\nboundary faces on box: u = 1/sqrt(x^2 + y^2 + z^2)\n"
            "boundary rim on core: dn(u) = 4\nexact u = 1/sqrt(x^2 + y^2 + z^2)\n")
    rim = _passes_verify(text, "rim")
    np.testing.assert_allclose(np.linalg.norm(rim.x, axis=1), 0.5, atol=1e-12)
    assert _fails_verify(text.replace("dn(u) = 4", "dn(u) = -4"), "rim")


def test_neumann_at_the_ends_of_a_gap_in_one_dimension_passes_verify():
    # u = x^2 on [0, 2] minus (1/2, 1): the outward normal is +1 at x = 1/2 and -1 at x = 1, so
    # dn(u) = n u_x is 1 at x = 1/2 and -2 at x = 1, both the value of 4 - 6x there
    text = ("problem rod\nspace x in [0, 2]\nshape gap = interval(lo = 0.5, hi = 1)\ndomain rod = box - gap\n"
            "field u\nequation pde: u_xx = 2\nboundary ends on gap: dn(u) = 4 - 6*x\n"
            "boundary outer on box: u = x^2\nexact u = x^2\n")
    ends = _passes_verify(text, "ends")
    assert set(np.round(ends.x[:, 0], 12)) == {0.5, 1.0}
    assert np.array_equal(np.sign(ends.normals[:, 0]), np.where(ends.x[:, 0] == 0.5, 1.0, -1.0))


def test_neumann_on_a_slanted_cut_passes_verify():
    # the triangle x, y >= 0, x + y <= 1 as the unit box cut by a half-space: on the cut the outward
    # normal is (1, 1)/sqrt(2), so for u = x^2 - y^2 dn(u) = (2x - 2y)/sqrt(2) = sqrt(2) (x - y)
    text = ("problem wedge\nspace x in [0, 1], y in [0, 1]\nshape cut = halfspace(normal = (1, 1), offset = 1)\n"
            "domain tri = box & cut\nfield u\nequation laplace: lap(u) = 0\n"
            "boundary legs on x = 0, y = 0: u = x^2 - y^2\nboundary hyp on cut: dn(u) = sqrt(2)*(x - y)\n"
            "exact u = x^2 - y^2\n")
    hyp = _passes_verify(text, "hyp")
    np.testing.assert_allclose(hyp.x.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(hyp.normals, np.full_like(hyp.normals, 2 ** -0.5), atol=1e-12)
    assert _fails_verify(text.replace("sqrt(2)*(x - y)", "sqrt(2)*(y - x)"), "hyp")


def test_heat_on_a_plate_with_a_hole_in_time_passes_verify():
    # u = exp(-2t) sin(x) sin(y) solves u_t = lap(u); dn on the rim of the hole centred at (1.5, 1.5) with
    # radius 1/2: the outward normal is -(x - 1.5, y - 1.5)/0.5
    text = ("problem heatplate\nspace x in [0, 3], y in [0, 3]\ntime t in [0, 1]\n"
            "shape hole = disk(center = (1.5, 1.5), radius = 0.5)\ndomain plate = box - hole\nfield u\n"
            "let ustar = exp(-2*t)*sin(x)*sin(y)\n"
            "equation heat: u_t = lap(u)\ninitial ic: u = sin(x)*sin(y)\nboundary sides on boundary: u = ustar\n"
            "boundary rim on hole: dn(u) = -2*exp(-2*t)*((x - 1.5)*cos(x)*sin(y) + (y - 1.5)*sin(x)*cos(y))\n"
            "exact u = ustar\n")
    ic = _passes_verify(text, "ic")
    hole = (ic.x[:, 0] - 1.5) ** 2 + (ic.x[:, 1] - 1.5) ** 2
    assert np.all(ic.x[:, 2] == 0) and np.all(hole > 0.25)
    heat = _passes_verify(text, "heat")
    assert heat.x[:, 2].min() < 0.05 and heat.x[:, 2].max() > 0.95  # the time column spans [0, 1]


HEAT_BALL = Path(__file__).resolve().parents[2] / "examples" / "heat_ball5d" / "heat_ball5d.pinn"


@pytest.mark.parametrize("planted, condition, residual", [
    (None, None, None),
    # u* - (1 + 9 t) = t on the sphere: rms = sqrt(mean(t^2)), about 1/sqrt(3) for t uniform in [0, 1]
    (("u = 1 + 10*t", "u = 1 + 9*t"), "sphere", 1 / np.sqrt(3)),
    # u*_t - 0.9 lap(u*) = 10 - 9 = 1 at every interior point
    (("u_t - lap(u) = 0", "u_t - 0.9*lap(u) = 0"), "heat", 1.0),
])
def test_the_5d_ball_passes_verify_and_a_planted_error_is_named(planted, condition, residual):
    text = HEAT_BALL.read_text()
    if planted is None:
        assert all(c.passed and c.relative < 1e-12 for c in verify(pinnspec.compile(loads(text, filename="b.pinn"))))
        return
    checks = {c.name: c for c in verify(pinnspec.compile(loads(text.replace(*planted), filename="b.pinn")))}
    assert [name for name, c in checks.items() if not c.passed] == [condition]
    assert checks[condition].rms == pytest.approx(residual, rel=0.1)
