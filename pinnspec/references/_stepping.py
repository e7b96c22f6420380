"""What the spectral time-stepping references share (numpy only).

A :class:`SteppedSolution` integrates once with a fixed step, keeps the
states of (every ``stride``-th) step, and reaches any time t in
[0, t_final] from the stored step t_j <= t by m <= stride steps of size
(t - t_j)/m -- one step when every step is stored -- so every t is a step
end of the same integrator (no separate time-interpolation error).  Values
between nodes come from a Fourier series: ``coefficients(t) @ basis(x)``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["SteppedSolution", "step_count"]

BLOCK_ELEMENTS = 1 << 18            # rows x state entries per vectorised block


def step_count(t_final: float, dt: float, multiple_of: int) -> int:
    """The smallest multiple of ``multiple_of`` (>= 1) of steps of size <= dt."""
    if not (math.isfinite(t_final) and t_final > 0.0):
        raise ValueError("t_final must be positive")
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be positive, got {dt!r}")
    mult = max(1, int(multiple_of))
    return mult * max(1, math.ceil(t_final / dt / mult - 1e-9))


class SteppedSolution:
    """Base of the stepped references.  Subclasses call :meth:`_integrate` in
    their constructor and implement :meth:`_advance`."""

    t_final: float
    dt: float
    n_steps: int
    stride: int
    times: np.ndarray
    _slices: np.ndarray

    def _advance(self, states: np.ndarray, tau: np.ndarray, substeps: int) -> np.ndarray:  # pragma: no cover
        """``substeps`` steps of size tau ([B, 1]) from states [B, K]."""
        raise NotImplementedError

    # -- integration -----------------------------------------------------------------
    def _integrate(self, state: np.ndarray, step: Callable[[np.ndarray], np.ndarray],
                   store_bytes: int) -> np.ndarray:
        """Run ``n_steps`` of ``step`` from ``state`` [K] (complex), storing every
        stride-th state within ``store_bytes`` and the final one; returns it."""
        n_steps = self.n_steps
        self.stride = max(1, math.ceil((n_steps + 1) * state.size * 16 / store_bytes))
        n_store = n_steps // self.stride + 1
        slices = np.empty((n_store, state.size), dtype=np.complex128)    # [n_store, K]
        slices[0] = state
        for n in range(1, n_steps + 1):
            state = step(state)
            if n % self.stride == 0:
                slices[n // self.stride] = state
        if n_steps % self.stride:                                        # keep the final time too
            slices = np.concatenate([slices, state[None]], axis=0)
            times = np.append(np.arange(n_store) * self.stride * self.dt, self.t_final)
        else:
            times = np.arange(n_store) * self.stride * self.dt
            times[-1] = self.t_final
        slices.setflags(write=False)
        times.setflags(write=False)
        self._slices, self.times = slices, times
        return state

    # -- any time --------------------------------------------------------------------
    def _states_at(self, t) -> np.ndarray:
        """States at each time in ``t`` -> complex [len(t), K]."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64)).ravel()
        if not np.all(np.isfinite(t)):
            raise ValueError("t must be finite")
        tol = 1e-12 * self.t_final
        if np.any(t < -tol) or np.any(t > self.t_final + tol):
            raise ValueError(f"t must lie in [0, {self.t_final}]")
        t = np.clip(t, 0.0, self.t_final)
        span = self.stride * self.dt
        j = np.clip(np.floor(t / span + 1e-9).astype(np.int64), 0, len(self.times) - 1)
        delta = t - self.times[j]
        delta[np.abs(delta) <= tol] = 0.0
        m = np.where(delta == 0.0, 0, np.ceil(np.abs(delta) / self.dt - 1e-9).astype(np.int64))
        m = np.where(delta != 0.0, np.maximum(m, 1), 0)
        out = self._slices[j]                     # fancy indexing: a fresh, writable copy
        rows = max(1, BLOCK_ELEMENTS // self._slices.shape[1])
        for substeps in np.unique(m[m > 0]):
            sel = np.flatnonzero(m == substeps)
            for s in range(0, sel.size, rows):
                block = sel[s:s + rows]
                out[block] = self._advance(out[block], (delta[block] / substeps)[:, None], int(substeps))
        return out

    def _series(self, x: np.ndarray, t: np.ndarray, coefficients: Callable[[np.ndarray], np.ndarray],
                basis: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """sum_k coefficients(t)[k] basis(x)[k] at the points (x, t) (1-D, equal
        length) -> complex [N]; ``coefficients``: times [n] -> [n, K],
        ``basis``: x [n] -> [n, K]."""
        out = np.empty(x.shape, dtype=np.complex128)
        if x.size == 0:
            return out
        ut, inv_t = np.unique(t, return_inverse=True)
        ux, inv_x = np.unique(x, return_inverse=True)
        coef = coefficients(ut)                                           # [n_ut, K]
        if ut.size * ux.size <= 4 * x.size + 4096:
            # tensor-like point sets (grids): one table, then gather
            table = coef @ basis(ux).T                                    # [n_ut, n_ux]
            out[:] = table[inv_t, inv_x]
        else:
            rows = max(1, BLOCK_ELEMENTS // coef.shape[1])
            for s in range(0, x.size, rows):
                sl = slice(s, s + rows)
                out[sl] = np.einsum("ij,ij->i", coef[inv_t[sl]], basis(x[sl]))
        return out
