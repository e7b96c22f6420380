"""An MLP whose activations have trainable slopes: phi(n a z)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..registry import MODELS
from ._factory import NetworkFactory
from ._layers import Network, apply_dense, check_choice, initialise_dense

SLOPES = ("global", "layer", "neuron")


class AdaptiveSlopeMLP(Network):
    """h_k = phi(n a_k * (W_k h_{k-1} + b_k)) with a trainable slope a and a fixed scale factor n >= 1;
    a starts at 1/n, so the network starts as the plain MLP with the same weights.

    ``slope = global``: one a for the whole network (GAAF: Jagtap, Kawaguchi & Karniadakis 2020, "Adaptive
    activation functions accelerate convergence in deep and physics-informed neural networks", J. Comput.
    Phys. 404, 109136); ``layer``: one a per hidden layer (L-LAAF) and ``neuron``: one per unit (N-LAAF)
    (Jagtap, Kawaguchi & Karniadakis 2020, "Locally adaptive activation functions with slope recovery for
    deep and physics-informed neural networks", Proc. R. Soc. A 476, 20200334).  ``slope_recovery`` = w > 0
    adds that paper's slope-recovery term w S(a) to the first task's loss (`loss_term`)."""

    def __init__(self, in_dim: int, out_dim: int, width: int, depth: int, activation: str, slope: str,
                 scale: float, slope_recovery: float = 0.0):
        super().__init__()
        self.activation_name = activation
        self.slope_kind, self.scale = slope, float(scale)
        self.slope_recovery = float(slope_recovery)
        sizes = [in_dim] + [width] * depth + [out_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        shape = {"global": (1, ()), "layer": (depth, ()), "neuron": (depth, (width,))}
        count, each = shape[slope]
        self.slopes = nn.ParameterList(nn.Parameter(torch.full(each, 1.0 / self.scale)) for _ in range(count))

    def initialise(self, init: str, generator: torch.Generator) -> None:
        for layer in self.layers:
            initialise_dense(layer, init, generator)
        with torch.no_grad():
            for a in self.slopes:
                a.fill_(1.0 / self.scale)

    def loss_term(self) -> torch.Tensor | None:
        """w S(a), S(a) = 1 / mean_k exp(mean_i a_i^k) over the hidden layers k (one a for GAAF, one per layer
        for L-LAAF, the mean over a layer's units for N-LAAF): Jagtap et al. 2020 (Proc. R. Soc. A),
        eq. 2.7; it grows as the slopes shrink, so minimising it pushes them up.  None when w = 0."""
        if not self.slope_recovery:
            return None
        means = torch.stack([a.mean() for a in self.slopes])  # [count]
        return self.slope_recovery / torch.exp(means).mean()

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        h = x
        for k, layer in enumerate(self.layers[:-1]):
            a = self.slopes[0 if self.slope_kind == "global" else k]  # [] or [width]
            h = ops.activation(ops.scale(apply_dense(ops, layer, h), a * self.scale), self.activation_name)  # [N, width]
        return apply_dense(ops, self.layers[-1], h)


@dataclass(frozen=True)
class AdaptiveSlopeFactory(NetworkFactory):
    slope: str = "layer"
    scale: float = 10.0
    slope_recovery: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        check_choice("slope", self.slope, SLOPES)
        if self.scale < 1:
            raise ValueError(f"scale (n) must be >= 1, got {self.scale}")
        if self.slope_recovery < 0:
            raise ValueError(f"slope_recovery must be >= 0, got {self.slope_recovery}")

    def make(self, in_dim: int, out_dim: int) -> AdaptiveSlopeMLP:
        return AdaptiveSlopeMLP(in_dim, out_dim, self.width, self.depth, self.activation, self.slope, self.scale,
                                self.slope_recovery)


@MODELS.register("adaptive_mlp")
def adaptive_mlp(width: int = 50, depth: int = 5, activation: str = "tanh", init: str = "xavier",
                 slope: str = "layer", scale: float = 10.0, slope_recovery: float = 0.0) -> AdaptiveSlopeFactory:
    """``slope``: global (GAAF), layer (L-LAAF) or neuron (N-LAAF); ``scale``: n; ``slope_recovery``: the
    weight of the slope-recovery term in the first task's loss (0: none)."""
    return AdaptiveSlopeFactory(int(width), int(depth), str(activation), str(init), str(slope), float(scale),
                                float(slope_recovery))
