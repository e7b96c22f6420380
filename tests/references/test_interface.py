"""The generic reference interface: make(**kwargs) -> object with .fields,
.coordinates, __call__(points [N, d]) -> [N, n_fields], .grid()."""

import inspect
import subprocess
import sys

import numpy as np
import pytest

import pinnspec.references as refs
from pinnspec.references import (
    NU_BURGERS,
    GridReference,
    allen_cahn,
    burgers_grid,
    cole_hopf_burgers,
    cole_hopf_solution,
    nls,
    nls_grid,
    nls_reference,
    tensor_grid,
)


def test_public_names():
    for name in refs.__all__:
        assert hasattr(refs, name)
    assert "cole_hopf_burgers" in refs.__all__ and "nls" in refs.__all__ and "allen_cahn" in refs.__all__


@pytest.mark.parametrize("make, expected", [
    (cole_hopf_burgers, {"nu": NU_BURGERS, "nx": 256, "nt": 100, "t_max": 0.99}),
    (nls, {"modes": 256, "dt": None, "order": 4, "nx": 256, "nt": 201,
           "x_min": -5.0, "x_max": 5.0, "t_final": np.pi / 2}),
    (allen_cahn, {"eps": 1e-4, "reaction": 5.0, "modes": 4096, "dt": 2.5e-3, "nx": 512, "nt": 201,
                  "t_final": 1.0}),
])
def test_generator_keyword_arguments(make, expected):
    params = inspect.signature(make).parameters
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values())
    assert {k: p.default for k, p in params.items()} == expected


def test_tensor_grid_t_slowest():
    x, t = np.array([0.0, 1.0, 2.0]), np.array([10.0, 20.0])
    g = tensor_grid(x, t)
    np.testing.assert_array_equal(g, [[0, 10], [1, 10], [2, 10], [0, 20], [1, 20], [2, 20]])


def test_burgers_generator():
    ref = cole_hopf_burgers(nu=NU_BURGERS)
    assert isinstance(ref, GridReference)
    assert ref.fields == ("u",) and ref.coordinates == ("x", "t")
    pts = ref.grid()
    x, t = burgers_grid()
    assert pts.shape == (256 * 100, 2) and pts.dtype == np.float64
    assert ref.grid_shape == (100, 256)
    np.testing.assert_array_equal(pts[:256, 0], x)
    assert np.all(pts[:256, 1] == 0.0) and np.all(pts[256:512, 1] == t[1])
    vals = ref(pts)
    assert vals.shape == (25600, 1) and vals.dtype == np.float64
    np.testing.assert_array_equal(vals[:256, 0], -np.sin(np.pi * x))      # t = 0 row: the initial condition
    np.testing.assert_array_equal(ref.grid_values()[..., 0], cole_hopf_solution(x[None, :], t[:, None]))
    rng = np.random.default_rng(0)
    p = np.c_[rng.uniform(-1, 1, 50), rng.uniform(0, 1, 50)]
    np.testing.assert_array_equal(ref(p)[:, 0], cole_hopf_solution(p[:, 0], p[:, 1]))
    np.testing.assert_array_equal(ref(p.tolist()), ref(p))               # array-likes accepted
    # another viscosity is a different solution
    assert np.max(np.abs(cole_hopf_burgers(nu=0.05)(p) - ref(p))) > 1e-2


def test_nls_generator():
    ref = nls()
    assert ref.fields == ("u", "v") and ref.coordinates == ("x", "t")
    pts = ref.grid()
    x, t = nls_grid()
    assert pts.shape == (256 * 201, 2) and ref.grid_shape == (201, 256)
    vals = ref(pts)
    assert vals.shape == (256 * 201, 2) and vals.dtype == np.float64
    np.testing.assert_allclose(vals[:256, 0], 2 / np.cosh(x), rtol=0, atol=1e-14)
    np.testing.assert_allclose(vals[:256, 1], 0.0, rtol=0, atol=1e-14)
    h = nls_reference().h(pts[:, 0], pts[:, 1])
    np.testing.assert_array_equal(vals[:, 0], h.real)
    np.testing.assert_array_equal(vals[:, 1], h.imag)
    assert ref.solution is nls_reference()                                # shared cache


def test_nls_generator_options():
    ref = nls(modes=128, order=2, nt=11, dt=np.pi / 2 / 300)
    sol = ref.solution
    assert sol.modes == 128 and sol.order == 2
    assert sol.n_steps == 300 and sol.n_steps % 10 == 0
    assert ref.grid().shape == (256 * 11, 2)
    with pytest.raises(ValueError):
        nls(modes=255)
    with pytest.raises(ValueError):
        nls(order=3)


@pytest.mark.parametrize("make", [cole_hopf_burgers, nls, allen_cahn])
def test_point_validation(make):
    ref = make()
    with pytest.raises(ValueError):
        ref(np.zeros((5, 3)))
    with pytest.raises(ValueError):
        ref(np.zeros(4))
    with pytest.raises(ValueError):
        ref(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError):
        ref(np.array([[0.0, -0.5]]))                                      # before t = 0
    assert ref(np.zeros((0, 2))).shape == (0, len(ref.fields))
    assert ref(np.array([[0.1, 0.2]], dtype=np.float32)).dtype == np.float64


def test_no_torch_import():
    code = "import sys, pinnspec.references as r; r.cole_hopf_burgers(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
