"""Data-parallel training (``torchrun ... --distributed``): each rank takes a shard of every point set;
the ranks' losses and gradients are summed between the losses and the update chain.

The shards of all ranks are exactly the single-process sample, and every mean divides by the whole
set's count (`TorchPointSet.count`), so the sums over the ranks are the single-process losses and G;
every rank then runs the identical update chain."""

from __future__ import annotations

import numpy as np
import torch

from ..sampling import PointSet

__all__ = ["shard", "all_reduce"]


def shard(s: PointSet, rank: int, world: int) -> tuple[PointSet, int]:
    """This rank's rows of a point set (per face for a union of faces; the normals with their points), and
    the set's size."""
    def rows(n: int) -> np.ndarray:
        return np.array_split(np.arange(n), world)[rank]

    if s.face_slices is None:
        index = rows(len(s.x))
        faces = None
    else:
        parts, faces, start = [], [], 0
        for f in s.face_slices:
            mine = np.arange(f.start, f.stop)[rows(f.stop - f.start)]
            parts.append(mine)
            faces.append(slice(start, start + len(mine)))
            start += len(mine)
        index = np.concatenate(parts)
        faces = tuple(faces)
    pick = (lambda a: None if a is None else a[index])  # noqa: E731
    return PointSet(s.x[index], faces, pick(s.partner), pick(s.observed), normals=pick(s.normals)), len(s.x)


def all_reduce(*tensors: torch.Tensor | None) -> None:
    """Sum each tensor over the ranks, in place (None is skipped)."""
    import torch.distributed as dist

    for tensor in tensors:
        if tensor is not None:
            dist.all_reduce(tensor)
