"""Collocation points: unit-cube samplers, region point sets, data files.

numpy only (no torch).  Points are ``[N, d]`` float64 in the problem's
coordinate order (space coordinates, then time).

    from pinnspec.sampling import PointPlan
    plan = PointPlan(problem)                  # problem: pinnspec.ir.Problem
    sets = plan.sample(seed=0, epoch=epoch)    # one PointSet per plan.sets entry

Samplers (registered in :data:`pinnspec.registry.SAMPLERS`): ``lhs``,
``uniform``, ``sobol``, ``halton``, ``grid``, ``hammersley``; each is
``Sampler(**options)(n, k, rng) -> [n, k]`` in [0, 1].
"""

from __future__ import annotations

from ._samplers import LHS, Grid, Halton, Hammersley, Sobol, Uniform
from ._regions import PointSet, box_points, face_counts, grid_points, sample_region
from ._data import load_data, read_columns
from ._plan import PlannedSet, PointPlan

__all__ = [
    "LHS",
    "Uniform",
    "Sobol",
    "Halton",
    "Grid",
    "Hammersley",
    "PointSet",
    "sample_region",
    "face_counts",
    "grid_points",
    "box_points",
    "load_data",
    "read_columns",
    "PlannedSet",
    "PointPlan",
]
