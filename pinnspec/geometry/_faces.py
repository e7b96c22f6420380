"""The smooth pieces ("faces") of a primitive's boundary, each sampled uniformly.

A face knows its measure (length in 2-D, area in 3-D, a count of 1 per
point in 1-D) and draws points uniformly on itself with the primitive's unit
OUTWARD normal.  Every random choice comes from the ``rng`` passed in.

``window = (lo, hi)`` (``[d]`` each) is the bounding box of the whole shape;
only an unbounded face (a half-space's hyperplane) uses it: it is sampled on
a square patch of the plane that covers the plane's cut through the window.
"""

from __future__ import annotations

import abc
import math

import numpy as np

Window = tuple[np.ndarray, np.ndarray]


class Face(abc.ABC):
    """One smooth piece of a primitive's boundary; ``label`` says which, in words."""

    label: str

    @abc.abstractmethod
    def measure(self, window: Window) -> float:
        """The (d-1)-dimensional measure of the face (of its patch, if unbounded)."""

    @abc.abstractmethod
    def sample(self, count: int, rng: np.random.Generator, window: Window) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points uniform on the face ``[count, d]`` and the unit outward normals there ``[count, d]``."""

    def segment(self, window: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A flat face in 2-D as the segment it spans (its patch, if unbounded): ``(start [2], end [2],
        outward normal [2])``; None for a curved face or in another dimension."""
        return None


class BoxFace(Face):
    """The face ``x[axis] = lo[axis]`` (side 0) or ``x[axis] = hi[axis]`` (side 1) of a box."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray, axis: int, side: int):
        self.lo, self.hi = lo, hi  # [d] each
        self.axis, self.side = axis, side
        value = (lo if side == 0 else hi)[axis]
        self.label = f"{'low' if side == 0 else 'high'} face of axis {axis} (x[{axis}] = {value:g})"

    def measure(self, window: Window) -> float:
        extents = np.delete(self.hi - self.lo, self.axis)  # [d-1]
        return float(np.prod(extents))  # in 1-D: a point, counted as 1

    def sample(self, count, rng, window):
        d = self.lo.shape[0]
        x = self.lo + rng.random((count, d)) * (self.hi - self.lo)  # [count, d]
        x[:, self.axis] = (self.lo if self.side == 0 else self.hi)[self.axis]
        normal = np.zeros((count, d))  # [count, d]
        normal[:, self.axis] = -1.0 if self.side == 0 else 1.0
        return x, normal

    def segment(self, window):
        if self.lo.shape[0] != 2:
            return None
        start = (self.lo if self.side == 0 else self.hi).copy()  # [2]
        end = start.copy()
        start[1 - self.axis], end[1 - self.axis] = self.lo[1 - self.axis], self.hi[1 - self.axis]
        normal = np.zeros(2)
        normal[self.axis] = -1.0 if self.side == 0 else 1.0
        return start, end, normal


def sphere_area(dim: int, radius: float) -> float:
    """The (d-1)-measure of the sphere of ``radius`` in ``dim`` dimensions:
    ``2 pi^(d/2) / Gamma(d/2) r^(d-1)`` (2 points in 1-D, ``2 pi r`` in 2-D, ``4 pi r^2`` in 3-D)."""
    return 2.0 * math.pi ** (dim / 2) / math.gamma(dim / 2) * radius ** (dim - 1)


class SphereFace(Face):
    """The whole sphere ``|x - center| = radius``; points from normalised
    Gaussian vectors (uniform by surface area in every dimension)."""

    def __init__(self, center: np.ndarray, radius: float):
        self.center, self.radius = center, radius  # [d], scalar
        self.label = "sphere"

    def measure(self, window: Window) -> float:
        return sphere_area(self.center.shape[0], self.radius)

    def sample(self, count, rng, window):
        gaussian = rng.standard_normal((count, self.center.shape[0]))  # [count, d]
        direction = gaussian / np.linalg.norm(gaussian, axis=1, keepdims=True)  # [count, d]
        return self.center + self.radius * direction, direction


class SegmentFace(Face):
    """The edge from ``start`` to ``end`` of a polygon, with a constant outward normal."""

    def __init__(self, start: np.ndarray, end: np.ndarray, outward: np.ndarray, index: int):
        self.start, self.end, self.outward = start, end, outward  # [2] each
        self.label = f"edge {index} ({start[0]:g}, {start[1]:g}) -> ({end[0]:g}, {end[1]:g})"

    def measure(self, window: Window) -> float:
        return float(np.linalg.norm(self.end - self.start))

    def sample(self, count, rng, window):
        along = rng.random((count, 1))  # [count, 1]
        x = self.start + along * (self.end - self.start)  # [count, 2]
        return x, np.broadcast_to(self.outward, x.shape).copy()

    def segment(self, window):
        return self.start, self.end, self.outward


class PlaneFace(Face):
    """The hyperplane ``normal . x = offset`` (``normal`` a unit vector),
    sampled on the square patch (side ``2R``, in the plane's own orthonormal
    coordinates) centred at the projection of the window's centre, where
    ``R`` is half the window's diagonal: the patch covers every point of the
    plane inside the window."""

    def __init__(self, normal: np.ndarray, offset: float):
        self.normal, self.offset = normal, offset  # [d], scalar
        # rows 1.. of V^T span the plane's directions (orthonormal, orthogonal to the normal)
        self.tangents = np.linalg.svd(normal[None, :])[2][1:]  # [d-1, d]
        self.label = "plane"

    def _patch(self, window: Window) -> tuple[np.ndarray, float]:
        lo, hi = window
        middle = 0.5 * (lo + hi)  # [d]
        foot = middle - (self.normal @ middle - self.offset) * self.normal  # [d]
        return foot, 0.5 * float(np.linalg.norm(hi - lo))

    def measure(self, window: Window) -> float:
        half_side = self._patch(window)[1]
        return float((2.0 * half_side) ** self.tangents.shape[0])

    def sample(self, count, rng, window):
        foot, half_side = self._patch(window)
        in_plane = rng.uniform(-half_side, half_side, (count, self.tangents.shape[0]))  # [count, d-1]
        x = foot + in_plane @ self.tangents  # [count, d]
        return x, np.broadcast_to(self.normal, x.shape).copy()

    def segment(self, window):
        if self.normal.shape[0] != 2:
            return None
        foot, half_side = self._patch(window)
        return foot - half_side * self.tangents[0], foot + half_side * self.tangents[0], self.normal
