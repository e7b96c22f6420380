"""What the networks beyond the plain MLP share: a factory that builds and initialises one from the
run's generator, and the Fourier-embedding and RWF options of a spec."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ._layers import INITS, FourierFeatures, check_choice, flag
from ._mlp import ACTIVATIONS


@dataclass(frozen=True)
class Embedding:
    """``fourier``: sigma of B (0: no embedding), or one sigma per input (a tuple: column j of B ~ N(0,
    sigma_j^2)); ``features`` (rows of B), ``trainable_fourier``."""

    fourier: float | tuple[float, ...] = 0.0
    features: int = 128
    trainable_fourier: bool = False

    def __post_init__(self):
        scales = self.fourier if isinstance(self.fourier, tuple) else (self.fourier,)
        if min(scales) < 0 or self.features < 1:
            raise ValueError(f"fourier must be >= 0 and features >= 1 (got {self.fourier}, {self.features})")
        if isinstance(self.fourier, tuple) and max(scales) == 0:
            raise ValueError("fourier = (0, ..., 0) embeds nothing: write fourier = 0 for no embedding")

    def make(self, in_dim: int) -> FourierFeatures | None:
        if isinstance(self.fourier, tuple) and len(self.fourier) != in_dim:
            raise ValueError(f"fourier = {self.fourier} gives {len(self.fourier)} scales, but the network reads "
                             f"{in_dim} inputs: one scale per input")
        return FourierFeatures(in_dim, self.features, self.fourier, self.trainable_fourier) if self.fourier else None


def embedding(fourier, features, trainable_fourier) -> Embedding:
    scale = tuple(_scale(s) for s in fourier) if isinstance(fourier, (tuple, list)) else _scale(fourier)
    return Embedding(scale, int(features), flag("trainable_fourier", trainable_fourier))


def _scale(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"fourier takes a number or a tuple of numbers, one per input, got {value!r}")
    return float(value)


def rwf_setting(rwf, mu, sigma) -> tuple[float, float] | None:
    """(mu, sigma) of RWF's s ~ N(mu, sigma) when ``rwf`` is on, else None."""
    if not flag("rwf", rwf):
        return None
    if float(sigma) < 0:
        raise ValueError(f"rwf_sigma must be >= 0, got {sigma}")
    return float(mu), float(sigma)


@dataclass(frozen=True)
class NetworkFactory:
    """A model setting from a spec; subclasses say what ``make`` builds (its weights drawn by
    ``initialise(init, generator)``)."""

    width: int = 50
    depth: int = 5
    activation: str = "tanh"
    init: str = "xavier"

    def __post_init__(self):
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("init", self.init, INITS)
        if self.width < 1 or self.depth < 1:
            raise ValueError(f"width and depth must be >= 1 (got {self.width}, {self.depth})")

    def make(self, in_dim: int, out_dim: int) -> torch.nn.Module:
        raise NotImplementedError

    def build(self, in_dim: int, out_dim: int, *, generator: torch.Generator,
              dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> torch.nn.Module:
        """The network with its weights drawn from ``generator`` (on the CPU, so the same seed gives the
        same network on every device), in the order of its modules."""
        model = self.make(in_dim, out_dim).to(dtype)
        model.initialise(self.init, generator)
        return model.to(device)


@dataclass(frozen=True)
class EmbeddedFactory(NetworkFactory):
    """``network(in_dim, out_dim, width, depth, activation, embedding, rwf)``, a network with the
    Fourier-embedding and RWF options."""

    network: type = None
    embedding: Embedding = Embedding()
    rwf: tuple[float, float] | None = None

    @classmethod
    def of(cls, network: type, width, depth, activation, init, fourier, features, trainable_fourier, rwf, rwf_mu,
           rwf_sigma) -> "EmbeddedFactory":
        """The factory of a spec's call (its arguments as the spec gives them)."""
        return cls(int(width), int(depth), str(activation), str(init), network,
                   embedding(fourier, features, trainable_fourier), rwf_setting(rwf, rwf_mu, rwf_sigma))

    def make(self, in_dim: int, out_dim: int) -> torch.nn.Module:
        return self.network(in_dim, out_dim, self.width, self.depth, self.activation, self.embedding.make(in_dim),
                            self.rwf)

    def on_columns(self, columns: tuple[int, ...], in_dim: int) -> "EmbeddedFactory":
        """This setting for a network that reads only ``columns`` of the ``in_dim`` inputs (`FieldGroups`):
        one sigma per input keeps those columns' sigmas."""
        scales = self.embedding.fourier
        if not isinstance(scales, tuple):
            return self
        if len(scales) != in_dim:
            raise ValueError(f"fourier = {scales} gives {len(scales)} scales for {in_dim} coordinates: one scale "
                             "per coordinate, in the order the spec declares them (space, then time)")
        return replace(self, embedding=replace(self.embedding, fourier=tuple(scales[c] for c in columns)))
