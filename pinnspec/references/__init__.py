"""Reference solutions for benchmarks without a closed form (numpy/scipy only).

Generators (``make(**kwargs)`` -> object with ``.fields``, ``.coordinates``,
``__call__(points [N, d]) -> [N, n_fields]``, ``.grid()``; see
:class:`GridReference`):

* :func:`cole_hopf_burgers` -- viscous Burgers, u(x, 0) = -sin(pi x), Cole--Hopf by
  quadrature (accurate to ~1e-15);
* :func:`nls` -- nonlinear Schroedinger, h(x, 0) = 2 sech x on [-5, 5) periodic,
  split-step Fourier;
* :func:`allen_cahn` -- Allen--Cahn, u(x, 0) = x^2 cos(pi x) on [-1, 1] periodic,
  Fourier spectral + ETDRK4 (Kassam & Trefethen 2005).

Lower level: :func:`cole_hopf_solution` (u(x, t) with broadcasting),
:func:`nls_reference` / :class:`NLSSolution` (solve once, evaluate h anywhere),
:func:`allen_cahn_reference` / :class:`AllenCahnSolution`, and the standard test
grids :func:`burgers_grid`, :func:`nls_grid`, :func:`allen_cahn_grid`.
"""

from ._allen_cahn import (
    EPS_ALLEN_CAHN,
    AllenCahnReference,
    AllenCahnSolution,
    allen_cahn,
    allen_cahn_grid,
    allen_cahn_initial_coefficients,
    allen_cahn_reference,
    etdrk4_coefficients,
)
from ._base import GridReference, tensor_grid
from ._burgers import NU_BURGERS, BurgersReference, burgers_grid, cole_hopf_burgers, cole_hopf_solution
from ._nls import NLSReference, NLSSolution, nls, nls_grid, nls_reference

__all__ = [
    "GridReference",
    "tensor_grid",
    "NU_BURGERS",
    "BurgersReference",
    "burgers_grid",
    "cole_hopf_burgers",
    "cole_hopf_solution",
    "NLSReference",
    "NLSSolution",
    "nls",
    "nls_grid",
    "nls_reference",
    "EPS_ALLEN_CAHN",
    "AllenCahnReference",
    "AllenCahnSolution",
    "allen_cahn",
    "allen_cahn_grid",
    "allen_cahn_initial_coefficients",
    "allen_cahn_reference",
    "etdrk4_coefficients",
]
