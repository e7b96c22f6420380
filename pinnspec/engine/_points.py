"""The points a run trains on, epoch by epoch: `PointStream`.

The compiled problem draws points as a pure function of (seed, epoch, block) (`CompiledProblem.sample`); the
stream holds what a run keeps between its draws:

    block, current     the resampling block in use and its points (drawn once per block)
    ahead              the next block's points, drawn while the device works on this step (`draw_ahead`)
    fixed              a quasi-Newton stage's points (the stage draws them; they hold until it redraws)
    history            an adaptive sampler's (`rad`, `rard`, `r3`) memory: what its next block starts from

Its state (the history and the adaptive points it holds, which the model chose and (seed, epoch) cannot draw
again) goes into a checkpoint with `state_dict` and comes back with `load_state_dict`.  A data-parallel rank
draws every set and keeps its shard.
"""

from __future__ import annotations

import torch

from ..compiler import CompiledProblem, Points
from ..sampling import ResidualNotFinite
from ._monitor import TrainingDiverged

__all__ = ["PointStream"]


class PointStream:
    """The points of a run whose model is ``model`` (with the spec's ``params``): an adaptive sampler follows its
    residual.  ``rank`` / ``world``: this process's shard of a data-parallel run (``world`` > 1)."""

    def __init__(self, problem: CompiledProblem, model: torch.nn.Module, params: dict[str, torch.Tensor], *,
                 seed: int, device: torch.device, dtype: torch.dtype, rank: int = 0, world: int = 1,
                 distributed: bool = False):
        self.problem, self.model, self.params = problem, model, params
        self.seed, self.device, self.dtype = seed, device, dtype
        self.rank, self.world, self.distributed = rank, world, distributed
        self.block: int | None = None
        self.current: Points | None = None
        self.ahead: tuple[int, Points] | None = None  # (block, points) drawn ahead
        self.fixed: Points | None = None  # a quasi-Newton stage's points
        self.history = None  # an adaptive sampler's history (`CompiledProblem.adapted`)

    def block_of(self, epoch: int) -> int:
        """The resampling block of ``epoch``."""
        return self.problem.point_plan.block(epoch)

    def at(self, epoch: int) -> Points:
        """The points of ``epoch``: a quasi-Newton stage's fixed ones, else its block's (drawn at the block's
        first epoch, or taken from those drawn ahead)."""
        if self.fixed is not None:
            return self.fixed
        block = self.block_of(epoch)
        if block != self.block:
            ahead, self.ahead = self.ahead, None
            self.current = ahead[1] if ahead is not None and ahead[0] == block else self.draw(epoch)
            self.block = block
        return self.current

    def draw(self, epoch: int, block: int | None = None) -> Points:
        """New points for ``epoch`` (of resampling block ``block``, by default ``epoch``'s); an adaptive sampler
        draws from the model's residual now and remembers what it drew."""
        if not self.distributed:
            try:
                points = self.problem.sample(epoch, self.seed, device=self.device, dtype=self.dtype,
                                             residual=self.problem.residual_function(self.model, self.params),
                                             block=block, history=self.history)
            except ResidualNotFinite as err:
                raise TrainingDiverged(f"training diverged at epoch {epoch + 1}: {err}") from None
            if points.history is not None:
                self.history = points.history
            return points
        from ._parallel import shard  # this rank's rows of every set

        parts = [shard(s, self.rank, self.world) for s in self.problem.point_plan.sample(self.seed, epoch)]
        return self.problem.points(epoch, [part for part, _ in parts], device=self.device, dtype=self.dtype,
                                   totals=[total for _, total in parts])

    def draw_ahead(self, epoch: int, *, last: int, stage_starts: list[int]) -> None:
        """Draw the next epoch's points now, if they are new, so that the host's sampling (and the copy to the
        device) overlaps the device's work on this step instead of following its synchronisation.  Points are a
        pure function of (seed, epoch), the same either way, except an adaptive sampler's: those follow the
        model at this step's start (docs/sampling.md, "Which model"), and a checkpoint keeps them.  Nothing is
        drawn past the run's ``last`` epoch or for an epoch that begins a stage."""
        following = epoch + 1
        block = self.block_of(following)
        if following >= last or block == self.block or following in stage_starts:
            return
        if self.ahead is None or self.ahead[0] != block:
            self.ahead = (block, self.draw(following))

    def retyped(self, dtype: torch.dtype) -> None:
        """A stage of another dtype: every point held is dropped (drawn again in ``dtype``)."""
        self.dtype = dtype
        self.block = self.current = self.ahead = None

    def follow(self, lead: PointStream) -> None:
        """Hold the points ``lead`` holds (the runs of a `RunGroup` share theirs)."""
        self.block, self.current, self.ahead = lead.block, lead.current, lead.ahead

    def state_dict(self) -> dict:
        """An adaptive sampler's part of a checkpoint: what its next block starts from, and the points the run
        holds (this block's, the next block's drawn ahead, a quasi-Newton stage's), which the model chose when
        they were drawn and so cannot be drawn again from (seed, epoch).  {} without an adaptive sampler."""
        if self.problem.adaptive is None:
            return {}
        held = {"current": self.current, "ahead": self.ahead and self.ahead[1], "fixed": self.fixed}
        history = {str(index): {"seed": seed, "block": block, "before": torch.from_numpy(before),
                                "after": torch.from_numpy(after)}
                   for index, (seed, block, before, after) in (self.history or {}).items()}
        return {"adaptive": {
            "history": history,
            "held": {role: {"epoch": p.epoch, "block": p.block,
                            "points": {str(i): torch.from_numpy(x) for i, x in p.adaptive.items()}}
                     for role, p in held.items() if p is not None and p.adaptive is not None}}}

    def load_state_dict(self, state: dict) -> dict[str, Points]:
        """Restores `state_dict` (a checkpoint without its key: nothing); returns the points of the roles held,
        as the run held them (a quasi-Newton stage's: ``fixed``, which its stage takes back)."""
        if "adaptive" not in state:
            return {}
        state = state["adaptive"]
        self.history = {int(index): (int(h["seed"]), int(h["block"]), h["before"].cpu().numpy(),
                                     h["after"].cpu().numpy()) for index, h in state["history"].items()}
        held = {role: self.problem.sample(entry["epoch"], self.seed, device=self.device, dtype=self.dtype,
                                          block=entry["block"],
                                          adaptive={int(i): x.cpu().numpy() for i, x in entry["points"].items()})
                for role, entry in state["held"].items()}
        if "current" in held:
            self.current, self.block = held["current"], held["current"].block
        if "ahead" in held:
            self.ahead = (held["ahead"].block, held["ahead"])
        return held
