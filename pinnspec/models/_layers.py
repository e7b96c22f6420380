"""The building blocks of the networks beyond the plain MLP, one per paper, and the base class that lets
the forward derivative engine propagate derivatives through them.

A `Network` writes its map once, ``compute(ops, x)``, over a small set of operations (``ops.linear``,
``ops.activation``, ``ops.cos_sin``, ``ops.scale`` (by a constant in x) and +, -, * between values): its ``forward`` runs it on tensors
(`TENSOR_OPS`), and the forward engine (``pinnspec.forward``) runs the same code on Taylor jets.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ._mlp import ACTIVATIONS

INITS = ("xavier", "xavier_uniform")


def flag(name: str, value) -> bool:
    """A spec's ``true``/``false`` (a bare name arrives as a string) or a Python bool."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{name} must be true or false, got {value!r}")


def check_choice(name: str, value: str, known) -> str:
    if value not in known:
        raise ValueError(f"unknown {name} '{value}' (known: {', '.join(known)})")
    return value


class TensorOps:
    """``compute``'s operations on plain tensors (a network's forward)."""

    @staticmethod
    def linear(x, weight, bias=None):
        return F.linear(x, weight, bias)

    @staticmethod
    def activation(x, name: str):
        return ACTIVATIONS[name](x)

    @staticmethod
    def scale(x, factor):
        """x * factor, factor constant in x (a number or a parameter)."""
        return x * factor

    @staticmethod
    def cos_sin(x):
        return torch.cat([torch.cos(x), torch.sin(x)], dim=-1)


TENSOR_OPS = TensorOps()


class Network(nn.Module):
    """A network written once as ``compute(ops, x)``; ``activation_name`` names its activation."""

    activation_name: str

    def compute(self, ops, x):
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [N, d] -> [N, n_fields]
        return self.compute(TENSOR_OPS, x)


def init_weight(weight: torch.Tensor, init: str, generator: torch.Generator) -> None:
    """Xavier-normal (``xavier``) or Xavier-uniform weights, as the MLP draws them."""
    if init == "xavier":
        nn.init.xavier_normal_(weight, generator=generator)
    elif init == "xavier_uniform":
        nn.init.xavier_uniform_(weight, generator=generator)
    else:
        raise ValueError(f"unknown init '{init}' (known: {', '.join(INITS)})")


class FourierFeatures(nn.Module):
    """gamma(x) = [cos(B x), sin(B x)], B [features, d] with entries ~ N(0, sigma^2), or, with one sigma per
    input (``sigma`` a tuple of d), column j ~ N(0, sigma_j^2): a length scale per coordinate.

    Tancik et al. 2020, "Fourier Features Let Networks Learn High Frequency Functions in Low Dimensional
    Domains" (NeurIPS); as a PINN embedding: Wang, Wang & Perdikaris 2021, "On the eigenvector bias of
    Fourier feature networks" (CMAME 384, 113938), whose form (no 2 pi in the argument) jaxpi and this
    class use.  ``trainable``: B is a parameter; otherwise a buffer (saved with the model, not trained)."""

    def __init__(self, in_dim: int, features: int, sigma: float | tuple[float, ...], trainable: bool):
        super().__init__()
        self.sigma = tuple(map(float, sigma)) if isinstance(sigma, tuple) else float(sigma)
        self.trainable = bool(trainable)
        frequencies = torch.empty(features, in_dim)  # B [features, d]
        if trainable:
            self.frequencies = nn.Parameter(frequencies)
        else:
            self.register_buffer("frequencies", frequencies)
        self.out_dim = 2 * features

    def initialise(self, generator: torch.Generator) -> None:
        with torch.no_grad():
            if isinstance(self.sigma, tuple):
                self.frequencies.normal_(0.0, 1.0, generator=generator)
                self.frequencies.mul_(torch.tensor(self.sigma, dtype=self.frequencies.dtype))  # column j * sigma_j
            else:
                self.frequencies.normal_(0.0, self.sigma, generator=generator)

    def compute(self, ops, x):  # [N, d] -> [N, 2 features]
        return ops.cos_sin(ops.linear(x, self.frequencies))


class FactorizedLinear(nn.Module):
    """A dense layer with random weight factorization: W = diag(exp(s)) V, trained in (s, V, b).

    Wang, Wang, Wang & Perdikaris 2022, "Random Weight Factorization Improves the Training of Continuous
    Neural Representations" (arXiv:2210.01274): at initialisation s ~ N(mu, sigma) per output unit and
    V = diag(exp(-s)) W0 with W0 the usual (Xavier) draw, so the layer starts as the plain one."""

    def __init__(self, in_dim: int, out_dim: int, mu: float, sigma: float):
        super().__init__()
        self.mu, self.sigma = float(mu), float(sigma)
        self.log_scale = nn.Parameter(torch.empty(out_dim))  # s [out]
        self.direction = nn.Parameter(torch.empty(out_dim, in_dim))  # V [out, in]
        self.bias = nn.Parameter(torch.empty(out_dim))  # b [out]

    @property
    def weight(self) -> torch.Tensor:  # W = diag(exp(s)) V [out, in]
        return self.direction * torch.exp(self.log_scale).unsqueeze(1)

    def initialise(self, init: str, generator: torch.Generator) -> None:
        with torch.no_grad():
            w0 = torch.empty_like(self.direction)
            init_weight(w0, init, generator)
            self.log_scale.normal_(self.mu, self.sigma, generator=generator)
            self.direction.copy_(w0 * torch.exp(-self.log_scale).unsqueeze(1))
            self.bias.zero_()


def dense(in_dim: int, out_dim: int, rwf: tuple[float, float] | None) -> nn.Module:
    """nn.Linear, or a `FactorizedLinear` when ``rwf`` = (mu, sigma)."""
    return nn.Linear(in_dim, out_dim) if rwf is None else FactorizedLinear(in_dim, out_dim, *rwf)


def initialise_dense(layer: nn.Module, init: str, generator: torch.Generator) -> None:
    if isinstance(layer, FactorizedLinear):
        layer.initialise(init, generator)
        return
    with torch.no_grad():
        init_weight(layer.weight, init, generator)
        nn.init.zeros_(layer.bias)


def apply_dense(ops, layer: nn.Module, x):
    return ops.linear(x, layer.weight, layer.bias)


def embedded_dim(in_dim: int, embedding: FourierFeatures | None) -> int:
    """The width of what the trunk reads: the input's, or the embedding's."""
    return in_dim if embedding is None else embedding.out_dim


def embed(ops, embedding: FourierFeatures | None, x):  # [N, d] -> [N, 2 features] (or x itself)
    return x if embedding is None else embedding.compute(ops, x)


def initialise_all(embedding: FourierFeatures | None, layers, init: str, generator: torch.Generator) -> None:
    """B first (when embedded), then each dense layer in order: the draws of a seed."""
    if embedding is not None:
        embedding.initialise(generator)
    for layer in layers:
        initialise_dense(layer, init, generator)
