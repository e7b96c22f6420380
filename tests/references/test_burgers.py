"""Burgers reference (Cole--Hopf by quadrature) against independent oracles.

Oracles: (1) adaptive Gauss--Kronrod ``scipy.integrate.quad`` on the same
integrals, (2) a 110-digit Fourier--Bessel series solution of the heat
equation (a different representation: phi = sum_k (-1)^k I_k(R)
exp(-nu k^2 pi^2 t) cos(k pi x)), (3) the PDE itself by finite differences,
(4) the published maximum slope of Basdevant et al. (1986), (5) the initial
and boundary conditions.
"""

import math

import numpy as np
import pytest
from scipy import integrate

from pinnspec.references import (
    NU_BURGERS,
    burgers_grid,
    cole_hopf_solution,
)

# points near the shock (x ~ 0, t >= 0.3), before it forms, near the walls,
# at small t and at t = 1
POINTS = np.array([
    [1e-4, 0.5], [1e-3, 0.5], [3e-3, 0.35], [-2e-3, 0.75], [5e-3, 0.99],
    [0.0, 1.0], [2e-3, 1.0], [-0.01, 1.0], [0.03, 0.99], [0.1, 0.6],
    [-0.4, 0.25], [0.6, 0.05], [0.999, 0.8], [-0.999, 0.3], [0.3, 1e-3],
    [-0.7, 1e-5], [0.5, 0.318], [0.05, 0.2],
])


def _exponent(eta, x, t, nu):
    R = 1.0 / (2.0 * math.pi * nu)
    return -R * np.cos(np.pi * (x - eta)) - eta**2 / (4.0 * nu * t)


def quad_oracle(x, t, nu=NU_BURGERS):
    """u = -I1/I0 with scipy's adaptive quad, shifted by the max exponent and
    split at every local maximum of the integrand."""
    R = 1.0 / (2.0 * math.pi * nu)
    L = math.sqrt(4.0 * nu * t * (2.0 * R + 80.0))        # wider window than the code's
    eta = np.linspace(-L, L, 200001)
    E = _exponent(eta, x, t, nu)
    peaks = eta[1:-1][(E[1:-1] >= E[:-2]) & (E[1:-1] >= E[2:])]
    shift = E.max()
    f0 = lambda e: math.exp(_exponent(e, x, t, nu) - shift)
    f1 = lambda e: math.sin(math.pi * (x - e)) * f0(e)
    kw = dict(points=list(peaks), limit=2000, epsabs=1e-17, epsrel=1e-13)
    i0, _ = integrate.quad(f0, -L, L, **kw)
    i1, _ = integrate.quad(f1, -L, L, **kw)
    return -i1 / i0


