"""The interface every reference generator returns (numpy only, no torch).

A reference generator is a callable ``make(**kwargs)`` (the keyword arguments
are what a ``.pinn`` file may pass: ``reference cole_hopf_burgers(nu = nu)``)
returning a :class:`GridReference`:

* ``.fields``       tuple of field names, in output-column order;
* ``.coordinates``  tuple of coordinate names, space then time: ``('x', 't')``;
* ``ref(points)``   ``points``: float64 array ``[N, d]`` (columns in
  ``.coordinates`` order) -> float64 array ``[N, len(fields)]``;
* ``.grid()``       the default test points ``[N, d]``: the tensor grid of
  :meth:`grid_axes`, flattened with **t varying slowest** (row
  ``i_t * nx + i_x`` holds ``(x[i_x], t[i_t])``), so
  ``ref(ref.grid()).reshape(nt, nx, n_fields)`` is the field on the grid.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GridReference", "tensor_grid"]


def tensor_grid(*axes: np.ndarray) -> np.ndarray:
    """Points ``[prod(len(a)), len(axes)]`` of the tensor grid of 1-D ``axes``
    (given in coordinate order), the LAST axis varying slowest.

    With ``axes = (x, t)`` row ``i_t * len(x) + i_x`` is ``(x[i_x], t[i_t])``.
    """
    axes = [np.asarray(a, dtype=np.float64).ravel() for a in axes]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")  # slowest axis first
    return np.stack([m.ravel() for m in mesh[::-1]], axis=1)


class GridReference:
    """Base class: point evaluation plus a default tensor test grid.

    Subclasses set ``fields``, ``coordinates`` and implement ``_evaluate(x, t)``
    (1-D float64 arrays of equal length -> ``[N, n_fields]``) and
    ``grid_axes()``.
    """

    fields: tuple[str, ...] = ()
    coordinates: tuple[str, ...] = ("x", "t")

    # -- to implement ---------------------------------------------------------------
    def _evaluate(self, x: np.ndarray, t: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def grid_axes(self) -> tuple[np.ndarray, ...]:  # pragma: no cover
        """The 1-D axes of the default test grid, in coordinate order."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------
    def __call__(self, points) -> np.ndarray:
        pts = np.asarray(points, dtype=np.float64)
        d = len(self.coordinates)
        if pts.ndim != 2 or pts.shape[1] != d:
            raise ValueError(
                f"points must be an array [N, {d}] with columns {self.coordinates}, "
                f"got shape {pts.shape}"
            )
        if not np.all(np.isfinite(pts)):
            raise ValueError("points contain NaN or infinity")
        if pts.shape[0] == 0:
            return np.empty((0, len(self.fields)), dtype=np.float64)
        cols = [np.ascontiguousarray(pts[:, j]) for j in range(d)]
        out = np.asarray(self._evaluate(*cols), dtype=np.float64)
        return out.reshape(pts.shape[0], len(self.fields))

    def grid(self) -> np.ndarray:
        """Default test points ``[N, d]``, t varying slowest (see module doc)."""
        return tensor_grid(*self.grid_axes())

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Shape of the grid with the slowest axis first: ``(nt, nx)``."""
        return tuple(len(a) for a in self.grid_axes()[::-1])

    def grid_values(self) -> np.ndarray:
        """``self(self.grid())`` reshaped to ``(nt, nx, n_fields)``."""
        return self(self.grid()).reshape(*self.grid_shape, len(self.fields))
