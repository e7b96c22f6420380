"""Forward (Taylor-mode) input derivatives for the models pinnspec owns.

    from pinnspec.forward import supports, forward_values
    if supports(model):
        values = forward_values(model, plan, x)   # == plan.evaluate(model(x), x)

Every needed derivative (u, u_x, u_xx, ...) is pushed through the network
layer by layer (Faà di Bruno at each activation), so parameter gradients need
only first-order autograd.
"""

from ._activations import activation_derivatives, plain_tanh
from ._engine import LAYOUTS, forward_values, propagate, supports
from ._program import LinearOperator, MultiIndex, carried, closure, combine, faa_di_bruno, order_key

__all__ = ["LinearOperator", "MultiIndex", "carried", "combine", "order_key", "LAYOUTS", "activation_derivatives", "closure", "faa_di_bruno", "forward_values", "plain_tanh", "propagate",
           "supports"]
