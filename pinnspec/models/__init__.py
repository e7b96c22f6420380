"""Networks a spec can name (``model mlp(...)``)."""

from ._mlp import MLP, ModelFactory, mlp

__all__ = ["MLP", "ModelFactory", "mlp"]
