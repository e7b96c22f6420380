"""Point sets on the regions of a problem, and fixed grids / boxes.

Points are ``[N, d]`` float64 with the columns in the problem's coordinate
order (space coordinates, then time).  A unit-cube sample ``u`` maps to a
coordinate affinely: ``lo + u * (hi - lo)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import ir
from ..registry import SAMPLERS

__all__ = ["PointSet", "sample_region", "face_counts", "grid_points", "box_points", "domain_points", "inside_domain",
           "outside_domain", "farthest_outside", "outside_domain_message", "files_outside_domain"]

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]


@dataclass(frozen=True, eq=False)
class PointSet:
    """The points of one region.

    x:           ``[N, d]`` float64, columns in coordinate order.
    face_slices: for a union of faces, the rows of each face, in the region's
                 face order (``x[face_slices[i]]`` lie on ``region.faces[i]``);
                 None otherwise.
    partner:     for periodic pairs, ``[N, d]``: the matched points at
                 ``coordinate = hi`` (``x`` holds those at ``lo``; every other
                 coordinate is equal); None otherwise.
    observed:    for data points, ``[N, n_fields]``: the observed field
                 columns, in the condition's field order; None otherwise.
    normals:     for parts of a domain's boundary, ``[N, d_space]``: the unit
                 outward normal at each point (space coordinates in order);
                 None otherwise.
    """

    x: np.ndarray
    face_slices: tuple[slice, ...] | None = None
    partner: np.ndarray | None = None
    observed: np.ndarray | None = None
    normals: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.x.shape[0])


# ------------------------------------------------------------------ helpers


def _resolve_sampler(sampler: Sampler | str) -> Sampler:
    if isinstance(sampler, str):
        return SAMPLERS.get(sampler)()
    return sampler


def _index(coordinates: Sequence[ir.Coordinate], name: str, what: str) -> int:
    for i, c in enumerate(coordinates):
        if c.name == name:
            return i
    known = ", ".join(c.name for c in coordinates) or "none"
    raise ValueError(f"{what} names the coordinate '{name}', which is not one of the coordinates ({known})")


def _draw(sampler: Sampler, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    u = np.asarray(sampler(n, k, rng), dtype=np.float64)
    if u.ndim != 2 or u.shape[1] != k:
        raise ValueError(f"the sampler {sampler!r} returned shape {u.shape} for (n={n}, k={k}); expected [N, {k}]")
    return u


def _fill(coordinates: Sequence[ir.Coordinate], free: Sequence[int], u: np.ndarray) -> np.ndarray:
    """``[len(u), d]`` points with columns ``free`` mapped from ``u``; other columns 0."""
    x = np.zeros((u.shape[0], len(coordinates)), dtype=np.float64)
    for j, col in enumerate(free):
        c = coordinates[col]
        lo, hi = min(c.lo, c.hi), max(c.lo, c.hi)
        x[:, col] = np.clip(c.lo + u[:, j] * (c.hi - c.lo), lo, hi)  # no rounding step past an end
    return x


def face_counts(region: ir.FaceRegion, coordinates: Sequence[ir.Coordinate], n: int) -> list[int]:
    """How ``n`` points split across the faces of ``region``: in proportion to
    each face's measure (the product of the other SPACE extents; in 1-D space
    every face is a point and gets an equal share), by the largest-remainder
    method, so the counts add up to ``n`` exactly (ties go to the earlier face)."""
    space = [c for c in coordinates if not c.is_time]
    weights = []
    for face in region.faces:
        _index(coordinates, face.coordinate, f"the face '{face}'")
        weights.append(float(np.prod([c.hi - c.lo for c in space if c.name != face.coordinate])))
    weights = np.abs(np.asarray(weights, dtype=np.float64))
    if not len(weights):
        if n:
            raise ValueError("a face region with no faces cannot hold points")
        return []
    total = weights.sum()
    if not np.isfinite(total) or total <= 0:
        weights = np.ones_like(weights)  # degenerate box: equal shares
        total = weights.sum()
    quota = n * weights / total
    counts = np.floor(quota).astype(np.int64)
    left = n - int(counts.sum())
    order = sorted(range(len(weights)), key=lambda i: (-(quota[i] - counts[i]), i))
    for i in order[:left]:
        counts[i] += 1
    return [int(c) for c in counts]


# ------------------------------------------------------------------ regions


def sample_region(region: ir.Region, coordinates: Sequence[ir.Coordinate], n: int,
                  sampler: Sampler | str, rng: np.random.Generator) -> PointSet:
    """``n`` points of ``region`` (the grid sampler rounds the count, see
    :class:`Grid`).

    * Interior: the space box times the time interval.
    * FaceRegion: the faces times the time interval; ``n`` split across the
      faces by :func:`face_counts`; on each face the fixed coordinate is
      exactly the face value, the others are sampled.
    * InitialSlice: the space box with time exactly ``region.value`` (an ODE,
      with no space coordinates: ``n`` copies of the single point).
    * PeriodicPairs: the other coordinates sampled; ``x`` has the periodic
      coordinate at ``lo``, ``partner`` the same points at ``hi``.

    * DomainInterior: points inside the domain (:func:`pinnspec.geometry.sample_interior`
      with the sampler over the domain's bounding box), times the time interval.
    * DomainBoundary: points uniform by length / area on the selected parts of the
      domain's boundary, with their outward ``normals``
      (:func:`pinnspec.geometry.sample_boundary`), times the time interval.
    * DomainInitialSlice: points inside the domain, time exactly ``region.value``.

    The time column of a domain's points is drawn with the sampler on its own.
    Data points are read, not sampled: see :func:`load_data` / :class:`PointPlan`.
    """
    if int(n) != n or n < 0:
        raise ValueError(f"the number of points must be a whole number >= 0, got {n!r}")
    n = int(n)
    coordinates = tuple(coordinates)
    sampler = _resolve_sampler(sampler)
    d = len(coordinates)

    if isinstance(region, ir.Interior):
        return PointSet(_fill(coordinates, range(d), _draw(sampler, n, d, rng)))

    if isinstance(region, ir.FaceRegion):
        blocks, slices, start = [], [], 0
        for face, count in zip(region.faces, face_counts(region, coordinates, n)):
            fixed = _index(coordinates, face.coordinate, f"the face '{face}'")
            free = [i for i in range(d) if i != fixed]
            x = _fill(coordinates, free, _draw(sampler, count, d - 1, rng))
            x[:, fixed] = face.value
            blocks.append(x)
            slices.append(slice(start, start + len(x)))
            start += len(x)
        x = np.concatenate(blocks, axis=0) if blocks else np.empty((0, d))
        return PointSet(np.ascontiguousarray(x), face_slices=tuple(slices))

    if isinstance(region, ir.InitialSlice):
        fixed = _index(coordinates, region.time, f"the {region}")
        free = [i for i in range(d) if i != fixed]
        x = _fill(coordinates, free, _draw(sampler, n, d - 1, rng))
        x[:, fixed] = region.value
        return PointSet(x)

    if isinstance(region, ir.PeriodicPairs):
        fixed = _index(coordinates, region.coordinate, f"the {region}")
        free = [i for i in range(d) if i != fixed]
        x = _fill(coordinates, free, _draw(sampler, n, d - 1, rng))
        partner = x.copy()
        x[:, fixed] = region.lo
        partner[:, fixed] = region.hi
        return PointSet(x, partner=partner)

    if isinstance(region, (ir.DomainInterior, ir.DomainBoundary, ir.DomainInitialSlice)):
        return _domain_points(region, coordinates, n, sampler, rng)

    if isinstance(region, ir.DataPoints):
        raise ValueError(f"{region}: data points are read from the file, not sampled (use load_data or PointPlan)")
    raise TypeError(f"not a region: {region!r}")


def _domain_points(region, coordinates: tuple[ir.Coordinate, ...], n: int, sampler: Sampler,
                   rng: np.random.Generator) -> PointSet:
    """Points of a region of a domain: space columns from the geometry, then the time column."""
    from .. import geometry

    shape = region.domain.shape
    space = [i for i, c in enumerate(coordinates) if not c.is_time]
    if space != list(range(shape.dim)):
        raise ValueError(f"{region}: the domain has {shape.dim} space coordinates, and the problem's coordinates "
                         f"are {', '.join(c.name for c in coordinates)} (space ones first)")
    normals = None
    if isinstance(region, ir.DomainBoundary):
        x_space, normals, _ = geometry.sample_boundary(shape, n, rng, parts=region.parts)
    else:
        x_space = geometry.sample_interior(shape, n, rng, sampler=sampler)
    x = np.zeros((n, len(coordinates)), dtype=np.float64)
    x[:, :shape.dim] = x_space
    times = [i for i, c in enumerate(coordinates) if c.is_time]
    if times:
        if isinstance(region, ir.DomainInitialSlice):
            x[:, times[0]] = region.value
        else:
            x[:, times[0]] = _fill(coordinates, times, _draw(sampler, n, 1, rng))[:, times[0]]
    return PointSet(np.ascontiguousarray(x), normals=None if normals is None else np.ascontiguousarray(normals))


def domain_points(domain: ir.Domain, coordinates: Sequence[ir.Coordinate], n: int,
                  rng: np.random.Generator | int | None) -> np.ndarray:
    """``n`` points inside ``domain`` (LHS over its bounding box, times the time interval): the test and
    validation sets of a problem with a domain.  ``rng`` may be a Generator or a seed."""
    return sample_region(ir.DomainInterior(domain), coordinates, n, SAMPLERS.get("lhs")(),
                         np.random.default_rng(rng)).x


def inside_domain(domain: ir.Domain, points: np.ndarray) -> np.ndarray:
    """The rows of ``points`` ``[N, d]`` (space columns first) strictly inside ``domain``."""
    return points[domain.shape.inside(points[:, :domain.shape.dim])]


def outside_domain(domain: ir.Domain, points: np.ndarray) -> np.ndarray:
    """``[N]`` bool: the rows of ``points`` ``[N, d]`` (space columns first) clearly outside ``domain``:
    past its boundary by more than 1e-6 of its bounding box's diameter (``Shape.outside``), so nodes of a
    mesh that lie on a rim up to rounding are not."""
    points = np.asarray(points, dtype=np.float64)
    return domain.shape.outside(points[:, :domain.shape.dim])


def farthest_outside(domain: ir.Domain, coordinates: Sequence[ir.Coordinate],
                     points: np.ndarray) -> tuple[int, str] | None:
    """None when no row of ``points`` ``[N, d]`` lies outside ``domain`` (:func:`outside_domain`); else
    (how many do, the farthest one for a message: ``"(x = 0.2, y = 0.2), 0.15 past its boundary"``)."""
    points = np.asarray(points, dtype=np.float64)
    outside = outside_domain(domain, points)  # [N]
    count = int(outside.sum())
    if not count:
        return None
    distance = domain.shape.sdf(points[:, :domain.shape.dim])  # [N]
    far = int(np.argmax(np.where(outside, distance, -np.inf)))
    at = ", ".join(f"{c.name} = {points[far, j]:.6g}" for j, c in enumerate(coordinates))
    return count, f"({at}), {distance[far]:.3g} past its boundary"


def outside_domain_message(domain: ir.Domain, coordinates: Sequence[ir.Coordinate], points: np.ndarray,
                           what: str) -> str | None:
    """None when every row of ``points`` ``[N, d]`` lies in ``domain`` (or on its boundary); else one
    sentence for the user: ``what`` (e.g. "the reference file 'ref.dat'"), how many of its rows lie
    outside, and the farthest one with its coordinates and how far out it is."""
    found = farthest_outside(domain, coordinates, points)
    if found is None:
        return None
    count, example = found
    rows = "row lies" if count == 1 else "rows lie"
    return (f"{what}: {count} of {len(points)} {rows} outside the domain '{domain.name}' "
            f"({domain.expression}), the farthest at {example}: nothing is trained there (inside a hole, "
            f"say), so values there are not the solution's; check the file's coordinates against the domain, "
            f"or leave those rows out")


def files_outside_domain(problem: ir.Problem, *, reference_points: Callable[[], np.ndarray] | None = None,
                         data_points: Callable[[ir.DataPoints], np.ndarray] | None = None) -> list[str]:
    """One message (:func:`outside_domain_message`) for the reference file and for each data file of
    ``problem`` with rows outside its domain; none without a ``domain``.  The files are read here unless
    the caller has them: ``reference_points()`` gives the reference file's points ``[N, d]``,
    ``data_points(region)`` a data condition's.  A file that cannot be read is left to the code that
    reads it for training (its errors name the file there)."""
    if problem.domain is None:
        return []
    from ._data import load_data, load_reference

    def path_of(path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(problem.source_dir or ".", path)

    def read_reference() -> np.ndarray:
        return load_reference(path_of(problem.reference.path), problem.coordinates, problem.fields)[0]

    def read_data(region: ir.DataPoints) -> np.ndarray:
        return load_data(path_of(region.path), problem.coordinates, region.fields)[0]

    files: list[tuple[str, Callable[[], np.ndarray]]] = []
    if isinstance(problem.reference, ir.FileReference):
        files.append((f"the reference file '{problem.reference.path}'", reference_points or read_reference))
    for condition in problem.conditions:
        if isinstance(condition.region, ir.DataPoints):
            region = condition.region
            files.append((f"the data file '{region.path}' (condition '{condition.name}')",
                          lambda region=region: (data_points or read_data)(region)))
    messages = []
    for what, read in files:
        try:
            points = read()
        except (OSError, ValueError):
            continue
        message = outside_domain_message(problem.domain, problem.coordinates, points, what)
        if message:
            messages.append(message)
    return messages


# ------------------------------------------------------------------ fixed sets


def grid_points(coordinates: Sequence[ir.Coordinate], counts: Sequence[int]) -> np.ndarray:
    """The tensor grid ``[prod(counts), d]``: ``np.linspace(lo, hi, count)``
    per coordinate (both ends included; a count of 1 gives ``lo``), the
    columns in coordinate order, the LAST coordinate varying fastest
    (``indexing='ij'``: row ``i*n2 + j`` is ``(x_i, t_j)`` for ``(x, t)``)."""
    coordinates = tuple(coordinates)
    counts = tuple(counts)
    if len(counts) != len(coordinates):
        raise ValueError(f"a grid needs one count per coordinate ({len(coordinates)}: "
                         f"{', '.join(c.name for c in coordinates)}), got {len(counts)}")
    for c, m in zip(coordinates, counts):
        if int(m) != m or m < 1:
            raise ValueError(f"the grid count for '{c.name}' must be a whole number >= 1, got {m!r}")
    axes = [np.linspace(c.lo, c.hi, int(m), dtype=np.float64) for c, m in zip(coordinates, counts)]
    return _tensor_grid(axes)


def _tensor_grid(axes: Sequence[np.ndarray]) -> np.ndarray:
    """Every combination of the axes' values ``[prod(len), d]``, the last axis varying fastest."""
    if not axes:
        return np.empty((1, 0), dtype=np.float64)
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.ascontiguousarray(np.stack([g.reshape(-1) for g in mesh], axis=1))


def uniform_interior_points(coordinates: Sequence[ir.Coordinate], n: int) -> np.ndarray:
    """About ``n`` points on a grid strictly inside the box, as DeepXDE's ``uniform_points(n, boundary=False)``
    places them (PINNacle scores its cases with an exact solution there), rows in the order of `grid_points`.

    Space alone (d coordinates, volume V): spacing h = (V / n)^(1/d), each coordinate of length L gets
    ceil(L / h) points spaced L / (ceil(L / h) + 1) inside it.  With time, over [t0, t1]: the space part gets
    n_x = ceil(sqrt(n * V_box / (t1 - t0))) points that way and time n_t = ceil(n / n_x) points t1 - k (t1 - t0)
    / n_t, k = 0 .. n_t - 1 (the final time in, the initial out).  So n = 20,000 on [0, 1]^2 x [0, 5] gives
    8 x 8 x 313 points: x, y at k/9 and t = 5, 5 - 5/313, ...  The counts follow DeepXDE's float arithmetic."""
    coordinates = tuple(coordinates)
    if int(n) != n or n < 1:
        raise ValueError(f"the number of uniform points must be a whole number >= 1, got {n!r}")
    time = [c for c in coordinates if c.is_time]
    space = [c for c in coordinates if not c.is_time] or time  # time alone: an interval like a space coordinate
    time = time if space is not time else []
    volume = float(np.prod([c.hi - c.lo for c in space]))
    n_space = int(np.ceil((n * volume / (time[0].hi - time[0].lo)) ** 0.5)) if time else int(n)
    axes = {}
    spacing = (volume / n_space) ** (1 / len(space))
    for c in space:
        # 1-D: DeepXDE's interval takes n_space points itself (the formula's ceil(L / h) up to rounding)
        k = n_space if len(space) == 1 else int(np.ceil((c.hi - c.lo) / spacing))
        axes[c.name] = np.linspace(c.lo, c.hi, num=k + 1, endpoint=False, dtype=np.float64)[1:]
    if time:
        t, n_time = time[0], int(np.ceil(n / n_space))
        axes[t.name] = np.linspace(t.hi, t.lo, num=n_time, endpoint=False, dtype=np.float64)[::-1]
    return _tensor_grid([axes[c.name] for c in coordinates])


def box_points(coordinates: Sequence[ir.Coordinate], n: int,
               rng: np.random.Generator | int | None) -> np.ndarray:
    """``n`` LHS points in the full box (test and validation sets).  ``rng``
    may be a Generator or a seed."""
    return sample_region(ir.Interior(), coordinates, n, SAMPLERS.get("lhs")(), np.random.default_rng(rng)).x
