"""Learning-rate schedules: eta_t for the epoch index t = 0 .. T-1 (paper, Appendix C.3).

The default warms up linearly from 0 over ``warmup`` epochs, then decays by
a cosine to ``lr_min``; epoch 0 runs at eta = 0 (its update is empty, and it
is not counted in the conflict rates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..registry import SCHEDULES


def _cosine(t: float, span: float, lr0: float, lr_min: float) -> float:
    return lr_min + 0.5 * (lr0 - lr_min) * (1.0 + math.cos(math.pi * t / span))


@SCHEDULES.register("warmup_cosine")
@dataclass(frozen=True)
class WarmupCosine:
    """eta_t = lr0 t / w for t < w; lr_min + (lr0 - lr_min)(1 + cos(pi (t - w) / (T - w))) / 2 after."""

    warmup: int = 100
    lr_min: float = 1e-4

    def __call__(self, t: int, total: int, lr0: float) -> float:
        if t < self.warmup:
            return lr0 * t / self.warmup
        return _cosine(t - self.warmup, max(total - self.warmup, 1), lr0, self.lr_min)


@SCHEDULES.register("constant")
@dataclass(frozen=True)
class Constant:
    """eta_t = lr0."""

    def __call__(self, t: int, total: int, lr0: float) -> float:
        return lr0


@SCHEDULES.register("warmup_constant")
@dataclass(frozen=True)
class WarmupConstant:
    """eta_t = lr0 t / w for t < w, then lr0 (the paper's Heat-MS 3-loss schedule with lr0 = 1e-4)."""

    warmup: int = 100

    def __call__(self, t: int, total: int, lr0: float) -> float:
        return lr0 * t / self.warmup if t < self.warmup else lr0


@SCHEDULES.register("cosine")
@dataclass(frozen=True)
class Cosine:
    """eta_t = lr_min + (lr0 - lr_min)(1 + cos(pi t / T)) / 2."""

    lr_min: float = 1e-4

    def __call__(self, t: int, total: int, lr0: float) -> float:
        return _cosine(t, max(total, 1), lr0, self.lr_min)
