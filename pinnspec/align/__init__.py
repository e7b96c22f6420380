"""Gradient-Update Alignment: the proposal u -> the aligned update p.

``project(u, G, metric=None)`` solves argmin ||d - u||_M^2 s.t. G d >= 0 in the
m-dimensional dual; ``GUA`` gates, projects and aligns the optimizer state;
``conflicts`` gives the per-step indicators behind R_g, R_a, R_u, R_p.
Registered names: gua, none.

The alignment stage is the last of the update chain, which
:class:`pinnspec.engine.UpdateChain` composes (g, a, u, p all point uphill)::

    a -> u = optimizer.propose(a, ...) -> p, state = alignment.align(u, G, tentative, optimizer, params=theta)
"""

from ._cone import ENUMERATION_MAX_TASKS, project, solve_dual, unit_rows
from ._conflicts import CONFLICT_EPS, CONFLICT_THRESHOLD, conflict_indicators, conflict_mask, conflicting, conflicts
from ._gua import CHANGE_THRESHOLD, GUA, NoAlignment

__all__ = ["unit_rows", "project", "solve_dual", "conflicts", "conflicting", "conflict_mask", "conflict_indicators",
           "GUA", "NoAlignment", "make", "ENUMERATION_MAX_TASKS", "CONFLICT_EPS", "CONFLICT_THRESHOLD", "CHANGE_THRESHOLD"]


def make(name: str, **kwargs):
    """The registered alignment stage ``name`` configured with ``kwargs``."""
    from pinnspec.registry import ALIGN

    return ALIGN.get(name)(**kwargs)
