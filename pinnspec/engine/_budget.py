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
