"""The boundary of a shape as parts of its primitives' boundaries, and uniform sampling on it.

A part is one face of one primitive occurrence in the shape's tree (a Box has
``2 d`` faces, a Polygon one per edge, a Ball and a HalfSpace one).  A point
of a part is ON THE SHAPE'S BOUNDARY when, at every combination above the
primitive, it survives the other operand:

* ``a + b``: a point of a's boundary must lie outside b (and vice versa);
* ``a & b``: a point of a's boundary must lie inside b (and vice versa);
* ``a - b``: a point of a's boundary must lie outside b; a point of b's
  boundary (its normal reversed: it points into b, away from the domain)
  must lie inside a.

"Inside"/"outside" are strict, beyond a tolerance of ``1e-10`` times the
shape's size.  Where the other operand's boundary passes through the point
as well (shared faces, as in an L-shape cut with a box that shares two of its
edges), the point is kept iff a short step along its outward normal leaves
the combination and a step against it enters it, and only from operand
``a``, so a shared face is sampled once, and a face shared with opposite
normals (an internal wall) not at all.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from ._faces import Face, Window
from ._shapes import Difference, Intersection, Primitive, Shape, Union

__all__ = ["BoundaryPart", "BoundaryScale", "boundary_parts", "boundary_segments", "on_boundary", "parts_named",
           "part_measures", "sample_boundary"]

#: candidate points per part for the Monte Carlo measure of a part cut by other operands; the first
#: MEASURE_FIRST_DRAWS decide whether the face is cut at all (all on, or all off: not cut, no more draws)
MEASURE_DRAWS = 1 << 15
MEASURE_FIRST_DRAWS = 1 << 12
#: the seed of that fixed stream (so that the split of points across parts is the same every run)
MEASURE_SEED = 20240611
#: rounds of redrawing before a part is declared impossible to fill, and the most points one round draws
MAX_ROUNDS = 64
MAX_DRAWS_PER_ROUND = 1 << 20
#: cells along a flat 2-D face that tell which pieces of it lie on the boundary, how far in from the face's ends
#: (a fraction of its length) its ends are judged, and the bisection steps that place the end of each piece
SEGMENT_CELLS = 4096
SEGMENT_END_INSET = 1e-9
SEGMENT_BISECTIONS = 60

# a point of operand `side` survives the combination where  sign * sdf(other operand) > 0
_KEEP_SIGN = {Union: (1.0, 1.0), Intersection: (-1.0, -1.0), Difference: (1.0, -1.0)}


@dataclass(frozen=True)
class BoundaryPart:
    """One face of one primitive occurrence, as it lies on a shape's boundary.

    index:     position in ``boundary_parts(shape)`` (``part_index`` of :func:`sample_boundary`).
    primitive: the primitive whose face this is.
    path:      the operands from the shape down to the primitive (0 = left, 1 = right of each
               ``+``, ``-``, ``&``); it tells two uses of one primitive apart.
    face:      Box: ``2*axis`` (the ``lo`` face) or ``2*axis + 1`` (the ``hi`` face); Polygon: the
               edge from vertex ``face`` to ``face + 1``; None for a Ball or HalfSpace (one face).
    flipped:   the primitive is subtracted (an odd number of times): the shape's outward normal
               here is the REVERSE of the primitive's (on a hole's rim it points into the hole).
    """

    index: int
    primitive: Primitive
    path: tuple[int, ...]
    face: int | None
    flipped: bool

    def face_object(self) -> Face:
        return self.primitive.faces()[self.face or 0]

    @property
    def label(self) -> str:
        text = self.primitive.label
        if self.face is not None:
            text += f", {self.face_object().label}"
        return text + (" (subtracted: normal reversed)" if self.flipped else "")


def _leaves(shape: Shape, path: tuple[int, ...] = (), flipped: bool = False):
    """``(primitive, path, flipped)`` for every primitive occurrence, left to right."""
    if isinstance(shape, Primitive):
        yield shape, path, flipped
    elif isinstance(shape, (Union, Intersection, Difference)):
        yield from _leaves(shape.a, path + (0,), flipped)
        yield from _leaves(shape.b, path + (1,), flipped != isinstance(shape, Difference))
    else:
        raise TypeError(f"not a shape of pinnspec.geometry: {shape!r}")


def boundary_parts(shape: Shape) -> list[BoundaryPart]:
    """Every face of every primitive occurrence, in tree order (left operand first,
    faces in the primitive's order).  A part may be cut short by the other operands,
    or lie nowhere on the final boundary: see :func:`part_measures`."""
    parts: list[BoundaryPart] = []
    for primitive, path, flipped in _leaves(shape):
        faces = primitive.faces()
        for face in range(len(faces)):
            parts.append(BoundaryPart(len(parts), primitive, path, face if len(faces) > 1 else None, flipped))
    return parts


def parts_named(shape: Shape, name: str) -> list[BoundaryPart]:
    """The parts of the primitive(s) called ``name`` (``Ball(..., name="hole1")``)."""
    parts = [p for p in boundary_parts(shape) if p.primitive.name == name]
    if not parts:
        names = sorted({p.primitive.name for p in boundary_parts(shape) if p.primitive.name})
        raise ValueError(f"no primitive of the shape is called '{name}' (named: {', '.join(names) or 'none'})")
    return parts


# ------------------------------------------------------------------ which points are on the boundary


@dataclass(frozen=True)
class BoundaryScale:
    tolerance: float  # |sdf| below this: on that boundary
    probe: float  # the step along the normal that tells the sides of a shared face apart

    @staticmethod
    def of(window: Window) -> "BoundaryScale":
        lo, hi = window
        size = float(np.max(hi - lo))
        tolerance = 1e-10 * max(size, float(np.max(np.abs(lo))), float(np.max(np.abs(hi))))
        return BoundaryScale(tolerance, max(1e-7 * size, 1e3 * tolerance))


def _survives(node, side: int, x: np.ndarray, normal: np.ndarray, scale: BoundaryScale) -> np.ndarray:
    """``[m]`` bool: which points ``x`` ``[m, d]`` of operand ``side``'s boundary (outward
    ``normal`` in ``node``'s frame) are on ``node``'s boundary."""
    margin = _KEEP_SIGN[type(node)][side] * node.operands[1 - side]._sdf(x)  # [m]
    keep = margin > scale.tolerance
    shared = np.abs(margin) <= scale.tolerance
    if side == 0 and np.any(shared):
        at, towards = x[shared], scale.probe * normal[shared]  # [s, d] each
        keep[shared] = (node._sdf(at + towards) > 0) & (node._sdf(at - towards) < 0)
    return keep


def on_boundary(shape: Shape, part: BoundaryPart, x: np.ndarray, normal: np.ndarray,
                 scale: BoundaryScale) -> tuple[np.ndarray, np.ndarray]:
    """Which points of the part's face are on the shape's boundary (their row numbers
    ``[k]``) and the shape's unit outward normal there (``[k, d]``), from the
    primitive's points ``x`` and outward ``normal`` (``[m, d]`` each)."""
    nodes = [shape]
    for side in part.path:
        nodes.append(nodes[-1].operands[side])
    rows = np.arange(len(x))  # [k]: the points still on the boundary, as rows of x
    for node, side in reversed(list(zip(nodes[:-1], part.path))):
        if isinstance(node, Difference) and side == 1:
            normal = -normal  # now in the frame of `node`
        survivors = _survives(node, side, x, normal, scale)  # [k]
        if not np.all(survivors):
            rows, x, normal = rows[survivors], x[survivors], normal[survivors]
    return rows, normal


def boundary_segments(shape: Shape, part: BoundaryPart) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The pieces of a part's face that lie on the shape's boundary, as segments ``(start [2], end [2])`` in
    order along the face, for a flat face in 2-D (a box's side, a polygon's edge, a half-plane's line cut to
    the shape's bounding box); None for a curved face or in another dimension.

    The face's line is judged by :func:`on_boundary` at the midpoints of ``SEGMENT_CELLS`` equal cells and at
    ``SEGMENT_END_INSET`` of its length in from each end; each run of points on the boundary is one piece,
    which ends at the face's end or where bisection (``SEGMENT_BISECTIONS`` halvings, down to the boundary
    tolerance of :class:`BoundaryScale`) places the change between its last point and the next.  A piece
    shorter than a cell may be missed, or two pieces less than a cell apart joined."""
    window = shape.bounds()
    segment = part.face_object().segment(window)
    if segment is None:
        return None
    start, end, normal = segment
    scale = BoundaryScale.of(window)

    def on(s: np.ndarray) -> np.ndarray:  # fractions along the face [m] -> on the boundary [m]
        x = start + s[:, None] * (end - start)  # [m, 2]
        flags = np.zeros(len(s), dtype=bool)
        flags[on_boundary(shape, part, x, np.broadcast_to(normal, x.shape).copy(), scale)[0]] = True
        return flags

    s = np.concatenate([[SEGMENT_END_INSET], (np.arange(SEGMENT_CELLS) + 0.5) / SEGMENT_CELLS,
                        [1.0 - SEGMENT_END_INSET]])  # [cells + 2]
    flags = on(s)
    change = np.flatnonzero(flags[1:] != flags[:-1])  # [c]: between s[i] and s[i + 1]
    low, high = s[change], s[change + 1]  # [c] each: brackets, flags[change] holding at low
    for _ in range(SEGMENT_BISECTIONS):
        middle = 0.5 * (low + high)
        moved = on(middle) == flags[change]
        low, high = np.where(moved, middle, low), np.where(moved, high, middle)
    cuts = np.concatenate([[0.0], 0.5 * (low + high), [1.0]])  # [c + 2]: the pieces' ends, in order
    pieces = []
    for k in range(len(cuts) - 1):
        if flags[0] != (k % 2 == 1):  # the pieces alternate, on and off, from the first point's flag
            pieces.append((start + cuts[k] * (end - start), start + cuts[k + 1] * (end - start)))
    return pieces


# ------------------------------------------------------------------ measures


@lru_cache(maxsize=64)
def _part_measures(shape: Shape) -> tuple[float, ...]:
    window = shape.bounds()
    parts = boundary_parts(shape)
    if isinstance(shape, Primitive):
        return tuple(part.face_object().measure(window) for part in parts)
    scale = BoundaryScale.of(window)
    measures = []
    for part in parts:
        face = part.face_object()
        stream = np.random.default_rng([MEASURE_SEED, part.index])
        kept = drawn = 0
        for draws in (MEASURE_FIRST_DRAWS, MEASURE_DRAWS - MEASURE_FIRST_DRAWS):
            x, normal = face.sample(draws, stream, window)
            kept += len(on_boundary(shape, part, x, normal, scale)[0])
            drawn += draws
            if kept in (0, drawn):
                break  # the face is not cut: wholly on the boundary, or wholly off it
        measures.append(face.measure(window) * kept / drawn)
    return tuple(measures)


def part_measures(shape: Shape) -> np.ndarray:
    """The measure (length, area) of each part ``[P]`` as it lies on the boundary.

    Exact for a primitive alone.  For a combination, each part's face measure
    times the fraction of ``MEASURE_DRAWS`` points drawn uniformly on the face
    that lie on the boundary (Monte Carlo, relative error about
    ``sqrt((1 - f) / (f * MEASURE_DRAWS))`` for a fraction f), or of the first
    ``MEASURE_FIRST_DRAWS`` when those are all on it (the whole face) or all off
    it (measure 0), drawn from a fixed internal stream
    (``MEASURE_SEED``): the same shape always gets the same measures.  Cached
    per shape.  A part nowhere on the boundary measures 0."""
    return np.array(_part_measures(shape))


# ------------------------------------------------------------------ sampling


def _split(n: int, weights: np.ndarray) -> np.ndarray:
    """``n`` split in proportion to ``weights`` ``[P]`` by largest remainders (ties to
    the earlier part): whole counts ``[P]`` that add up to ``n``."""
    quota = n * weights / weights.sum()  # [P]
    counts = np.floor(quota).astype(np.int64)
    by_remainder = np.lexsort((np.arange(len(weights)), -(quota - counts)))
    counts[by_remainder[: n - int(counts.sum())]] += 1
    return counts


def _selected(shape: Shape, parts) -> list[BoundaryPart]:
    every = boundary_parts(shape)
    if parts is None:
        return every
    chosen = []
    for part in parts:
        index = part.index if isinstance(part, BoundaryPart) else part
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)) \
                or not 0 <= index < len(every) or (isinstance(part, BoundaryPart) and every[index] != part):
            raise ValueError(f"{part!r} is not a part of this shape: pass parts from boundary_parts(shape) "
                             f"or their indices 0..{len(every) - 1}")
        chosen.append(every[int(index)])
    if not chosen:
        raise ValueError("no parts are selected; pass at least one part, or parts=None for the whole boundary")
    if len({p.index for p in chosen}) != len(chosen):
        raise ValueError("a part is selected twice; select each part once")
    return chosen


def _check_on_boundary(chosen: Sequence[BoundaryPart], measures: np.ndarray) -> None:
    """Refuse a primitive occurrence whose selected parts all lie nowhere on the boundary."""
    by_occurrence = defaultdict(list)
    for part in chosen:
        by_occurrence[part.path].append(part)
    for group in by_occurrence.values():
        if sum(measures[p.index] for p in group) > 0:
            continue
        primitive = group[0].primitive
        whole = len(group) == len(primitive.faces())
        what = f"the boundary of {primitive.label}" if whole else "the parts " + "; ".join(p.label for p in group)
        raise ValueError(
            f"{what} lies nowhere on the boundary of the shape (operand path {group[0].path}): it is entirely "
            f"outside the shape it is subtracted from or intersected with, or inside another operand. "
            f"Move or resize it so that it meets the domain, or leave it out of the shape")


def sample_boundary(shape: Shape, n: int, rng: np.random.Generator,
                    parts: Sequence[BoundaryPart | int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` points uniform by length / area on the boundary of ``shape``, or on the selected ``parts``.

    Returns ``points [n, d]``, the unit OUTWARD normals there ``[n, d]`` (pointing away from
    the domain; on a hole's rim into the hole), and ``part_index [n]`` (each point's
    position in ``boundary_parts(shape)``), the points grouped by part in selection order.

    ``n`` is split across the parts in proportion to :func:`part_measures` by largest
    remainders (for a combination those measures are Monte Carlo estimates from a fixed
    internal stream, so the split is the same every run).  Each part is filled by drawing
    uniformly on its primitive's face (faces of a box by their areas, sphere points from
    normalised Gaussians, polygon edges by length) and keeping the points on the shape's
    boundary, redrawing until it has its count.  Every random choice comes from ``rng``.
    Raises ValueError where a selected primitive lies nowhere on the boundary.
    """
    if isinstance(n, (bool, np.bool_)) or int(n) != n or n < 0:
        raise ValueError(f"the number of points must be a whole number >= 0, got {n!r}")
    n = int(n)
    chosen = _selected(shape, parts)
    measures = part_measures(shape)  # [P]
    _check_on_boundary(chosen, measures)
    window = shape.bounds()
    scale = BoundaryScale.of(window)
    points, normals, index = [], [], []
    weights = np.array([measures[p.index] for p in chosen])  # [len(chosen)]
    for part, count in zip(chosen, _split(n, weights) if n else np.zeros(len(chosen), dtype=np.int64)):
        if count == 0:
            continue
        face = part.face_object()
        acceptance = measures[part.index] / face.measure(window)
        found_x, found_normal, found = [], [], 0
        for _ in range(MAX_ROUNDS):
            draws = min(MAX_DRAWS_PER_ROUND, math.ceil((count - found) / acceptance * 1.2) + 16)
            x, normal = face.sample(draws, rng, window)  # [draws, d] each
            rows, normal = on_boundary(shape, part, x, normal, scale)
            found_x.append(x[rows])
            found_normal.append(normal)
            found += len(rows)
            if found >= count:
                break
        else:
            raise RuntimeError(f"{part.label}: only {found} of {count} points found on the boundary "
                               f"in {MAX_ROUNDS} rounds of drawing (its estimated measure was {measures[part.index]:g})")
        points.append(np.concatenate(found_x)[:count])
        normals.append(np.concatenate(found_normal)[:count])
        index.append(np.full(count, part.index, dtype=np.int64))
    d = shape.dim
    if not points:
        return np.empty((0, d)), np.empty((0, d)), np.empty(0, dtype=np.int64)
    return np.concatenate(points), np.concatenate(normals), np.concatenate(index)
