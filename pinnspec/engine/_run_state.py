"""What a run has done so far: the state a checkpoint keeps besides the model, the chain and the points.

`RunState` is plain data (no torch module, no problem): the epochs done, the history rows and their columns,
the validations, the best checkpoint, the conflict counters, the lowest loss (the blow-up check), the status
and the run's lane in a `RunGroup`.  The trainer, the monitor and a group read and change it; it writes
itself into a checkpoint (`state_dict`) and reads itself back (`load_state_dict`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

__all__ = ["Best", "Counters", "GroupLane", "RunState"]


@dataclass
class Best:
    """The best checkpoint so far: its validation value, the epoch it was taken after and its weights."""

    validation: float = math.inf  # the validation rel-L2, or without a reference the held-out residual
    epoch: int | None = None
    model: dict | None = None
    params: dict | None = None


@dataclass
class Counters:
    """How many steps were diagnosed, and how many of them had each conflict (the rates of `Result.rates`)."""

    counted: int = 0
    conflicts: dict[str, int] = field(default_factory=lambda: {"R_g": 0, "R_a": 0, "R_u": 0, "R_p": 0})
    projected: int = 0


class GroupLane(NamedTuple):
    """Where a run's parameters sit in a `RunGroup`'s batched graph: lane ``lane`` (from 0) of ``lanes``, in the
    group ``group`` (an id that the group's runs share, from their run directories when it formed)."""

    lane: int
    lanes: int
    group: str


@dataclass
class RunState:
    """The run's progress: epoch k done means k updates applied (epochs count from 1 in the history)."""

    columns: list[str]  # history.csv's columns
    epoch: int = 0
    history: list[dict] = field(default_factory=list)
    validations: list[tuple[int, float]] = field(default_factory=list)  # (epoch, validation rel-L2)
    best: Best = field(default_factory=Best)
    counters: Counters = field(default_factory=Counters)
    elapsed: float = 0.0  # training seconds, over every session of the run
    lowest_loss: tuple[float, int, list[float]] | None = None  # (loss, epoch, task losses): the blow-up check
    status: str = "running"  # "running" | "completed" | "diverged" | "interrupted"
    message: str = ""
    group_lane: GroupLane | None = None  # set once the run trains in a `RunGroup`

    def state_dict(self) -> dict:
        return {
            "epoch": self.epoch,
            "best": asdict(self.best),
            "counters": asdict(self.counters),
            "history": self.history,
            "validations": self.validations,
            "elapsed": self.elapsed,
            "lowest_loss": self.lowest_loss,
            **({"group": self.group_lane._asdict()} if self.group_lane is not None else {}),
        }

    def load_state_dict(self, state: dict) -> None:
        self.epoch = state["epoch"]
        self.best = Best(**state["best"])
        self.counters = Counters(**state["counters"])
        self.history = list(state["history"])
        # a checkpoint whose history logged columns this run does not (`loss:`, `causal:` or `attention:` of a
        # condition now in no task of the grouping, hence not evaluated): they stay in history.csv, each after
        # its kind's columns, empty from the resume on; nothing that was logged is lost
        for key in dict.fromkeys(key for row in self.history for key in row):
            if key not in self.columns:
                kind = [i for i, c in enumerate(self.columns) if ":" in key and c.startswith(key.split(":")[0] + ":")]
                self.columns.insert(kind[-1] + 1 if kind else len(self.columns), key)
        self.validations = list(state["validations"])
        self.elapsed = state["elapsed"]
        self.lowest_loss = state.get("lowest_loss")  # absent in checkpoints written before the blow-up check
        group = state.get("group")  # a `RunGroup` member's lane (absent: the run trained alone)
        self.group_lane = None if group is None else GroupLane(int(group["lane"]), int(group["lanes"]),
                                                                str(group["group"]))
