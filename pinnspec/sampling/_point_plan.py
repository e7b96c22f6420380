"""Which point sets a problem needs, and drawing them reproducibly."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import ir
from ..registry import SAMPLERS
from ._adaptive import AdaptiveSampler
from ._data import load_data
from ._regions import PointSet, sample_region

__all__ = ["PlannedSet", "PointPlan"]


@dataclass(frozen=True)
class PlannedSet:
    """One point set and the conditions evaluated on it.

    ``count`` is the requested number of points (None for a data set: every
    row of its file).
    """

    index: int
    region: ir.Region
    count: int | None
    conditions: tuple[str, ...]

    @property
    def is_data(self) -> bool:
        return isinstance(self.region, ir.DataPoints)


class PointPlan:
    """The shared point sets of a problem.

    Conditions with an EQUAL region and an EQUAL count share one set (the
    equations of a system share their interior points); every data condition
    has its own set (its file's rows).  ``sets`` are in the order of first
    appearance in ``problem.conditions``.

    :meth:`sample` is a pure function of ``(seed, epoch)``: set ``i`` is drawn
    with ``np.random.default_rng([seed, block, i])`` where ``block = epoch //
    resample_every`` (0 when the problem never resamples), so the same seed and
    epoch always give the same points and a resumed run continues bit for bit.
    """

    def __init__(self, problem: ir.Problem):
        self.problem = problem
        self.coordinates: tuple[ir.Coordinate, ...] = tuple(problem.coordinates)
        spec = problem.sampling
        self.sampler_spec: ir.CallSpec = spec.sampler
        self.sampler = SAMPLERS.get(spec.sampler.name)(**spec.sampler.options)
        every = spec.resample_every
        if every is not None and (int(every) != every or every < 1):
            raise ValueError(f"resample every must be a whole number >= 1 (or None for never), got {every!r}")
        self.resample_every: int | None = None if every is None else int(every)

        groups: dict[tuple, list[str]] = {}
        keys: list[tuple] = []
        for cond in problem.conditions:
            if isinstance(cond.region, ir.DataPoints):
                key = ("data", cond.name)
                count = None
            else:
                count = spec.count(cond.name)
                if count is None:
                    raise ValueError(f"no point count for the condition '{cond.name}' in the problem's sampling")
                key = (cond.region, int(count))
            if key not in groups:
                groups[key] = []
                keys.append(key)
            groups[key].append(cond.name)
        sets = []
        for i, key in enumerate(keys):
            names = tuple(groups[key])
            if key[0] == "data":
                sets.append(PlannedSet(i, problem.condition(names[0]).region, None, names))
            else:
                sets.append(PlannedSet(i, key[0], key[1], names))
        self.sets: tuple[PlannedSet, ...] = tuple(sets)
        self._set_of = {name: s.index for s in self.sets for name in s.conditions}
        self._data: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ queries
    def set_index(self, condition: str) -> int:
        """The index in :attr:`sets` (and in :meth:`sample`'s list) of a condition's set."""
        try:
            return self._set_of[condition]
        except KeyError:
            raise KeyError(f"no condition '{condition}' in the point plan") from None

    def block(self, epoch: int) -> int:
        """The resampling block of ``epoch``: points change exactly when it does."""
        _check_nonnegative("epoch", epoch)
        return 0 if self.resample_every is None else int(epoch) // self.resample_every

    def data_path(self, region: ir.DataPoints) -> str:
        """A data file's path: relative paths resolve against the spec's folder."""
        if os.path.isabs(region.path):
            return region.path
        return os.path.join(self.problem.source_dir or ".", region.path)

    # ------------------------------------------------------------------ drawing
    def sample(self, seed: int, epoch: int, block: int | None = None) -> list[PointSet]:
        """Every set's points for ``epoch`` (one PointSet per entry of :attr:`sets`); ``block`` replaces
        the resampling block of ``epoch`` (a quasi-Newton stage's own blocks: `SECOND_ORDER_BLOCKS`)."""
        _check_nonnegative("seed", seed)
        block = self.block(epoch) if block is None else int(block)
        out = []
        for s in self.sets:
            if s.is_data:
                x, observed = self._load(s)
                out.append(PointSet(x.copy(), observed=observed.copy()))
            else:
                rng = np.random.default_rng([int(seed), block, s.index])
                out.append(sample_region(s.region, self.coordinates, s.count, self.sampler, rng))
        return out

    def seeds_share_points(self, seeds) -> bool:
        """Whether runs of every seed in ``seeds`` train on the same points: the plan draws once (it never
        resamples, and no adaptive sampler follows a model) and the seeds' draws are equal, as a deterministic
        sampler's are (``hammersley``, ``grid``) on regions that take no random choice."""
        seeds = sorted({int(seed) for seed in seeds})
        if self.resample_every is not None or isinstance(self.sampler, AdaptiveSampler):
            return False
        first, *others = (self.sample(seed, 0) for seed in seeds)
        return all(_same(a.x, b.x) and _same(a.partner, b.partner)
                   for draw in others for a, b in zip(first, draw))

    def _load(self, s: PlannedSet) -> tuple[np.ndarray, np.ndarray]:
        if s.index not in self._data:
            self._data[s.index] = load_data(self.data_path(s.region), self.coordinates, s.region.fields)
        return self._data[s.index]

    def __repr__(self) -> str:
        every = "never" if self.resample_every is None else f"every {self.resample_every}"
        lines = [f"PointPlan(sampler={self.sampler_spec}, resample {every})"]
        for s in self.sets:
            count = "all rows" if s.count is None else s.count
            lines.append(f"  [{s.index}] {s.region}: {count} -> {', '.join(s.conditions)}")
        return "\n".join(lines)


def _check_nonnegative(what: str, value: int) -> None:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{what} must be a whole number >= 0, got {value!r}")


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
