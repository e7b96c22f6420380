"""``train time = 10 min``: a wall-time budget for a run, which its stages share.

The clock is the run's training time (`RunState.elapsed`: every session of a resumed run, from the first step's
setup to its last epoch).  A stage begins with a deadline: each stage but the last at most an equal share of the
time left when it begins (``left / stages left``), the last whatever is left.  A stage whose deadline passes ends
after the epoch in progress: the next stage begins there (the stages' later epochs move forward by what this one
did not train) or, in the last stage, the run ends, completed.  The epochs a spec gives are then caps.  Where the
stages ended is in the checkpoint (a resumed run continues the same plan) and in ``result.json`` (``stage_epochs``:
the epochs each stage trained; a spec with those epochs and no time repeats the run on any machine).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TimeBudget:
    """The budget of a run of ``stages`` stages (``seconds`` None: no budget, nothing ends early)."""

    seconds: float | None
    stages: int
    deadline: float | None = None  # the elapsed training time at which the current stage ends

    def stage_began(self, index: int, elapsed: float) -> None:
        """Stage ``index`` begins at ``elapsed`` seconds of training: its deadline."""
        if self.seconds is None:
            return
        left, stages_left = max(self.seconds - elapsed, 0.0), self.stages - index
        self.deadline = self.seconds if stages_left <= 1 else elapsed + left / stages_left

    def spent(self, elapsed: float) -> bool:
        """Whether the current stage's share is spent at ``elapsed`` seconds of training."""
        return self.deadline is not None and elapsed >= self.deadline

    def state_dict(self) -> dict:
        return {"budget_deadline": self.deadline}

    def load_state_dict(self, state: dict) -> None:
        self.deadline = state.get("budget_deadline")


@dataclass(frozen=True)
class DiscrepancyStop:
    """``train stop = discrepancy``: Morozov's discrepancy principle for observations with stated noise.  The
    loss of a data condition with K observed fields is the mean over its observations of the summed squared
    misfits; at the exact fields it is K sigma^2 on average (the noise's variance per field).  A model whose loss
    is below that fits the noise too, so the run ends after the first epoch of its last stage (an earlier one only
    starts the fit) where every such condition's loss is at most its K sigma^2 (``thresholds``: condition -> K
    sigma^2)."""

    thresholds: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, problem) -> "DiscrepancyStop | None":
        """The stop of an ``ir.Problem`` whose `train stop` is ``discrepancy``, else None."""
        if problem.training.setting("stop") != "discrepancy":
            return None
        return cls(tuple((c.name, len(c.region.fields) * c.noise ** 2) for c in problem.conditions if c.noise))

    def reached(self, row: dict) -> bool:
        """Whether the losses of an epoch's history row (``loss:NAME``) are all within their thresholds."""
        return all(row.get(f"loss:{name}", float("inf")) <= threshold for name, threshold in self.thresholds)

    def describe(self) -> str:
        return ", ".join(f"{name} {threshold:.3g}" for name, threshold in self.thresholds)
