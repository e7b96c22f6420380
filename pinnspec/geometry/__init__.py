"""Constructive solid geometry for domains: shapes, signed distance, boundary parts, sampling.

numpy only (no torch), float64.  ``shape.sdf(x) < 0`` inside, ``= 0`` on the
boundary, ``> 0`` outside (the sign convention of :mod:`._shapes`).

    from pinnspec.geometry import Box, Ball, sample_interior, sample_boundary
    plate = Box([-0.5, -0.5], [0.5, 0.5]) - Ball([0.3, 0.3], 0.1, name="hole1")
    x = sample_interior(plate, 10_000, rng)                      # [n, 2], all inside
    xb, normal, part = sample_boundary(plate, 2_000, rng)        # outward unit normals
    rim = parts_named(plate, "hole1")                            # the hole's parts
    xh, nh, _ = sample_boundary(plate, 500, rng, parts=rim)      # only on the hole's rim
"""

from ._shapes import Ball, Box, Difference, HalfSpace, Intersection, Polygon, Primitive, Shape, Union
from ._boundary import (BoundaryPart, BoundaryScale, boundary_parts, boundary_segments, on_boundary, part_measures,
                        parts_named, sample_boundary)
from ._faces import BoxFace, Face, PlaneFace, SegmentFace, SphereFace
from ._interior import estimate_measure, sample_interior

__all__ = [
    "Shape",
    "Primitive",
    "Box",
    "Ball",
    "Polygon",
    "HalfSpace",
    "Union",
    "Difference",
    "Intersection",
    "BoundaryPart",
    "BoundaryScale",
    "on_boundary",
    "Face",
    "BoxFace",
    "PlaneFace",
    "SegmentFace",
    "SphereFace",
    "boundary_parts",
    "boundary_segments",
    "parts_named",
    "part_measures",
    "sample_boundary",
    "sample_interior",
    "estimate_measure",
]
