"""What the compiled problem hands out and keeps per condition: point sets as tensors (`TorchPointSet`, `Points`),
losses (`Losses`), a condition's kernels (`ConditionKernels`), an adaptive sampler's history, and the copy of host
arrays to the device."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import numpy as np
import torch

from ._codegen import Kernel


def added_up(values):
    """The sum of ``values`` from the first (``sum`` would start from 0: one more operation on tensors, and one
    more node in their graph)."""
    return functools.reduce(operator.add, values)


#: set index -> (seed, block, its points before that block, its points in that block), float64 on the host: what
#: the adaptive samplers that keep points (`rard`, `r3`) start their next block from
AdaptiveHistory = dict[int, tuple[int, int, np.ndarray, np.ndarray]]


@dataclass
class TorchPointSet:
    x: torch.Tensor  # [N, d], requires grad (inputs of the derivative plan)
    face_slices: tuple[slice, ...] | None = None
    partner: torch.Tensor | None = None  # [N, d] periodic partner points
    #: [N, n_columns] per-point values computed on the host when the points were drawn: a data condition's
    #: observed fields, then the coefficient tables read on the set (`ConditionKernels.point_columns`)
    observed: torch.Tensor | None = None
    total: int | None = None  # points in the whole set (> N on a shard of a data-parallel run)
    normals: torch.Tensor | None = None  # [N, d_space] outward normals on parts of a domain's boundary

    @property
    def count(self) -> int:
        """The divisor of this set's means: every point of the set, on every rank."""
        return len(self.x) if self.total is None else self.total


@dataclass
class Points:
    epoch: int
    sets: list[TorchPointSet]
    block: int | None = None  # the resampling block they were drawn for (`CompiledProblem.sample`)
    #: set index -> the host points (float64) an adaptive sampler chose for it: what a checkpoint keeps, so that
    #: a resumed run goes on with the points the model chose then (None without an adaptive sampler)
    adaptive: dict[int, np.ndarray] | None = None
    #: what an adaptive sampler starts its next draw from after this one (`CompiledProblem.adapted`)
    history: AdaptiveHistory | None = None


@dataclass
class Losses:
    task_list: list[torch.Tensor]  # m scalars, in grouping order (differentiate these one by one:
    #                                a row of a stacked tensor back-propagates zeros through every task)
    conditions: dict[str, torch.Tensor]  # condition -> scalar loss (its own mean)
    grouping: str
    stacked: torch.Tensor | None = None  # the task losses as one [m] tensor, where they were computed as one

    @property
    def tasks(self) -> torch.Tensor:  # [m]
        return torch.stack(self.task_list) if self.stacked is None else self.stacked


@dataclass(frozen=True)
class ConditionKernels:
    """The kernels of one condition: one, or one per face (``dn`` on a union of faces)."""

    condition: str
    set_index: int
    kernels: tuple[Kernel, ...]
    per_face: bool
    periodic: bool
    observed_fields: tuple[str, ...] = ()
    #: what each column of its points' ``observed`` holds: ("observed", field), then ("table", name, False)
    #: for the value of a table at the points and, on periodic pairs, ("table", name, True) at the partners
    point_columns: tuple[tuple, ...] = ()


def host_to_device(a, dtype, device) -> torch.Tensor:
    """A host array as a tensor on ``device``.  To a GPU through pinned memory and an asynchronous
    copy: a copy from pageable memory would first wait for every kernel queued on the stream."""
    device = torch.device(device)
    if device.type != "cuda":
        return torch.as_tensor(a, dtype=dtype, device=device)
    return torch.as_tensor(a).to(dtype).pin_memory().to(device, non_blocking=True)
