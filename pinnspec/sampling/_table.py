"""Coefficient tables: one value column given on the points of a file, interpolated anywhere.

    columns = table_columns(read_file_columns(path), space, time, column=None)   # which column is what
    points, values = load_table(path, columns)                                    # [N, k], [N]
    interpolate = table_interpolator(path, columns, "linear")                     # read once per file
    interpolate(x)                                                                # [M, k] -> [M]

Interpolation (numpy/scipy on the host, float64):

* one coordinate, ``linear``: ``np.interp`` (the end values beyond the ends);
* rows that form a full tensor-product grid, ``linear``: multilinear on the grid
  (``scipy.interpolate.RegularGridInterpolator``), a query clamped to the grid's box;
* scattered rows, ``linear``: linear on the Delaunay triangulation
  (``scipy.interpolate.LinearNDInterpolator``), the nearest row's value outside the convex hull;
* ``nearest``: the value of the nearest row (``scipy.spatial.cKDTree``, Euclidean distance in the
  coordinates' own units).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from ._data import FileColumns, _by_name, _read_table, _stack
from ._datafile import DataFileError, listed

__all__ = ["METHODS", "TableColumns", "TableColumnError", "TableInterpolator", "load_table", "table_columns",
           "table_interpolator"]

#: interpolation methods of ``table(..., method = ...)``; the first is the default
METHODS = ("linear", "nearest")


class TableColumnError(DataFileError):
    """A table's columns do not fit the spec (``PATH:LINE: reason``, the line naming the columns);
    ``argument`` names what the message is about: "file" or "column"."""

    def __init__(self, layout: FileColumns, reason: str, argument: str = "file"):
        super().__init__(layout.source, reason, layout.header_line)
        self.argument = argument


@dataclass(frozen=True)
class TableColumns:
    """What the columns of a table file hold: ``coordinate_columns[i]`` holds the spec coordinate
    ``coordinates[i]`` (coordinate order); ``value_column`` holds the values."""

    coordinates: tuple[str, ...]
    coordinate_columns: tuple[str, ...]
    value_column: str


def table_columns(layout: FileColumns, space: Sequence[str], time: str | None,
                  column: str | None = None) -> TableColumns:
    """Match a file's columns to the spec's coordinates: by name (the same name, else the same ignoring
    case), the table spanning the space coordinates and, when the file has a column for it, time; else by
    order (the space coordinates[, time], then the value column).  The value column is ``column`` when
    given, else the one column left.  TableColumnError says what does not fit (also when the spec has no
    coordinates: a table has nothing to span)."""
    names = layout.names
    if not space and not time:
        raise TableColumnError(layout, "a table's values vary over the spec's coordinates, and the spec declares "
                               "none: add a 'space' or 'time' line")
    value = None
    if column is not None:
        value = _by_name(column, names, layout)
        if value is None:
            raise TableColumnError(layout, f"no column '{column}' (the file's columns are: {listed(names)})",
                                   "column")
    candidates = [n for n in names if n != value]
    found = {c: _by_name(c, candidates, layout) for c in [*space, *([time] if time else [])]}
    if time and found[time] is None and layout.time_column in candidates:
        found[time] = layout.time_column  # a COMSOL export marks its time column
    for coordinate in found:
        if value is not None and _by_name(coordinate, names, layout) == value:
            raise TableColumnError(layout, f"column = \"{column}\" names the column of the coordinate "
                                   f"'{coordinate}': choose the column of values", "column")
    named = [c for c, col in found.items() if col is not None]
    if space and all(found[c] is not None for c in space) or not space and time and found[time] is not None:
        coordinates = [c for c in found if found[c] is not None]
        coordinate_columns = [found[c] for c in coordinates]
    elif named:
        missing = next(c for c in found if found[c] is None and (c in space))
        raise TableColumnError(layout, f"no column '{missing}' (the coordinate '{missing}'; the file's columns "
                               f"are: {listed(names)}); a table spans the space coordinates ({', '.join(space)}), "
                               f"optionally with time")
    else:  # no column is named for a coordinate: by order
        coordinates, coordinate_columns = _by_order(layout, candidates, space, time, column is not None)
    if value is None:
        rest = [n for n in names if n not in coordinate_columns]
        if not rest:
            raise TableColumnError(layout, f"no value column: the file's columns ({listed(names)}) are the "
                                   f"coordinates {', '.join(coordinates)}; add a column of values")
        if len(rest) > 1:
            raise TableColumnError(layout, f"several value columns ({listed(rest)}): choose one with "
                                   f"column = \"{rest[0]}\"")
        value = rest[0]
    return TableColumns(tuple(coordinates), tuple(coordinate_columns), value)


def _by_order(layout: FileColumns, candidates: list[str], space: Sequence[str], time: str | None,
              value_given: bool) -> tuple[list[str], list[str]]:
    spans = [list(space)] if space else []
    if time:
        spans.append([*space, time])
    extra = 0 if value_given else 1  # the last column holds the values
    for coordinates in spans:
        if len(candidates) == len(coordinates) + extra:
            return coordinates, candidates[:len(coordinates)]
    first = spans[0]
    counts = " or ".join(str(len(c) + extra) for c in spans)
    what = " or ".join("(" + ", ".join(c + (["value"] if extra else [])) + ")" for c in spans)
    raise TableColumnError(layout, f"no column named for the coordinate '{first[0]}' (the file's columns are: "
                           f"{listed(layout.names)}); matched by order it needs {counts} columns {what}, and it has "
                           f"{len(candidates) + (1 - extra)}")


def load_table(path: str | os.PathLike, columns: TableColumns) -> tuple[np.ndarray, np.ndarray]:
    """``(points [N, k], values [N])`` float64 of a table file, checked: numbers, finite, at least two
    distinct values of every coordinate, no two rows at one point.  DataFileError says what is wrong."""
    path = os.fspath(path)
    data, layout = _read_table(path)
    mapping = dict(zip(columns.coordinates, columns.coordinate_columns))
    mapping[columns.value_column] = columns.value_column
    points, values = _stack(layout, data, mapping, len(columns.coordinates), "a table")  # [N, k], [N, 1]
    for j, name in enumerate(columns.coordinates):
        if len(np.unique(points[:, j])) < 2:
            raise DataFileError(path, f"every row has {name} = {points[0, j]:g}: a table over {name} needs at "
                                f"least two values of it")
    distinct, first, counts = np.unique(points, axis=0, return_index=True, return_counts=True)
    if len(distinct) < len(points):
        row = int(first[np.argmax(counts > 1)])
        at = ", ".join(f"{n} = {v:g}" for n, v in zip(columns.coordinates, points[row]))
        raise DataFileError(path, f"two rows at the same point ({at}); expected one value per point")
    return points, values[:, 0]


class TableInterpolator:
    """``(x [M, k]) -> [M]``: the table's values at ``x``, interpolated by ``method`` (module docstring)."""

    def __init__(self, points: np.ndarray, values: np.ndarray, method: str = "linear"):
        if method not in METHODS:
            raise ValueError(f"unknown interpolation method '{method}' (methods: {', '.join(METHODS)})")
        points = np.asarray(points, dtype=np.float64)  # [N, k]
        values = np.asarray(values, dtype=np.float64)  # [N]
        self.method = method
        self.dim = points.shape[1]
        self.layout = "nearest"
        if method == "nearest":
            from scipy.spatial import cKDTree

            self._tree = cKDTree(points)
            self._values = values
            return
        if self.dim == 1:
            order = np.argsort(points[:, 0])
            self._xp, self._fp = points[order, 0], values[order]  # [N], [N]
            self.layout = "1-d"
            return
        axes = grid_axes(points)
        if axes is not None:
            from scipy.interpolate import RegularGridInterpolator

            shape = tuple(len(a) for a in axes)
            flat = np.ravel_multi_index(tuple(np.searchsorted(a, points[:, j]) for j, a in enumerate(axes)), shape)
            grid = np.empty(math.prod(shape))
            grid[flat] = values
            self._grid = RegularGridInterpolator(axes, grid.reshape(shape), method="linear")
            self._lo = np.array([a[0] for a in axes])  # [k]
            self._hi = np.array([a[-1] for a in axes])  # [k]
            self.layout = "grid"
            return
        from scipy.interpolate import LinearNDInterpolator
        from scipy.spatial import Delaunay, QhullError, cKDTree

        try:
            triangulation = Delaunay(points)
        except QhullError:
            raise ValueError("the table's points lie on a lower-dimensional set and cannot be triangulated "
                             "for linear interpolation: use method = nearest") from None
        self._linear = LinearNDInterpolator(triangulation, values)
        self._tree = cKDTree(points)
        self._values = values
        self.layout = "scattered"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64).reshape(-1, self.dim)  # [M, k]
        if self.layout == "nearest":
            return self._values[self._tree.query(x)[1]]
        if self.layout == "1-d":
            return np.interp(x[:, 0], self._xp, self._fp)
        if self.layout == "grid":
            return self._grid(np.clip(x, self._lo, self._hi))
        out = self._linear(x)  # [M], NaN outside the convex hull
        outside = np.isnan(out)
        if outside.any():
            out[outside] = self._values[self._tree.query(x[outside])[1]]
        return out


def grid_axes(points: np.ndarray) -> list[np.ndarray] | None:
    """The sorted axes of the tensor-product grid the rows of ``points`` [N, k] form (every combination of
    the coordinates' distinct values exactly once), else None.  Rows are distinct (`load_table`)."""
    axes = [np.unique(points[:, j]) for j in range(points.shape[1])]
    return axes if math.prod(len(a) for a in axes) == len(points) else None


@lru_cache(maxsize=32)
def _cached_interpolator(path: str, stamp: tuple[int, int], columns: TableColumns, method: str) -> TableInterpolator:
    points, values = load_table(path, columns)
    return TableInterpolator(points, values, method)


def table_interpolator(path: str | os.PathLike, columns: TableColumns, method: str) -> TableInterpolator:
    """The interpolator of a table file, read and built once per file version (``check`` and the
    compiled problem share it)."""
    path = os.path.abspath(os.fspath(path))
    stat = os.stat(path)
    return _cached_interpolator(path, (stat.st_mtime_ns, stat.st_size), columns, method)