def series_oracle(points, nu=NU_BURGERS, dps=110, kmax=360):
    """u = -2 nu phi_x / phi with phi the Fourier--Bessel heat-equation series,
    evaluated in mpmath at ``dps`` digits (the cancellation near the shock is
    ~45 digits)."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(dps):
        nu_m = mp.mpf(nu)
        R = 1 / (2 * mp.pi * nu_m)
        bessel = [mp.besseli(k, R) for k in range(kmax)]
        assert bessel[-1] / bessel[0] < mp.mpf(10) ** (-dps)   # series truncation negligible
        out = []
        for x, t in points:
            x, t = mp.mpf(x), mp.mpf(t)
            phi, phi_x = bessel[0], mp.mpf(0)
            for k in range(1, kmax):
                c = 2 * (-1) ** k * bessel[k] * mp.exp(-nu_m * (k * mp.pi) ** 2 * t)
                phi += c * mp.cos(k * mp.pi * x)
                phi_x -= c * k * mp.pi * mp.sin(k * mp.pi * x)
            out.append(float(-2 * nu_m * phi_x / phi))
    return np.array(out)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_agrees_with_adaptive_quad():
    u = cole_hopf_solution(POINTS[:, 0], POINTS[:, 1])
    ref = np.array([quad_oracle(x, t) for x, t in POINTS])
    assert np.max(np.abs(u - ref)) < 1e-13          # measured 2e-15


def test_agrees_with_fourier_bessel_series():
    u = cole_hopf_solution(POINTS[:, 0], POINTS[:, 1])
    ref = series_oracle(POINTS)
    assert np.max(np.abs(u - ref)) < 1e-13          # measured 1.4e-15


@pytest.mark.parametrize("nu", [0.05, 0.003 / np.pi])
def test_other_viscosities_agree_with_series(nu):
    pts = POINTS[::3]
    u = cole_hopf_solution(pts[:, 0], pts[:, 1], nu=nu)
    ref = series_oracle(pts, nu=nu, dps=240 if nu < 1e-3 else 60, kmax=900 if nu < 1e-3 else 200)
    assert np.max(np.abs(u - ref)) < 1e-13          # measured <= 8e-15


def test_converged_in_panel_count():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-1, 1, 3000), rng.normal(0.0, 0.01, 3000)])
    t = rng.uniform(0.0, 1.0, x.size)
    auto = cole_hopf_solution(x, t)
    fine = cole_hopf_solution(x, t, panels=120)
    assert np.max(np.abs(auto - fine)) < 1e-13
    # and the automatic rule has a margin: half as many panels still converge at t <= 1
    half = cole_hopf_solution(x, t, panels=17)
    assert np.max(np.abs(half - fine)) < 1e-12


def test_basdevant_maximum_slope():
    """Basdevant et al. (1986), J. Comput. Phys. 44: max_t |u_x(0, t)| = 152.00516
    reached at t = 1.6037/pi (nu = 0.01/pi)."""
    from scipy.optimize import minimize_scalar

    h = 1e-6
    slope = lambda t: float((cole_hopf_solution(h, t) - cole_hopf_solution(-h, t))[()] / (2 * h))
    res = minimize_scalar(slope, bounds=(0.45, 0.56), method="bounded", options=dict(xatol=1e-9))
    assert abs(-res.fun - 152.00516) < 5e-5
    assert abs(res.x * np.pi - 1.6037) < 5e-5


def _fd_residual(x, t, hx, ht, nu=NU_BURGERS):
    """4th-order central differences: residual and the size of its terms."""
    u = lambda dx, dt: cole_hopf_solution(x + dx, t + dt, nu)
    u0 = u(0, 0)
    ux = (-u(2 * hx, 0) + 8 * u(hx, 0) - 8 * u(-hx, 0) + u(-2 * hx, 0)) / (12 * hx)
    uxx = (-u(2 * hx, 0) + 16 * u(hx, 0) - 30 * u0 + 16 * u(-hx, 0) - u(-2 * hx, 0)) / (12 * hx**2)
    ut = (-u(0, 2 * ht) + 8 * u(0, ht) - 8 * u(0, -ht) + u(0, -2 * ht)) / (12 * ht)
    res = ut + u0 * ux - nu * uxx
    scale = np.abs(ut) + np.abs(u0 * ux) + np.abs(nu * uxx)
    return res, scale


def test_pde_residual_away_from_shock():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 4000)
    t = rng.uniform(0.02, 0.98, 4000)
    keep = (np.abs(x) > 0.2) | (t < 0.2)          # the front steepens at x = 0 from t ~ 0.3
    x, t = x[keep], t[keep]
    res, scale = _fd_residual(x, t, 1e-3, 1e-3)
    assert np.max(np.abs(res) / scale) < 1e-7          # measured 1.8e-8
    # the residual is the stencil's truncation error: it falls like h^4
    res2, _ = _fd_residual(x, t, 2e-3, 2e-3)
    assert np.max(np.abs(res2)) / np.max(np.abs(res)) > 12.0


def test_pde_residual_at_the_shock():
    """At the front (|u_x| up to 152) the residual is still small relative to the
    terms (u_t ~ u u_x ~ nu u_xx ~ 1e2), with steps well below the front width."""
    x = np.array([0.0005, 0.001, 0.002, -0.003, 0.005, 0.01])
    for t in (0.4, 0.6, 0.9):
        res, scale = _fd_residual(x, np.full_like(x, t), 5e-5, 5e-5)
        assert np.max(np.abs(res) / scale) < 1e-7      # measured <= 3e-9


def test_initial_condition():
    x = np.linspace(-1, 1, 1001)
    assert np.array_equal(cole_hopf_solution(x, 0.0), -np.sin(np.pi * x))
    # first-order Taylor: u(x, tau) = u0 + tau (-u0 u0' + nu u0'') + O(tau^2)
    tau = 1e-4
    u0 = -np.sin(np.pi * x)
    taylor = u0 + tau * (-u0 * (-np.pi * np.cos(np.pi * x)) + NU_BURGERS * np.pi**2 * np.sin(np.pi * x))
    assert np.max(np.abs(cole_hopf_solution(x, tau) - taylor)) < 1e-6      # O(tau^2) ~ 1e-8 * C
    assert np.max(np.abs(cole_hopf_solution(x, 1e-12) - u0)) < 1e-10


def test_boundary_values_and_symmetry():
    t = np.linspace(0.0, 1.0, 101)
    assert np.max(np.abs(cole_hopf_solution(1.0, t))) < 1e-13
    assert np.max(np.abs(cole_hopf_solution(-1.0, t))) < 1e-13
    rng = np.random.default_rng(2)
    x, tt = rng.uniform(-1, 1, 2000), rng.uniform(0, 1, 2000)
    assert np.max(np.abs(cole_hopf_solution(-x, tt) + cole_hopf_solution(x, tt))) < 1e-13


def test_broadcasting_and_errors():
    x, t = burgers_grid()
    u = cole_hopf_solution(x[None, :], t[:, None])
    assert u.shape == (100, 256)
    assert np.ndim(cole_hopf_solution(0.3, 0.5)) == 0
    with pytest.raises(ValueError):
        cole_hopf_solution(0.0, -0.1)
    with pytest.raises(ValueError):
        cole_hopf_solution(0.0, 0.5, nu=0.0)
    with pytest.raises(ValueError):
        cole_hopf_solution(np.nan, 0.5)


def test_standard_grid():
    x, t = burgers_grid()
    assert x.shape == (256,) and t.shape == (100,)
    assert x[0] == -1.0 and x[-1] == 1.0 and t[0] == 0.0 and t[-1] == 0.99
    np.testing.assert_allclose(np.diff(t), 0.01, atol=1e-15)
