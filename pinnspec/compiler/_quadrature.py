"""Deterministic quadrature rules for the integrals of ``report`` statements (numpy only).

A rule is points ``[n, d]`` (space coordinates), weights ``[n]`` and, on a boundary, the outward unit
normals ``[n, d]``; ``sum(weights * f(points))`` approximates the integral of f.

* a side of a box (a segment in 2-D, a rectangle in 3-D): tensor Gauss–Legendre, exact for
  polynomials of degree ``2 * SEGMENT_POINTS - 1`` in each direction;
* a polygon's edge: Gauss–Legendre along it;
* a circle: ``CIRCLE_POINTS`` points equally spaced by arc length with equal weights (the trapezoid rule
  of a periodic function: spectrally accurate for a smooth integrand); a sphere (3-D): Gauss–Legendre in
  cos(polar angle) times the trapezoid rule in the azimuth; in 1-D a face is a point of weight 1;
* a face cut short by other shapes of the domain (or a half-space's plane): the composite midpoint rule
  of ``CUT_POINTS`` cells per direction, keeping the points that lie on the domain's boundary
  (first-order accurate where the cut falls);
* the domain itself: tensor Gauss–Legendre when it is the whole box, else the composite midpoint rule
  on its bounding box keeping the points inside (first-order accurate at a curved boundary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import geometry, ir
from ..geometry import BoundaryScale, BoxFace, PlaneFace, SegmentFace, SphereFace, on_boundary

SEGMENT_POINTS = 64  # Gauss–Legendre points per direction on a side, an edge, a box domain
CIRCLE_POINTS = 512  # equally spaced points on a circle
SPHERE_POINTS = 48  # Gauss–Legendre points in cos(polar angle); twice as many azimuths
CUT_POINTS = {1: 1, 2: 4096, 3: 256}  # midpoint cells per direction on a cut face, by the face's dimension + 1
INTERIOR_CELLS = {1: 4096, 2: 512, 3: 96}  # midpoint cells per direction in a domain that is not the box


@dataclass(frozen=True)
class Rule:
    points: np.ndarray  # [n, d]
    weights: np.ndarray  # [n]
    normals: np.ndarray | None = None  # [n, d] outward unit normals (a boundary), else None

    @staticmethod
    def join(rules: list["Rule"]) -> "Rule":
        normals = [r.normals for r in rules]
        return Rule(np.concatenate([r.points for r in rules]), np.concatenate([r.weights for r in rules]),
                    None if any(n is None for n in normals) else np.concatenate(normals))


def gauss_legendre(lo: float, hi: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``[n]`` and weights ``[n]`` of the n-point Gauss–Legendre rule on [lo, hi]."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    half = 0.5 * (hi - lo)
    return lo + half * (nodes + 1.0), half * weights


def midpoints(lo: float, hi: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``[n]`` and weights ``[n]`` of the composite midpoint rule of n cells on [lo, hi]."""
    width = (hi - lo) / n
    return lo + width * (np.arange(n) + 0.5), np.full(n, width)


