"""PirateNet: residual blocks with adaptive skip connections, gated by two encoders of the embedding."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..registry import MODELS
from ._factory import EmbeddedFactory
from ._layers import (FactorizedLinear, FourierFeatures, Network, apply_dense, dense, embed, embedded_dim, flag,
                      initialise_all)


class PirateBlock(nn.Module):
    """One residual block (eqs. 4.3-4.8 of the paper):

        f = phi(W1 x + b1),  z1 = f * U + (1 - f) * V,
        g = phi(W2 z1 + b2), z2 = g * U + (1 - g) * V,
        h = phi(W3 z2 + b3), x_next = alpha h + (1 - alpha) x,   alpha = 0 at initialisation."""

    def __init__(self, dim: int, width: int, rwf: tuple[float, float] | None):
        super().__init__()
        self.first, self.second = dense(dim, width, rwf), dense(width, width, rwf)
        self.third = dense(width, dim, rwf)
        self.alpha = nn.Parameter(torch.zeros(()))

    def compute(self, ops, x, v, u_minus_v, activation: str):  # x [N, dim], v, U - V [N, width] -> [N, dim]
        f = ops.activation(apply_dense(ops, self.first, x), activation)
        z1 = f * u_minus_v + v  # f U + (1 - f) V
        g = ops.activation(apply_dense(ops, self.second, z1), activation)
        z2 = g * u_minus_v + v
        h = ops.activation(apply_dense(ops, self.third, z2), activation)
        return ops.scale(h, self.alpha) + ops.scale(x, 1 - self.alpha)


class PirateNet(Network):
    """Wang, Sankaran, Wang & Perdikaris 2024, "PirateNets: Physics-informed Deep Learning with Residual
    Adaptive Networks" (arXiv:2402.00326; JMLR 25(402)), section 4:

        Phi = gamma(x) (Fourier features),  U = phi(W_u Phi + b_u),  V = phi(W_v Phi + b_v),
        x_1 = Phi,  x_{l+1} = PirateBlock_l(x_l, U, V),  u = W x_{L+1} + b,

    every dense layer factorized (RWF) by default.  With every alpha = 0 (at initialisation) the blocks
    are the identity and the network is the linear map W Phi + b of the embedding, so the paper's
    physics-informed initialisation (section 4.2) fits W by least squares to data (`fit_output`; the
    ``pi_init`` option: the spec's initial conditions)."""

    def __init__(self, in_dim: int, out_dim: int, width: int, depth: int, activation: str,
                 embedding: FourierFeatures | None, rwf: tuple[float, float] | None):
        super().__init__()
        self.activation_name = activation
        self.embedding = embedding
        dim = embedded_dim(in_dim, embedding)
        self.encoder_u, self.encoder_v = dense(dim, width, rwf), dense(dim, width, rwf)
        self.blocks = nn.ModuleList(PirateBlock(dim, width, rwf) for _ in range(depth))
        self.output = dense(dim, out_dim, rwf)

    def initialise(self, init: str, generator: torch.Generator) -> None:
        layers = [self.encoder_u, self.encoder_v]
        for block in self.blocks:
            layers += [block.first, block.second, block.third]
        initialise_all(self.embedding, layers + [self.output], init, generator)

    @torch.no_grad()
    def fit_output(self, field: int, x: torch.Tensor, values: torch.Tensor) -> float:
        """Physics-informed initialisation of output ``field``: its row of W becomes the least-squares
        solution of Phi(x) w = values - b (x [n, d], values [n]), valid while every alpha is 0 (the blocks
        are the identity).  Returns the relative residual ||Phi w + b - values|| / ||values||."""
        if any(float(block.alpha) != 0.0 for block in self.blocks):
            raise ValueError("fit_output needs every alpha = 0 (a freshly initialised PirateNet)")
        from ._layers import TENSOR_OPS

        features = embed(TENSOR_OPS, self.embedding, x.to(self.output.bias.dtype)).to(torch.float64)  # [n, dim]
        bias = self.output.bias[field].to(torch.float64)
        target = values.to(torch.float64) - bias  # [n]
        # the minimum-norm solution, singular values below 1e-10 of the largest dropped: random Fourier
        # features of a low-dimensional input are close to collinear
        w = torch.linalg.lstsq(features, target[:, None], rcond=1e-10, driver="gelsd").solution[:, 0]  # [dim]
        if isinstance(self.output, FactorizedLinear):  # W = diag(exp(s)) V: the row of V is w exp(-s)
            self.output.direction[field] = (w * torch.exp(-self.output.log_scale[field].to(torch.float64))).to(
                self.output.direction.dtype)
        else:
            self.output.weight[field] = w.to(self.output.weight.dtype)
        fitted = features @ w + bias  # [n]
        return float((fitted - values.to(torch.float64)).norm() / values.to(torch.float64).norm().clamp_min(1e-300))

    def compute(self, ops, x):  # [N, d] -> [N, n_fields]
        act = self.activation_name
        h = embed(ops, self.embedding, x)  # Phi [N, 2 features] (or x)
        u = ops.activation(apply_dense(ops, self.encoder_u, h), act)  # [N, width]
        v = ops.activation(apply_dense(ops, self.encoder_v, h), act)  # [N, width]
        u_minus_v = u - v
        for block in self.blocks:
            h = block.compute(ops, h, v, u_minus_v, act)
        return apply_dense(ops, self.output, h)


@dataclass(frozen=True)
class PirateFactory(EmbeddedFactory):
    """``pi_init``: the trainer fits W to the spec's initial data after drawing the weights
    (`PirateNet.fit_output`)."""

    pi_init: bool = False


@MODELS.register("pirate_net")
def pirate_net(width: int = 256, blocks: int = 3, activation: str = "tanh", init: str = "xavier",
               fourier: float = 1.0, features: int = 128, trainable_fourier: bool = False,
               rwf: bool = True, rwf_mu: float = 1.0, rwf_sigma: float = 0.1,
               pi_init: bool = False) -> PirateFactory:
    """``width``: the blocks' hidden width; ``blocks``: residual blocks (3 dense layers each); ``fourier``:
    sigma of B (0: no embedding, the blocks then work in the input's dimension); ``pi_init``: the
    physics-informed initialisation of W from the initial conditions."""
    base = EmbeddedFactory.of(PirateNet, width, blocks, activation, init, fourier, features, trainable_fourier, rwf,
                              rwf_mu, rwf_sigma)
    return PirateFactory(base.width, base.depth, base.activation, base.init, base.network, base.embedding,
                         base.rwf, flag("pi_init", pi_init))
