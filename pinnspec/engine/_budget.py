"""``train time = 10 min``: a wall-time budget for a run, which its stages share; ``train stop = ...``: where a run
with noisy observations ends before its epochs do.

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

    def message(self, epoch: int) -> str:
        return (f"the observations fit their noise after epoch {epoch} (stop = discrepancy: loss at most "
                f"{self.describe()})")


#: `stop = balance` ends a run where the other tasks' loss is at most this share of the noisy observations'
BALANCE_RATIO = 1e-3


@dataclass(frozen=True)
class BalanceStop:
    """``train stop = balance``: the run ends after the first epoch of its last stage where the loss of the tasks
    without noisy observations (the equations', weights included) is at most `BALANCE_RATIO` times the loss of the
    tasks with them.  From there the loss a quasi-Newton stage minimises is the observations' misfit alone: the
    equations hold, and further steps fit the observations' noise through the fields no observation sees (an
    unknown coefficient).  Where the equations still converge (their share above the ratio) the run goes on."""

    observed: tuple[int, ...]  # the tasks with a condition whose observations state their noise
    others: tuple[int, ...]

    @classmethod
    def of(cls, problem, grouping) -> "BalanceStop | None":
        """The stop of an ``ir.Problem`` whose `train stop` is ``balance`` (its tasks: ``grouping``), else None."""
        if problem.training.setting("stop") != "balance":
            return None
        observed = grouping.tasks_holding(c.name for c in problem.conditions if c.noise)
        others = tuple(i for i in range(len(grouping.tasks)) if i not in observed)
        if not observed or not others:
            raise ValueError(f"stop = balance compares the tasks with noisy observations to the others: grouping "
                             f"'{grouping.name}' has {'no' if not observed else 'only'} tasks with noisy observations")
        return cls(observed, others)

    def reached(self, row: dict) -> bool:
        """Whether an epoch's history row (``taskI``) has the other tasks' loss within the ratio."""
        total = lambda tasks: sum(row.get(f"task{i}", float("inf")) for i in tasks)  # noqa: E731
        return total(self.others) <= BALANCE_RATIO * total(self.observed)

    def message(self, epoch: int) -> str:
        return (f"the equations hold to {BALANCE_RATIO:g} of the observations' misfit after epoch {epoch} "
                f"(stop = balance: further steps would fit the observations' noise)")


def stop_rule(problem, grouping) -> "DiscrepancyStop | BalanceStop | None":
    """The `train stop` of an ``ir.Problem`` trained on ``grouping``: None for ``never``."""
    return DiscrepancyStop.of(problem) or BalanceStop.of(problem, grouping)
