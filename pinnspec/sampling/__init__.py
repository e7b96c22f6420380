"""Collocation points: unit-cube samplers, region point sets, data files.

numpy only (no torch).  Points are ``[N, d]`` float64 in the problem's
coordinate order (space coordinates, then time).

    from pinnspec.sampling import PointPlan
    plan = PointPlan(problem)                  # problem: pinnspec.ir.Problem
    sets = plan.sample(seed=0, epoch=epoch)    # one PointSet per plan.sets entry

Reference and data files: CSV, NPZ, and COMSOL text exports (``read_comsol``: steady and wide
time-dependent tables, expanded to rows); ``load_reference`` matches their columns to a spec's
coordinates and fields by name, else by order.  Every file is read whole and checked (finite numbers,
one value per column in every row, NPZ sizes against the file) by the same functions for ``check`` and
for training; a problem is a ``DataFileError``, ``PATH:LINE: what is wrong``.

Samplers (registered in :data:`pinnspec.registry.SAMPLERS`): ``lhs``,
``uniform``, ``sobol``, ``halton``, ``grid``, ``hammersley``; each is
``Sampler(**options)(n, k, rng) -> [n, k]`` in [0, 1].  The residual-based
adaptive samplers ``rad``, ``rard`` and ``r3`` (:mod:`._adaptive`, docs/sampling.md)
are their ``base`` sampler when called so; ``CompiledProblem.sample(epoch,
residual=...)`` redraws the equation sets from the model's residual.
"""

from __future__ import annotations

from ._samplers import LHS, Grid, Halton, Hammersley, Sobol, Uniform
from ._regions import (PointSet, box_points, domain_points, face_counts, farthest_outside, files_outside_domain, grid_points,
                       inside_domain, outside_domain, sample_region, uniform_interior_points)
from ._table import (METHODS as TABLE_METHODS, TableColumnError, TableColumns, TableInterpolator, load_table,
                     table_columns, table_interpolator)
from ._spectrum import dominant_frequencies
from ._data import (DataFileError, FileColumns, column_mapping, load_data, load_reference, match_columns, read_columns,
                    read_file_columns)
from ._comsol import ComsolTable, read_comsol, read_comsol_header
from ._point_plan import PlannedSet, PointPlan
from ._adaptive import R3, RAD, RARD, AdaptiveSampler, ResidualNotFinite, r3_retained, rad_choice, rad_weights

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
    "files_outside_domain",
    "domain_points",
    "inside_domain",
    "outside_domain",
    "farthest_outside",
    "TABLE_METHODS",
    "TableColumnError",
    "TableColumns",
    "TableInterpolator",
    "table_columns",
    "table_interpolator",
    "load_table",
    "dominant_frequencies",
    "grid_points",
    "uniform_interior_points",
    "box_points",
    "DataFileError",
    "load_data",
    "read_columns",
    "load_reference",
    "match_columns",
    "column_mapping",
    "read_file_columns",
    "FileColumns",
    "ComsolTable",
    "read_comsol",
    "read_comsol_header",
    "PlannedSet",
    "PointPlan",
    "AdaptiveSampler",
    "ResidualNotFinite",
    "RAD",
    "RARD",
    "R3",
    "rad_weights",
    "rad_choice",
    "r3_retained",
]
