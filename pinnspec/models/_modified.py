"""The modified MLP: two encoders U, V of the input gate every hidden layer."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import MODELS
from ._factory import EmbeddedFactory
from ._layers import FourierFeatures, Network, apply_dense, dense, embed, embedded_dim, initialise_all


class ModifiedMLP(Network):
    """Wang, Teng & Perdikaris 2021, "Understanding and mitigating gradient flow pathologies in
    physics-informed neural networks" (SIAM J. Sci. Comput. 43(5), A3055), eq. (3.12):

        U = phi(X W_u + b_u),  V = phi(X W_v + b_v),
        Z_k = phi(H_k W_k + b_k),  H_{k+1} = (1 - Z_k) * U + Z_k * V,  k = 1..depth,
        u = H_{depth+1} W + b,

    with H_1 = X (every hidden layer gated, as in the authors' jaxpi code; X: the input, or its Fourier
    features).  Dense layers may be factorized (RWF)."""

    def __init__(self, in_dim: int, out_dim: int, width: int, depth: int, activation: str,
                 embedding: FourierFeatures | None, rwf: tuple[float, float] | None):
        super().__init__()
        self.activation_name = activation
        self.embedding = embedding
        first = embedded_dim(in_dim, embedding)
        self.encoder_u = dense(first, width, rwf)
        self.encoder_v = dense(first, width, rwf)
        sizes = [first] + [width] * depth + [out_dim]
        self.layers = nn.ModuleList(dense(a, b, rwf) for a, b in zip(sizes[:-1], sizes[1:]))

    def initialise(self, init: str, generator: torch.Generator) -> None:
        initialise_all(self.embedding, (self.encoder_u, self.encoder_v, *self.layers), init, generator)

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        act = self.activation_name
        h = embed(ops, self.embedding, x)  # [N, e]
        u = ops.activation(apply_dense(ops, self.encoder_u, h), act)  # [N, width]
        v = ops.activation(apply_dense(ops, self.encoder_v, h), act)  # [N, width]
        v_minus_u = v - u
        for layer in self.layers[:-1]:
            z = ops.activation(apply_dense(ops, layer, h), act)  # [N, width]
            h = u + z * v_minus_u  # (1 - Z) U + Z V
        return apply_dense(ops, self.layers[-1], h)


@MODELS.register("modified_mlp")
def modified_mlp(width: int = 50, depth: int = 5, activation: str = "tanh", init: str = "xavier",
                 fourier: float = 0.0, features: int = 128, trainable_fourier: bool = False,
                 rwf: bool = False, rwf_mu: float = 1.0, rwf_sigma: float = 0.1) -> EmbeddedFactory:
    """``fourier``: sigma of a Fourier embedding of the input (0, the default: none, as in the paper)."""
    return EmbeddedFactory.of(ModifiedMLP, width, depth, activation, init, fourier, features, trainable_fourier, rwf,
                              rwf_mu, rwf_sigma)
