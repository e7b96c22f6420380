"""An MLP on Fourier features, with optional random weight factorization."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import MODELS
from ._factory import EmbeddedFactory
from ._layers import FourierFeatures, Network, apply_dense, dense, embed, embedded_dim, initialise_all


class FourierMLP(Network):
    """u(x) = W_{L+1} phi(... phi(W_1 gamma(x) + b_1) ...) + b_{L+1}, gamma the Fourier features.

    Fourier features: Tancik et al. 2020 (NeurIPS); for PINNs Wang, Wang & Perdikaris 2021 (CMAME 384,
    113938).  Each W may be factorized W = diag(exp(s)) V (RWF, Wang et al. 2022, arXiv:2210.01274).
    Without an embedding (``embedding`` None) the trunk reads x itself."""

    def __init__(self, in_dim: int, out_dim: int, width: int, depth: int, activation: str,
                 embedding: FourierFeatures | None, rwf: tuple[float, float] | None):
        super().__init__()
        self.activation_name = activation
        self.embedding = embedding
        first = embedded_dim(in_dim, embedding)
        sizes = [first] + [width] * depth + [out_dim]
        self.layers = nn.ModuleList(dense(a, b, rwf) for a, b in zip(sizes[:-1], sizes[1:]))

    def initialise(self, init: str, generator: torch.Generator) -> None:
        initialise_all(self.embedding, self.layers, init, generator)

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        h = embed(ops, self.embedding, x)  # [N, 2 features] (or x)
        for layer in self.layers[:-1]:
            h = ops.activation(apply_dense(ops, layer, h), self.activation_name)  # [N, width]
        return apply_dense(ops, self.layers[-1], h)


@MODELS.register("fourier_mlp")
def fourier_mlp(width: int = 50, depth: int = 5, activation: str = "tanh", init: str = "xavier",
                fourier: float = 1.0, features: int = 128, trainable_fourier: bool = False,
                rwf: bool = False, rwf_mu: float = 1.0, rwf_sigma: float = 0.1) -> EmbeddedFactory:
    """``fourier``: sigma of B (0: no embedding, the plain trunk, e.g. with ``rwf = true``)."""
    return EmbeddedFactory.of(FourierMLP, width, depth, activation, init, fourier, features, trainable_fourier, rwf,
                              rwf_mu, rwf_sigma)
