r"""Allen--Cahn equation: Fourier spectral in space, ETDRK4 in time.

Problem (the usual PINN benchmark; Raissi et al. 2019, jaxpi)::

    u_t - eps u_xx + reaction (u^3 - u) = 0,   eps = 1e-4,  reaction = 5,
    x in [-1, 1] periodic,  t in [0, 1],  u(x, 0) = x^2 cos(pi x).

Discretisation
--------------
* Space: Fourier collocation on ``modes`` (even) nodes x_j = -1 + 2 j / modes,
  the solution held as the real-FFT coefficients v_k, k = 0 .. modes/2
  (wavenumber pi k); between nodes it is the trigonometric interpolant (the
  Nyquist mode a cosine).  Written u_t = L u + N(u) with the diagonal linear
  part L = eps d_xx (L_k = -eps (pi k)^2) and N(u) = reaction (u - u^3)
  evaluated on the nodes (no dealiasing: the tail is below rounding).
* Initial data: the exact Fourier coefficients of x^2 cos(pi x) on [-1, 1]
  (not its samples).  Its periodic extension is continuous but u_x jumps by 4
  across x = +-1, so the coefficients decay only like k^-2; sampling would
  alias them into every mode, an O(modes^-2) error that never decays (1e-10
  at t = 1 with 4096 modes, 3e-5 at t = 0.005).  Truncating the exact series instead leaves only modes above
  modes/2, which diffusion removes like exp(-eps (pi k)^2 t).
* Time: ETDRK4 of Cox & Matthews, J. Comput. Phys. 176 (2002), in the form
  of Kassam & Trefethen, "Fourth-order time-stepping for stiff PDEs", SIAM
  J. Sci. Comput. 26(4), 1214--1233 (2005); its coefficient functions
  (e^{z/2} - 1)/z, (-4 - z + e^z (4 - 3z + z^2))/z^3, ... (z = tau L_k) by
  the paper's contour integral: the mean over ``contour_points`` points of the
  upper half of the unit circle centred at z, real part (as in their
  MATLAB codes for real L), which avoids the cancellation of the explicit formulas for small |z|.
* Evaluation at an arbitrary time t: from the stored step t_j <= t one
  ETDRK4 step of size t - t_j (several when stored steps are strided), i.e.
  every t is a step end of the same integrator.  The per-point coefficients
  (a different z for every point) use the explicit formulas where |z| >= 1
  and their Taylor series where |z| < 1 -- equal to the contour values to
  ~3e-12 relative (tested) and far cheaper for thousands of distinct times.  Times of
  the standard grid are steps (the step count is a multiple of nt - 1).
  t = 0 returns the initial condition itself.

Accuracy (tests/references/test_allen_cahn.py, docs/references.md; defaults
modes = 4096, dt = 2.5e-3 (400 steps, ~0.3 s); |u| <= 1; max abs errors):
* time: 4th order (observed 3.97, 3.99, 4.12 for dt = 1e-2 .. 1.25e-3); the
  default dt is within 4.9e-9 of dt/8 at t = 0.005 and 3.5e-10 at t = 1.
  Off-step times are as accurate as step times.
* space: spectral once the initial kink at x = +-1 has diffused: for
  t >= 0.005 the default is within 1.3e-11 of modes = 16384, and the error at
  t = 0.05 falls 4e-6, 4e-10, 3e-11, 3e-12 for 512 .. 4096 modes.  For
  0 < t < 0.005 the initial layer at x = +-1 (width ~sqrt(eps t)) is not
  fully resolved: 6.7e-9 at t = 2.5e-3, 2.9e-7 at t = 1e-3, growing towards
  the O(1/modes) Gibbs error of the truncated series as t -> 0+ (t = 0 itself
  returns the initial condition).  Sampling the initial data instead of using
  its exact coefficients would cost 3e-5 at t = 0.005.
* the contour coefficients (M = 32) match the explicit/series ones to
  ~3e-12 relative (worst where the circle passes near 0, |z| ~ 1).
* Raissi's ``AC.mat`` (Chebfun, 512 modes from sampled initial data; 512 x
  201 grid) is reproduced to 4.8e-11 by this solver on the same
  discretisation; the default reference differs from it by up to 9.1e-4 in
  the initial layer (x = -1, t = 0.01) -- the data's own 512-mode error --
  by <= 1.4e-6 for |x| <= 0.9, relative L2 1.2e-5 over the grid.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from ..registry import REFERENCES
from ._base import GridReference
from ._stepping import SteppedSolution, step_count

__all__ = [
    "EPS_ALLEN_CAHN",
    "REACTION_ALLEN_CAHN",
    "etdrk4_coefficients",
    "allen_cahn_initial_coefficients",
    "AllenCahnSolution",
    "allen_cahn_reference",
    "allen_cahn_grid",
    "AllenCahnReference",
    "allen_cahn",
]

#: The benchmark's diffusion coefficient and reaction rate.
EPS_ALLEN_CAHN = 1e-4
REACTION_ALLEN_CAHN = 5.0
T_FINAL = 1.0
DEFAULT_MODES = 4096
DEFAULT_DT = 2.5e-3
CONTOUR_POINTS = 32
_STORE_BYTES = 64 * 2**20            # budget for stored coefficient slices
_SERIES_TERMS = 20                   # Taylor terms for |z| < 1: 1/22! < 1e-21


def _benchmark_initial(x: np.ndarray) -> np.ndarray:
    return x**2 * np.cos(np.pi * x)


def allen_cahn_initial_coefficients(modes: int) -> np.ndarray:
    """Real-FFT coefficients [modes//2 + 1] of the truncated Fourier series of
    x^2 cos(pi x) on [-1, 1], scaled like ``np.fft.rfft`` on the nodes
    x_j = -1 + 2 j / modes (exact, not sampled).

    With c_n = 1/2 int_{-1}^{1} x^2 cos(pi x) e^{-i pi n x} dx
    = (I(n + 1) + I(n - 1)) / 2, I(m) = int_0^1 x^2 cos(pi m x) dx
    = 2 (-1)^m / (pi m)^2 (I(0) = 1/3); the node offset -1 gives the factor
    (-1)^n, and the Nyquist cosine takes c_{N/2} + c_{-N/2}.
    """
    modes = int(modes)
    n = np.arange(modes // 2 + 1, dtype=np.float64)

    def cosine_moment(m: np.ndarray) -> np.ndarray:
        m = np.abs(m)
        safe = np.maximum(m, 1.0)
        return np.where(m == 0, 1.0 / 3.0, 2.0 * (-1.0) ** m / (math.pi * safe) ** 2)

    c = 0.5 * (cosine_moment(n + 1) + cosine_moment(n - 1))
    v = modes * c * (-1.0) ** n
    v[-1] *= 2.0
    return v.astype(np.complex128)


def etdrk4_coefficients(z, contour_points: int = CONTOUR_POINTS):
    """ETDRK4 coefficients at z = tau L (real, any shape) by the contour
    integral of Kassam & Trefethen (2005): each function f is the mean of
    f(z + e^{i theta_j}) over ``contour_points`` points theta_j of the upper
    half circle, real part.  Returns (e^z, e^{z/2}, q, f1, f2, f3) with the
    step's coefficients Q = tau q, f_i = tau f_i."""
    z = np.asarray(z, dtype=np.float64)
    m = int(contour_points)
    roots = np.exp(1j * math.pi * (np.arange(1, m + 1) - 0.5) / m)     # [M]
    r = z[..., None] + roots                                              # [..., M]
    er = np.exp(r)
    r3 = r**3
    q = np.mean((np.exp(r / 2) - 1.0) / r, axis=-1).real
    f1 = np.mean((-4.0 - r + er * (4.0 - 3.0 * r + r * r)) / r3, axis=-1).real
    f2 = np.mean((2.0 + r + er * (r - 2.0)) / r3, axis=-1).real
    f3 = np.mean((-4.0 - 3.0 * r - r * r + er * (4.0 - r)) / r3, axis=-1).real
    return np.exp(z), np.exp(z / 2), q, f1, f2, f3


def _series(z: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    out = np.full_like(z, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = out * z + c
    return out


_FACT = np.array([math.factorial(i) for i in range(_SERIES_TERMS + 4)], dtype=np.float64)
_n = np.arange(_SERIES_TERMS)
# Taylor coefficients of q, f1, f2, f3 in z (from the exponential series)
_Q_SERIES = 0.5 ** (_n + 1) / _FACT[_n + 1]
_F1_SERIES = 4.0 / _FACT[_n + 3] - 3.0 / _FACT[_n + 2] + 1.0 / _FACT[_n + 1]
_F2_SERIES = 1.0 / _FACT[_n + 2] - 2.0 / _FACT[_n + 3]
_F3_SERIES = 4.0 / _FACT[_n + 3] - 1.0 / _FACT[_n + 2]


def _etdrk4_coefficients_pointwise(z: np.ndarray):
    """The same coefficients as :func:`etdrk4_coefficients` for many z at once
    (real arithmetic): explicit formulas where |z| >= 1, Taylor series below."""
    z = np.asarray(z, dtype=np.float64)
    ez, ez2 = np.exp(z), np.exp(z / 2)
    q, f1, f2, f3 = (np.empty_like(z) for _ in range(4))
    small = np.abs(z) < 1.0
    zs = z[small]
    for out, series in ((q, _Q_SERIES), (f1, _F1_SERIES), (f2, _F2_SERIES), (f3, _F3_SERIES)):
        out[small] = _series(zs, series)
    large = ~small
    zl, el = z[large], ez[large]
    z3 = zl**3
    q[large] = (ez2[large] - 1.0) / zl
    f1[large] = (-4.0 - zl + el * (4.0 - 3.0 * zl + zl * zl)) / z3
    f2[large] = (2.0 + zl + el * (zl - 2.0)) / z3
    f3[large] = (-4.0 - 3.0 * zl - zl * zl + el * (4.0 - zl)) / z3
    return ez, ez2, q, f1, f2, f3


class AllenCahnSolution(SteppedSolution):
    """Solve the periodic Allen--Cahn equation once; evaluate u anywhere.

    Parameters
    ----------
    modes : even number of Fourier collocation nodes on [-1, 1) (default 4096).
    dt : largest time step (default 2.5e-3); the step used is
        ``t_final / n_steps`` with ``n_steps`` the smallest multiple of
        ``steps_multiple_of`` such that the step is <= dt.
    eps, reaction : u_t = eps u_xx + reaction (u - u^3) (defaults 1e-4, 5).
    t_final : final time (default 1).
    initial : callable x -> u(x, 0), sampled on the nodes; default: the
        benchmark's x^2 cos(pi x) by its exact Fourier coefficients.
    contour_points : points of the Kassam--Trefethen contour (default 32).
    """

    def __init__(self, modes: int = DEFAULT_MODES, dt: float = DEFAULT_DT,
                 eps: float = EPS_ALLEN_CAHN, reaction: float = REACTION_ALLEN_CAHN,
                 t_final: float = T_FINAL, initial: Callable[[np.ndarray], np.ndarray] | None = None,
                 contour_points: int = CONTOUR_POINTS, steps_multiple_of: int = 1):
        modes = int(modes)
        if modes < 4 or modes % 2:
            raise ValueError(f"modes must be an even integer >= 4, got {modes}")
        eps, reaction, t_final = float(eps), float(reaction), float(t_final)
        if not (math.isfinite(eps) and eps >= 0.0):
            raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
        if not math.isfinite(reaction):
            raise ValueError(f"reaction must be finite, got {reaction!r}")
        if int(contour_points) < 4:
            raise ValueError("contour_points must be >= 4")
        n_steps = step_count(t_final, float(dt), steps_multiple_of)

        self.modes = modes
        self.eps, self.reaction, self.t_final = eps, reaction, t_final
        self.n_steps = n_steps
        self.dt = t_final / n_steps
        self.nodes = -1.0 + 2.0 * np.arange(modes) / modes
        self._k = np.arange(modes // 2 + 1, dtype=np.float64)          # wavenumber pi k
        self._linear = -eps * (math.pi * self._k) ** 2                  # L_k, [modes//2 + 1]
        # weights of the real trigonometric interpolant: 1, 2, ..., 2, 1 (Nyquist)
        self._weights = np.full(self._k.size, 2.0)
        self._weights[0] = self._weights[-1] = 1.0

        if initial is None:
            self._initial = _benchmark_initial
            v = allen_cahn_initial_coefficients(modes)
        else:
            self._initial = initial
            u0 = np.asarray(initial(self.nodes), dtype=np.float64).reshape(modes)
            if not np.all(np.isfinite(u0)):
                raise ValueError("initial condition is not finite on the nodes")
            v = np.fft.rfft(u0)

        step_coefficients = self._scaled(etdrk4_coefficients(self.dt * self._linear, contour_points), self.dt)
        v = self._integrate(v, lambda state: self._step(state, step_coefficients), _STORE_BYTES)
        if not np.all(np.isfinite(v)):
            raise FloatingPointError("the Allen-Cahn solve blew up (dt too large for this reaction?)")

    # -- time stepping ---------------------------------------------------------------
    @staticmethod
    def _scaled(coefficients, tau):
        e, e2, q, f1, f2, f3 = coefficients
        return e, e2, tau * q, tau * f1, tau * f2, tau * f3

    def _nonlinear(self, v: np.ndarray) -> np.ndarray:
        u = np.fft.irfft(v, self.modes, axis=-1)
        return np.fft.rfft(self.reaction * (u - u * u * u), axis=-1)

    def _step(self, v: np.ndarray, coefficients) -> np.ndarray:
        """One ETDRK4 step (Cox & Matthews 2002; Kassam & Trefethen 2005); v is [K] or
        [B, K], the coefficients broadcast against it."""
        e, e2, q, f1, f2, f3 = coefficients
        nv = self._nonlinear(v)
        a = e2 * v + q * nv
        na = self._nonlinear(a)
        b = e2 * v + q * na
        nb = self._nonlinear(b)
        c = e2 * a + q * (2.0 * nb - nv)
        nc = self._nonlinear(c)
        return e * v + f1 * nv + 2.0 * f2 * (na + nb) + f3 * nc

    def _advance(self, states: np.ndarray, tau: np.ndarray, substeps: int) -> np.ndarray:
        coefficients = self._scaled(_etdrk4_coefficients_pointwise(tau * self._linear), tau)
        for _ in range(substeps):
            states = self._step(states, coefficients)
        return states

    def coefficients_at(self, t) -> np.ndarray:
        """Real-FFT coefficients of u(., t) for each time in ``t`` -> complex
        [len(t), modes//2 + 1]."""
        return self._states_at(t)

    def values_at(self, t) -> np.ndarray:
        """Nodal values u(nodes, t) -> float64 [len(t), modes]."""
        return np.fft.irfft(self.coefficients_at(t), self.modes, axis=1)

    # -- evaluation ------------------------------------------------------------------
    def _phases(self, x: np.ndarray) -> np.ndarray:
        """[len(x), modes//2 + 1] weighted basis values of the real trigonometric interpolant."""
        theta = math.pi * np.mod(x + 1.0, 2.0)                                  # periodic in x
        return np.exp(1j * theta[:, None] * self._k[None, :]) * (self._weights / self.modes)

    def u(self, x, t) -> np.ndarray:
        """u(x, t) (numpy broadcasting); x is taken periodically, t = 0 gives
        the initial condition itself."""
        xb, tb = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(t, dtype=np.float64))
        if not np.all(np.isfinite(xb)):
            raise ValueError("x must be finite")
        xf, tf = xb.ravel(), tb.ravel()
        out = self._series(xf, tf, self.coefficients_at, self._phases).real
        at_start = tf == 0.0
        if np.any(at_start):
            out[at_start] = self._initial(np.mod(xf[at_start] + 1.0, 2.0) - 1.0)
        return out.reshape(xb.shape)

    @property
    def slices(self) -> np.ndarray:
        """Stored real-FFT coefficients, complex [len(times), modes//2 + 1] (read-only)."""
        return self._slices

    def __repr__(self) -> str:
        return (f"AllenCahnSolution(modes={self.modes}, dt={self.dt!r}, eps={self.eps!r}, "
                f"reaction={self.reaction!r}, t_final={self.t_final!r})")


@functools.lru_cache(maxsize=8)
def _cached(modes, dt, eps, reaction, t_final, steps_multiple_of):
    return AllenCahnSolution(modes=modes, dt=dt, eps=eps, reaction=reaction, t_final=t_final,
                             steps_multiple_of=steps_multiple_of)


def allen_cahn_reference(modes: int = DEFAULT_MODES, dt: float = DEFAULT_DT, eps: float = EPS_ALLEN_CAHN,
                         reaction: float = REACTION_ALLEN_CAHN, t_final: float = T_FINAL,
                         steps_multiple_of: int = 200) -> AllenCahnSolution:
    """The benchmark's Allen--Cahn solution (u(x, 0) = x^2 cos(pi x)), solved
    once per distinct parameter set and cached.  See :class:`AllenCahnSolution`."""
    return _cached(int(modes), float(dt), float(eps), float(reaction), float(t_final), int(steps_multiple_of))


def allen_cahn_grid(nx: int = 512, nt: int = 201, t_final: float = T_FINAL) -> tuple[np.ndarray, np.ndarray]:
    """Raissi's ``AC.mat`` test grid: nx periodic points -1 + 2 j / nx (the
    right end excluded) and t = linspace(0, t_final, nt) (default 512 x 201)."""
    nx, nt = int(nx), int(nt)
    if nx < 1 or nt < 1:
        raise ValueError("need nx >= 1 and nt >= 1")
    return -1.0 + 2.0 * np.arange(nx) / nx, np.linspace(0.0, float(t_final), nt)


class AllenCahnReference(GridReference):
    """Reference for the Allen--Cahn benchmark: field ``u`` on (x, t)."""

    fields = ("u",)
    coordinates = ("x", "t")

    def __init__(self, eps: float = EPS_ALLEN_CAHN, reaction: float = REACTION_ALLEN_CAHN,
                 modes: int = DEFAULT_MODES, dt: float = DEFAULT_DT, nx: int = 512, nt: int = 201,
                 t_final: float = T_FINAL):
        self._axes = allen_cahn_grid(nx, nt, t_final)
        self._args = dict(modes=modes, dt=dt, eps=eps, reaction=reaction, t_final=t_final,
                          steps_multiple_of=max(1, int(nt) - 1))
        # validate now, solve lazily (first evaluation)
        if int(modes) < 4 or int(modes) % 2:
            raise ValueError(f"modes must be an even integer >= 4, got {modes}")
        if not (float(dt) > 0.0 and float(eps) >= 0.0 and math.isfinite(float(reaction))):
            raise ValueError("need dt > 0, eps >= 0 and a finite reaction")

    @property
    def solution(self) -> AllenCahnSolution:
        return allen_cahn_reference(**self._args)

    def _evaluate(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self.solution.u(x, t)[:, None]

    def grid_axes(self) -> tuple[np.ndarray, np.ndarray]:
        x, t = self._axes
        return x.copy(), t.copy()

    def __repr__(self) -> str:
        a = self._args
        return (f"allen_cahn(eps={a['eps']!r}, reaction={a['reaction']!r}, modes={a['modes']}, "
                f"dt={a['dt']!r}, nx={self._axes[0].size}, nt={self._axes[1].size})")


@REFERENCES.register("allen_cahn")
def allen_cahn(*, eps: float = EPS_ALLEN_CAHN, reaction: float = REACTION_ALLEN_CAHN,
               modes: int = DEFAULT_MODES, dt: float = DEFAULT_DT, nx: int = 512, nt: int = 201,
               t_final: float = T_FINAL) -> AllenCahnReference:
    """Reference generator for Allen--Cahn (``reference allen_cahn(eps = eps2)``).

    u_t - eps u_xx + reaction (u^3 - u) = 0 on x in [-1, 1] periodic,
    u(x, 0) = x^2 cos(pi x).  ``modes``: Fourier nodes (default 4096); ``dt``:
    largest ETDRK4 step (default 2.5e-3); ``nx``, ``nt``: the default test grid
    (``nx`` periodic x points on [-1, 1), ``nt`` times linspace(0, t_final, nt);
    512 x 201 as Raissi's ``AC.mat``).  The solve (~0.5 s at the defaults) runs
    on first use and is cached.
    """
    return AllenCahnReference(eps=eps, reaction=reaction, modes=modes, dt=dt, nx=nx, nt=nt, t_final=t_final)
