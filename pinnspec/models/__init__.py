"""Networks a spec can name (``model mlp(...)``, ``fourier_mlp``, ``modified_mlp``, ``pirate_net``,
``adaptive_mlp``; docs/networks.md)."""

from ._adaptive import AdaptiveSlopeMLP, adaptive_mlp
from ._fourier import FourierMLP, fourier_mlp
from ._field_groups import FieldGroups
from ._layers import TENSOR_OPS, FactorizedLinear, FourierFeatures, Network
from ._mlp import ACTIVATIONS, MLP, ModelFactory, mlp
from ._modified import ModifiedMLP, modified_mlp
from ._periodic import PeriodicEmbedding
from ._pirate import PirateNet, pirate_net

__all__ = ["AdaptiveSlopeMLP", "FactorizedLinear", "FourierFeatures", "FourierMLP", "MLP", "ModelFactory",
           "ModifiedMLP", "Network", "PirateNet", "adaptive_mlp", "fourier_mlp", "mlp", "modified_mlp",
           "pirate_net", "ACTIVATIONS", "FieldGroups", "PeriodicEmbedding", "TENSOR_OPS"]
