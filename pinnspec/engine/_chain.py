"""The update chain: weights -> surgery -> optimizer proposal -> alignment, composed once.

Like optax's ``chain``: frozen stages, explicit state in and out, nothing applied::

    chain = UpdateChain(surgery, optimizer, alignment, weights)
    state = chain.init(theta, shapes, num_losses)
    step = chain.update(G, theta, state, hessian=None, generator=gen)   # -> ChainStep
    theta <- theta - eta_t * step.p                                     # the trainer, and only the trainer

Sign convention (the paper's, written once for the whole package): the loss-specific gradients g_i (rows of
G), the constructed direction a, the optimizer proposal u and the aligned update p all point UPHILL, like
``.grad``; parameters move by ``-eta_t * p``.

The weights stage (`_weights`, ``weights gradnorm(...)`` / ``ntk(...)``) scales the rows first,
G_w = diag(lambda) G with lambda = ``state.weights`` [m]; surgery, the conflict indicators and the alignment
all see G_w.  The weights change only between steps (`UpdateChain.reweighted`, every ``every`` epochs, on
the trainer's host-side epoch counter); ``weights none`` keeps ``state.weights`` None and G unscaled.

Every trainer step and every benchmark that runs the chain calls :meth:`UpdateChain.update`; nothing else
composes the stages.  What the stages can do is declared, not discovered: ``uses_hessian``, ``compiles``,
``capturable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import torch
from torch import Tensor

from ..align import conflict_indicators
from ._weights import NoWeights, make_weighting

__all__ = ["UpdateChain", "ChainState", "ChainStep", "Checks"]


class ChainState(NamedTuple):
    """The chain's state: the surgery method's (None for stateless methods), the optimizer's, and the task
    weights lambda [m] (None: ``weights none``)."""

    surgery: Any
    optimizer: Any
    weights: Tensor | None = None


class Checks(NamedTuple):
    """What the host reads of one step: float64 vectors on the run's device, fetched with the losses in one
    transfer (`Trainer.step`).  1.0 is true, 0.0 false.

    ``conflicts`` [3 | 4]: the conflict indicators R_g, R_a, R_u and, when aligned, R_p;
    ``projected`` [1]: whether the alignment changed u (p != u); ``cos_pu`` [1]: cos(p, u)."""

    finite_G: Tensor  # [1]
    finite_p: Tensor  # [1]
    conflicts: Tensor  # [3 | 4]
    projected: Tensor  # [1]
    cos_pu: Tensor  # [1]


class ChainStep(NamedTuple):
    """One step of the chain: the update p [p] to apply, the new state, the checks, and the intermediate
    directions a (surgery) and u (proposal), each [p]."""

    p: Tensor
    state: ChainState
    checks: Checks
    a: Tensor
    u: Tensor


@dataclass(frozen=True)
class UpdateChain:
    """weights (G [m, p] -> diag(lambda) G) -> surgery (-> a [p]) -> optimizer proposal (a -> u [p]) ->
    alignment (u -> p [p])."""

    surgery: Any
    optimizer: Any
    alignment: Any
    weights: Any = NoWeights()

    @classmethod
    def from_training(cls, training) -> "UpdateChain":
        """The chain a spec's training statements name (``ir.Training``), built from the registries."""
        from ..registry import ALIGN, OPTIMIZERS, SURGERY

        return cls(SURGERY.get(training.surgery.name)(**training.surgery.options),
                   OPTIMIZERS.get(training.optimizer.name)(**training.optimizer.options),
                   ALIGN.get(training.align.name)(**training.align.options),
                   make_weighting(training.weights.name, **training.weights.options))

    @property
    def aligned(self) -> bool:
        """Whether the alignment stage can change u (GUA), so that R_p and the projection are reported."""
        return self.alignment.aligns

    @property
    def uses_hessian(self) -> bool:
        """Whether some steps need a Hessian-diagonal estimate (AdaHessian, SophiaG)."""
        return self.optimizer.uses_hessian

    @property
    def compiles(self) -> bool:
        """Whether the chain traces into one torch.compile graph (no host decision, no generator)."""
        return self.surgery.compiles and self.optimizer.compiles

    @property
    def sums_tasks(self) -> bool:
        """Whether the update needs G only through the weighted sum of its rows: surgery `none` (a = sum_i
        lambda_i g_i, the gradient of sum_i lambda_i L_i) and no alignment (which would read G).  A step of such a
        chain that logs no conflict statistics takes that gradient by one backward pass (`update_summed`)."""
        return self.surgery.sums and not self.alignment.aligns

    @property
    def capturable(self) -> bool:
        """Whether a CUDA graph can record the chain: it compiles (so never waits for the device) and never
        needs a Hessian estimate (a host decision from the step count)."""
        return self.compiles and not self.uses_hessian

    # ------------------------------------------------------------------ state
    def init(self, theta: Tensor, shapes: Sequence[Sequence[int]], num_losses: int) -> ChainState:
        """The initial state for the flat parameters ``theta`` [p] split into tensors of ``shapes``."""
        return ChainState(self.surgery.init(num_losses, theta.numel(), dtype=theta.dtype, device=theta.device),
                          self.optimizer.init(theta, shapes),
                          self.weights.init(num_losses, dtype=theta.dtype, device=theta.device))

    def hessian_due(self, state: ChainState) -> bool:
        return self.optimizer.hessian_due(state.optimizer)

    def state_dict(self, state: ChainState) -> dict:
        """The states by name; "weights" only where the chain weights (a run without keeps its old keys)."""
        saved = {"surgery": self.surgery.state_dict(state.surgery),
                 "optimizer": self.optimizer.state_dict(state.optimizer)}
        if state.weights is not None:
            saved["weights"] = state.weights.detach().clone()
        return saved

    def load_state_dict(self, saved: dict) -> ChainState:
        weights = saved.get("weights")
        if (weights is None) != (self.weights.measures is None):
            raise ValueError(f"the checkpoint {'has no' if weights is None else 'has'} task weights and the "
                             f"chain's weights stage is '{self.weights.name}'")
        return ChainState(self.surgery.load_state_dict(saved["surgery"]),
                          self.optimizer.load_state_dict(saved["optimizer"]),
                          None if weights is None else weights.detach().clone())

    def reweighted(self, state: ChainState, magnitudes: Tensor) -> ChainState:
        """The state with the weights moved towards the balancing target of the per-task ``magnitudes`` [m]
        (`_weights`): a device computation, between two steps."""
        return state._replace(weights=self.weights.update(state.weights, magnitudes))

    # ------------------------------------------------------------------ the step
    def update(self, G: Tensor, theta: Tensor, state: ChainState, *, hessian: Tensor | None = None,
               generator: torch.Generator | None = None) -> ChainStep:
        """One step: G [m, p], theta [p] (the parameters now) -> p [p] and the new state; a pure function
        of its arguments (``generator``: PCGrad's task orders), compiled whole where the chain compiles."""
        if state.weights is not None:
            G = state.weights.to(G.dtype)[:, None] * G  # [m, p]: diag(lambda) G
        a, surgery_state = self.surgery(G, state.surgery, generator=generator)  # [p]
        u, tentative = self.optimizer.propose(a, state.optimizer, params=theta, hessian=hessian)  # [p]
        p, optimizer_state = self.alignment.align(u, G, tentative, self.optimizer, params=theta)  # [p]
        checks = _checks(G, u, p, conflict_indicators(G, [a, u] + ([p] if self.aligned else [])))
        return ChainStep(p, ChainState(surgery_state, optimizer_state, state.weights), checks, a, u)

    def update_summed(self, g: Tensor, theta: Tensor, state: ChainState, *, hessian: Tensor | None = None
                      ) -> ChainStep:
        """The step of a chain that `sums_tasks` from g [p], the gradient of sum_i lambda_i L_i (what surgery
        `none` makes of diag(lambda) G, by one backward pass instead of m): the same p to rounding, no conflict
        statistics (the indicators read 0; the step is not counted in the rates).  Such a chain does not align:
        p is u (projected 0, cos(p, u) 1; neither is logged for a chain that does not align)."""
        u, tentative = self.optimizer.propose(g, state.optimizer, params=theta, hessian=hessian)  # [p]
        p, optimizer_state = self.alignment.align(u, None, tentative, self.optimizer, params=theta)  # [p]
        no = g.new_zeros(1, dtype=torch.float64)
        checks = Checks(_flag(torch.isfinite(g).all()), _flag(torch.isfinite(p).all()),
                        g.new_zeros(3, dtype=torch.float64), no, no + 1)
        return ChainStep(p, ChainState(state.surgery, optimizer_state, state.weights), checks, g, u)


def _flag(t: Tensor) -> Tensor:
    """A boolean or number as a float64 [1]."""
    return t.reshape(1).to(torch.float64)


def _checks(G: Tensor, u: Tensor, p: Tensor, conflicts: Tensor) -> Checks:
    """The step's checks: G (or the summed gradient) and p finite, the ``conflicts`` [3 | 4], whether the
    alignment changed u, and cos(p, u)."""
    u64, p64 = u.detach().to(torch.float64), p.detach().to(torch.float64)
    return Checks(_flag(torch.isfinite(G).all()), _flag(torch.isfinite(p).all()), conflicts,
                  _flag((p64 - u64).norm() > 0), _flag(u64 @ p64 / (u64.norm() * p64.norm() + 1e-30)))

