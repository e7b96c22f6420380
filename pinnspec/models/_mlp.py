"""The fully connected network of the paper (Appendix C, "Network Architectures")."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..registry import MODELS

ACTIVATIONS = {
    "tanh": torch.tanh,
    "sin": torch.sin,
    "gelu": nn.functional.gelu,
    "silu": nn.functional.silu,
}


class MLP(nn.Module):
    """``depth`` hidden layers of ``width`` units, one shared trunk; outputs in field order.

    u(x) = W_{L+1} φ(W_L φ(... φ(W_1 x + b_1) ...) + b_L) + b_{L+1}.
    """

    def __init__(self, in_dim: int, out_dim: int, width: int, depth: int, activation: str):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation '{activation}' (known: {', '.join(ACTIVATIONS)})")
        self.activation_name = activation
        self.activation = ACTIVATIONS[activation]
        sizes = [in_dim] + [width] * depth + [out_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [N, d] -> [N, n_fields]
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


@dataclass(frozen=True)
class ModelFactory:
    """A model setting from a spec; ``build`` makes the network."""

    width: int = 50
    depth: int = 5
    activation: str = "tanh"
    init: str = "xavier"

    def build(self, in_dim: int, out_dim: int, *, generator: torch.Generator,
              dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> MLP:
        """Xavier-normal weights (``init = xavier``) or Xavier-uniform, zero biases,
        drawn from ``generator`` (on the CPU, so the same seed gives the same
        network on every device)."""
        model = MLP(in_dim, out_dim, self.width, self.depth, self.activation).to(dtype)
        with torch.no_grad():
            for layer in model.layers:
                if self.init == "xavier":
                    nn.init.xavier_normal_(layer.weight, generator=generator)
                elif self.init == "xavier_uniform":
                    nn.init.xavier_uniform_(layer.weight, generator=generator)
                else:
                    raise ValueError(f"unknown init '{self.init}' (known: xavier, xavier_uniform)")
                nn.init.zeros_(layer.bias)
        return model.to(device)


@MODELS.register("mlp")
def mlp(width: int = 50, depth: int = 5, activation: str = "tanh", init: str = "xavier") -> ModelFactory:
    return ModelFactory(int(width), int(depth), str(activation), str(init))
