"""Allen--Cahn reference (Fourier spectral + ETDRK4) against independent checks.

* the ETDRK4 coefficients by the Kassam--Trefethen contour integral equal the
  explicit formulas / Taylor series used for off-step times;
* time: the error against a finer step falls at 4th order;
* space: the error against more modes falls geometrically (spectral) once the
  initial kink at x = +-1 has diffused;
* an independent integrator: scipy's DOP853 on the same Fourier
  semi-discretisation;
* with the reaction switched off the solver reproduces the exact heat decay
  of Fourier modes to rounding, at step and off-step times;
* Raissi's published ``AC.mat`` (Chebfun, 512 modes): our solver on the same
  discretisation reproduces its values to ~5e-11, and the default reference
  stays within that data's own spatial error of it.
"""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from pinnspec.references import AllenCahnSolution, allen_cahn, allen_cahn_grid, allen_cahn_reference
from pinnspec.references import allen_cahn_initial_coefficients, etdrk4_coefficients
from pinnspec.references._allen_cahn import _etdrk4_coefficients_pointwise


def benchmark_initial(x):
    return x**2 * np.cos(np.pi * x)


@pytest.fixture(scope="module")
def default():
    return allen_cahn_reference()            # modes 4096, dt 2.5e-3 (400 steps), cached


def test_contour_coefficients():
    z = np.r_[0.0, -np.logspace(-10, 3, 400)]
    contour = etdrk4_coefficients(z)
    pointwise = _etdrk4_coefficients_pointwise(z)
    for c, p in zip(contour[2:], pointwise[2:]):
        # the contour loses digits only where its circle passes near 0 (|z| ~ 1): 7e-13
        assert np.max(np.abs(c - p) / np.abs(p)) < 1e-10
    _, _, q, f1, f2, f3 = contour
    np.testing.assert_allclose([q[0], f1[0], f2[0], f3[0]], [0.5, 1 / 6, 1 / 6, 1 / 6], rtol=1e-14)
    # f1 + 4 f2 + f3 = phi_1(z) = (e^z - 1)/z: a step of N = -L u keeps equilibria
    np.testing.assert_allclose(f1 + 4 * f2 + f3, np.where(z == 0, 1.0, np.expm1(z) / np.where(z == 0, 1, z)),
                               rtol=1e-12)


def test_initial_coefficients_are_the_exact_fourier_series():
    fine = 1 << 16
    nodes = -1 + 2 * np.arange(fine) / fine
    sampled = np.fft.rfft(benchmark_initial(nodes))[:40] / fine      # aliasing ~ fine^-2
    exact = allen_cahn_initial_coefficients(128)[:40] / 128
    assert np.max(np.abs(sampled - exact)) < 1e-9
    # the series (slowly: the derivative jumps by 4 at x = +-1) sums to the function
    modes = 1 << 14
    nodes = -1 + 2 * np.arange(modes) / modes
    values = np.fft.irfft(allen_cahn_initial_coefficients(modes), modes)
    inner = np.abs(nodes) < 0.5
    assert np.max(np.abs(values - benchmark_initial(nodes))[inner]) < 1e-8


def test_fourth_order_in_dt():
    times = np.array([0.25, 1.0])
    fine = AllenCahnSolution(modes=512, dt=1.25e-3 / 4).values_at(times)
    errors = [np.max(np.abs(AllenCahnSolution(modes=512, dt=dt).values_at(times) - fine))
              for dt in (1e-2, 5e-3, 2.5e-3)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 3.7) & (orders < 4.3)), (errors, orders)    # measured 3.97, 3.99
    assert errors[-1] < 1e-9


def test_default_time_step(default):
    """dt = 2.5e-3 is 3.3e-10 from dt/2 at t = 1 (|u| <= 1)."""
    half = AllenCahnSolution(dt=1.25e-3)
    err = np.max(np.abs(default.values_at(1.0) - half.values_at(1.0)))
    assert err < 1e-9, err