def tensor(rules: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The product of 1-D rules: points ``[prod n_k, k]`` and weights ``[prod n_k]``."""
    if not rules:
        return np.zeros((1, 0)), np.ones(1)
    grids = np.meshgrid(*[nodes for nodes, _ in rules], indexing="ij")
    weights = np.ones_like(grids[0])
    for axis, (_, w) in enumerate(rules):
        shape = [1] * len(rules)
        shape[axis] = len(w)
        weights = weights * w.reshape(shape)
    return np.stack([g.reshape(-1) for g in grids], axis=1), weights.reshape(-1)


def box_side(lo: np.ndarray, hi: np.ndarray, axis: int, side: int, *, cut: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A rule on the side ``x[axis] = lo[axis]`` (side 0) or ``hi[axis]`` (side 1) of the box ``[lo, hi]``:
    points ``[n, d]``, weights ``[n]``, outward normals ``[n, d]``."""
    d = len(lo)
    others = [k for k in range(d) if k != axis]
    one_d = [midpoints(lo[k], hi[k], CUT_POINTS[d]) if cut else gauss_legendre(lo[k], hi[k], SEGMENT_POINTS)
             for k in others]
    free, weights = tensor(one_d)  # [n, d-1], [n]
    points = np.empty((len(weights), d))
    points[:, others] = free
    points[:, axis] = (lo if side == 0 else hi)[axis]
    normals = np.zeros_like(points)
    normals[:, axis] = -1.0 if side == 0 else 1.0
    return points, weights, normals


def _sphere(center: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = len(center)
    if d == 1:
        directions, weights = np.array([[-1.0], [1.0]]), np.ones(2)
    elif d == 2:
        angle = 2.0 * math.pi * np.arange(CIRCLE_POINTS) / CIRCLE_POINTS  # [n]
        directions = np.stack([np.cos(angle), np.sin(angle)], axis=1)  # [n, 2]
        weights = np.full(CIRCLE_POINTS, 2.0 * math.pi * radius / CIRCLE_POINTS)
    elif d == 3:
        height, w_height = gauss_legendre(-1.0, 1.0, SPHERE_POINTS)  # cos(polar angle)
        azimuth = 2.0 * math.pi * np.arange(2 * SPHERE_POINTS) / (2 * SPHERE_POINTS)
        h, a = np.meshgrid(height, azimuth, indexing="ij")  # [m, 2m] each
        ring = np.sqrt(1.0 - h ** 2)
        directions = np.stack([ring * np.cos(a), ring * np.sin(a), h], axis=-1).reshape(-1, 3)
        weights = (w_height[:, None] * np.full(2 * SPHERE_POINTS, 2.0 * math.pi / (2 * SPHERE_POINTS))[None, :]
                   ).reshape(-1) * radius ** 2
    else:
        raise ValueError(f"no quadrature rule on a sphere in {d} dimensions (reports integrate in up to 3)")
    return center + radius * directions, weights, directions


def _segment(start: np.ndarray, end: np.ndarray, outward: np.ndarray, *, cut: bool = False):
    along, weights = midpoints(0.0, 1.0, CUT_POINTS[2]) if cut else gauss_legendre(0.0, 1.0, SEGMENT_POINTS)
    points = start + along[:, None] * (end - start)  # [n, 2]
    return points, weights * float(np.linalg.norm(end - start)), np.broadcast_to(outward, points.shape).copy()


def _plane(face: PlaneFace, window) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    foot, half_side = face._patch(window)
    k = face.tangents.shape[0]
    free, weights = tensor([midpoints(-half_side, half_side, CUT_POINTS[k + 1]) for _ in range(k)])
    points = foot + free @ face.tangents  # [n, d]
    return points, weights, np.broadcast_to(face.normal, points.shape).copy()


def _face_rule(face, window, *, cut: bool):
    """A rule on a primitive's face, with the primitive's outward normals."""
    if isinstance(face, BoxFace):
        return box_side(face.lo, face.hi, face.axis, face.side, cut=cut)
    if isinstance(face, SegmentFace):
        return _segment(face.start, face.end, face.outward, cut=cut)
    if isinstance(face, SphereFace):
        if cut and len(face.center) == 2:  # equal spacing is already the composite midpoint rule in the angle
            return _sphere_fine(face.center, face.radius)
        return _sphere(face.center, face.radius)
    if isinstance(face, PlaneFace):
        return _plane(face, window)
    raise TypeError(f"no quadrature rule on {type(face).__name__}")


def _sphere_fine(center, radius):
    angle = 2.0 * math.pi * (np.arange(CUT_POINTS[2]) + 0.5) / CUT_POINTS[2]
    directions = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return center + radius * directions, np.full(len(angle), 2.0 * math.pi * radius / len(angle)), directions


def domain_boundary_rule(domain: ir.Domain, parts: tuple[int, ...]) -> Rule:
    """A rule on the parts (indices into ``domain.boundary_parts(shape)``) of the domain's boundary, with the
    domain's outward normals: each part's face rule where the whole face is on the boundary, else the cut rule
    restricted to the points on it."""
    shape = domain.shape
    every = geometry.boundary_parts(shape)
    window = shape.bounds()
    scale = BoundaryScale.of(window)
    rules = []
    for index in parts:
        part = every[index]
        face = part.face_object()
        whole = not isinstance(face, PlaneFace)
        if whole:
            points, weights, normals = _face_rule(face, window, cut=False)
            rows, outward = on_boundary(shape, part, points, normals, scale)
            whole = len(rows) == len(points)
        if not whole:
            points, weights, normals = _face_rule(face, window, cut=True)
            rows, outward = on_boundary(shape, part, points, normals, scale)
        rules.append(Rule(points[rows], weights[rows], outward))
    return Rule.join(rules)


def face_region_rule(region: ir.FaceRegion, space: tuple[ir.Coordinate, ...]) -> Rule:
    """A rule on faces of the space box (a spec without a domain)."""
    lo = np.array([c.lo for c in space])
    hi = np.array([c.hi for c in space])
    names = [c.name for c in space]
    rules = []
    for face in region.faces:
        points, weights, normals = box_side(lo, hi, names.index(face.coordinate), 0 if face.side == "lo" else 1)
        rules.append(Rule(points, weights, normals))
    return Rule.join(rules)


def interior_rule(domain: ir.Domain) -> Rule:
    """A rule on the domain itself: tensor Gauss–Legendre on a box, else midpoints inside it."""
    shape = domain.shape
    lo, hi = shape.bounds()
    d = len(lo)
    if isinstance(shape, geometry.Box):
        points, weights = tensor([gauss_legendre(lo[k], hi[k], SEGMENT_POINTS) for k in range(d)])
        return Rule(points, weights)
    points, weights = tensor([midpoints(lo[k], hi[k], INTERIOR_CELLS[d]) for k in range(d)])
    inside = shape.inside(points)
    return Rule(points[inside], weights[inside])


def region_rule(region, space: tuple[ir.Coordinate, ...]) -> Rule:
    """The rule of a report's region (FaceRegion, DomainBoundary or DomainInterior)."""
    if isinstance(region, ir.FaceRegion):
        return face_region_rule(region, space)
    if isinstance(region, ir.DomainBoundary):
        return domain_boundary_rule(region.domain, region.parts)
    if isinstance(region, ir.DomainInterior):
        return interior_rule(region.domain)
    raise TypeError(f"no quadrature rule for the region {region}")

