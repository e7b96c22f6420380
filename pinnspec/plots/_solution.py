"""solution.png: reference / prediction / |error| for each field, from predictions.npz (the
prediction alone when the problem has no reference solution).

What is drawn depends on the test points (``points [N, d]``):

* d = 1: the reference and the prediction as lines (one panel), |error| beside.
* d = 2 on a tensor-product grid (the unique values per coordinate multiply to
  N, every combination present once): heatmaps (``pcolormesh``).
* d = 2 scattered: filled contours on a Delaunay triangulation whose overlong
  triangles are dropped (so holes and re-entrant corners stay empty); a
  scatter plot when no triangulation exists.
* d >= 3: the first two coordinates against each other.  On a grid, every
  other coordinate is fixed at its grid value nearest the middle of its range
  (a heatmap); scattered, the points whose other coordinates all lie in the
  middle 20% of their ranges are drawn as a scatter plot.  The figure's
  title says which.

The rel-L2 printed per field is over all test points, not just the slice.

With a ``domain`` in the run's spec (config.pinn) nothing is drawn outside it:
test points outside the domain (rows of a reference file inside a hole, say)
get no value (NaN: blank, and left out of the printed rel-L2); a test grid cut
to the domain is drawn as the full grid with the nodes outside left blank; a
triangle of scattered points whose centroid lies outside is not filled, so
holes and re-entrant corners stay empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._style import fmt, new_figure, no_data, set_title

BAND = 0.2  # scattered d >= 3: the middle fraction of each other coordinate's range
FIELD_CMAP, ERROR_CMAP = "viridis", "magma"


@dataclass
class View:
    """Which test points are drawn, and how."""

    kind: str  # "line" | "grid" | "tri" | "scatter"
    rows: np.ndarray  # [n] indices of the points drawn
    note: str  # what was chosen, for the title
    xs: np.ndarray | None = None  # grid: the unique values of the first coordinate  [nx]
    ys: np.ndarray | None = None  # grid: ... of the second  [ny]
    ix: np.ndarray | None = None  # grid: per drawn row, its index into xs  [n]
    iy: np.ndarray | None = None  # grid: ... into ys  [n]


def grid_of(points: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """(unique values per coordinate, per-point index into them) when the points form a
    full tensor-product grid with at least two values per coordinate; else None."""
    n, d = points.shape
    axes = [np.unique(points[:, j]) for j in range(d)]
    if any(len(a) < 2 for a in axes) or math.prod(len(a) for a in axes) != n:
        return None
    index = [np.searchsorted(a, points[:, j]) for j, a in enumerate(axes)]
    if len(np.unique(np.ravel_multi_index(index, [len(a) for a in axes]))) != n:
        return None  # duplicate points: some combination is missing
    return axes, index


#: a grid cut to a domain is recognised while the full grid has at most this many nodes per point
GRID_FILL = 16


def grid_cut_to(points: np.ndarray, domain) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """As :func:`grid_of` for points that are a tensor-product grid less the nodes not inside ``domain``
    (a ``test grid`` of a spec with a domain): every missing node lies outside the domain or on its
    boundary.  None when the points are not such a grid."""
    n, d = points.shape
    axes = [np.unique(points[:, j]) for j in range(d)]
    sizes = [len(a) for a in axes]
    if any(size < 2 for size in sizes) or math.prod(sizes) > GRID_FILL * n:
        return None
    index = [np.searchsorted(a, points[:, j]) for j, a in enumerate(axes)]
    present = np.zeros(math.prod(sizes), bool)
    flat = np.ravel_multi_index(index, sizes)  # [n]
    present[flat] = True
    if int(present.sum()) != n:
        return None  # duplicate points
    missing = np.stack([a[i] for a, i in zip(axes, np.unravel_index(np.flatnonzero(~present), sizes))], axis=1)
    if len(missing) and domain.shape.inside(missing[:, :domain.shape.dim]).any():
        return None  # a node inside the domain is missing: not a grid cut to it
    return axes, index


def choose_view(points: np.ndarray, coordinates: list[str], domain=None) -> View:
    n, d = points.shape
    if d == 1:
        return View("line", np.argsort(points[:, 0], kind="stable"), f"{n} test points")
    grid = grid_of(points)
    if grid is None and domain is not None:
        grid = grid_cut_to(points, domain)
    if grid is not None:
        axes, index = grid
        shape = " × ".join(str(len(a)) for a in axes)
        keep = np.ones(n, bool)
        fixed = []
        for j in range(2, d):
            middle = 0.5 * (axes[j][0] + axes[j][-1])
            k = int(np.argmin(np.abs(axes[j] - middle)))
            keep &= index[j] == k
            fixed.append(f"{coordinates[j]} = {fmt(axes[j][k], 4)}")
        rows = np.flatnonzero(keep)
        note = f"test grid {shape} ({' × '.join(coordinates)})"
        if fixed:
            note = (f"slice {', '.join(fixed)} (the grid value nearest the middle of its range) "
                    f"of the {note}")
        return View("grid", rows, note, axes[0], axes[1], index[0][rows], index[1][rows])
    if d == 2:
        return View("tri", np.arange(n), f"{n} scattered test points")
    keep = np.ones(n, bool)
    bands = []
    for j in range(2, d):
        lo, hi = float(points[:, j].min()), float(points[:, j].max())
        middle, half = 0.5 * (lo + hi), 0.5 * BAND * (hi - lo)
        keep &= np.abs(points[:, j] - middle) <= half
        bands.append(f"{fmt(middle - half)} ≤ {coordinates[j]} ≤ {fmt(middle + half)}")
    rows = np.flatnonzero(keep)
    return View("scatter", rows, f"scattered test points with {', '.join(bands)} (the middle "
                                 f"{BAND:.0%} of each range): {len(rows)} of {n}, by "
                                 f"{coordinates[0]} and {coordinates[1]}")


def _limits(*arrays: np.ndarray) -> tuple[float, float] | None:
    values = np.concatenate([a[np.isfinite(a)] for a in arrays])
    if not len(values):
        return None
    lo, hi = float(values.min()), float(values.max())
    if not hi > lo:
        pad = 1e-12 + 1e-9 * abs(lo)
        lo, hi = lo - pad, hi + pad
    return lo, hi


def _triangulation(x: np.ndarray, y: np.ndarray, domain=None):
    """Delaunay triangles of scattered points, less those that bridge holes and concave boundaries:
    with a ``domain``, the triangles whose centroid lies outside it; without one, the overlong
    triangles.  None when there is no triangle."""
    from matplotlib.tri import Triangulation

    if len(x) < 3:
        return None
    sx, sy = np.ptp(x) or 1.0, np.ptp(y) or 1.0
    try:
        tri = Triangulation(x / sx, y / sy)
    except (ValueError, RuntimeError):  # collinear points: qhull finds no triangle
        return None
    if domain is not None:
        centroids = np.stack([x[tri.triangles].mean(axis=1), y[tri.triangles].mean(axis=1)], axis=1)  # [T, 2]
        return Triangulation(x, y, tri.triangles, mask=outside(domain, centroids))
    corners = np.stack([tri.x[tri.triangles], tri.y[tri.triangles]], axis=-1)  # [T, 3, 2]
    edges = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=-1).max(axis=1)  # [T]
    tri.set_mask(edges > 5 * np.median(edges))
    return Triangulation(x, y, tri.triangles, mask=tri.mask)


def outside(domain, points: np.ndarray) -> np.ndarray:
    """``[N]`` bool: the rows of ``points`` ``[N, d]`` (space columns first) clearly outside ``domain``."""
    return domain.shape.outside(points[:, :domain.shape.dim])


def masked_outside(run) -> tuple[np.ndarray | None, np.ndarray, int]:
    """(reference, prediction) of the run's test points with NaN at the points outside its domain, and
    how many those are (0 without a domain)."""
    pred = run.predictions
    if run.domain is None:
        return pred.reference, pred.prediction, 0
    out = outside(run.domain, pred.points)  # [N]
    if not out.any():
        return pred.reference, pred.prediction, 0
    prediction = np.where(out[:, None], np.nan, pred.prediction)  # [N, F]
    reference = None if pred.reference is None else np.where(out[:, None], np.nan, pred.reference)
    return reference, prediction, int(out.sum())


def _domain_note(run, dropped: int) -> str:
    if run.domain is None:
        return ""
    note = f"; blank outside the domain '{run.domain.name}'"
    if dropped:
        note += f" ({dropped} test points there not drawn)"
    return note


def _line_with_gaps(x: np.ndarray, values: np.ndarray, domain) -> tuple[np.ndarray, np.ndarray]:
    """A 1-d line's sorted ``x`` ``[n]`` and ``values`` ``[n]`` with a NaN break wherever the midpoint of two
    neighbours lies outside ``domain`` (the line does not run across a gap of it)."""
    if domain is None or len(x) < 2:
        return x, values
    gaps = np.flatnonzero(outside(domain, (0.5 * (x[1:] + x[:-1]))[:, None])) + 1
    return np.insert(x, gaps, np.nan), np.insert(values, gaps, np.nan)


def _draw_2d(fig, ax, view: View, points, values, limits, cmap, tri):
    if limits is None:
        no_data(ax, "no finite values")
        return
    lo, hi = limits
    x, y = points[view.rows, 0], points[view.rows, 1]
    v = values[view.rows]
    if view.kind == "grid":
        image = np.full((len(view.xs), len(view.ys)), np.nan)
        image[view.ix, view.iy] = v
        mappable = ax.pcolormesh(view.xs, view.ys, image.T, shading="nearest", cmap=cmap, vmin=lo, vmax=hi)
    elif view.kind == "tri" and tri is not None:
        finite = np.isfinite(v)
        if not finite.all():
            bad = ~finite[tri.triangles].all(axis=1)
            tri.set_mask(bad if tri.mask is None else (tri.mask | bad))
        mappable = ax.tricontourf(tri, np.where(finite, v, lo), levels=np.linspace(lo, hi, 41), cmap=cmap,
                                  extend="neither")
    else:
        size = float(np.clip(20000 / max(len(v), 1), 1.5, 30))
        mappable = ax.scatter(x, y, c=v, s=size, cmap=cmap, vmin=lo, vmax=hi, linewidths=0)
        if len(x):
            ax.set_xlim(points[:, 0].min(), points[:, 0].max())
            ax.set_ylim(points[:, 1].min(), points[:, 1].max())
    from matplotlib.ticker import MaxNLocator

    fig.colorbar(mappable, ax=ax, shrink=0.95, ticks=MaxNLocator(6))  # not the 41 contour levels


def _view_and_triangles(points: np.ndarray, coordinates: list[str], domain=None):
    """The view of the test points and, for scattered 2-d points, their triangulation."""
    view = choose_view(points, coordinates, domain)
    tri = None
    if view.kind == "tri":
        tri = _triangulation(points[view.rows, 0], points[view.rows, 1], domain)
        if tri is None:
            view.note += " (no triangulation: scatter)"
    return view, tri


def prediction_figure(run):
    """No reference solution: the prediction of each field alone, up to three panels a row."""
    pred = run.predictions
    points, coordinates = pred.points, pred.coordinates
    _, prediction, dropped = masked_outside(run)
    view, tri = _view_and_triangles(points, coordinates, run.domain)
    view.note += _domain_note(run, dropped)
    F = prediction.shape[1]
    ncols = min(F, 3)
    fig = new_figure(max(8.0, 4.8 * ncols), 3.4 * math.ceil(F / ncols) + 1.6)
    axes = np.asarray(fig.subplots(math.ceil(F / ncols), ncols, squeeze=False)).ravel()
    set_title(fig, run, "solution",
              extra=f"the prediction alone (no reference solution, so no error panel); {view.note}")
    rows = view.rows
    for f, (ax, name) in enumerate(zip(axes, pred.fields)):
        ax.set_title(f"{name}: prediction", fontsize=9)
        if view.kind == "line":
            ax.plot(*_line_with_gaps(points[rows, 0], prediction[rows, f], run.domain), color="tab:red", lw=1.4)
            ax.set_xlabel(coordinates[0])
            ax.set_ylabel(name)
            ax.grid(True, alpha=0.3)
        elif not len(rows):
            no_data(ax, "no test points in the slice")
        else:
            _draw_2d(fig, ax, view, points, prediction[:, f], _limits(prediction[rows, f]), FIELD_CMAP, tri)
            ax.set_xlabel(coordinates[0])
            ax.set_ylabel(coordinates[1])
    for ax in axes[F:]:
        ax.set_visible(False)
    return fig


def solution_figure(run):
    pred = run.predictions
    if pred.reference is None:
        return prediction_figure(run)
    points = pred.points
    reference, prediction, dropped = masked_outside(run)
    coordinates, fields = pred.coordinates, pred.fields
    view, tri = _view_and_triangles(points, coordinates, run.domain)
    view.note += _domain_note(run, dropped)
    error = np.abs(prediction - reference)  # [N, F]

    F = reference.shape[1]
    ncols = 2 if view.kind == "line" else 3
    fig = new_figure(11 if ncols == 2 else 14, 3.1 * F + 1.4)
    axes = np.asarray(fig.subplots(F, ncols, squeeze=False))
    set_title(fig, run, "solution", extra=view.note)
    for f, name in enumerate(fields):
        ok = np.isfinite(reference[:, f]) & np.isfinite(prediction[:, f])
        norm = float(np.linalg.norm(reference[ok, f]))
        rel = float(np.linalg.norm(error[ok, f]) / norm) if norm > 0 else None
        where = "all test points" if not dropped else "the test points inside the domain"
        stats = f"rel-L2 {fmt(rel)}, max {fmt(error[ok, f].max() if ok.any() else None)} ({where})"
        rows = view.rows
        if view.kind == "line":
            x = points[rows, 0]
            ax, ax_err = axes[f]
            ax.plot(*_line_with_gaps(x, reference[rows, f], run.domain), color="black", lw=2, label="reference")
            ax.plot(*_line_with_gaps(x, prediction[rows, f], run.domain), color="tab:red", lw=1.4, ls="--",
                    label="prediction")
            ax.set_title(f"{name}: reference and prediction", fontsize=9)
            ax.set_xlabel(coordinates[0])
            ax.set_ylabel(name)
            ax.legend(fontsize=8)
            ax_err.plot(*_line_with_gaps(x, error[rows, f], run.domain), color="tab:purple", lw=1.2)
            ax_err.set_title(f"{name}: |error|  —  {stats}", fontsize=9)
            ax_err.set_xlabel(coordinates[0])
            ax_err.set_ylabel(f"|{name} error|")
            for a in (ax, ax_err):
                a.grid(True, alpha=0.3)
            continue
        limits = _limits(reference[rows, f], prediction[rows, f])
        error_limits = _limits(error[rows, f])
        if error_limits is not None:
            error_limits = (0.0, max(error_limits[1], 1e-300))
        panels = ((reference[:, f], limits, FIELD_CMAP, "reference"),
                  (prediction[:, f], limits, FIELD_CMAP, "prediction"),
                  (error[:, f], error_limits, ERROR_CMAP, "|error|"))
        for ax, (values, lim, cmap, what) in zip(axes[f], panels):
            if not len(rows):
                no_data(ax, "no test points in the slice")
            else:
                _draw_2d(fig, ax, view, points, values, lim, cmap, tri)
                ax.set_xlabel(coordinates[0])
                ax.set_ylabel(coordinates[1])
            ax.set_title(f"{name}: {what}" + (f"  —  {stats}" if what == "|error|" else ""), fontsize=9)
    return fig
