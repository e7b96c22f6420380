"""Optimizers in proposal form: ``propose(a, state) -> (u, tentative_state)``.

The optimizer turns the constructed direction a into a proposal u (no
learning rate) and a tentative next state; nothing is applied here.  The
engine applies theta <- theta - eta_t * p, with p the (aligned) update.
Registered names: sgd, msgd, rmsprop, adam, adamw, sophiag, adahessian, soap.
"""

from pinnspec.registry import OPTIMIZERS

from ._base import Optimizer, ParamLayout, flat_shapes
from ._first_order import SGD, Adam, AdamState, AdamW, MomentumSGD, MomentumState, RMSProp, RMSPropState, StepState
from ._second_order import AdaHessian, AdaHessianState, SophiaG, SophiaState, hutchinson_diagonal
from ._quasi_newton import DENSE_LIMIT_BYTES, dense_bytes, quasi_newton
from ._soap import SOAP, SOAPState

__all__ = [
    "Optimizer", "ParamLayout", "flat_shapes", "make", "hutchinson_diagonal",
    "SGD", "MomentumSGD", "RMSProp", "Adam", "AdamW", "SophiaG", "AdaHessian", "SOAP",
    "quasi_newton", "dense_bytes", "DENSE_LIMIT_BYTES",
    "StepState", "MomentumState", "RMSPropState", "AdamState", "SophiaState", "AdaHessianState", "SOAPState",
]


def make(name: str, **kwargs) -> Optimizer:
    """The registered optimizer ``name`` configured with ``kwargs``
    (unknown names raise :class:`pinnspec.registry.UnknownNameError`)."""
    return OPTIMIZERS.get(name)(**kwargs)
