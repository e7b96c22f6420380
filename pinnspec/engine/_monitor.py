"""What watches a run without changing it: validation, divergence, progress and notices (`Monitor`), on the
test and validation points (`Evaluation`).

    validate     every `validate ... every N` epochs and at the end of each stage: the validation rel-L2 (or,
                 without a reference, the summed task losses on the epoch's points) picks the best checkpoint
    divergence   a non-finite loss, gradient or update, or a loss past ``diverge_factor`` times its lowest value,
                 stops the run naming the task (and condition) and the epoch: `TrainingDiverged`
    progress     a tqdm bar, or one log line per validation (``--quiet``)
    notices      one line each on stderr, from rank 0: how steps run, stages beginning, conditions left out
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable

import torch

from .. import ir
from ..compiler import CompiledProblem, Points
from ..sampling import files_outside_domain
from ._run_state import Best, RunState

__all__ = ["Evaluation", "Monitor", "TrainingDiverged", "EVAL_BATCH", "weights_loaded"]

#: points per forward pass when the model is evaluated on the test or validation points
EVAL_BATCH = 65_536
#: the resampling block of the held-out points of a run without a reference (`Evaluation.held_out`): apart from
#: the training blocks (< 2^32) and a quasi-Newton stage's (2^32 + its first epoch), so a draw of their own
HELD_OUT_BLOCK = 2 ** 40


class TrainingDiverged(RuntimeError):
    pass


class Evaluation:
    """The test and validation points in the run's dtype (from the problem's float64 points), their reference
    values (None without a reference) and the model's rel-L2 on them; without a reference, the held-out points
    whose residuals choose the kept model instead (`held_out`)."""

    def __init__(self, problem: CompiledProblem, model: torch.nn.Module, *, device: torch.device,
                 dtype: torch.dtype):
        self.problem, self.model, self.device = problem, model, device
        self.has_reference = problem.has_reference
        self._held_out: Points | None = None
        self.validation_points = self.validation_reference = self.test_reference = None
        self.retyped(dtype)
        if self.has_reference:  # without one, the checkpoint is chosen on the held-out residual
            # the references come from the float64 points: a float32 copy can round past the domain's edge
            # (t = pi/2 becomes 1.5707964 > pi/2, outside a generated reference's time span)
            self.validation_reference = problem.reference(problem.validation_points()).to(device)
            self.test_reference = problem.reference(problem.test_points()).to(device)

    def retyped(self, dtype: torch.dtype) -> None:
        """The points in ``dtype`` (a stage of another dtype)."""
        self.dtype, self._held_out = dtype, None
        self.test_points = torch.as_tensor(self.problem.test_points(), dtype=dtype, device=self.device)
        if self.has_reference:
            self.validation_points = torch.as_tensor(self.problem.validation_points(), dtype=dtype,
                                                     device=self.device)

    def held_out(self) -> Points:
        """Every condition's points drawn once more, apart from the training points (the sampler's base draw of
        block `HELD_OUT_BLOCK` of the run's seed): what chooses the kept model of a run without a reference.  A
        deterministic sampler (``grid``) and a data file give the training points again."""
        if self._held_out is None:
            self._held_out = self.problem.sample(0, device=self.device, dtype=self.dtype, block=HELD_OUT_BLOCK)
        return self._held_out

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.model(x[i: i + EVAL_BATCH]) for i in range(0, len(x), EVAL_BATCH)])

    def rel_l2(self, x: torch.Tensor, reference: torch.Tensor) -> float:
        """(sum_j ||u(x_j) - u*(x_j)||^2)^(1/2) / (sum_j ||u*(x_j)||^2)^(1/2)  (Appendix C.8)."""
        error = self.predict(x).double() - reference.double()
        return float(error.norm() / reference.double().norm())

    def test_error(self, model_state: dict | None = None) -> float | None:
        """The test rel-L2 of the model now, or of the weights ``model_state`` (the model is left as it was)."""
        if not self.has_reference:
            return None
        if model_state is None:
            return self.rel_l2(self.test_points, self.test_reference)
        with weights_loaded(self.model, model_state):
            return self.rel_l2(self.test_points, self.test_reference)


@contextlib.contextmanager
def weights_loaded(model: torch.nn.Module, state: dict | None):
    """``with weights_loaded(model, state):`` the model holds ``state`` (None: its own) inside the block and its
    own weights after it."""
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if state is not None:
        model.load_state_dict(state)
    try:
        yield model
    finally:
        model.load_state_dict(saved)


class Monitor:
    """Validation, divergence checks, progress and notices of one run (``rank``: notices and files from rank 0
    alone; ``progress``: a tqdm bar; ``log``: a callable that gets one line per validation and the closing
    message)."""

    def __init__(self, spec, problem: CompiledProblem, evaluation: Evaluation, grouping: ir.Grouping,
                 condition_names: list[str], *, rank: int = 0, world: int = 1, distributed: bool = False,
                 progress: bool = False, log: Callable[[str], None] | None = None):
        self.spec, self.problem, self.evaluation = spec, problem, evaluation
        self.grouping, self.condition_names = grouping, condition_names
        self.rank, self.world, self.distributed = rank, world, distributed
        self.progress, self.log = progress, log
        training = spec.ir.training
        self.every = spec.ir.validation.every
        self.diverge_factor = float(training.setting("diverge_factor"))
        self.bar = None

    def notice(self, text: str, *, prefix: bool = True) -> None:
        """A one-line notice about how steps run (rank 0 only); ``prefix``: the compile setting first."""
        if self.rank == 0:
            setting = f"compile = {self.spec.ir.training.setting('compile')}: " if prefix else ""
            print(f"pinnspec: {setting}{text}", file=sys.stderr)

    def announce(self) -> None:
        """What the run says before it trains: data or reference files with rows outside the domain (warnings),
        the enforced conditions, and the conditions the grouping leaves out."""
        p = self.spec.ir
        if self.rank == 0 and p.domain is not None:
            read_reference = None
            if isinstance(p.reference, ir.FileReference):
                read_reference = lambda: self.problem._file_reference()[0]  # noqa: E731  (read once, kept)
            for message in files_outside_domain(p, reference_points=read_reference):
                print(f"pinnspec: warning: {message}", file=sys.stderr)
        if p.enforced:
            how = [f"{h.field} = A + D*N ({', '.join(h.conditions)})" for h in p.hard_constraints] + [
                f"{e.coordinate} embedded periodically ({e.condition})" for e in p.periodic_embeddings]
            one = len(p.enforced) == 1
            self.notice(f"enforce: {', '.join(p.enforced)} hold{'s' if one else ''} by construction "
                        f"({'; '.join(how)}); {'it is' if one else 'they are'} in no task (the loss is logged)",
                        prefix=False)
        if self.problem.left_out:
            one = len(self.problem.left_out) == 1
            self.notice(f"grouping '{self.grouping.name}': {', '.join(self.problem.left_out)} "
                        f"{'is' if one else 'are'} in no task: not evaluated, no loss logged", prefix=False)

    # ================================================================== divergence
    def divergence(self, epoch: int, losses, G: torch.Tensor | None, p: torch.Tensor) -> str:
        """What a non-finite first-order step says: the first task whose loss (naming its non-finite conditions)
        or gradient is not finite, else the update (G None: a summed step, without per-task gradients)."""
        at = f"training diverged at epoch {epoch + 1}"
        for i, label in enumerate(self.grouping.labels):
            if not torch.isfinite(losses.task_list[i]):
                bad = [c for c in self.condition_names if not torch.isfinite(losses.conditions[c])]
                where = f" (condition {', '.join(bad)})" if bad else ""
                value = float(losses.task_list[i].detach())
                return f"{at}: the loss of task {i} '{label}'{where} is {value}"
        if G is None:  # a summed step
            return f"{at}: the gradient of the weighted sum of the task losses, or the update p, is not finite"
        for i, label in enumerate(self.grouping.labels):
            if not torch.isfinite(G[i]).all():
                return f"{at}: the gradient of task {i} '{label}' is not finite"
        return f"{at}: the update p is not finite"

    def check_blow_up(self, run: RunState, epoch: int, loss: float, tasks: list[float]) -> None:
        """A loss that grows past ``diverge_factor`` times its lowest value so far stops the run as diverged,
        like a NaN, naming the task that grew most (relative to its value at the lowest loss)."""
        if run.lowest_loss is None or loss < run.lowest_loss[0]:
            run.lowest_loss = (loss, epoch + 1, list(tasks))
            return
        lowest, at, lowest_tasks = run.lowest_loss
        if not self.diverge_factor or loss <= self.diverge_factor * lowest:
            return
        growth = [value / max(before, 1e-300) for value, before in zip(tasks, lowest_tasks)]
        i = max(range(len(tasks)), key=growth.__getitem__)
        raise TrainingDiverged(
            f"training diverged at epoch {epoch + 1}: the loss {loss:.3e} exceeds diverge_factor = "
            f"{self.diverge_factor:g} times its lowest value {lowest:.3e} (epoch {at}); task {i} "
            f"'{self.grouping.labels[i]}' grew most, from {lowest_tasks[i]:.3e} to {tasks[i]:.3e} (a smaller "
            "learning rate may help; --set diverge_factor=0 turns this check off)")

    # ================================================================== validation
    def validate(self, run: RunState, epoch: int, row: dict, model: torch.nn.Module, params: dict,
                 points: Points, engine: str | None, attention: dict | None) -> None:
        """Validation after epoch ``epoch + 1`` (``points``: the run's of that epoch, where causal weights are
        logged); the best so far is the checkpoint the run reports.  Without a reference the checkpoint is chosen
        on the held-out residual instead: the summed task losses of the model now on held-out points
        (`Evaluation.held_out`)."""
        if attention:  # `weights rba`: the mean per-point weight of each condition
            row.update({f"attention:{name}": float(w.mean()) for name, w in attention.items()})
        if self.problem.causal:  # the last chunk's weight (the smallest): 1 once the residual is small everywhere
            weights = self.problem.causal_weights(model, points, params, engine=engine)
            row.update({f"causal:{name}": float(w[-1]) for name, w in weights.items()})
        evaluation = self.evaluation
        if evaluation.has_reference:
            value = evaluation.rel_l2(evaluation.validation_points, evaluation.validation_reference)
            row["validation"] = value
            run.validations.append((epoch + 1, value))
        else:
            value = self.held_out_loss(model, params, engine)
        if value < run.best.validation:
            run.best = Best(value, epoch + 1, {k: v.detach().clone() for k, v in model.state_dict().items()},
                            {k: v.detach().clone() for k, v in params.items()})

    def held_out_loss(self, model, params, engine: str | None) -> float:
        """The summed task losses of the model now on the held-out points (every rank evaluates them all)."""
        losses = self.problem.losses(model, self.evaluation.held_out(), params, self.grouping.name, engine=engine)
        return float(losses.tasks.detach().sum().to(torch.float64))

    def validated(self, epoch: int, *, last: int, stage_starts: list[int]) -> bool:
        """Whether epoch ``epoch`` validates: every `every` epochs, at the end of each stage and at the run's
        ``last`` epoch."""
        return (epoch + 1) % self.every == 0 or epoch + 1 in stage_starts or epoch == last - 1

    # ================================================================== progress
    def begin(self, run: RunState, epochs: int) -> None:
        if self.progress:
            from tqdm import tqdm

            self.bar = tqdm(total=epochs, initial=run.epoch, desc=self.spec.ir.name, unit="epoch",
                            dynamic_ncols=True)

    def retotal(self, epochs: int) -> None:
        """The run now ends at ``epochs`` (a stage ended early: `train time`)."""
        if self.bar is not None:
            self.bar.total = epochs
            self.bar.refresh()

    def record(self, run: RunState, row: dict, epoch: int, epochs: int, validated: bool, stage: str | None,
               aligned: bool) -> None:
        """The bar moves on (its text every 10 epochs and at validations), or a log line at a validation."""
        if self.bar is not None:
            self.bar.update(1)
            if epoch % 10 == 0 or validated:
                self.bar.set_postfix_str(self.postfix(run, row, stage, aligned), refresh=False)
        elif validated and self.log:
            self.log(f"epoch {epoch + 1}/{epochs}: {self.postfix(run, row, stage, aligned)}")

    def postfix(self, run: RunState, row: dict, stage: str | None, aligned: bool) -> str:
        parts = [f"loss {row['loss']:.3e}"]
        if stage is not None:
            parts.insert(0, stage)
        if run.validations:
            parts.append(f"val {run.validations[-1][1]:.3e}")
        n = max(run.counters.counted, 1)
        parts.append(f"R_u {run.counters.conflicts['R_u'] / n:.0%}")
        if aligned:
            parts.append(f"R_p {run.counters.conflicts['R_p'] / n:.0%}")
        return ", ".join(parts)

    def end(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