def test_spectral_in_modes(default):
    times = np.array([0.05, 0.5, 1.0])
    best = default.values_at(times)                                        # [3, 4096]
    errors = [np.max(np.abs(AllenCahnSolution(modes=m).values_at(times) - best[:, :: 4096 // m]))
              for m in (512, 1024, 2048)]
    # each doubling gains > 10x (geometric decay; algebraic order 2 would give 4x)
    assert errors[0] / errors[1] > 100 and errors[1] / errors[2] > 10, errors
    assert errors[-1] < 1e-10, errors                                      # measured 4.2e-6, 4.4e-10, 2.3e-11


def test_dop853_on_the_same_semi_discretisation():
    """An independent integrator (adaptive Dormand--Prince 8(5,3)) on the same
    ODE system: 64 Fourier modes, u_t = irfft(L rfft u) + 5 (u - u^3)."""
    modes = 64
    sol = AllenCahnSolution(modes=modes, dt=1e-3)
    linear = -1e-4 * (np.pi * np.arange(modes // 2 + 1)) ** 2

    def rhs(_, u):
        return np.fft.irfft(linear * np.fft.rfft(u), modes) + 5.0 * (u - u**3)

    u0 = np.fft.irfft(allen_cahn_initial_coefficients(modes), modes)
    times = np.array([0.1, 0.5, 1.0])
    ivp = solve_ivp(rhs, (0.0, 1.0), u0, method="DOP853", t_eval=times, rtol=1e-13, atol=1e-13)
    assert ivp.success
    err = np.max(np.abs(sol.values_at(times) - ivp.y.T))
    assert err < 1e-10, err                                                # measured 9.4e-12


def test_heat_equation_decay_is_exact():
    """reaction = 0: u_t = eps u_xx; every Fourier mode decays as exp(-eps k^2 t),
    at step times and between them."""
    eps = 0.01

    def exact(x, t):
        return (np.cos(3 * np.pi * x) * np.exp(-eps * (3 * np.pi) ** 2 * t)
                + 0.5 * np.sin(7 * np.pi * x) * np.exp(-eps * (7 * np.pi) ** 2 * t) + 0.25)

    sol = AllenCahnSolution(modes=32, dt=0.1, eps=eps, reaction=0.0, initial=lambda x: exact(x, 0.0))
    rng = np.random.default_rng(1)
    x, t = rng.uniform(-3, 3, 500), rng.uniform(0, 1, 500)
    assert np.max(np.abs(sol.u(x, t) - exact(x, t))) < 1e-14
    assert np.max(np.abs(sol.values_at(sol.times) - exact(sol.nodes[None, :], sol.times[:, None]))) < 1e-14


# (index in x, index in t, value) of Raissi's AC.mat (maziarraissi/PINNs,
# main/Data/AC.mat, MIT licence): usol 512 x 201 on x = -1 + 2 i / 512,
# t = j / 200, computed by Chebfun with 512 modes from the sampled initial data.
AC_MAT_VALUES = [
    (0, 20, -0.9974990528039407), (128, 20, -0.00010357844064412536), (256, 20, 3.2964909165655865e-05),
    (384, 100, -0.0038079628203968596), (448, 100, -0.9824461616306388), (64, 200, -0.9998772428519339),
    (200, 200, 0.9836443286244515), (256, 200, 0.02957972234920425), (300, 200, 0.9660330331617725),
    (480, 200, -0.9999770144731209), (0, 200, -0.9999988894533967),
]


def test_raissi_ac_mat_values(default):
    i, j, published = (np.array(c) for c in zip(*AC_MAT_VALUES))
    x, t = -1 + 2 * i / 512, j / 200
    # the same discretisation (512 modes, sampled initial data): the same numbers
    same = AllenCahnSolution(modes=512, dt=1e-3, initial=benchmark_initial, steps_multiple_of=200)
    assert np.max(np.abs(same.u(x, t) - published)) < 1e-9                # measured 4e-11
    # the converged reference: 512 modes do not resolve the initial layer at
    # x = +-1 (the data's first row is off by 1.8e-4 at x = -1, t = 0.1), elsewhere
    # the data are converged to ~1e-8
    diff = np.abs(default.u(x, t) - published)
    assert 1e-4 < diff[0] < 3e-4, diff[0]                                  # measured 1.75e-4
    assert np.max(diff[1:]) < 2e-8, diff                                   # measured 5.7e-9


def test_generator_grid_and_initial_row(default):
    ref = allen_cahn()
    assert ref.fields == ("u",) and ref.coordinates == ("x", "t")
    x, t = ref.grid_axes()
    assert x.shape == (512,) and t.shape == (201,) and x[0] == -1.0 and x[-1] == 1 - 2 / 512 and t[-1] == 1.0
    values = ref.grid_values()[..., 0]                                     # [201, 512]
    assert ref.solution is allen_cahn_reference(steps_multiple_of=200) and ref.solution.n_steps == 400
    np.testing.assert_array_equal(values[0], benchmark_initial(x))        # t = 0: the initial condition
    nodal = ref.solution.values_at(t)[:, ::8]
    assert np.max(np.abs(values[1:] - nodal[1:])) < 1e-13
    assert np.max(np.abs(values)) < 1.0 + 1e-9
    assert np.max(np.abs(values - default.u(x[None, :], t[:, None]))) < 1e-13


def test_off_step_times_periodicity_and_symmetry():
    coarse = AllenCahnSolution(modes=1024, dt=2.5e-3)
    fine = AllenCahnSolution(modes=1024, dt=2.5e-3 / 4)
    rng = np.random.default_rng(3)
    x, t = rng.uniform(-1, 1, 1500), rng.uniform(0.01, 1, 1500)
    err_off = np.max(np.abs(coarse.u(x, t) - fine.u(x, t)))
    err_on = np.max(np.abs(coarse.values_at(coarse.times) - fine.values_at(coarse.times)))
    assert err_off < 1e-8 and err_off < 3 * max(err_on, 1e-12), (err_off, err_on)   # measured 3.4e-10, 3.5e-10
    assert np.max(np.abs(coarse.u(x + 2.0, t) - coarse.u(x, t))) < 1e-12
    assert np.max(np.abs(coarse.u(-x, t) - coarse.u(x, t))) < 1e-10      # even initial data stays even


def test_errors_and_cache():
    assert allen_cahn_reference() is allen_cahn_reference()
    sol = allen_cahn_reference()
    with pytest.raises(ValueError):
        sol.u(0.0, 1.0 + 1e-3)
    with pytest.raises(ValueError):
        sol.u(0.0, -1e-3)
    with pytest.raises(ValueError):
        AllenCahnSolution(modes=255)
    with pytest.raises(ValueError):
        AllenCahnSolution(dt=0.0)
    with pytest.raises(ValueError):
        allen_cahn(modes=7)
    with pytest.raises(ValueError):
        allen_cahn(eps=-1.0)
    assert np.isfinite(sol.u(0.3, 1.0 * (1 + 1e-15)))


def test_standard_grid_function():
    x, t = allen_cahn_grid()
    np.testing.assert_allclose(x, np.linspace(-1, 1, 513)[:-1], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(t, np.linspace(0, 1, 201))
    assert math.isclose(allen_cahn_grid(nx=4, nt=3, t_final=0.5)[1][-1], 0.5)


def test_registered_generator():
    from pinnspec.registry import REFERENCES

    assert REFERENCES.get("allen_cahn") is allen_cahn
