"""Shapes: the primitives Box, Ball, Polygon, HalfSpace and their combinations.

SIGN CONVENTION (written here once, used everywhere in this package):
``shape.sdf(x)`` is NEGATIVE strictly inside, zero on the boundary and
POSITIVE outside; ``shape.inside(x)`` is exactly ``shape.sdf(x) < 0``.  Its
magnitude is the distance to the boundary for a primitive; for a combination
see :class:`Union`, :class:`Intersection`, :class:`Difference` (there it may
be a lower bound on the distance, but its sign is always exact).

Shapes are frozen dataclasses: equal parameters make equal (and hashable)
shapes.  Coordinates are stored as tuples of floats; points passed in are
``[N, d]`` arrays, answers float64.  A primitive may carry a ``name`` (not
part of its equality), used in messages and by :func:`parts_named`.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ._faces import BoxFace, Face, PlaneFace, SegmentFace, SphereFace

__all__ = ["Shape", "Primitive", "Box", "Ball", "Polygon", "HalfSpace", "Union", "Difference", "Intersection"]

Bounds = tuple[np.ndarray, np.ndarray]

#: how far past the boundary, relative to the diameter of the bounding box, a point counts as outside
OUTSIDE_RTOL = 1e-6

#: points x edges a polygon's distance works on at a time
POLYGON_BLOCK = 1 << 18


def _point(value, what: str) -> tuple[float, ...]:
    """A point or vector given as a number (1-D) or a list of numbers, as a tuple of floats."""
    try:
        array = np.atleast_1d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number or a list of numbers, got {value!r}") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what} must be a number or a flat list of numbers, got {value!r}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return tuple(float(v) for v in array)


def _number(value, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return number


def _check_name(shape: "Primitive") -> None:
    if not isinstance(shape.name, str):
        raise ValueError(f"a shape's name must be a string, got {shape.name!r}")


class Shape(abc.ABC):
    """A region of R^d (d = ``dim``).  Combine with ``a + b`` (union),
    ``a - b`` (difference), ``a & b`` (intersection)."""

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """The number of coordinates."""

    @abc.abstractmethod
    def _sdf(self, x: np.ndarray) -> np.ndarray:
        """The signed distance of ``x`` ``[N, d]`` (already checked), ``[N]``."""

    @abc.abstractmethod
    def _bounds(self) -> Bounds | None:
        """A bounding box ``(lo, hi)``, or None where the shape is unbounded."""

    def sdf(self, x) -> np.ndarray:
        """Signed distance ``[N]`` of the points ``x`` ``[N, d]`` (negative inside)."""
        return self._sdf(self._points(x))

    def inside(self, x) -> np.ndarray:
        """``[N]`` bool: strictly inside (``sdf(x) < 0``); boundary points are not inside."""
        return self.sdf(x) < 0

    def outside(self, x, rtol: float = OUTSIDE_RTOL) -> np.ndarray:
        """``[N]`` bool: clearly outside, ``sdf(x) > rtol * diameter`` (the diagonal of :meth:`bounds`):
        points on the boundary up to rounding (a mesh node on a rim, a float32 copy) are not outside."""
        lo, hi = self.bounds()
        return self.sdf(x) > rtol * float(np.linalg.norm(hi - lo))

    def bounds(self) -> Bounds:
        """A bounding box ``(lo [d], hi [d])`` (for a primitive the tightest one)."""
        found = self._bounds()
        if found is None:
            raise ValueError(f"{self!r} is unbounded (a HalfSpace, or a union with one); intersect it with "
                             f"a bounded shape, e.g. Box(...) & HalfSpace(...), before bounding or sampling it")
        return found[0].copy(), found[1].copy()

    def _points(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected points as an [N, {self.dim}] array for a {self.dim}-D shape, got shape {x.shape}")
        return x

    def __add__(self, other: "Shape") -> "Union":
        return Union(self, other) if isinstance(other, Shape) else NotImplemented

    def __sub__(self, other: "Shape") -> "Difference":
        return Difference(self, other) if isinstance(other, Shape) else NotImplemented

    def __and__(self, other: "Shape") -> "Intersection":
        return Intersection(self, other) if isinstance(other, Shape) else NotImplemented


class Primitive(Shape):
    """A shape with an exact signed distance, an exact measure and a boundary
    made of faces (:meth:`faces`)."""

    name: str

    @abc.abstractmethod
    def measure(self) -> float:
        """The exact d-dimensional measure (length, area, volume)."""

    @abc.abstractmethod
    def faces(self) -> tuple[Face, ...]:
        """The smooth pieces of the boundary, in a fixed order."""

    @property
    def label(self) -> str:
        """The name, or the repr where there is none."""
        return self.name or repr(self)


# ------------------------------------------------------------------ primitives


@dataclass(frozen=True)
class Box(Primitive):
    """The box ``lo <= x <= hi`` (an interval when d = 1: ``Box(0, 1)``)."""

    lo: tuple[float, ...]
    hi: tuple[float, ...]
    name: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        lo, hi = _point(self.lo, "Box lo"), _point(self.hi, "Box hi")
        if len(lo) != len(hi):
            raise ValueError(f"Box lo has {len(lo)} coordinates and hi has {len(hi)}; give both the same number")
        for axis, (low, high) in enumerate(zip(lo, hi)):
            if not low < high:
                fix = "swap them" if low > high else "give it a positive width"
                raise ValueError(f"Box needs lo < hi on every axis; axis {axis} has lo = {low:g}, hi = {high:g} ({fix})")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        _check_name(self)

    @property
    def dim(self) -> int:
        return len(self.lo)

    @cached_property
    def _lo(self) -> np.ndarray:
        return np.array(self.lo)  # [d]

    @cached_property
    def _hi(self) -> np.ndarray:
        return np.array(self.hi)  # [d]

    def _sdf(self, x):
        # per axis, the signed distance to the slab lo <= x <= hi: > 0 outside it, < 0 inside
        slab = np.maximum(self._lo - x, x - self._hi)  # [N, d]
        outside = np.sqrt(np.sum(np.maximum(slab, 0.0) ** 2, axis=1))  # [N]
        inside = np.minimum(slab.max(axis=1), 0.0)  # [N]
        return outside + inside

    def _bounds(self):
        return self._lo, self._hi

    def measure(self) -> float:
        return float(np.prod(self._hi - self._lo))

    def faces(self) -> tuple[Face, ...]:
        """``2 d`` faces: face ``2*axis`` at ``lo[axis]``, face ``2*axis + 1`` at ``hi[axis]``."""
        return tuple(BoxFace(self._lo, self._hi, axis, side) for axis in range(self.dim) for side in (0, 1))


@dataclass(frozen=True)
class Ball(Primitive):
    """The ball ``|x - center| <= radius`` (a disk when d = 2, an interval when d = 1)."""

    center: tuple[float, ...]
    radius: float
    name: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "center", _point(self.center, "Ball center"))
        radius = _number(self.radius, "Ball radius")
        if radius <= 0:
            raise ValueError(f"Ball radius must be > 0, got {radius:g}")
        object.__setattr__(self, "radius", radius)
        _check_name(self)

    @property
    def dim(self) -> int:
        return len(self.center)

    @cached_property
    def _center(self) -> np.ndarray:
        return np.array(self.center)  # [d]

    def _sdf(self, x):
        offset = x - self._center  # [N, d]
        return np.sqrt(np.einsum("nk,nk->n", offset, offset)) - self.radius

    def _bounds(self):
        return self._center - self.radius, self._center + self.radius

    def measure(self) -> float:
        """``pi^(d/2) / Gamma(d/2 + 1) r^d``."""
        d = self.dim
        return math.pi ** (d / 2) / math.gamma(d / 2 + 1) * self.radius ** d

    def faces(self) -> tuple[Face, ...]:
        return (SphereFace(self._center, self.radius),)


def _orientation(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``(b - a) x (c - a)`` row by row (``[..., 2]`` each): > 0 when c is left of a -> b."""
    return (b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - (b[..., 1] - a[..., 1]) * (c[..., 0] - a[..., 0])


def _within(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Whether c lies in the bounding box of a and b (for c on the line through them: on the segment)."""
    return np.all((np.minimum(a, b) <= c) & (c <= np.maximum(a, b)), axis=-1)


def _first_crossing(start: np.ndarray, end: np.ndarray) -> str | None:
    """A description of the first pair of non-adjacent edges (``start[i] -> end[i]``,
    ``[E, 2]`` each) that cross or touch, or None when no two do."""
    count = len(start)
    i, j = np.triu_indices(count, k=2)  # [pairs]: j >= i + 2
    keep = ~((i == 0) & (j == count - 1))  # the last edge and the first share vertex 0
    i, j = i[keep], j[keep]
    p1, p2, q1, q2 = start[i], end[i], start[j], end[j]  # [pairs, 2] each
    side_p1, side_p2 = _orientation(q1, q2, p1), _orientation(q1, q2, p2)  # [pairs]
    side_q1, side_q2 = _orientation(p1, p2, q1), _orientation(p1, p2, q2)
    proper = (side_p1 * side_p2 < 0) & (side_q1 * side_q2 < 0)
    touches = [(side_p1 == 0) & _within(q1, q2, p1), (side_p2 == 0) & _within(q1, q2, p2),
               (side_q1 == 0) & _within(p1, p2, q1), (side_q2 == 0) & _within(p1, p2, q2)]
    hit = proper | np.any(touches, axis=0)
    if not np.any(hit):
        return None
    k = int(np.flatnonzero(hit)[0])
    if proper[k]:
        point = p1[k] + side_p1[k] / (side_p1[k] - side_p2[k]) * (p2[k] - p1[k])
    else:
        point = [p1, p2, q1, q2][next(t for t in range(4) if touches[t][k])][k]

    def edge(e):
        return f"edge {e} ({start[e][0]:g}, {start[e][1]:g}) -> ({end[e][0]:g}, {end[e][1]:g})"

    return f"{edge(i[k])} and {edge(j[k])} cross at ({point[0]:g}, {point[1]:g})"


@dataclass(frozen=True)
class Polygon(Primitive):
    """A simple polygon in 2-D: the region enclosed by the closed chain of
    ``vertices`` (``[V, 2]``, V >= 3, either orientation; the last vertex
    joins the first).  Edge ``i`` runs from vertex ``i`` to vertex ``i + 1``.
    Self-intersecting chains, repeated consecutive vertices and chains with no
    area are refused."""

    vertices: tuple[tuple[float, float], ...]
    name: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        try:
            array = np.asarray(self.vertices, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"Polygon vertices must be a list of (x, y) pairs, got {self.vertices!r}") from None
        if array.ndim != 2 or array.shape[1] != 2:
            raise ValueError(f"Polygon vertices must be a list of (x, y) pairs (2-D only), got shape {array.shape}")
        if len(array) < 3:
            raise ValueError(f"a Polygon needs at least 3 vertices, got {len(array)}")
        if not np.all(np.isfinite(array)):
            raise ValueError("Polygon vertices must be finite")
        start, end = array, np.roll(array, -1, axis=0)  # [V, 2] each
        repeated = np.flatnonzero(np.all(start == end, axis=1))
        if len(repeated):
            v = int(repeated[0])
            raise ValueError(f"Polygon vertices {v} and {(v + 1) % len(array)} are equal (edge {v} has zero length); "
                             f"drop the repeat (do not close the chain by repeating the first vertex)")
        crossing = _first_crossing(start, end)
        if crossing is not None:
            raise ValueError(f"the Polygon is not simple: {crossing}; list the vertices in order around the boundary")
        diagonal = float(np.linalg.norm(array.max(axis=0) - array.min(axis=0)))
        if abs(_shoelace(array)) <= 1e-12 * diagonal ** 2:
            raise ValueError("the Polygon has zero area (its vertices are collinear); give vertices that enclose a region")
        object.__setattr__(self, "vertices", tuple((float(a), float(b)) for a, b in array))
        _check_name(self)

    @property
    def dim(self) -> int:
        return 2

    @cached_property
    def _start(self) -> np.ndarray:
        return np.array(self.vertices)  # [V, 2]

    @cached_property
    def _end(self) -> np.ndarray:
        return np.roll(self._start, -1, axis=0)  # [V, 2]

    @cached_property
    def _outward(self) -> np.ndarray:
        """Unit outward normal of each edge ``[V, 2]``: the edge direction turned
        clockwise for a counter-clockwise chain (positive area), anticlockwise otherwise."""
        direction = self._end - self._start  # [V, 2]
        turned = np.stack([direction[:, 1], -direction[:, 0]], axis=1)
        if _shoelace(self._start) < 0:
            turned = -turned
        return turned / np.linalg.norm(turned, axis=1, keepdims=True)

    def _sdf(self, x):
        rows_per_block = max(1, POLYGON_BLOCK // len(self._start))  # bounds the [rows, V, 2] temporaries
        return np.concatenate([self._block_sdf(x[i:i + rows_per_block]) for i in range(0, len(x), rows_per_block)]
                              or [np.empty(0)])

    def _block_sdf(self, x):
        edge = self._end - self._start  # [V, 2]
        offset = x[:, None, :] - self._start[None, :, :]  # [N, V, 2]
        along = np.clip(np.einsum("nvk,vk->nv", offset, edge) / np.sum(edge ** 2, axis=1), 0.0, 1.0)  # [N, V]
        gap = offset - along[:, :, None] * edge[None, :, :]  # [N, V, 2]
        distance = np.sqrt(np.min(np.sum(gap ** 2, axis=2), axis=1))  # [N]
        # even-odd rule: a ray from x towards +x' crosses the boundary an odd number of times iff x is inside
        y = x[:, 1:2]  # [N, 1]
        y0, y1 = self._start[:, 1], self._end[:, 1]  # [V]
        straddles = (y0 > y) != (y1 > y)  # [N, V]
        rise = np.where(y1 != y0, y1 - y0, 1.0)  # [V] (unused where the edge is level)
        cross_x = self._start[:, 0] + (y - y0) * (self._end[:, 0] - self._start[:, 0]) / rise  # [N, V]
        inside = np.sum(straddles & (x[:, 0:1] < cross_x), axis=1) % 2 == 1  # [N]
        return np.where(inside, -distance, distance)

    def _bounds(self):
        return self._start.min(axis=0), self._start.max(axis=0)

    def measure(self) -> float:
        return abs(_shoelace(self._start))

    def faces(self) -> tuple[Face, ...]:
        """One face per edge: face ``i`` from vertex ``i`` to vertex ``i + 1``."""
        return tuple(SegmentFace(self._start[i], self._end[i], self._outward[i], i) for i in range(len(self._start)))


def _shoelace(vertices: np.ndarray) -> float:
    """Signed area of the closed chain ``[V, 2]``: > 0 counter-clockwise."""
    following = np.roll(vertices, -1, axis=0)
    return 0.5 * float(np.sum(vertices[:, 0] * following[:, 1] - following[:, 0] * vertices[:, 1]))


@dataclass(frozen=True)
class HalfSpace(Primitive):
    """The half-space ``normal . x <= offset`` (unbounded: sample it only
    intersected with something bounded, e.g. ``Box(...) & HalfSpace(...)``).
    Stored normalised: ``normal`` a unit vector, ``offset`` divided by the
    length given, so equal half-spaces compare equal."""

    normal: tuple[float, ...]
    offset: float
    name: str = field(default="", compare=False, repr=False)

    def __post_init__(self):
        normal = np.array(_point(self.normal, "HalfSpace normal"))
        length = float(np.linalg.norm(normal))
        if length == 0:
            raise ValueError("HalfSpace normal must not be the zero vector; give the direction the region ends towards")
        offset = _number(self.offset, "HalfSpace offset")
        object.__setattr__(self, "normal", tuple(float(v) for v in normal / length))
        object.__setattr__(self, "offset", offset / length)
        _check_name(self)

    @property
    def dim(self) -> int:
        return len(self.normal)

    @cached_property
    def _normal(self) -> np.ndarray:
        return np.array(self.normal)  # [d]

    def _sdf(self, x):
        return x @ self._normal - self.offset

    def _bounds(self):
        return None

    def measure(self) -> float:
        return math.inf

    def faces(self) -> tuple[Face, ...]:
        return (PlaneFace(self._normal, self.offset),)


# ------------------------------------------------------------------ combinations


@dataclass(frozen=True)
class _Combination(Shape):
    a: Shape
    b: Shape

    symbol = "?"

    def __post_init__(self):
        for operand in (self.a, self.b):
            if not isinstance(operand, Shape):
                raise TypeError(f"{type(self).__name__} combines shapes, got {operand!r}")
        if self.a.dim != self.b.dim:
            raise ValueError(f"cannot combine a {self.a.dim}-D shape with a {self.b.dim}-D shape "
                             f"({self.a!r} {self.symbol} {self.b!r}); give both the same number of coordinates")

    @property
    def dim(self) -> int:
        return self.a.dim

    @property
    def operands(self) -> tuple[Shape, Shape]:
        return self.a, self.b

    @staticmethod
    @abc.abstractmethod
    def _combine(sdf_a: np.ndarray, sdf_b: np.ndarray) -> np.ndarray:
        """The combination's signed distance ``[N]`` from its operands' (``[N]`` each)."""

    def _sdf(self, x):
        return self._combine(self.a._sdf(x), self.b._sdf(x))


@dataclass(frozen=True)
class Union(_Combination):
    """``a + b``: the points in a or in b.  ``sdf = min(sdf_a, sdf_b)``: exact
    outside (where a and b are exact); inside, a lower bound on the depth."""

    symbol = "+"
    _combine = staticmethod(np.minimum)

    def _bounds(self):
        first, second = self.a._bounds(), self.b._bounds()
        if first is None or second is None:
            return None
        return np.minimum(first[0], second[0]), np.maximum(first[1], second[1])


@dataclass(frozen=True)
class Intersection(_Combination):
    """``a & b``: the points in both.  ``sdf = max(sdf_a, sdf_b)``: exact
    inside (where a and b are exact); outside, a lower bound on the distance."""

    symbol = "&"
    _combine = staticmethod(np.maximum)

    def _bounds(self):
        first, second = self.a._bounds(), self.b._bounds()
        if first is None or second is None:
            return first if second is None else second
        lo, hi = np.maximum(first[0], second[0]), np.minimum(first[1], second[1])
        if np.any(lo >= hi):
            raise ValueError(f"{self!r} is empty: the bounding boxes of its operands do not overlap")
        return lo, hi


@dataclass(frozen=True)
class Difference(_Combination):
    """``a - b``: the points of a not in b (b's boundary bounds the result
    with its normal reversed).  ``sdf = max(sdf_a, -sdf_b)``: exact inside
    (where a and b are exact); outside, a lower bound on the distance."""

    symbol = "-"

    @staticmethod
    def _combine(sdf_a, sdf_b):
        return np.maximum(sdf_a, -sdf_b)

    def _bounds(self):
        return self.a._bounds()
